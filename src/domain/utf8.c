/* UTF-8 is decoded, counted, classified, trimmed and cut on character boundaries here. */
#include "walklist/utf8.h"

static bool is_continuation(unsigned char b)
{
    return (b & 0xC0) == 0x80;
}

int wl_utf8_decode(const char *s, size_t len, uint32_t *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    if (len == 0)
        return -1;
    unsigned char b0 = p[0];
    if (b0 < 0x80) {
        *cp = b0;
        return 1;
    }
    /* The ranges of the second byte come from RFC 3629 section 4: they exclude
     * overlong forms (E0, F0), surrogates (ED) and values above U+10FFFF (F4). */
    int n;
    unsigned char lo = 0x80, hi = 0xBF;
    uint32_t value;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        n = 2;
        value = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        n = 3;
        value = b0 & 0x0F;
        if (b0 == 0xE0)
            lo = 0xA0;
        else if (b0 == 0xED)
            hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        n = 4;
        value = b0 & 0x07;
        if (b0 == 0xF0)
            lo = 0x90;
        else if (b0 == 0xF4)
            hi = 0x8F;
    } else {
        return -1;
    }
    if (len < (size_t)n)
        return -1;
    if (p[1] < lo || p[1] > hi)
        return -1;
    for (int i = 1; i < n; i++) {
        if (!is_continuation(p[i]))
            return -1;
        value = (value << 6) | (p[i] & 0x3F);
    }
    *cp = value;
    return n;
}

long wl_utf8_count(wl_span_t s)
{
    long count = 0;
    size_t i = 0;
    while (i < s.len) {
        if ((unsigned char)s.base[i] < 0x80) { /* ASCII needs no decoding */
            i++;
            count++;
            continue;
        }
        uint32_t cp;
        int n = wl_utf8_decode(s.base + i, s.len - i, &cp);
        if (n < 0)
            return -1;
        i += (size_t)n;
        count++;
    }
    return count;
}

static bool is_ascii_space(unsigned char b)
{
    return b == ' ' || (b >= 0x09 && b <= 0x0D);
}

static wl_span_t trim_ascii(wl_span_t s)
{
    while (s.len > 0 && is_ascii_space((unsigned char)s.base[0])) {
        s.base++;
        s.len--;
    }
    while (s.len > 0 && is_ascii_space((unsigned char)s.base[s.len - 1]))
        s.len--;
    return s;
}

wl_span_t wl_utf8_trim(wl_span_t s)
{
    if (s.len == 0)
        return s;
    /* Both ends ASCII and not space, as almost every code is: nothing to trim, valid or not. */
    unsigned char first = (unsigned char)s.base[0], last = (unsigned char)s.base[s.len - 1];
    if (first < 0x80 && last < 0x80 && !is_ascii_space(first) && !is_ascii_space(last))
        return s;
    if (wl_utf8_count(s) < 0)
        return trim_ascii(s);
    for (;;) {
        uint32_t cp;
        int n = wl_utf8_decode(s.base, s.len, &cp);
        if (n < 0 || !wl_utf8_is_space(cp))
            break;
        s.base += n;
        s.len -= (size_t)n;
    }
    while (s.len > 0) {
        /* s is valid, so the last character starts at most 3 bytes before the end. */
        size_t start = s.len - 1;
        while (start > 0 && is_continuation((unsigned char)s.base[start]))
            start--;
        uint32_t cp;
        int n = wl_utf8_decode(s.base + start, s.len - start, &cp);
        if (n < 0 || !wl_utf8_is_space(cp))
            break;
        s.len = start;
    }
    return s;
}

/* Bytes a sequence claims by its lead byte; 0 for continuation and never-valid bytes. */
static size_t lead_length(unsigned char b)
{
    if (b < 0x80)
        return 1;
    if (b >= 0xC0 && b <= 0xDF)
        return 2;
    if (b >= 0xE0 && b <= 0xEF)
        return 3;
    if (b >= 0xF0 && b <= 0xF7)
        return 4;
    return 0;
}

size_t wl_utf8_truncate(wl_span_t s, size_t max_bytes)
{
    if (s.len <= max_bytes)
        return s.len;
    const unsigned char *p = (const unsigned char *)s.base;
    if (!is_continuation(p[max_bytes]))
        return max_bytes;
    /* p[max_bytes] continues a character; its lead byte is at most 3 bytes back.
     * Without one (invalid input) there is no character to keep whole. */
    size_t start = max_bytes;
    while (start > 0 && max_bytes - start < 3) {
        start--;
        if (!is_continuation(p[start]))
            break;
    }
    size_t need = lead_length(p[start]);
    if (need > 1 && start + need > max_bytes)
        return start;
    return max_bytes;
}
