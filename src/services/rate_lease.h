/*
 * Rate-limit permits this process leased from the database (wl_admit: never more
 * than the limit in any rolling window, however many processes share the
 * database): a request spends a local permit when one is held, and only
 * otherwise asks the database, for as many permits as the bucket's recent
 * demand here would spend within the hold time (never more than a sixteenth
 * of the limit, so that one process cannot sit on a bucket, and one at a time
 * near the limit, where a leased permit's longer stay in the window would
 * refuse requests that fit). Permits
 * not spent in time go back with the next ask. A full bucket is remembered for
 * up to a second, so that a client hammering it costs no round trips.
 *
 * A bucket holds a current grant and, once that runs low (a quarter of its
 * permits or of its hold time left), a next one asked for ahead by a refill
 * thread. One thread at a time asks for a bucket's permits; requests that find
 * none wait for its answer.
 */
#ifndef WALKLIST_SERVICES_RATE_LEASE_H
#define WALKLIST_SERVICES_RATE_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include "store/rate_limits.h"
#include "walklist/core.h"

typedef struct wl_rate_leases wl_rate_leases_t;

/** How the refill threads ask the database (wl_rate_take over a pooled connection). */
typedef int (*wl_rate_ask_fn)(void *data, int64_t org_id, const char *bucket, int limit,
                              const wl_rate_ask_t *ask, wl_rate_grant_t *grant, wl_error_t *err);

/**
 * hold_ms 0: no leases, every request asks the database for one permit. With
 * leases, two threads calling ask refill a bucket's permits before they run
 * out, so that a busy bucket's requests do not wait for the database.
 */
int wl_rate_leases_create(int hold_ms, wl_rate_ask_fn ask, void *ask_data, wl_rate_leases_t **out,
                          wl_error_t *err) WL_CHECK_RESULT;
void wl_rate_leases_destroy(wl_rate_leases_t *leases);

/** What to ask the database for; filled by wl_rate_leases_spend. */
typedef struct {
    wl_rate_ask_t ask;
    char return_at[WL_RATE_STAMP_SIZE];
    int64_t sent_ns;
    int slot; /* -1: not kept */
} wl_rate_fetch_t;

typedef enum {
    WL_RATE_DECIDED, /* rate is filled: accepted, or refused (the bucket was full a moment ago) */
    WL_RATE_FETCH,   /* ask the database with fetch->ask, then call wl_rate_leases_fetched */
    WL_RATE_BUSY,    /* another request of the bucket is asking still: nothing done */
} wl_rate_spend_t;

/**
 * Decides locally when it can. While another request of the bucket (or a refill) is asking
 * the database, waits for its answer up to wait_ms (0: not at all), then returns WL_RATE_BUSY.
 * After WL_RATE_FETCH the caller must call wl_rate_leases_fetched, whatever happened.
 */
wl_rate_spend_t wl_rate_leases_spend(wl_rate_leases_t *leases, int64_t org_id, wl_rate_t *rate,
                                     wl_rate_fetch_t *fetch, int wait_ms);

void wl_rate_leases_fetched(wl_rate_leases_t *leases, int64_t org_id, wl_rate_fetch_t *fetch,
                            const wl_rate_grant_t *grant, wl_rate_t *rate);

typedef struct {
    uint64_t local, fetched; /* requests decided here, and database round trips they made */
    uint64_t refilled;       /* asks made ahead, by the refill threads */
} wl_rate_leases_stats_t;

void wl_rate_leases_stats(wl_rate_leases_t *leases, wl_rate_leases_stats_t *out);

#endif
