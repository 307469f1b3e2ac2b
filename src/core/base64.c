/* Encoding and decoding base64 happens here. */
#include "walklist/base64.h"

#include <stdint.h>

static const char standard_digits[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char url_digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t wl_base64_encoded_len(size_t len, bool padded)
{
    return padded ? 4 * ((len + 2) / 3) : (len * 4 + 2) / 3;
}

size_t wl_base64_encode(const unsigned char *in, size_t len, wl_base64_alphabet_t alphabet,
                        bool padded, char *out)
{
    const char *digits = alphabet == WL_BASE64_URL ? url_digits : standard_digits;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        acc = (acc << 8) | in[i];
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out[o++] = digits[(acc >> bits) & 0x3f];
        }
    }
    if (bits > 0)
        out[o++] = digits[(acc << (6 - bits)) & 0x3f];
    while (padded && o % 4 != 0)
        out[o++] = '=';
    out[o] = '\0';
    return o;
}

/* The value of digit c, noting which alphabet its last two digits come from; -1 if none. */
static int digit_value(char c, bool *standard, bool *url)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '/') {
        *standard = true;
        return c == '+' ? 62 : 63;
    }
    if (c == '-' || c == '_') {
        *url = true;
        return c == '-' ? 62 : 63;
    }
    return -1;
}

bool wl_base64_decode(const char *in, size_t len, wl_base64_decoding_t kind, unsigned char *out,
                      size_t *out_len)
{
    bool canonical = kind == WL_BASE64_DECODE_URL_CANONICAL;
    if (!canonical) {
        size_t padding = 0;
        while (padding < 2 && len > padding && in[len - 1 - padding] == '=')
            padding++;
        if (padding > 0 && len % 4 != 0)
            return false;
        len -= padding;
    }
    if (len % 4 == 1)
        return false;
    bool standard = false, url = false;
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int v = digit_value(in[i], &standard, &url);
        if (v < 0 || (standard && (canonical || url)))
            return false;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    if (canonical && acc != 0)
        return false;
    *out_len = o;
    return true;
}
