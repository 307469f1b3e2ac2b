/*
 * The placement of admission groups on a distributed database (services/admissions.h): the
 * shard map of the tenant tables (store/citus.h), loaded by a committer and kept current every
 * few seconds, so that a rebalanced cluster's groups follow the moved shards, and a pool of
 * connections to each worker, so that a group's statement goes straight to the worker holding
 * its organizations instead of through the coordinator. On one server there is no map, no
 * worker, and every request has the same placement.
 */
#ifndef WALKLIST_SERVICES_SHARD_PLACEMENT_H
#define WALKLIST_SERVICES_SHARD_PLACEMENT_H

#include <stddef.h>

#include "services/admissions.h"
#include "store/citus.h"
#include "store/pool.h"
#include "walklist/core.h"
#include "walklist/error.h"

/* How often the map is read again: a shard moved by the rebalancer is followed that much later
 * at most; until then groups may hold requests of two nodes, which is slower, not wrong. */
#define WL_SHARD_PLACEMENT_REFRESH_MS 10000

typedef struct wl_shard_placement wl_shard_placement_t;

/**
 * node_pools: how to reach the workers (the coordinator's URL, pointed at each worker by
 * store/node_conninfo.h, and a pool's size and timeouts per worker), or NULL to send every
 * group through the coordinator.
 */
int wl_shard_placement_create(const wl_pool_config_t *node_pools, wl_shard_placement_t **out,
                              wl_error_t *err) WL_CHECK_RESULT;
void wl_shard_placement_destroy(wl_shard_placement_t *shards);

/** The admissions' placement backed by shards (valid while shards lives). */
wl_placement_t wl_shard_placement_of(wl_shard_placement_t *shards);

/** The node groups holding the tenant tables' shards (0: not distributed, one server). */
size_t wl_shard_placement_groups(wl_shard_placement_t *shards);

/**
 * The workers as the catalog names them now (what a refresh reads from pg_dist_node): a pool
 * for each new address; the pool of an address no longer named is closed (its connections
 * end, its groups go through the coordinator) and a new one is made if it is named again.
 * Without node_pools at creation, nothing.
 */
void wl_shard_placement_set_nodes(wl_shard_placement_t *shards,
                                  const wl_citus_node_address_t *nodes, size_t count);

/** Copies the current workers' routes (at most max) into out: each worker's address
 * ("host:port") and whether this process reaches it itself (false from a failed connection
 * until one works: its groups then go through the coordinator). Returns how many. */
size_t wl_shard_placement_routes(wl_shard_placement_t *shards, wl_core_node_t *out, size_t max);

/** Shutdown: every worker's pool refuses from now on (wl_pool_close). */
void wl_shard_placement_close(wl_shard_placement_t *shards);

/** Connections of the workers' pools lent out right now. */
int wl_shard_placement_busy(wl_shard_placement_t *shards);

#endif
