/*
 * What a Citus coordinator's catalog says about where the tenant tables' rows are: the shard
 * map (domain/shard_map.h) that admission groups of one node are made by. On plain PostgreSQL,
 * or before `walklistctl distribute`, there is no map: every row is on the one server.
 */
#ifndef WALKLIST_STORE_CITUS_H
#define WALKLIST_STORE_CITUS_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "domain/shard_map.h"
#include "walklist/error.h"

/** Whether the database is a Citus coordinator (its catalog is there): *citus. */
int wl_citus_is_coordinator(PGconn *conn, bool *citus, wl_error_t *err) WL_CHECK_RESULT;

/**
 * Loads the shard map of the tenant tables (they are colocated: locate_lists' shards place all
 * of them) into *out, or sets *out to NULL when the database is not a Citus coordinator with
 * the tenant tables distributed. The caller frees the map.
 */
int wl_citus_shard_map_load(PGconn *conn, wl_shard_map_t **out, wl_error_t *err) WL_CHECK_RESULT;

/* A Citus worker as the coordinator reaches it: "host:port" and whether a connection opened. */
#define WL_CITUS_NODE_ADDRESS_SIZE 280
typedef struct {
    char address[WL_CITUS_NODE_ADDRESS_SIZE];
    bool reachable;
} wl_citus_node_t;

/**
 * Asks the coordinator to open a connection to each of its active primary workers, waiting at
 * most connect_timeout_ms for each (Citus's citus_check_connection_to_node), and fills nodes
 * (at most max, in node order) with what it found; *count is 0 on plain PostgreSQL.
 */
int wl_citus_nodes_check(PGconn *conn, int connect_timeout_ms, wl_citus_node_t *nodes, size_t max,
                         size_t *count, wl_error_t *err) WL_CHECK_RESULT;

/* A worker's node group and the address of its primary as the coordinator's catalog names it. */
typedef struct {
    int64_t group;
    char host[WL_CITUS_NODE_ADDRESS_SIZE];
    int port;
} wl_citus_node_address_t;

/**
 * The active primary workers (pg_dist_node, node group other than the coordinator's), at most
 * max in node group order, into nodes; *count is 0 on plain PostgreSQL.
 */
int wl_citus_node_addresses(PGconn *conn, wl_citus_node_address_t *nodes, size_t max, size_t *count,
                            wl_error_t *err) WL_CHECK_RESULT;

#endif
