/*
 * The queue of admissions waiting for a group (services/admissions.h), and how a group is taken
 * from it: the oldest request and, after it in arrival order, the requests of the same placement
 * (on a distributed database, the node group that holds the organization's rows), so that a
 * group's one transaction touches one node: it commits without two-phase commit and fails alone
 * when another node is down. One server: every request has the same placement, and a group is
 * simply the oldest requests. While groups of a placement commit, its next group is taken only
 * once it holds at least half as many requests as they do, or once they have been committing
 * for WL_ADMISSION_HOLD_MS (admission_queue.c says why). Not thread-safe: its owner holds a
 * lock.
 */
#ifndef WALKLIST_SERVICES_ADMISSION_QUEUE_H
#define WALKLIST_SERVICES_ADMISSION_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "services/admissions.h"

/* A placement that goes in a group of its own: the organization is not known yet (a key this
 * process has not checked), so where its rows live is not known either. */
#define WL_PLACEMENT_ALONE INT64_MIN

/* How long a group in flight holds back the next one of its placement at most: longer than a
 * commit under load takes (1-12 ms on a 2-core machine), so that a group stuck at the database
 * (a row lock, a slow node) delays the others by no more than this. */
#define WL_ADMISSION_HOLD_MS 10

/* A group taken and not yet landed: its placement, how many requests it holds, and when it was
 * taken (ms of any monotonic clock: the one take is given). */
typedef struct {
    int64_t placement;
    int requests;
    int64_t taken_ms;
} wl_admission_flight_t;

typedef struct {
    wl_admission_waiter_t *head;
    wl_admission_waiter_t **tail;
    int waiting;
    wl_admission_flight_t flights[WL_ADMIT_GROUPS_MAX]; /* groups committing now */
    int flying;
} wl_admission_queue_t;

void wl_admission_queue_init(wl_admission_queue_t *queue);

/** Appends waiter (its placement set). */
void wl_admission_queue_push(wl_admission_queue_t *queue, wl_admission_waiter_t *waiter);

/**
 * Takes the next group into group (at most max): the oldest waiter and the later ones of its
 * placement, in arrival order; a WL_PLACEMENT_ALONE waiter alone. The others keep their order.
 * A placement whose groups taken in the last WL_ADMISSION_HOLD_MS before now_ms hold more than
 * twice as many requests as wait for it is skipped: its waiters wait for those groups to land,
 * for more of their own, or for wl_admission_queue_hold_ends_ms. The group is in flight from
 * now_ms until wl_admission_queue_landed; at most WL_ADMIT_GROUPS_MAX groups at once.
 * While a lookup of prefixes is in flight (lookup_in_flight), waiters of keys not known here
 * are left for their placement (alone, each would commit on a node that does not hold its
 * organization's rows, reaching them from there): the group starts at the oldest other one.
 * Returns how many were taken (0: none to take).
 */
int wl_admission_queue_take(wl_admission_queue_t *queue, wl_admission_waiter_t **group, int max,
                            bool lookup_in_flight, int64_t now_ms);

/** The next moment after now_ms when a group in flight stops holding its placement back (0:
 * none will). */
int64_t wl_admission_queue_hold_ends_ms(const wl_admission_queue_t *queue, int64_t now_ms);

/** The group taken at taken_ms with this placement and this many requests has committed (or
 * failed). */
void wl_admission_queue_landed(wl_admission_queue_t *queue, int64_t placement, int requests,
                               int64_t taken_ms);

/**
 * The waiters placed alone only because this process has not checked their keys (org_id 0),
 * whose prefixes were not looked up yet: marks them looked up and copies their prefixes into
 * prefixes (at most max), in arrival order. Returns how many.
 */
size_t wl_admission_queue_unplaced(wl_admission_queue_t *queue,
                                   char (*prefixes)[WL_KEY_PREFIX_LEN + 1], size_t max);

/** Whether the oldest waiter is one wl_admission_queue_unplaced would give. */
bool wl_admission_queue_head_unplaced(const wl_admission_queue_t *queue);

/**
 * Places the waiters still queued whose prefixes were looked up, by keys[i], the active key of
 * prefixes[i] (org_id 0: none, the waiter stays alone), through placement. A waiter whose
 * secret matches that key's digest, and whose action the key's scopes allow, is checked there
 * and then: its request goes with its organization (wl_admit_t.key_checked), so that its
 * group's statement looks no key up. The others still have their keys checked (and refused)
 * by the statement.
 */
void wl_admission_queue_place(wl_admission_queue_t *queue,
                              const char (*prefixes)[WL_KEY_PREFIX_LEN + 1],
                              const wl_key_of_prefix_t *keys, size_t count,
                              const wl_placement_t *placement);

#endif
