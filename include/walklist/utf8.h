/*
 * UTF-8 decoding (RFC 3629), counting, Unicode whitespace and control classes,
 * trimming and boundary-safe truncation. Pure functions on spans: nothing here
 * allocates, and nothing assumes NUL-terminated input.
 */
#ifndef WALKLIST_UTF8_H
#define WALKLIST_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "walklist/error.h"
#include "walklist/span.h"

/**
 * Decodes the code point starting at s (len bytes available) into *cp.
 * Returns the bytes consumed (1 to 4), or -1 when the bytes there are not a
 * valid UTF-8 sequence: len 0, a stray continuation byte, an overlong form,
 * a surrogate (U+D800-DFFF), a value above U+10FFFF, or a sequence cut off by
 * len. *cp is left untouched on -1.
 */
int wl_utf8_decode(const char *s, size_t len, uint32_t *cp) WL_CHECK_RESULT;

/** Number of code points in s, or -1 if s is not valid UTF-8. The empty span counts 0. */
long wl_utf8_count(wl_span_t s);

/** True for C0 controls (U+0000-001F), DEL (U+007F) and C1 controls (U+0080-009F). */
static inline bool wl_utf8_is_control(uint32_t cp)
{
    return cp <= 0x1F || (cp >= 0x7F && cp <= 0x9F);
}

/**
 * True for the Unicode White_Space property: U+0009-000D, 0020, 0085, 00A0,
 * 1680, 2000-200A, 2028, 2029, 202F, 205F, 3000.
 *
 * U+0085 (NEL) and U+0009-000D are both White_Space and control characters:
 * trimming removes them at the edges, validators reject them anywhere else. Inline: every
 * character of every code goes through it.
 */
static inline bool wl_utf8_is_space(uint32_t cp)
{
    if (cp < 0x80)
        return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
    switch (cp) {
    case 0x0085:
    case 0x00A0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
        return true;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

/**
 * The span without leading and trailing White_Space code points; it points
 * into s. When s is not valid UTF-8 only ASCII whitespace (U+0009-000D, 0020)
 * is trimmed, so the result never starts or ends inside a multi-byte sequence
 * that was intact in s.
 *
 *     wl_utf8_trim(wl_span_str("\xC2\xA0 A-1\t"))  ->  "A-1"
 */
wl_span_t wl_utf8_trim(wl_span_t s);

/**
 * Length of the longest prefix of s that is at most max_bytes long and ends
 * on a code point boundary: s.len when s fits, otherwise max_bytes moved back
 * to the start of the character it would cut. For cutting long names to the
 * bounds of device payloads. On invalid UTF-8 it still never separates a lead
 * byte from the continuation bytes that follow it.
 *
 *     wl_utf8_truncate(wl_span_str("ab\xC3\xA9"), 3)  ->  2    ("ab", not "ab\xC3")
 */
size_t wl_utf8_truncate(wl_span_t s, size_t max_bytes);

#endif
