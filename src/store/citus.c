/* Reading the shard map of the tenant tables from a Citus coordinator's catalog happens here. */
#include "store/citus.h"

#include <stdio.h>
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

/* Without Citus its catalog tables do not exist, and naming one would fail the statement. */
int wl_citus_is_coordinator(PGconn *conn, bool *citus, wl_error_t *err)
{
    PGresult *res = NULL;
    int rc = wl_db_exec(conn, "SELECT to_regclass('pg_catalog.pg_dist_shard') IS NOT NULL", 0, NULL,
                        &res, err);
    if (rc != 0)
        return rc;
    *citus = PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    return 0;
}

int wl_citus_shard_map_load(PGconn *conn, wl_shard_map_t **out, wl_error_t *err)
{
    *out = NULL;
    PGresult *res = NULL;
    bool citus = false;
    int rc = wl_citus_is_coordinator(conn, &citus, err);
    if (rc != 0 || !citus)
        return rc;
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

int wl_citus_nodes_check(PGconn *conn, int connect_timeout_ms, wl_citus_node_t *nodes, size_t max,
                         size_t *count, wl_error_t *err)
{
    *count = 0;
    bool citus = false;
    int rc = wl_citus_is_coordinator(conn, &citus, err);
    if (rc != 0 || !citus)
        return rc;
    /* The coordinator waits citus.node_connection_timeout (30 s by default) for a node that
     * does not answer: set for this transaction only, so that a check stays short. */
    char timeout[16];
    snprintf(timeout, sizeof(timeout), "%d", connect_timeout_ms);
    const char *params[] = {timeout};
    PGresult *res = NULL;
    rc = wl_db_begin(conn, err);
    if (rc == 0)
        rc = wl_db_exec(conn, "SELECT set_config('citus.node_connection_timeout', $1, true)", 1,
                        params, NULL, err);
    if (rc == 0)
        rc = wl_db_exec(conn,
                        "SELECT n.nodename || ':' || n.nodeport,"
                        " citus_check_connection_to_node(n.nodename, n.nodeport)"
                        " FROM pg_dist_node n"
                        " WHERE n.isactive AND n.noderole = 'primary' AND n.groupid <> 0"
                        " ORDER BY n.nodeid",
                        0, NULL, &res, err);
    if (rc == 0)
        rc = wl_db_commit(conn, err);
    if (rc != 0) {
        PQclear(res);
        wl_db_rollback(conn);
        return rc;
    }
    for (int i = 0; i < PQntuples(res) && *count < max; i++) {
        wl_citus_node_t *node = &nodes[(*count)++];
        snprintf(node->address, sizeof(node->address), "%s", PQgetvalue(res, i, 0));
        node->reachable = PQgetvalue(res, i, 1)[0] == 't';
    }
    PQclear(res);
    return 0;
}

int wl_citus_node_addresses(PGconn *conn, wl_citus_node_address_t *nodes, size_t max, size_t *count,
                            wl_error_t *err)
{
    *count = 0;
    bool citus = false;
    int rc = wl_citus_is_coordinator(conn, &citus, err);
    if (rc != 0 || !citus)
        return rc;
    PGresult *res = NULL;
    rc = wl_db_exec(conn,
                    "SELECT groupid, nodename, nodeport FROM pg_dist_node"
                    " WHERE isactive AND noderole = 'primary' AND groupid <> 0 ORDER BY groupid",
                    0, NULL, &res, err);
    if (rc != 0)
        return rc;
    for (int i = 0; i < PQntuples(res) && *count < max; i++) {
        wl_citus_node_address_t *node = &nodes[(*count)++];
        node->group = wl_db_int64(res, i, 0);
        snprintf(node->host, sizeof(node->host), "%s", PQgetvalue(res, i, 1));
        node->port = (int)wl_db_int64(res, i, 2);
    }
    PQclear(res);
    return 0;
}
