/*
 * A small, thread-safe pool of libpq connections. Connections open lazily and
 * reopen after a failure, so the service recovers by itself when PostgreSQL
 * returns. Callers borrow one connection per request and give it back.
 */
#ifndef WALKLIST_STORE_POOL_H
#define WALKLIST_STORE_POOL_H

#include <libpq-fe.h>
#include <stdbool.h>

#include "walklist/error.h"

typedef struct wl_pool wl_pool_t;

typedef struct {
    const char *conninfo;       /* libpq conninfo string or URI; copied */
    int size;                   /* connections at most, >= 1 */
    int acquire_timeout_ms;     /* how long acquire waits for a free connection */
    int connect_timeout_s;      /* libpq connect_timeout, >= 2 (libpq rounds smaller up) */
    int statement_timeout_ms;   /* 0: none */
} wl_pool_config_t;

typedef struct {
    int size;
    int in_use;
    int open; /* connections currently established */
} wl_pool_stats_t;

int wl_pool_create(const wl_pool_config_t *config, wl_pool_t **out, wl_error_t *err)
    WL_CHECK_RESULT;
void wl_pool_destroy(wl_pool_t *pool);

/**
 * Borrows a connected connection. WL_EUNAVAILABLE when no connection frees up
 * in time or PostgreSQL cannot be reached (err says which).
 */
int wl_pool_acquire(wl_pool_t *pool, PGconn **out, wl_error_t *err) WL_CHECK_RESULT;

/**
 * Gives a connection back. A connection that is not idle (open transaction,
 * broken socket) is closed so that the next borrower starts clean.
 */
void wl_pool_release(wl_pool_t *pool, PGconn *conn);

void wl_pool_stats(wl_pool_t *pool, wl_pool_stats_t *out);

#endif
