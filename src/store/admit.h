/*
 * Letting requests in, in the database (wl_admit): a group of
 * requests checked, counted and served in one statement, so one round trip
 * and one durable commit for all of them. Each request brings what its
 * process could not decide alone: its key (when not known), its rate-limit
 * ask (when no leased permit was at hand), and the work it does once let in
 * (wl_admit_work_t: a walk list inserted or read, say).
 */
#ifndef WALKLIST_STORE_ADMIT_H
#define WALKLIST_STORE_ADMIT_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/keys.h"
#include "store/rate_limits.h"
#include "walklist/arena.h"
#include "walklist/error.h"
#include "walklist/scopes.h"
#include "walklist/span.h"

/** Requests admitted together at most. */
#define WL_ADMIT_BATCH_MAX 64

/*
 * The work a request does in its group's statement once it is let in. The statement
 * (wl_admit.sql) knows each kind by name; the work's owner (store/lists.c: a walk list inserted
 * or read) fills its arguments and reads its answer, so letting requests in knows nothing of
 * what they do. Owned by the request's caller, alive until its request is answered.
 */
typedef struct wl_admit_work {
    const char *kind;        /* the statement's name for it ("create", "get") */
    int64_t org_id;          /* whose it is, when no admission of the request says so */
    const char *subject;     /* the row it is about (a list's id) */
    const char *label;       /* a name it writes, or NULL */
    const wl_span_t *values; /* what it writes, value_count of them (NULL: none) */
    size_t value_count;
    /* Reads its answer from row of the group's result, whose work columns start at column,
     * once the statement did it: 0 or a WL_E* code. On the committer's thread. */
    int (*read_answer)(struct wl_admit_work *work, const PGresult *res, int row, int column);
    bool done; /* out: the statement did it (let in, and for a read: found) */
} wl_admit_work_t;

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
    wl_admit_work_t *work;    /* NULL: the decision only */
    /* On a distributed database reached through its coordinator, an organization whose node
     * the group's rows are on: the group runs there (wl_admit_at). 0: the statement runs where
     * the connection is (one server, or the node itself). The same for every request of a
     * group (the first one's is used). */
    int64_t node_org;
    /* When the request's answer is due (wl_db_clock_ms; 0: none): a request whose group would
     * start too late for it is answered WL_ETIMEDOUT without running (services/admissions.c). */
    int64_t deadline_ms;

    /* What became of it. rc: 0 when the statement ran (the answers below are then set), else
     * the WL_E* code in err (nothing of this request was committed, or, for WL_EUNAVAILABLE,
     * maybe committed). */
    int rc;
    wl_error_t *err;
    /* Set before the group (services/admission_queue.h): a key the process did not know, checked
     * by the lookup that placed it; org_id is then its organization, and checked what the
     * statement would have answered of the key (its slug and scopes). */
    bool key_checked;
    wl_principal_t checked;
    bool key_valid;           /* the key is known here, or was found active */
    wl_principal_t principal; /* org_id always; slug and scopes of a key checked here */
    bool asked;               /* grant holds the database's answer to ask */
    wl_rate_grant_t grant;
} wl_admit_t;

/**
 * Runs up to WL_ADMIT_BATCH_MAX requests in one statement and sets each one's
 * rc and answers; window_ms is the rolling window of every bucket. When that statement fails, each
 * request runs alone so that one request's failure is only its own; on a lost connection every
 * request fails with WL_EUNAVAILABLE.
 */
void wl_admit_batch(PGconn *conn, int window_ms, wl_admit_t *const *requests, int count);

#endif
