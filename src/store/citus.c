/* Reading the shard map of the tenant tables from a Citus coordinator's catalog happens here. */
#include "store/citus.h"

#include <stdlib.h>

#include "store/db.h"

/* One row per shard of locate_lists: its hash range and the node group of its newest placement
 * (a shard being moved by the rebalancer has two placements for a moment). */
static const char SHARD_MAP_SQL[] =
    "SELECT DISTINCT ON (s.shardid) s.shardminvalue::integer, s.shardmaxvalue::integer,"
    " p.groupid"
    " FROM pg_dist_shard s JOIN pg_dist_placement p ON p.shardid = s.shardid"
    " WHERE s.logicalrelid = 'public.locate_lists'::regclass"
    " ORDER BY s.shardid, p.placementid DESC";

int wl_citus_shard_map_load(PGconn *conn, wl_shard_map_t **out, wl_error_t *err)
{
    *out = NULL;
    PGresult *res = NULL;
    /* Without Citus the catalog table does not exist, and naming it would fail the statement. */
    int rc = wl_db_exec(conn, "SELECT to_regclass('pg_catalog.pg_dist_shard') IS NOT NULL", 0, NULL,
                        &res, err);
    if (rc != 0)
        return rc;
    bool citus = PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    if (!citus)
        return 0;
    rc = wl_db_exec(conn, SHARD_MAP_SQL, 0, NULL, &res, err);
    if (rc != 0)
        return rc;
    int rows = PQntuples(res);
    if (rows == 0) { /* Citus, but the tenant tables are not distributed (yet) */
        PQclear(res);
        return 0;
    }
    wl_shard_range_t *ranges = malloc((size_t)rows * sizeof(*ranges));
    if (ranges == NULL) {
        PQclear(res);
        return wl_error_set(err, WL_ENOMEM, "out of memory for the shard map");
    }
    for (int i = 0; i < rows; i++)
        ranges[i] = (wl_shard_range_t){.min = (int32_t)wl_db_int64(res, i, 0),
                                       .max = (int32_t)wl_db_int64(res, i, 1),
                                       .group = wl_db_int64(res, i, 2)};
    PQclear(res);
    rc = wl_shard_map_build(ranges, (size_t)rows, out, err);
    free(ranges);
    return rc;
}
