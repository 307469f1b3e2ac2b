/* Installing the SQL functions' shard-direct form from a Citus catalog happens here. */
#include "store/shard_direct.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "domain/shard_direct.h"
#include "store/db.h"
#include "store/migrate.h"

/* Names are resolved by the search path (pg_catalog first), not qualified: a test gives a plain
 * PostgreSQL a catalog of its own in these names (tests/integration/test_shard_direct.c). */
static const char CATALOG_SQL[] = "SELECT to_regclass('pg_dist_partition') IS NOT NULL"
                                  " AND to_regclass('pg_dist_shard') IS NOT NULL";

/* Every shard of every hash-distributed table colocated with the anchor, by hash range, the
 * anchor first in each. */
static const char LAYOUT_SQL[] =
    "SELECT p.logicalrelid::text, s.shardid, s.shardminvalue::integer"
    " FROM pg_dist_partition a"
    " JOIN pg_dist_partition p ON p.colocationid = a.colocationid AND p.partmethod = 'h'"
    " JOIN pg_dist_shard s ON s.logicalrelid = p.logicalrelid"
    " WHERE a.logicalrelid = to_regclass($1) AND a.partmethod = 'h'"
    " ORDER BY s.shardminvalue::integer, p.logicalrelid <> a.logicalrelid, p.logicalrelid::text";

typedef struct {
    char **tables;
    size_t table_count;
    int64_t *shards;
    int32_t *mins;
    size_t group_count;
} layout_t;

static void layout_free(layout_t *l)
{
    for (size_t t = 0; t < l->table_count; t++)
        free(l->tables[t]);
    free(l->tables);
    free(l->shards);
    free(l->mins);
}

/* The rows of LAYOUT_SQL as groups of the same tables in the same order. */
static int layout_of(const PGresult *res, layout_t *l, wl_error_t *err)
{
    int rows = PQntuples(res);
    size_t tables = 0;
    while ((int)tables < rows &&
           strcmp(PQgetvalue(res, (int)tables, 2), PQgetvalue(res, 0, 2)) == 0)
        tables++;
    if (tables == 0)
        return 0;
    if (rows % (int)tables != 0)
        goto NotColocated;
    l->tables = calloc(tables, sizeof(*l->tables));
    l->shards = malloc((size_t)rows * sizeof(*l->shards));
    l->mins = malloc((size_t)rows / tables * sizeof(*l->mins));
    if (l->tables == NULL || l->shards == NULL || l->mins == NULL)
        return wl_error_set(err, WL_ENOMEM, "out of memory for the shard layout");
    l->table_count = tables;
    for (size_t t = 0; t < tables; t++) {
        if ((l->tables[t] = strdup(PQgetvalue(res, (int)t, 0))) == NULL)
            return wl_error_set(err, WL_ENOMEM, "out of memory for the shard layout");
    }
    l->group_count = (size_t)rows / tables;
    for (int row = 0; row < rows; row++) {
        size_t t = (size_t)row % tables;
        const char *first_of_group = PQgetvalue(res, row - (int)t, 2);
        if (strcmp(PQgetvalue(res, row, 0), l->tables[t]) != 0 ||
            strcmp(PQgetvalue(res, row, 2), first_of_group) != 0)
            goto NotColocated;
        l->shards[row] = wl_db_int64(res, row, 1);
        if (t == 0)
            l->mins[(size_t)row / tables] = (int32_t)wl_db_int64(res, row, 2);
    }
    return 0;
NotColocated:
    return wl_error_set(err, WL_EPRECONDITION,
                        "the tables colocated with %s do not share its shards' hash ranges",
                        WL_SHARD_DIRECT_ANCHOR);
}

int wl_shard_direct_install(PGconn *conn, size_t *groups, wl_error_t *err)
{
    if (groups != NULL)
        *groups = 0;
    PGresult *res = NULL;
    int rc = wl_db_exec(conn, CATALOG_SQL, 0, NULL, &res, err);
    if (rc != 0)
        return rc;
    bool catalog = PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    res = NULL;
    if (!catalog)
        return 0;
    const char *anchor[] = {WL_SHARD_DIRECT_ANCHOR};
    rc = wl_db_exec(conn, LAYOUT_SQL, 1, anchor, &res, err);
    if (rc != 0)
        return rc;
    layout_t l = {0};
    rc = layout_of(res, &l, err);
    PQclear(res);
    const wl_shard_layout_t layout = {.tables = (const char *const *)l.tables,
                                      .table_count = l.table_count,
                                      .shards = l.shards,
                                      .mins = l.mins,
                                      .group_count = l.group_count};
    for (size_t i = 0; rc == 0 && l.group_count > 0 && i < wl_function_count; i++) {
        wl_span_t sql = wl_span_str(wl_functions[i].sql);
        if (!wl_shard_direct_marked(sql))
            continue;
        char *expanded = NULL;
        rc = wl_shard_direct_expand(sql, &layout, &expanded, err);
        if (rc == 0)
            rc = wl_migrate_run_file(conn, "function failed", wl_functions[i].name, expanded, err);
        free(expanded);
    }
    if (rc == 0 && groups != NULL)
        *groups = l.group_count;
    layout_free(&l);
    return rc;
}
