/*
 * Letting requests in, in the database (wl_admit): a group of
 * requests checked, counted and served in one statement, so one round trip
 * and one durable commit for all of them. Each request brings what its
 * process could not decide alone: its key (when not known), its rate-limit
 * ask (when no leased permit was at hand), and the work it does once let in
 * (a walk list inserted or read).
 */
#ifndef WALKLIST_STORE_ADMIT_H
#define WALKLIST_STORE_ADMIT_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/keys.h"
#include "store/lists.h"
#include "store/rate_limits.h"
#include "walklist/arena.h"
#include "walklist/error.h"
#include "walklist/scopes.h"
#include "walklist/span.h"

/** Requests admitted together at most. */
#define WL_ADMIT_BATCH_MAX 64

typedef enum {
    WL_ADMIT_TAKE,   /* the decision only */
    WL_ADMIT_CREATE, /* and, when let in, insert the list */
    WL_ADMIT_GET,    /* and, when let in, read the list */
} wl_admit_action_t;

/** One request of a group: caller-allocated, valid until wl_admit_batch returns. */
typedef struct {
    /* The key: its prefix and digest when the process does not know it (org_id 0), else the
     * organization the known key belongs to. */
    char prefix[WL_KEY_PREFIX_LEN + 1];
    unsigned char digest[WL_KEY_DIGEST_SIZE];
    int64_t org_id;
    unsigned scope; /* the scope bits the action needs, checked here for an unknown key */
    const char *bucket;
    int limit;
    const wl_rate_ask_t *ask; /* NULL: the process decided the rate limit already */
    wl_admit_action_t action;
    const char *list_id; /* CREATE, GET */
    const char *list_name;
    const wl_span_t *codes; /* CREATE */
    size_t codes_count;
    wl_arena_t *arena; /* GET: where the list read goes */
    /* When the request's answer is due (wl_db_clock_ms; 0: none): a request whose group would
     * start too late for it is answered WL_ETIMEDOUT without running (services/admissions.c). */
    int64_t deadline_ms;

    /* What became of it. rc: 0 when the statement ran (the answers below are then set), else
     * the WL_E* code in err (nothing of this request was committed, or, for WL_EUNAVAILABLE,
     * maybe committed). */
    int rc;
    wl_error_t *err;
    bool key_valid;           /* the key is known here, or was found active */
    wl_principal_t principal; /* org_id always; slug and scopes of a key checked here */
    bool asked;               /* grant holds the database's answer to ask */
    wl_rate_grant_t grant;
    bool done;             /* the action was carried out (GET: and the list exists) */
    wl_list_record_t list; /* CREATE: created_ms; GET: the list read */
} wl_admit_t;

/**
 * Runs up to WL_ADMIT_BATCH_MAX requests in one statement and sets each one's
 * rc and answers; window_ms is the rolling window of every bucket. When that statement fails, each
 * request runs alone so that one request's failure is only its own; on a lost connection every
 * request fails with WL_EUNAVAILABLE.
 */
void wl_admit_batch(PGconn *conn, int window_ms, wl_admit_t *const *requests, int count);

#endif
