/*
 * Group commit for letting requests in (store/admit.h): requests that need the
 * database at the same moment (a key to check, a rate-limit decision, a walk
 * list to insert or read) go together, in one statement with one durable
 * commit, and each is answered after that commit. Nobody waits for a group to
 * fill: `groups` committer threads each take whatever is queued (at least one
 * request), commit it as one group and answer its requests, so at most
 * `groups` commits are in flight; only while other groups commit does a
 * committer wait for the queue to hold half as many requests as they do
 * (admission_queue.h). At low load every request therefore commits alone;
 * under a burst, PostgreSQL does one commit (and one round trip) for many
 * requests, and a request costs its thread one wake-up.
 */
#ifndef WALKLIST_SERVICES_ADMISSIONS_H
#define WALKLIST_SERVICES_ADMISSIONS_H

#include <stdint.h>

#include "store/admit.h"
#include "store/pool.h"
#include "walklist/error.h"

typedef struct wl_admissions wl_admissions_t;

typedef struct {
    uint64_t commits;  /* groups committed (or failed) */
    uint64_t requests; /* requests in them */
    uint64_t on_nodes; /* of the commits, those sent straight to the node holding their rows
                        * (placement pool_of), not through the pool's server */
    int waiting;       /* requests queued for the next group right now */
} wl_admissions_stats_t;

/** Committer threads (and so commits in flight) at most. */
#define WL_ADMIT_GROUPS_MAX 64

/** groups: committer threads, commits in flight at most (>= 1; < 1: every request commits
 * alone, in its own thread); connections come from pool; window_ms: every bucket's rolling
 * window. */
int wl_admissions_create(wl_pool_t *pool, int groups, int window_ms, wl_admissions_t **out,
                         wl_error_t *err) WL_CHECK_RESULT;
void wl_admissions_destroy(wl_admissions_t *admissions);

/**
 * Runs the request with whatever other requests are waiting and returns once
 * their commit is done: request->rc is 0 and its answers are set, or the
 * WL_E* code is in request->err.
 */
int wl_admissions_run(wl_admissions_t *admissions, wl_admit_t *request) WL_CHECK_RESULT;

/* A request queued without waiting for it (wl_admissions_queue): caller-owned until done. */
typedef struct wl_admission_waiter {
    wl_admit_t *request;
    /* Where the request's organization lives (wl_admissions_set_placement), set when queued:
     * a group holds requests of one placement only (admission_queue.h). */
    int64_t placement;
    bool placement_asked;  /* the organization of its key's prefix was looked up */
    int64_t placement_org; /* the organization it was placed by (its own, or its prefix's) */
    /* Called once on a committer thread when the request's group committed (or failed), as
     * the last touch of the waiter: the waiter may be freed from then on. */
    void (*done)(struct wl_admission_waiter *waiter);
    struct wl_admission_waiter *next;
} wl_admission_waiter_t;

/**
 * Queues waiter->request for the next group and returns at once; waiter->done reports the
 * outcome as wl_admissions_run would return it (request->rc, request->err). Without committer
 * threads (groups < 1) the request commits alone, in the caller's thread, before this returns.
 */
void wl_admissions_queue(wl_admissions_t *admissions, wl_admission_waiter_t *waiter);

void wl_admissions_stats(wl_admissions_t *admissions, wl_admissions_stats_t *out);

/**
 * Where organizations' rows live, as a number (a distributed database's node group): groups
 * then hold requests of one placement only, so that each group's transaction touches one node,
 * commits without two-phase commit, and fails alone when another node is down. Without it (one
 * server) every request has the same placement and a group is simply the oldest requests.
 */
typedef struct {
    /* From memory, on any thread: whether rows are on more than one node now (else every
     * request has one placement), and the placement of an organization's rows
     * (WL_PLACEMENT_ALONE when not known). */
    bool (*distributed)(void *data);
    int64_t (*place)(int64_t org_id, void *data);
    /* On a committer thread with a connection of the pool, at most every refresh_ms: brings
     * what place answers from up to date (a rebalanced cluster moves rows between nodes).
     * Failing, it keeps what it had. */
    void (*refresh)(PGconn *conn, void *data);
    /* From memory, on a committer thread: the connections to use for a group of this
     * placement (the node holding its rows), or NULL for the pool's (the coordinator). A pool
     * that cannot lend one in time leaves the group to the coordinator's. May be NULL. */
    wl_pool_t *(*pool_of)(int64_t placement, void *data);
    int refresh_ms;
    void *data;
} wl_placement_t;

/**
 * Sets the placement, before requests are queued. A request whose key this process has not
 * checked (org_id 0) is placed by its key's prefix, looked up by a committer with the prefixes
 * of the other such requests waiting (one statement, no node but the coordinator); a prefix of
 * no active key goes in a group of its own, where its check refuses it.
 */
void wl_admissions_set_placement(wl_admissions_t *admissions, const wl_placement_t *placement);

/** A request's budget for its admission, from when it is queued: 4/5 of the pool's timeout. A
 * group waits for a silent server that long at most; a request that waited for a group is
 * given what is left of it. */
int wl_admissions_budget_ms(const wl_admissions_t *admissions);

#endif
