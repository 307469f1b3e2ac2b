/*
 * The stock export's snapshot cache: per organization, the export version
 * last seen and the bodies already made for it (plain and gzip), so that an
 * unchanged export costs no export query. A conditional request that
 * matches is answered 304; a full one gets the cached body from a file the
 * kernel sends (page cache, not process memory).
 *
 * The version is trusted from memory until a write announces a change of the
 * organization at commit (NOTIFY wl_export_changed, wl__export_bump), which
 * the core hears on its announcements connection and hands on
 * (wl_core_export_changes_subscribe); this process's own writes drop their
 * organization before they are answered (wl_core_on_export_change). While
 * that connection is down nothing is trusted and each request reads the
 * version (one single-row statement), and when it drops everything is
 * forgotten (announcements may have been missed); an entry is stored only when no
 * change was announced between its ticket (taken before the snapshot) and
 * the store. The price is staleness of up to the announcement's delivery
 * delay (milliseconds, as for a read replica): a client that writes through
 * another process (or walklistctl) and exports at once may see the previous
 * version.
 *
 * With WALKLIST_EXPORT_CACHE_TRUST_NOTIFY=0 each request reads the current
 * version instead: a body cached under that version is exactly what the
 * export would read, so the cache is never stale, across any number of
 * processes, for one short statement per request.
 *
 * Bodies are kept byte for byte as first sent, generatedAt included: a
 * strong ETag promises the same bytes, and generatedAt remains the time of
 * the snapshot they show (nothing changed since).
 *
 * Limits: versions of at most 131072 organizations and WALKLIST_EXPORT_CACHE_MB megabytes of
 * bodies (default 1024; 0 keeps no bodies), least recently used first out.
 * Files live, unlinked, in TMPDIR (default /tmp).
 */
#ifndef WALKLIST_GATEWAY_EXPORT_CACHE_H
#define WALKLIST_GATEWAY_EXPORT_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "walklist/core.h"
#include "walklist/error.h"

typedef struct wl_export_cache wl_export_cache_t;

typedef struct {
    uint64_t body_limit_mb; /* bodies kept, in MiB (WALKLIST_EXPORT_CACHE_MB); 0: versions only */
    /* Versions trusted from memory until an announcement (WALKLIST_EXPORT_CACHE_TRUST_NOTIFY,
     * default on); off: each request reads the version. */
    bool trust_notify;
    const char *directory; /* where body files live, unlinked (TMPDIR); NULL: /tmp */
    /* Also told of every change the cache hears of (an announcement or this process's own
     * write), with org_id 0 when announcements may have been missed (the core's announcements
     * connection dropped or came back): the stock watchers' wake-up (stock_watch.h), so that
     * one subscription serves both. Called without the cache's lock, on the core's
     * announcements thread or the writer's. NULL: none. */
    void (*on_change)(int64_t org_id, void *data);
    void *on_change_data;
} wl_export_cache_config_t;

/**
 * Creates the cache of core's exports, subscribed to other processes' export changes and
 * registered for the core's own writes (wl_core_on_export_change). Its owner destroys it after
 * the last export that uses it; without one, every export is read from the database.
 */
int wl_export_cache_create(wl_core_t *core, const wl_export_cache_config_t *config,
                           wl_export_cache_t **out, wl_error_t *err) WL_CHECK_RESULT;

/** Unsubscribes, unregisters from the core and frees everything. */
void wl_export_cache_destroy(wl_export_cache_t *cache);

/** Taken before an export's snapshot; stores made with it are refused after a change. */
typedef struct {
    uint64_t epoch;
    uint64_t generation;
    bool valid;   /* announcements were heard */
    bool any_org; /* of no organization: refused after a change of any */
} wl_export_ticket_t;

/** org_id 0: the organization is not known yet (a key not checked): any change refuses it. */
wl_export_ticket_t wl_export_cache_ticket(wl_export_cache_t *cache, int64_t org_id);

/** The organization's current export version, when trusted from memory (see above). */
bool wl_export_cache_version(wl_export_cache_t *cache, int64_t org_id, int64_t *version);

/** Remembers the version read in a snapshot taken after ticket. */
void wl_export_cache_remember(wl_export_cache_t *cache, int64_t org_id, wl_export_ticket_t ticket,
                              int64_t version);

/**
 * The cached body of (org_id, version, gzip): a new file descriptor the
 * caller closes, positioned anywhere (read it with pread), and its size in
 * *size; -1 when there is none.
 */
int wl_export_cache_open_body(wl_export_cache_t *cache, int64_t org_id, int64_t version, bool gzip,
                              uint64_t *size);

/** The size of the cached body of (org_id, version, gzip); false when there is none. */
bool wl_export_cache_body_size(wl_export_cache_t *cache, int64_t org_id, int64_t version, bool gzip,
                               uint64_t *size);

/** Whether a body of the organization is cached, of whatever version and encoding. */
bool wl_export_cache_has_body(wl_export_cache_t *cache, int64_t org_id);

/** A body being recorded while it is sent. */
typedef struct wl_export_body wl_export_body_t;

/** Starts recording a body; NULL when it will not be cached (no room, nothing heard, no file). */
wl_export_body_t *wl_export_cache_body_begin(wl_export_cache_t *cache, int64_t org_id,
                                             int64_t version, bool gzip, wl_export_ticket_t ticket);

/** Appends bytes; on a write failure the recording is given up quietly. */
void wl_export_body_write(wl_export_body_t *body, const char *data, size_t len);

/**
 * Ends the recording: with complete, the body becomes the cached body of
 * its (organization, version, encoding) unless a change was announced since
 * its ticket. Frees body either way; NULL is fine.
 */
void wl_export_body_finish(wl_export_body_t *body, bool complete);

#endif
