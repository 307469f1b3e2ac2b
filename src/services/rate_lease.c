/* Spending leased rate-limit permits, and deciding what to lease next, happens here. */
#include "services/rate_lease.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS       8192 /* a power of two */
#define PROBE       16
#define DENY_MAX_MS 1000 /* a full bucket is believed this long at most */
#define SHARE       16   /* one process leases at most limit / SHARE permits at a time */

typedef struct {
    int64_t org_id; /* 0: free */
    char bucket[16];
    bool fetching; /* one thread is asking the database; the others wait */
    int permits;   /* unspent, until deadline_ns */
    int granted;   /* the last grant's size; 0: none yet, or refused */
    int64_t leased_ns, deadline_ns;
    int used;         /* the database's count after the last grant */
    int64_t reset_ms; /* the database's reset at the last grant */
    int64_t denied_until_ns;
    char counted_at[WL_RATE_STAMP_SIZE];
} lease_t;

struct wl_rate_leases {
    pthread_mutex_t lock;
    pthread_cond_t answered;
    int hold_ms;
    uint64_t local, fetched;
    lease_t *slots;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int wl_rate_leases_create(int hold_ms, wl_rate_leases_t **out, wl_error_t *err)
{
    *out = NULL;
    wl_rate_leases_t *leases = calloc(1, sizeof(*leases));
    if (leases == NULL || (leases->slots = calloc(SLOTS, sizeof(lease_t))) == NULL) {
        free(leases);
        return wl_error_set(err, WL_ENOMEM, NULL);
    }
    leases->hold_ms = hold_ms > 0 ? hold_ms : 0;
    pthread_mutex_init(&leases->lock, NULL);
    pthread_cond_init(&leases->answered, NULL);
    *out = leases;
    return 0;
}

void wl_rate_leases_destroy(wl_rate_leases_t *leases)
{
    if (leases == NULL)
        return;
    pthread_cond_destroy(&leases->answered);
    pthread_mutex_destroy(&leases->lock);
    free(leases->slots);
    free(leases);
}

static size_t home_of(int64_t org_id, const char *bucket)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)org_id; /* FNV-1a over id and name */
    h *= 1099511628211ull;
    for (const char *p = bucket; *p != '\0'; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return (size_t)(h & (SLOTS - 1));
}

static lease_t *find(wl_rate_leases_t *leases, int64_t org_id, const char *bucket)
{
    size_t home = home_of(org_id, bucket);
    for (size_t i = 0; i < PROBE; i++) {
        lease_t *e = &leases->slots[(home + i) & (SLOTS - 1)];
        if (e->org_id == org_id && strcmp(e->bucket, bucket) == 0)
            return e;
    }
    return NULL;
}

/* A slot for a new entry: a free one, else the stalest idle one; NULL when all are busy.
 * An evicted entry's unspent permits are never returned: they leave the window late. */
static lease_t *claim(wl_rate_leases_t *leases, int64_t org_id, const char *bucket, int64_t now)
{
    size_t home = home_of(org_id, bucket);
    lease_t *victim = NULL;
    for (size_t i = 0; i < PROBE; i++) {
        lease_t *e = &leases->slots[(home + i) & (SLOTS - 1)];
        if (e->org_id == 0) {
            victim = e;
            break;
        }
        bool idle =
            !e->fetching && now >= e->denied_until_ns && (e->permits == 0 || now >= e->deadline_ns);
        if (idle && (victim == NULL || e->leased_ns < victim->leased_ns))
            victim = e;
    }
    if (victim == NULL || strlen(bucket) >= sizeof(victim->bucket))
        return NULL;
    memset(victim, 0, sizeof(*victim));
    victim->org_id = org_id;
    snprintf(victim->bucket, sizeof(victim->bucket), "%s", bucket);
    return victim;
}

static int seconds_up(int64_t ms)
{
    return ms > 0 ? (int)((ms + 999) / 1000) : 0;
}

/* The entry's reset, moved on by the time since its grant. */
static int reset_now(const lease_t *e, int64_t now)
{
    return seconds_up(e->reset_ms - (now - e->leased_ns) / 1000000);
}

/* How many permits to ask for: one at first (an organization that sends one request wastes
 * nothing), then what the recent demand would spend within the hold time, measured over the last
 * lease (at least a fiftieth of the hold time, so that a burst does not ask for the world). */
static int want_for(const wl_rate_leases_t *leases, const lease_t *e, int limit, int64_t now)
{
    int most = limit / SHARE > 1 ? limit / SHARE : 1;
    if (leases->hold_ms == 0 || e->granted == 0)
        return 1;
    int64_t hold_ns = (int64_t)leases->hold_ms * 1000000;
    int64_t elapsed = now - e->leased_ns;
    if (elapsed > hold_ns)
        elapsed = hold_ns;
    if (elapsed < hold_ns / 50)
        elapsed = hold_ns / 50;
    int64_t served = e->granted - e->permits;
    int64_t want = (served * hold_ns + elapsed - 1) / elapsed;
    if (want > most)
        want = most;
    /* Near the limit, leased permits would keep their places in the window for longer than
     * needed and refuse requests that fit: count one request at a time there. */
    if (want <= 1 || e->used + 2 * want > limit)
        return 1;
    return (int)want;
}

bool wl_rate_leases_spend(wl_rate_leases_t *leases, int64_t org_id, wl_rate_t *rate,
                          wl_rate_fetch_t *fetch)
{
    pthread_mutex_lock(&leases->lock);
    int64_t now = now_ns();
    lease_t *e;
    while ((e = find(leases, org_id, rate->bucket)) != NULL && e->fetching) {
        pthread_cond_wait(&leases->answered, &leases->lock);
        now = now_ns();
    }
    if (e != NULL && now < e->denied_until_ns) {
        rate->accepted = false;
        rate->remaining = 0;
        rate->reset_s = reset_now(e, now);
        leases->local++;
        pthread_mutex_unlock(&leases->lock);
        return true;
    }
    if (e != NULL && e->permits > 0 && now < e->deadline_ns) {
        e->permits--;
        rate->accepted = true;
        rate->remaining = (e->used < rate->limit ? rate->limit - e->used : 0) + e->permits;
        rate->reset_s = reset_now(e, now);
        leases->local++;
        pthread_mutex_unlock(&leases->lock);
        return true;
    }
    if (e == NULL)
        e = claim(leases, org_id, rate->bucket, now);
    memset(fetch, 0, sizeof(*fetch));
    fetch->sent_ns = now;
    fetch->slot = -1;
    fetch->ask.want = 1;
    if (e != NULL) {
        fetch->slot = (int)(e - leases->slots);
        fetch->ask.want = want_for(leases, e, rate->limit, now);
        fetch->ask.hold_ms = fetch->ask.want > 1 ? leases->hold_ms : 0;
        if (e->permits > 0 && e->counted_at[0] != '\0') {
            snprintf(fetch->return_at, sizeof(fetch->return_at), "%s", e->counted_at);
            fetch->ask.return_at = fetch->return_at;
            fetch->ask.return_count = e->permits;
        }
        e->permits = 0;
        e->fetching = true;
    }
    pthread_mutex_unlock(&leases->lock);
    return false;
}

void wl_rate_leases_fetched(wl_rate_leases_t *leases, int64_t org_id, wl_rate_fetch_t *fetch,
                            const wl_rate_grant_t *grant, wl_rate_t *rate)
{
    pthread_mutex_lock(&leases->lock);
    lease_t *e = fetch->slot >= 0 ? &leases->slots[fetch->slot] : NULL;
    if (e != NULL && (e->org_id != org_id || !e->fetching))
        e = NULL; /* cannot happen while fetching holds the slot; kept simple if it did */
    if (grant != NULL) {
        leases->fetched++;
        rate->accepted = grant->granted > 0;
        int left = rate->accepted ? grant->granted - 1 : 0;
        rate->remaining = (grant->used < rate->limit ? rate->limit - grant->used : 0) + left;
        rate->reset_s = seconds_up(grant->reset_ms);
        if (e != NULL) {
            e->granted = grant->granted;
            e->permits = left;
            e->leased_ns = fetch->sent_ns;
            /* From when the ask was sent, which is before the database read its clock: the
             * permits are spent no later than the time they were counted at. */
            e->deadline_ns = fetch->sent_ns + (int64_t)fetch->ask.hold_ms * 1000000;
            e->used = grant->used;
            e->reset_ms = grant->reset_ms;
            snprintf(e->counted_at, sizeof(e->counted_at), "%s", grant->counted_at);
            int64_t deny_ms = grant->reset_ms < DENY_MAX_MS ? grant->reset_ms : DENY_MAX_MS;
            e->denied_until_ns = rate->accepted ? 0 : fetch->sent_ns + deny_ms * 1000000;
        }
    }
    if (e != NULL) {
        e->fetching = false;
        pthread_cond_broadcast(&leases->answered);
    }
    pthread_mutex_unlock(&leases->lock);
}

void wl_rate_leases_stats(wl_rate_leases_t *leases, wl_rate_leases_stats_t *out)
{
    pthread_mutex_lock(&leases->lock);
    *out = (wl_rate_leases_stats_t){leases->local, leases->fetched};
    pthread_mutex_unlock(&leases->lock);
}
