/*
 * Group commit for walk-list creation: lists created at the same moment by
 * different requests are inserted together, in one pipeline with one durable
 * commit, and each request is answered after that commit. Nobody waits for a
 * group to fill: a request leads a group itself when fewer than `groups`
 * commits are in flight, and otherwise joins the next group, which the first
 * request left waiting leads as soon as a commit finishes. At low load every
 * list therefore commits alone, as before; under a burst, PostgreSQL does one
 * commit (and one round trip) for many lists.
 */
#ifndef WALKLIST_SERVICES_LIST_COMMITS_H
#define WALKLIST_SERVICES_LIST_COMMITS_H

#include <stdint.h>

#include "store/lists.h"
#include "store/pool.h"
#include "walklist/error.h"

typedef struct wl_list_commits wl_list_commits_t;

typedef struct {
    uint64_t commits; /* groups committed (or failed) */
    uint64_t lists;   /* lists in them */
    int waiting;      /* lists queued for the next group right now */
} wl_list_commits_stats_t;

/** groups: commits in flight at most (>= 1); connections come from pool. */
int wl_list_commits_create(wl_pool_t *pool, int groups, wl_list_commits_t **out,
                           wl_error_t *err) WL_CHECK_RESULT;
void wl_list_commits_destroy(wl_list_commits_t *commits);

/**
 * Inserts a list prepared with wl_list_insert_init and returns once it is
 * committed (0, list->created_ms set) or failed (the WL_E* code in list->err).
 */
int wl_list_commits_insert(wl_list_commits_t *commits, wl_list_insert_t *list) WL_CHECK_RESULT;

void wl_list_commits_stats(wl_list_commits_t *commits, wl_list_commits_stats_t *out);

#endif
