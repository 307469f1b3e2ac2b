/* Keeping the shard map that admission groups are placed by, and the workers' pools, happens
 * here. */
#include "services/shard_placement.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "services/admission_queue.h"
#include "store/citus.h"
#include "store/node_conninfo.h"
#include "walklist/log.h"

/* Workers at most (node groups); a cluster with more sends the others' groups through the
 * coordinator. */
#define NODES_MAX 64

/* A worker's pool: made when its node group first appears with that address. When the
 * catalog no longer names it (a worker removed, moved or disabled), it is retired: closed, so
 * that its connections end and borrowers go through the coordinator, but kept until the
 * placement is destroyed, since a committer may hold it (or one of its connections) while the
 * map changes. The address named again later gets a new pool. */
typedef struct node_pool {
    int64_t group;
    char host[WL_CITUS_NODE_ADDRESS_SIZE];
    int port;
    wl_pool_t *pool;
    bool current; /* the address the catalog names for the group now */
    bool retired; /* closed when the catalog stopped naming it */
    struct node_pool *next;
} node_pool_t;

struct wl_shard_placement {
    pthread_mutex_t lock;
    wl_shard_map_t *map; /* NULL: one server */
    size_t groups;
    bool direct; /* groups go to their workers (node_pools given) */
    wl_pool_config_t node_config;
    char *coordinator_url;
    node_pool_t *nodes;
};

int wl_shard_placement_create(const wl_pool_config_t *node_pools, wl_shard_placement_t **out,
                              wl_error_t *err)
{
    wl_shard_placement_t *shards = calloc(1, sizeof(*shards));
    if (shards == NULL)
        return wl_error_set(err, WL_ENOMEM, "out of memory for the shard placement");
    if (node_pools != NULL) {
        shards->direct = true;
        shards->node_config = *node_pools;
        /* Its sessions only call wl_admit, which the worker runs itself (not a distributed
         * function's call to pass on): one plan of the call per session. */
        shards->node_config.generic_plans = true;
        shards->coordinator_url = strdup(node_pools->conninfo ? node_pools->conninfo : "");
        if (shards->coordinator_url == NULL) {
            free(shards);
            return wl_error_set(err, WL_ENOMEM, "out of memory for the shard placement");
        }
    }
    pthread_mutex_init(&shards->lock, NULL);
    *out = shards;
    return 0;
}

void wl_shard_placement_destroy(wl_shard_placement_t *shards)
{
    if (shards == NULL)
        return;
    for (node_pool_t *node = shards->nodes, *next; node != NULL; node = next) {
        next = node->next;
        wl_pool_destroy(node->pool);
        free(node);
    }
    wl_shard_map_free(shards->map);
    free(shards->coordinator_url);
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

static wl_pool_t *pool_of(int64_t placement, void *data)
{
    wl_shard_placement_t *shards = data;
    wl_pool_t *pool = NULL;
    pthread_mutex_lock(&shards->lock);
    for (node_pool_t *node = shards->nodes; node != NULL && pool == NULL; node = node->next) {
        if (node->current && node->group == placement)
            pool = node->pool;
    }
    pthread_mutex_unlock(&shards->lock);
    return pool;
}

/* Under the lock: the pool of the worker at this address, made if new. */
static void keep_node(wl_shard_placement_t *shards, const wl_citus_node_address_t *address)
{
    for (node_pool_t *node = shards->nodes; node != NULL; node = node->next) {
        if (!node->retired && node->group == address->group && node->port == address->port &&
            strcmp(node->host, address->host) == 0) {
            node->current = true;
            return;
        }
    }
    wl_error_t err;
    wl_error_init(&err);
    char *conninfo = NULL;
    node_pool_t *node = calloc(1, sizeof(*node));
    wl_pool_config_t config = shards->node_config;
    int rc = node == NULL ? wl_error_set(&err, WL_ENOMEM, NULL)
                          : wl_node_conninfo(shards->coordinator_url, address->host, address->port,
                                             &conninfo, &err);
    if (rc == 0) {
        config.conninfo = conninfo;
        rc = wl_pool_create(&config, &node->pool, &err);
    }
    free(conninfo);
    if (rc != 0) {
        free(node);
        wl_log("warn", "worker not reached directly",
               "node group %lld (%s:%d): %s; its admission groups go through the coordinator",
               (long long)address->group, address->host, address->port, err.message);
        return;
    }
    node->group = address->group;
    snprintf(node->host, sizeof(node->host), "%s", address->host);
    node->port = address->port;
    node->current = true;
    node->next = shards->nodes;
    shards->nodes = node;
    wl_log("info", "admissions sent to the worker", "node group %lld at %s:%d",
           (long long)address->group, address->host, address->port);
}

void wl_shard_placement_set_nodes(wl_shard_placement_t *shards,
                                  const wl_citus_node_address_t *nodes, size_t count)
{
    if (!shards->direct)
        return;
    pthread_mutex_lock(&shards->lock);
    for (node_pool_t *node = shards->nodes; node != NULL; node = node->next)
        node->current = false;
    for (size_t i = 0; i < count; i++)
        keep_node(shards, &nodes[i]);
    for (node_pool_t *node = shards->nodes; node != NULL; node = node->next) {
        if (node->current || node->retired)
            continue;
        node->retired = true;
        wl_pool_close(node->pool);
        wl_log("info", "worker's pool closed",
               "node group %lld at %s:%d: the cluster's catalog no longer names this address; "
               "its connections end",
               (long long)node->group, node->host, node->port);
    }
    pthread_mutex_unlock(&shards->lock);
}

static void refresh_nodes(wl_shard_placement_t *shards, PGconn *conn)
{
    wl_citus_node_address_t addresses[NODES_MAX];
    size_t count = 0;
    wl_error_t err;
    wl_error_init(&err);
    if (wl_citus_node_addresses(conn, addresses, NODES_MAX, &count, &err) != 0) {
        wl_log("warn", "workers not refreshed", "%s: admission groups keep the last addresses",
               err.message);
        return;
    }
    wl_shard_placement_set_nodes(shards, addresses, count);
}

size_t wl_shard_placement_routes(wl_shard_placement_t *shards, wl_core_node_t *out, size_t max)
{
    size_t count = 0;
    pthread_mutex_lock(&shards->lock);
    for (node_pool_t *node = shards->nodes; node != NULL && count < max; node = node->next) {
        if (!node->current)
            continue;
        wl_pool_stats_t stats;
        wl_pool_stats(node->pool, &stats);
        wl_core_node_t *route = &out[count++];
        /* A host name has at most 255 characters, so host:port fits an address's 280. */
        if (snprintf(route->address, sizeof(route->address), "%s:%d", node->host, node->port) < 0)
            route->address[0] = '\0';
        route->reachable = !stats.unreachable;
    }
    pthread_mutex_unlock(&shards->lock);
    return count;
}

void wl_shard_placement_close(wl_shard_placement_t *shards)
{
    pthread_mutex_lock(&shards->lock);
    for (node_pool_t *node = shards->nodes; node != NULL; node = node->next)
        wl_pool_close(node->pool);
    pthread_mutex_unlock(&shards->lock);
}

int wl_shard_placement_busy(wl_shard_placement_t *shards)
{
    int busy = 0;
    pthread_mutex_lock(&shards->lock);
    for (node_pool_t *node = shards->nodes; node != NULL; node = node->next) {
        wl_pool_stats_t stats;
        wl_pool_stats(node->pool, &stats);
        busy += stats.in_use;
    }
    pthread_mutex_unlock(&shards->lock);
    return busy;
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
    if (shards->direct && groups > 1)
        refresh_nodes(shards, conn);
}

wl_placement_t wl_shard_placement_of(wl_shard_placement_t *shards)
{
    return (wl_placement_t){.distributed = distributed,
                            .place = place,
                            .refresh = refresh,
                            .pool_of = pool_of,
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
