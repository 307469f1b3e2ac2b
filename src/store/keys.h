/*
 * API keys: "wlk_" + 8-character public prefix + "_" + 40-character base62
 * secret. Only the prefix and the SHA-256 of the whole token are stored; the
 * token is shown once, at creation.
 */
#ifndef WALKLIST_STORE_KEYS_H
#define WALKLIST_STORE_KEYS_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "walklist/error.h"
#include "walklist/scopes.h"
#include "walklist/span.h"

#define WL_KEY_PREFIX_LEN  8
#define WL_KEY_SECRET_LEN  40
#define WL_KEY_SECRET_MIN  32
#define WL_KEY_TOKEN_MAX   128
#define WL_KEY_DIGEST_SIZE 32
/* "wlk_" + prefix + "_" + secret + NUL */
#define WL_KEY_TOKEN_SIZE (4 + WL_KEY_PREFIX_LEN + 1 + WL_KEY_SECRET_LEN + 1)

/**
 * Checks a token's shape and extracts its prefix (NUL-terminated) without
 * touching the database. False for anything that is not a well-formed key.
 */
bool wl_keys_parse(wl_span_t token, char prefix[WL_KEY_PREFIX_LEN + 1]);

/** The SHA-256 of the whole token: what is stored, and what a cache of checked keys keeps. */
void wl_keys_digest(wl_span_t token, unsigned char digest[WL_KEY_DIGEST_SIZE]);

/** Scope bits of stored scopes ("a,b"); scopes this version does not know are not granted. */
void wl_keys_scope_bits(const char *scopes, unsigned *bits);

/** Creates a key for the organization; token receives the whole token (shown once). */
int wl_keys_create(PGconn *conn, int64_t org_id, unsigned scopes, const char *name,
                   char token[WL_KEY_TOKEN_SIZE], wl_error_t *err) WL_CHECK_RESULT;

/* The active key of a prefix, as the placement of requests reads it (wl_keys_of_prefixes). */
typedef struct {
    wl_principal_t principal; /* org_id 0: no active key has the prefix */
    unsigned char digest[WL_KEY_DIGEST_SIZE];
} wl_key_of_prefix_t;

/**
 * The active keys of count key prefixes, to say where a request's rows will be before its key
 * is checked, and to check it there and then: keys[i] is the key with prefixes[i] (its
 * organization, the organization's slug, its scopes and its secret's digest), org_id 0 when
 * there is none. Read from the keys' table as the admission's own check reads it.
 */
int wl_keys_of_prefixes(PGconn *conn, const char (*prefixes)[WL_KEY_PREFIX_LEN + 1], size_t count,
                        wl_key_of_prefix_t *keys, wl_error_t *err) WL_CHECK_RESULT;

/** Looks a token up; WL_EUNAUTHENTICATED for unknown, revoked or malformed keys. */
int wl_keys_authenticate(PGconn *conn, wl_span_t token, wl_principal_t *out,
                         wl_error_t *err) WL_CHECK_RESULT;

/** Marks a key revoked; WL_ENOTFOUND when no such prefix. Revoking twice is fine. */
int wl_keys_revoke(PGconn *conn, const char *prefix, wl_error_t *err) WL_CHECK_RESULT;

typedef struct {
    const char *prefix;
    const char *name;
    const char *scopes; /* "a,b" */
    const char *created_at;
    const char *revoked_at; /* NULL while active */
} wl_key_info_t;

/** Calls each(info, data) for every key of the organization, oldest first. */
int wl_keys_list(PGconn *conn, int64_t org_id, void (*each)(const wl_key_info_t *, void *),
                 void *data, wl_error_t *err) WL_CHECK_RESULT;

#endif
