/* Writing JSON text, and escaping its strings, happens here. */
#include "walklist/json_writer.h"

#include <string.h>

#include "walklist/utf8.h"

static const char hex[] = "0123456789ABCDEF";

static char *put_u00(char *out, unsigned value)
{
    memcpy(out, "\\u00", 4);
    out[4] = hex[(value >> 4) & 15];
    out[5] = hex[value & 15];
    return out + 6;
}

/* The short form JSON has for an ASCII byte that must be escaped, or 0. */
static char short_form(unsigned char c)
{
    switch (c) {
    case '"':
        return '"';
    case '\\':
        return '\\';
    case '\b':
        return 'b';
    case '\f':
        return 'f';
    case '\n':
        return 'n';
    case '\r':
        return 'r';
    case '\t':
        return 't';
    default:
        return 0;
    }
}

static inline char *escape(char *out, const char *s, size_t len, unsigned flags)
{
    bool controls = (flags & WL_JSON_ESCAPE_CONTROLS) != 0;
    for (size_t i = 0; i < len;) {
        /* The common case, a run of printable ASCII other than '"' and '\\', is copied as
         * is (DEL too, unless controls are escaped). */
        size_t run = i;
        while (run < len && (unsigned char)s[run] >= 0x20 && (unsigned char)s[run] < 0x7F &&
               s[run] != '"' && s[run] != '\\')
            run++;
        if (run > i) {
            memcpy(out, s + i, run - i);
            out += run - i;
            i = run;
            continue;
        }
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80) {
            uint32_t cp;
            int n = wl_utf8_decode(s + i, len - i, &cp);
            if (n < 0) {
                if (controls) {
                    out = put_u00(out, c);
                } else {
                    memcpy(out, "\xEF\xBF\xBD", 3);
                    out += 3;
                }
                i++;
            } else if (controls && wl_utf8_is_control(cp)) {
                out = put_u00(out, cp);
                i += (size_t)n;
            } else {
                memcpy(out, s + i, (size_t)n);
                out += n;
                i += (size_t)n;
            }
            continue;
        }
        i++;
        char shorter = short_form(c);
        if (shorter != 0) {
            *out++ = '\\';
            *out++ = shorter;
        } else if (c < 0x20 || controls) {
            out = put_u00(out, c); /* C0, or DEL when controls are escaped */
        } else {
            *out++ = (char)c; /* DEL */
        }
    }
    return out;
}

char *wl_json_escape(char *out, const char *s, size_t len, unsigned flags)
{
    return escape(out, s, len, flags);
}

void wl_json_writer_init(wl_json_writer_t *w, char *buf, size_t cap, unsigned flags)
{
    *w = (wl_json_writer_t){.buf = buf, .cap = cap, .flags = flags};
}

/* Room for n more bytes; the writer fails when there is none. */
static bool room(wl_json_writer_t *w, size_t n)
{
    if (w->failed || n > w->cap - w->len) {
        w->failed = true;
        return false;
    }
    return true;
}

static void put(wl_json_writer_t *w, const char *bytes, size_t n)
{
    memcpy(w->buf + w->len, bytes, n);
    w->len += n;
}

/* Bytes of the character at s: a whole UTF-8 sequence, or one byte (ASCII, or not UTF-8). */
static size_t character_length(const char *s, size_t len)
{
    uint32_t cp;
    int n = (unsigned char)s[0] >= 0x80 ? wl_utf8_decode(s, len, &cp) : 1;
    return n > 1 ? (size_t)n : 1;
}

/* A quoted, escaped string near the end of the buffer: escaped piece by piece, each checked;
 * nothing of it stays when it does not fit whole. */
static void quoted_piecewise(wl_json_writer_t *w, const char *s, size_t len, char after)
{
    wl_json_mark_t mark = wl_json_mark(w);
    if (!wl__json_begin(w, 1))
        return;
    put(w, "\"", 1);
    char piece[4 * WL_JSON_ESCAPE_GROWTH];
    for (size_t i = 0; i < len;) {
        size_t n = character_length(s + i, len - i);
        char *end = escape(piece, s + i, n, w->flags);
        if (!room(w, (size_t)(end - piece))) {
            wl_json_rewind(w, mark);
            return;
        }
        put(w, piece, (size_t)(end - piece));
        i += n;
    }
    if (!room(w, 1 + (after != 0))) {
        wl_json_rewind(w, mark);
        return;
    }
    put(w, "\"", 1);
    if (after != 0)
        put(w, &after, 1);
}

/* A quoted, escaped string (then after, when not 0): escaped in place when its longest
 * escaping fits, else piece by piece. */
static inline void quoted(wl_json_writer_t *w, const char *s, size_t len, char after)
{
    size_t bound = len > (SIZE_MAX - 8) / WL_JSON_ESCAPE_GROWTH
                       ? SIZE_MAX
                       : len * WL_JSON_ESCAPE_GROWTH + 2 + (after != 0);
    if (w->failed || bound == SIZE_MAX || bound + w->comma > w->cap - w->len) {
        quoted_piecewise(w, s, len, after);
        return;
    }
    wl__json_begin(w, bound);
    w->buf[w->len++] = '"';
    w->len = (size_t)(escape(w->buf + w->len, s, len, w->flags) - w->buf);
    w->buf[w->len++] = '"';
    if (after != 0)
        w->buf[w->len++] = after;
}

void wl_json_key(wl_json_writer_t *w, const char *key)
{
    quoted(w, key, strlen(key), ':');
    w->comma = false;
}

void wl_json_string(wl_json_writer_t *w, const char *s, size_t len)
{
    quoted(w, s, len, 0);
}

void wl_json_cstring(wl_json_writer_t *w, const char *s)
{
    quoted(w, s, strlen(s), 0);
}

void wl_json_string_cut(wl_json_writer_t *w, const char *s, size_t len, size_t keep)
{
    if (w->failed || keep + 2 + w->comma > w->cap - w->len) {
        w->failed = true;
        return;
    }
    if (len <= (SIZE_MAX - 8) / WL_JSON_ESCAPE_GROWTH &&
        len * WL_JSON_ESCAPE_GROWTH + 2 + keep + w->comma <= w->cap - w->len) {
        quoted(w, s, len, 0); /* nothing can be cut: escaped whole, not a character at a time */
        return;
    }
    size_t cap = w->cap;
    w->cap -= keep + 1; /* the closing quote and what is kept free always fit */
    wl__json_begin(w, 1);
    put(w, "\"", 1);
    char piece[4 * WL_JSON_ESCAPE_GROWTH];
    bool cut = false;
    for (size_t i = 0; i < len && !cut;) {
        size_t n = character_length(s + i, len - i);
        size_t escaped = (size_t)(escape(piece, s + i, n, w->flags) - piece);
        if (escaped > w->cap - w->len) {
            cut = true;
        } else {
            put(w, piece, escaped);
            i += n;
        }
    }
    w->cap = cap;
    put(w, "\"", 1);
    w->failed = cut;
}

/* A decimal integer, without snprintf (a million of them per export): its digits written
 * backwards in place, then turned around. */
void wl_json_int(wl_json_writer_t *w, int64_t value)
{
    uint64_t magnitude = value < 0 ? 0 - (uint64_t)value : (uint64_t)value;
    size_t n = (value < 0) + 1;
    for (uint64_t rest = magnitude; rest >= 10; rest /= 10)
        n++;
    if (!wl__json_begin(w, n))
        return;
    char *end = w->buf + w->len + n;
    do {
        *--end = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude > 0);
    if (value < 0)
        *--end = '-';
    w->len += n;
}
