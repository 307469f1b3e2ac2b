/*
 * Natural bin order (the order of a walk's stops), as a comparison and as a byte key
 * whose memcmp order is the same, so PostgreSQL can ORDER BY the stored key.
 *
 * A code splits into maximal runs of ASCII digits and of other bytes. Runs
 * compare in turn: two digit runs by numeric value (any length), and when
 * equal in value the shorter run (fewer leading zeros) first; two other runs
 * byte-wise, a proper prefix first; a digit run against another run by their
 * first bytes. When every run compares equal, the code with fewer runs is
 * first. So: A-2 < A-02 < A-10, A-9 < A-10-1, A < A1 < A1B, 0 < 00 < 1,
 * A1 < B1 < a1 (case-sensitive), A1 < A-1 ("A" is a prefix of "A-").
 * Codes compare equal only when they are byte-equal.
 */
#ifndef WALKLIST_DOMAIN_BIN_ORDER_H
#define WALKLIST_DOMAIN_BIN_ORDER_H

#include <stddef.h>
#include <stdint.h>

#include "walklist/span.h"

/** Negative, 0 or positive as a sorts before, equal to or after b. Total for any bytes. */
int wl_bin_compare(wl_span_t a, wl_span_t b);

/** Bytes always enough for the sort key of a code of len bytes. */
#define WL_BIN_SORT_KEY_MAX(len) (6 * (len) + 1)

/**
 * Writes the sort key of code to out and returns its length. Keys compare
 * with memcmp over the common length, a proper prefix first (PostgreSQL's
 * bytea order), exactly as wl_bin_compare orders the codes, and equal keys
 * mean equal codes. If the return value exceeds cap, only cap bytes were
 * written and the key is incomplete; out may be NULL when cap is 0.
 *
 * Encoding, run by run: a non-digit run is its bytes, each 0x00 written as
 * 0x00 0xFF, then 0x00; a digit run is 0x30, the number of significant digits
 * (leading zeros stripped), those digits, then the run's length. Counts are
 * 2 bytes big-endian, or 0xFF 0xFF and 8 bytes big-endian from 0xFFFF up.
 *
 *     uint8_t key[WL_BIN_SORT_KEY_MAX(256)];  // a bin code: 64 characters, at most 256 bytes
 *     size_t key_len = wl_bin_sort_key(bin_code, key, sizeof(key));
 */
size_t wl_bin_sort_key(wl_span_t code, uint8_t *out, size_t cap);

#endif
