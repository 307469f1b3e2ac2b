/*
 * A small, thread-safe pool of libpq connections. Connections open lazily and
 * reopen after a failure, so the service recovers by itself when PostgreSQL
 * returns. Callers borrow one connection per request and give it back.
 *
 * Nothing waits on an unreachable database for longer than the pool's timeout:
 * connections carry TCP keepalives and a user timeout (a silent server fails a
 * call in 3/5 of it). Once a connection breaks in use, borrowers wait for the
 * pool's prober thread to try a new connection (a server that answers costs
 * no 503); once an attempt fails, they are refused at once (instead of each
 * waiting out the network) until the prober connects again.
 */
#ifndef WALKLIST_STORE_POOL_H
#define WALKLIST_STORE_POOL_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "walklist/error.h"

typedef struct wl_pool wl_pool_t;

typedef struct {
    const char *conninfo;     /* libpq conninfo string or URI; copied */
    const char *application;  /* application_name, default "walklist" */
    int size;                 /* connections at most, >= 1 */
    int timeout_ms;           /* how long a borrower waits to reach the database, default 5000 */
    int statement_timeout_ms; /* 0: none */
    bool generic_plans;       /* wl_db_connect_t.generic_plans */
} wl_pool_config_t;

typedef struct {
    int size;
    int in_use;
    int open;         /* connections currently established */
    bool unreachable; /* the last attempt to reach the database failed */
    uint64_t borrows; /* connections lent since the pool was made (wl_pool_acquire succeeded) */
} wl_pool_stats_t;

int wl_pool_create(const wl_pool_config_t *config, wl_pool_t **out,
                   wl_error_t *err) WL_CHECK_RESULT;
void wl_pool_destroy(wl_pool_t *pool);

/**
 * Borrows a connected connection. WL_EUNAVAILABLE when no connection frees up
 * in time or PostgreSQL cannot be reached (err says which).
 */
int wl_pool_acquire(wl_pool_t *pool, PGconn **out, wl_error_t *err) WL_CHECK_RESULT;

/**
 * Gives a connection back. A connection that is not idle (open transaction,
 * broken socket) is closed so that the next borrower starts clean; a broken
 * one also makes the pool probe the database before it lends again.
 */
void wl_pool_release(wl_pool_t *pool, PGconn *conn);

void wl_pool_stats(wl_pool_t *pool, wl_pool_stats_t *out);

/** The pool's timeout (wl_pool_config_t.timeout_ms, after defaults). */
int wl_pool_timeout_ms(const wl_pool_t *pool);

/** From now on every borrower is refused (WL_EUNAVAILABLE): nothing more reaches the database
 * through this pool. Its idle connections are closed, and so is each one lent out when its
 * borrower gives it back (shutdown, a worker gone from the cluster); nothing is probed. */
void wl_pool_close(wl_pool_t *pool);

#endif
