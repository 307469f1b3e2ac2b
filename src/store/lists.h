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

/** Lists committed together at most (see wl_lists_insert_batch). */
#define WL_LIST_BATCH_MAX 64

/** One list of a batch: its statement parameters, and what became of it. */
typedef struct {
    char org[24];
    const char *params[4]; /* org, id, name, codes as an array literal (arena memory) */
    int rc;                /* set by wl_lists_insert_batch: 0 or the WL_E* code in err */
    int64_t created_ms;
    wl_error_t *err;
} wl_list_insert_t;

/** Prepares a list for wl_lists_insert_batch; err is where its failure will be reported. */
int wl_list_insert_init(wl_list_insert_t *list, int64_t org_id, const char *id, const char *name,
                        const wl_span_t *codes, size_t codes_count, wl_arena_t *arena,
                        wl_error_t *err) WL_CHECK_RESULT;

/**
 * Inserts up to WL_LIST_BATCH_MAX lists with one commit (one pipeline, one
 * round trip) and sets each one's rc and created_ms. When the common commit
 * fails, each list is inserted alone so that a list's failure is only its
 * own; on a lost connection every list fails with WL_EUNAVAILABLE.
 */
void wl_lists_insert_batch(PGconn *conn, wl_list_insert_t *const *lists, int count);

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
