/* Finding API keys in what a log line would show, however encoded, happens here. */
#include "walklist/redact.h"
#include "walklist/hex.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

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

/* Appends n bytes to out (room for size - 1 and a NUL), as far as they fit. */
static void append(char *out, size_t size, size_t *used, const char *bytes, size_t n)
{
    if (*used + n > size - 1)
        n = size - 1 - *used;
    memcpy(out + *used, bytes, n);
    *used += n;
}

/* Where a value starting at pos ends: a quoted one at its closing quote (backslash escapes
 * inside, as libpq reads them), another at white space, '&' (the next URI parameter) or a
 * quote of the message around it. */
static size_t value_end(const char *text, size_t pos)
{
    if (text[pos] == '\'') {
        for (pos++; text[pos] != '\0' && text[pos] != '\''; pos++) {
            if (text[pos] == '\\' && text[pos + 1] != '\0')
                pos++;
        }
        return text[pos] == '\'' ? pos + 1 : pos;
    }
    return pos + strcspn(text + pos, " \t\r\n&\"'");
}

/* The end of "password" + optional blanks + "=" at pos (also the tail of "sslpassword"), or 0. */
static size_t password_keyword_end(const char *text, size_t pos)
{
    if (strncasecmp(text + pos, "password", 8) != 0)
        return 0;
    size_t end = pos + 8;
    end += strspn(text + end, " \t");
    return text[end] == '=' ? end + 1 + strspn(text + end + 1, " \t") : 0;
}

/* At "://": the position of the ':' before the password of user information, and *at of
 * its '@'; 0 when the authority has no password. */
static size_t userinfo_password(const char *text, size_t pos, size_t *at)
{
    size_t authority = pos + 3;
    size_t end = authority + strcspn(text + authority, "/?#@ \t\r\n\"'");
    if (text[end] != '@')
        return 0;
    const char *colon = memchr(text + authority, ':', end - authority);
    *at = end;
    return colon != NULL ? (size_t)(colon - text) : 0;
}

size_t wl_redact_conninfo(const char *text, char *out, size_t size)
{
    static const char redacted[] = "REDACTED";
    size_t used = 0;
    if (size == 0)
        return 0;
    for (size_t pos = 0; text[pos] != '\0' && used < size - 1;) {
        size_t keyword_end = password_keyword_end(text, pos), at = 0, colon = 0;
        if (keyword_end != 0) {
            append(out, size, &used, text + pos, keyword_end - pos);
            append(out, size, &used, redacted, sizeof(redacted) - 1);
            pos = value_end(text, keyword_end);
        } else if (strncmp(text + pos, "://", 3) == 0 &&
                   (colon = userinfo_password(text, pos, &at)) != 0) {
            append(out, size, &used, text + pos, colon + 1 - pos);
            append(out, size, &used, redacted, sizeof(redacted) - 1);
            pos = at;
        } else {
            append(out, size, &used, text + pos, 1);
            pos++;
        }
    }
    out[used] = '\0';
    return used;
}
