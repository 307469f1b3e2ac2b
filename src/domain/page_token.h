/*
 * Opaque, tamper-evident page tokens for keyset pagination. A token carries
 * the key of the last item a page returned (a few strings) and is bound to
 * the request it was issued for (organization, filters: the "scope"), which
 * is authenticated but not carried. The token is
 *
 *     base64url(payload || HMAC-SHA256(secret, domain || scope || payload))
 *
 * without padding, where payload is a version byte and the key strings, each
 * with a 2-byte length. Pure functions: the secret is the caller's (kept in the
 * database so that every process agrees, see store/secrets.h).
 */
#ifndef WALKLIST_DOMAIN_PAGE_TOKEN_H
#define WALKLIST_DOMAIN_PAGE_TOKEN_H

#include <stddef.h>

#include "walklist/arena.h"
#include "walklist/error.h"
#include "walklist/span.h"

#define WL_PAGE_SECRET_SIZE 32
/* Key strings per token, and bytes per key string (64 code points of 4 bytes). */
#define WL_PAGE_KEYS_MAX 4
#define WL_PAGE_KEY_MAX  256
/* Tokens longer than this are refused before any decoding (the longest is 1420). */
#define WL_PAGE_TOKEN_MAX 2048

/**
 * Writes the token for keys (key_count strings, each at most WL_PAGE_KEY_MAX
 * bytes) bound to scope (scope_count strings, any length) into arena memory,
 * NUL-terminated. WL_EINVAL when a key is too long or there are too many;
 * WL_ENOMEM when the arena is full.
 *
 *     wl_span_t scope[] = {wl_span_str("ListStock"), wl_span_str("42"), sku_filter};
 *     wl_span_t last[] = {wl_span_str(row->sku), wl_span_str(row->warehouse)};
 *     rc = wl_page_token_encode(secret, scope, 3, last, 2, arena, &reply->next_page_token);
 */
int wl_page_token_encode(const unsigned char secret[WL_PAGE_SECRET_SIZE], const wl_span_t *scope,
                         size_t scope_count, const wl_span_t *keys, size_t key_count,
                         wl_arena_t *arena, char **out) WL_CHECK_RESULT;

/**
 * Checks a token against the secret and the scope of the request it comes
 * with and, when it was issued by wl_page_token_encode for that same scope,
 * writes its key_count key strings (NUL-terminated copies in arena memory)
 * to keys. WL_EINVAL for anything else: a token that is garbage, truncated,
 * altered in any byte, issued for another scope, or holding another number
 * of keys. The MAC comparison takes constant time. WL_ENOMEM when the arena
 * is full.
 */
int wl_page_token_decode(const unsigned char secret[WL_PAGE_SECRET_SIZE], const wl_span_t *scope,
                         size_t scope_count, wl_span_t token, size_t key_count, wl_arena_t *arena,
                         wl_span_t *keys) WL_CHECK_RESULT;

#endif
