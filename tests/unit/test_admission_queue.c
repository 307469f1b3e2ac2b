/*
 * Admission groups of one placement (services/admission_queue.h): a group is the oldest waiter
 * and the later ones of its placement, in arrival order, at most the group's size; a waiter of
 * no known placement goes alone; the others keep their order for the next groups. While groups
 * of a placement are in flight, its next group waits to be half their size, or for them to land.
 */
#include <stdbool.h>
#include <stdio.h>

#include "services/admission_queue.h"
#include "test.h"

#define COUNT 12

static wl_admission_waiter_t waiters[COUNT];
static wl_admit_t requests[COUNT];
static int64_t now_ms = 1000; /* the clock take is given */

/* Appends waiter i, of this placement, as a new one. */
static void push(wl_admission_queue_t *queue, int i, int64_t placement)
{
    requests[i] = (wl_admit_t){.org_id = 1};
    waiters[i] = (wl_admission_waiter_t){.placement = placement, .request = &requests[i]};
    wl_admission_queue_push(queue, &waiters[i]);
}

static void fill(wl_admission_queue_t *queue, const int64_t *placements, int count)
{
    wl_admission_queue_init(queue);
    for (int i = 0; i < count; i++)
        push(queue, i, placements[i]);
}

/* The indexes (into waiters) of the next group, as a string such as "0,2,5"; the group stays
 * in flight unless lands (it committed at once). */
static const char *take_group(wl_admission_queue_t *queue, int max, bool lookup_in_flight,
                              bool lands)
{
    static char text[128];
    wl_admission_waiter_t *group[COUNT];
    int count = wl_admission_queue_take(queue, group, max, lookup_in_flight, now_ms);
    size_t len = 0;
    text[0] = '\0';
    for (int i = 0; i < count; i++)
        len += (size_t)snprintf(text + len, sizeof(text) - len, "%s%d", i ? "," : "",
                                (int)(group[i] - waiters));
    if (count > 0 && lands)
        wl_admission_queue_landed(queue, group[0]->placement, count, now_ms);
    return text;
}

/* The next group, committed at once, while a lookup of prefixes is (or is not) in flight. */
static const char *take_while(wl_admission_queue_t *queue, int max, bool lookup_in_flight)
{
    return take_group(queue, max, lookup_in_flight, true);
}

/* The next group, committed at once, when no lookup of prefixes is in flight. */
static const char *take(wl_admission_queue_t *queue, int max)
{
    return take_while(queue, max, false);
}

/* The next group, left in flight. */
static const char *take_in_flight(wl_admission_queue_t *queue, int max)
{
    return take_group(queue, max, false, false);
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

/* One server, under load: while a group of 4 commits, the 1 request that arrived meanwhile
 * waits; a second one makes the next group (half the size of the one committing) start beside
 * it. With two groups in flight the next waits to be half of both; once they land, whatever
 * waits goes at once, however few. */
static void test_next_group_waits_to_be_half_the_size(void)
{
    const int64_t placements[COUNT] = {0};
    wl_admission_queue_t queue;
    fill(&queue, placements, 5);
    CHECK_STR(take_in_flight(&queue, 4), "0,1,2,3");
    CHECK_STR(take_in_flight(&queue, 64), "");
    CHECK_INT(queue.waiting, 1);
    push(&queue, 5, 0);
    CHECK_STR(take_in_flight(&queue, 64), "4,5");
    /* 6 requests committing: 3 must wait before a third group starts. */
    push(&queue, 6, 0);
    push(&queue, 7, 0);
    CHECK_STR(take_in_flight(&queue, 64), "");
    wl_admission_queue_landed(&queue, 0, 2, now_ms);
    CHECK_STR(take_in_flight(&queue, 64), "6,7");
    push(&queue, 8, 0);
    CHECK_STR(take_in_flight(&queue, 64), "");
    wl_admission_queue_landed(&queue, 0, 4, now_ms);
    wl_admission_queue_landed(&queue, 0, 2, now_ms);
    CHECK_INT(queue.flying, 0);
    CHECK_STR(take_in_flight(&queue, 64), "8");
}

/* A group in flight holds its placement back for WL_ADMISSION_HOLD_MS at most (one stuck at
 * the database must not hold the others for its whole lock wait); the committers wait until
 * the next such moment. */
static void test_hold_ends(void)
{
    const int64_t placements[COUNT] = {0};
    wl_admission_queue_t queue;
    fill(&queue, placements, 5);
    CHECK(wl_admission_queue_hold_ends_ms(&queue, now_ms) == 0);
    int64_t start = now_ms;
    CHECK_STR(take_in_flight(&queue, 4), "0,1,2,3");
    now_ms = start + 3;
    push(&queue, 5, 0);
    CHECK_STR(take_in_flight(&queue, 1), "4"); /* 2 wait, half of 4: a group of at most 1 */
    CHECK_STR(take_in_flight(&queue, 64), "");
    CHECK(wl_admission_queue_hold_ends_ms(&queue, now_ms) == start + WL_ADMISSION_HOLD_MS);
    now_ms = start + WL_ADMISSION_HOLD_MS - 1;
    CHECK_STR(take_in_flight(&queue, 64), "");
    now_ms = start + WL_ADMISSION_HOLD_MS;
    /* The first group no longer holds; the second (1 request, taken at +3) needs 1 waiter. */
    CHECK_STR(take_in_flight(&queue, 64), "5");
    CHECK(wl_admission_queue_hold_ends_ms(&queue, now_ms) == start + 3 + WL_ADMISSION_HOLD_MS);
    now_ms = start + 3 + WL_ADMISSION_HOLD_MS + 1;
    CHECK(wl_admission_queue_hold_ends_ms(&queue, now_ms) == start + 2 * WL_ADMISSION_HOLD_MS);
    now_ms = start + 1000;
    CHECK(wl_admission_queue_hold_ends_ms(&queue, now_ms) == 0);
}

/* A placement held back by its own groups in flight holds back no other placement, nor a
 * waiter of no known placement; its waiters keep their place at the head. */
static void test_held_placement_holds_back_only_itself(void)
{
    const int64_t placements[] = {1, 1, 1, 1, 1, 2, WL_PLACEMENT_ALONE, 2, 1};
    wl_admission_queue_t queue;
    fill(&queue, placements, 4);
    CHECK_STR(take_in_flight(&queue, 64), "0,1,2,3");
    for (int i = 4; i < 9; i++)
        push(&queue, i, placements[i]);
    CHECK_STR(take_in_flight(&queue, 64), "4,8"); /* 2 of placement 1 wait: half of 4 */
    fill(&queue, placements, 4);
    CHECK_STR(take_in_flight(&queue, 64), "0,1,2,3");
    for (int i = 4; i < 8; i++)
        push(&queue, i, placements[i]);
    CHECK_STR(take_in_flight(&queue, 64), "5,7");
    CHECK_STR(take_in_flight(&queue, 64), "6");
    CHECK_STR(take_in_flight(&queue, 64), "");
    CHECK_INT(queue.waiting, 1);
    wl_admission_queue_landed(&queue, 1, 4, now_ms);
    CHECK_STR(take_in_flight(&queue, 64), "4");
}

/* A fake node map: organization n lives on node n % 2 (and organization 9 on no known node). */
static int64_t place_by_parity(int64_t org_id, void *data)
{
    (*(int *)data)++;
    return org_id == 9 ? WL_PLACEMENT_ALONE : org_id % 2;
}

/* Waiters of keys this process has not checked are placed by their prefixes' organizations:
 * each prefix is asked once, the groups then hold one node each, and a prefix of no active key
 * (or of an organization no node is known for) still goes alone. */
static void test_unchecked_keys_placed_by_prefix(void)
{
    /* Waiter i: key prefix "key<i>", its organization in orgs_of (0: no such key). A known key
     * (org_id set) is placed when queued and never asked. */
    const int64_t orgs_of[] = {3, 4, 0, 5, 4, 9, 2};
    wl_key_of_prefix_t keys[7] = {{{0}}};
    for (int i = 0; i < 7; i++) {
        keys[i].principal.org_id = orgs_of[i];
        keys[i].principal.scopes = WL_SCOPE_LISTS_WRITE;
        snprintf(keys[i].principal.org_slug, sizeof(keys[i].principal.org_slug), "org%d", i);
        keys[i].digest[0] = (unsigned char)i;
    }
    const int64_t placements[] = {WL_PLACEMENT_ALONE,
                                  WL_PLACEMENT_ALONE,
                                  WL_PLACEMENT_ALONE,
                                  WL_PLACEMENT_ALONE,
                                  WL_PLACEMENT_ALONE,
                                  WL_PLACEMENT_ALONE,
                                  0};
    wl_admission_queue_t queue;
    fill(&queue, placements, 7);
    for (int i = 0; i < 6; i++) {
        requests[i].org_id = 0;
        requests[i].scope = WL_SCOPE_LISTS_WRITE;
        requests[i].digest[0] = (unsigned char)i;
        snprintf(requests[i].prefix, sizeof(requests[i].prefix), "key%d", i);
    }
    /* Waiter 1 brings another secret than its key's; waiter 3 needs a scope its key lacks. */
    requests[1].digest[1] = 1;
    requests[3].scope = WL_SCOPE_STOCK_READ;
    CHECK(wl_admission_queue_head_unplaced(&queue));

    char prefixes[COUNT][WL_KEY_PREFIX_LEN + 1];
    CHECK_INT((int)wl_admission_queue_unplaced(&queue, prefixes, 4), 4);
    CHECK_STR(prefixes[0], "key0");
    CHECK_STR(prefixes[3], "key3");
    /* Asked once: the rest of the queue next time, then nothing. */
    CHECK_INT((int)wl_admission_queue_unplaced(&queue, prefixes + 4, 8), 2);
    CHECK_STR(prefixes[5], "key5");
    CHECK_INT((int)wl_admission_queue_unplaced(&queue, prefixes, 8), 0);
    CHECK(!wl_admission_queue_head_unplaced(&queue));

    int calls = 0;
    wl_placement_t placement = {.place = place_by_parity, .data = &calls};
    /* While the answers are awaited, only the known key's waiter goes; the others wait for
     * their placement rather than going alone to a node that may not hold their rows. */
    CHECK_STR(take_while(&queue, 64, true), "6");
    CHECK_STR(take_while(&queue, 64, true), "");
    CHECK_INT(queue.waiting, 6);
    wl_admission_queue_place(&queue, (const char(*)[WL_KEY_PREFIX_LEN + 1]) prefixes, keys, 6,
                             &placement);
    CHECK_INT(calls, 5); /* key0..key5 but key2, which has no organization */
    /* Checked by the lookup: the secret matches and the scope is granted. The others keep
     * their keys for the statement to check (and refuse). */
    CHECK(requests[0].key_checked);
    CHECK_INT(requests[0].org_id, 3);
    CHECK_STR(requests[0].checked.org_slug, "org0");
    CHECK(requests[4].key_checked && requests[4].org_id == 4);
    CHECK(!requests[1].key_checked && requests[1].org_id == 0);
    CHECK(!requests[2].key_checked && requests[2].org_id == 0);
    CHECK(!requests[3].key_checked && requests[3].org_id == 0);
    CHECK_STR(take(&queue, 64), "0,3"); /* node 1: organizations 3 and 5 */
    CHECK_STR(take(&queue, 64), "1,4"); /* node 0: organization 4 twice */
    CHECK_STR(take(&queue, 64), "2");   /* no active key: alone, its check refuses it */
    CHECK_STR(take(&queue, 64), "5");   /* organization 9, on no known node: alone */
    CHECK_STR(take(&queue, 64), "");
}

/* With no lookup in flight (it failed, or none is due), a waiter of a key not known here is
 * not held back: it goes alone, as a waiter of no known placement does. */
static void test_unknown_key_alone_without_lookup(void)
{
    const int64_t placements[] = {WL_PLACEMENT_ALONE, 1, 1};
    wl_admission_queue_t queue;
    fill(&queue, placements, 3);
    requests[0].org_id = 0;
    snprintf(requests[0].prefix, sizeof(requests[0].prefix), "key0");
    CHECK_STR(take_while(&queue, 64, true), "1,2");
    CHECK_STR(take_while(&queue, 64, true), "");
    CHECK_STR(take(&queue, 64), "0");
    CHECK_STR(take(&queue, 64), "");
}

int main(void)
{
    test_groups_of_one_placement();
    test_group_size();
    test_unknown_placement_goes_alone();
    test_one_placement_is_plain_fifo();
    test_next_group_waits_to_be_half_the_size();
    test_held_placement_holds_back_only_itself();
    test_hold_ends();
    test_unchecked_keys_placed_by_prefix();
    test_unknown_key_alone_without_lookup();
    return test_exit();
}
