/* Walk lists at rest: one row per list, codes in order of first appearance. */
#ifndef WALKLIST_STORE_LISTS_H
#define WALKLIST_STORE_LISTS_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

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

/** What an idempotent creation answered: a new list, or the first one made with the key. */
typedef struct {
    const char *id; /* arena memory */
    const char *name;
    size_t codes_count;
    bool replayed;
} wl_list_created_t;

/**
 * Creates a list under an Idempotency-Key (CONTRACT section 5): the first
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
