/* Limiting requests without a valid key per client address happens here. */
#include "http/anon_limit.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS 4096

typedef struct {
    int64_t window_start; /* seconds, aligned to the window */
    int current;
    int previous;
} slot_t;

struct wl_anon_limiter {
    pthread_mutex_t lock;
    int limit;
    int window_s;
    slot_t slots[SLOTS];
};

wl_anon_limiter_t *wl_anon_limiter_create(int limit, int window_s)
{
    wl_anon_limiter_t *limiter = calloc(1, sizeof(*limiter));
    if (limiter == NULL)
        return NULL;
    pthread_mutex_init(&limiter->lock, NULL);
    limiter->limit = limit;
    limiter->window_s = window_s > 0 ? window_s : 60;
    return limiter;
}

void wl_anon_limiter_destroy(wl_anon_limiter_t *limiter)
{
    if (limiter == NULL)
        return;
    pthread_mutex_destroy(&limiter->lock);
    free(limiter);
}

/* FNV-1a over the address bytes (not the port). */
static uint32_t address_hash(const struct sockaddr *addr)
{
    const unsigned char *bytes = NULL;
    size_t len = 0;
    if (addr != NULL && addr->sa_family == AF_INET) {
        bytes = (const unsigned char *)&((const struct sockaddr_in *)addr)->sin_addr;
        len = 4;
    } else if (addr != NULL && addr->sa_family == AF_INET6) {
        /* A /64 is one client: hosts get whole prefixes. */
        bytes = (const unsigned char *)&((const struct sockaddr_in6 *)addr)->sin6_addr;
        len = 8;
    }
    uint32_t hash = 2166136261u;
    for (size_t i = 0; i < len; i++)
        hash = (hash ^ bytes[i]) * 16777619u;
    return hash;
}

static bool check(wl_anon_limiter_t *limiter, const struct sockaddr *addr, bool count,
                  int *retry_after_s)
{
    struct timespec now_ts;
    clock_gettime(CLOCK_MONOTONIC, &now_ts);
    double now = (double)now_ts.tv_sec + (double)now_ts.tv_nsec / 1e9;
    int64_t window_start = (int64_t)now / limiter->window_s * limiter->window_s;

    pthread_mutex_lock(&limiter->lock);
    slot_t *slot = &limiter->slots[address_hash(addr) % SLOTS];
    if (slot->window_start != window_start) {
        slot->previous = slot->window_start == window_start - limiter->window_s ? slot->current : 0;
        slot->current = 0;
        slot->window_start = window_start;
    }
    double elapsed = (now - (double)window_start) / limiter->window_s;
    double estimate = slot->previous * (1.0 - elapsed) + slot->current;
    bool allowed = estimate < limiter->limit;
    if (allowed && count)
        slot->current++;
    pthread_mutex_unlock(&limiter->lock);
    if (!allowed && retry_after_s != NULL) {
        int wait = (int)((double)limiter->window_s * (1.0 - elapsed)) + 1;
        *retry_after_s = wait > 0 ? wait : 1;
    }
    return allowed;
}

bool wl_anon_limiter_allow(wl_anon_limiter_t *limiter, const struct sockaddr *addr,
                           int *retry_after_s)
{
    return check(limiter, addr, true, retry_after_s);
}

bool wl_anon_limiter_would_allow(wl_anon_limiter_t *limiter, const struct sockaddr *addr)
{
    return check(limiter, addr, false, NULL);
}
