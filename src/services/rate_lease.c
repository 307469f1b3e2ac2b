/* Spending leased rate-limit permits, and deciding what to lease next, happens here. */
#include "services/rate_lease.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "walklist/monotonic.h"

#define SLOTS       8192 /* a power of two */
#define PROBE       16
#define DENY_MAX_MS 1000 /* a full bucket is believed this long at most */
#define SHARE       16   /* one process leases at most limit / SHARE permits at a time */
#define REFILLERS   2    /* threads asking ahead; the pool keeps 2 connections beyond the workers */
#define QUEUE       4096 /* refills waiting; beyond, buckets ask when they run out */

/* One grant of permits: spent from leased_ns (when the ask was sent, before the database
 * read its clock) until deadline_ns, never later than the time they were counted at. */
typedef struct {
    int permits; /* unspent */
    int granted;
    int64_t leased_ns, deadline_ns;
    char counted_at[WL_RATE_STAMP_SIZE];
} grant_t;

typedef struct {
    int64_t org_id; /* 0: free */
    char bucket[16];
    int limit;
    bool fetching;    /* a request is asking the database; the others wait */
    bool refilling;   /* a refill of next is queued or asked for */
    bool refill_sent; /* ... and a refiller has asked: it is worth waiting for */
    grant_t current, next;
    int used;         /* the database's count after the last grant */
    int64_t reset_ms; /* the database's reset at the last grant, */
    int64_t reset_ns; /* and when it was asked for */
    int64_t denied_until_ns;
    /* Unspent permits of a grant that ended, to go back with the next ask. */
    char return_at[WL_RATE_STAMP_SIZE];
    int return_count;
} lease_t;

typedef struct {
    int slot;
    int64_t org_id;
} job_t;

struct wl_rate_leases {
    pthread_mutex_t lock;
    pthread_cond_t answered; /* an ask was answered */
    pthread_cond_t work;     /* a refill was queued, or stop */
    int hold_ms;
    wl_rate_ask_fn ask;
    void *ask_data;
    uint64_t local, fetched, refilled;
    lease_t *slots;
    job_t queue[QUEUE];
    size_t queue_head, queue_len;
    bool stop;
    int threads;
    pthread_t refillers[REFILLERS];
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
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

static bool usable(const grant_t *g, int64_t now)
{
    return g->permits > 0 && now < g->deadline_ns;
}

/* A slot for a new entry: a free one, else the stalest idle one; NULL when all are busy.
 * An evicted entry's unspent permits never go back: they leave the window late. */
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
        bool idle = !e->fetching && !e->refilling && now >= e->denied_until_ns &&
                    !usable(&e->current, now) && !usable(&e->next, now);
        if (idle && (victim == NULL || e->current.leased_ns < victim->current.leased_ns))
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

/* The database's reset, moved on by the time since it was read. */
static int reset_now(const lease_t *e, int64_t now)
{
    return seconds_up(e->reset_ms - (now - e->reset_ns) / 1000000);
}

/* The current grant is over: its unspent permits are to go back with the next ask (an older
 * return not sent yet is given up: those permits only leave the window late). */
static void retire_current(lease_t *e)
{
    if (e->current.permits > 0 && e->current.counted_at[0] != '\0') {
        snprintf(e->return_at, sizeof(e->return_at), "%s", e->current.counted_at);
        e->return_count = e->current.permits;
    }
    e->current.permits = 0;
}

/* How many permits to ask for: one at first (an organization that sends one request wastes
 * nothing), then what the demand seen on the current grant would spend within the hold time
 * (measured over at least a fiftieth of it, so that a burst does not ask for the world). */
static int want_for(const wl_rate_leases_t *leases, const lease_t *e, int64_t now)
{
    int most = e->limit / SHARE > 1 ? e->limit / SHARE : 1;
    if (leases->hold_ms == 0 || e->current.granted == 0)
        return 1;
    int64_t hold_ns = (int64_t)leases->hold_ms * 1000000;
    int64_t elapsed = now - e->current.leased_ns;
    if (elapsed > hold_ns)
        elapsed = hold_ns;
    if (elapsed < hold_ns / 50)
        elapsed = hold_ns / 50;
    int64_t served = e->current.granted - e->current.permits;
    int64_t want = (served * hold_ns + elapsed - 1) / elapsed;
    if (want > most)
        want = most;
    /* Near the limit, leased permits would keep their places in the window for longer than
     * needed and refuse requests that fit: count one request at a time there. */
    if (want <= 1 || e->used + 2 * want > e->limit)
        return 1;
    return (int)want;
}

/* Fills an ask for entry e (NULL: an entry could not be kept), taking its pending return. A
 * request's own ask spends one permit at once; a refill holds all of them for later. */
static void prepare_ask(wl_rate_leases_t *leases, lease_t *e, int64_t now, bool refill,
                        wl_rate_fetch_t *fetch)
{
    memset(fetch, 0, sizeof(*fetch));
    fetch->sent_ns = now;
    fetch->slot = -1;
    fetch->ask.want = 1;
    if (e == NULL)
        return;
    fetch->slot = (int)(e - leases->slots);
    fetch->ask.want = want_for(leases, e, now);
    fetch->ask.hold_ms = fetch->ask.want > 1 || refill ? leases->hold_ms : 0;
    if (e->return_count > 0) {
        snprintf(fetch->return_at, sizeof(fetch->return_at), "%s", e->return_at);
        fetch->ask.return_at = fetch->return_at;
        fetch->ask.return_count = e->return_count;
        e->return_count = 0;
    }
}

/* Queues an ask ahead when the current grant is running out and leasing pays. */
static void maybe_refill(wl_rate_leases_t *leases, lease_t *e, int64_t now)
{
    if (leases->threads == 0 || e->refilling || e->fetching || e->next.permits > 0 ||
        e->current.granted < 2 || leases->queue_len == QUEUE || want_for(leases, e, now) < 2)
        return;
    int64_t hold_ns = (int64_t)leases->hold_ms * 1000000;
    if (e->current.permits * 4 > e->current.granted && e->current.deadline_ns - now > hold_ns / 4)
        return;
    e->refilling = true;
    leases->queue[(leases->queue_head + leases->queue_len++) % QUEUE] =
        (job_t){(int)(e - leases->slots), e->org_id};
    pthread_cond_signal(&leases->work);
}

/* Records a grant in e and says what it means for the request that asked (rate, when not
 * NULL). Called with the lock held. */
static void record_grant(lease_t *e, const wl_rate_fetch_t *fetch, const wl_rate_grant_t *grant,
                         grant_t *into, bool spend_one, wl_rate_t *rate)
{
    bool granted = grant->granted > 0;
    int left = granted && spend_one ? grant->granted - 1 : grant->granted;
    if (rate != NULL) {
        rate->accepted = granted;
        rate->remaining = (grant->used < rate->limit ? rate->limit - grant->used : 0) + left;
        rate->reset_s = seconds_up(grant->reset_ms);
    }
    if (e == NULL)
        return;
    /* Spent within up to a fifth less than the hold time, varied per grant: buckets leased
     * together (a burst, a restart) then do not all run out, and refill, at the same moment.
     * Ending early is always safe; the permits are counted at the end of the hold. */
    int64_t hold_ns = (int64_t)fetch->ask.hold_ms * 1000000;
    uint64_t mix = ((uint64_t)fetch->sent_ns ^ (uint64_t)e->org_id) * 0x9e3779b97f4a7c15ull;
    int64_t early = hold_ns > 0 ? (int64_t)((mix >> 33) % (uint64_t)(hold_ns / 5 + 1)) : 0;
    *into = (grant_t){left, grant->granted, fetch->sent_ns, fetch->sent_ns + hold_ns - early, ""};
    snprintf(into->counted_at, sizeof(into->counted_at), "%s", grant->counted_at);
    e->used = grant->used;
    e->reset_ms = grant->reset_ms;
    e->reset_ns = fetch->sent_ns;
}

static void *refiller_main(void *arg)
{
    wl_rate_leases_t *leases = arg;
    pthread_mutex_lock(&leases->lock);
    for (;;) {
        while (!leases->stop && leases->queue_len == 0)
            pthread_cond_wait(&leases->work, &leases->lock);
        if (leases->stop)
            break;
        job_t job = leases->queue[leases->queue_head];
        leases->queue_head = (leases->queue_head + 1) % QUEUE;
        leases->queue_len--;
        lease_t *e = &leases->slots[job.slot];
        if (e->org_id != job.org_id || !e->refilling || e->refill_sent)
            continue; /* taken over by a request, or a stale job */
        wl_rate_fetch_t fetch;
        prepare_ask(leases, e, now_ns(), true, &fetch);
        e->refill_sent = true;
        int64_t org_id = e->org_id;
        char bucket[sizeof(e->bucket)];
        snprintf(bucket, sizeof(bucket), "%s", e->bucket);
        int limit = e->limit;
        pthread_mutex_unlock(&leases->lock);

        wl_rate_grant_t grant;
        wl_error_t err;
        wl_error_init(&err);
        int rc = leases->ask(leases->ask_data, org_id, bucket, limit, &fetch.ask, &grant, &err);

        pthread_mutex_lock(&leases->lock);
        /* The entry stays while refilling (claim passes it by). */
        if (rc == 0) {
            leases->refilled++;
            if (grant.granted > 0)
                record_grant(e, &fetch, &grant, &e->next, false, NULL);
        }
        e->refilling = false;
        e->refill_sent = false;
        pthread_cond_broadcast(&leases->answered);
    }
    pthread_mutex_unlock(&leases->lock);
    return NULL;
}

int wl_rate_leases_create(int hold_ms, wl_rate_ask_fn ask, void *ask_data, wl_rate_leases_t **out,
                          wl_error_t *err)
{
    *out = NULL;
    wl_rate_leases_t *leases = calloc(1, sizeof(*leases));
    if (leases == NULL || (leases->slots = calloc(SLOTS, sizeof(lease_t))) == NULL) {
        free(leases);
        return wl_error_set(err, WL_ENOMEM, NULL);
    }
    leases->hold_ms = hold_ms > 0 ? hold_ms : 0;
    leases->ask = ask;
    leases->ask_data = ask_data;
    pthread_mutex_init(&leases->lock, NULL);
    wl_cond_init_monotonic(&leases->answered);
    pthread_cond_init(&leases->work, NULL);
    /* Without refillers every bucket asks when it runs out, which is still correct. */
    for (int i = 0; leases->hold_ms > 0 && ask != NULL && i < REFILLERS; i++)
        if (pthread_create(&leases->refillers[i], NULL, refiller_main, leases) == 0)
            leases->threads++;
    *out = leases;
    return 0;
}

void wl_rate_leases_destroy(wl_rate_leases_t *leases)
{
    if (leases == NULL)
        return;
    pthread_mutex_lock(&leases->lock);
    leases->stop = true;
    pthread_cond_broadcast(&leases->work);
    pthread_mutex_unlock(&leases->lock);
    for (int i = 0; i < leases->threads; i++)
        pthread_join(leases->refillers[i], NULL);
    pthread_cond_destroy(&leases->work);
    pthread_cond_destroy(&leases->answered);
    pthread_mutex_destroy(&leases->lock);
    free(leases->slots);
    free(leases);
}

/* Whether a request must wait: another request is asking, or a refiller is, and will answer
 * sooner than an ask of its own. (A refill still in the queue is not waited for: after a burst
 * many buckets run low together, and the queue can be long.) */
static bool must_wait(const lease_t *e, int64_t now)
{
    return e->fetching || (e->refill_sent && !usable(&e->current, now) && !usable(&e->next, now));
}

wl_rate_spend_t wl_rate_leases_spend(wl_rate_leases_t *leases, int64_t org_id, wl_rate_t *rate,
                                     wl_rate_fetch_t *fetch, int wait_ms)
{
    pthread_mutex_lock(&leases->lock);
    int64_t now = now_ns(), until = now + (int64_t)wait_ms * 1000000;
    lease_t *e;
    while ((e = find(leases, org_id, rate->bucket)) != NULL && must_wait(e, now)) {
        if (now >= until) {
            pthread_mutex_unlock(&leases->lock);
            return WL_RATE_BUSY;
        }
        struct timespec deadline = {(time_t)(until / 1000000000), (long)(until % 1000000000)};
        pthread_cond_timedwait(&leases->answered, &leases->lock, &deadline);
        now = now_ns();
    }
    if (e != NULL && now < e->denied_until_ns) {
        rate->accepted = false;
        rate->remaining = 0;
        rate->reset_s = reset_now(e, now);
        leases->local++;
        pthread_mutex_unlock(&leases->lock);
        return WL_RATE_DECIDED;
    }
    if (e != NULL && !usable(&e->current, now) && usable(&e->next, now)) {
        retire_current(e);
        e->current = e->next;
        memset(&e->next, 0, sizeof(e->next));
    }
    if (e != NULL && usable(&e->current, now)) {
        e->current.permits--;
        rate->accepted = true;
        rate->remaining = (e->used < rate->limit ? rate->limit - e->used : 0) + e->current.permits +
                          e->next.permits;
        rate->reset_s = reset_now(e, now);
        leases->local++;
        maybe_refill(leases, e, now);
        pthread_mutex_unlock(&leases->lock);
        return WL_RATE_DECIDED;
    }
    if (e == NULL)
        e = claim(leases, org_id, rate->bucket, now);
    if (e != NULL) {
        e->refilling = false; /* a refill still queued is taken over by this ask */
        e->limit = rate->limit;
        retire_current(e);
        e->fetching = true;
    }
    prepare_ask(leases, e, now, false, fetch);
    pthread_mutex_unlock(&leases->lock);
    return WL_RATE_FETCH;
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
        record_grant(e, fetch, grant, e != NULL ? &e->current : NULL, true, rate);
        if (e != NULL) {
            int64_t deny_ms = grant->reset_ms < DENY_MAX_MS ? grant->reset_ms : DENY_MAX_MS;
            e->denied_until_ns = grant->granted > 0 ? 0 : fetch->sent_ns + deny_ms * 1000000;
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
    *out = (wl_rate_leases_stats_t){leases->local, leases->fetched, leases->refilled};
    pthread_mutex_unlock(&leases->lock);
}
