/*
 * wl_admit's shard-direct form (store/shard_direct.h), on plain PostgreSQL since CI has no
 * Citus: the test database gets a catalog of its own under Citus's names (pg_dist_partition,
 * pg_dist_shard, pg_dist_placement, pg_dist_local_group, lock_shard_metadata; the functions
 * resolve them by the search path) in which organizations whose id PostgreSQL hashes below zero
 * (hashint8, as Citus places them) live in shard group A, on this node, and the others in group
 * B, on another, with A's shards as tables of their own. Then: migrate installs the form where the
 * anchor is distributed and only there; an organization of A is admitted, refused by its rate
 * limit, read and versioned in A's shard tables, one of B in the tables themselves (as Citus would
 * route them), a creation's bucket and list of A written by one statement, and a read's bucket
 * by the read's statement; the group's shards
 * are metadata-locked first, in ShareLock, in order; a shard
 * with a second placement (a move in flight), one placed elsewhere, one split since the form
 * was installed (Citus's lock refuses its id), or a caller that does not own the tables goes
 * the way it went before; a layout whose tables do not share their shard ranges is refused,
 * changing nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/migrate.h"
#include "store/shard_direct.h"
#include "test.h"
#include "testdb.h"

static const char *conninfo;
static PGconn *db;

#define GROUP_A_SHARDS "910000, 910100, 910200"

static const char CATALOG[] =
    "CREATE TABLE pg_dist_partition (logicalrelid regclass, partmethod \"char\", colocationid "
    "int);"
    "CREATE TABLE pg_dist_shard (logicalrelid regclass, shardid bigint, shardminvalue text,"
    " shardmaxvalue text);"
    "CREATE TABLE pg_dist_placement (placementid bigserial, shardid bigint, groupid int);"
    "CREATE TABLE pg_dist_local_group (groupid int);"
    "INSERT INTO pg_dist_local_group VALUES (1);"
    /* The three tables wl_admit's statements name, colocated; products in another colocation,
     * api_keys a reference table: neither is part of the layout. */
    "INSERT INTO pg_dist_partition VALUES ('rate_limits', 'h', 7), ('export_versions', 'h', 7),"
    " ('locate_lists', 'h', 7), ('products', 'h', 8), ('api_keys', 'n', 9);"
    "INSERT INTO pg_dist_shard VALUES"
    " ('rate_limits', 910000, '-2147483648', '-1'), ('rate_limits', 910001, '0', '2147483647'),"
    " ('locate_lists', 910100, '-2147483648', '-1'), ('locate_lists', 910101, '0', "
    "'2147483647'),"
    " ('export_versions', 910200, '-2147483648', '-1'),"
    " ('export_versions', 910201, '0', '2147483647'),"
    " ('products', 920000, '-2147483648', '2147483647'), ('api_keys', 930000, NULL, NULL);"
    "INSERT INTO pg_dist_placement (shardid, groupid) VALUES (910000, 1), (910100, 1), (910200, 1),"
    " (910001, 2), (910101, 2), (910201, 2), (920000, 1), (930000, 1);"
    /* Group A's shards, named and constrained as Citus names a shard's; B's are elsewhere, so
     * a statement sent to one of them here would fail. */
    "CREATE TABLE rate_limits_910000 (LIKE rate_limits INCLUDING DEFAULTS);"
    "ALTER TABLE rate_limits_910000 ADD CONSTRAINT rate_limits_pkey_910000"
    " PRIMARY KEY (org_id, bucket);"
    "CREATE TABLE locate_lists_910100 (LIKE locate_lists INCLUDING ALL);"
    "CREATE TABLE export_versions_910200 (LIKE export_versions INCLUDING ALL);"
    "CREATE TABLE fake_locks (at serial, mode int, shards bigint[]);"
    /* As Citus's, it refuses a shard its catalog does not hold. */
    "CREATE FUNCTION lock_shard_metadata(integer, bigint[]) RETURNS void LANGUAGE plpgsql"
    " AS $$BEGIN"
    "  IF EXISTS (SELECT FROM unnest($2) AS id WHERE id NOT IN (SELECT shardid FROM pg_dist_shard))"
    "  THEN RAISE EXCEPTION 'could not find valid entry for shard'; END IF;"
    "  INSERT INTO fake_locks (mode, shards) VALUES ($1, $2);"
    " END$$;";

/* Organizations by group: hashint8 of each of A's ids is below zero, of B's not. */
enum { A1 = 1, A2 = 4, A3 = 5, A4 = 7, A5 = 8, A6 = 10, A7 = 14, B1 = 2 };

/* One request's answer: granted (-1 when no ask was made), done, list_name, list_created_ms. */
typedef struct {
    int granted;
    bool done;
    char list_name[64];
    long long number;
} answer_t;

/*
 * wl_admit of requests of the organizations orgs (count of them), each with the action, its list
 * id "l-<org>" and, when limit > 0, an ask for one permit of that limit; answers in order.
 */
static void admit(const long long *orgs, int count, const char *action, int limit,
                  answer_t *answers)
{
    char sql[2048];
    int n = snprintf(sql, sizeof(sql),
                     "SELECT granted, done, list_name, list_created_ms FROM "
                     "wl_admit(60000, '{");
    for (int i = 0; i < count; i++)
        n += snprintf(sql + n, sizeof(sql) - (size_t)n, "%sNULL", i ? "," : "");
    n += snprintf(sql + n, sizeof(sql) - (size_t)n, "}', ARRAY[");
    for (int i = 0; i < count; i++)
        n += snprintf(sql + n, sizeof(sql) - (size_t)n, "%sNULL", i ? "," : "");
    n += snprintf(sql + n, sizeof(sql) - (size_t)n, "]::bytea[], ARRAY[");
    for (int i = 0; i < count; i++)
        n += snprintf(sql + n, sizeof(sql) - (size_t)n, "%s%lld", i ? "," : "", orgs[i]);
    n += snprintf(sql + n, sizeof(sql) - (size_t)n,
                  "]::bigint[], array_fill(NULL::text, ARRAY[%d]),"
                  " array_fill('locate-lists'::text, ARRAY[%d]), array_fill(%d, ARRAY[%d]),"
                  " array_fill(%s, ARRAY[%d]), array_fill(0, ARRAY[%d]),"
                  " array_fill(NULL::timestamptz, ARRAY[%d]), array_fill(0, ARRAY[%d]),"
                  " array_fill('%s'::text, ARRAY[%d]), ARRAY[",
                  count, count, limit, count, limit > 0 ? "1" : "NULL::integer", count, count,
                  count, count, action, count);
    for (int i = 0; i < count; i++)
        n += snprintf(sql + n, sizeof(sql) - (size_t)n, "%s'l-%lld'", i ? "," : "", orgs[i]);
    n += snprintf(sql + n, sizeof(sql) - (size_t)n, "], ARRAY[");
    for (int i = 0; i < count; i++)
        n += snprintf(sql + n, sizeof(sql) - (size_t)n, "%s'list %lld'", i ? "," : "", orgs[i]);
    n += snprintf(sql + n, sizeof(sql) - (size_t)n,
                  "], array_fill(1, ARRAY[%d]), array_fill('SKU-1'::text, ARRAY[%d]))"
                  " ORDER BY i",
                  count, count);
    PGresult *res = PQexec(db, sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != count) {
        FAIL("wl_admit: %s", PQerrorMessage(db));
        PQclear(res);
        return;
    }
    for (int i = 0; i < count; i++) {
        answer_t *a = &answers[i];
        a->granted = PQgetisnull(res, i, 0) ? -1 : atoi(PQgetvalue(res, i, 0));
        a->done = PQgetvalue(res, i, 1)[0] == 't';
        snprintf(a->list_name, sizeof(a->list_name), "%s", PQgetvalue(res, i, 2));
        a->number = PQgetisnull(res, i, 3) ? -1 : atoll(PQgetvalue(res, i, 3));
    }
    PQclear(res);
}

static long long count_of(const char *sql)
{
    return testdb_count(db, sql);
}

/* Where org's list and bucket rows are: 'A' in group A's shard tables, 'T' in the tables
 * themselves, '-' nowhere, '?' in both. */
static char rows_of(long long org)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT (SELECT count(*) FROM locate_lists_910100 WHERE org_id = %lld)"
             " + (SELECT count(*) FROM rate_limits_910000 WHERE org_id = %lld)",
             org, org);
    long long in_shard = count_of(sql);
    snprintf(sql, sizeof(sql),
             "SELECT (SELECT count(*) FROM locate_lists WHERE org_id = %lld)"
             " + (SELECT count(*) FROM rate_limits WHERE org_id = %lld)",
             org, org);
    long long in_table = count_of(sql);
    return in_shard > 0 && in_table > 0 ? '?' : in_shard > 0 ? 'A' : in_table > 0 ? 'T' : '-';
}

static const char *admit_definition(char *buf, size_t size)
{
    return testdb_value(db, "SELECT pg_get_functiondef('wl_admit'::regproc)", buf, size);
}

static void test_not_distributed(void)
{
    /* No catalog: nothing installed, the switch stays off. */
    wl_error_t err;
    wl_error_init(&err);
    size_t groups = 99;
    CHECK_INT(wl_shard_direct_install(db, &groups, &err), 0);
    CHECK_INT(groups, 0);
    static char def[200000];
    CHECK(strstr(admit_definition(def, sizeof(def)), "CONSTANT boolean := false;") != NULL);
}

static void test_installed_by_migrate(void)
{
    testdb_exec(db, CATALOG);
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_migrate(db, NULL, &err), 0);
    static char def[200000];
    admit_definition(def, sizeof(def));
    CHECK(strstr(def, "v_shard_direct CONSTANT boolean := true;") != NULL);
    CHECK(strstr(def, "FROM rate_limits_910000 rl") != NULL);
    CHECK(strstr(def, "INTO locate_lists_910101 (") != NULL);
    CHECK(strstr(def, "FROM export_versions_910201 ev") != NULL);
    CHECK(strstr(def, "920000") == NULL && strstr(def, "930000") == NULL);
    CHECK(strstr(def, "v_form_shards CONSTANT bigint[] := '{910000,910001}';") != NULL);
    CHECK(strstr(def, "v_form_mins CONSTANT integer[] := '{-2147483648,0}';") != NULL);
    size_t groups = 0;
    CHECK_INT(wl_shard_direct_install(db, &groups, &err), 0);
    CHECK_INT(groups, 2);
}

/* Creates A1's and B1's lists under the given limit, both let in: A's rows in A's shards, B's
 * in the tables. */
static void create_both(const long long *created, int limit, answer_t *a)
{
    admit(created, 2, "create", limit, a);
    CHECK_INT(a[0].granted, 1);
    CHECK_INT(a[1].granted, 1);
    CHECK(a[0].done && a[1].done);
    CHECK_INT(rows_of(A1), 'A');
    CHECK_INT(rows_of(B1), 'T');
}

static void test_admitted_in_own_shards(void)
{
    /* Where Citus is loaded (its version set), the group's shards locked, A's rows in A's
     * shards, B's in the tables. */
    testdb_exec(db, "SET citus.version = '13.0.5'");
    CHECK_INT(count_of("SELECT count(*) FROM (VALUES (1), (4), (5), (7), (8), (10)) AS a(id)"
                       " WHERE hashint8(id::bigint) < 0"),
              6);
    CHECK_INT(count_of("SELECT count(*) WHERE hashint8(14::bigint) < 0"), 1);
    CHECK_INT(count_of("SELECT count(*) WHERE hashint8(2::bigint) >= 0"), 1);
    answer_t a[2];
    const long long created[] = {A1, B1};
    create_both(created, 1, a);
    CHECK_INT(count_of("SELECT count(*) FROM fake_locks"), 1);
    CHECK_INT(count_of("SELECT count(*) FROM fake_locks WHERE mode = 5"
                       " AND shards = '{910000,910001}'"),
              1);

    /* The bucket's state is read back from the shard: the limit of one is spent. */
    admit(created, 2, "create", 1, a);
    CHECK_INT(a[0].granted, 0);
    CHECK_INT(a[1].granted, 0);
    CHECK(!a[0].done && !a[1].done);
    CHECK_INT(count_of("SELECT count(*) FROM locate_lists_910100"), 1);
    CHECK_INT(count_of("SELECT count(*) FROM locate_lists"), 1);

    /* Read where they were written. */
    admit(created, 2, "get", 0, a);
    CHECK(a[0].done && a[1].done);
    CHECK_STR(a[0].list_name, "list 1");
    CHECK_STR(a[1].list_name, "list 2");
    testdb_exec(db, "INSERT INTO organizations (org_id, slug, name) OVERRIDING SYSTEM VALUE"
                    " VALUES (2, 'sd-2', 'x')");
    testdb_exec(db, "INSERT INTO export_versions_910200 (org_id, version) VALUES (1, 42)");
    testdb_exec(db, "INSERT INTO export_versions (org_id, version) VALUES (2, 7)");
    admit(created, 2, "version", 0, a);
    CHECK_INT(a[0].number, 42);
    CHECK_INT(a[1].number, 7);
    /* No rate-limit ask: still locked, as the reads are of the shard. */
    CHECK_INT(count_of("SELECT count(*) FROM fake_locks"), 4);

    /* Created again (the lists gone, the limit raised): A's bucket, which its first creation
     * made with the list, now changes, and A's bucket and list are written by one statement
     * on its shards; B's go one by one through the tables. */
    testdb_exec(db, "DELETE FROM locate_lists_910100");
    testdb_exec(db, "DELETE FROM locate_lists");
    testdb_exec(db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    static const char together[] = "WITH bucket AS (UPDATE rate_limits_910000";
    long long written[2], written_after[2];
    testdb_statement_counts(db, together, written);
    create_both(created, 5, a);
    testdb_statement_counts(db, together, written_after);
    CHECK_INT(written_after[0] - written[0], 1);
    CHECK_INT(written_after[1] - written[1], 1);
    CHECK_INT(count_of("SELECT cardinality(hits) FROM rate_limits_910000 WHERE org_id = 1"), 2);
    CHECK_INT(count_of("SELECT cardinality(hits) FROM rate_limits WHERE org_id = 2"), 2);

    /* Read with an ask: A's bucket is written by the read's statement on its shards, B's
     * bucket by a statement of its own through the tables, and both lists are found. */
    long long read[2], read_after[2], by_itself[2], by_itself_after[2];
    testdb_statement_counts(db, together, read);
    testdb_statement_counts(db, "= v_write_bucket", by_itself);
    admit(created, 2, "get", 5, a);
    testdb_statement_counts(db, together, read_after);
    testdb_statement_counts(db, "= v_write_bucket", by_itself_after);
    CHECK_INT(a[0].granted, 1);
    CHECK_INT(a[1].granted, 1);
    CHECK(a[0].done && a[1].done);
    CHECK_STR(a[0].list_name, "list 1");
    CHECK_STR(a[1].list_name, "list 2");
    CHECK_INT(read_after[0] - read[0], 1);
    CHECK_INT(by_itself_after[0] - by_itself[0], 1);
    CHECK_INT(count_of("SELECT cardinality(hits) FROM rate_limits_910000 WHERE org_id = 1"), 3);
    CHECK_INT(count_of("SELECT cardinality(hits) FROM rate_limits WHERE org_id = 2"), 3);
}

static void test_not_direct(void)
{
    answer_t a[1];
    /* A second placement of A's shard (a move in flight): through Citus, in the tables. */
    testdb_exec(db, "INSERT INTO pg_dist_placement (shardid, groupid) VALUES (910000, 2)");
    const long long moving[] = {A2};
    admit(moving, 1, "create", 5, a);
    CHECK(a[0].done);
    CHECK_INT(rows_of(A2), 'T');
    /* A's shard placed on another node only (moved away). */
    testdb_exec(db, "DELETE FROM pg_dist_placement WHERE shardid = 910000 AND groupid = 1");
    const long long moved[] = {A3};
    admit(moved, 1, "create", 5, a);
    CHECK(a[0].done);
    CHECK_INT(rows_of(A3), 'T');
    testdb_exec(db, "UPDATE pg_dist_placement SET groupid = 1 WHERE shardid = 910000");
    const long long back[] = {A4};
    admit(back, 1, "create", 5, a);
    CHECK_INT(rows_of(A4), 'A');
    /* A's shard split since the form was installed: its id gone from the catalog (the new
     * shards have others). Through Citus, in the tables, and no lock asked for the old id,
     * which Citus refuses. */
    long long locks_before_split = count_of("SELECT count(*) FROM fake_locks");
    testdb_exec(db, "UPDATE pg_dist_shard SET shardid = 910050 WHERE shardid = 910000");
    testdb_exec(db, "UPDATE pg_dist_placement SET shardid = 910050 WHERE shardid = 910000");
    const long long split[] = {A7};
    admit(split, 1, "create", 5, a);
    CHECK(a[0].done);
    CHECK_INT(rows_of(A7), 'T');
    CHECK_INT(count_of("SELECT count(*) FROM fake_locks"), locks_before_split);
    testdb_exec(db, "UPDATE pg_dist_shard SET shardid = 910000 WHERE shardid = 910050");
    testdb_exec(db, "UPDATE pg_dist_placement SET shardid = 910000 WHERE shardid = 910050");

    /* A caller that does not own the tables may not take the lock: the tables, no lock. */
    long long locks = count_of("SELECT count(*) FROM fake_locks");
    testdb_exec(db, "DROP ROLE IF EXISTS walklist_shard_direct_other");
    testdb_exec(db, "CREATE ROLE walklist_shard_direct_other");
    testdb_exec(db, "GRANT ALL ON ALL TABLES IN SCHEMA public TO walklist_shard_direct_other");
    testdb_exec(db, "SET ROLE walklist_shard_direct_other");
    const long long other[] = {A5};
    admit(other, 1, "create", 5, a);
    testdb_exec(db, "RESET ROLE");
    CHECK(a[0].done);
    CHECK_INT(rows_of(A5), 'T');
    CHECK_INT(count_of("SELECT count(*) FROM fake_locks"), locks);
    testdb_exec(db, "REVOKE ALL ON ALL TABLES IN SCHEMA public FROM walklist_shard_direct_other");
    testdb_exec(db, "DROP ROLE walklist_shard_direct_other");

    /* Without Citus loaded (a session with no version), the switch alone does nothing: the
     * tables, no lock. */
    PGconn *citus_session = db;
    db = testdb_connect(conninfo);
    const long long plain[] = {A6};
    admit(plain, 1, "create", 5, a);
    CHECK_INT(rows_of(A6), 'T');
    CHECK_INT(count_of("SELECT count(*) FROM fake_locks"), locks);
    PQfinish(db);
    db = citus_session;
}

static void test_not_colocated(void)
{
    /* export_versions without a shard for B's range: refused, the installed form unchanged. */
    static char before[200000], after[200000];
    admit_definition(before, sizeof(before));
    testdb_exec(db, "DELETE FROM pg_dist_shard WHERE shardid = 910201");
    wl_error_t err;
    wl_error_init(&err);
    size_t groups = 99;
    CHECK_INT(wl_shard_direct_install(db, &groups, &err), WL_EPRECONDITION);
    CHECK(strstr(err.message, "do not share its shards' hash ranges") != NULL);
    CHECK_INT(groups, 0);
    CHECK_STR(admit_definition(after, sizeof(after)), before);
}

int main(void)
{
    conninfo = testdb_create("shard_direct");
    db = testdb_connect(conninfo);
    test_not_distributed();
    test_installed_by_migrate();
    test_admitted_in_own_shards();
    test_not_direct();
    test_not_colocated();
    PQfinish(db);
    return test_exit();
}
