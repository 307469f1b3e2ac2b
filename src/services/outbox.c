/* A deliverer's way through the webhook outbox happens here: which endpoints are due, their
 * leases, each delivery's body and attempt, and how the attempt ended. */
#include "walklist/outbox.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/webhook.h"
#include "services/services.h"
#include "store/db.h"
#include "store/webhooks.h"
#include "walklist/json_writer.h"
#include "walklist/random.h"

#define PENDING_BATCH   64 /* deliveries read at once: the longest run a stock.changed coalesces */
#define CONNECT_WAIT_MS 10000
#define KEEP_DONE_MS    (7 * 24 * 3600 * 1000LL) /* done deliveries shown by webhook deliveries */

_Static_assert(WL_OUTBOX_ENDPOINT_ID_SIZE == WL_WEBHOOK_ID_SIZE, "endpoint ids");
_Static_assert(WL_OUTBOX_SIGNATURE_SIZE == WL_WEBHOOK_SIGNATURE_SIZE, "signatures");

struct wl_outbox {
    wl_core_t *core;
    PGconn *conn;   /* NULL: not connected */
    char owner[40]; /* this outbox's name on its leases */
    /* claimed: this outbox may hold the endpoint's lease in the database, so it owes a release
     * (a renewal refused when the endpoint was disabled meanwhile still leaves ours there);
     * leased: the last wl_outbox_lease got it, with its secret; taken: wl_outbox_next took
     * the attempt of taken_seq, and wl_outbox_record has not recorded it yet. */
    bool claimed, leased, taken;
    wl_webhook_due_t endpoint;
    wl_webhook_lease_t lease;
    int64_t taken_seq;
};

static void forget_lease(wl_outbox_t *outbox, bool released)
{
    explicit_bzero(&outbox->lease, sizeof(outbox->lease));
    outbox->leased = false;
    outbox->taken = false;
    if (released)
        outbox->claimed = false;
}

/* Every failure that is not a refusal: the connection and the lease are given up. */
static int failed(wl_outbox_t *outbox, int rc)
{
    wl_db_discard(outbox->conn);
    outbox->conn = NULL;
    forget_lease(outbox, true);
    return rc;
}

static int need_connection(const wl_outbox_t *outbox, wl_error_t *err)
{
    return outbox->conn != NULL ? 0
                                : wl_error_set(err, WL_EUNAVAILABLE,
                                               "the outbox is not connected (wl_outbox_connect)");
}

static int need_lease(const wl_outbox_t *outbox, wl_error_t *err)
{
    int rc = need_connection(outbox, err);
    if (rc == 0 && !outbox->leased)
        rc = wl_error_set(err, WL_EPRECONDITION, "the outbox holds no lease");
    return rc;
}

int wl_outbox_open(wl_core_t *core, wl_outbox_t **out, wl_error_t *err)
{
    *out = NULL;
    wl_outbox_t *outbox = calloc(1, sizeof(*outbox));
    if (outbox == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    char random_part[23];
    if (wl_random_id(random_part) != 0) {
        free(outbox);
        return wl_error_set(err, WL_EINTERNAL, "the system's random source failed");
    }
    outbox->core = core;
    snprintf(outbox->owner, sizeof(outbox->owner), "walklistd-%s", random_part);
    atomic_fetch_add(&core->outboxes_open, 1);
    *out = outbox;
    return 0;
}

void wl_outbox_close(wl_outbox_t *outbox)
{
    if (outbox == NULL)
        return;
    if (outbox->conn != NULL)
        wl_db_discard(outbox->conn);
    forget_lease(outbox, true);
    atomic_fetch_sub(&outbox->core->outboxes_open, 1);
    free(outbox);
}

int wl_outbox_connect(wl_outbox_t *outbox, wl_error_t *err)
{
    if (outbox->conn != NULL)
        return 0;
    wl_db_connect_t how = {.conninfo = outbox->core->database_url,
                           .application = "walklist-webhooks",
                           .liveness_timeout_ms = CONNECT_WAIT_MS,
                           .statement_timeout_ms = WL_CORE_DEFAULT_STATEMENT_TIMEOUT_MS,
                           .lock_timeout_ms = CONNECT_WAIT_MS,
                           .plan_by_key = true,
                           /* Its poll reads every shard each second (docs/scaling-out.md). */
                           .one_connection_per_node = true};
    outbox->conn = wl_db_connect(&how, wl_db_clock_ms() + CONNECT_WAIT_MS, err, NULL, 0);
    return outbox->conn != NULL ? 0 : err->code != 0 ? err->code : WL_EUNAVAILABLE;
}

int wl_outbox_due(wl_outbox_t *outbox, int64_t now_ms, wl_outbox_endpoint_t *out, int max,
                  int *count, wl_error_t *err)
{
    *count = 0;
    int rc = need_connection(outbox, err);
    if (rc == 0 && (out == NULL || max < 1))
        rc = wl_error_set(err, WL_EINVAL, "wl_outbox_due needs room for at least one endpoint");
    if (rc != 0)
        return rc;
    rc = wl_webhooks_due(outbox->conn, now_ms, out, max, count, err);
    return rc != 0 ? failed(outbox, rc) : 0;
}

/* An endpoint id as the outbox hands them out: "whe_" and 22 base64url characters. */
static bool endpoint_id_valid(const char *id)
{
    size_t len = strnlen(id, WL_OUTBOX_ENDPOINT_ID_SIZE);
    if (len != WL_OUTBOX_ENDPOINT_ID_SIZE - 1 || strncmp(id, "whe_", 4) != 0)
        return false;
    return strspn(id + 4, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") ==
           len - 4;
}

int wl_outbox_lease(wl_outbox_t *outbox, const wl_outbox_endpoint_t *endpoint, int64_t now_ms,
                    int64_t until_ms, wl_arena_t *arena, const char **url, wl_error_t *err)
{
    *url = NULL;
    int rc = need_connection(outbox, err);
    if (rc == 0 && (endpoint == NULL || !endpoint_id_valid(endpoint->id)))
        rc = wl_error_set(err, WL_EINVAL, "not an endpoint of the outbox");
    else if (rc == 0 && until_ms <= now_ms)
        rc = wl_error_set(err, WL_EINVAL, "a lease must end after now");
    else if (rc == 0 && outbox->claimed &&
             (outbox->endpoint.org_id != endpoint->org_id ||
              strcmp(outbox->endpoint.id, endpoint->id) != 0))
        rc = wl_error_set(err, WL_EPRECONDITION, "the outbox holds another endpoint's lease");
    if (rc != 0)
        return rc;
    wl_webhook_due_t wanted = *endpoint;
    wl_webhook_lease_t lease = {0};
    rc = wl_webhooks_lease(outbox->conn, &wanted, outbox->owner, now_ms, until_ms, arena, &lease,
                           err);
    if (rc < 0) {
        explicit_bzero(&lease, sizeof(lease));
        return failed(outbox, rc);
    }
    forget_lease(outbox, false);
    if (rc == 1) {
        outbox->claimed = outbox->leased = true;
        outbox->endpoint = wanted;
        outbox->lease = lease;
        *url = lease.url;
    }
    explicit_bzero(&lease, sizeof(lease));
    return rc;
}

int wl_outbox_release(wl_outbox_t *outbox, wl_error_t *err)
{
    int rc = need_connection(outbox, err);
    if (rc != 0 || !outbox->claimed)
        return rc;
    rc = wl_webhooks_release(outbox->conn, &outbox->endpoint, outbox->owner, err);
    if (rc != 0)
        return failed(outbox, rc);
    forget_lease(outbox, true);
    return 0;
}

/*
 * The body of the first attempt of pending[0]. A stock.changed coalesces the stock.changed
 * deliveries right after it that were never attempted (their cursor ranges chain): one
 * delivery from the first one's cursorFrom to the last one's cursorTo; *coalesced receives
 * their seqs.
 */
static int build_body(wl_outbox_t *outbox, const wl_webhook_pending_t *pending, int count,
                      wl_arena_t *arena, const char **body, int64_t *coalesced,
                      int *coalesced_count, wl_error_t *err)
{
    const wl_webhook_pending_t *head = &pending[0];
    *coalesced_count = 0;
    bool stock = strcmp(head->type, WL_WEBHOOK_EVENT_STOCK_CHANGED) == 0;
    int64_t to = head->stock_to;
    bool reset = head->stock_reset;
    for (int i = 1; stock && i < count; i++) {
        const wl_webhook_pending_t *next = &pending[i];
        if (strcmp(next->type, WL_WEBHOOK_EVENT_STOCK_CHANGED) != 0 || next->attempts > 0 ||
            next->body != NULL)
            break;
        to = next->stock_to;
        reset = reset || next->stock_reset;
        coalesced[(*coalesced_count)++] = next->seq;
    }
    char cursor_from[WL_EXPORT_CURSOR_MAX], cursor_to[WL_EXPORT_CURSOR_MAX];
    if (stock) {
        int64_t org_id = outbox->endpoint.org_id;
        int rc = wl__export_cursor_seal(outbox->core, outbox->conn, org_id, head->stock_from,
                                        cursor_from, err);
        if (rc == 0)
            rc = wl__export_cursor_seal(outbox->core, outbox->conn, org_id, to, cursor_to, err);
        if (rc != 0)
            return rc;
    }
    /* {"type":..,"timestamp":..,"data":..}: an event's data as it was stored, or a
     * stock.changed's cursors (at most 160 bytes each) and counts. */
    size_t size = strlen(head->type) + strlen(head->created_at) + strlen(head->data);
    size = size > (SIZE_MAX - 1024) / WL_JSON_ESCAPE_GROWTH ? SIZE_MAX
                                                            : size * WL_JSON_ESCAPE_GROWTH + 1024;
    char *text = size != SIZE_MAX ? wl_arena_alloc(arena, size) : NULL;
    if (text == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    wl_json_writer_t json;
    wl_json_writer_init(&json, text, size - 1, 0);
    wl_json_open_object(&json);
    wl_json_key(&json, "type");
    wl_json_cstring(&json, head->type);
    wl_json_key(&json, "timestamp");
    wl_json_cstring(&json, head->created_at);
    wl_json_key(&json, "data");
    if (stock) {
        wl_json_open_object(&json);
        wl_json_key(&json, "cursorFrom");
        wl_json_cstring(&json, cursor_from);
        wl_json_key(&json, "cursorTo");
        wl_json_cstring(&json, cursor_to);
        wl_json_key(&json, "historyReset");
        wl_json_bool(&json, reset);
        wl_json_key(&json, "changes");
        wl_json_int(&json, *coalesced_count + 1);
        wl_json_close_object(&json);
    } else {
        wl_json_raw(&json, head->data, strlen(head->data));
    }
    wl_json_close_object(&json);
    if (!wl_json_ok(&json))
        return wl_error_set(err, WL_EINTERNAL, "the webhook body did not fit");
    text[json.len] = '\0';
    *body = text;
    return 0;
}

int wl_outbox_next(wl_outbox_t *outbox, int64_t now_ms, wl_arena_t *arena,
                   wl_outbox_delivery_t *out, wl_error_t *err)
{
    memset(out, 0, sizeof(*out));
    int rc = need_lease(outbox, err);
    if (rc != 0)
        return rc;
    outbox->taken = false;
    wl_webhook_pending_t *pending = NULL;
    int count = 0;
    rc = wl_webhooks_pending(outbox->conn, &outbox->endpoint, PENDING_BATCH, arena, &pending,
                             &count, err);
    if (rc != 0)
        return failed(outbox, rc);
    if (count == 0 || pending[0].next_attempt_ms > now_ms)
        return 0;
    const wl_webhook_pending_t *head = &pending[0];
    const char *id = head->webhook_id, *body = head->body;
    if (body == NULL) {
        int64_t coalesced[PENDING_BATCH];
        int coalesced_count = 0;
        id = head->event_id;
        rc = build_body(outbox, pending, count, arena, &body, coalesced, &coalesced_count, err);
        if (rc == 0)
            rc = wl_webhooks_attempt(outbox->conn, &outbox->endpoint, head->seq, id, body,
                                     coalesced, coalesced_count, wl_db_wall_clock_ms(), err);
    } else {
        rc = wl_webhooks_attempt(outbox->conn, &outbox->endpoint, head->seq, NULL, NULL, NULL, 0,
                                 wl_db_wall_clock_ms(), err);
    }
    if (rc != 0)
        return failed(outbox, rc);
    outbox->taken = true;
    outbox->taken_seq = head->seq;
    *out = (wl_outbox_delivery_t){.webhook_id = id, .body = body, .attempts = head->attempts + 1};
    return 1;
}

int wl_outbox_sign(const wl_outbox_t *outbox, const wl_outbox_delivery_t *delivery,
                   int64_t timestamp, char out[WL_OUTBOX_SIGNATURE_SIZE], wl_error_t *err)
{
    int rc = need_lease(outbox, err);
    if (rc == 0 && (delivery == NULL || delivery->webhook_id == NULL || delivery->body == NULL))
        rc = wl_error_set(err, WL_EINVAL, "a delivery to sign has a webhook id and a body");
    if (rc != 0)
        return rc;
    rc = wl_webhook_sign(outbox->lease.secret, outbox->lease.secret_len, delivery->webhook_id,
                         timestamp, delivery->body, strlen(delivery->body), out);
    return rc != 0 ? wl_error_set(err, rc, "cannot sign the delivery") : 0;
}

/* Why an outcome contradicts itself, or NULL. */
static const char *outcome_refusal(const wl_outbox_outcome_t *outcome, int64_t now_ms)
{
    if (outcome->status != 0 && (outcome->status < 100 || outcome->status > 999))
        return "an HTTP status is 100 to 999, or 0 for no answer";
    if (outcome->delivered)
        return outcome->refused || outcome->error != NULL ? "a delivery has no refusal or error"
                                                          : NULL;
    if (outcome->error == NULL)
        return "a failed attempt says why";
    if (outcome->retry_ms < now_ms)
        return "a retry is not before now";
    return NULL;
}

int wl_outbox_record(wl_outbox_t *outbox, const wl_outbox_outcome_t *outcome, int64_t now_ms,
                     bool *disabled, wl_error_t *err)
{
    *disabled = false;
    int rc = need_lease(outbox, err);
    if (rc == 0 && !outbox->taken)
        rc = wl_error_set(err, WL_EPRECONDITION, "no attempt taken (wl_outbox_next) to record");
    const char *refusal = rc == 0 ? outcome_refusal(outcome, now_ms) : NULL;
    if (refusal != NULL)
        rc = wl_error_set(err, WL_EINVAL, "%s", refusal);
    if (rc != 0)
        return rc;
    rc = wl_webhooks_record(outbox->conn, &outbox->endpoint, outbox->taken_seq, outcome, now_ms,
                            disabled, err);
    if (rc != 0)
        return failed(outbox, rc);
    outbox->taken = false;
    wl_core_t *core = outbox->core;
    if (outcome->delivered)
        atomic_fetch_add(&core->webhook_delivered, 1);
    else
        atomic_fetch_add(outcome->refused ? &core->webhook_refused : &core->webhook_failed, 1);
    if (*disabled)
        atomic_fetch_add(&core->webhook_disabled, 1);
    return 0;
}

int wl_outbox_prune(wl_outbox_t *outbox, int64_t now_ms, wl_error_t *err)
{
    int rc = need_connection(outbox, err);
    if (rc != 0)
        return rc;
    rc = wl_webhooks_prune(outbox->conn, now_ms - KEEP_DONE_MS, err);
    return rc != 0 ? failed(outbox, rc) : 0;
}

void wl_core_webhook_stats(wl_core_t *core, wl_core_webhook_stats_t *out)
{
    memset(out, 0, sizeof(*out));
    out->delivered = atomic_load(&core->webhook_delivered);
    out->failed = atomic_load(&core->webhook_failed);
    out->refused = atomic_load(&core->webhook_refused);
    out->disabled = atomic_load(&core->webhook_disabled);
    out->workers = atomic_load(&core->outboxes_open);
}
