/*
 * The migrated schema against what `walklistctl distribute` does with it, on plain
 * PostgreSQL, since CI has no Citus: every table is placed (reference, tenant or coordinator),
 * every tenant table's primary key and unique indexes lead with or hold org_id (Citus's rule
 * for a distribution column), every foreign key between two tenant tables is one distribute
 * drops and makes again, with the same definition, and none goes from a reference table to a
 * tenant table. A table a later migration adds fails here until it is placed.
 */
#include <stdbool.h>
#include <string.h>

#include "cli/distribute.h"
#include "store/citus.h"
#include "test.h"
#include "testdb.h"

static PGconn *db;

static bool listed(const char *const *names, size_t count, const char *name)
{
    for (size_t i = 0; i < count; i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

static PGresult *query(const char *sql, const char *param)
{
    const char *params[] = {param};
    PGresult *res = PQexecParams(db, sql, param != NULL, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        FAIL("%s: %s", sql, PQerrorMessage(db));
    return res;
}

static void test_every_table_placed(const wl_distribute_plan_t *plan)
{
    PGresult *res = query("SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = "
                          "c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') "
                          "AND NOT c.relispartition ORDER BY 1",
                          NULL);
    int tables = PQntuples(res);
    for (int i = 0; i < tables; i++) {
        const char *table = PQgetvalue(res, i, 0);
        int places = listed(plan->reference, plan->reference_count, table) +
                     listed(plan->tenant, plan->tenant_count, table) +
                     listed(plan->coordinator, plan->coordinator_count, table);
        if (places != 1)
            fprintf(stderr, "table %s is placed %d times (src/cli/distribute.c)\n", table, places);
        CHECK_INT(places, 1);
    }
    CHECK_INT((size_t)tables, plan->reference_count + plan->tenant_count + plan->coordinator_count);
    PQclear(res);
}

static void test_tenant_keys_hold_org_id(const wl_distribute_plan_t *plan)
{
    for (size_t i = 0; i < plan->tenant_count; i++) {
        const char *table = plan->tenant[i];
        PGresult *res = query("SELECT a.attname FROM pg_index x JOIN pg_attribute a ON "
                              "a.attrelid = x.indrelid AND a.attnum = x.indkey[0] "
                              "WHERE x.indrelid = $1::regclass AND x.indisprimary",
                              table);
        CHECK_INT(PQntuples(res), 1);
        if (PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "org_id") != 0)
            fprintf(stderr, "%s: its primary key does not lead with org_id\n", table);
        CHECK(PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "org_id") == 0);
        PQclear(res);
        res = query("SELECT x.indexrelid::regclass FROM pg_index x WHERE x.indrelid = "
                    "$1::regclass AND x.indisunique AND NOT EXISTS (SELECT 1 FROM pg_attribute "
                    "a WHERE a.attrelid = x.indrelid AND a.attname = 'org_id' AND a.attnum = "
                    "ANY (x.indkey))",
                    table);
        for (int r = 0; r < PQntuples(res); r++)
            fprintf(stderr, "%s: unique index %s without org_id\n", table, PQgetvalue(res, r, 0));
        CHECK_INT(PQntuples(res), 0);
        PQclear(res);
    }
}

static void test_foreign_keys(const wl_distribute_plan_t *plan)
{
    PGresult *res = query("SELECT conname, conrelid::regclass::text, confrelid::regclass::text, "
                          "pg_get_constraintdef(oid) FROM pg_constraint WHERE contype = 'f' AND "
                          "connamespace = 'public'::regnamespace ORDER BY 1",
                          NULL);
    size_t between_tenants = 0;
    for (int i = 0; i < PQntuples(res); i++) {
        const char *name = PQgetvalue(res, i, 0), *from = PQgetvalue(res, i, 1),
                   *to = PQgetvalue(res, i, 2), *definition = PQgetvalue(res, i, 3);
        bool from_tenant = listed(plan->tenant, plan->tenant_count, from);
        bool to_tenant = listed(plan->tenant, plan->tenant_count, to);
        CHECK(!(listed(plan->reference, plan->reference_count, from) && to_tenant));
        if (!from_tenant || !to_tenant)
            continue;
        between_tenants++;
        const wl_distribute_key_t *key = NULL;
        for (size_t k = 0; k < plan->tenant_key_count; k++)
            if (strcmp(plan->tenant_keys[k].name, name) == 0)
                key = &plan->tenant_keys[k];
        if (key == NULL)
            fprintf(stderr, "foreign key %s of %s is not one distribute makes again\n", name, from);
        CHECK(key != NULL);
        if (key != NULL) {
            CHECK_STR(key->table, from);
            CHECK_STR(key->definition, definition);
        }
    }
    CHECK_INT(between_tenants, plan->tenant_key_count);
    PQclear(res);
}

int main(void)
{
    const char *conninfo = testdb_create("integration_distribute");
    db = testdb_connect(conninfo);
    wl_distribute_plan_t plan;
    wl_distribute_plan(&plan);
    test_every_table_placed(&plan);
    test_tenant_keys_hold_org_id(&plan);
    test_foreign_keys(&plan);

    /* Without Citus, distribute refuses and changes nothing. */
    wl_error_t err;
    wl_error_init(&err);
    int changed = -1;
    CHECK_INT(wl_distribute(conninfo, 32, &changed, &err), WL_EPRECONDITION);
    CHECK_INT(changed, 0);

    /* Without Citus there is no shard map: admission groups are not split by node. */
    wl_shard_map_t *map = (wl_shard_map_t *)&plan; /* anything but NULL */
    wl_error_init(&err);
    CHECK_INT(wl_citus_shard_map_load(db, &map, &err), 0);
    CHECK(map == NULL);
    /* ... and no workers to check. */
    wl_citus_node_t nodes[4];
    size_t node_count = 99;
    CHECK_INT(wl_citus_nodes_check(db, 2000, nodes, 4, &node_count, &err), 0);
    CHECK_INT((int)node_count, 0);

    /* A database that cannot be reached: WL_EUNAVAILABLE with libpq's reason, nothing counted. */
    wl_error_init(&err);
    changed = -1;
    CHECK_INT(wl_distribute("host=/nonexistent-walklist-socket-dir dbname=x connect_timeout=2", 32,
                            &changed, &err),
              WL_EUNAVAILABLE);
    CHECK(strstr(err.message, "cannot connect to the database") != NULL);
    CHECK_INT(changed, 0);
    PQfinish(db);
    return test_exit();
}
