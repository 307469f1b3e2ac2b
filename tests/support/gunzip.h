/* Inflating gzip-coded bodies, and coding request bodies, for the tests of walklistd's gzip. */
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

/** len bytes of data as one gzip member (malloc'd, *out_len long); NULL when it cannot be made. */
char *gzip_encode(const void *data, size_t len, size_t *out_len);

#endif
