/* Taking admission groups of one placement from the waiting queue happens here. */
#include "services/admission_queue.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <openssl/crypto.h>

void wl_admission_queue_init(wl_admission_queue_t *queue)
{
    queue->head = NULL;
    queue->tail = &queue->head;
    queue->waiting = 0;
    queue->flying = 0;
}

void wl_admission_queue_push(wl_admission_queue_t *queue, wl_admission_waiter_t *waiter)
{
    waiter->next = NULL;
    *queue->tail = waiter;
    queue->tail = &waiter->next;
    queue->waiting++;
}

/* Alone only because its key is not known here yet: placed by its prefix's organization once
 * the lookup in flight (or the next one) answers. */
static bool awaits_placement(const wl_admission_waiter_t *waiter)
{
    return waiter->placement == WL_PLACEMENT_ALONE && waiter->request->org_id == 0 &&
           waiter->request->prefix[0] != '\0';
}

/*
 * Every commit costs PostgreSQL about the same whatever its group's size (its statement's call,
 * its commit and WAL flush: about 0.9 ms of CPU per commit on the 2026-12-02 machine), so the
 * fewer the commits the less a request costs. A committer that took whatever waited while
 * another group of the placement was committing took the few requests that arrived meanwhile
 * (groups of 15 on average at 64 connections); one that waits until the waiters are half as
 * many as the requests committing keeps groups about a third larger, and still
 * overlaps one group's flush with the next one's statement, which a single committer cannot
 * (BENCHMARKS.md, "A group waits to be half the size of the ones committing"). Nobody waits
 * longer than the groups in flight take, nor longer than WL_ADMISSION_HOLD_MS: a group stuck at
 * the database must not hold the others back for the seconds its lock wait may last.
 */
static bool held_back(const wl_admission_queue_t *queue, int64_t placement, int64_t now_ms)
{
    if (placement == WL_PLACEMENT_ALONE)
        return false;
    int committing = 0;
    for (int i = 0; i < queue->flying; i++) {
        const wl_admission_flight_t *flight = &queue->flights[i];
        if (flight->placement == placement && now_ms - flight->taken_ms < WL_ADMISSION_HOLD_MS)
            committing += flight->requests;
    }
    int needed = (committing + 1) / 2;
    int waiting = 0;
    for (const wl_admission_waiter_t *w = queue->head; w != NULL && waiting < needed; w = w->next)
        waiting += w->placement == placement;
    return waiting < needed;
}

/* The placements held back now, into held (WL_ADMIT_GROUPS_MAX): only one with a group in
 * flight can be, so each is judged once per take, whatever the length of the queue. */
static int held_placements(const wl_admission_queue_t *queue, int64_t now_ms, int64_t *held)
{
    int count = 0;
    for (int i = 0; i < queue->flying; i++) {
        int64_t placement = queue->flights[i].placement;
        bool judged = false;
        for (int j = 0; j < i && !judged; j++)
            judged = queue->flights[j].placement == placement;
        if (!judged && held_back(queue, placement, now_ms))
            held[count++] = placement;
    }
    return count;
}

/* The link to the first waiter a group may start from, or to NULL: the oldest, skipping waiters
 * whose key is being placed (while a lookup is in flight) and placements held back. */
static wl_admission_waiter_t **group_start(wl_admission_queue_t *queue, bool lookup_in_flight,
                                           int64_t now_ms)
{
    int64_t held[WL_ADMIT_GROUPS_MAX];
    int held_count = held_placements(queue, now_ms, held);
    wl_admission_waiter_t **link = &queue->head;
    for (; *link != NULL; link = &(*link)->next) {
        const wl_admission_waiter_t *waiter = *link;
        if (lookup_in_flight && awaits_placement(waiter))
            continue;
        bool is_held = false;
        for (int i = 0; i < held_count && !is_held; i++)
            is_held = held[i] == waiter->placement;
        if (!is_held)
            break;
    }
    return link;
}

int wl_admission_queue_take(wl_admission_queue_t *queue, wl_admission_waiter_t **group, int max,
                            bool lookup_in_flight, int64_t now_ms)
{
    if (max < 1 || queue->flying >= WL_ADMIT_GROUPS_MAX)
        return 0;
    wl_admission_waiter_t **link = group_start(queue, lookup_in_flight, now_ms);
    if (*link == NULL)
        return 0;
    int64_t placement = (*link)->placement;
    int count = 0;
    while (*link != NULL && count < max) {
        wl_admission_waiter_t *waiter = *link;
        bool joins =
            count == 0 || (placement != WL_PLACEMENT_ALONE && waiter->placement == placement);
        if (!joins) {
            link = &waiter->next;
            continue;
        }
        *link = waiter->next; /* unlinked; link now points at the next one */
        if (*link == NULL)
            queue->tail = link; /* it was the last */
        group[count++] = waiter;
        queue->waiting--;
        if (placement == WL_PLACEMENT_ALONE)
            break;
    }
    queue->flights[queue->flying++] = (wl_admission_flight_t){placement, count, now_ms};
    return count;
}

int64_t wl_admission_queue_hold_ends_ms(const wl_admission_queue_t *queue, int64_t now_ms)
{
    int64_t ends = 0;
    for (int i = 0; i < queue->flying; i++) {
        int64_t flight_ends = queue->flights[i].taken_ms + WL_ADMISSION_HOLD_MS;
        if (flight_ends > now_ms && (ends == 0 || flight_ends < ends))
            ends = flight_ends;
    }
    return ends;
}

void wl_admission_queue_landed(wl_admission_queue_t *queue, int64_t placement, int requests,
                               int64_t taken_ms)
{
    for (int i = 0; i < queue->flying; i++) {
        wl_admission_flight_t *flight = &queue->flights[i];
        if (flight->placement == placement && flight->requests == requests &&
            flight->taken_ms == taken_ms) {
            *flight = queue->flights[--queue->flying];
            return;
        }
    }
}

/* Placed alone only because its key is not known here yet, and its prefix may say more. */
static bool placeable(const wl_admission_waiter_t *waiter)
{
    return waiter->placement == WL_PLACEMENT_ALONE && !waiter->placement_asked &&
           waiter->request->org_id == 0 && waiter->request->prefix[0] != '\0';
}

size_t wl_admission_queue_unplaced(wl_admission_queue_t *queue,
                                   char (*prefixes)[WL_KEY_PREFIX_LEN + 1], size_t max)
{
    size_t count = 0;
    for (wl_admission_waiter_t *w = queue->head; w != NULL && count < max; w = w->next) {
        if (!placeable(w))
            continue;
        w->placement_asked = true;
        memcpy(prefixes[count++], w->request->prefix, sizeof(prefixes[0]));
    }
    return count;
}

/* Takes the request as checked by key when its secret and scope fit it (constant time). */
static void check_by(wl_admit_t *request, const wl_key_of_prefix_t *key)
{
    if (CRYPTO_memcmp(request->digest, key->digest, WL_KEY_DIGEST_SIZE) != 0 ||
        (key->principal.scopes & request->scope) != request->scope)
        return;
    request->org_id = key->principal.org_id;
    request->key_checked = true;
    request->checked = key->principal;
}

void wl_admission_queue_place(wl_admission_queue_t *queue,
                              const char (*prefixes)[WL_KEY_PREFIX_LEN + 1],
                              const wl_key_of_prefix_t *keys, size_t count,
                              const wl_placement_t *placement)
{
    for (wl_admission_waiter_t *w = queue->head; w != NULL; w = w->next) {
        if (w->placement != WL_PLACEMENT_ALONE || !w->placement_asked || w->request->org_id != 0)
            continue;
        for (size_t i = 0; i < count; i++) {
            int64_t org = keys[i].principal.org_id;
            if (org != 0 && strcmp(prefixes[i], w->request->prefix) == 0) {
                w->placement = placement->place(org, placement->data);
                w->placement_org = org;
                check_by(w->request, &keys[i]);
                break;
            }
        }
    }
}

bool wl_admission_queue_head_unplaced(const wl_admission_queue_t *queue)
{
    return queue->head != NULL && placeable(queue->head);
}
