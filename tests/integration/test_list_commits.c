/*
 * Group commit of walk lists: a batch commits every list or (when one fails) each list alone,
 * so that a list's failure is only its own; requests arriving while a commit is in flight
 * form the next group, and every request learns its own list's fate.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fixture.h"
#include "services/list_commits.h"
#include "store/lists.h"
#include "test.h"
#include "testdb.h"

static const char *conninfo;
static PGconn *db;

static wl_pool_t *pool_new(int size)
{
    wl_pool_config_t config = {
        .conninfo = conninfo, .size = size, .acquire_timeout_ms = 5000, .connect_timeout_s = 3};
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
    wl_list_insert_t list;
    wl_error_t err;
    wl_arena_t arena;
    char id[32];
} pending_t;

static void pending_init(pending_t *p, int64_t org, const char *id, const char *code)
{
    wl_arena_init(&p->arena, 0);
    wl_error_init(&p->err);
    snprintf(p->id, sizeof(p->id), "%s", id);
    wl_span_t codes[] = {wl_span_str(code), wl_span_str("EAN-0001")};
    CHECK_INT(wl_list_insert_init(&p->list, org, p->id, "Group", codes, 2, &p->arena, &p->err), 0);
}

static long long lists_named(const char *id)
{
    char sql[160];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM locate_lists WHERE id = '%s'", id);
    return testdb_count(db, sql);
}

/* Inserts three lists as one batch on a pooled connection, which must be clean afterwards (out
 * of pipeline mode, no transaction open) and so reusable. */
static void insert_batch(pending_t p[3])
{
    wl_pool_t *pool = pool_new(1);
    PGconn *conn = NULL;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_pool_acquire(pool, &conn, &err), 0);
    wl_list_insert_t *lists[] = {&p[0].list, &p[1].list, &p[2].list};
    wl_lists_insert_batch(conn, lists, 3);
    CHECK_INT(PQpipelineStatus(conn), PQ_PIPELINE_OFF);
    CHECK_INT(PQtransactionStatus(conn), PQTRANS_IDLE);
    wl_pool_release(pool, conn);
    wl_pool_destroy(pool);
    for (int i = 0; i < 3; i++)
        wl_arena_dispose(&p[i].arena);
}

static void test_batch_commits_all(int64_t org)
{
    pending_t p[3];
    pending_init(&p[0], org, "batch-all-0", "SKU-A");
    pending_init(&p[1], org, "batch-all-1", "SKU-\"quoted\"");
    pending_init(&p[2], org, "batch-all-2", "SKU-C");
    insert_batch(p);
    for (int i = 0; i < 3; i++) {
        CHECK_INT(p[i].list.rc, 0);
        CHECK_INT(p[i].err.code, 0);
        CHECK(p[i].list.created_ms > 0);
        CHECK_INT(lists_named(p[i].id), 1);
    }
    char code[64];
    testdb_value(db, "SELECT codes[1] FROM locate_lists WHERE id = 'batch-all-1'", code,
                 sizeof(code));
    CHECK_STR(code, "SKU-\"quoted\"");
    /* One statement after another in one transaction: created_at follows the batch order. */
    CHECK_INT(testdb_count(db, "SELECT count(*) FROM (SELECT id, lag(id) OVER (ORDER BY"
                               " created_at) AS before FROM locate_lists WHERE id LIKE"
                               " 'batch-all-%') o WHERE before > id"),
              0);
}

/* A failing list (here: an organization that does not exist) fails alone; the others commit. */
static void test_failure_stays_its_own(int64_t org)
{
    long long before = testdb_count(db, "SELECT count(*) FROM locate_lists");
    pending_t p[3];
    pending_init(&p[0], org, "alone-0", "SKU-A");
    pending_init(&p[1], 987654321, "alone-1", "SKU-B");
    pending_init(&p[2], org, "alone-2", "SKU-C");
    insert_batch(p);
    CHECK_INT(p[0].list.rc, 0);
    CHECK_INT(p[0].err.code, 0);
    CHECK_INT(p[1].list.rc, WL_EINTERNAL);
    CHECK_INT(p[1].err.code, WL_EINTERNAL);
    CHECK_INT(p[2].list.rc, 0);
    CHECK_INT(p[2].err.code, 0);
    CHECK_INT(lists_named("alone-0"), 1);
    CHECK_INT(lists_named("alone-1"), 0);
    CHECK_INT(lists_named("alone-2"), 1);
    CHECK_INT(testdb_count(db, "SELECT count(*) FROM locate_lists"), before + 2);
}

typedef struct {
    wl_list_commits_t *commits;
    pending_t pending;
    int rc;
    pthread_t thread;
} inserter_t;

static void *insert_thread(void *arg)
{
    inserter_t *inserter = arg;
    inserter->rc = wl_list_commits_insert(inserter->commits, &inserter->pending.list);
    return NULL;
}

static void start_inserter(inserter_t *inserter, wl_list_commits_t *commits, int64_t org,
                           const char *prefix, int i)
{
    char id[32];
    snprintf(id, sizeof(id), "%s-%d", prefix, i);
    inserter->commits = commits;
    pending_init(&inserter->pending, org, id, "SKU-G");
    CHECK_INT(pthread_create(&inserter->thread, NULL, insert_thread, inserter), 0);
}

static wl_list_commits_t *commits_new(wl_pool_t *pool, int groups)
{
    wl_list_commits_t *commits = NULL;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_list_commits_create(pool, groups, &commits, &err), 0);
    return commits;
}

static void wait_for_waiting(wl_list_commits_t *commits, int waiting)
{
    for (int i = 0; i < 1000; i++) {
        wl_list_commits_stats_t stats;
        wl_list_commits_stats(commits, &stats);
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
    wl_list_commits_t *commits = commits_new(pool, 1);
    PGconn *blocker = testdb_connect(conninfo);
    testdb_exec(blocker, "BEGIN");
    testdb_exec(blocker, "LOCK TABLE locate_lists IN SHARE MODE");

    enum { COUNT = 7 };
    inserter_t inserters[COUNT];
    for (int i = 0; i < COUNT; i++) {
        start_inserter(&inserters[i], commits, i == 4 ? 987654321 : org, "group", i);
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
        CHECK_INT(lists_named(inserters[i].pending.id), i == 4 ? 0 : 1);
        wl_arena_dispose(&inserters[i].pending.arena);
    }
    wl_list_commits_stats_t stats;
    wl_list_commits_stats(commits, &stats);
    CHECK_INT(stats.commits, 2);
    CHECK_INT(stats.lists, COUNT);
    CHECK_INT(stats.waiting, 0);
    wl_list_commits_destroy(commits);
    wl_pool_destroy(pool);
}

/* Many threads at once: every list lands exactly once, whatever the groups turned out to be. */
static void test_concurrent_inserts_all_land(int64_t org)
{
    wl_pool_t *pool = pool_new(4);
    wl_list_commits_t *commits = commits_new(pool, 2);
    enum { THREADS = 24 };
    inserter_t inserters[THREADS];
    for (int i = 0; i < THREADS; i++)
        start_inserter(&inserters[i], commits, org, "many", i);
    for (int i = 0; i < THREADS; i++) {
        pthread_join(inserters[i].thread, NULL);
        CHECK_INT(inserters[i].rc, 0);
        CHECK(inserters[i].pending.list.created_ms > 0);
        wl_arena_dispose(&inserters[i].pending.arena);
    }
    CHECK_INT(
        testdb_count(db, "SELECT count(DISTINCT id) FROM locate_lists WHERE id LIKE 'many-%'"),
        THREADS);
    wl_list_commits_stats_t stats;
    wl_list_commits_stats(commits, &stats);
    CHECK_INT(stats.lists, THREADS);
    CHECK(stats.commits >= 1 && stats.commits <= THREADS);
    wl_list_commits_destroy(commits);
    wl_pool_destroy(pool);
}

int main(void)
{
    conninfo = testdb_create("walklist_test_list_commits");
    db = testdb_connect(conninfo);
    int64_t org = fixture_org(db, "group-commit");
    test_batch_commits_all(org);
    test_failure_stays_its_own(org);
    test_lists_created_meanwhile_form_one_group(org);
    test_concurrent_inserts_all_land(org);
    PQfinish(db);
    return test_exit();
}
