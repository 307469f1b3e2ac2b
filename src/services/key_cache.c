/* Keeping checked API keys until a revocation is announced happens here. */
#include "services/key_cache.h"

#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS 65536 /* a power of two: room for every key of tens of thousands of tenants */
#define PROBE 8

typedef struct {
    char prefix[WL_KEY_PREFIX_LEN + 1]; /* "": free */
    unsigned char digest[WL_KEY_DIGEST_SIZE];
    wl_principal_t principal;
    int64_t expires_ns;
} entry_t;

struct wl_key_cache {
    pthread_mutex_t lock;
    int ttl_ms;
    bool listening;      /* revocations are heard: keys may be kept */
    uint64_t generation; /* moves with every announcement and every gap in listening */
    uint64_t hits, misses;
    entry_t *entries;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static size_t slot_of(const char *prefix)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *p = prefix; *p != '\0'; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return (size_t)(h & (SLOTS - 1));
}

/* Called with the lock held. */
static void forget_all(wl_key_cache_t *cache)
{
    cache->generation++;
    memset(cache->entries, 0, sizeof(entry_t) * SLOTS);
}

void wl_key_cache_revoked(wl_key_cache_t *cache)
{
    /* Revocations are rare: forgetting every key is simplest and safe. */
    pthread_mutex_lock(&cache->lock);
    forget_all(cache);
    pthread_mutex_unlock(&cache->lock);
}

void wl_key_cache_listening(wl_key_cache_t *cache, bool listening)
{
    pthread_mutex_lock(&cache->lock);
    if (cache->listening != listening)
        forget_all(cache);
    cache->listening = listening;
    pthread_mutex_unlock(&cache->lock);
}

int wl_key_cache_create(int ttl_ms, wl_key_cache_t **out, wl_error_t *err)
{
    *out = NULL;
    wl_key_cache_t *cache = calloc(1, sizeof(*cache));
    if (cache == NULL || (cache->entries = calloc(SLOTS, sizeof(entry_t))) == NULL) {
        free(cache);
        return wl_error_set(err, WL_ENOMEM, NULL);
    }
    cache->ttl_ms = ttl_ms;
    pthread_mutex_init(&cache->lock, NULL);
    *out = cache;
    return 0;
}

void wl_key_cache_destroy(wl_key_cache_t *cache)
{
    if (cache == NULL)
        return;
    pthread_mutex_destroy(&cache->lock);
    free(cache->entries);
    free(cache);
}

bool wl_key_cache_find(wl_key_cache_t *cache, const char *prefix,
                       const unsigned char digest[WL_KEY_DIGEST_SIZE], wl_principal_t *out)
{
    bool found = false;
    int64_t now = now_ns();
    size_t slot = slot_of(prefix);
    pthread_mutex_lock(&cache->lock);
    for (size_t i = 0; cache->listening && i < PROBE; i++) {
        entry_t *e = &cache->entries[(slot + i) & (SLOTS - 1)];
        if (strcmp(e->prefix, prefix) != 0)
            continue;
        /* Constant time: the digest of a guessed secret says nothing about the real one. */
        found = e->expires_ns > now && CRYPTO_memcmp(e->digest, digest, WL_KEY_DIGEST_SIZE) == 0;
        if (found)
            *out = e->principal;
        break;
    }
    if (found)
        cache->hits++;
    else
        cache->misses++;
    pthread_mutex_unlock(&cache->lock);
    return found;
}

wl_key_ticket_t wl_key_cache_ticket(wl_key_cache_t *cache)
{
    pthread_mutex_lock(&cache->lock);
    wl_key_ticket_t ticket = {cache->generation, cache->listening};
    pthread_mutex_unlock(&cache->lock);
    return ticket;
}

void wl_key_cache_remember(wl_key_cache_t *cache, wl_key_ticket_t ticket,
                           const unsigned char digest[WL_KEY_DIGEST_SIZE],
                           const wl_principal_t *principal)
{
    int64_t now = now_ns();
    size_t slot = slot_of(principal->key_prefix);
    pthread_mutex_lock(&cache->lock);
    if (ticket.listening && cache->listening && ticket.generation == cache->generation) {
        entry_t *target = NULL;
        for (size_t i = 0; i < PROBE && target == NULL; i++) {
            entry_t *e = &cache->entries[(slot + i) & (SLOTS - 1)];
            if (e->prefix[0] == '\0' || strcmp(e->prefix, principal->key_prefix) == 0 ||
                e->expires_ns <= now)
                target = e;
        }
        if (target == NULL) /* a full neighbourhood: the first one goes */
            target = &cache->entries[slot];
        snprintf(target->prefix, sizeof(target->prefix), "%.*s", WL_KEY_PREFIX_LEN,
                 principal->key_prefix);
        memcpy(target->digest, digest, WL_KEY_DIGEST_SIZE);
        target->principal = *principal;
        target->expires_ns = now + (int64_t)cache->ttl_ms * 1000000;
    }
    pthread_mutex_unlock(&cache->lock);
}

void wl_key_cache_stats(wl_key_cache_t *cache, wl_key_cache_stats_t *out)
{
    pthread_mutex_lock(&cache->lock);
    *out = (wl_key_cache_stats_t){cache->hits, cache->misses, cache->listening};
    pthread_mutex_unlock(&cache->lock);
}
