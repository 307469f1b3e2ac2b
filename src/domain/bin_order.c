/* Bin codes are put in natural order here, by comparison and by memcmp-ordered sort key. */
#include "domain/bin_order.h"

#include <stdbool.h>
#include <string.h>

typedef struct {
    const unsigned char *bytes;
    size_t len;
    bool digits;
} run_t;

static bool is_digit(unsigned char b)
{
    return b >= '0' && b <= '9';
}

/* The maximal run starting at *pos (which must be < len); advances *pos past it. */
static run_t next_run(wl_span_t s, size_t *pos)
{
    const unsigned char *p = (const unsigned char *)s.base;
    run_t run = {p + *pos, 0, is_digit(p[*pos])};
    while (*pos < s.len && is_digit(p[*pos]) == run.digits) {
        (*pos)++;
        run.len++;
    }
    return run;
}

static size_t leading_zeros(run_t run)
{
    size_t n = 0;
    while (n < run.len && run.bytes[n] == '0')
        n++;
    return n;
}

static int sign_of_size(size_t a, size_t b)
{
    return (a > b) - (a < b);
}

static int compare_bytes(const unsigned char *a, size_t a_len, const unsigned char *b, size_t b_len)
{
    size_t common = a_len < b_len ? a_len : b_len;
    int c = common > 0 ? memcmp(a, b, common) : 0;
    if (c != 0)
        return c < 0 ? -1 : 1;
    return sign_of_size(a_len, b_len);
}

static int compare_runs(run_t a, run_t b)
{
    if (a.digits != b.digits)
        return a.bytes[0] < b.bytes[0] ? -1 : 1; /* a digit never equals a non-digit */
    if (!a.digits)
        return compare_bytes(a.bytes, a.len, b.bytes, b.len);
    size_t a_zeros = leading_zeros(a), b_zeros = leading_zeros(b);
    size_t a_sig = a.len - a_zeros, b_sig = b.len - b_zeros;
    /* Without leading zeros the longer number is the bigger one, whatever its length. */
    if (a_sig != b_sig)
        return sign_of_size(a_sig, b_sig);
    int c = compare_bytes(a.bytes + a_zeros, a_sig, b.bytes + b_zeros, b_sig);
    if (c != 0)
        return c;
    return sign_of_size(a.len, b.len);
}

int wl_bin_compare(wl_span_t a, wl_span_t b)
{
    size_t a_pos = 0, b_pos = 0;
    while (a_pos < a.len && b_pos < b.len) {
        int c = compare_runs(next_run(a, &a_pos), next_run(b, &b_pos));
        if (c != 0)
            return c;
    }
    return (a_pos < a.len) - (b_pos < b.len);
}

typedef struct {
    uint8_t *out;
    size_t cap;
    size_t len; /* bytes the key needs so far, also past cap */
} key_writer_t;

static void put_byte(key_writer_t *w, uint8_t b)
{
    if (w->len < w->cap)
        w->out[w->len] = b;
    w->len++;
}

/* Order-preserving and self-delimiting: 2 bytes below 0xFFFF, else 0xFFFF and 8 bytes. */
static void put_count(key_writer_t *w, size_t n)
{
    if (n < 0xFFFF) {
        put_byte(w, (uint8_t)(n >> 8));
        put_byte(w, (uint8_t)n);
        return;
    }
    put_byte(w, 0xFF);
    put_byte(w, 0xFF);
    for (int shift = 56; shift >= 0; shift -= 8)
        put_byte(w, (uint8_t)((uint64_t)n >> shift));
}

/*
 * Why memcmp of keys gives wl_bin_compare's order: equal runs encode to equal
 * bytes, so two keys first differ inside the encodings of the first pair of
 * runs that differ, and each case is decided there:
 * - digit run against other run: 0x30 against the other's first byte, which
 *   is never a digit (0x00 when it is NUL), so the order of the first bytes;
 * - two digit runs: count of significant digits, then the digits, then the
 *   run length; counts are fixed-width or 0xFFFF-escaped, so nothing spills
 *   into the next run;
 * - two other runs: escaped bytes, then the 0x00 terminator, which is below
 *   every byte a longer run could have there (an escaped NUL continues with
 *   0xFF, while after a terminator comes 0x30 or the end of the key).
 * When all runs of the shorter list are equal, its key is a proper prefix.
 */
size_t wl_bin_sort_key(wl_span_t code, uint8_t *out, size_t cap)
{
    key_writer_t w = {out, cap, 0};
    size_t pos = 0;
    while (pos < code.len) {
        run_t run = next_run(code, &pos);
        if (run.digits) {
            size_t zeros = leading_zeros(run);
            put_byte(&w, 0x30);
            put_count(&w, run.len - zeros);
            for (size_t i = zeros; i < run.len; i++)
                put_byte(&w, run.bytes[i]);
            put_count(&w, run.len);
        } else {
            for (size_t i = 0; i < run.len; i++) {
                put_byte(&w, run.bytes[i]);
                if (run.bytes[i] == 0x00)
                    put_byte(&w, 0xFF);
            }
            put_byte(&w, 0x00);
        }
    }
    return w.len;
}
