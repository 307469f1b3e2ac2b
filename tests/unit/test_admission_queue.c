/*
 * Admission groups of one placement (services/admission_queue.h): a group is the oldest waiter
 * and the later ones of its placement, in arrival order, at most the group's size; a waiter of
 * no known placement goes alone; the others keep their order for the next groups.
 */
#include "services/admission_queue.h"
#include "test.h"

#define COUNT 12

static wl_admission_waiter_t waiters[COUNT];

static void fill(wl_admission_queue_t *queue, const int64_t *placements, int count)
{
    wl_admission_queue_init(queue);
    for (int i = 0; i < count; i++) {
        waiters[i] = (wl_admission_waiter_t){.placement = placements[i]};
        wl_admission_queue_push(queue, &waiters[i]);
    }
}

/* The indexes (into waiters) of the next group, as a string such as "0,2,5". */
static const char *take(wl_admission_queue_t *queue, int max)
{
    static char text[128];
    wl_admission_waiter_t *group[COUNT];
    int count = wl_admission_queue_take(queue, group, max);
    size_t len = 0;
    text[0] = '\0';
    for (int i = 0; i < count; i++)
        len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%d", i ? "," : "",
                                (int)(group[i] - waiters));
    return text;
}

/* Every group is of one placement, in arrival order, and every waiter is taken once. */
static void test_groups_of_one_placement(void)
{
    const int64_t placements[] = {1, 2, 1, 1, 3, 2, 1, 3};
    wl_admission_queue_t queue;
    fill(&queue, placements, 8);
    CHECK_STR(take(&queue, 64), "0,2,3,6");
    CHECK_INT(queue.waiting, 4);
    CHECK_STR(take(&queue, 64), "1,5");
    CHECK_STR(take(&queue, 64), "4,7");
    CHECK_STR(take(&queue, 64), "");
    CHECK_INT(queue.waiting, 0);
    /* The queue goes on taking waiters after it ran empty. */
    wl_admission_queue_push(&queue, &waiters[0]);
    CHECK_STR(take(&queue, 64), "0");
}

/* At most max a group; the rest of the placement waits for the next one, still first. */
static void test_group_size(void)
{
    const int64_t placements[] = {5, 5, 6, 5, 5};
    wl_admission_queue_t queue;
    fill(&queue, placements, 5);
    CHECK_STR(take(&queue, 2), "0,1");
    CHECK_STR(take(&queue, 2), "2");
    CHECK_STR(take(&queue, 2), "3,4");
    CHECK_STR(take(&queue, 2), "");
}

/* A waiter of no known placement goes alone, and the ones of a placement skip over it. */
static void test_unknown_placement_goes_alone(void)
{
    const int64_t placements[] = {WL_PLACEMENT_ALONE, 1, WL_PLACEMENT_ALONE, 1, 2};
    wl_admission_queue_t queue;
    fill(&queue, placements, 5);
    CHECK_STR(take(&queue, 64), "0");
    CHECK_STR(take(&queue, 64), "1,3");
    CHECK_STR(take(&queue, 64), "2");
    CHECK_STR(take(&queue, 64), "4");
    CHECK_STR(take(&queue, 64), "");
}

/* One server: one placement, so a group is the oldest waiters, as many as fit. */
static void test_one_placement_is_plain_fifo(void)
{
    const int64_t placements[COUNT] = {0};
    wl_admission_queue_t queue;
    fill(&queue, placements, COUNT);
    CHECK_STR(take(&queue, 5), "0,1,2,3,4");
    CHECK_STR(take(&queue, 5), "5,6,7,8,9");
    /* Appended after a partial take: behind what was left. */
    wl_admission_queue_push(&queue, &waiters[0]);
    CHECK_STR(take(&queue, 5), "10,11,0");
}

int main(void)
{
    test_groups_of_one_placement();
    test_group_size();
    test_unknown_placement_goes_alone();
    test_one_placement_is_plain_fifo();
    return test_exit();
}
