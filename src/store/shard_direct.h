/*
 * Installing the shard-direct form of the SQL functions (domain/shard_direct.h) where the tenant
 * tables are distributed by Citus: their shard groups are read from the catalog (pg_dist_shard
 * of every table colocated with rate_limits, the anchor the functions ask the shard of) and
 * each function file with markers is run again in its expanded form. Elsewhere (plain
 * PostgreSQL, or Citus before `walklistctl distribute`) nothing changes, and the functions'
 * switch stays off. Shard ids change only when shards are split or the shard count is changed,
 * not when shards move: after a split, this is run again by `walklistctl migrate` or
 * `distribute`; until then a new shard's statements go through Citus, as before.
 */
#ifndef WALKLIST_STORE_SHARD_DIRECT_H
#define WALKLIST_STORE_SHARD_DIRECT_H

#include <libpq-fe.h>
#include <stddef.h>

#include "walklist/error.h"

/* The table whose shard the functions ask for each organization (the others are colocated). */
#define WL_SHARD_DIRECT_ANCHOR "rate_limits"

/**
 * In the caller's transaction (if any): installs the expanded form of every marked function;
 * *groups (may be NULL) is the number of shard groups it names, 0 when the anchor is not
 * distributed (nothing installed). WL_EPRECONDITION when the colocated tables' shards do not
 * share their hash ranges.
 */
int wl_shard_direct_install(PGconn *conn, size_t *groups, wl_error_t *err) WL_CHECK_RESULT;

#endif
