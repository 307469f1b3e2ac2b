/* Lending libpq connections to request threads happens here. */
#include "store/pool.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/db.h"

typedef struct {
    PGconn *conn; /* NULL until first use or after a failure */
    bool in_use;
} pool_slot_t;

struct wl_pool {
    pthread_mutex_t lock;
    pthread_cond_t freed;
    char *conninfo;
    int acquire_timeout_ms;
    int connect_timeout_s;
    int statement_timeout_ms;
    int size;
    int in_use;
    pool_slot_t *slots;
};

int wl_pool_create(const wl_pool_config_t *config, wl_pool_t **out, wl_error_t *err)
{
    if (config->size < 1)
        return wl_error_set(err, WL_EINVAL, "pool size must be at least 1");
    wl_pool_t *pool = calloc(1, sizeof(*pool));
    if (pool == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    pool->slots = calloc((size_t)config->size, sizeof(*pool->slots));
    pool->conninfo = strdup(config->conninfo ? config->conninfo : "");
    if (pool->slots == NULL || pool->conninfo == NULL) {
        free(pool->slots);
        free(pool->conninfo);
        free(pool);
        return wl_error_set(err, WL_ENOMEM, NULL);
    }
    pool->size = config->size;
    pool->acquire_timeout_ms = config->acquire_timeout_ms > 0 ? config->acquire_timeout_ms : 5000;
    pool->connect_timeout_s = config->connect_timeout_s >= 2 ? config->connect_timeout_s : 2;
    pool->statement_timeout_ms = config->statement_timeout_ms;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->freed, NULL);
    *out = pool;
    return 0;
}

void wl_pool_destroy(wl_pool_t *pool)
{
    if (pool == NULL)
        return;
    for (int i = 0; i < pool->size; i++) {
        if (pool->slots[i].conn != NULL)
            PQfinish(pool->slots[i].conn);
    }
    pthread_cond_destroy(&pool->freed);
    pthread_mutex_destroy(&pool->lock);
    free(pool->slots);
    free(pool->conninfo);
    free(pool);
}

static PGconn *connect_slot(wl_pool_t *pool, wl_error_t *err)
{
    char connect_timeout[16], options[64];
    snprintf(connect_timeout, sizeof(connect_timeout), "%d", pool->connect_timeout_s);
    snprintf(options, sizeof(options), "-c statement_timeout=%d", pool->statement_timeout_ms);
    /* expand_dbname lets the conninfo be a URI or key=value string; the keywords
     * after it override what it says. */
    const char *keys[] = {"dbname", "connect_timeout", "options", "application_name", NULL};
    const char *values[] = {pool->conninfo, connect_timeout, options, "walklist", NULL};
    PGconn *conn = PQconnectdbParams(keys, values, 1);
    if (conn == NULL) {
        wl_error_set(err, WL_ENOMEM, NULL);
        return NULL;
    }
    if (PQstatus(conn) != CONNECTION_OK) {
        wl_error_set(err, WL_EUNAVAILABLE, "database unavailable");
        PQfinish(conn);
        return NULL;
    }
    wl_db_log_notices(conn);
    return conn;
}

/*
 * An idle connection has nothing to read unless the server closed it (a restart
 * or crash sends a FATAL and EOF). Checking is one poll(2); it spares the
 * borrower a 503 for a connection that died while idle.
 */
static bool still_connected(PGconn *conn)
{
    if (PQstatus(conn) != CONNECTION_OK)
        return false;
    struct pollfd pfd = {.fd = PQsocket(conn), .events = POLLIN};
    int ready = poll(&pfd, 1, 0);
    if (ready == 0)
        return true;
    if (ready < 0 || (pfd.revents & (POLLERR | POLLHUP | POLLNVAL)))
        return false;
    return PQconsumeInput(conn) == 1 && PQstatus(conn) == CONNECTION_OK && !PQisBusy(conn) &&
           PQnotifies(conn) == NULL;
}

int wl_pool_acquire(wl_pool_t *pool, PGconn **out, wl_error_t *err)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += pool->acquire_timeout_ms / 1000;
    deadline.tv_nsec += (long)(pool->acquire_timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }

    pthread_mutex_lock(&pool->lock);
    while (pool->in_use == pool->size) {
        if (pthread_cond_timedwait(&pool->freed, &pool->lock, &deadline) == ETIMEDOUT &&
            pool->in_use == pool->size) {
            pthread_mutex_unlock(&pool->lock);
            return wl_error_set(err, WL_EUNAVAILABLE, "no database connection free in time");
        }
    }
    /* Prefer a slot that is already connected. */
    pool_slot_t *slot = NULL;
    for (int i = 0; i < pool->size; i++) {
        if (pool->slots[i].in_use)
            continue;
        if (slot == NULL || (slot->conn == NULL && pool->slots[i].conn != NULL))
            slot = &pool->slots[i];
    }
    slot->in_use = true;
    pool->in_use++;
    PGconn *conn = slot->conn;
    slot->conn = NULL;
    pthread_mutex_unlock(&pool->lock);

    if (conn != NULL && !still_connected(conn)) {
        PQfinish(conn);
        conn = NULL;
    }
    if (conn == NULL)
        conn = connect_slot(pool, err);

    pthread_mutex_lock(&pool->lock);
    if (conn == NULL) {
        slot->in_use = false;
        pool->in_use--;
        pthread_cond_signal(&pool->freed);
        pthread_mutex_unlock(&pool->lock);
        return err->code != 0 ? err->code : WL_EUNAVAILABLE;
    }
    slot->conn = conn;
    pthread_mutex_unlock(&pool->lock);
    *out = conn;
    return 0;
}

void wl_pool_release(wl_pool_t *pool, PGconn *conn)
{
    if (conn == NULL)
        return;
    bool reusable = PQstatus(conn) == CONNECTION_OK && PQtransactionStatus(conn) == PQTRANS_IDLE &&
                    PQpipelineStatus(conn) == PQ_PIPELINE_OFF;
    pthread_mutex_lock(&pool->lock);
    for (int i = 0; i < pool->size; i++) {
        pool_slot_t *slot = &pool->slots[i];
        if (slot->conn != conn)
            continue;
        if (!reusable) {
            PQfinish(conn);
            slot->conn = NULL;
        }
        slot->in_use = false;
        pool->in_use--;
        pthread_cond_signal(&pool->freed);
        break;
    }
    pthread_mutex_unlock(&pool->lock);
}

void wl_pool_stats(wl_pool_t *pool, wl_pool_stats_t *out)
{
    pthread_mutex_lock(&pool->lock);
    out->size = pool->size;
    out->in_use = pool->in_use;
    out->open = 0;
    for (int i = 0; i < pool->size; i++)
        out->open += pool->slots[i].conn != NULL;
    pthread_mutex_unlock(&pool->lock);
}
