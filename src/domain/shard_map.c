/* Placing an organization on a distributed database's node group, from memory, happens here. */
#include "domain/shard_map.h"

#include <stdlib.h>
#include <string.h>

#include "domain/shard_hash.h"

struct wl_shard_map {
    size_t count;
    size_t groups;
    wl_shard_range_t ranges[]; /* by min */
};

static int by_min(const void *a, const void *b)
{
    const wl_shard_range_t *x = a, *y = b;
    return (x->min > y->min) - (x->min < y->min);
}

static int by_group(const void *a, const void *b)
{
    const wl_shard_range_t *x = a, *y = b;
    return (x->group > y->group) - (x->group < y->group);
}

static size_t count_groups(const wl_shard_range_t *ranges, size_t count)
{
    wl_shard_range_t *copy = malloc(count * sizeof(*copy));
    if (copy == NULL)
        return 0;
    memcpy(copy, ranges, count * sizeof(*copy));
    qsort(copy, count, sizeof(*copy), by_group);
    size_t groups = 0;
    for (size_t i = 0; i < count; i++)
        groups += i == 0 || copy[i].group != copy[i - 1].group;
    free(copy);
    return groups;
}

int wl_shard_map_build(const wl_shard_range_t *ranges, size_t count, wl_shard_map_t **out,
                       wl_error_t *err)
{
    *out = NULL;
    wl_shard_map_t *map = malloc(sizeof(*map) + count * sizeof(map->ranges[0]));
    if (map == NULL)
        return wl_error_set(err, WL_ENOMEM, "out of memory for the shard map");
    map->count = count;
    if (count > 0)
        memcpy(map->ranges, ranges, count * sizeof(map->ranges[0]));
    qsort(map->ranges, count, sizeof(map->ranges[0]), by_min);
    for (size_t i = 0; i < count; i++) {
        const wl_shard_range_t *r = &map->ranges[i];
        if (r->min > r->max || (i > 0 && r->min <= map->ranges[i - 1].max)) {
            int min = r->min, max = r->max;
            free(map);
            return wl_error_set(err, WL_EINTERNAL, "shard range [%d, %d] is empty or overlaps", min,
                                max);
        }
    }
    map->groups = count_groups(map->ranges, count);
    *out = map;
    return 0;
}

int64_t wl_shard_map_group(const wl_shard_map_t *map, int64_t org_id)
{
    int32_t hash = wl_shard_hash_int8(org_id);
    size_t low = 0, high = map->count; /* the range holding hash is in [low, high) */
    while (low < high) {
        size_t mid = low + (high - low) / 2;
        if (hash < map->ranges[mid].min)
            high = mid;
        else if (hash > map->ranges[mid].max)
            low = mid + 1;
        else
            return map->ranges[mid].group;
    }
    return WL_SHARD_GROUP_UNKNOWN;
}

size_t wl_shard_map_groups(const wl_shard_map_t *map)
{
    return map->groups;
}

void wl_shard_map_free(wl_shard_map_t *map)
{
    free(map);
}
