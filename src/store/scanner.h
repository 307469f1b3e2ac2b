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
 * Called with the loaded list before the load commits; a non-zero WL_E* code
 * (recorded in err) rolls the load back, so a caller that cannot build its
 * answer leaves the list pending.
 */
typedef int (*wl_scanner_loaded_fn)(const wl_loaded_list_t *loaded, void *data, wl_error_t *err);

/**
 * Loads a pending list of the organization: in one transaction, moves it
 * from pending to loaded (recording loaded_at), resolves its codes
 * (domain/resolve.h) against the products, EANs and rack assignments, and
 * hands the result to on_loaded (which may be NULL) before committing.
 * Exactly one of several concurrent callers wins; the others wait for it and
 * get WL_EPRECONDITION (as does any later caller). WL_ENOTFOUND when the
 * organization has no list with that id. On any failure nothing changes.
 */
int wl_scanner_load(PGconn *conn, int64_t org_id, const char *id, wl_arena_t *arena,
                    wl_scanner_loaded_fn on_loaded, void *data, wl_loaded_list_t *out,
                    wl_error_t *err) WL_CHECK_RESULT;

#endif
