/*
 * The process's upkeep loop: one thread that polls the descriptors and keeps the clocks of the
 * chores that need no request thread, the way pgbouncer's janitor does all its maintenance from
 * one loop. Its chores today: lingering closes (http/linger.c) and the heartbeat and stall clock
 * of stock watchers (export/stock_watch.c).
 *
 * The loop is the process's, not an owner's: the first chore added starts its thread and the
 * last one removed stops it, so that modules whose constructors take no loop can share it.
 *
 * A chore is two functions, called on the loop's thread under the loop's lock (so neither runs
 * again once wl_upkeep_remove returns; they must not add or remove chores):
 * - prepare(fds, room, due_ms, data): before each poll, fills at most room descriptors to poll
 *   and returns how many, and sets *due_ms (CLOCK_MONOTONIC milliseconds, as wl_upkeep_now_ms)
 *   to when it wants to run at the latest; left at -1, it waits for its descriptors only.
 * - run(fds, count, now_ms, data): after each poll, with the descriptors it prepared and their
 *   revents, whether or not anything happened (a chore keeps its own deadlines).
 * A chore whose descriptors or deadline change between two polls (a new lingering connection,
 * a first watcher) calls wl_upkeep_wake, from any thread.
 */
#ifndef WALKLIST_GATEWAY_UPKEEP_H
#define WALKLIST_GATEWAY_UPKEEP_H

#include <poll.h>
#include <stdint.h>

#include "walklist/error.h"

typedef struct {
    int (*prepare)(struct pollfd *fds, int room, int64_t *due_ms, void *data);
    void (*run)(const struct pollfd *fds, int count, int64_t now_ms, void *data);
    void *data;
} wl_upkeep_hooks_t;

typedef struct wl_upkeep_chore wl_upkeep_chore_t;

/** Adds a chore (hooks copied) to the loop, starting the loop when it is the first. */
int wl_upkeep_add(const wl_upkeep_hooks_t *hooks, wl_upkeep_chore_t **out,
                  wl_error_t *err) WL_CHECK_RESULT;

/** Removes the chore (the loop stops with the last one); NULL is fine. */
void wl_upkeep_remove(wl_upkeep_chore_t *chore);

/** Has the loop prepare every chore again now. */
void wl_upkeep_wake(wl_upkeep_chore_t *chore);

/** The loop's clock: CLOCK_MONOTONIC in milliseconds. */
int64_t wl_upkeep_now_ms(void);

#endif
