/* Creating the core, checking keys and invoking service methods happens here. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "services/services.h"
#include "store/citus.h"
#include "store/db.h"
#include "store/migrate.h"
#include "store/rate_limits.h"
#include "walklist/log.h"

/* In the order wl_core_services lists them. */
static const wl_service_table_t *const service_tables[WL_SERVICE_COUNT] = {
    &wl__locate_list_service,
    &wl__stock_service,
    &wl__scanner_service,
    &wl__inventory_service,
};

/* Binds every service's method table (registry.h) and gives each its protobuf-c face. */
static int bind_services(wl_core_t *core, wl_error_t *err)
{
    for (size_t i = 0; i < WL_SERVICE_COUNT; i++) {
        const wl_service_table_t *table = service_tables[i];
        unsigned n = table->descriptor->n_methods;
        core->methods[i] = calloc(n ? n : 1, sizeof(*core->methods[i]));
        if (core->methods[i] == NULL)
            return wl_error_set(err, WL_ENOMEM, NULL);
        int rc = wl__service_table_bind(table, core->methods[i], err);
        if (rc != 0)
            return rc;
        core->services[i] = (wl_service_entry_t){.descriptor = table->descriptor,
                                                 .service = &core->protobuf_services[i].base,
                                                 .methods = core->methods[i]};
        wl__protobuf_service_init(&core->protobuf_services[i], &core->services[i]);
    }
    return 0;
}

/* The refill threads' way to the database. */
static int ask_permits(void *data, int64_t org_id, const char *bucket, int limit,
                       const wl_rate_ask_t *ask, wl_rate_grant_t *grant, wl_error_t *err)
{
    wl_core_t *core = data;
    PGconn *conn = NULL;
    int rc = wl_pool_acquire(core->pool, &conn, err);
    if (rc != 0)
        return rc;
    rc = wl_rate_take(conn, org_id, bucket, limit, core->rate_window_ms, ask, grant, err);
    wl_pool_release(core->pool, conn);
    return rc;
}

int wl_core_check_database_url(const char *url, wl_error_t *err)
{
    return wl_db_check_conninfo(url, err);
}

int wl_core_create(const wl_core_config_t *config, wl_core_t **out, wl_error_t *err)
{
    wl_core_t *core = calloc(1, sizeof(*core));
    if (core == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    pthread_mutex_init(&core->hook_lock, NULL);
    pthread_mutex_init(&core->ready_lock, NULL);
    atomic_init(&core->ready_last_rc, READY_NEVER_CHECKED);
    /* Checked first: a method table that does not match its service is a build mistake,
     * whatever the database says. */
    int rc = bind_services(core, err);
    if (rc != 0) {
        wl_core_destroy(core);
        return rc;
    }
    wl_pool_config_t pool_config = {
        .conninfo = config->database_url,
        .size = config->db_pool_size > 0 ? config->db_pool_size : WL_CORE_DEFAULT_DB_POOL_SIZE,
        .application = "walklist",
        .timeout_ms =
            config->db_timeout_ms > 0 ? config->db_timeout_ms : WL_CORE_DEFAULT_DB_TIMEOUT_MS,
        .statement_timeout_ms = config->statement_timeout_ms > 0
                                    ? config->statement_timeout_ms
                                    : WL_CORE_DEFAULT_STATEMENT_TIMEOUT_MS,
    };
    rc = wl_pool_create(&pool_config, &core->pool, err);
    if (rc == 0 && config->read_database_url != NULL && config->read_database_url[0] != '\0') {
        pool_config.conninfo = config->read_database_url;
        pool_config.application = "walklist-read";
        rc = wl_pool_create(&pool_config, &core->read_pool, err);
    }
    if (rc == 0 && (core->database_url = strdup(config->database_url)) == NULL)
        rc = wl_error_set(err, WL_ENOMEM, NULL);
    if (rc != 0) {
        wl_core_destroy(core);
        return rc;
    }
    core->rate_window_ms =
        config->rate_window_ms > 0 ? config->rate_window_ms : WL_CORE_DEFAULT_RATE_WINDOW_MS;
    core->rate_locate_lists = config->rate_locate_lists > 0 ? config->rate_locate_lists
                                                            : WL_CORE_DEFAULT_RATE_LOCATE_LISTS;
    core->rate_stock_export = config->rate_stock_export > 0 ? config->rate_stock_export
                                                            : WL_CORE_DEFAULT_RATE_STOCK_EXPORT;
    core->rate_shared = config->rate_shared > 0 ? config->rate_shared : WL_CORE_DEFAULT_RATE_SHARED;
    int key_ttl_ms =
        config->key_cache_ttl_ms != 0 ? config->key_cache_ttl_ms : WL_CORE_DEFAULT_KEY_CACHE_TTL_MS;
    int lease_ms =
        config->rate_lease_ms != 0 ? config->rate_lease_ms : WL_CORE_DEFAULT_RATE_LEASE_MS;
    rc = wl_rate_leases_create(lease_ms > 0 ? lease_ms : 0, ask_permits, core, &core->leases, err);
    if (rc == 0 && key_ttl_ms > 0)
        rc = wl_key_cache_create(key_ttl_ms, &core->keys, err);
    if (rc == 0)
        rc = wl_announcements_create(config->database_url, core->keys, &core->announcements, err);
    int groups = config->commit_groups != 0 ? config->commit_groups : WL_CORE_DEFAULT_COMMIT_GROUPS;
    if (groups > pool_config.size)
        groups = pool_config.size;
    if (rc == 0)
        rc = wl_admissions_create(core->pool, groups, core->rate_window_ms, &core->admissions, err);
    /* Each committer holds one connection at a time: a worker's pool needs one per committer. */
    wl_pool_config_t node_pools = pool_config;
    node_pools.size = groups > 0 ? groups : 1;
    if (rc == 0)
        rc = wl_shard_placement_create(config->workers_through_coordinator ? NULL : &node_pools,
                                       &core->shards, err);
    if (rc == 0) {
        /* Read by a committer before the first group: requests of one node per group. */
        wl_placement_t placement = wl_shard_placement_of(core->shards);
        wl_admissions_set_placement(core->admissions, &placement);
    }
    if (rc != 0) {
        wl_core_destroy(core);
        return rc;
    }
    *out = core;
    return 0;
}

void wl_core_destroy(wl_core_t *core)
{
    if (core == NULL)
        return;
    wl_announcements_destroy(core->announcements); /* it tells the key cache */
    wl_key_cache_destroy(core->keys);
    wl_rate_leases_destroy(core->leases);
    wl_admissions_destroy(core->admissions);
    wl_shard_placement_destroy(core->shards); /* after the committers that read it */
    wl_pool_destroy(core->read_pool);
    wl_pool_destroy(core->pool);
    for (size_t i = 0; i < WL_SERVICE_COUNT; i++)
        free(core->methods[i]);
    pthread_mutex_destroy(&core->hook_lock);
    pthread_mutex_destroy(&core->ready_lock);
    free(core->database_url);
    free(core);
}

void wl_core_on_export_change(wl_core_t *core, void (*changed)(int64_t org_id, void *data),
                              void *data)
{
    pthread_mutex_lock(&core->hook_lock);
    core->export_changed = changed;
    core->export_changed_data = data;
    pthread_mutex_unlock(&core->hook_lock);
}

void wl_core_pool_stats(wl_core_t *core, int *size, int *in_use, int *open, bool *reachable)
{
    wl_pool_stats_t stats;
    wl_pool_stats(core->pool, &stats);
    *size = stats.size;
    *in_use = stats.in_use;
    *open = stats.open;
    *reachable = !stats.unreachable;
}

void wl_core_pool_borrows(wl_core_t *core, uint64_t *primary, uint64_t *read)
{
    wl_pool_stats_t stats = {0}, read_stats = {0};
    wl_pool_stats(core->pool, &stats);
    if (core->read_pool != NULL)
        wl_pool_stats(core->read_pool, &read_stats);
    *primary = stats.borrows;
    *read = read_stats.borrows;
}

void wl_core_close_database(wl_core_t *core)
{
    wl_pool_close(core->pool);
    if (core->read_pool != NULL)
        wl_pool_close(core->read_pool);
    if (core->shards != NULL)
        wl_shard_placement_close(core->shards);
}

int wl_core_database_busy(wl_core_t *core)
{
    wl_pool_stats_t stats = {0}, read_stats = {0};
    wl_pool_stats(core->pool, &stats);
    if (core->read_pool != NULL)
        wl_pool_stats(core->read_pool, &read_stats);
    int workers = core->shards != NULL ? wl_shard_placement_busy(core->shards) : 0;
    return stats.in_use + read_stats.in_use + workers;
}

void wl_core_admission_stats(wl_core_t *core, uint64_t *commits, uint64_t *requests,
                             uint64_t *on_workers)
{
    wl_admissions_stats_t stats;
    wl_admissions_stats(core->admissions, &stats);
    *commits = stats.commits;
    *requests = stats.requests;
    *on_workers = stats.on_nodes;
}

void wl_core_access_stats(wl_core_t *core, wl_core_access_stats_t *out)
{
    memset(out, 0, sizeof(*out));
    if (core->keys != NULL) {
        wl_key_cache_stats_t keys;
        wl_key_cache_stats(core->keys, &keys);
        out->key_cache_hits = keys.hits;
        out->key_cache_misses = keys.misses;
        out->key_watch_listening = keys.listening;
    }
    wl_rate_leases_stats_t leases;
    wl_rate_leases_stats(core->leases, &leases);
    out->rate_local = leases.local;
    out->rate_round_trips = leases.fetched;
    out->rate_refills = leases.refilled;
}

/* How long the coordinator may try to reach each worker when readiness is checked. */
#define NODE_CONNECT_TIMEOUT_MS 2000

/* Under ready_lock: the workers of a distributed database, reachable or not (wl_core_nodes).
 * A failed check keeps what the last one found. */
static void check_nodes(wl_core_t *core, PGconn *conn)
{
    if (wl_shard_placement_groups(core->shards) == 0) {
        core->node_count = 0;
        return;
    }
    wl_citus_node_t found[WL_CORE_NODES_MAX];
    size_t count = 0;
    wl_error_t err; /* a failed check of the workers leaves readiness as it is */
    wl_error_init(&err);
    if (wl_citus_nodes_check(conn, NODE_CONNECT_TIMEOUT_MS, found, WL_CORE_NODES_MAX, &count,
                             &err) != 0) {
        wl_log("warn", "database nodes not checked", "%s", err.message);
        return;
    }
    for (size_t i = 0; i < count; i++) {
        memcpy(core->nodes[i].address, found[i].address, sizeof(core->nodes[i].address));
        core->nodes[i].reachable = found[i].reachable;
    }
    core->node_count = count;
}

size_t wl_core_worker_routes(wl_core_t *core, wl_core_node_t *out, size_t max)
{
    return core->shards != NULL ? wl_shard_placement_routes(core->shards, out, max) : 0;
}

size_t wl_core_nodes(wl_core_t *core, wl_core_node_t *out, size_t max)
{
    pthread_mutex_lock(&core->ready_lock);
    size_t count = core->node_count;
    for (size_t i = 0; i < count && i < max; i++)
        out[i] = core->nodes[i];
    pthread_mutex_unlock(&core->ready_lock);
    return count;
}

/* The readiness check itself: one statement on the primary (and a connection of the replica). */
static int check_ready(wl_core_t *core, wl_error_t *err)
{
    PGconn *conn = NULL;
    int rc = wl_pool_acquire(core->pool, &conn, err);
    if (rc != 0)
        return rc;
    int pending = 0;
    rc = wl_migrate_ready(conn, &pending, err);
    if (rc == 0)
        check_nodes(core, conn);
    wl_pool_release(core->pool, conn);
    if (rc == 0 && pending > 0)
        rc = wl_error_set(err, WL_EUNAVAILABLE,
                          "database schema is %d migration(s) behind: run walklistctl migrate",
                          pending);
    if (rc == 0 && core->read_pool != NULL) {
        rc = wl_pool_acquire(core->read_pool, &conn, err);
        if (rc == 0)
            wl_pool_release(core->read_pool, conn);
    }
    return rc;
}

/* Under ready_lock: the answer of the last check, checked again when over a second old. */
static int ready_locked(wl_core_t *core, wl_error_t *err)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    if (core->ready_checked_ms == 0 || now_ms - core->ready_checked_ms >= 1000) {
        wl_error_init(&core->ready_err);
        core->ready_rc = check_ready(core, &core->ready_err);
        clock_gettime(CLOCK_MONOTONIC, &now);
        core->ready_checked_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
        atomic_store(&core->ready_last_rc, core->ready_rc);
    }
    if (core->ready_rc != 0)
        wl_error_set(err, core->ready_rc, "%s", core->ready_err.message);
    return core->ready_rc;
}

int wl_core_ready(wl_core_t *core, wl_error_t *err)
{
    /* Probes poll /readyz often and from many places: one check a second answers them all
     * (callers meanwhile wait for the check in flight, then share its answer). */
    pthread_mutex_lock(&core->ready_lock);
    int rc = ready_locked(core, err);
    pthread_mutex_unlock(&core->ready_lock);
    return rc;
}

int wl_core_ready_without_waiting(wl_core_t *core)
{
    int last = atomic_load(&core->ready_last_rc);
    if (last == READY_NEVER_CHECKED)
        pthread_mutex_lock(&core->ready_lock); /* no answer yet: wait for the first */
    else if (pthread_mutex_trylock(&core->ready_lock) != 0)
        return last; /* a check is in flight (or its answer being read): the last one */
    wl_error_t err;
    wl_error_init(&err);
    int rc = ready_locked(core, &err);
    pthread_mutex_unlock(&core->ready_lock);
    return rc;
}

size_t wl_core_services(wl_core_t *core, const wl_service_entry_t **out)
{
    *out = core->services;
    return WL_SERVICE_COUNT;
}

const wl_service_entry_t *wl_core_find_service(wl_core_t *core, const char *full_name)
{
    for (size_t i = 0; i < WL_SERVICE_COUNT; i++) {
        if (strcmp(core->services[i].descriptor->name, full_name) == 0)
            return &core->services[i];
    }
    return NULL;
}

const wl_method_policy_t *wl_core_method_policy(const wl_service_entry_t *service,
                                                unsigned method_index)
{
    if (method_index >= service->descriptor->n_methods)
        return NULL;
    return &service->methods[method_index]->policy;
}
