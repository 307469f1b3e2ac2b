/* Distributing the schema over a Citus cluster happens here. */
#include "distribute.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

/* Copies on every node: small, read by every organization's statements. */
static const char *const reference_tables[] = {"organizations", "api_keys", "server_secrets"};

/* Sharded by org_id and colocated with the first: an organization's rows of every table live
 * in shards of the same node. */
static const char *const tenant_tables[] = {"warehouses",
                                            "locations",
                                            "products",
                                            "product_eans",
                                            "stock",
                                            "location_stock",
                                            "reservations",
                                            "stock_availability",
                                            "export_versions",
                                            "export_changes",
                                            "locate_lists",
                                            "idempotency_keys",
                                            "rate_limits",
                                            "webhook_endpoints",
                                            "webhook_sequences",
                                            "webhook_events",
                                            "webhook_deliveries"};

/* Where walklistd and walklistctl keep what must be in one place: the applied migrations. */
static const char *const coordinator_tables[] = {"schema_migrations"};

/* Foreign keys between two tenant tables: Citus refuses them while one side is still local, so
 * they are dropped first and made again once both are distributed. */
static const wl_distribute_key_t tenant_keys[] = {
    {"idempotency_keys", "idempotency_keys_org_id_list_id_fkey",
     "FOREIGN KEY (org_id, list_id) REFERENCES locate_lists(org_id, id) DEFERRABLE INITIALLY "
     "DEFERRED"},
};

#define COUNT(array) (sizeof(array) / sizeof(*(array)))

/* One statement; its result in *out when out is not NULL (the caller clears it). */
static int exec(PGconn *conn, const char *sql, int nparams, const char *const *params,
                PGresult **out, wl_error_t *err)
{
    PGresult *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
    ExecStatusType status = PQresultStatus(res);
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
        if (out != NULL)
            *out = res;
        else
            PQclear(res);
        return 0;
    }
    const char *message = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
    int code = PQstatus(conn) == CONNECTION_OK ? WL_EINTERNAL : WL_EUNAVAILABLE;
    wl_error_set(err, code, "distribute: %s", message != NULL ? message : PQerrorMessage(conn));
    PQclear(res);
    return code;
}

void wl_distribute_plan(wl_distribute_plan_t *out)
{
    *out = (wl_distribute_plan_t){
        reference_tables,   COUNT(reference_tables),   tenant_tables, COUNT(tenant_tables),
        coordinator_tables, COUNT(coordinator_tables), tenant_keys,   COUNT(tenant_keys)};
}

/* 'r' (reference), 'd' (distributed) or '\0' (neither: a plain table, or a Citus local table,
 * which a table becomes when it refers to a reference table) for table. */
static int kind_of(PGconn *conn, const char *table, char *kind, wl_error_t *err)
{
    PGresult *res = NULL;
    const char *params[] = {table};
    int rc = exec(conn,
                  "SELECT citus_table_type FROM citus_tables"
                  " WHERE table_name = $1::regclass",
                  1, params, &res, err);
    *kind = '\0';
    if (rc == 0 && PQntuples(res) == 1) {
        const char *type = PQgetvalue(res, 0, 0);
        *kind = strcmp(type, "reference") == 0     ? 'r'
                : strcmp(type, "distributed") == 0 ? 'd'
                                                   : '\0';
    }
    PQclear(res);
    return rc;
}

/* The shard count of a distributed table (its colocation group's). */
static int shard_count_of(PGconn *conn, const char *table, int *shards, wl_error_t *err)
{
    PGresult *res = NULL;
    const char *params[] = {table};
    int rc = exec(conn, "SELECT shard_count FROM citus_tables WHERE table_name = $1::regclass", 1,
                  params, &res, err);
    *shards = rc == 0 && PQntuples(res) == 1 ? atoi(PQgetvalue(res, 0, 0)) : 0;
    PQclear(res);
    return rc;
}

static int distribute(PGconn *conn, int shard_count, int *changed, wl_error_t *err)
{
    int count = 0;
    PGresult *res = NULL;
    int rc = exec(conn, "SELECT 1 FROM pg_extension WHERE extname = 'citus'", 0, NULL, &res, err);
    bool citus = rc == 0 && PQntuples(res) == 1;
    PQclear(res);
    if (rc != 0)
        return rc;
    if (!citus)
        return wl_error_set(err, WL_EPRECONDITION,
                            "the citus extension is not installed in this database: distribute "
                            "runs on a Citus coordinator (CREATE EXTENSION citus, then add the "
                            "workers), after migrate");
    char kinds[COUNT(tenant_tables)];
    bool any_local = false;
    const char *distributed = NULL; /* a tenant table already distributed */
    for (size_t i = 0; rc == 0 && i < sizeof(kinds); i++) {
        rc = kind_of(conn, tenant_tables[i], &kinds[i], err);
        any_local = any_local || kinds[i] == '\0';
        if (distributed == NULL && kinds[i] == 'd')
            distributed = tenant_tables[i];
    }
    /* The tables are colocated, so one has the count of all; checked before anything changes. */
    if (rc == 0 && distributed != NULL && shard_count > 0) {
        int current = 0;
        rc = shard_count_of(conn, distributed, &current, err);
        if (rc == 0 && current != shard_count)
            return wl_error_set(err, WL_EPRECONDITION,
                                "the tenant tables are already distributed in %d shards, not %d: "
                                "nothing changed (run without --shards, or split shards "
                                "with citus_split_shard_by_split_points)",
                                current, shard_count);
    }
    for (size_t i = 0; rc == 0 && i < COUNT(reference_tables); i++) {
        char kind;
        rc = kind_of(conn, reference_tables[i], &kind, err);
        if (rc == 0 && kind == '\0') {
            const char *params[] = {reference_tables[i]};
            rc = exec(conn, "SELECT create_reference_table($1::regclass)", 1, params, NULL, err);
            count += rc == 0;
        }
    }
    if (rc == 0 && any_local) {
        for (size_t k = 0; rc == 0 && k < COUNT(tenant_keys); k++) {
            char sql[256];
            snprintf(sql, sizeof(sql), "ALTER TABLE %s DROP CONSTRAINT IF EXISTS %s",
                     tenant_keys[k].table, tenant_keys[k].name);
            rc = exec(conn, sql, 0, NULL, NULL, err);
        }
        char shards[16];
        snprintf(shards, sizeof(shards), "%d",
                 shard_count > 0 ? shard_count : WL_DISTRIBUTE_DEFAULT_SHARDS);
        /* The first sets the shards, unless one is distributed already; the others are
         * colocated with it. */
        const char *colocate_with = distributed;
        for (size_t i = 0; rc == 0 && i < sizeof(kinds); i++) {
            if (kinds[i] != '\0')
                continue;
            const char *params[] = {tenant_tables[i], colocate_with ? colocate_with : shards};
            rc = exec(conn,
                      colocate_with ? "SELECT create_distributed_table($1::regclass, 'org_id',"
                                      " colocate_with => $2)"
                                    : "SELECT create_distributed_table($1::regclass, 'org_id',"
                                      " shard_count => $2::int)",
                      2, params, NULL, err);
            count += rc == 0;
            if (colocate_with == NULL)
                colocate_with = tenant_tables[i];
        }
        for (size_t k = 0; rc == 0 && k < COUNT(tenant_keys); k++) {
            char sql[512];
            snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD CONSTRAINT %s %s", tenant_keys[k].table,
                     tenant_keys[k].name, tenant_keys[k].definition);
            rc = exec(conn, sql, 0, NULL, NULL, err);
        }
    }
    /* The admission runs on the worker of its group's organizations (wl_admit_at, by its first
     * argument, colocated with the tenant tables); wl_admit, which it calls, and the key check
     * wl_admit calls go to every worker with it. Every call is idempotent. */
    static const char *const admission_functions[] = {"wl__key_of_prefix", "wl_admit"};
    for (size_t f = 0; rc == 0 && f < COUNT(admission_functions); f++) {
        const char *name[] = {admission_functions[f]};
        rc = exec(conn,
                  "SELECT create_distributed_function("
                  "(SELECT p.oid FROM pg_proc p WHERE p.proname = $1)::regprocedure)",
                  1, name, NULL, err);
    }
    if (rc == 0)
        rc = exec(conn,
                  "SELECT create_distributed_function("
                  "(SELECT p.oid FROM pg_proc p WHERE p.proname = 'wl_admit_at')::regprocedure,"
                  " '$1', colocate_with => 'locate_lists')",
                  0, NULL, NULL, err);
    if (changed != NULL)
        *changed = count;
    return rc;
}

int wl_distribute(const char *database_url, int shard_count, int *changed, wl_error_t *err)
{
    if (changed != NULL)
        *changed = 0;
    const char *keys[] = {"application_name", "dbname", NULL};
    const char *values[] = {"walklistctl", database_url, NULL};
    PGconn *conn = PQconnectdbParams(keys, values, 1);
    int rc = 0;
    if (PQstatus(conn) != CONNECTION_OK) {
        const char *reason = PQerrorMessage(conn);
        size_t len = strcspn(reason, "\n");
        rc = wl_error_set(err, WL_EUNAVAILABLE, "cannot connect to the database: %.*s", (int)len,
                          reason);
    } else {
        rc = distribute(conn, shard_count, changed, err);
    }
    PQfinish(conn);
    return rc;
}
