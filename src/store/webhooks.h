/*
 * Webhook endpoints, the outbox of their events and the deliveries (migration 0004_webhooks):
 * what walklistctl manages, what the scanner's load writes, and what walklistd's delivery
 * workers claim and record. Times go in as parameters computed in C (Citus refuses volatile
 * functions in INSERTs and UPDATEs).
 */
#ifndef WALKLIST_STORE_WEBHOOKS_H
#define WALKLIST_STORE_WEBHOOKS_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "domain/webhook.h"
#include "walklist/admin.h"
#include "walklist/arena.h"
#include "walklist/error.h"
#include "walklist/outbox.h"

/* Endpoint ids: "whe_" and 22 base64url characters (132 random bits), and the NUL. */
#define WL_WEBHOOK_ID_SIZE 27

/**
 * Adds an endpoint of the organization for events (checked: wl_webhook_events_check) with a
 * fresh random id and secret, written to id and secret (shown once by the caller).
 */
int wl_webhooks_endpoint_add(PGconn *conn, int64_t org_id, const char *url, const char *events,
                             char id[WL_WEBHOOK_ID_SIZE],
                             unsigned char secret[WL_WEBHOOK_SECRET_SIZE],
                             wl_error_t *err) WL_CHECK_RESULT;

/** Calls each(endpoint, data) for every endpoint of the organization, oldest first. */
int wl_webhooks_endpoint_list(PGconn *conn, int64_t org_id,
                              void (*each)(const wl_admin_webhook_t *, void *), void *data,
                              wl_error_t *err) WL_CHECK_RESULT;

/** Removes an endpoint and its deliveries; WL_ENOTFOUND when the organization has none of
 * that id. */
int wl_webhooks_endpoint_remove(PGconn *conn, int64_t org_id, const char *id,
                                wl_error_t *err) WL_CHECK_RESULT;

/** Enables a disabled endpoint again, as healthy; WL_ENOTFOUND when the organization has none
 * of that id. */
int wl_webhooks_endpoint_enable(PGconn *conn, int64_t org_id, const char *id,
                                wl_error_t *err) WL_CHECK_RESULT;

/** Calls each for the organization's most recent deliveries (of one endpoint unless
 * endpoint_id is NULL), newest event first, at most limit. */
int wl_webhooks_delivery_list(PGconn *conn, int64_t org_id, const char *endpoint_id, int limit,
                              void (*each)(const wl_admin_webhook_delivery_t *, void *), void *data,
                              wl_error_t *err) WL_CHECK_RESULT;

/** A locate_list.loaded event in the caller's transaction (that of the load), with how its
 * codes resolved. */
int wl_webhooks_enqueue_list_loaded(PGconn *conn, int64_t org_id, const char *list_id,
                                    const char *name, int64_t loaded_ms, int64_t found,
                                    int64_t ambiguous, int64_t not_found,
                                    wl_error_t *err) WL_CHECK_RESULT;

/* --- Delivery (through the outbox, services/outbox.c) ----------------------------------- */

/** An endpoint that has a pending delivery due and no lease: the outbox's, passed through. */
typedef wl_outbox_endpoint_t wl_webhook_due_t;

/** Up to max endpoints with work due at now_ms, in random order (so that processes spread). */
int wl_webhooks_due(PGconn *conn, int64_t now_ms, wl_webhook_due_t *out, int max, int *count,
                    wl_error_t *err) WL_CHECK_RESULT;

/** A leased endpoint (arena memory). */
typedef struct {
    const char *url;
    unsigned char secret[64];
    size_t secret_len;
} wl_webhook_lease_t;

/**
 * Leases an endpoint to owner until until_ms when it is enabled and nobody else holds a lease
 * running at now_ms (owner's own lease is renewed): 1 with out filled, 0 when someone else
 * has it (or it is gone or disabled).
 */
int wl_webhooks_lease(PGconn *conn, const wl_webhook_due_t *endpoint, const char *owner,
                      int64_t now_ms, int64_t until_ms, wl_arena_t *arena, wl_webhook_lease_t *out,
                      wl_error_t *err) WL_CHECK_RESULT;

/** Gives a lease back (only owner's). */
int wl_webhooks_release(PGconn *conn, const wl_webhook_due_t *endpoint, const char *owner,
                        wl_error_t *err) WL_CHECK_RESULT;

/** A pending delivery of a leased endpoint with its event (arena memory). */
typedef struct {
    int64_t seq;
    int attempts;
    int64_t next_attempt_ms;
    const char *webhook_id; /* NULL before the first attempt */
    const char *body;       /* NULL before the first attempt */
    const char *event_id;
    const char *type;
    const char *created_at; /* RFC 3339, UTC, milliseconds */
    const char *data;       /* the event's facts, JSON */
    /* Of a stock.changed event (0, 0, false for the others): the export versions it goes from
     * and to, and whether the export's change history was reset in between. */
    int64_t stock_from, stock_to;
    bool stock_reset;
} wl_webhook_pending_t;

/** The endpoint's pending deliveries, oldest event first, at most max. */
int wl_webhooks_pending(PGconn *conn, const wl_webhook_due_t *endpoint, int max, wl_arena_t *arena,
                        wl_webhook_pending_t **out, int *count, wl_error_t *err) WL_CHECK_RESULT;

/**
 * Counts an attempt of the delivery seq before it is sent (a crash mid-send still counts it).
 * On the first attempt (body not NULL) also fixes its webhook_id and body and marks the
 * deliveries of coalesced (coalesced_count seqs, sent within it) done; one transaction.
 */
int wl_webhooks_attempt(PGconn *conn, const wl_webhook_due_t *endpoint, int64_t seq,
                        const char *webhook_id, const char *body, const int64_t *coalesced,
                        int coalesced_count, int64_t now_ms, wl_error_t *err) WL_CHECK_RESULT;

/** How an attempt ended: the outbox's, passed through (refused is counted, not stored). */
typedef wl_outbox_outcome_t wl_webhook_outcome_t;

/**
 * Records how the attempt of seq ended: delivered, or when to retry (on the delivery and the
 * endpoint), and the endpoint's failing time; *disabled tells whether the endpoint was
 * disabled now. One transaction.
 */
int wl_webhooks_record(PGconn *conn, const wl_webhook_due_t *endpoint, int64_t seq,
                       const wl_webhook_outcome_t *outcome, int64_t now_ms, bool *disabled,
                       wl_error_t *err) WL_CHECK_RESULT;

/**
 * Deletes deliveries done (delivered or coalesced) before before_ms, and events older than
 * that with no delivery left; pending deliveries and their events stay, however old.
 */
int wl_webhooks_prune(PGconn *conn, int64_t before_ms, wl_error_t *err) WL_CHECK_RESULT;

#endif
