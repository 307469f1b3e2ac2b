/*
 * Spreading the schema over a Citus cluster happens here: organizations, api_keys and
 * server_secrets become reference tables (a copy on every node), every tenant table is
 * distributed by org_id into colocated shards, so that every statement of one organization runs
 * on one node. Run on the coordinator, once, after migrate; later runs change nothing.
 */
#ifndef WALKLIST_STORE_DISTRIBUTE_H
#define WALKLIST_STORE_DISTRIBUTE_H

#include <libpq-fe.h>

#include "walklist/error.h"

/** Distributes what is not distributed yet; *changed (may be NULL) counts the tables. Without
 * the citus extension in the database: WL_EPRECONDITION, nothing changed. */
int wl_distribute(PGconn *conn, int shard_count, int *changed, wl_error_t *err) WL_CHECK_RESULT;

#endif
