/* Keeping checked API keys until a revocation is announced happens here. */
#include "services/key_cache.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/listen.h"

#define SLOTS    65536 /* a power of two: room for every key of tens of thousands of tenants */
#define PROBE    8
#define WAIT_MS  1000
#define RETRY_MS 1000

typedef struct {
    char prefix[WL_KEY_PREFIX_LEN + 1]; /* "": free */
    unsigned char digest[WL_KEY_DIGEST_SIZE];
    wl_principal_t principal;
    int64_t expires_ns;
} entry_t;

struct wl_key_cache {
    pthread_mutex_t lock;
    char *conninfo;
    int ttl_ms;
    bool listening;
    uint64_t generation; /* moves with every announcement and every gap in listening */
    uint64_t hits, misses;
    int wake[2]; /* a byte in wake[1] stops the thread */
    pthread_t thread;
    bool started;
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

static void on_announcement(const char *payload, void *data)
{
    wl_key_cache_t *cache = data;
    (void)payload; /* revocations are rare: forgetting every key is simplest and safe */
    pthread_mutex_lock(&cache->lock);
    forget_all(cache);
    pthread_mutex_unlock(&cache->lock);
}

static void set_listening(wl_key_cache_t *cache, bool listening)
{
    pthread_mutex_lock(&cache->lock);
    if (cache->listening != listening)
        forget_all(cache);
    cache->listening = listening;
    pthread_mutex_unlock(&cache->lock);
}

/* Waits up to wait_ms for the stop byte. */
static bool stop_requested(wl_key_cache_t *cache, int wait_ms)
{
    struct pollfd pfd = {.fd = cache->wake[0], .events = POLLIN};
    char byte;
    if (wait_ms > 0)
        (void)poll(&pfd, 1, wait_ms);
    return read(cache->wake[0], &byte, 1) == 1;
}

static void *watch_main(void *arg)
{
    wl_key_cache_t *cache = arg;
    PGconn *conn = NULL;
    for (;;) {
        wl_error_t err;
        wl_error_init(&err);
        if (conn == NULL && wl_listen_open(cache->conninfo, "wl_keys_changed",
                                           "walklistd-key-watch", &conn, &err) != 0) {
            if (stop_requested(cache, RETRY_MS))
                break;
            continue;
        }
        set_listening(cache, true);
        int rc = wl_listen_wait(conn, cache->wake[0], WAIT_MS, on_announcement, cache, &err);
        if (stop_requested(cache, 0))
            break;
        if (rc != 0) {
            set_listening(cache, false);
            PQfinish(conn);
            conn = NULL;
        }
    }
    set_listening(cache, false);
    PQfinish(conn);
    return NULL;
}

int wl_key_cache_create(const char *conninfo, int ttl_ms, wl_key_cache_t **out, wl_error_t *err)
{
    *out = NULL;
    wl_key_cache_t *cache = calloc(1, sizeof(*cache));
    if (cache == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    cache->wake[0] = cache->wake[1] = -1;
    cache->ttl_ms = ttl_ms;
    pthread_mutex_init(&cache->lock, NULL);
    cache->entries = calloc(SLOTS, sizeof(entry_t));
    cache->conninfo = strdup(conninfo);
    int rc = 0;
    if (cache->entries == NULL || cache->conninfo == NULL || pipe(cache->wake) != 0 ||
        fcntl(cache->wake[0], F_SETFL, O_NONBLOCK) != 0)
        rc = wl_error_set(err, WL_ENOMEM, NULL);
    else if (pthread_create(&cache->thread, NULL, watch_main, cache) != 0)
        rc = wl_error_set(err, WL_EINTERNAL, "cannot start the key watch");
    else
        cache->started = true;
    if (rc != 0) {
        wl_key_cache_destroy(cache);
        return rc;
    }
    *out = cache;
    return 0;
}

void wl_key_cache_destroy(wl_key_cache_t *cache)
{
    if (cache == NULL)
        return;
    if (cache->started) {
        (void)!write(cache->wake[1], "x", 1);
        pthread_join(cache->thread, NULL);
    }
    pthread_mutex_destroy(&cache->lock);
    if (cache->wake[0] >= 0) {
        close(cache->wake[0]);
        close(cache->wake[1]);
    }
    free(cache->conninfo);
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
