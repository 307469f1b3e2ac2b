/* Lending libpq connections to request threads, and noticing that the database is gone,
 * happens here. */
#include "store/pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/db.h"
#include "walklist/log.h"
#include "walklist/monotonic.h"

/* While the database cannot be reached, the pool's prober tries to connect this often; an
 * attempt waits this long (then the next starts with a fresh SYN, so that a network that
 * returns is noticed within about a second, not after the kernel's SYN backoff). */
#define PROBE_INTERVAL_MS 250
#define PROBE_TIMEOUT_MS  1500

typedef struct {
    PGconn *conn; /* NULL until first use or after a failure */
    bool in_use;
} pool_slot_t;

typedef enum {
    HEALTH_UP,
    /* A connection broke in use: one server process may have ended, or the server or the
     * network. Borrowers wait for the prober's first attempt (at most a fifth of the timeout). */
    HEALTH_SUSPECT,
    /* A connection could not be made: borrowers are refused at once until one can. */
    HEALTH_DOWN,
} health_t;

struct wl_pool {
    pthread_mutex_t lock;
    pthread_cond_t freed;  /* a slot was given back (signalled), or health changed */
    pthread_cond_t probed; /* health changed (broadcast) */
    pthread_cond_t probe;  /* the prober has work: health is not up, or stop */
    char *conninfo;
    char *application;
    wl_db_connect_t connect;
    int timeout_ms;
    int size;
    int in_use;
    uint64_t borrows; /* successful wl_pool_acquire calls */
    pool_slot_t *slots;
    health_t health;
    bool closed; /* wl_pool_close: refuse every borrower */
    int64_t down_since_ms;
    bool stop;
    pthread_t prober;
};

static void *prober(void *arg);

int wl_pool_create(const wl_pool_config_t *config, wl_pool_t **out, wl_error_t *err)
{
    if (config->size < 1)
        return wl_error_set(err, WL_EINVAL, "pool size must be at least 1");
    /* A connection string libpq cannot read never connects: refused here, not served 503. */
    if (wl_db_check_conninfo(config->conninfo, err) != 0)
        return err->code;
    wl_pool_t *pool = calloc(1, sizeof(*pool));
    if (pool == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    pool->slots = calloc((size_t)config->size, sizeof(*pool->slots));
    pool->conninfo = strdup(config->conninfo ? config->conninfo : "");
    pool->application = strdup(config->application ? config->application : "walklist");
    if (pool->slots == NULL || pool->conninfo == NULL || pool->application == NULL) {
        free(pool->slots);
        free(pool->conninfo);
        free(pool->application);
        free(pool);
        return wl_error_set(err, WL_ENOMEM, NULL);
    }
    pool->size = config->size;
    pool->timeout_ms = config->timeout_ms > 0 ? config->timeout_ms : 5000;
    /* The timeout T is split so that no request waits longer in all: TCP gives up on a silent
     * server in T/2 (keepalives every second on top), an admission's own limit on silence is
     * 4/5 T (admissions.c), row locks are waited for 7/10 T, and after a broken connection a
     * borrower waits T/5 at most for the prober's first attempt. */
    pool->connect = (wl_db_connect_t){
        .conninfo = pool->conninfo,
        .application = pool->application,
        .liveness_timeout_ms = pool->timeout_ms / 2 > 500 ? pool->timeout_ms / 2 : 500,
        .statement_timeout_ms = config->statement_timeout_ms,
        .lock_timeout_ms = pool->timeout_ms * 7 / 10,
        .plan_by_key = true,
        .generic_plans = config->generic_plans,
    };
    pthread_mutex_init(&pool->lock, NULL);
    wl_cond_init_monotonic(&pool->freed);
    wl_cond_init_monotonic(&pool->probed);
    wl_cond_init_monotonic(&pool->probe);
    if (pthread_create(&pool->prober, NULL, prober, pool) != 0) {
        pthread_cond_destroy(&pool->probe);
        pthread_cond_destroy(&pool->freed);
        pthread_cond_destroy(&pool->probed);
        pthread_cond_destroy(&pool->probed);
        pthread_mutex_destroy(&pool->lock);
        free(pool->slots);
        free(pool->conninfo);
        free(pool->application);
        free(pool);
        return wl_error_set(err, WL_EINTERNAL, "cannot start the database prober thread");
    }
    *out = pool;
    return 0;
}

void wl_pool_destroy(wl_pool_t *pool)
{
    if (pool == NULL)
        return;
    pthread_mutex_lock(&pool->lock);
    pool->stop = true;
    pthread_cond_signal(&pool->probe);
    pthread_mutex_unlock(&pool->lock);
    pthread_join(pool->prober, NULL);
    for (int i = 0; i < pool->size; i++)
        wl_db_discard(pool->slots[i].conn);
    pthread_cond_destroy(&pool->probe);
    pthread_cond_destroy(&pool->freed);
    pthread_mutex_destroy(&pool->lock);
    free(pool->slots);
    free(pool->conninfo);
    free(pool->application);
    free(pool);
}

/* Waits on cond until deadline_ms (wl_db_clock_ms); ETIMEDOUT once it has passed. */
static int wait_until(pthread_cond_t *cond, pthread_mutex_t *lock, int64_t deadline_ms)
{
    struct timespec until = {.tv_sec = deadline_ms / 1000,
                             .tv_nsec = (long)(deadline_ms % 1000) * 1000000L};
    int rc = pthread_cond_timedwait(cond, lock, &until);
    return rc == ETIMEDOUT || wl_db_clock_ms() >= deadline_ms ? ETIMEDOUT : 0;
}

/* Health changed (lock held). Idle connections made before a failure are not trusted (across
 * a partition they look alive and hang their next borrower), and every waiter looks again. */
static void set_health(wl_pool_t *pool, health_t health, const char *why)
{
    if (health == pool->health)
        return;
    if (health == HEALTH_DOWN) {
        pool->down_since_ms = wl_db_clock_ms();
        wl_log("warn", "database unreachable",
               "%s: %s; requests that need it are refused 503 until a new connection works",
               pool->application, why != NULL && why[0] != '\0' ? why : "connection lost");
    } else if (pool->health == HEALTH_DOWN) {
        wl_log("info", "database reachable", "%s: again after %lld ms", pool->application,
               (long long)(wl_db_clock_ms() - pool->down_since_ms));
    }
    if (health != HEALTH_UP) {
        for (int i = 0; i < pool->size; i++) {
            if (!pool->slots[i].in_use && pool->slots[i].conn != NULL) {
                wl_db_discard(pool->slots[i].conn);
                pool->slots[i].conn = NULL;
            }
        }
        pthread_cond_signal(&pool->probe);
    }
    pool->health = health;
    pthread_cond_broadcast(&pool->freed);
    pthread_cond_broadcast(&pool->probed);
}

/* Puts a connection the prober made into a free slot (lock held); false when none is free. */
static bool adopt(wl_pool_t *pool, PGconn *conn)
{
    for (int i = 0; i < pool->size; i++) {
        if (!pool->slots[i].in_use && pool->slots[i].conn == NULL) {
            pool->slots[i].conn = conn;
            return true;
        }
    }
    return false;
}

/*
 * The prober: while the database is not known to be reachable it connects afresh (only a new
 * connection shows that the server answers; an old one looks alive across a partition), every
 * PROBE_INTERVAL_MS at most. Borrowers never wait on the network themselves meanwhile: after
 * a broken connection they wait for the first attempt only (a server that answers at once costs
 * no 503), after a failed one they are refused at once.
 */
static void *prober(void *arg)
{
    wl_pool_t *pool = arg;
    pthread_mutex_lock(&pool->lock);
    while (!pool->stop) {
        /* A closed pool lends nothing again: nothing to probe for. */
        if (pool->health == HEALTH_UP || pool->closed) {
            pthread_cond_wait(&pool->probe, &pool->lock);
            continue;
        }
        pthread_mutex_unlock(&pool->lock);
        int64_t started = wl_db_clock_ms();
        wl_error_t err;
        wl_error_init(&err);
        int attempt_ms = PROBE_TIMEOUT_MS < pool->connect.liveness_timeout_ms
                             ? PROBE_TIMEOUT_MS
                             : pool->connect.liveness_timeout_ms;
        char why[256] = "";
        PGconn *conn = wl_db_connect(&pool->connect, started + attempt_ms, &err, why, sizeof(why));
        pthread_mutex_lock(&pool->lock);
        if (conn != NULL) {
            if (!adopt(pool, conn))
                wl_db_discard(conn);
            set_health(pool, HEALTH_UP, NULL);
            continue;
        }
        set_health(pool, HEALTH_DOWN, why);
        if (!pool->stop)
            wait_until(&pool->probe, &pool->lock, started + PROBE_INTERVAL_MS);
    }
    pthread_mutex_unlock(&pool->lock);
    return NULL;
}

/* Waits (lock held) until this borrower may take a slot; false with err set when it is
 * refused. */
static bool wait_for_turn(wl_pool_t *pool, int64_t deadline_ms, wl_error_t *err)
{
    int64_t suspect_until = wl_db_clock_ms() + pool->timeout_ms / 5;
    if (suspect_until > deadline_ms)
        suspect_until = deadline_ms;
    for (;;) {
        if (pool->closed) {
            wl_error_set(err, WL_EUNAVAILABLE, "shutting down: not sent to the database");
            return false;
        }
        if (pool->health == HEALTH_DOWN) {
            wl_error_set(err, WL_EUNAVAILABLE, "database unavailable");
            return false;
        }
        if (pool->health == HEALTH_SUSPECT) {
            if (wait_until(&pool->probed, &pool->lock, suspect_until) == ETIMEDOUT &&
                pool->health == HEALTH_SUSPECT) {
                wl_error_set(err, WL_EUNAVAILABLE, "database unavailable: no answer in time");
                return false;
            }
            continue;
        }
        if (pool->in_use < pool->size)
            return true;
        if (wait_until(&pool->freed, &pool->lock, deadline_ms) == ETIMEDOUT) {
            wl_error_set(err, WL_EUNAVAILABLE, "no database connection free in time");
            return false;
        }
    }
}

int wl_pool_acquire(wl_pool_t *pool, PGconn **out, wl_error_t *err)
{
    int64_t deadline_ms = wl_db_clock_ms() + pool->timeout_ms;
    pthread_mutex_lock(&pool->lock);
    if (!wait_for_turn(pool, deadline_ms, err)) {
        pthread_mutex_unlock(&pool->lock);
        return err->code;
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

    if (conn != NULL && !wl_db_idle_usable(conn)) {
        wl_db_discard(conn);
        conn = NULL;
    }
    /* A new connection gets as long as a statement would to hear from a silent server. */
    int64_t connect_until = wl_db_clock_ms() + pool->connect.liveness_timeout_ms;
    char why[256] = "";
    if (conn == NULL)
        conn =
            wl_db_connect(&pool->connect, connect_until < deadline_ms ? connect_until : deadline_ms,
                          err, why, sizeof(why));

    pthread_mutex_lock(&pool->lock);
    if (conn == NULL) {
        slot->in_use = false;
        pool->in_use--;
        set_health(pool, HEALTH_DOWN, why);
        pthread_cond_signal(&pool->freed);
        pthread_mutex_unlock(&pool->lock);
        return err->code != 0 ? err->code : WL_EUNAVAILABLE;
    }
    slot->conn = conn;
    pool->borrows++;
    pthread_mutex_unlock(&pool->lock);
    /* A statement may take up to its statement_timeout, which a server that stopped cannot
     * enforce: past that and the liveness timeout of silence, it is given up on here. */
    wl_db_set_silence_limit(conn, pool->connect.statement_timeout_ms > 0
                                      ? pool->connect.statement_timeout_ms +
                                            pool->connect.liveness_timeout_ms
                                      : 0);
    *out = conn;
    return 0;
}

void wl_pool_release(wl_pool_t *pool, PGconn *conn)
{
    if (conn == NULL)
        return;
    bool broken = PQstatus(conn) != CONNECTION_OK && !wl_db_abandoned(conn);
    bool reusable = !broken && PQtransactionStatus(conn) == PQTRANS_IDLE &&
                    PQpipelineStatus(conn) == PQ_PIPELINE_OFF;
    pthread_mutex_lock(&pool->lock);
    reusable = reusable && !pool->closed;
    for (int i = 0; i < pool->size; i++) {
        pool_slot_t *slot = &pool->slots[i];
        if (slot->conn != conn)
            continue;
        if (!reusable) {
            wl_db_discard(conn);
            slot->conn = NULL;
        }
        slot->in_use = false;
        pool->in_use--;
        pthread_cond_signal(&pool->freed);
        break;
    }
    if (broken && pool->health == HEALTH_UP)
        set_health(pool, HEALTH_SUSPECT, NULL);
    pthread_mutex_unlock(&pool->lock);
}

void wl_pool_close(wl_pool_t *pool)
{
    pthread_mutex_lock(&pool->lock);
    pool->closed = true;
    for (int i = 0; i < pool->size; i++) {
        pool_slot_t *slot = &pool->slots[i];
        if (!slot->in_use && slot->conn != NULL) {
            wl_db_discard(slot->conn);
            slot->conn = NULL;
        }
    }
    pthread_cond_broadcast(&pool->freed);
    pthread_cond_signal(&pool->probe);
    pthread_mutex_unlock(&pool->lock);
}

int wl_pool_timeout_ms(const wl_pool_t *pool)
{
    return pool->timeout_ms;
}

void wl_pool_stats(wl_pool_t *pool, wl_pool_stats_t *out)
{
    pthread_mutex_lock(&pool->lock);
    out->size = pool->size;
    out->in_use = pool->in_use;
    out->open = 0;
    for (int i = 0; i < pool->size; i++)
        out->open += pool->slots[i].conn != NULL;
    out->unreachable = pool->health == HEALTH_DOWN;
    out->borrows = pool->borrows;
    pthread_mutex_unlock(&pool->lock);
}
