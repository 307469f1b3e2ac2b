/* Webhook endpoints, their outbox and the delivery bookkeeping are read and written here. */
#include "store/webhooks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/citus.h"
#include "store/db.h"
#include "walklist/random.h"

#define UTC_TEXT(column) "to_char(" column " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
#define MS_OF(column)    "floor(extract(epoch FROM " column ") * 1000)::bigint"

static void format_id(int64_t value, char out[24])
{
    snprintf(out, 24, "%lld", (long long)value);
}

/* A column's text, NULL for SQL NULL; valid as long as res. */
static const char *text_or_null(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

int wl_webhooks_endpoint_add(PGconn *conn, int64_t org_id, const char *url, const char *events,
                             char id[WL_WEBHOOK_ID_SIZE],
                             unsigned char secret[WL_WEBHOOK_SECRET_SIZE], wl_error_t *err)
{
    char random_part[23], org[24], now[64];
    if (wl_random_id(random_part) != 0 || wl_random_bytes(secret, WL_WEBHOOK_SECRET_SIZE) != 0)
        return wl_error_set(err, WL_EINTERNAL, "the system's random source failed");
    snprintf(id, WL_WEBHOOK_ID_SIZE, "whe_%s", random_part);
    format_id(org_id, org);
    wl_db_format_timestamp(wl_db_wall_clock_ms(), now);
    const char *values[] = {org, id, url, events, (const char *)secret, now};
    const int lengths[] = {0, 0, 0, 0, WL_WEBHOOK_SECRET_SIZE, 0};
    const int formats[] = {0, 0, 0, 0, 1, 0};
    return wl_db_exec_params(conn,
                             "INSERT INTO webhook_endpoints (org_id, id, url, events, secret,"
                             " created_at) VALUES ($1, $2, $3, string_to_array($4, ','), $5, $6)",
                             6, values, lengths, formats, NULL, err);
}

// clang-format off
static const char endpoint_list_sql[] =
    "SELECT e.id, e.url, array_to_string(e.events, ','), " UTC_TEXT("e.created_at") ","
    " " UTC_TEXT("e.failing_since") ", " UTC_TEXT("e.disabled_at") ","
    " (SELECT count(*) FROM webhook_deliveries d"
    "   WHERE d.org_id = e.org_id AND d.endpoint_id = e.id AND d.state = 'pending')"
    " FROM webhook_endpoints e WHERE e.org_id = $1 ORDER BY e.created_at, e.id";
// clang-format on

int wl_webhooks_endpoint_list(PGconn *conn, int64_t org_id,
                              void (*each)(const wl_admin_webhook_t *, void *), void *data,
                              wl_error_t *err)
{
    char org[24];
    format_id(org_id, org);
    const char *params[] = {org};
    PGresult *res = NULL;
    int rc = wl_db_exec(conn, endpoint_list_sql, 1, params, &res, err);
    if (rc != 0)
        return rc;
    for (int i = 0; i < PQntuples(res); i++) {
        wl_admin_webhook_t info = {
            .id = PQgetvalue(res, i, 0),
            .url = PQgetvalue(res, i, 1),
            .events = PQgetvalue(res, i, 2),
            .created_at = PQgetvalue(res, i, 3),
            .failing_since = text_or_null(res, i, 4),
            .disabled_at = text_or_null(res, i, 5),
            .pending = wl_db_int64(res, i, 6),
        };
        each(&info, data);
    }
    PQclear(res);
    return 0;
}

/*
 * One endpoint's row and then its deliveries, in one transaction: endpoint_sql ($1 org, $2 id,
 * RETURNING a row when the endpoint is there, else WL_ENOTFOUND), then deliveries_sql with the
 * first deliveries_params of ($1 org, $2 id, $3 now).
 */
static int change_endpoint(PGconn *conn, int64_t org_id, const char *id, const char *endpoint_sql,
                           const char *deliveries_sql, int deliveries_params, wl_error_t *err)
{
    char org[24], now[64];
    format_id(org_id, org);
    wl_db_format_timestamp(wl_db_wall_clock_ms(), now);
    const char *params[] = {org, id, now};
    PGresult *res = NULL;
    int rc = wl_db_begin(conn, err);
    if (rc == 0)
        rc = wl_db_exec(conn, endpoint_sql, 2, params, &res, err);
    if (rc == 0 && PQntuples(res) != 1)
        rc = wl_error_set(err, WL_ENOTFOUND, "no webhook endpoint '%s' in this organization", id);
    PQclear(res);
    if (rc == 0)
        rc = wl_db_exec(conn, deliveries_sql, deliveries_params, params, NULL, err);
    if (rc == 0)
        rc = wl_db_commit(conn, err);
    if (rc != 0)
        wl_db_rollback(conn);
    return rc;
}

int wl_webhooks_endpoint_remove(PGconn *conn, int64_t org_id, const char *id, wl_error_t *err)
{
    return change_endpoint(
        conn, org_id, id,
        "DELETE FROM webhook_endpoints WHERE org_id = $1 AND id = $2 RETURNING id",
        "DELETE FROM webhook_deliveries WHERE org_id = $1 AND endpoint_id = $2", 2, err);
}

int wl_webhooks_endpoint_enable(PGconn *conn, int64_t org_id, const char *id, wl_error_t *err)
{
    /* Its pending deliveries are due now, not at the end of their last backoff. */
    return change_endpoint(conn, org_id, id,
                           "UPDATE webhook_endpoints SET disabled_at = NULL, failing_since = NULL,"
                           " retry_at = NULL WHERE org_id = $1 AND id = $2 RETURNING id",
                           "UPDATE webhook_deliveries SET next_attempt_at = $3"
                           " WHERE org_id = $1 AND endpoint_id = $2 AND state = 'pending'",
                           3, err);
}

// clang-format off
static const char delivery_list_sql[] =
    "SELECT d.endpoint_id, coalesce(d.webhook_id, v.id), v.type, d.state, d.attempts,"
    " d.last_status, d.last_error, " UTC_TEXT("d.next_attempt_at") ","
    " " UTC_TEXT("d.delivered_at") ", " UTC_TEXT("v.created_at")
    " FROM webhook_deliveries d"
    " JOIN webhook_events v ON v.org_id = d.org_id AND v.seq = d.seq"
    " WHERE d.org_id = $1 AND ($2::text IS NULL OR d.endpoint_id = $2)"
    " ORDER BY d.seq DESC, d.endpoint_id LIMIT $3";
// clang-format on

int wl_webhooks_delivery_list(PGconn *conn, int64_t org_id, const char *endpoint_id, int limit,
                              void (*each)(const wl_admin_webhook_delivery_t *, void *), void *data,
                              wl_error_t *err)
{
    char org[24], max_rows[16];
    format_id(org_id, org);
    snprintf(max_rows, sizeof(max_rows), "%d", limit);
    const char *params[] = {org, endpoint_id, max_rows};
    PGresult *res = NULL;
    int rc = wl_db_exec(conn, delivery_list_sql, 3, params, &res, err);
    if (rc != 0)
        return rc;
    for (int i = 0; i < PQntuples(res); i++) {
        bool pending = strcmp(PQgetvalue(res, i, 3), "pending") == 0;
        wl_admin_webhook_delivery_t info = {
            .endpoint_id = PQgetvalue(res, i, 0),
            .event_id = PQgetvalue(res, i, 1),
            .type = PQgetvalue(res, i, 2),
            .state = PQgetvalue(res, i, 3),
            .attempts = wl_db_int64(res, i, 4),
            .last_status = text_or_null(res, i, 5),
            .last_error = text_or_null(res, i, 6),
            .next_attempt_at = pending ? PQgetvalue(res, i, 7) : NULL,
            .delivered_at = text_or_null(res, i, 8),
            .created_at = PQgetvalue(res, i, 9),
        };
        each(&info, data);
    }
    PQclear(res);
    return 0;
}

int wl_webhooks_enqueue_list_loaded(PGconn *conn, int64_t org_id, const char *list_id,
                                    const char *name, int64_t loaded_ms, int64_t found,
                                    int64_t ambiguous, int64_t not_found, wl_error_t *err)
{
    char org[24], at[64], counts[3][24];
    format_id(org_id, org);
    wl_db_format_timestamp(loaded_ms, at);
    format_id(found, counts[0]);
    format_id(ambiguous, counts[1]);
    format_id(not_found, counts[2]);
    const char *params[] = {org, list_id, name, at, counts[0], counts[1], counts[2]};
    /* The payload is built by PostgreSQL, which escapes the list's name as JSON. */
    return wl_db_exec_hot(
        conn,
        "SELECT wl__webhook_enqueue($1, 'locate_list.loaded', jsonb_build_object("
        "'id', $2::text, 'name', $3::text, 'loadedAt', to_char($4::timestamptz AT TIME ZONE"
        " 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), 'found', $5::bigint, 'ambiguous',"
        " $6::bigint, 'notFound', $7::bigint), $4::timestamptz)",
        7, params, NULL, err);
}

/* --- Delivery ------------------------------------------------------------------------------ */

/* The due endpoints of one organization's placement or of all: org_id and id in columns 0, 1. */
static void read_due(PGresult *res, wl_webhook_due_t *out, int max, int *count)
{
    for (int i = 0; i < PQntuples(res) && *count < max; i++) {
        out[*count].org_id = wl_db_int64(res, i, 0);
        snprintf(out[*count].id, sizeof(out[*count].id), "%s", PQgetvalue(res, i, 1));
        (*count)++;
    }
}

/*
 * On Citus, the poll above reads every shard, so one unreachable node fails it for every
 * organization. Then the same poll runs shard by shard (Citus's
 * run_command_on_colocated_placements, one connection per shard, so only while a node is failing):
 * the shards of reachable nodes answer, and their organizations' deliveries go on. The poll's
 * values are quoted by format(), never spliced in C.
 */
static const char DUE_BY_SHARD_SQL[] =
    "SELECT split_part(x, ' ', 1)::bigint, split_part(x, ' ', 2)"
    " FROM run_command_on_colocated_placements('webhook_deliveries', 'webhook_endpoints',"
    "   format($cmd$SELECT coalesce(string_agg(e.org_id || ' ' || e.id, ','), '')"
    "     FROM (SELECT DISTINCT d.org_id, d.endpoint_id FROM %%1$s d"
    "            WHERE d.state = 'pending') p"
    "     JOIN %%2$s e ON e.org_id = p.org_id AND e.id = p.endpoint_id"
    "    WHERE e.disabled_at IS NULL AND (e.retry_at IS NULL OR e.retry_at <= %1$L)"
    "      AND (e.lease_until IS NULL OR e.lease_until < %1$L)$cmd$, $1::text)) r,"
    " unnest(string_to_array(r.result, ',')) AS x"
    " WHERE r.success AND x <> ''"
    " ORDER BY random() LIMIT $2";

/* After a failed poll: whether the database is a Citus coordinator, with the shard-by-shard
 * poll to fall back on. */
static bool on_citus(PGconn *conn)
{
    bool citus = false;
    wl_error_t ignored;
    wl_error_init(&ignored);
    return wl_citus_is_coordinator(conn, &citus, &ignored) == 0 && citus;
}

int wl_webhooks_due(PGconn *conn, int64_t now_ms, wl_webhook_due_t *out, int max, int *count,
                    wl_error_t *err)
{
    char now[64], max_rows[16];
    wl_db_format_timestamp(now_ms, now);
    snprintf(max_rows, sizeof(max_rows), "%d", max);
    const char *params[] = {now, max_rows};
    PGresult *res = NULL;
    *count = 0;
    /* From the deliveries not yet made (their partial index) to their endpoints: a poll
     * costs the work waiting, never the number of organizations or endpoints. */
    int rc = wl_db_exec_hot(conn,
                            "SELECT e.org_id, e.id"
                            " FROM (SELECT DISTINCT d.org_id, d.endpoint_id"
                            "         FROM webhook_deliveries d WHERE d.state = 'pending') p"
                            " JOIN webhook_endpoints e"
                            "   ON e.org_id = p.org_id AND e.id = p.endpoint_id"
                            " WHERE e.disabled_at IS NULL"
                            " AND (e.retry_at IS NULL OR e.retry_at <= $1)"
                            " AND (e.lease_until IS NULL OR e.lease_until < $1)"
                            " ORDER BY random() LIMIT $2",
                            2, params, &res, err);
    if (rc != 0 && PQstatus(conn) == CONNECTION_OK && on_citus(conn)) {
        wl_error_init(err);
        rc = wl_db_exec(conn, DUE_BY_SHARD_SQL, 2, params, &res, err);
    }
    if (rc != 0)
        return rc;
    read_due(res, out, max, count);
    PQclear(res);
    return 0;
}

int wl_webhooks_lease(PGconn *conn, const wl_webhook_due_t *endpoint, const char *owner,
                      int64_t now_ms, int64_t until_ms, wl_arena_t *arena, wl_webhook_lease_t *out,
                      wl_error_t *err)
{
    char org[24], now[64], until[64];
    format_id(endpoint->org_id, org);
    wl_db_format_timestamp(now_ms, now);
    wl_db_format_timestamp(until_ms, until);
    const char *params[] = {org, endpoint->id, owner, now, until};
    PGresult *res = NULL;
    /* A compare-and-set: of processes racing for the endpoint, the row lock lets one through,
     * and the others see its lease when they recheck the condition. */
    int rc = wl_db_exec_hot(conn,
                            "UPDATE webhook_endpoints SET lease_until = $5, lease_owner = $3"
                            " WHERE org_id = $1 AND id = $2 AND disabled_at IS NULL"
                            " AND (lease_until IS NULL OR lease_until < $4"
                            " OR lease_owner = $3) RETURNING url, secret",
                            5, params, &res, err);
    if (rc != 0)
        return rc;
    int leased = PQntuples(res) == 1;
    if (leased) {
        size_t len = 0;
        unsigned char *secret = PQunescapeBytea((const unsigned char *)PQgetvalue(res, 0, 1), &len);
        out->url = wl_arena_strdup(arena, PQgetvalue(res, 0, 0));
        if (secret == NULL || out->url == NULL || len > sizeof(out->secret)) {
            rc = wl_error_set(err, WL_ENOMEM, NULL);
        } else {
            memcpy(out->secret, secret, len);
            out->secret_len = len;
        }
        if (secret != NULL) {
            explicit_bzero(secret, len);
            PQfreemem(secret);
        }
    }
    PQclear(res);
    return rc != 0 ? rc : leased;
}

int wl_webhooks_release(PGconn *conn, const wl_webhook_due_t *endpoint, const char *owner,
                        wl_error_t *err)
{
    char org[24];
    format_id(endpoint->org_id, org);
    const char *params[] = {org, endpoint->id, owner};
    return wl_db_exec_hot(conn,
                          "UPDATE webhook_endpoints SET lease_until = NULL, lease_owner = NULL"
                          " WHERE org_id = $1 AND id = $2 AND lease_owner = $3",
                          3, params, NULL, err);
}

// clang-format off
static const char pending_sql[] =
    "SELECT d.seq, d.attempts, " MS_OF("d.next_attempt_at") ", d.webhook_id, d.body, v.id,"
    " v.type, to_char(v.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),"
    " v.data::text,"
    " CASE WHEN v.type = 'stock.changed' THEN (v.data->>'from')::bigint ELSE 0 END,"
    " CASE WHEN v.type = 'stock.changed' THEN (v.data->>'to')::bigint ELSE 0 END,"
    " v.type = 'stock.changed' AND coalesce((v.data->>'reset')::boolean, false)"
    " FROM webhook_deliveries d JOIN webhook_events v ON v.org_id = d.org_id AND v.seq = d.seq"
    " WHERE d.org_id = $1 AND d.endpoint_id = $2 AND d.state = 'pending'"
    " ORDER BY d.seq LIMIT $3";
// clang-format on

static const char *nullable(wl_arena_t *arena, const PGresult *res, int row, int col, bool *ok)
{
    const char *text = text_or_null(res, row, col);
    const char *copy = text != NULL ? wl_arena_strdup(arena, text) : NULL;
    *ok = *ok && (text == NULL || copy != NULL);
    return copy;
}

int wl_webhooks_pending(PGconn *conn, const wl_webhook_due_t *endpoint, int max, wl_arena_t *arena,
                        wl_webhook_pending_t **out, int *count, wl_error_t *err)
{
    char org[24], max_rows[16];
    format_id(endpoint->org_id, org);
    snprintf(max_rows, sizeof(max_rows), "%d", max);
    const char *params[] = {org, endpoint->id, max_rows};
    PGresult *res = NULL;
    *count = 0;
    int rc = wl_db_exec_hot(conn, pending_sql, 3, params, &res, err);
    if (rc != 0)
        return rc;
    int rows = PQntuples(res);
    *out = wl_arena_alloc(arena, sizeof(**out) * (size_t)(rows ? rows : 1));
    bool ok = *out != NULL;
    for (int i = 0; ok && i < rows; i++) {
        wl_webhook_pending_t *p = &(*out)[i];
        p->seq = wl_db_int64(res, i, 0);
        p->attempts = (int)wl_db_int64(res, i, 1);
        p->next_attempt_ms = wl_db_int64(res, i, 2);
        p->webhook_id = nullable(arena, res, i, 3, &ok);
        p->body = nullable(arena, res, i, 4, &ok);
        p->event_id = nullable(arena, res, i, 5, &ok);
        p->type = nullable(arena, res, i, 6, &ok);
        p->created_at = nullable(arena, res, i, 7, &ok);
        p->data = nullable(arena, res, i, 8, &ok);
        p->stock_from = PQgetisnull(res, i, 9) ? 0 : wl_db_int64(res, i, 9);
        p->stock_to = PQgetisnull(res, i, 10) ? 0 : wl_db_int64(res, i, 10);
        p->stock_reset = PQgetvalue(res, i, 11)[0] == 't';
        *count += ok;
    }
    PQclear(res);
    return ok ? 0 : wl_error_set(err, WL_ENOMEM, NULL);
}

int wl_webhooks_attempt(PGconn *conn, const wl_webhook_due_t *endpoint, int64_t seq,
                        const char *webhook_id, const char *body, const int64_t *coalesced,
                        int coalesced_count, int64_t now_ms, wl_error_t *err)
{
    char org[24], head[24], now[64];
    format_id(endpoint->org_id, org);
    format_id(seq, head);
    wl_db_format_timestamp(now_ms, now);
    int rc = wl_db_begin(conn, err);
    const char *params[] = {org, endpoint->id, head, now, webhook_id, body};
    /* coalesce($5, webhook_id): a retry keeps what the first attempt fixed. */
    if (rc == 0)
        rc = wl_db_exec_hot(conn,
                            "UPDATE webhook_deliveries SET attempts = attempts + 1,"
                            " last_attempt_at = $4, webhook_id = coalesce(webhook_id, $5),"
                            " body = coalesce(body, $6)"
                            " WHERE org_id = $1 AND endpoint_id = $2 AND seq = $3",
                            6, params, NULL, err);
    for (int i = 0; rc == 0 && i < coalesced_count; i++) {
        char one[24];
        format_id(coalesced[i], one);
        const char *more[] = {org, endpoint->id, one, head, now};
        rc = wl_db_exec_hot(conn,
                            "UPDATE webhook_deliveries SET state = 'coalesced',"
                            " coalesced_into = $4, last_attempt_at = $5"
                            " WHERE org_id = $1 AND endpoint_id = $2 AND seq = $3"
                            " AND state = 'pending' AND attempts = 0",
                            5, more, NULL, err);
    }
    if (rc == 0)
        rc = wl_db_commit(conn, err);
    if (rc != 0)
        wl_db_rollback(conn);
    return rc;
}

int wl_webhooks_record(PGconn *conn, const wl_webhook_due_t *endpoint, int64_t seq,
                       const wl_webhook_outcome_t *outcome, int64_t now_ms, bool *disabled,
                       wl_error_t *err)
{
    char org[24], head[24], now[64], retry[64], disable[64], status[16];
    format_id(endpoint->org_id, org);
    format_id(seq, head);
    wl_db_format_timestamp(now_ms, now);
    wl_db_format_timestamp(outcome->retry_ms, retry);
    wl_db_format_timestamp(outcome->disable_ms, disable);
    snprintf(status, sizeof(status), "%d", outcome->status);
    const char *status_param = outcome->status > 0 ? status : NULL;
    PGresult *res = NULL;
    *disabled = false;
    int rc = wl_db_begin(conn, err);
    if (rc == 0 && outcome->delivered) {
        const char *params[] = {org, endpoint->id, head, now, status_param};
        rc = wl_db_exec_hot(conn,
                            "UPDATE webhook_deliveries SET state = 'delivered',"
                            " delivered_at = $4, last_status = $5, last_error = NULL"
                            " WHERE org_id = $1 AND endpoint_id = $2 AND seq = $3",
                            5, params, NULL, err);
        if (rc == 0)
            rc = wl_db_exec_hot(conn,
                                "UPDATE webhook_endpoints SET failing_since = NULL,"
                                " retry_at = NULL WHERE org_id = $1 AND id = $2",
                                2, params, NULL, err);
    } else if (rc == 0) {
        const char *params[] = {org, endpoint->id, head, retry, status_param, outcome->error};
        rc = wl_db_exec_hot(conn,
                            "UPDATE webhook_deliveries SET next_attempt_at = $4,"
                            " last_status = $5, last_error = $6"
                            " WHERE org_id = $1 AND endpoint_id = $2 AND seq = $3",
                            6, params, NULL, err);
        /* failing_since is the first failure since the last success; an endpoint failing
         * since before $5 is disabled (its pending deliveries stay, for webhook deliveries). */
        const char *endpoint_params[] = {org, endpoint->id, now, retry, disable};
        if (rc == 0)
            rc = wl_db_exec_hot(conn,
                                "UPDATE webhook_endpoints SET retry_at = $4,"
                                " failing_since = coalesce(failing_since, $3::timestamptz),"
                                " disabled_at = CASE WHEN coalesce(failing_since,"
                                " $3::timestamptz) <= $5 THEN $3::timestamptz END"
                                " WHERE org_id = $1 AND id = $2 RETURNING disabled_at IS NOT NULL",
                                5, endpoint_params, &res, err);
        if (rc == 0 && PQntuples(res) == 1)
            *disabled = PQgetvalue(res, 0, 0)[0] == 't';
        PQclear(res);
    }
    if (rc == 0)
        rc = wl_db_commit(conn, err);
    if (rc != 0)
        wl_db_rollback(conn);
    return rc;
}

/* The prune shard by shard, for when a node is unreachable (as DUE_BY_SHARD_SQL): each
 * reachable shard prunes, the others wait for the next round. */
static const char PRUNE_BY_SHARD_SQL[] =
    "SELECT count(*) FILTER (WHERE r.success)"
    " FROM run_command_on_colocated_placements('webhook_deliveries', 'webhook_events',"
    "   format($cmd$WITH done AS (DELETE FROM %%1$s WHERE state <> 'pending'"
    "                  AND last_attempt_at < %1$L)"
    "     DELETE FROM %%2$s v WHERE v.created_at < %1$L"
    "       AND NOT EXISTS (SELECT 1 FROM %%1$s d WHERE d.org_id = v.org_id AND d.seq = v.seq)"
    "     $cmd$, $1::text)) r";

int wl_webhooks_prune(PGconn *conn, int64_t before_ms, wl_error_t *err)
{
    char before[64];
    wl_db_format_timestamp(before_ms, before);
    const char *params[] = {before};
    int rc = wl_db_exec(conn,
                        "DELETE FROM webhook_deliveries WHERE state <> 'pending'"
                        " AND last_attempt_at < $1",
                        1, params, NULL, err);
    if (rc == 0)
        rc = wl_db_exec(conn,
                        "DELETE FROM webhook_events v WHERE v.created_at < $1"
                        " AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d"
                        " WHERE d.org_id = v.org_id AND d.seq = v.seq)",
                        1, params, NULL, err);
    if (rc != 0 && PQstatus(conn) == CONNECTION_OK && on_citus(conn)) {
        wl_error_init(err);
        rc = wl_db_exec(conn, PRUNE_BY_SHARD_SQL, 1, params, NULL, err);
    }
    return rc;
}
