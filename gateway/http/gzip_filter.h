/*
 * gzip (RFC 9110 section 8.4.1.3) as a filter any answer can pass through: a generator's body
 * (wl_gzip_filter, the streamed export) or a whole body at once (wl_gzip_body, wl_gzip_offer:
 * large JSON answers, Connect's unary answers and stream messages). One setting for all: zlib
 * level 1, a gzip wrapper (h2o's lib/handler/compress.c does the same for every response).
 * Whether a client takes gzip is negotiate.h's. The other way, a gzip-coded request (Connect)
 * is inflated under a limit counted on the inflated bytes (wl_gunzip_body).
 */
#ifndef WALKLIST_GATEWAY_GZIP_FILTER_H
#define WALKLIST_GATEWAY_GZIP_FILTER_H

#include <stdbool.h>
#include <stddef.h>

#include "http/exchange.h"
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

/** Appends the gzip coding of len bytes of body onto out (a stream's message: no copy). */
int wl_gzip_append(const char *body, size_t len, wl_piece_t *out, wl_error_t *err) WL_CHECK_RESULT;

/**
 * Codes ex's whole answer (ex->response) in gzip when it is worth it (1 KiB and more:
 * wl_gzip_worth) and the request's accept_field ("Accept-Encoding") takes gzip, saying so in
 * coding_field ("Content-Encoding"); from that size on the answer depends on accept_field, so
 * it says so (Vary) either way. gzip failing (out of memory) leaves the plain answer.
 */
void wl_gzip_offer(wl_exchange_t *ex, const char *accept_field, const char *coding_field);

/** True when len bytes are worth coding (1 KiB and more). */
bool wl_gzip_worth(size_t len);

/**
 * Inflates one gzip member of len bytes into arena memory (*out, NUL-terminated, *out_len
 * bytes), stopping as soon as it would pass limit bytes: WL_EEXHAUSTED then, whatever the rest
 * holds; WL_EINVAL (err's message says what) when it is not one whole gzip member.
 */
int wl_gunzip_body(const char *body, size_t len, size_t limit, wl_arena_t *arena, char **out,
                   size_t *out_len, wl_error_t *err) WL_CHECK_RESULT;

#endif
