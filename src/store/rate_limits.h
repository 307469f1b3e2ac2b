/*
 * The rate-limit counts in the database (shared by every walklistd): one call counts
 * up to a number of requests against an organization's bucket, as many as fit
 * in the rolling window, optionally as a lease of permits a process spends
 * later (src/store/functions/wl_admit.sql explains why that keeps the
 * guarantee).
 */
#ifndef WALKLIST_STORE_RATE_LIMITS_H
#define WALKLIST_STORE_RATE_LIMITS_H

#include <libpq-fe.h>
#include <stdint.h>

#include "walklist/error.h"

#define WL_RATE_STAMP_SIZE 48

typedef struct {
    int want;              /* permits asked for, >= 1 */
    int hold_ms;           /* the longest the caller will hold them before spending; 0: now */
    const char *return_at; /* unspent permits of an earlier lease: its counted_at, or NULL */
    int return_count;
} wl_rate_ask_t;

typedef struct {
    int granted;                         /* 0: the bucket is full */
    int used;                            /* requests counted in the window, these included */
    int64_t reset_ms;                    /* until the oldest counted request leaves the window */
    char counted_at[WL_RATE_STAMP_SIZE]; /* the database's stamp of this grant, to return permits */
} wl_rate_grant_t;

int wl_rate_take(PGconn *conn, int64_t org_id, const char *bucket, int limit, int window_ms,
                 const wl_rate_ask_t *ask, wl_rate_grant_t *out, wl_error_t *err) WL_CHECK_RESULT;

#endif
