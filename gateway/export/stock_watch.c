/* Parking stock watchers and waking them on changes, heartbeats and shutdown happens here. */
#include "export/stock_watch.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "export/delta_share.h"
#include "process/upkeep.h"

struct wl_stock_watcher {
    int64_t org_id;
    bool polls; /* a poller (wl_stock_watch_add_poller): woken at every tick, never by a change */
    bool parked;
    bool changed;
    bool stalled;
    int64_t heard_ns;         /* when the last change was heard (wl_delta_share_now_ns) */
    void (*wake)(void *data); /* while parked */
    void *wake_data;
    struct timespec last_sent;               /* CLOCK_MONOTONIC: the heartbeat's clock */
    struct timespec last_progress;           /* CLOCK_MONOTONIC: the stall's clock */
    wl_stock_watcher_t *prev, *next;         /* every watcher: the timer's rounds */
    wl_stock_watcher_t *org_prev, *org_next; /* the watchers of its organization's bucket */
    wl_stock_watcher_t *woken_next;          /* on a list of watchers to wake, outside the lock */
};

/* A change wakes the watchers of one organization: they are found through a bucket of
 * organizations (a few watchers each up to tens of thousands of streams), not by passing over
 * every stream of the process under the lock. */
enum { ORG_BUCKET_BITS = 12, ORG_BUCKETS = 1 << ORG_BUCKET_BITS };

struct wl_stock_watch {
    pthread_mutex_t lock;
    wl_upkeep_chore_t *timer; /* on the upkeep loop */
    int64_t tick_ms;          /* the timer looks at every watcher this often */
    int64_t next_tick_ms;     /* wl_upkeep_now_ms; 0: not set (no watcher) */
    bool stopping;
    double heartbeat_s, stall_s;
    wl_stock_watcher_t *head;
    wl_stock_watcher_t *by_org[ORG_BUCKETS]; /* org_bucket: its watchers, through org_next */
    wl_delta_share_t *deltas;                /* the deltas the watchers share */
};

/* Fibonacci hashing: consecutive organization ids land far apart. */
static size_t org_bucket(int64_t org_id)
{
    return (size_t)(((uint64_t)org_id * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - ORG_BUCKET_BITS));
}

static double seconds_since(const struct timespec *then, const struct timespec *now)
{
    return (double)(now->tv_sec - then->tv_sec) + (double)(now->tv_nsec - then->tv_nsec) / 1e9;
}

static unsigned due(const wl_stock_watch_t *watch, const wl_stock_watcher_t *watcher,
                    const struct timespec *now)
{
    unsigned what = 0;
    if (watch->stopping)
        what |= WL_STOCK_WATCH_STOPPING;
    if (watcher->stalled)
        what |= WL_STOCK_WATCH_STALLED;
    if (watcher->polls)
        return what; /* it looks for itself at every tick */
    if (watcher->changed)
        what |= WL_STOCK_WATCH_CHANGED;
    if (seconds_since(&watcher->last_sent, now) >= watch->heartbeat_s)
        what |= WL_STOCK_WATCH_HEARTBEAT;
    return what;
}

/* Unparks watcher onto *woken (the lock held); the caller wakes the list once unlocked. */
static void unpark(wl_stock_watcher_t *watcher, wl_stock_watcher_t **woken)
{
    watcher->parked = false;
    /* The stall clock runs while the stream has something for its client, from now. */
    clock_gettime(CLOCK_MONOTONIC, &watcher->last_progress);
    watcher->woken_next = *woken;
    *woken = watcher;
}

/* Each watcher of the list is the wake path's alone once unparked: its connection stays
 * suspended, so its stream cannot end, until its wake has run. */
static void wake_all(wl_stock_watcher_t *woken)
{
    while (woken != NULL) {
        wl_stock_watcher_t *next = woken->woken_next;
        woken->wake(woken->wake_data);
        woken = next;
    }
}

/* The timer runs while there are watchers. */
static int prepare_tick(struct pollfd *fds, int room, int64_t *due_ms, void *data)
{
    (void)fds;
    (void)room;
    wl_stock_watch_t *watch = data;
    pthread_mutex_lock(&watch->lock);
    if (watch->head == NULL)
        watch->next_tick_ms = 0;
    else if (watch->next_tick_ms == 0)
        watch->next_tick_ms = wl_upkeep_now_ms() + watch->tick_ms;
    if (watch->next_tick_ms != 0)
        *due_ms = watch->next_tick_ms;
    pthread_mutex_unlock(&watch->lock);
    return 0;
}

static void tick(const struct pollfd *fds, int count, int64_t now_ms, void *data)
{
    (void)fds;
    (void)count;
    wl_stock_watch_t *watch = data;
    pthread_mutex_lock(&watch->lock);
    if (watch->next_tick_ms == 0 || now_ms < watch->next_tick_ms) {
        pthread_mutex_unlock(&watch->lock);
        return;
    }
    watch->next_tick_ms = now_ms + watch->tick_ms;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    wl_stock_watcher_t *woken = NULL;
    for (wl_stock_watcher_t *w = watch->head; w != NULL; w = w->next) {
        if (w->parked && (w->polls || due(watch, w, &now) != 0))
            unpark(w, &woken);
        else if (!w->parked && seconds_since(&w->last_progress, &now) >= watch->stall_s)
            w->stalled = true; /* its stream sees it when it next runs */
    }
    pthread_mutex_unlock(&watch->lock);
    wake_all(woken);
}

int wl_stock_watch_create(unsigned heartbeat_s, unsigned stall_s, wl_stock_watch_t **out,
                          wl_error_t *err)
{
    *out = NULL;
    if (heartbeat_s == 0 || stall_s == 0)
        return wl_error_set(err, WL_EINVAL, "the watch heartbeat and stall limit are at least 1 s");
    wl_stock_watch_t *watch = calloc(1, sizeof(*watch));
    if (watch == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    watch->heartbeat_s = heartbeat_s;
    watch->stall_s = stall_s;
    /* A quarter of the shorter interval: heartbeats come at most that late. */
    unsigned shorter = heartbeat_s < stall_s ? heartbeat_s : stall_s;
    watch->tick_ms = shorter >= 4 ? 1000 : (int64_t)shorter * 250;
    if ((watch->deltas = wl_delta_share_create()) == NULL) {
        free(watch);
        return wl_error_set(err, WL_ENOMEM, NULL);
    }
    pthread_mutex_init(&watch->lock, NULL);
    wl_upkeep_hooks_t hooks = {.prepare = prepare_tick, .run = tick, .data = watch};
    int rc = wl_upkeep_add(&hooks, &watch->timer, err);
    if (rc != 0) {
        wl_delta_share_destroy(watch->deltas);
        pthread_mutex_destroy(&watch->lock);
        free(watch);
        return rc;
    }
    *out = watch;
    return 0;
}

void wl_stock_watch_destroy(wl_stock_watch_t *watch)
{
    if (watch == NULL)
        return;
    wl_upkeep_remove(watch->timer);
    wl_delta_share_destroy(watch->deltas);
    pthread_mutex_destroy(&watch->lock);
    free(watch);
}

wl_delta_share_t *wl_stock_watch_deltas(wl_stock_watch_t *watch)
{
    return watch->deltas;
}

void wl_stock_watch_changed(int64_t org_id, void *data)
{
    wl_stock_watch_t *watch = data;
    wl_stock_watcher_t *woken = NULL;
    /* Heard now: a snapshot taken from now on includes the change. */
    int64_t heard_ns = wl_delta_share_now_ns();
    pthread_mutex_lock(&watch->lock);
    bool every = org_id == 0;
    wl_stock_watcher_t *w = every ? watch->head : watch->by_org[org_bucket(org_id)];
    for (; w != NULL; w = every ? w->next : w->org_next) {
        if (!every && w->org_id != org_id)
            continue;
        w->changed = true;
        w->heard_ns = heard_ns;
        if (w->parked)
            unpark(w, &woken);
    }
    pthread_mutex_unlock(&watch->lock);
    wake_all(woken);
}

void wl_stock_watch_stop(wl_stock_watch_t *watch)
{
    wl_stock_watcher_t *woken = NULL;
    pthread_mutex_lock(&watch->lock);
    watch->stopping = true;
    for (wl_stock_watcher_t *w = watch->head; w != NULL; w = w->next) {
        if (w->parked)
            unpark(w, &woken);
    }
    pthread_mutex_unlock(&watch->lock);
    wake_all(woken);
}

static wl_stock_watcher_t *add_watcher(wl_stock_watch_t *watch, int64_t org_id, bool polls)
{
    wl_stock_watcher_t *watcher = calloc(1, sizeof(*watcher));
    if (watcher == NULL)
        return NULL;
    watcher->org_id = org_id;
    watcher->polls = polls;
    clock_gettime(CLOCK_MONOTONIC, &watcher->last_sent);
    watcher->last_progress = watcher->last_sent;
    pthread_mutex_lock(&watch->lock);
    bool first = watch->head == NULL;
    watcher->next = watch->head;
    if (watch->head != NULL)
        watch->head->prev = watcher;
    watch->head = watcher;
    wl_stock_watcher_t **bucket = &watch->by_org[org_bucket(org_id)];
    watcher->org_next = *bucket;
    if (*bucket != NULL)
        (*bucket)->org_prev = watcher;
    *bucket = watcher;
    pthread_mutex_unlock(&watch->lock);
    if (first)
        wl_upkeep_wake(watch->timer); /* the timer starts */
    return watcher;
}

wl_stock_watcher_t *wl_stock_watch_add(wl_stock_watch_t *watch, int64_t org_id)
{
    return add_watcher(watch, org_id, false);
}

wl_stock_watcher_t *wl_stock_watch_add_poller(wl_stock_watch_t *watch)
{
    return add_watcher(watch, 0, true);
}

void wl_stock_watch_remove(wl_stock_watch_t *watch, wl_stock_watcher_t *watcher)
{
    if (watcher == NULL)
        return;
    pthread_mutex_lock(&watch->lock);
    if (watcher->prev != NULL)
        watcher->prev->next = watcher->next;
    else
        watch->head = watcher->next;
    if (watcher->next != NULL)
        watcher->next->prev = watcher->prev;
    if (watcher->org_prev != NULL)
        watcher->org_prev->org_next = watcher->org_next;
    else
        watch->by_org[org_bucket(watcher->org_id)] = watcher->org_next;
    if (watcher->org_next != NULL)
        watcher->org_next->org_prev = watcher->org_prev;
    pthread_mutex_unlock(&watch->lock);
    free(watcher);
}

void wl_stock_watch_park(wl_stock_watch_t *watch, wl_stock_watcher_t *watcher,
                         void (*wake)(void *data), void *data)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&watch->lock);
    bool now_due = due(watch, watcher, &now) != 0;
    if (now_due) {
        watcher->last_progress = now;
    } else {
        watcher->parked = true;
        watcher->wake = wake;
        watcher->wake_data = data;
    }
    pthread_mutex_unlock(&watch->lock);
    if (now_due)
        wake(data);
}

unsigned wl_stock_watch_take(wl_stock_watch_t *watch, wl_stock_watcher_t *watcher,
                             int64_t *heard_ns)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&watch->lock);
    unsigned what = due(watch, watcher, &now);
    *heard_ns = watcher->heard_ns;
    watcher->changed = false;
    pthread_mutex_unlock(&watch->lock);
    return what;
}

void wl_stock_watch_sent(wl_stock_watch_t *watch, wl_stock_watcher_t *watcher)
{
    pthread_mutex_lock(&watch->lock);
    clock_gettime(CLOCK_MONOTONIC, &watcher->last_sent);
    watcher->last_progress = watcher->last_sent; /* the message waits for its client from now */
    pthread_mutex_unlock(&watch->lock);
}

void wl_stock_watch_progress(wl_stock_watch_t *watch, wl_stock_watcher_t *watcher)
{
    pthread_mutex_lock(&watch->lock);
    clock_gettime(CLOCK_MONOTONIC, &watcher->last_progress);
    pthread_mutex_unlock(&watch->lock);
}

void wl_stock_watch_rest(wl_stock_watch_t *watch, wl_stock_watcher_t *watcher,
                         void (*wake)(void *data), void *data)
{
    wl_stock_watch_progress(watch, watcher);
    wl_stock_watch_park(watch, watcher, wake, data);
}
