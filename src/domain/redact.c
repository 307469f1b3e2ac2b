/* Finding API keys in what a log line would show, however encoded, happens here. */
#include "walklist/redact.h"
#include "walklist/hex.h"

#include <stdbool.h>
#include <string.h>

/* The character at pos as URL decoders would read it, however many times the text was encoded
 * ("%77", "%2577", ... are all 'w'), and the position after it in *next; -1 at the end. */
static int decoded_at(const char *text, size_t len, size_t pos, size_t *next)
{
    if (pos >= len)
        return -1;
    int c = (unsigned char)text[pos];
    *next = pos + 1;
    while (c == '%' && *next + 1 < len + 1 && *next + 2 <= len) {
        int high = wl_hex_value(text[*next]), low = wl_hex_value(text[*next + 1]);
        if (high < 0 || low < 0)
            break;
        c = high * 16 + low;
        *next += 2;
    }
    return c;
}

static bool is_base62(int c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* The end of a key that starts at start, or 0 when none does. */
static size_t key_end(const char *text, size_t len, size_t start)
{
    static const char lead[] = "wlk_";
    size_t pos = start, next = 0;
    for (size_t i = 0; i < 4; i++) {
        if (decoded_at(text, len, pos, &next) != lead[i])
            return 0;
        pos = next;
    }
    for (size_t i = 0; i < 8; i++) {
        if (!is_base62(decoded_at(text, len, pos, &next)))
            return 0;
        pos = next;
    }
    if (decoded_at(text, len, pos, &next) != '_')
        return 0;
    pos = next;
    size_t secret = 0;
    while (is_base62(decoded_at(text, len, pos, &next))) {
        pos = next;
        secret++;
    }
    return secret > 0 ? pos : 0;
}

size_t wl_redact_keys(const char *text, size_t len, char *out, size_t size)
{
    static const char mask[] = "REDACTED";
    size_t used = 0;
    if (size == 0)
        return 0;
    for (size_t pos = 0; pos < len;) {
        size_t end = key_end(text, len, pos);
        const char *piece = end ? mask : text + pos;
        size_t piece_len = end ? sizeof(mask) - 1 : 1;
        if (used + piece_len > size - 1)
            break;
        memcpy(out + used, piece, piece_len);
        used += piece_len;
        pos = end ? end : pos + 1;
    }
    out[used] = '\0';
    return used;
}
