/*
 * The registry of stock watchers (StockService.WatchStock streams): which stream watches which
 * organization, and when each must be woken. An idle stream holds no thread: its connection is
 * suspended and its watcher parked here. A parked watcher is woken (its wake function called,
 * once, outside any lock of this module) when
 * - its organization's export changed (wl_stock_watch_changed: the export cache's hook, fed by
 *   PostgreSQL's announcements and this process's own writes; org_id 0 means every
 *   organization, when announcements may have been missed),
 * - it has sent nothing for the heartbeat interval (this module's timer, on the process's
 *   upkeep loop, process/upkeep.h, while there are watchers),
 * - the server stops (wl_stock_watch_stop).
 * The timer also marks a watcher stalled when it is not parked (it has a message for its
 * client) and its client has not taken the whole message within the stall limit.
 *
 * A change finds its organization's watchers through a table of organizations, not by a pass
 * over every watcher of the process. The registry also holds the deltas its watchers share
 * (delta_share.h): watchers woken by one change at the same cursor read it once.
 *
 * Pollers (wl_stock_watch_add_poller) are watchers of no organization that look at a state
 * themselves (grpc.health.v1.Health/Watch streams, protocols/health_stream.h): parked, they are
 * woken at every tick of the timer (about a second) and at the stop; no change or heartbeat is
 * ever due for them.
 */
#ifndef WALKLIST_GATEWAY_STOCK_WATCH_H
#define WALKLIST_GATEWAY_STOCK_WATCH_H

#include <stdint.h>

#include "export/delta_share.h"
#include "walklist/error.h"

typedef struct wl_stock_watch wl_stock_watch_t;
typedef struct wl_stock_watcher wl_stock_watcher_t;

/* What a woken watcher is to do (wl_stock_watch_take), most urgent first. */
#define WL_STOCK_WATCH_STOPPING  1u /* the server stops: end the stream */
#define WL_STOCK_WATCH_STALLED   2u /* a message waited for the stall limit: end the stream */
#define WL_STOCK_WATCH_CHANGED   4u /* the organization's export changed: read the delta */
#define WL_STOCK_WATCH_HEARTBEAT 8u /* nothing sent for the heartbeat interval */

/** Starts the registry and puts its timer on the upkeep loop; both intervals at least 1 s. */
int wl_stock_watch_create(unsigned heartbeat_s, unsigned stall_s, wl_stock_watch_t **out,
                          wl_error_t *err) WL_CHECK_RESULT;

/** Takes the timer off the upkeep loop and frees the registry; every watcher must have been
 * removed. */
void wl_stock_watch_destroy(wl_stock_watch_t *watch);

/** The export cache's hook: org_id's export changed (0: maybe any organization's). */
void wl_stock_watch_changed(int64_t org_id, void *watch);

/** From now on every watcher is woken with WL_STOCK_WATCH_STOPPING, parked ones at once. */
void wl_stock_watch_stop(wl_stock_watch_t *watch);

/** A new watcher of org_id, not parked; NULL when out of memory. */
wl_stock_watcher_t *wl_stock_watch_add(wl_stock_watch_t *watch, int64_t org_id);

/** A new poller, not parked (see above); NULL when out of memory. */
wl_stock_watcher_t *wl_stock_watch_add_poller(wl_stock_watch_t *watch);

/** Removes and frees a watcher that is not parked (its stream is over). NULL is fine. */
void wl_stock_watch_remove(wl_stock_watch_t *watch, wl_stock_watcher_t *watcher);

/**
 * Parks the watcher until there is something to do, then calls wake(data) once; at once (on
 * the caller's thread) when there is something already.
 */
void wl_stock_watch_park(wl_stock_watch_t *watch, wl_stock_watcher_t *watcher,
                         void (*wake)(void *data), void *data);

/**
 * What the watcher is to do now (WL_STOCK_WATCH_* bits; 0: nothing); clears CHANGED. heard_ns:
 * when the last change was heard (wl_delta_share_now_ns): a delta read from a snapshot taken
 * after it includes every change the watcher was woken for.
 */
unsigned wl_stock_watch_take(wl_stock_watch_t *watch, wl_stock_watcher_t *watcher,
                             int64_t *heard_ns);

/** The deltas the watchers of one organization share (delta_share.h), owned here. */
wl_delta_share_t *wl_stock_watch_deltas(wl_stock_watch_t *watch);

/** A message went to the watcher's stream: the heartbeat interval and the stall clock start
 * again. */
void wl_stock_watch_sent(wl_stock_watch_t *watch, wl_stock_watcher_t *watcher);

/** The client took the whole message: the stall clock starts again. */
void wl_stock_watch_progress(wl_stock_watch_t *watch, wl_stock_watcher_t *watcher);

/** A stream's last message has gone whole and it has nothing more: wl_stock_watch_progress,
 * then wl_stock_watch_park (a generator's park, generator.h). */
void wl_stock_watch_rest(wl_stock_watch_t *watch, wl_stock_watcher_t *watcher,
                         void (*wake)(void *data), void *data);

#endif
