/*
 * Admissions (store/admit.c, services/admissions.c): a group of requests is let in with one
 * statement, each request on its own terms (its key, its bucket, its scope, its work), and a
 * refused request writes nothing; a group commits every request or (when one fails) each
 * request alone, so that a failure is only its own; requests arriving while a commit is in
 * flight form the next group, and every request learns its own fate.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fixture.h"
#include "services/admissions.h"
#include "services/shard_placement.h"
#include "store/admit.h"
#include "store/lists.h"
#include "test.h"
#include "testdb.h"

static const char *conninfo;
static PGconn *db;

static wl_pool_t *pool_new(int size)
{
    wl_pool_config_t config = {.conninfo = conninfo, .size = size, .timeout_ms = 5000};
    wl_pool_t *pool = NULL;
    wl_error_t err;
    wl_error_init(&err);
    if (wl_pool_create(&config, &pool, &err) != 0) {
        FAIL("pool: %s", err.message);
        exit(1);
    }
    return pool;
}

typedef struct {
    wl_admit_t request;
    wl_list_work_t work;
    wl_error_t err;
    wl_arena_t arena;
    char id[64];
    wl_span_t codes[2];
    wl_rate_ask_t ask;
} pending_t;

/* A walk list to create for an organization whose key the process knows, decided already. */
static void pending_init(pending_t *p, int64_t org, const char *id, const char *code)
{
    memset(p, 0, sizeof(*p));
    wl_arena_init(&p->arena, 0);
    wl_error_init(&p->err);
    snprintf(p->id, sizeof(p->id), "%s", id);
    p->codes[0] = wl_span_str(code);
    p->codes[1] = wl_span_str("EAN-0001");
    wl_lists_create_work(&p->work, org, p->id, "Group", p->codes, 2);
    p->request = (wl_admit_t){.org_id = org,
                              .scope = WL_SCOPE_LISTS_WRITE,
                              .bucket = "locate-lists",
                              .limit = 30,
                              .work = &p->work.work,
                              .err = &p->err};
}

/* The request reads its list instead. */
static void pending_get(pending_t *p)
{
    wl_lists_get_work(&p->work, p->request.org_id, p->id, &p->arena);
}

/* The request only asks to be let in. */
static void pending_take(pending_t *p)
{
    p->request.work = NULL;
}

/* The same request with its key to check (no organization known) and one permit to ask. */
static void pending_key(pending_t *p, const char *token, int limit)
{
    wl_span_t span = wl_span_str(token);
    CHECK(wl_keys_parse(span, p->request.prefix));
    wl_keys_digest(span, p->request.digest);
    p->request.org_id = 0;
    p->request.limit = limit;
    p->ask = (wl_rate_ask_t){.want = 1};
    p->request.ask = &p->ask;
}

static long long lists_named(const char *id)
{
    char sql[160];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM locate_lists WHERE id = '%s'", id);
    return testdb_count(db, sql);
}

/* A list made earlier under this id, so that a request creating one with it fails (the key's
 * uniqueness) and shows whether it changed anything: the earlier list keeps its name. */
static void take_list_id(int64_t org, const char *id)
{
    char sql[200];
    snprintf(
        sql, sizeof(sql),
        "INSERT INTO locate_lists (org_id, id, name, codes) VALUES (%lld, '%s', 'Earlier', '{}')",
        (long long)org, id);
    testdb_exec(db, sql);
}

static long long earlier_lists_named(const char *id)
{
    char sql[160];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM locate_lists WHERE id = '%s' AND name = 'Earlier'", id);
    return testdb_count(db, sql);
}

/* Runs count requests as one batch on a pooled connection (after setup, when given), which
 * must be clean afterwards (no transaction open) and so reusable. */
static void run_batch_after(const char *setup, pending_t *p, int count)
{
    wl_pool_t *pool = pool_new(1);
    PGconn *conn = NULL;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_pool_acquire(pool, &conn, &err), 0);
    if (setup != NULL)
        testdb_exec(conn, setup);
    wl_admit_t *requests[16];
    for (int i = 0; i < count; i++)
        requests[i] = &p[i].request;
    wl_admit_batch(conn, 60000, requests, count);
    CHECK_INT(PQtransactionStatus(conn), PQTRANS_IDLE);
    wl_pool_release(pool, conn);
    wl_pool_destroy(pool);
}

static void run_batch(pending_t *p, int count)
{
    run_batch_after(NULL, p, count);
}

static void dispose(pending_t *p, int count)
{
    for (int i = 0; i < count; i++)
        wl_arena_dispose(&p[i].arena);
}

static void test_batch_commits_all(int64_t org)
{
    pending_t p[3];
    pending_init(&p[0], org, "batch-all-0", "SKU-A");
    pending_init(&p[1], org, "batch-all-1", "SKU-\"quoted\"");
    pending_init(&p[2], org, "batch-all-2", "SKU-C");
    run_batch(p, 3);
    for (int i = 0; i < 3; i++) {
        CHECK_INT(p[i].request.rc, 0);
        CHECK_INT(p[i].err.code, 0);
        CHECK(p[i].request.key_valid);
        CHECK(!p[i].request.asked); /* decided already: nothing counted */
        CHECK(p[i].work.work.done);
        CHECK(p[i].work.list.created_ms > 0);
        CHECK_INT(lists_named(p[i].id), 1);
    }
    dispose(p, 3);
    char code[64];
    testdb_value(db, "SELECT codes[1] FROM locate_lists WHERE id = 'batch-all-1'", code,
                 sizeof(code));
    CHECK_STR(code, "SKU-\"quoted\"");
    /* One organization's requests are served in the batch's order: created_at follows it. */
    CHECK_INT(testdb_count(db, "SELECT count(*) FROM (SELECT id, lag(id) OVER (ORDER BY"
                               " created_at) AS before FROM locate_lists WHERE id LIKE"
                               " 'batch-all-%') o WHERE before > id"),
              0);
}

/* A group placed on a node runs through wl_admit_at (distributed by that organization on
 * Citus); on one server it is wl_admit, with the same answers and writes. */
static void test_batch_at_node(int64_t org)
{
    pending_t p[2];
    pending_init(&p[0], org, "batch-node-0", "SKU-A");
    pending_init(&p[1], org, "batch-node-1", "SKU-B");
    p[0].request.node_org = p[1].request.node_org = org;
    run_batch(p, 2);
    for (int i = 0; i < 2; i++) {
        CHECK_INT(p[i].request.rc, 0);
        CHECK(p[i].work.work.done);
        CHECK_INT(lists_named(p[i].id), 1);
    }
    dispose(p, 2);
    pending_t get;
    pending_init(&get, org, "batch-node-1", "SKU-B");
    pending_get(&get);
    get.request.node_org = org;
    run_batch(&get, 1);
    CHECK_INT(get.request.rc, 0);
    CHECK(get.work.work.done);
    dispose(&get, 1);
}

/*
 * One batch, every request on its own terms: a valid key creates its list and is counted; a
 * revoked key, a wrong secret and a full bucket write nothing (and a refused key counts
 * nothing); a key without the scope is counted but writes nothing; a read finds its own
 * organization's list and not another's.
 */
static void test_each_request_decided_alone(void)
{
    int64_t a = fixture_org(db, "admit-a"), b = fixture_org(db, "admit-b"),
            full = fixture_org(db, "admit-full"), reader = fixture_org(db, "admit-reader");
    char key_a[WL_KEY_TOKEN_SIZE], key_b[WL_KEY_TOKEN_SIZE], key_full[WL_KEY_TOKEN_SIZE],
        key_reader[WL_KEY_TOKEN_SIZE], revoked[WL_KEY_TOKEN_SIZE];
    fixture_key(db, a, "lists:write", key_a);
    fixture_key(db, b, "stock:read", key_b);
    fixture_key(db, full, "lists:write", key_full);
    fixture_key(db, reader, "lists:write", key_reader);
    fixture_key(db, a, "lists:write", revoked);
    fixture_revoke(db, revoked);
    char wrong[WL_KEY_TOKEN_SIZE];
    snprintf(wrong, sizeof(wrong), "%s", key_a);
    wrong[strlen(wrong) - 1] = wrong[strlen(wrong) - 1] == 'A' ? 'B' : 'A';

    /* The full bucket: a limit of 1, already spent. */
    pending_t spend;
    pending_init(&spend, 0, "full-first", "SKU-F");
    pending_key(&spend, key_full, 1);
    run_batch(&spend, 1);
    CHECK(spend.work.work.done);
    dispose(&spend, 1);
    /* The reader's list, another organization's list of the same id. */
    pending_t made[2];
    pending_init(&made[0], reader, "read-me", "SKU-R");
    pending_init(&made[1], a, "not-yours", "SKU-N");
    run_batch(made, 2);
    dispose(made, 2);

    enum { COUNT = 8 };
    pending_t p[COUNT];
    pending_init(&p[0], 0, "each-valid", "SKU-1");
    pending_key(&p[0], key_a, 30);
    pending_init(&p[1], 0, "each-revoked", "SKU-2");
    pending_key(&p[1], revoked, 30);
    pending_init(&p[2], 0, "each-wrong", "SKU-3");
    pending_key(&p[2], wrong, 30);
    pending_init(&p[3], 0, "each-full", "SKU-4");
    pending_key(&p[3], key_full, 1);
    pending_init(&p[4], 0, "each-scope", "SKU-5");
    pending_key(&p[4], key_b, 30);
    pending_init(&p[5], 0, "read-me", "");
    pending_key(&p[5], key_reader, 30);
    pending_get(&p[5]);
    pending_init(&p[6], 0, "not-yours", "");
    pending_key(&p[6], key_reader, 30);
    pending_get(&p[6]);
    pending_init(&p[7], 0, "", "");
    pending_key(&p[7], key_reader, 30);
    pending_take(&p[7]);
    run_batch(p, COUNT);
    for (int i = 0; i < COUNT; i++)
        CHECK_INT(p[i].request.rc, 0);

    CHECK(p[0].request.key_valid && p[0].request.asked && p[0].work.work.done);
    CHECK_INT(p[0].request.principal.org_id, a);
    CHECK_STR(p[0].request.principal.org_slug, "admit-a");
    CHECK_INT(p[0].request.principal.scopes, WL_SCOPE_LISTS_WRITE);
    CHECK_INT(p[0].request.grant.granted, 1);
    CHECK_INT(p[0].request.grant.used, 1);
    CHECK_INT(lists_named("each-valid"), 1);
    for (int i = 1; i <= 2; i++) {
        CHECK(!p[i].request.key_valid && !p[i].request.asked && !p[i].work.work.done);
        CHECK_INT(p[i].request.principal.org_id, 0);
    }
    CHECK_INT(lists_named("each-revoked"), 0);
    CHECK_INT(lists_named("each-wrong"), 0);
    CHECK_INT(fixture_counted(db, a, "locate-lists"), 1); /* the valid key's request alone */

    CHECK(p[3].request.key_valid && p[3].request.asked && !p[3].work.work.done);
    CHECK_INT(p[3].request.grant.granted, 0);
    CHECK_INT(p[3].request.grant.used, 1);
    CHECK(p[3].request.grant.reset_ms > 0);
    CHECK_INT(lists_named("each-full"), 0);
    CHECK_INT(fixture_counted(db, full, "locate-lists"), 1);

    CHECK(p[4].request.key_valid && p[4].request.asked && !p[4].work.work.done);
    CHECK_INT(p[4].request.principal.scopes, WL_SCOPE_STOCK_READ);
    CHECK_INT(p[4].request.grant.granted, 1);
    CHECK_INT(lists_named("each-scope"), 0);
    CHECK_INT(fixture_counted(db, b, "locate-lists"), 1);

    CHECK(p[5].work.work.done);
    CHECK_STR(p[5].work.list.name, "Group");
    CHECK_STR(p[5].work.list.state, "pending");
    CHECK(p[5].work.list.created_ms > 0);
    CHECK_INT(p[5].work.list.loaded_ms, -1);
    CHECK_INT(p[5].work.list.codes_count, 2);
    if (p[5].work.list.codes_count == 2) {
        CHECK_STR(p[5].work.list.codes[0], "SKU-R");
        CHECK_STR(p[5].work.list.codes[1], "EAN-0001");
    }
    CHECK(p[6].request.key_valid && !p[6].work.work.done); /* another organization's id */
    CHECK(p[7].request.key_valid && !p[7].work.work.done);
    CHECK_INT(p[7].request.grant.granted, 1);
    CHECK_INT(fixture_counted(db, reader, "locate-lists"), 3);
    dispose(p, COUNT);
}

/*
 * One bucket asked for several times in one batch: the asks share its room in request order,
 * as if one after the other; permits given back in the batch make room for all of them.
 */
static void test_one_bucket_shared_in_a_batch(void)
{
    int64_t org = fixture_org(db, "admit-shared");
    char key[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org, "lists:write", key);
    pending_t p[3];
    for (int i = 0; i < 3; i++) {
        char id[32];
        snprintf(id, sizeof(id), "shared-%d", i);
        pending_init(&p[i], 0, id, "SKU-S");
        pending_key(&p[i], key, 2);
    }
    run_batch(p, 3);
    for (int i = 0; i < 3; i++) {
        CHECK_INT(p[i].request.rc, 0);
        CHECK(p[i].request.key_valid && p[i].request.asked);
        CHECK_INT(p[i].request.grant.granted, i < 2 ? 1 : 0);
        CHECK_INT(p[i].request.grant.used, i < 1 ? 1 : 2);
        CHECK(p[i].work.work.done == (i < 2));
    }
    CHECK_INT(lists_named("shared-0") + lists_named("shared-1") + lists_named("shared-2"), 2);
    CHECK_INT(fixture_counted(db, org, "locate-lists"), 2);
    dispose(p, 3);

    /* A lease of 5 of 6 permits, counted 10 s ahead; then, in one batch, 4 of them given back
     * with an ask for 1, and an ask for 3: 1 + 3 granted, 5 counted in all. */
    int64_t leaser = fixture_org(db, "admit-leaser");
    pending_t lease;
    pending_init(&lease, leaser, "", "");
    pending_take(&lease);
    lease.request.limit = 6;
    lease.ask = (wl_rate_ask_t){.want = 5, .hold_ms = 10000};
    lease.request.ask = &lease.ask;
    run_batch(&lease, 1);
    CHECK_INT(lease.request.grant.granted, 5);
    CHECK(lease.request.grant.reset_ms >= 69000);
    pending_t next[2];
    for (int i = 0; i < 2; i++) {
        pending_init(&next[i], leaser, "", "");
        pending_take(&next[i]);
        next[i].request.limit = 6;
        next[i].request.ask = &next[i].ask;
    }
    next[0].ask =
        (wl_rate_ask_t){.want = 1, .return_at = lease.request.grant.counted_at, .return_count = 4};
    next[1].ask = (wl_rate_ask_t){.want = 3};
    run_batch(next, 2);
    CHECK_INT(next[0].request.grant.granted, 1);
    CHECK_INT(next[0].request.grant.used, 2);
    CHECK_INT(next[1].request.grant.granted, 3);
    CHECK_INT(next[1].request.grant.used, 5);
    CHECK_INT(fixture_counted(db, leaser, "locate-lists"), 5);
    dispose(&lease, 1);
    dispose(next, 2);
}

/* A request decided in memory first in a batch changes nothing for the asks after it: the
 * bucket that holds its limit already refuses. */
static void test_decided_request_first_in_a_batch(int64_t org)
{
    int64_t full = fixture_org(db, "admit-window");
    pending_t first;
    pending_init(&first, full, "", "");
    pending_take(&first);
    first.request.limit = 1;
    first.ask = (wl_rate_ask_t){.want = 1};
    first.request.ask = &first.ask;
    run_batch(&first, 1);
    CHECK_INT(first.request.grant.granted, 1);
    dispose(&first, 1);
    pending_t p[2];
    pending_init(&p[0], org, "window-decided", "SKU-W");
    pending_init(&p[1], full, "window-asked", "SKU-W");
    p[1].request.limit = 1;
    p[1].ask = (wl_rate_ask_t){.want = 1};
    p[1].request.ask = &p[1].ask;
    run_batch(p, 2);
    CHECK(p[0].work.work.done);
    CHECK(!p[0].request.asked);
    CHECK_INT(p[1].request.grant.granted, 0);
    CHECK(!p[1].work.work.done);
    CHECK_INT(lists_named("window-asked"), 0);
    CHECK_INT(fixture_counted(db, full, "locate-lists"), 1);
    dispose(p, 2);
}

/* Codes that PostgreSQL quotes in an array come back as they were stored. */
static void test_read_back_quoted_codes(int64_t org)
{
    pending_t made;
    pending_init(&made, org, "quoted-codes", "a \\\"b\",{c} NULL");
    run_batch(&made, 1);
    CHECK(made.work.work.done);
    dispose(&made, 1);
    pending_t get;
    pending_init(&get, org, "quoted-codes", "");
    pending_get(&get);
    run_batch(&get, 1);
    CHECK(get.work.work.done);
    CHECK_INT(get.work.list.codes_count, 2);
    if (get.work.list.codes_count == 2)
        CHECK_STR(get.work.list.codes[0], "a \\\"b\",{c} NULL");
    dispose(&get, 1);
}

/* A failing list (here: its id is taken) fails alone; the others commit. */
static void test_failure_stays_its_own(int64_t org)
{
    take_list_id(org, "alone-1");
    long long before = testdb_count(db, "SELECT count(*) FROM locate_lists");
    pending_t p[3];
    pending_init(&p[0], org, "alone-0", "SKU-A");
    pending_init(&p[1], org, "alone-1", "SKU-B");
    pending_init(&p[2], org, "alone-2", "SKU-C");
    run_batch(p, 3);
    CHECK_INT(p[0].request.rc, 0);
    CHECK_INT(p[0].err.code, 0);
    CHECK_INT(p[1].request.rc, WL_EINTERNAL);
    CHECK_INT(p[1].err.code, WL_EINTERNAL);
    CHECK_INT(p[2].request.rc, 0);
    CHECK_INT(p[2].err.code, 0);
    dispose(p, 3);
    CHECK_INT(lists_named("alone-0"), 1);
    CHECK_INT(earlier_lists_named("alone-1"), 1);
    CHECK_INT(lists_named("alone-1"), 1);
    CHECK_INT(lists_named("alone-2"), 1);
    CHECK_INT(testdb_count(db, "SELECT count(*) FROM locate_lists"), before + 2);
}

typedef struct {
    wl_admissions_t *commits;
    pending_t pending;
    int rc;
    pthread_t thread;
} inserter_t;

static void *insert_thread(void *arg)
{
    inserter_t *inserter = arg;
    inserter->rc = wl_admissions_run(inserter->commits, &inserter->pending.request);
    return NULL;
}

static void start_inserter(inserter_t *inserter, wl_admissions_t *commits, int64_t org,
                           const char *prefix, int i)
{
    char id[32];
    snprintf(id, sizeof(id), "%s-%d", prefix, i);
    inserter->commits = commits;
    pending_init(&inserter->pending, org, id, "SKU-G");
    CHECK_INT(pthread_create(&inserter->thread, NULL, insert_thread, inserter), 0);
}

static wl_admissions_t *commits_new(wl_pool_t *pool, int groups)
{
    wl_admissions_t *commits = NULL;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_admissions_create(pool, groups, 60000, &commits, &err), 0);
    return commits;
}

static void wait_for_waiting(wl_admissions_t *commits, int waiting)
{
    for (int i = 0; i < 1000; i++) {
        wl_admissions_stats_t stats;
        wl_admissions_stats(commits, &stats);
        if (stats.waiting == waiting)
            return;
        struct timespec pause = {0, 5000000};
        nanosleep(&pause, NULL);
    }
    FAIL("never saw %d lists waiting", waiting);
}

/*
 * With one commit in flight (held up by a table lock), the lists created meanwhile wait and
 * then commit as one group: 1 + 6 lists in 2 commits, each request with its own answer, the
 * one bad list among them failing alone.
 */
static void test_lists_created_meanwhile_form_one_group(int64_t org)
{
    wl_pool_t *pool = pool_new(2);
    wl_admissions_t *commits = commits_new(pool, 1);
    PGconn *blocker = testdb_connect(conninfo);
    take_list_id(org, "group-4");
    testdb_exec(blocker, "BEGIN");
    testdb_exec(blocker, "LOCK TABLE locate_lists IN SHARE MODE");

    enum { COUNT = 7 };
    inserter_t inserters[COUNT];
    for (int i = 0; i < COUNT; i++) {
        start_inserter(&inserters[i], commits, org, "group", i);
        /* The first one leads (and blocks on the lock); the rest queue behind it. */
        wait_for_waiting(commits, i == 0 ? 0 : i);
        if (i == 0) {
            for (int tries = 0; tries < 1000; tries++) {
                if (testdb_count(db, "SELECT count(*) FROM pg_locks WHERE NOT granted AND"
                                     " relation = 'locate_lists'::regclass") == 1)
                    break;
                struct timespec pause = {0, 5000000};
                nanosleep(&pause, NULL);
            }
        }
    }
    testdb_exec(blocker, "COMMIT");
    PQfinish(blocker);
    for (int i = 0; i < COUNT; i++) {
        pthread_join(inserters[i].thread, NULL);
        CHECK_INT(inserters[i].rc, i == 4 ? WL_EINTERNAL : 0);
        CHECK_INT(inserters[i].pending.err.code, i == 4 ? WL_EINTERNAL : 0);
        CHECK_INT(lists_named(inserters[i].pending.id), 1);
        CHECK_INT(earlier_lists_named(inserters[i].pending.id), i == 4 ? 1 : 0);
        wl_arena_dispose(&inserters[i].pending.arena);
    }
    wl_admissions_stats_t stats;
    wl_admissions_stats(commits, &stats);
    CHECK_INT(stats.commits, 2);
    CHECK_INT(stats.requests, COUNT);
    CHECK_INT(stats.waiting, 0);
    wl_admissions_destroy(commits);
    wl_pool_destroy(pool);
}

/* Many threads at once: every list lands exactly once, whatever the groups turned out to be. */
static void test_concurrent_inserts_all_land(int64_t org)
{
    wl_pool_t *pool = pool_new(4);
    wl_admissions_t *commits = commits_new(pool, 2);
    enum { THREADS = 24 };
    inserter_t inserters[THREADS];
    for (int i = 0; i < THREADS; i++)
        start_inserter(&inserters[i], commits, org, "many", i);
    for (int i = 0; i < THREADS; i++) {
        pthread_join(inserters[i].thread, NULL);
        CHECK_INT(inserters[i].rc, 0);
        CHECK(inserters[i].pending.work.list.created_ms > 0);
        wl_arena_dispose(&inserters[i].pending.arena);
    }
    CHECK_INT(
        testdb_count(db, "SELECT count(DISTINCT id) FROM locate_lists WHERE id LIKE 'many-%'"),
        THREADS);
    wl_admissions_stats_t stats;
    wl_admissions_stats(commits, &stats);
    CHECK_INT(stats.requests, THREADS);
    CHECK(stats.commits >= 1 && stats.commits <= THREADS);
    wl_admissions_destroy(commits);
    wl_pool_destroy(pool);
}

/* Two node groups for the routing test: odd organizations on a node whose pool reaches the
 * database, even ones on a node that cannot be reached (nothing listens on its port). */
typedef struct {
    wl_pool_t *reachable, *unreachable;
} two_nodes_t;

static bool always_distributed(void *data)
{
    (void)data;
    return true;
}

static int64_t place_by_parity(int64_t org_id, void *data)
{
    (void)data;
    return org_id % 2 == 0 ? 2 : 1;
}

static void placement_kept(PGconn *conn, void *data)
{
    (void)conn;
    (void)data;
}

static wl_pool_t *node_pool(int64_t placement, void *data)
{
    two_nodes_t *nodes = data;
    return placement == 1 ? nodes->reachable : nodes->unreachable;
}

static uint64_t borrows(wl_pool_t *pool)
{
    wl_pool_stats_t stats;
    wl_pool_stats(pool, &stats);
    return stats.borrows;
}

/* The backends of a pool's connections (by application name) whose last statement called
 * function: what a group ran there. */
static long long last_called(const char *application, const char *function)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM pg_stat_activity WHERE application_name = '%s'"
             " AND query LIKE '%% FROM %s(%%'",
             application, function);
    return testdb_count(db, sql);
}

/*
 * On a distributed database a group goes straight to the node holding its organizations
 * (the placement's pool for it) and calls wl_admit there; a node that cannot be reached that
 * way leaves its group to the coordinator's pool, which hands the call to the node
 * (wl_admit_at) as before there were node pools: every list lands once either way, and the
 * commits that went to their node are counted.
 */
static void test_groups_go_to_their_node(void)
{
    int64_t first = fixture_org(db, "node-a"), second = fixture_org(db, "node-b");
    int64_t odd = first % 2 != 0 ? first : second, even = first % 2 != 0 ? second : first;
    CHECK(odd % 2 != 0 && even % 2 == 0);
    wl_pool_config_t coordinator_config = {
        .conninfo = conninfo, .size = 2, .timeout_ms = 5000, .application = "walklist-coordinator"};
    wl_pool_config_t node_config = {
        .conninfo = conninfo, .size = 1, .timeout_ms = 5000, .application = "walklist-node"};
    wl_pool_t *coordinator = NULL;
    two_nodes_t nodes = {0};
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_pool_create(&coordinator_config, &coordinator, &err), 0);
    CHECK_INT(wl_pool_create(&node_config, &nodes.reachable, &err), 0);
    node_config.conninfo = "host=127.0.0.1 port=1 dbname=nowhere connect_timeout=2";
    CHECK_INT(wl_pool_create(&node_config, &nodes.unreachable, &err), 0);
    wl_admissions_t *commits = commits_new(coordinator, 1);
    wl_placement_t placement = {.distributed = always_distributed,
                                .place = place_by_parity,
                                .refresh = placement_kept,
                                .pool_of = node_pool,
                                .refresh_ms = 600000,
                                .data = &nodes};
    wl_admissions_set_placement(commits, &placement);

    pending_t direct, fallback;
    pending_init(&direct, odd, "on-node-1", "SKU-N");
    CHECK_INT(wl_admissions_run(commits, &direct.request), 0);
    CHECK(direct.work.list.created_ms > 0);
    CHECK_INT(lists_named("on-node-1"), 1);
    CHECK_INT(borrows(nodes.reachable), 1);
    wl_admissions_stats_t stats;
    wl_admissions_stats(commits, &stats);
    CHECK_INT(stats.on_nodes, 1);
    CHECK_INT(last_called("walklist-node", "wl_admit"), 1);
    CHECK_INT(last_called("walklist-node", "wl_admit_at"), 0);

    uint64_t coordinator_before = borrows(coordinator);
    pending_init(&fallback, even, "on-node-2", "SKU-N");
    CHECK_INT(wl_admissions_run(commits, &fallback.request), 0);
    CHECK(fallback.work.list.created_ms > 0);
    CHECK_INT(lists_named("on-node-2"), 1);
    CHECK_INT(borrows(nodes.unreachable), 0);
    CHECK_INT(borrows(coordinator), coordinator_before + 1);
    wl_admissions_stats(commits, &stats);
    CHECK_INT(stats.commits, 2);
    CHECK_INT(stats.on_nodes, 1);
    CHECK_INT(last_called("walklist-coordinator", "wl_admit_at"), 1);

    /* A key the process does not know is checked by the lookup that places it, and its group
     * goes to its node with the organization known: the answer is the statement's own (valid,
     * the organization's slug and the key's scopes). The same prefix with another secret is
     * left to the statement, which refuses it and writes nothing. */
    char token[WL_KEY_TOKEN_SIZE], wrong[WL_KEY_TOKEN_SIZE];
    fixture_key(db, odd, "lists:write", token);
    snprintf(wrong, sizeof(wrong), "%s", token);
    wrong[strlen(wrong) - 1] = wrong[strlen(wrong) - 1] == 'a' ? 'b' : 'a';
    pending_t by_key, by_wrong;
    pending_init(&by_key, odd, "on-node-by-key", "SKU-N");
    pending_key(&by_key, token, 30);
    CHECK_INT(wl_admissions_run(commits, &by_key.request), 0);
    CHECK(by_key.request.key_valid);
    CHECK(by_key.request.key_checked);
    CHECK_INT(by_key.request.principal.org_id, odd);
    CHECK_STR(by_key.request.principal.org_slug, odd == first ? "node-a" : "node-b");
    CHECK_INT(by_key.request.principal.scopes, WL_SCOPE_LISTS_WRITE);
    CHECK(by_key.request.asked && by_key.request.grant.granted == 1);
    CHECK_INT(lists_named("on-node-by-key"), 1);
    CHECK_INT(borrows(nodes.reachable), 2);
    pending_init(&by_wrong, odd, "on-node-wrong", "SKU-N");
    pending_key(&by_wrong, wrong, 30);
    CHECK_INT(wl_admissions_run(commits, &by_wrong.request), 0);
    CHECK(!by_wrong.request.key_valid);
    CHECK(!by_wrong.request.key_checked);
    CHECK_INT(lists_named("on-node-wrong"), 0);

    dispose(&by_key, 1);
    dispose(&by_wrong, 1);
    dispose(&direct, 1);
    dispose(&fallback, 1);
    wl_admissions_destroy(commits);
    wl_pool_destroy(nodes.reachable);
    wl_pool_destroy(nodes.unreachable);
    wl_pool_destroy(coordinator);
}

/*
 * The workers' pools of a distributed database (services/shard_placement.h), here pointed at the
 * test's own server: a worker named by the catalog gets a pool that its node group's groups
 * borrow from; its connections lent out count as the database being busy; at shutdown it
 * refuses like the coordinator's; a worker whose address changes gets a new pool.
 */
static void test_worker_pools(void)
{
    wl_pool_config_t node_config = {.conninfo = conninfo, .size = 1, .timeout_ms = 5000};
    wl_shard_placement_t *shards = NULL;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_shard_placement_create(&node_config, &shards, &err), 0);
    wl_citus_node_address_t node = {.group = 1, .port = atoi(PQport(db))};
    snprintf(node.host, sizeof(node.host), "%s", PQhost(db));
    wl_shard_placement_set_nodes(shards, &node, 1);
    wl_placement_t placement = wl_shard_placement_of(shards);
    wl_pool_t *pool = placement.pool_of(1, placement.data);
    CHECK(pool != NULL);
    CHECK(placement.pool_of(2, placement.data) == NULL);
    PGconn *conn = NULL;
    CHECK_INT(wl_pool_acquire(pool, &conn, &err), 0);
    CHECK_INT(wl_shard_placement_busy(shards), 1);
    /* Its sessions keep one plan of each prepared statement: on Citus, a call of a function
     * with parameters was otherwise planned again at every group. */
    char mode[32] = "";
    if (conn != NULL)
        testdb_value(conn, "SHOW plan_cache_mode", mode, sizeof(mode));
    CHECK_STR(mode, "force_generic_plan");
    wl_pool_release(pool, conn);
    CHECK_INT(wl_shard_placement_busy(shards), 0);

    /* The same worker again: the same pool, its connection kept. */
    wl_shard_placement_set_nodes(shards, &node, 1);
    CHECK(placement.pool_of(1, placement.data) == pool);
    wl_pool_stats_t stats;
    wl_pool_stats(pool, &stats);
    CHECK_INT(stats.open, 1);

    /* Moved to another address: a new pool, and the old one closed, its idle connection too;
     * a connection lent out when it closed ends when it comes back. Named again: a new pool. */
    CHECK_INT(wl_pool_acquire(pool, &conn, &err), 0);
    wl_citus_node_address_t moved = node;
    moved.port = node.port + 1;
    wl_shard_placement_set_nodes(shards, &moved, 1);
    CHECK(placement.pool_of(1, placement.data) != pool);
    CHECK_INT(wl_shard_placement_busy(shards), 1);
    wl_pool_release(pool, conn);
    wl_pool_stats(pool, &stats);
    CHECK_INT(stats.open, 0);
    CHECK_INT(wl_shard_placement_busy(shards), 0);
    conn = NULL;
    wl_error_init(&err);
    CHECK_INT(wl_pool_acquire(pool, &conn, &err), WL_EUNAVAILABLE);
    wl_shard_placement_set_nodes(shards, &node, 1);
    wl_pool_t *again = placement.pool_of(1, placement.data);
    CHECK(again != NULL && again != pool);
    wl_error_init(&err);
    CHECK_INT(wl_pool_acquire(again, &conn, &err), 0);
    wl_pool_release(again, conn);
    pool = again;

    /* The routes metrics show: the worker reached; then one walklistd cannot reach itself. */
    wl_core_node_t routes[4];
    CHECK_INT((int)wl_shard_placement_routes(shards, routes, 4), 1);
    char address[WL_CITUS_NODE_ADDRESS_SIZE + 8];
    snprintf(address, sizeof(address), "%s:%d", node.host, node.port);
    CHECK_STR(routes[0].address, address);
    CHECK(routes[0].reachable);
    wl_citus_node_address_t nowhere = {.group = 2, .host = "127.0.0.1", .port = 1};
    wl_citus_node_address_t both[] = {node, nowhere};
    wl_shard_placement_set_nodes(shards, both, 2);
    wl_pool_t *unreachable = placement.pool_of(2, placement.data);
    CHECK(unreachable != NULL);
    CHECK(wl_pool_acquire(unreachable, &conn, &err) != 0);
    CHECK_INT((int)wl_shard_placement_routes(shards, routes, 4), 2);
    for (int i = 0; i < 2; i++)
        CHECK(routes[i].reachable == (strcmp(routes[i].address, "127.0.0.1:1") != 0));

    wl_shard_placement_close(shards);
    conn = NULL;
    wl_error_init(&err);
    CHECK_INT(wl_pool_acquire(pool, &conn, &err), WL_EUNAVAILABLE);
    CHECK(strstr(err.message, "shutting down") != NULL);
    wl_shard_placement_destroy(shards);

    /* Without workers' pools (--db-workers coordinator), a catalog's workers get none. */
    CHECK_INT(wl_shard_placement_create(NULL, &shards, &err), 0);
    wl_shard_placement_set_nodes(shards, &node, 1);
    placement = wl_shard_placement_of(shards);
    CHECK(placement.pool_of(1, placement.data) == NULL);
    wl_shard_placement_destroy(shards);
}

/*
 * A decision taken after waiting for another transaction's lock on its bucket reads the clock
 * after the wait: its requests are counted at or after the moment they are served, which is
 * what keeps every rolling window within the limit (src/store/functions/wl_admit.sql). The
 * other transaction only locks the row (no new version for the waiter to re-read), the case
 * in which a clock read before the wait would survive.
 */
static void test_decision_reads_the_clock_after_the_lock(int64_t org)
{
    char org_text[24];
    snprintf(org_text, sizeof(org_text), "%lld", (long long)org);
    const char *params[] = {org_text};
    const char *take = "SELECT counted_at FROM wl_rate_take($1, 'clock', 100, 60000, 1, 0,"
                       " NULL, 0)";
    PGresult *res = PQexecParams(db, take, 1, NULL, params, NULL, NULL, 0);
    CHECK_INT(PQresultStatus(res), PGRES_TUPLES_OK);
    PQclear(res);

    PGconn *waiter = testdb_connect(conninfo);
    char waiter_pid[16];
    snprintf(waiter_pid, sizeof(waiter_pid), "%d", PQbackendPID(waiter));
    testdb_exec(db, "BEGIN");
    res = PQexecParams(db,
                       "SELECT 1 FROM rate_limits WHERE org_id = $1 AND bucket = 'clock'"
                       " FOR UPDATE",
                       1, NULL, params, NULL, NULL, 0);
    CHECK_INT(PQntuples(res), 1);
    PQclear(res);
    CHECK_INT(PQsendQueryParams(waiter, take, 1, NULL, params, NULL, NULL, 0), 1);
    /* Until the waiter waits for the lock (its state, not a time). */
    const char *waiting_sql = "SELECT count(*) FROM pg_locks WHERE pid = $1 AND NOT granted";
    const char *waiting_params[] = {waiter_pid};
    bool waiting = false;
    for (int i = 0; i < 30000 && !waiting; i++) {
        res = PQexecParams(db, waiting_sql, 1, NULL, waiting_params, NULL, NULL, 0);
        waiting = PQresultStatus(res) == PGRES_TUPLES_OK && atoi(PQgetvalue(res, 0, 0)) > 0;
        PQclear(res);
        if (!waiting)
            nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    }
    CHECK(waiting);
    char released[64];
    testdb_value(db, "SELECT clock_timestamp()", released, sizeof(released));
    testdb_exec(db, "COMMIT");

    res = PQgetResult(waiter);
    CHECK_INT(PQresultStatus(res), PGRES_TUPLES_OK);
    char counted[64] = "";
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
        snprintf(counted, sizeof(counted), "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    while ((res = PQgetResult(waiter)) != NULL)
        PQclear(res);
    const char *compare[] = {counted, released};
    res = PQexecParams(db, "SELECT ($1::timestamptz > $2::timestamptz)::int", 2, NULL, compare,
                       NULL, NULL, 0);
    CHECK_STR(PQgetvalue(res, 0, 0), "1");
    if (strcmp(PQgetvalue(res, 0, 0), "1") != 0)
        fprintf(stderr, "counted at %s, lock released at %s\n", counted, released);
    PQclear(res);
    PQfinish(waiter);
}

/*
 * A bucket's decision over the hits it holds, in each of the shapes it can find them (hits set
 * by hand, seconds before now; window 60 s, limit 10, one permit asked): every hit is counted
 * with its count, the oldest one sets the reset whatever its place, hits out of the window
 * are dropped and returned permits leave their hit's count. wl_admit finds the common shape
 * (every hit in the window, in the order made, each counting one, nothing returned) without
 * going through the hits one by one: the same answers either way. Every live hit is at most
 * 30 s old, and the reset is checked against the moment the decision says it counted at, so a
 * slow machine changes nothing.
 */
typedef struct {
    const char *name;
    const char *hits;   /* seconds before now, e.g. "30,20,10" */
    const char *counts; /* e.g. "1,1,1" */
    int returned_to; /* the hit (from 1) permits come back to; 0: none; -1: a moment no hit has */
    int returned;
    int granted, used;
    int oldest_after; /* the oldest hit's place in the row afterwards: the reset is 60 s after it */
    const char *counts_after;
} stored_case_t;

static void test_decision_over_stored_hits(int64_t org)
{
    static const stored_case_t cases[] = {
        {"in-order", "30,20,10", "1,1,1", 0, 0, 1, 4, 1, "1,1,1,1"},
        {"oldest-not-first", "10,30,20", "1,1,1", 0, 0, 1, 4, 2, "1,1,1,1"},
        {"counts-above-one", "30,20", "3,1", 0, 0, 1, 5, 1, "3,1,1"},
        {"expired-dropped", "90,30,20", "1,1,1", 0, 0, 1, 3, 1, "1,1,1"},
        {"permits-returned", "30,20", "3,1", 1, 2, 1, 3, 1, "1,1,1"},
        {"all-returned", "30,20", "1,1", 1, 5, 1, 2, 1, "1,1"},
        {"return-elsewhere", "30,20", "1,1", -1, 2, 1, 3, 1, "1,1,1"},
        {"at-the-limit", "30,27,24,21,18,15,12,9,6,3", "1,1,1,1,1,1,1,1,1,1", 0, 0, 0, 10, 1,
         "1,1,1,1,1,1,1,1,1,1"},
        {"empty", "", "", 0, 0, 1, 1, 1, "1"},
    };
    char org_text[24];
    snprintf(org_text, sizeof(org_text), "%lld", (long long)org);
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const stored_case_t *k = &cases[c];
        const char *set_params[] = {org_text, k->name, k->hits, k->counts};
        PGresult *res = PQexecParams(
            db,
            "INSERT INTO rate_limits (org_id, bucket, hits, counts)"
            " SELECT $1::bigint, $2, coalesce((SELECT array_agg(now() - make_interval(secs => s)"
            " ORDER BY o) FROM unnest(string_to_array($3, ',')::int[]) WITH ORDINALITY"
            " AS h(s, o)), '{}'), coalesce(string_to_array($4, ',')::int[], '{}')"
            " ON CONFLICT (org_id, bucket) DO UPDATE SET hits = excluded.hits,"
            " counts = excluded.counts",
            4, NULL, set_params, NULL, NULL, 0);
        CHECK_INT(PQresultStatus(res), PGRES_COMMAND_OK);
        PQclear(res);
        char returned_to[16], returned[16];
        snprintf(returned_to, sizeof(returned_to), "%d", k->returned_to);
        snprintf(returned, sizeof(returned), "%d", k->returned);
        const char *take_params[] = {org_text, k->name, returned_to, returned};
        res = PQexecParams(db,
                           "SELECT granted, used, reset_ms, counted_at FROM wl_rate_take($1, $2,"
                           " 10, 60000, 1, 0, CASE WHEN $3::int > 0 THEN (SELECT hits[$3::int]"
                           " FROM rate_limits WHERE org_id = $1 AND bucket = $2)"
                           " WHEN $3::int < 0 THEN now() - interval '5 seconds' END, $4::int)",
                           4, NULL, take_params, NULL, NULL, 0);
        CHECK_INT(PQresultStatus(res), PGRES_TUPLES_OK);
        if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
            fprintf(stderr, "case %s: %s\n", k->name, PQresultErrorMessage(res));
            PQclear(res);
            continue;
        }
        CHECK_INT(atoi(PQgetvalue(res, 0, 0)), k->granted);
        CHECK_INT(atoi(PQgetvalue(res, 0, 1)), k->used);
        char reset[24], counted_at[64], oldest[16];
        snprintf(reset, sizeof(reset), "%s", PQgetvalue(res, 0, 2));
        snprintf(counted_at, sizeof(counted_at), "%s", PQgetvalue(res, 0, 3));
        PQclear(res);
        /* The row afterwards: the expected hit is its oldest, the reset is 60 s after that hit
         * from the moment the decision counted at, and counts stay beside their hits. */
        snprintf(oldest, sizeof(oldest), "%d", k->oldest_after);
        const char *row_params[] = {org_text, k->name, oldest, counted_at};
        res = PQexecParams(db,
                           "SELECT (hits[$3::int] = (SELECT min(h) FROM unnest(hits) h))::int,"
                           " greatest(0, ceil(extract(epoch FROM (hits[$3::int]"
                           " + interval '60 seconds' - $4::timestamptz)) * 1000))::bigint,"
                           " array_to_string(counts, ','),"
                           " (cardinality(hits) = cardinality(counts))::int"
                           " FROM rate_limits WHERE org_id = $1 AND bucket = $2",
                           4, NULL, row_params, NULL, NULL, 0);
        CHECK_INT(PQntuples(res), 1);
        if (PQntuples(res) == 1) {
            CHECK_STR(PQgetvalue(res, 0, 0), "1");
            CHECK_STR(reset, PQgetvalue(res, 0, 1));
            CHECK_STR(PQgetvalue(res, 0, 2), k->counts_after);
            CHECK_STR(PQgetvalue(res, 0, 3), "1");
            if (strcmp(reset, PQgetvalue(res, 0, 1)) != 0)
                fprintf(stderr, "case %s: reset %s ms, expected %s\n", k->name, reset,
                        PQgetvalue(res, 0, 1));
        }
        PQclear(res);
    }
}

/*
 * wl_admit's statements are planned once per session, whatever the size of the group: left to
 * choose, PostgreSQL planned the query of a small group's requests again at every call (a
 * custom plan counts unnest()'s rows from the arrays and looks cheaper than the generic one),
 * 12% of its time under GETs by id. The test cluster's pg_stat_statements counts the plans of
 * nested statements: a dozen calls of a group of one on one connection plan that query once.
 */
static void test_group_query_planned_once(int64_t org)
{
    PGconn *session = testdb_connect(conninfo); /* a session with no plan of it yet */
    testdb_exec(db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    /* This database's only: other tests count theirs meanwhile. */
    testdb_exec(db, "SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database"
                    " WHERE datname = current_database()), 0)");
    char call[640];
    snprintf(call, sizeof(call),
             "SELECT count(*) FROM wl_admit(60000, ARRAY[NULL]::text[], ARRAY[NULL]::bytea[],"
             " ARRAY[%lld]::bigint[], ARRAY['lists:write'], ARRAY['locate-lists'], ARRAY[30],"
             " ARRAY[NULL]::integer[], ARRAY[0], ARRAY[NULL]::timestamptz[], ARRAY[0],"
             " ARRAY['take'], ARRAY[NULL]::text[], ARRAY[NULL]::text[], ARRAY[0],"
             " ARRAY[]::text[])",
             (long long)org);
    for (int i = 0; i < 12; i++)
        CHECK_INT(testdb_count(session, call), 1);
    PQfinish(session);
    CHECK_INT(testdb_count(db, "SELECT coalesce(sum(plans), -1) FROM pg_stat_statements"
                               " WHERE dbid = (SELECT oid FROM pg_database"
                               " WHERE datname = current_database())"
                               " AND query LIKE '%WITH req AS%'"),
              1);
}

/*
 * A group's writes are one statement per table, made once its requests are decided: the
 * buckets its asks changed (a bucket asked twice is written once) and the lists it created.
 * Where Citus is loaded (its citus.version setting, given here by hand) each row is written
 * by a statement of its own instead, with the same answers and the same rows. A bucket's first
 * request makes its row without a foreign key's check (migration 0008).
 */
static void test_group_writes_once_per_table(void)
{
    testdb_exec(db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    static const char *const updates[] = {"FROM unnest(w_org, w_bucket", "= v_write_bucket"};
    static const char *const inserts[] = {"FROM unnest(l_org, l_id", "VALUES (r.org_of"};
    for (int per_row = 0; per_row < 2; per_row++) {
        const char *setup = per_row ? "SET citus.version = 'per-row'" : NULL;
        int64_t orgs[3];
        char keys[3][WL_KEY_TOKEN_SIZE];
        pending_t first[3];
        for (int k = 0; k < 3; k++) {
            char name[48];
            snprintf(name, sizeof(name), "admit-writes-%d-%d", per_row, k);
            orgs[k] = fixture_org(db, name);
            fixture_key(db, orgs[k], "lists:write", keys[k]);
            /* The bucket's row, made by its first request. */
            snprintf(name, sizeof(name), "writes-first-%d-%d", per_row, k);
            pending_init(&first[k], 0, name, "SKU-W");
            pending_key(&first[k], keys[k], 30);
        }
        long long key_checks[2], key_checks_after[2];
        testdb_statement_counts(db, "FOR KEY SHARE", key_checks);
        run_batch_after(setup, first, 3);
        dispose(first, 3);
        /* A bucket's first request checks no foreign key: nothing locks its organization. */
        testdb_statement_counts(db, "FOR KEY SHARE", key_checks_after);
        CHECK_INT(key_checks_after[0] - key_checks[0], 0);

        long long updated[2], inserted[2], updated_after[2], inserted_after[2];
        testdb_statement_counts(db, updates[per_row], updated);
        testdb_statement_counts(db, inserts[per_row], inserted);
        static const int org_of[] = {1, 0, 2, 0}; /* the first organization asks twice */
        pending_t p[4];
        char ids[4][32];
        for (int i = 0; i < 4; i++) {
            snprintf(ids[i], sizeof(ids[i]), "writes-%d-%d", per_row, i);
            pending_init(&p[i], 0, ids[i], "SKU-W");
            pending_key(&p[i], keys[org_of[i]], 30);
        }
        run_batch_after(setup, p, 4);
        testdb_statement_counts(db, updates[per_row], updated_after);
        testdb_statement_counts(db, inserts[per_row], inserted_after);
        for (int i = 0; i < 4; i++) {
            CHECK_INT(p[i].request.rc, 0);
            CHECK(p[i].request.asked && p[i].work.work.done);
            CHECK_INT(p[i].request.principal.org_id, orgs[org_of[i]]);
            CHECK_INT(p[i].request.grant.granted, 1);
            CHECK_INT(p[i].request.grant.used, i == 3 ? 3 : 2); /* request order in a bucket */
            CHECK_INT(lists_named(ids[i]), 1);
        }
        CHECK_INT(fixture_counted(db, orgs[0], "locate-lists"), 3);
        CHECK_INT(fixture_counted(db, orgs[1], "locate-lists"), 2);
        CHECK_INT(fixture_counted(db, orgs[2], "locate-lists"), 2);
        CHECK_INT(updated_after[0] - updated[0], per_row ? 3 : 1);
        CHECK_INT(updated_after[1] - updated[1], 3);
        CHECK_INT(inserted_after[0] - inserted[0], per_row ? 4 : 1);
        CHECK_INT(inserted_after[1] - inserted[1], 4);
        dispose(p, 4);

        /* A group that creates nothing inserts nothing: two asks only. */
        pending_t takes[2];
        for (int i = 0; i < 2; i++) {
            pending_init(&takes[i], 0, "", "");
            pending_key(&takes[i], keys[i + 1], 30);
            pending_take(&takes[i]);
        }
        run_batch_after(setup, takes, 2);
        long long updated_by_takes[2], inserted_by_takes[2];
        testdb_statement_counts(db, updates[per_row], updated_by_takes);
        testdb_statement_counts(db, inserts[per_row], inserted_by_takes);
        for (int i = 0; i < 2; i++)
            CHECK_INT(takes[i].request.grant.granted, 1);
        CHECK_INT(updated_by_takes[0] - updated_after[0], per_row ? 2 : 1);
        CHECK_INT(inserted_by_takes[0] - inserted_after[0], 0);
        dispose(takes, 2);
    }
}

/*
 * The two tables every request writes are analyzed rarely (migration 0009): rate_limits,
 * whose rows each ask rewrites, after a hundred times as many changes as it has rows, and
 * locate_lists once it has doubled; every other table as PostgreSQL's settings say. Counted
 * as autovacuum counts: the changes a table of 10,000 rows takes before it is analyzed.
 */
static void test_written_tables_analyzed_rarely(void)
{
    static const char *const changes_before_analyze =
        "SELECT (current_setting('autovacuum_analyze_threshold')::float8"
        "        + 10000 * coalesce((SELECT o.option_value::float8"
        "                              FROM pg_options_to_table(c.reloptions) AS o"
        "                             WHERE o.option_name = 'autovacuum_analyze_scale_factor'),"
        "                           current_setting('autovacuum_analyze_scale_factor')::float8))"
        "       ::bigint"
        "  FROM pg_class c WHERE c.oid = '%s'::regclass";
    char sql[1024];
    snprintf(sql, sizeof(sql), changes_before_analyze, "rate_limits");
    CHECK_INT(testdb_count(db, sql), 1000050);
    snprintf(sql, sizeof(sql), changes_before_analyze, "locate_lists");
    CHECK_INT(testdb_count(db, sql), 10050);
    snprintf(sql, sizeof(sql), changes_before_analyze, "api_keys");
    CHECK_INT(testdb_count(db, sql), 1050);
    /* No other table of the schema carries a setting of its own. */
    CHECK_INT(testdb_count(db, "SELECT count(*) FROM pg_class c"
                               " JOIN pg_namespace n ON n.oid = c.relnamespace"
                               " WHERE n.nspname = 'public' AND c.reloptions IS NOT NULL"
                               "   AND c.relname NOT IN ('rate_limits', 'locate_lists')"),
              0);
}

int main(void)
{
    conninfo = testdb_create("walklist_test_admissions");
    db = testdb_connect(conninfo);
    int64_t org = fixture_org(db, "group-commit");
    test_batch_commits_all(org);
    test_batch_at_node(org);
    test_failure_stays_its_own(org);
    test_each_request_decided_alone();
    test_one_bucket_shared_in_a_batch();
    test_decided_request_first_in_a_batch(org);
    test_read_back_quoted_codes(org);
    test_lists_created_meanwhile_form_one_group(org);
    test_concurrent_inserts_all_land(org);
    test_decision_reads_the_clock_after_the_lock(org);
    test_decision_over_stored_hits(org);
    test_groups_go_to_their_node();
    test_worker_pools();
    test_group_query_planned_once(org);
    test_group_writes_once_per_table();
    test_written_tables_analyzed_rarely();
    PQfinish(db);
    return test_exit();
}
