/*
 * The shard map (domain/shard_map.h): an organization is placed on the node group of the range
 * holding hashint8(org_id), as Citus places its rows; a hash in no range is unknown; ranges
 * that overlap or are empty are refused.
 */
#include <stdlib.h>
#include <string.h>

#include "domain/shard_hash.h"
#include "domain/shard_map.h"
#include "test.h"

#define SHARDS 32

/* Citus's ranges for a hash-distributed table of SHARDS shards: equal slices of the int32
 * space from its minimum, the last one to its maximum; node group of shard i: 1 + i % 3. */
static void citus_ranges(wl_shard_range_t ranges[SHARDS])
{
    uint32_t width = (uint32_t)(UINT32_MAX / SHARDS) + 1;
    for (int i = 0; i < SHARDS; i++) {
        int64_t min = (int64_t)INT32_MIN + (int64_t)i * width;
        int64_t max = i == SHARDS - 1 ? INT32_MAX : min + width - 1;
        ranges[i] =
            (wl_shard_range_t){.min = (int32_t)min, .max = (int32_t)max, .group = 1 + i % 3};
    }
}

/* The group a linear scan of the ranges gives: what the map's search must agree with. */
static int64_t scan(const wl_shard_range_t *ranges, size_t count, int64_t org_id)
{
    int32_t hash = wl_shard_hash_int8(org_id);
    for (size_t i = 0; i < count; i++)
        if (hash >= ranges[i].min && hash <= ranges[i].max)
            return ranges[i].group;
    return WL_SHARD_GROUP_UNKNOWN;
}

static void test_every_organization_on_its_range(void)
{
    wl_shard_range_t ranges[SHARDS], shuffled[SHARDS];
    citus_ranges(ranges);
    /* Given in any order (the catalog's order is the shards' ids). */
    for (int i = 0; i < SHARDS; i++)
        shuffled[i] = ranges[(i * 7) % SHARDS];
    wl_shard_map_t *map = NULL;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_shard_map_build(shuffled, SHARDS, &map, &err), 0);
    CHECK_INT((int)wl_shard_map_groups(map), 3);
    int mismatches = 0, unknown = 0, on_group[4] = {0};
    for (int64_t org = 1; org <= 20000; org++) {
        int64_t group = wl_shard_map_group(map, org);
        mismatches += group != scan(ranges, SHARDS, org);
        unknown += group == WL_SHARD_GROUP_UNKNOWN;
        if (group >= 1 && group <= 3)
            on_group[group]++;
    }
    CHECK_INT(mismatches, 0);
    CHECK_INT(unknown, 0);
    /* The hash spreads organizations over the nodes: each holds about a third. */
    for (int g = 1; g <= 3; g++)
        CHECK(on_group[g] > 5000 && on_group[g] < 8400);
    wl_shard_map_free(map);
}

static void test_range_ends_are_included(void)
{
    /* Two ranges split at the hash of organization 42; a gap after the hash of organization 7. */
    int32_t at = wl_shard_hash_int8(42), gap = wl_shard_hash_int8(7);
    CHECK(at != gap);
    int32_t low = at < gap ? at : gap, high = at < gap ? gap : at;
    wl_shard_range_t ranges[] = {{.min = INT32_MIN, .max = low, .group = 10},
                                 {.min = low + 1, .max = high - 1, .group = 20}};
    wl_shard_map_t *map = NULL;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_shard_map_build(ranges, 2, &map, &err), 0);
    CHECK(wl_shard_map_group(map, at < gap ? 42 : 7) == 10); /* the last hash of the first */
    CHECK(wl_shard_map_group(map, at < gap ? 7 : 42) == WL_SHARD_GROUP_UNKNOWN); /* past both */
    wl_shard_map_free(map);
}

static void test_bad_ranges_refused(void)
{
    wl_shard_map_t *map = NULL;
    wl_error_t err;
    wl_error_init(&err);
    wl_shard_range_t overlap[] = {{.min = 0, .max = 100, .group = 1},
                                  {.min = 100, .max = 200, .group = 2}};
    CHECK_INT(wl_shard_map_build(overlap, 2, &map, &err), WL_EINTERNAL);
    CHECK(map == NULL);
    CHECK(strstr(err.message, "[100, 200]") != NULL);
    wl_error_init(&err);
    wl_shard_range_t empty[] = {{.min = 5, .max = 4, .group = 1}};
    CHECK_INT(wl_shard_map_build(empty, 1, &map, &err), WL_EINTERNAL);
    CHECK(map == NULL);
    /* No ranges: every organization unknown, no node group. */
    CHECK_INT(wl_shard_map_build(NULL, 0, &map, &err), 0);
    CHECK_INT((int)wl_shard_map_groups(map), 0);
    CHECK(wl_shard_map_group(map, 1) == WL_SHARD_GROUP_UNKNOWN);
    wl_shard_map_free(map);
}

int main(void)
{
    test_every_organization_on_its_range();
    test_range_ends_are_included();
    test_bad_ranges_refused();
    return test_exit();
}
