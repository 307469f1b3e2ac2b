/* Inflating gzip-coded bodies, for the tests of what walklistd compresses. */
#ifndef WALKLIST_TEST_GUNZIP_H
#define WALKLIST_TEST_GUNZIP_H

#include <stdbool.h>
#include <stddef.h>

/**
 * The bytes a gzip member inflates to (malloc'd, NUL-terminated, *out_len long), or NULL when it
 * does not inflate. whole: data must be the whole member, nothing after it; otherwise a flushed
 * beginning of one is enough (what a stream sent before it idled).
 */
char *gunzip(const void *data, size_t len, bool whole, size_t *out_len);

#endif
