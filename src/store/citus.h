/*
 * What a Citus coordinator's catalog says about where the tenant tables' rows are: the shard
 * map (domain/shard_map.h) that admission groups of one node are made by. On plain PostgreSQL,
 * or before `walklistctl distribute`, there is no map: every row is on the one server.
 */
#ifndef WALKLIST_STORE_CITUS_H
#define WALKLIST_STORE_CITUS_H

#include <libpq-fe.h>

#include "domain/shard_map.h"
#include "walklist/error.h"

/**
 * Loads the shard map of the tenant tables (they are colocated: locate_lists' shards place all
 * of them) into *out, or sets *out to NULL when the database is not a Citus coordinator with
 * the tenant tables distributed. The caller frees the map.
 */
int wl_citus_shard_map_load(PGconn *conn, wl_shard_map_t **out, wl_error_t *err) WL_CHECK_RESULT;

#endif
