/*
 * API keys this process has checked, kept so that a request with a known key
 * costs no database round trip. A key is kept only while the process LISTENs
 * for revocations (wl_keys_revoke announces every revocation; the core's
 * announcements connection hears them, announcements.h), and for at
 * most its time to live (a safety net: PostgreSQL delivers every announcement to
 * a connected listener); whenever announcements may have been missed the cache
 * forgets everything. A revoked key is refused as soon as the announcement
 * arrives (milliseconds), in every process.
 */
#ifndef WALKLIST_SERVICES_KEY_CACHE_H
#define WALKLIST_SERVICES_KEY_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "store/keys.h"
#include "walklist/core.h"

typedef struct wl_key_cache wl_key_cache_t;

/** An empty cache that keeps nothing until told that revocations are heard. */
int wl_key_cache_create(int ttl_ms, wl_key_cache_t **out, wl_error_t *err) WL_CHECK_RESULT;
void wl_key_cache_destroy(wl_key_cache_t *cache);

/**
 * Whether revocations are heard now (announcements.h tells): while they are not, nothing is
 * kept, and every change either way forgets every key.
 */
void wl_key_cache_listening(wl_key_cache_t *cache, bool listening);

/** A revocation was announced: every key is forgotten. */
void wl_key_cache_revoked(wl_key_cache_t *cache);

/** True, with *out filled, when the token (prefix and SHA-256) is a key checked lately. */
bool wl_key_cache_find(wl_key_cache_t *cache, const char *prefix,
                       const unsigned char digest[WL_KEY_DIGEST_SIZE], wl_principal_t *out);

/** Taken before a key is read from the database; remember checks nothing changed since. */
typedef struct {
    uint64_t generation;
    bool listening;
} wl_key_ticket_t;

wl_key_ticket_t wl_key_cache_ticket(wl_key_cache_t *cache);

/** Keeps a key read from the database after the ticket, unless a change came meanwhile. */
void wl_key_cache_remember(wl_key_cache_t *cache, wl_key_ticket_t ticket,
                           const unsigned char digest[WL_KEY_DIGEST_SIZE],
                           const wl_principal_t *principal);

typedef struct {
    uint64_t hits, misses;
    bool listening;
} wl_key_cache_stats_t;

void wl_key_cache_stats(wl_key_cache_t *cache, wl_key_cache_stats_t *out);

#endif
