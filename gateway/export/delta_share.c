/* Sharing one organization's stock deltas among its watchers happens here. */
#include "export/delta_share.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "walklist/arena.h"
#include "walklist/monotonic.h"

/* A delta stays shareable this long after it was read: watchers woken by one change take it
 * within milliseconds; later ones have heard a later change or read their own. */
#define KEEP_NS (5LL * 1000 * 1000 * 1000)
/* A watcher waits this long at most for another's read, then reads its own (a read that takes
 * longer has met the statement timeout). */
#define WAIT_S 30

typedef enum { ENTRY_READING, ENTRY_READY, ENTRY_UNSHARED } entry_state_t;

struct wl_shared_delta {
    int64_t org_id;
    int64_t since;
    int64_t opened_ns; /* before its snapshot was taken */
    entry_state_t state;
    int holders; /* the list's hold while listed, and each taker's */
    bool listed;
    wl_export_item_t *items;
    size_t count;
    size_t capacity;
    char *cursor;
    wl_arena_t arena; /* the items' strings and the cursor */
    wl_shared_delta_t *next;
};

struct wl_delta_share {
    pthread_mutex_t lock;
    pthread_cond_t read;     /* an entry was read (or given up) */
    wl_shared_delta_t *head; /* newest first */
    size_t listed;
    uint64_t reads, takes;
};

int64_t wl_delta_share_now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
}

wl_delta_share_t *wl_delta_share_create(void)
{
    wl_delta_share_t *share = calloc(1, sizeof(*share));
    if (share == NULL)
        return NULL;
    pthread_mutex_init(&share->lock, NULL);
    wl_cond_init_monotonic(&share->read);
    return share;
}

static void entry_free(wl_shared_delta_t *entry)
{
    free(entry->items);
    wl_arena_dispose(&entry->arena);
    free(entry);
}

/* The lock held: one hold less; the last frees the entry. */
static void let_go(wl_shared_delta_t *entry)
{
    if (--entry->holders == 0)
        entry_free(entry);
}

/* The lock held: takes the entry off the list (it lives on while held). */
static void unlist(wl_delta_share_t *share, wl_shared_delta_t *entry)
{
    for (wl_shared_delta_t **link = &share->head; *link != NULL; link = &(*link)->next) {
        if (*link == entry) {
            *link = entry->next;
            entry->listed = false;
            share->listed--;
            let_go(entry);
            return;
        }
    }
}

/* The lock held: drops entries read more than KEEP_NS ago, and the oldest read ones beyond
 * the limit (one being read stays: its watchers wait for it). */
static void prune(wl_delta_share_t *share, int64_t now_ns)
{
    wl_shared_delta_t *entry = share->head;
    size_t seen = 0;
    while (entry != NULL) {
        wl_shared_delta_t *next = entry->next;
        seen++;
        if (entry->state != ENTRY_READING &&
            (now_ns - entry->opened_ns > KEEP_NS || seen > WL_DELTA_SHARE_ENTRIES))
            unlist(share, entry);
        entry = next;
    }
}

void wl_delta_share_destroy(wl_delta_share_t *share)
{
    if (share == NULL)
        return;
    while (share->head != NULL)
        unlist(share, share->head);
    pthread_cond_destroy(&share->read);
    pthread_mutex_destroy(&share->lock);
    free(share);
}

/* The lock held: an entry that serves a watcher of org_id at since that heard its change at
 * heard_ns: its snapshot was taken after that. */
static wl_shared_delta_t *find(wl_delta_share_t *share, int64_t org_id, int64_t since,
                               int64_t heard_ns)
{
    for (wl_shared_delta_t *entry = share->head; entry != NULL; entry = entry->next) {
        if (entry->org_id == org_id && entry->since == since && entry->opened_ns >= heard_ns &&
            entry->state != ENTRY_UNSHARED)
            return entry;
    }
    return NULL;
}

/* The lock held: waits for entry (held) to be read, up to WAIT_S. */
static void wait_for(wl_delta_share_t *share, wl_shared_delta_t *entry)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += WAIT_S;
    while (entry->state == ENTRY_READING) {
        if (pthread_cond_timedwait(&share->read, &share->lock, &until) == ETIMEDOUT)
            return;
    }
}

static bool keep_item(wl_shared_delta_t *entry, const wl_export_item_t *item)
{
    if (entry->count == entry->capacity) {
        size_t capacity = entry->capacity ? entry->capacity * 2 : 16;
        wl_export_item_t *grown = realloc(entry->items, capacity * sizeof(*grown));
        if (grown == NULL)
            return false;
        entry->items = grown;
        entry->capacity = capacity;
    }
    wl_export_item_t *kept = &entry->items[entry->count];
    *kept = *item;
    kept->sku = wl_arena_strdup(&entry->arena, item->sku);
    kept->location = item->location ? wl_arena_strdup(&entry->arena, item->location) : NULL;
    if (kept->sku == NULL || (item->location != NULL && kept->location == NULL))
        return false;
    entry->count++;
    return true;
}

/* Reads the entry's delta; 0 with shareable set when it was kept whole. */
static int read_delta(wl_shared_delta_t *entry, wl_core_t *core, const wl_principal_t *principal,
                      bool *shareable, wl_error_t *err)
{
    *shareable = false;
    wl_export_cursor_t *cursor = NULL;
    int rc = wl_core_export_open_since(core, principal, entry->since, &cursor, err);
    bool kept = true;
    wl_export_item_t item;
    int next = 0;
    while (rc == 0 && kept && (next = wl_export_cursor_next(cursor, &item, err)) == 1)
        kept = entry->count < WL_DELTA_SHARE_ITEMS && keep_item(entry, &item);
    if (rc == 0 && next < 0)
        rc = err->code != 0 ? err->code : WL_EINTERNAL;
    if (rc == 0 && kept) {
        entry->cursor = wl_arena_strdup(&entry->arena, wl_export_cursor_token(cursor));
        *shareable = entry->cursor != NULL;
    }
    wl_export_cursor_close(cursor);
    return rc;
}

int wl_delta_share_get(wl_delta_share_t *share, wl_core_t *core, const wl_principal_t *principal,
                       int64_t since, int64_t heard_ns, wl_shared_delta_t **out, wl_error_t *err)
{
    *out = NULL;
    pthread_mutex_lock(&share->lock);
    int64_t now_ns = wl_delta_share_now_ns();
    prune(share, now_ns);
    wl_shared_delta_t *entry = find(share, principal->org_id, since, heard_ns);
    if (entry != NULL) {
        entry->holders++;
        wait_for(share, entry);
        if (entry->state == ENTRY_READY) {
            share->takes++;
            pthread_mutex_unlock(&share->lock);
            *out = entry;
            return 0;
        }
        let_go(entry); /* given up, or still being read: read it yourself */
        pthread_mutex_unlock(&share->lock);
        return 0;
    }
    entry = calloc(1, sizeof(*entry));
    if (entry == NULL) {
        pthread_mutex_unlock(&share->lock);
        return 0;
    }
    *entry = (wl_shared_delta_t){.org_id = principal->org_id,
                                 .since = since,
                                 .opened_ns = now_ns,
                                 .state = ENTRY_READING,
                                 .holders = 2, /* the list's and this reader's */
                                 .listed = true,
                                 .next = share->head};
    wl_arena_init(&entry->arena, 0);
    share->head = entry;
    share->listed++;
    pthread_mutex_unlock(&share->lock);

    bool shareable = false;
    int rc = read_delta(entry, core, principal, &shareable, err);

    pthread_mutex_lock(&share->lock);
    entry->state = shareable ? ENTRY_READY : ENTRY_UNSHARED;
    pthread_cond_broadcast(&share->read);
    if (shareable) {
        share->reads++;
        *out = entry;
    } else {
        /* Not kept: this reader's hold and the list's go (being read, it was not pruned);
         * watchers still waiting for it hold it until they see it given up. */
        entry->holders--;
        unlist(share, entry);
    }
    pthread_mutex_unlock(&share->lock);
    return rc;
}

size_t wl_shared_delta_count(const wl_shared_delta_t *delta)
{
    return delta->count;
}

void wl_shared_delta_item(const wl_shared_delta_t *delta, size_t i, wl_export_item_t *item)
{
    *item = delta->items[i];
}

const char *wl_shared_delta_cursor(const wl_shared_delta_t *delta)
{
    return delta->cursor;
}

void wl_shared_delta_release(wl_delta_share_t *share, wl_shared_delta_t *delta)
{
    if (delta == NULL)
        return;
    pthread_mutex_lock(&share->lock);
    let_go(delta);
    pthread_mutex_unlock(&share->lock);
}

void wl_delta_share_stats(wl_delta_share_t *share, wl_delta_share_stats_t *out)
{
    pthread_mutex_lock(&share->lock);
    out->read = share->reads;
    out->shared = share->takes;
    pthread_mutex_unlock(&share->lock);
}
