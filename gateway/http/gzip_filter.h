/*
 * gzip (RFC 9110 section 8.4.1.3) as a filter any answer can pass through: a generator's body
 * (wl_gzip_filter, the streamed export) or a whole body at once (wl_gzip_body, large JSON
 * answers). One setting for both: zlib level 1, a gzip wrapper (h2o's lib/handler/compress.c
 * does the same for every response). Whether a client takes gzip is negotiate.h's.
 */
#ifndef WALKLIST_GATEWAY_GZIP_FILTER_H
#define WALKLIST_GATEWAY_GZIP_FILTER_H

#include <stddef.h>

#include "http/generator.h"
#include "walklist/arena.h"
#include "walklist/error.h"

/**
 * A generator whose body is inner's, gzip-coded: each piece of inner's compressed as it comes,
 * flushed when inner idles (so that what it made reaches the client before it parks), finished
 * when inner is done. Takes inner: the filter stops it when stopped, and stops it at once when
 * the filter cannot be made (NULL then: out of memory).
 */
wl_generator_t *wl_gzip_filter(wl_generator_t *inner);

/** Compresses len bytes of body into arena memory (*out, *out_len). */
int wl_gzip_body(const char *body, size_t len, wl_arena_t *arena, char **out, size_t *out_len,
                 wl_error_t *err) WL_CHECK_RESULT;

#endif
