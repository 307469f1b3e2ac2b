/* Keeping the shard map that admission groups are placed by happens here. */
#include "services/shard_placement.h"

#include <pthread.h>
#include <stdlib.h>

#include "services/admission_queue.h"
#include "store/citus.h"
#include "walklist/log.h"

struct wl_shard_placement {
    pthread_mutex_t lock;
    wl_shard_map_t *map; /* NULL: one server */
    size_t groups;
};

int wl_shard_placement_create(wl_shard_placement_t **out, wl_error_t *err)
{
    wl_shard_placement_t *shards = calloc(1, sizeof(*shards));
    if (shards == NULL)
        return wl_error_set(err, WL_ENOMEM, "out of memory for the shard placement");
    pthread_mutex_init(&shards->lock, NULL);
    *out = shards;
    return 0;
}

void wl_shard_placement_destroy(wl_shard_placement_t *shards)
{
    if (shards == NULL)
        return;
    wl_shard_map_free(shards->map);
    pthread_mutex_destroy(&shards->lock);
    free(shards);
}

static bool distributed(void *data)
{
    wl_shard_placement_t *shards = data;
    pthread_mutex_lock(&shards->lock);
    bool answer = shards->groups > 1;
    pthread_mutex_unlock(&shards->lock);
    return answer;
}

static int64_t place(int64_t org_id, void *data)
{
    wl_shard_placement_t *shards = data;
    pthread_mutex_lock(&shards->lock);
    int64_t group = shards->map != NULL ? wl_shard_map_group(shards->map, org_id) : 0;
    pthread_mutex_unlock(&shards->lock);
    return group == WL_SHARD_GROUP_UNKNOWN ? WL_PLACEMENT_ALONE : group;
}

static void refresh(PGconn *conn, void *data)
{
    wl_shard_placement_t *shards = data;
    wl_shard_map_t *map = NULL;
    wl_error_t err;
    wl_error_init(&err);
    if (wl_citus_shard_map_load(conn, &map, &err) != 0) {
        wl_log("warn", "shard map not refreshed", "%s: admission groups keep the last one",
               err.message);
        return;
    }
    size_t groups = map != NULL ? wl_shard_map_groups(map) : 0;
    pthread_mutex_lock(&shards->lock);
    wl_shard_map_t *old = shards->map;
    bool changed = groups != shards->groups;
    shards->map = map;
    shards->groups = groups;
    pthread_mutex_unlock(&shards->lock);
    wl_shard_map_free(old);
    if (changed)
        wl_log("info", "admission groups placed", "%zu node group(s) hold the tenant tables",
               groups);
}

wl_placement_t wl_shard_placement_of(wl_shard_placement_t *shards)
{
    return (wl_placement_t){.distributed = distributed,
                            .place = place,
                            .refresh = refresh,
                            .refresh_ms = WL_SHARD_PLACEMENT_REFRESH_MS,
                            .data = shards};
}

size_t wl_shard_placement_groups(wl_shard_placement_t *shards)
{
    pthread_mutex_lock(&shards->lock);
    size_t groups = shards->groups;
    pthread_mutex_unlock(&shards->lock);
    return groups;
}
