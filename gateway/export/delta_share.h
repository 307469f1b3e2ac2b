/*
 * Deltas shared by the WatchStock streams of one organization. Watchers woken by the same
 * change, at the same cursor, need the same delta: one of them reads it from PostgreSQL
 * (wl_core_export_open_since) and the others take its items, instead of each reading its own
 * (with 25 watchers of one organization, 25 reads of every change).
 *
 * A delta read from a snapshot taken after a change was heard includes that change, so an entry
 * serves every watcher of its organization and starting version that heard its change before
 * the entry's snapshot was taken (heard_ns): its cursor is then as good as one of its own. While
 * an entry is being read, the watchers it will serve wait for it. Only small deltas are kept
 * (WL_DELTA_SHARE_ITEMS items; a catch-up from an old cursor is larger and read by each), at
 * most WL_DELTA_SHARE_ENTRIES of them, each for a few seconds.
 */
#ifndef WALKLIST_GATEWAY_DELTA_SHARE_H
#define WALKLIST_GATEWAY_DELTA_SHARE_H

#include <stddef.h>
#include <stdint.h>

#include "walklist/core.h"
#include "walklist/error.h"

#define WL_DELTA_SHARE_ITEMS   4096
#define WL_DELTA_SHARE_ENTRIES 64

typedef struct wl_delta_share wl_delta_share_t;
typedef struct wl_shared_delta wl_shared_delta_t;

/** NULL when out of memory. */
wl_delta_share_t *wl_delta_share_create(void);

/** Every entry must have been released. NULL is fine. */
void wl_delta_share_destroy(wl_delta_share_t *share);

/** The monotonic clock heard_ns is read on (nanoseconds). */
int64_t wl_delta_share_now_ns(void);

/**
 * The delta of principal's organization since version since (>= 0), from a snapshot taken at
 * or after heard_ns: another watcher's when there is one (waiting while it is read), else read
 * here and offered to the others. 0 with *out set (release it), or 0 with *out NULL: read it
 * yourself (too large to share, or out of memory); or the WL_E* code of the read, with err set.
 */
int wl_delta_share_get(wl_delta_share_t *share, wl_core_t *core, const wl_principal_t *principal,
                       int64_t since, int64_t heard_ns, wl_shared_delta_t **out,
                       wl_error_t *err) WL_CHECK_RESULT;

size_t wl_shared_delta_count(const wl_shared_delta_t *delta);

/** Item i (< count): its strings live as long as the entry is held. */
void wl_shared_delta_item(const wl_shared_delta_t *delta, size_t i, wl_export_item_t *item);

/** The cursor of the entry's snapshot. */
const char *wl_shared_delta_cursor(const wl_shared_delta_t *delta);

void wl_shared_delta_release(wl_delta_share_t *share, wl_shared_delta_t *delta);

typedef struct {
    uint64_t read;   /* deltas read from PostgreSQL to share */
    uint64_t shared; /* deltas taken from another watcher's read */
} wl_delta_share_stats_t;

void wl_delta_share_stats(wl_delta_share_t *share, wl_delta_share_stats_t *out);

#endif
