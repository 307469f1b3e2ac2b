/*
 * The webhook outbox as a deliverer uses it (walklist/outbox.h), against a real PostgreSQL,
 * without HTTP: an endpoint due, its lease, an attempt taken with its body and signature, a
 * failure with its retry and a success with the same webhook id and body, the counts of
 * wl_core_webhook_stats, and pruning. Every refusal (bad input, a call out of turn, an endpoint
 * added without a URL check, a delivery without workers) changes nothing, in the database or
 * the counts.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "domain/webhook.h"
#include "fixture.h"
#include "store/db.h"
#include "store/webhooks.h"
#include "test.h"
#include "testdb.h"
#include "walklist/admin.h"
#include "walklist/delivery.h"
#include "walklist/outbox.h"

static PGconn *db;
static wl_core_t *core;

static int64_t now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static long long count(const char *sql)
{
    return testdb_count(db, sql);
}

/* The database and the counts a refusal must leave as they were. */
static void snapshot(char *out, size_t size)
{
    wl_core_webhook_stats_t stats;
    wl_core_webhook_stats(core, &stats);
    char row[1024];
    testdb_value(db,
                 "SELECT concat_ws('|', (SELECT string_agg(concat_ws(',', state, attempts,"
                 " webhook_id, last_status, last_error, next_attempt_at), ';' ORDER BY seq)"
                 " FROM webhook_deliveries), (SELECT string_agg(concat_ws(',', lease_owner,"
                 " lease_until, retry_at, failing_since, disabled_at), ';' ORDER BY id)"
                 " FROM webhook_endpoints), (SELECT count(*) FROM webhook_endpoints))",
                 row, sizeof(row));
    snprintf(out, size, "%s #%llu/%llu/%llu/%llu/%d", row, (unsigned long long)stats.delivered,
             (unsigned long long)stats.failed, (unsigned long long)stats.refused,
             (unsigned long long)stats.disabled, stats.workers);
}

#define REFUSED(call, code)                                                                        \
    do {                                                                                           \
        char before_[2048], after_[2048];                                                          \
        snapshot(before_, sizeof(before_));                                                        \
        wl_error_t err_;                                                                           \
        wl_error_init(&err_);                                                                      \
        wl_error_t *err = &err_;                                                                   \
        CHECK_INT((call), (code));                                                                 \
        snapshot(after_, sizeof(after_));                                                          \
        CHECK_STR(after_, before_);                                                                \
    } while (0)

static int accept_url(const char *url, void *data, wl_error_t *err)
{
    (void)url, (void)err;
    (*(int *)data)++;
    return 0;
}

static int refuse_url(const char *url, void *data, wl_error_t *err)
{
    (void)url, (void)data;
    return wl_error_add_violation(err, "url", "refused by the test");
}

/* An endpoint for locate_list.loaded, added through the admin API; its secret's bytes. */
static void add_endpoint(int64_t org_id, char id[WL_ADMIN_WEBHOOK_ID_SIZE],
                         unsigned char secret[WL_WEBHOOK_SECRET_SIZE])
{
    wl_admin_t *admin = NULL;
    wl_error_t e;
    wl_error_init(&e);
    CHECK_INT(wl_admin_connect(getenv("WALKLIST_TEST_OUTBOX_DB"), "test", &admin, &e), 0);
    char text[WL_ADMIN_WEBHOOK_SECRET_SIZE];
    int checks = 0;
    /* Without a check of its URL, or refused by it, nothing is written. */
    REFUSED(wl_admin_webhook_add(admin, org_id, "http://example.com/hook", "locate_list.loaded",
                                 NULL, NULL, id, text, err),
            WL_EINVAL);
    REFUSED(wl_admin_webhook_add(admin, org_id, "http://example.com/hook", "locate_list.loaded",
                                 refuse_url, NULL, id, text, err),
            WL_EINVAL);
    /* Events are checked before the URL, which is not then looked at. */
    REFUSED(wl_admin_webhook_add(admin, org_id, "http://example.com/hook", "order.shipped",
                                 accept_url, &checks, id, text, err),
            WL_EINVAL);
    CHECK_INT(checks, 0);
    wl_error_init(&e);
    CHECK_INT(wl_admin_webhook_add(admin, org_id, "http://example.com/hook", "locate_list.loaded",
                                   accept_url, &checks, id, text, &e),
              0);
    CHECK_INT(checks, 1);
    wl_admin_close(admin);
    char hex[2 * WL_WEBHOOK_SECRET_SIZE + 1], sql[160];
    snprintf(sql, sizeof(sql),
             "SELECT encode(secret, 'hex') FROM webhook_endpoints WHERE id = '%s'", id);
    testdb_value(db, sql, hex, sizeof(hex));
    CHECK_INT(strlen(hex), 2 * WL_WEBHOOK_SECRET_SIZE);
    for (size_t i = 0; i < WL_WEBHOOK_SECRET_SIZE; i++) {
        unsigned byte = 0;
        sscanf(hex + 2 * i, "%2x", &byte);
        secret[i] = (unsigned char)byte;
    }
}

static void check_stats(unsigned delivered, unsigned failed, int workers)
{
    wl_core_webhook_stats_t stats;
    wl_core_webhook_stats(core, &stats);
    CHECK_INT(stats.delivered, delivered);
    CHECK_INT(stats.failed, failed);
    CHECK_INT(stats.refused, 0);
    CHECK_INT(stats.disabled, 0);
    CHECK_INT(stats.workers, workers);
}

/* The setting a session on conninfo has for Citus's connections per node ("" when none). */
static void pool_size_of(const char *conninfo, bool one_per_node, char *out, size_t size)
{
    wl_db_connect_t how = {.conninfo = conninfo,
                           .application = "outbox-test",
                           .one_connection_per_node = one_per_node};
    wl_error_t e;
    wl_error_init(&e);
    PGconn *conn = wl_db_connect(&how, wl_db_clock_ms() + 10000, &e, NULL, 0);
    CHECK(conn != NULL);
    if (conn == NULL)
        return;
    testdb_value(conn,
                 "SELECT coalesce(current_setting('citus.max_adaptive_executor_pool_size', true),"
                 " '')",
                 out, size);
    PQfinish(conn);
}

/* A background session (the outbox connects as one) asks a distributed database for one
 * connection per node: a poll of every shard each second must not open a burst of backends on
 * the workers, which stalled the requests they served (docs/scaling-out.md). Sessions that did
 * not ask have no such setting. Plain PostgreSQL keeps it as a placeholder. */
static void test_one_connection_per_node(const char *conninfo)
{
    char setting[32];
    pool_size_of(conninfo, true, setting, sizeof(setting));
    CHECK_STR(setting, "1");
    pool_size_of(conninfo, false, setting, sizeof(setting));
    CHECK_STR(setting, "");
}

int main(void)
{
    const char *conninfo = testdb_create("webhook_outbox");
    setenv("WALKLIST_TEST_OUTBOX_DB", conninfo, 1);
    db = testdb_connect(conninfo);
    test_one_connection_per_node(conninfo);
    wl_error_t e;
    wl_error_init(&e);
    wl_core_config_t config = {.database_url = conninfo};
    CHECK_INT(wl_core_create(&config, &core, &e), 0);
    if (core == NULL)
        return test_exit();
    int64_t org_id = fixture_org(db, "outbox");
    char id[WL_ADMIN_WEBHOOK_ID_SIZE];
    unsigned char secret[WL_WEBHOOK_SECRET_SIZE];
    add_endpoint(org_id, id, secret);
    int64_t start = now_ms();
    wl_error_init(&e);
    CHECK_INT(wl_webhooks_enqueue_list_loaded(db, org_id, "list-1", "Aisle \"3\"", start - 1000, 2,
                                              0, 1, &e),
              0);

    /* walklistd's delivery starts no thread without a worker (it is not started then). */
    wl_delivery_t *deliverer = NULL;
    wl_delivery_config_t no_workers = {.workers = 0};
    REFUSED(wl_delivery_start(core, &no_workers, &deliverer, err), WL_EINVAL);
    CHECK(deliverer == NULL);

    wl_outbox_t *outbox = NULL;
    check_stats(0, 0, 0);
    CHECK_INT(wl_outbox_open(core, &outbox, &e), 0);
    check_stats(0, 0, 1);
    wl_outbox_endpoint_t due[4];
    int due_count = -1;
    REFUSED(wl_outbox_due(outbox, start, due, 4, &due_count, err), WL_EUNAVAILABLE);
    CHECK_INT(wl_outbox_connect(outbox, &e), 0);
    REFUSED(wl_outbox_due(outbox, start, due, 0, &due_count, err), WL_EINVAL);
    REFUSED(wl_outbox_due(outbox, start, NULL, 4, &due_count, err), WL_EINVAL);
    CHECK_INT(due_count, 0);
    CHECK_INT(wl_outbox_due(outbox, start, due, 4, &due_count, &e), 0);
    CHECK_INT(due_count, 1);
    CHECK_STR(due[0].id, id);
    CHECK_INT(due[0].org_id, org_id);

    /* Out of turn, and bad leases. */
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    wl_outbox_delivery_t delivery;
    char signature[WL_OUTBOX_SIGNATURE_SIZE];
    wl_outbox_outcome_t delivered = {.delivered = true, .status = 204};
    bool disabled = true;
    REFUSED(wl_outbox_next(outbox, start, &arena, &delivery, err), WL_EPRECONDITION);
    REFUSED(wl_outbox_sign(outbox, &delivery, 1, signature, err), WL_EPRECONDITION);
    REFUSED(wl_outbox_record(outbox, &delivered, start, &disabled, err), WL_EPRECONDITION);
    CHECK(!disabled);
    REFUSED(wl_outbox_release(outbox, err), 0);
    const char *url = NULL;
    wl_outbox_endpoint_t bad = due[0];
    snprintf(bad.id, sizeof(bad.id), "whe_short");
    REFUSED(wl_outbox_lease(outbox, &bad, start, start + 60000, &arena, &url, err), WL_EINVAL);
    snprintf(bad.id, sizeof(bad.id), "whe_%s", "AAAAAAAAAAAAAAAAAAAA'-");
    REFUSED(wl_outbox_lease(outbox, &bad, start, start + 60000, &arena, &url, err), WL_EINVAL);
    REFUSED(wl_outbox_lease(outbox, NULL, start, start + 60000, &arena, &url, err), WL_EINVAL);
    REFUSED(wl_outbox_lease(outbox, &due[0], start, start, &arena, &url, err), WL_EINVAL);
    CHECK(url == NULL);

    /* Leased: another endpoint is refused until it is released. */
    CHECK_INT(wl_outbox_lease(outbox, &due[0], start, start + 60000, &arena, &url, &e), 1);
    CHECK_STR(url ? url : "", "http://example.com/hook");
    CHECK_INT(count("SELECT count(*) FROM webhook_endpoints WHERE lease_owner LIKE 'walklistd-%'"),
              1);
    snprintf(bad.id, sizeof(bad.id), "whe_%s", "AAAAAAAAAAAAAAAAAAAAAA");
    REFUSED(wl_outbox_lease(outbox, &bad, start, start + 60000, &arena, &url, err),
            WL_EPRECONDITION);
    REFUSED(wl_outbox_record(outbox, &delivered, start, &disabled, err), WL_EPRECONDITION);

    /* The first attempt: counted before it is sent, its body built and fixed. */
    CHECK_INT(wl_outbox_next(outbox, start, &arena, &delivery, &e), 1);
    CHECK_INT(delivery.attempts, 1);
    CHECK(strncmp(delivery.webhook_id ? delivery.webhook_id : "", "msg_", 4) == 0);
    CHECK(strstr(delivery.body ? delivery.body : "", "\"type\":\"locate_list.loaded\"") != NULL);
    CHECK(strstr(delivery.body ? delivery.body : "", "\"name\": \"Aisle \\\"3\\\"\"") != NULL);
    CHECK_INT(count("SELECT count(*) FROM webhook_deliveries WHERE attempts = 1 AND body IS NOT"
                    " NULL AND state = 'pending'"),
              1);
    char body[1024], webhook_id[64];
    snprintf(body, sizeof(body), "%s", delivery.body ? delivery.body : "");
    snprintf(webhook_id, sizeof(webhook_id), "%s", delivery.webhook_id ? delivery.webhook_id : "");

    /* Signed with the endpoint's secret. */
    char expected[WL_WEBHOOK_SIGNATURE_SIZE];
    CHECK_INT(wl_webhook_sign(secret, sizeof(secret), webhook_id, 1700000000, body, strlen(body),
                              expected),
              0);
    CHECK_INT(wl_outbox_sign(outbox, &delivery, 1700000000, signature, &e), 0);
    CHECK_STR(signature, expected);
    wl_outbox_delivery_t unsigned_delivery = {.webhook_id = webhook_id};
    REFUSED(wl_outbox_sign(outbox, &unsigned_delivery, 1, signature, err), WL_EINVAL);

    /* Outcomes that contradict themselves. */
    int64_t after = now_ms();
    const wl_outbox_outcome_t contradictions[] = {
        {.delivered = true, .status = 200, .error = "HTTP 200"},
        {.delivered = true, .refused = true},
        {.status = 500},
        {.status = 500, .error = "HTTP 500", .retry_ms = after - 1},
        {.status = 42, .error = "HTTP 42", .retry_ms = after + 60000},
        {.delivered = true, .status = 1000},
    };
    for (size_t i = 0; i < sizeof(contradictions) / sizeof(contradictions[0]); i++)
        REFUSED(wl_outbox_record(outbox, &contradictions[i], after, &disabled, err), WL_EINVAL);

    /* A failure: due again at its retry, the endpoint failing; recorded once. */
    wl_outbox_outcome_t failed = {.status = 500,
                                  .error = "HTTP 500",
                                  .retry_ms = after + 60000,
                                  .disable_ms = after - 3600000};
    CHECK_INT(wl_outbox_record(outbox, &failed, after, &disabled, &e), 0);
    CHECK(!disabled);
    check_stats(0, 1, 1);
    CHECK_INT(count("SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'"
                    " AND last_status = 500 AND last_error = 'HTTP 500'"),
              1);
    CHECK_INT(count("SELECT count(*) FROM webhook_endpoints WHERE failing_since IS NOT NULL"
                    " AND retry_at IS NOT NULL AND disabled_at IS NULL"),
              1);
    REFUSED(wl_outbox_record(outbox, &failed, after, &disabled, err), WL_EPRECONDITION);
    CHECK_INT(wl_outbox_next(outbox, after, &arena, &delivery, &e), 0);
    CHECK_INT(wl_outbox_release(outbox, &e), 0);
    CHECK_INT(count("SELECT count(*) FROM webhook_endpoints WHERE lease_owner IS NULL"), 1);
    CHECK_INT(wl_outbox_due(outbox, after, due, 4, &due_count, &e), 0);
    CHECK_INT(due_count, 0);

    /* The retry: the same webhook id and body; delivered. */
    int64_t later = after + 61000;
    CHECK_INT(wl_outbox_due(outbox, later, due, 4, &due_count, &e), 0);
    CHECK_INT(due_count, 1);
    CHECK_INT(wl_outbox_lease(outbox, &due[0], later, later + 60000, &arena, &url, &e), 1);
    CHECK_INT(wl_outbox_next(outbox, later, &arena, &delivery, &e), 1);
    CHECK_INT(delivery.attempts, 2);
    CHECK_STR(delivery.webhook_id ? delivery.webhook_id : "", webhook_id);
    CHECK_STR(delivery.body ? delivery.body : "", body);
    CHECK_INT(wl_outbox_record(outbox, &delivered, later, &disabled, &e), 0);
    check_stats(1, 1, 1);
    CHECK_INT(count("SELECT count(*) FROM webhook_deliveries WHERE state = 'delivered'"
                    " AND last_status = 204 AND last_error IS NULL"),
              1);
    CHECK_INT(count("SELECT count(*) FROM webhook_endpoints WHERE failing_since IS NULL"
                    " AND retry_at IS NULL"),
              1);
    CHECK_INT(wl_outbox_next(outbox, later, &arena, &delivery, &e), 0);
    CHECK_INT(wl_outbox_release(outbox, &e), 0);

    /* Done deliveries are kept a week. */
    CHECK_INT(wl_outbox_prune(outbox, now_ms(), &e), 0);
    CHECK_INT(count("SELECT count(*) FROM webhook_deliveries"), 1);
    CHECK_INT(wl_outbox_prune(outbox, now_ms() + 8LL * 24 * 3600 * 1000, &e), 0);
    CHECK_INT(count("SELECT count(*) FROM webhook_deliveries"), 0);
    CHECK_INT(count("SELECT count(*) FROM webhook_events"), 0);

    wl_arena_dispose(&arena);
    wl_outbox_close(outbox);
    check_stats(1, 1, 0);
    wl_core_destroy(core);
    PQfinish(db);
    return test_exit();
}
