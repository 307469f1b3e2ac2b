/* Walk lists at rest: one row per list, codes in order of first appearance. */
#ifndef WALKLIST_STORE_LISTS_H
#define WALKLIST_STORE_LISTS_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/admit.h"
#include "walklist/arena.h"
#include "walklist/error.h"
#include "walklist/span.h"

typedef struct {
    const char *name;
    const char *state; /* "pending" or "loaded" */
    char **codes;
    size_t codes_count;
    int64_t created_ms;
    int64_t loaded_ms; /* -1 while pending */
} wl_list_record_t;

/**
 * A walk list's work in its request's admission group (store/admit.h): inserted, or read, in
 * the group's statement once the request is let in. Caller-owned (its arena, say) until its
 * request is answered; work.done then says it was done (read: and the list exists).
 */
typedef struct {
    wl_admit_work_t work; /* first: the answer's reader finds the rest from it */
    char id[23];
    wl_arena_t *arena;     /* where a read list goes */
    wl_list_record_t list; /* inserted: created_ms; read: the list */
} wl_list_work_t;

/** A list of id inserted for org_id with name and codes (which must outlive the work). */
void wl_lists_create_work(wl_list_work_t *work, int64_t org_id, const char *id, const char *name,
                          const wl_span_t *codes, size_t codes_count);

/** The list id of org_id read into arena memory. */
void wl_lists_get_work(wl_list_work_t *work, int64_t org_id, const char *id, wl_arena_t *arena);

/** The list work work is, when it is one of kind ("create", "get"); NULL otherwise. */
wl_list_work_t *wl_lists_work_of(wl_admit_work_t *work, const char *kind);

/** What an idempotent creation answered: a new list, or the first one made with the key. */
typedef struct {
    const char *id; /* arena memory */
    const char *name;
    size_t codes_count;
    bool replayed;
} wl_list_created_t;

/**
 * Creates a list under an Idempotency-Key (scoped to the organization): the first
 * request with the key within 24 hours creates the list; a retry with the same
 * request_hash returns that list (replayed) and writes nothing; another request
 * with the key is WL_EIDEMPOTENCY. Concurrent retries wait for the first one.
 */
int wl_lists_insert_idempotent(PGconn *conn, int64_t org_id, const char *key,
                               const char *request_hash_hex, const char *id, const char *name,
                               const wl_span_t *codes, size_t codes_count, wl_arena_t *arena,
                               wl_list_created_t *out, wl_error_t *err) WL_CHECK_RESULT;

/** Reads a list of the organization into arena memory; WL_ENOTFOUND when there is none. */
int wl_lists_get(PGconn *conn, int64_t org_id, const char *id, wl_arena_t *arena,
                 wl_list_record_t *out, wl_error_t *err) WL_CHECK_RESULT;

/** Writes a PostgreSQL array literal of the spans into arena memory; NULL when out of memory. */
char *wl_db_text_array(wl_arena_t *arena, const wl_span_t *items, size_t count);

#endif
