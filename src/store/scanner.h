/* The scanner's queue of pending walk lists, and loading one with its walk. */
#ifndef WALKLIST_STORE_SCANNER_H
#define WALKLIST_STORE_SCANNER_H

#include <libpq-fe.h>
#include <stdint.h>

#include "domain/resolve.h"
#include "walklist/arena.h"
#include "walklist/error.h"

/** A list waiting in the queue (strings in arena memory). */
typedef struct {
    const char *id;
    const char *name;
    int32_t codes_count;
    int64_t created_ms;
} wl_pending_list_t;

/**
 * The organization's pending lists, oldest first (created_at, then id), at
 * most limit of them (read through the partial index locate_lists_queue).
 * *out is arena memory.
 */
int wl_scanner_pending(PGconn *conn, int64_t org_id, int limit, wl_arena_t *arena,
                       wl_pending_list_t **out, size_t *count, wl_error_t *err) WL_CHECK_RESULT;

/** A list just loaded, with what its codes resolved to and its walk (arena memory). */
typedef struct {
    const char *name;
    int64_t loaded_ms;
    wl_resolution_t resolution;
    wl_walk_t walk;
} wl_loaded_list_t;

/**
 * Loads a pending list of the organization, in a transaction left open on conn: moves the
 * list from pending to loaded (recording loaded_at), resolves its codes (domain/resolve.h)
 * against the products, EANs and rack assignments, builds its walk into out, and writes its
 * locate_list.loaded webhook event (store/webhooks.h), so the event commits with the load. The
 * caller then builds its answer from out and ends the load with wl_scanner_load_commit, or with
 * wl_scanner_load_abandon when it cannot answer (the list stays pending): the load and the
 * answer succeed together or not at all. Exactly one of several concurrent callers wins; the
 * others wait for it and get WL_EPRECONDITION (as does any later caller). WL_ENOTFOUND when the
 * organization has no list with that id. On failure the transaction is already rolled back and
 * nothing changed.
 *
 *     if (wl_scanner_load_begin(conn, org_id, id, arena, &loaded, err) != 0)
 *         return err->code;
 *     if ((reply = answer(&loaded)) == NULL) {
 *         wl_scanner_load_abandon(conn);
 *         return wl_error_set(err, WL_ENOMEM, NULL);
 *     }
 *     rc = wl_scanner_load_commit(conn, err);
 */
int wl_scanner_load_begin(PGconn *conn, int64_t org_id, const char *id, wl_arena_t *arena,
                          wl_loaded_list_t *out, wl_error_t *err) WL_CHECK_RESULT;

/** Commits a load begun by wl_scanner_load_begin; on failure it is rolled back. */
int wl_scanner_load_commit(PGconn *conn, wl_error_t *err) WL_CHECK_RESULT;

/** Rolls back a load begun by wl_scanner_load_begin: the list stays pending. */
void wl_scanner_load_abandon(PGconn *conn);

#endif
