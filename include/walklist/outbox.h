/*
 * The webhook outbox as a deliverer sees it (docs/change-feeds.md, "Webhooks"). Events wait in the
 * database, one delivery per subscribed endpoint; a deliverer (walklistd's, src/delivery) asks
 * which endpoints have deliveries due, leases one (in the database, so that processes sharing it
 * never deliver to one endpoint at once), takes its deliveries oldest first with their bodies
 * built here, has them signed here, sends them, and records how each attempt ended. The core
 * keeps the books and knows nothing of HTTP; when to retry is the deliverer's to say.
 *
 * An outbox is one thread's at a time, with a database connection of its own. A refusal (bad
 * input, a call out of turn: WL_EINVAL, WL_EPRECONDITION, WL_EUNAVAILABLE when not connected)
 * changes nothing; any other failure also drops the connection and the lease (it runs out by
 * itself), and wl_outbox_connect opens a new connection.
 *
 *     wl_outbox_endpoint_t due[8];
 *     int count = 0;
 *     if (wl_outbox_connect(outbox, &err) == 0 &&
 *         wl_outbox_due(outbox, now, due, 8, &count, &err) == 0)
 *         for (int i = 0; i < count; i++) {
 *             // Leased, and renewed before each attempt, while a delivery is due:
 *             while (wl_outbox_lease(outbox, &due[i], now, now + lease_ms, arena, &url,
 *                                    &err) == 1 &&
 *                    wl_outbox_next(outbox, now, arena, &delivery, &err) == 1) {
 *                 rc = wl_outbox_sign(outbox, &delivery, time(NULL), signature, &err);
 *                 outcome = post(url, &delivery, signature); // the deliverer's HTTP
 *                 rc = wl_outbox_record(outbox, &outcome, now, &disabled, &err);
 *             }
 *             rc = wl_outbox_release(outbox, &err);
 *         }
 */
#ifndef WALKLIST_OUTBOX_H
#define WALKLIST_OUTBOX_H

#include <stdbool.h>
#include <stdint.h>

#include "walklist/arena.h"
#include "walklist/core.h"
#include "walklist/error.h"

/* An endpoint's id ("whe_" and 22 characters) and its NUL. */
#define WL_OUTBOX_ENDPOINT_ID_SIZE 27
/* A delivery's signature ("v1," and base64 of an HMAC-SHA256) and its NUL. */
#define WL_OUTBOX_SIGNATURE_SIZE 48

typedef struct wl_outbox wl_outbox_t;

/**
 * Makes an outbox on the core's database (not connected yet). Every outbox open counts as a
 * delivery worker in wl_core_webhook_stats. core must outlive it.
 */
int wl_outbox_open(wl_core_t *core, wl_outbox_t **out, wl_error_t *err) WL_CHECK_RESULT;

/** Closes the connection and frees (a lease held runs out by itself); NULL is fine. */
void wl_outbox_close(wl_outbox_t *outbox);

/** 0 when the outbox has a connection, opened now (waiting at most 10 s) or before; else why
 * not (WL_EUNAVAILABLE). */
int wl_outbox_connect(wl_outbox_t *outbox, wl_error_t *err) WL_CHECK_RESULT;

/** An endpoint with a delivery due. */
typedef struct {
    int64_t org_id;
    char id[WL_OUTBOX_ENDPOINT_ID_SIZE];
} wl_outbox_endpoint_t;

/**
 * Up to max (>= 1) enabled endpoints that have a delivery due at now_ms and no running lease,
 * in random order (so that processes spread), into out; their number into *count.
 */
int wl_outbox_due(wl_outbox_t *outbox, int64_t now_ms, wl_outbox_endpoint_t *out, int max,
                  int *count, wl_error_t *err) WL_CHECK_RESULT;

/**
 * Leases the endpoint to this outbox until until_ms (> now_ms) when it is enabled and nobody
 * else holds a lease running at now_ms; a lease of its own is renewed. 1 with *url (arena
 * memory) the endpoint's URL; 0 when someone else has it (or it is gone or disabled): then
 * this outbox holds no lease to use, and wl_outbox_release still gives back what it had.
 * WL_EPRECONDITION until another endpoint's lease is released.
 */
int wl_outbox_lease(wl_outbox_t *outbox, const wl_outbox_endpoint_t *endpoint, int64_t now_ms,
                    int64_t until_ms, wl_arena_t *arena, const char **url,
                    wl_error_t *err) WL_CHECK_RESULT;

/** Gives the endpoint's lease back (only this outbox's); nothing when it had none. */
int wl_outbox_release(wl_outbox_t *outbox, wl_error_t *err) WL_CHECK_RESULT;

/** One attempt of a delivery: its strings are arena memory. */
typedef struct {
    const char *webhook_id; /* the webhook-id header: the same on every attempt */
    const char *body;       /* JSON, NUL-terminated: the same on every attempt */
    int attempts;           /* this one included */
} wl_outbox_delivery_t;

/**
 * Takes the leased endpoint's oldest pending delivery when it is due at now_ms and counts its
 * attempt (before it is sent: a crash mid-send still counts it): 1 with out filled, 0 when
 * none is due. A first attempt builds the body and fixes it with its webhook id; a
 * stock.changed coalesces the stock.changed deliveries right after it never attempted (one
 * body from the first one's cursorFrom to the last one's cursorTo, the others done).
 * WL_EPRECONDITION without a lease.
 */
int wl_outbox_next(wl_outbox_t *outbox, int64_t now_ms, wl_arena_t *arena,
                   wl_outbox_delivery_t *out, wl_error_t *err) WL_CHECK_RESULT;

/**
 * Signs the delivery as Standard Webhooks does, with the leased endpoint's secret (which never
 * leaves the core): "v1," and base64 of HMAC-SHA256 over "<webhook id>.<timestamp>.<body>".
 * WL_EPRECONDITION without a lease.
 */
int wl_outbox_sign(const wl_outbox_t *outbox, const wl_outbox_delivery_t *delivery,
                   int64_t timestamp, char out[WL_OUTBOX_SIGNATURE_SIZE],
                   wl_error_t *err) WL_CHECK_RESULT;

/** How an attempt ended. */
typedef struct {
    bool delivered;     /* a 2xx answer */
    bool refused;       /* not sent: the host resolved to an address deliveries may not go to */
    int status;         /* the answer's HTTP status (100-999), 0: no answer */
    const char *error;  /* why it failed; NULL when delivered */
    int64_t retry_ms;   /* after a failure: when to try again (not before now_ms) */
    int64_t disable_ms; /* after a failure: disable the endpoint when failing since before */
} wl_outbox_outcome_t;

/**
 * Records how the attempt wl_outbox_next took last ended, at now_ms: delivered; or failed,
 * due again at retry_ms (the delivery and the endpoint), the endpoint failing since its first
 * failure after a success and disabled when that is before disable_ms (*disabled then true).
 * Counts it in wl_core_webhook_stats. WL_EPRECONDITION without a lease or an attempt taken
 * (an attempt is recorded once); WL_EINVAL for an outcome that contradicts itself.
 */
int wl_outbox_record(wl_outbox_t *outbox, const wl_outbox_outcome_t *outcome, int64_t now_ms,
                     bool *disabled, wl_error_t *err) WL_CHECK_RESULT;

/**
 * Deletes the deliveries done (delivered or coalesced) a week before now_ms, and the events
 * older than that with no delivery left (webhook deliveries shows that week); pending
 * deliveries and their events stay, however old.
 */
int wl_outbox_prune(wl_outbox_t *outbox, int64_t now_ms, wl_error_t *err) WL_CHECK_RESULT;

#endif
