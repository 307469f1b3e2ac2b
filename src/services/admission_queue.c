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

int wl_admission_queue_take(wl_admission_queue_t *queue, wl_admission_waiter_t **group, int max,
                            bool lookup_in_flight)
{
    if (max < 1)
        return 0;
    wl_admission_waiter_t **link = &queue->head;
    while (lookup_in_flight && *link != NULL && awaits_placement(*link))
        link = &(*link)->next;
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
    return count;
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
