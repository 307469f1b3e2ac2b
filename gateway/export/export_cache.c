/* Keeping each organization's export version and bodies until a write announces a change happens
 * here. */
#include "export/export_cache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_ENTRIES 131072 /* organizations whose version is kept; a power of two */
#define PROBE       16     /* an organization lives in one of the slots after its home */
#define GENERATIONS 1024   /* organizations hash into these change counters */

typedef struct {
    int fd; /* -1: none */
    uint64_t size;
} cached_body_t;

typedef struct {
    int64_t org_id; /* 0: free slot */
    int64_t version;
    cached_body_t body[2]; /* [0] plain, [1] gzip */
    uint64_t last_used;
} entry_t;

struct wl_export_cache {
    pthread_mutex_t lock;
    wl_core_t *core;
    wl_export_subscription_t *subscription; /* to other processes' changes */
    char directory[256];                    /* where body files live, unlinked */
    bool listening; /* the core hears other processes' announcements (between listening and lost) */
    void (*on_change)(int64_t org_id, void *data); /* wl_export_cache_config_t's */
    void *on_change_data;
    uint64_t epoch; /* moves whenever announcements may have been missed */
    uint64_t generations[GENERATIONS];
    uint64_t changes; /* every organization's changes (tickets of no organization) */
    uint64_t clock;   /* for least recently used */
    uint64_t body_bytes, body_limit;
    bool trust_notify; /* versions known from memory (see the header) */
    entry_t entries[MAX_ENTRIES];
};

struct wl_export_body {
    wl_export_cache_t *cache;
    int64_t org_id, version;
    bool gzip, failed;
    wl_export_ticket_t ticket;
    int fd;
    uint64_t size;
};

static void drop_body(wl_export_cache_t *cache, cached_body_t *body)
{
    if (body->fd >= 0) {
        close(body->fd);
        cache->body_bytes -= body->size;
    }
    body->fd = -1;
    body->size = 0;
}

static void drop_entry(wl_export_cache_t *cache, entry_t *entry)
{
    drop_body(cache, &entry->body[0]);
    drop_body(cache, &entry->body[1]);
    entry->org_id = 0;
}

static entry_t *slot(wl_export_cache_t *cache, int64_t org_id, size_t i)
{
    uint64_t home = (uint64_t)org_id * 11400714819323198485ull; /* Fibonacci hashing */
    return &cache->entries[((size_t)(home >> 32) + i) & (MAX_ENTRIES - 1)];
}

static entry_t *find(wl_export_cache_t *cache, int64_t org_id)
{
    for (size_t i = 0; i < PROBE; i++) {
        entry_t *e = slot(cache, org_id, i);
        if (e->org_id == org_id)
            return e;
    }
    return NULL;
}

/* The organization's entry, made (evicting the least recently used) when missing. */
static entry_t *find_or_add(wl_export_cache_t *cache, int64_t org_id)
{
    entry_t *entry = find(cache, org_id);
    if (entry != NULL)
        return entry;
    entry_t *victim = slot(cache, org_id, 0);
    for (size_t i = 0; i < PROBE; i++) {
        entry_t *e = slot(cache, org_id, i);
        if (e->org_id == 0) {
            victim = e;
            break;
        }
        if (e->last_used < victim->last_used)
            victim = e;
    }
    drop_entry(cache, victim);
    victim->org_id = org_id;
    return victim;
}

static uint64_t *generation_of(wl_export_cache_t *cache, int64_t org_id)
{
    return &cache->generations[(uint64_t)org_id % GENERATIONS];
}

/*
 * Whether what was read after the ticket may be kept. A body stored under the version its
 * snapshot read is right for as long as that version is current, so when every request reads
 * the current version it is kept regardless; only versions trusted from memory need the
 * announcements.
 */
static bool ticket_holds(wl_export_cache_t *cache, int64_t org_id, wl_export_ticket_t ticket)
{
    if (!cache->trust_notify)
        return true;
    uint64_t changed = ticket.any_org ? cache->changes : *generation_of(cache, org_id);
    return ticket.valid && cache->listening && ticket.epoch == cache->epoch &&
           ticket.generation == changed;
}

static void on_changed(int64_t org_id, void *data)
{
    wl_export_cache_t *cache = data;
    pthread_mutex_lock(&cache->lock);
    (*generation_of(cache, org_id))++;
    cache->changes++;
    entry_t *entry = find(cache, org_id);
    if (entry != NULL)
        drop_entry(cache, entry);
    pthread_mutex_unlock(&cache->lock);
    if (cache->on_change != NULL)
        cache->on_change(org_id, cache->on_change_data);
}

/* Told on the core's announcements thread; announcements missed meanwhile wake every watcher. */
static void on_listening(void *data)
{
    wl_export_cache_t *cache = data;
    pthread_mutex_lock(&cache->lock);
    cache->listening = true;
    pthread_mutex_unlock(&cache->lock);
    if (cache->on_change != NULL)
        cache->on_change(0, cache->on_change_data);
}

static void on_lost(void *data)
{
    wl_export_cache_t *cache = data;
    pthread_mutex_lock(&cache->lock);
    cache->listening = false;
    if (cache->trust_notify) {
        cache->epoch++;
        for (size_t i = 0; i < MAX_ENTRIES; i++)
            drop_entry(cache, &cache->entries[i]);
    }
    pthread_mutex_unlock(&cache->lock);
    if (cache->on_change != NULL)
        cache->on_change(0, cache->on_change_data);
}

int wl_export_cache_create(wl_core_t *core, const wl_export_cache_config_t *config,
                           wl_export_cache_t **out, wl_error_t *err)
{
    *out = NULL;
    wl_export_cache_t *cache = calloc(1, sizeof(*cache));
    if (cache == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    pthread_mutex_init(&cache->lock, NULL);
    cache->core = core;
    for (size_t i = 0; i < MAX_ENTRIES; i++)
        cache->entries[i].body[0].fd = cache->entries[i].body[1].fd = -1;
    cache->body_limit = config->body_limit_mb << 20;
    cache->trust_notify = config->trust_notify;
    cache->on_change = config->on_change;
    cache->on_change_data = config->on_change_data;
    const char *dir =
        config->directory != NULL && config->directory[0] ? config->directory : "/tmp";
    snprintf(cache->directory, sizeof(cache->directory), "%s", dir);
    wl_export_changes_t hooks = {
        .listening = on_listening, .changed = on_changed, .lost = on_lost, .data = cache};
    int rc = wl_core_export_changes_subscribe(core, &hooks, &cache->subscription, err);
    if (rc != 0) {
        pthread_mutex_destroy(&cache->lock);
        free(cache);
        return rc;
    }
    wl_core_on_export_change(core, on_changed, cache);
    *out = cache;
    return 0;
}

void wl_export_cache_destroy(wl_export_cache_t *cache)
{
    if (cache == NULL)
        return;
    wl_core_on_export_change(cache->core, NULL, NULL);
    wl_core_export_changes_unsubscribe(cache->core, cache->subscription);
    for (size_t i = 0; i < MAX_ENTRIES; i++)
        drop_entry(cache, &cache->entries[i]);
    pthread_mutex_destroy(&cache->lock);
    free(cache);
}

wl_export_ticket_t wl_export_cache_ticket(wl_export_cache_t *cache, int64_t org_id)
{
    pthread_mutex_lock(&cache->lock);
    bool any_org = org_id == 0;
    wl_export_ticket_t ticket = {cache->epoch,
                                 any_org ? cache->changes : *generation_of(cache, org_id),
                                 cache->listening, any_org};
    pthread_mutex_unlock(&cache->lock);
    return ticket;
}

bool wl_export_cache_version(wl_export_cache_t *cache, int64_t org_id, int64_t *version)
{
    pthread_mutex_lock(&cache->lock);
    entry_t *entry = cache->trust_notify && cache->listening ? find(cache, org_id) : NULL;
    if (entry != NULL) {
        *version = entry->version;
        entry->last_used = ++cache->clock;
    }
    pthread_mutex_unlock(&cache->lock);
    return entry != NULL;
}

void wl_export_cache_remember(wl_export_cache_t *cache, int64_t org_id, wl_export_ticket_t ticket,
                              int64_t version)
{
    pthread_mutex_lock(&cache->lock);
    if (ticket_holds(cache, org_id, ticket)) {
        entry_t *entry = find_or_add(cache, org_id);
        if (entry->version != version) {
            drop_body(cache, &entry->body[0]);
            drop_body(cache, &entry->body[1]);
            entry->version = version;
        }
        entry->last_used = ++cache->clock;
    }
    pthread_mutex_unlock(&cache->lock);
}

int wl_export_cache_open_body(wl_export_cache_t *cache, int64_t org_id, int64_t version, bool gzip,
                              uint64_t *size)
{
    int fd = -1;
    pthread_mutex_lock(&cache->lock);
    entry_t *entry = find(cache, org_id);
    if (entry != NULL && entry->version == version && entry->body[gzip].fd >= 0) {
        /* A descriptor of its own: the entry may be dropped while the body is sent. */
        fd = dup(entry->body[gzip].fd);
        *size = entry->body[gzip].size;
        entry->last_used = ++cache->clock;
    }
    pthread_mutex_unlock(&cache->lock);
    return fd;
}

bool wl_export_cache_body_size(wl_export_cache_t *cache, int64_t org_id, int64_t version, bool gzip,
                               uint64_t *size)
{
    pthread_mutex_lock(&cache->lock);
    entry_t *entry = find(cache, org_id);
    bool known = entry != NULL && entry->version == version && entry->body[gzip].fd >= 0;
    if (known)
        *size = entry->body[gzip].size;
    pthread_mutex_unlock(&cache->lock);
    return known;
}

bool wl_export_cache_has_body(wl_export_cache_t *cache, int64_t org_id)
{
    pthread_mutex_lock(&cache->lock);
    entry_t *entry = find(cache, org_id);
    bool any = entry != NULL && (entry->body[0].fd >= 0 || entry->body[1].fd >= 0);
    pthread_mutex_unlock(&cache->lock);
    return any;
}

wl_export_body_t *wl_export_cache_body_begin(wl_export_cache_t *cache, int64_t org_id,
                                             int64_t version, bool gzip, wl_export_ticket_t ticket)
{
    if (cache == NULL || (cache->trust_notify && !ticket.valid) || cache->body_limit == 0)
        return NULL;
    char path[512];
    snprintf(path, sizeof(path), "%s/walklistd-export-XXXXXX", cache->directory);
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    unlink(path); /* only the descriptors keep it */
    wl_export_body_t *body = calloc(1, sizeof(*body));
    if (body == NULL) {
        close(fd);
        return NULL;
    }
    *body = (wl_export_body_t){cache, org_id, version, gzip, false, ticket, fd, 0};
    return body;
}

void wl_export_body_write(wl_export_body_t *body, const char *data, size_t len)
{
    if (body == NULL || body->failed)
        return;
    while (len > 0) {
        ssize_t n = write(body->fd, data, len);
        if (n <= 0 || body->size + (uint64_t)n > body->cache->body_limit) {
            body->failed = true;
            return;
        }
        body->size += (uint64_t)n;
        data += n;
        len -= (size_t)n;
    }
}

void wl_export_body_finish(wl_export_body_t *body, bool complete)
{
    if (body == NULL)
        return;
    wl_export_cache_t *cache = body->cache;
    bool stored = false;
    if (complete && !body->failed) {
        pthread_mutex_lock(&cache->lock);
        entry_t *entry = ticket_holds(cache, body->org_id, body->ticket)
                             ? find_or_add(cache, body->org_id)
                             : NULL;
        if (entry != NULL && entry->version != body->version) {
            drop_body(cache, &entry->body[0]);
            drop_body(cache, &entry->body[1]);
            entry->version = body->version;
        }
        if (entry != NULL) {
            entry->last_used = ++cache->clock;
            drop_body(cache, &entry->body[body->gzip]);
            /* Room: the least recently used organizations' bodies go first. */
            while (cache->body_bytes + body->size > cache->body_limit) {
                entry_t *oldest = NULL;
                for (size_t i = 0; i < MAX_ENTRIES; i++) {
                    entry_t *e = &cache->entries[i];
                    if (e != entry && (e->body[0].fd >= 0 || e->body[1].fd >= 0) &&
                        (oldest == NULL || e->last_used < oldest->last_used))
                        oldest = e;
                }
                if (oldest == NULL)
                    break;
                drop_body(cache, &oldest->body[0]);
                drop_body(cache, &oldest->body[1]);
            }
            if (cache->body_bytes + body->size <= cache->body_limit) {
                entry->body[body->gzip] = (cached_body_t){body->fd, body->size};
                cache->body_bytes += body->size;
                stored = true;
            }
        }
        pthread_mutex_unlock(&cache->lock);
    }
    if (!stored)
        close(body->fd);
    free(body);
}
