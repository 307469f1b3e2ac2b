/* Taking admission groups of one placement from the waiting queue happens here. */
#include "services/admission_queue.h"

#include <stdbool.h>
#include <stddef.h>

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

int wl_admission_queue_take(wl_admission_queue_t *queue, wl_admission_waiter_t **group, int max)
{
    if (queue->head == NULL || max < 1)
        return 0;
    int64_t placement = queue->head->placement;
    int count = 0;
    wl_admission_waiter_t **link = &queue->head;
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
