/*
 * Which node group holds an organization's rows on a distributed PostgreSQL (Citus): the
 * tenant tables are colocated and distributed by org_id, so one map of hash ranges (each
 * shard's [min, max] of hashint8(org_id)) to node groups places every table's rows. Built
 * from what the coordinator's catalog says (store/citus.h); read from memory, so that a
 * request is placed without asking the database.
 */
#ifndef WALKLIST_DOMAIN_SHARD_MAP_H
#define WALKLIST_DOMAIN_SHARD_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "walklist/error.h"

/* No range holds the organization's hash (a map caught mid-change): place it alone. */
#define WL_SHARD_GROUP_UNKNOWN INT64_MIN

typedef struct {
    int32_t min, max; /* the shard's hash range, both ends included */
    int64_t group;    /* the node group holding it (pg_dist_placement.groupid) */
} wl_shard_range_t;

typedef struct wl_shard_map wl_shard_map_t;

/**
 * A map of the count ranges, in any order. WL_EINTERNAL when a range is empty (min > max) or
 * two overlap; gaps are allowed (an organization whose hash falls in one is unknown).
 */
int wl_shard_map_build(const wl_shard_range_t *ranges, size_t count, wl_shard_map_t **out,
                       wl_error_t *err) WL_CHECK_RESULT;

/** The node group of org_id's rows, or WL_SHARD_GROUP_UNKNOWN. */
int64_t wl_shard_map_group(const wl_shard_map_t *map, int64_t org_id);

/** How many distinct node groups the map names. */
size_t wl_shard_map_groups(const wl_shard_map_t *map);

void wl_shard_map_free(wl_shard_map_t *map);

#endif
