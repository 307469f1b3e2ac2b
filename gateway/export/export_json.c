/* Writing the stock export's JSON text, in the JSON codec's exact form, happens here. */
#include "export/export_json.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "walklist/utf8.h"

/* The longest escape, "\u001F", is 6 bytes for 1. */
#define ESCAPE_GROWTH 6

static size_t string_bound(const char *s)
{
    size_t len = strlen(s);
    return len > (SIZE_MAX - 2) / ESCAPE_GROWTH ? SIZE_MAX : len * ESCAPE_GROWTH + 2;
}

/*
 * A JSON string as jansson writes it: '"', '\\' and the C0 controls escaped,
 * with the short forms JSON has, everything else (including '/', DEL and
 * non-ASCII) as is; a byte that is not valid UTF-8 becomes U+FFFD, as the
 * codec makes it.
 */
static char *put_string(char *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t len = strlen(s);
    *out++ = '"';
    for (size_t i = 0; i < len;) {
        /* The common case, a run of printable ASCII other than '"' and '\\', is copied as is. */
        size_t run = i;
        while (run < len && (unsigned char)s[run] >= 0x20 && (unsigned char)s[run] < 0x80 &&
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
                memcpy(out, "\xEF\xBF\xBD", 3);
                out += 3;
                i++;
            } else {
                memcpy(out, s + i, (size_t)n);
                out += n;
                i += (size_t)n;
            }
            continue;
        }
        i++;
        char short_form = 0;
        switch (c) {
        case '"':
            short_form = '"';
            break;
        case '\\':
            short_form = '\\';
            break;
        case '\b':
            short_form = 'b';
            break;
        case '\f':
            short_form = 'f';
            break;
        case '\n':
            short_form = 'n';
            break;
        case '\r':
            short_form = 'r';
            break;
        case '\t':
            short_form = 't';
            break;
        default:
            break;
        }
        if (short_form != 0) {
            *out++ = '\\';
            *out++ = short_form;
        } else if (c < 0x20) {
            memcpy(out, "\\u00", 4);
            out[4] = hex[c >> 4];
            out[5] = hex[c & 15];
            out += 6;
        } else {
            *out++ = (char)c;
        }
    }
    *out++ = '"';
    return out;
}

static char *put(char *out, const char *text)
{
    size_t len = strlen(text);
    memcpy(out, text, len);
    return out + len;
}

size_t wl_export_json_item_bound(const wl_export_item_t *item)
{
    /* {"sku":,"qty":-9223372036854775808,"location":,"removed":true} is 63 bytes; null fits in
     * a bound. */
    size_t sku = string_bound(item->sku);
    size_t location = item->location != NULL ? string_bound(item->location) : 4;
    if (sku == SIZE_MAX || location == SIZE_MAX || sku > SIZE_MAX - location - 64)
        return SIZE_MAX;
    return sku + location + 80;
}

/* A decimal integer, without snprintf (a million of them per export). */
static char *put_int(char *out, int64_t value)
{
    char digits[24];
    size_t n = 0;
    uint64_t magnitude = value < 0 ? 0 - (uint64_t)value : (uint64_t)value;
    do {
        digits[n++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude > 0);
    if (value < 0)
        *out++ = '-';
    while (n > 0)
        *out++ = digits[--n];
    return out;
}

char *wl_export_json_item(char *out, const wl_export_item_t *item)
{
    out = put(out, "{\"sku\":");
    out = put_string(out, item->sku);
    out = put(out, ",\"qty\":");
    out = put_int(out, item->qty);
    out = put(out, ",\"location\":");
    out = item->location != NULL ? put_string(out, item->location) : put(out, "null");
    if (item->removed)
        out = put(out, ",\"removed\":true");
    *out++ = '}';
    return out;
}

size_t wl_export_json_close(int64_t generated_ms, const char *cursor, char *buf, size_t size)
{
    int64_t seconds = generated_ms / 1000, millis = generated_ms % 1000;
    if (millis < 0) {
        millis += 1000;
        seconds--;
    }
    time_t t = (time_t)seconds;
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL)
        memset(&tm, 0, sizeof(tm));
    int n = snprintf(buf, size,
                     "],\"generatedAt\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\",\"cursor\":\"%s\"}",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     (int)millis, cursor);
    return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}
