/*
 * Stock reads: the per-SKU export is one ordered read of stock_availability
 * (kept current by every write), streamed with COPY .. TO STDOUT inside one
 * REPEATABLE READ, READ ONLY transaction. COPY is the fastest way PostgreSQL
 * has to hand rows out (no per-batch round trips, no result sets); libpq
 * hands over one row at a time and TCP flow control pauses the server while
 * the reader is slow, so memory stays flat however large the catalogue.
 */
#ifndef WALKLIST_STORE_STOCK_H
#define WALKLIST_STORE_STOCK_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/admit.h"
#include "walklist/error.h"

typedef struct {
    const char *sku;
    int64_t qty;
    const char *location; /* NULL when the SKU has no rack assignment */
    bool removed;         /* a delta's SKU that left the export (qty 0, location NULL) */
} wl_export_row_t;

/** An export being read; caller-allocated, all fields private. */
typedef struct {
    PGconn *conn;
    int64_t org_id;
    int64_t version;      /* export_versions.version in the snapshot; 0 when never changed */
    int64_t since;        /* a delta's starting version; -1 for the full export */
    int64_t generated_ms; /* the snapshot's clock, milliseconds since the epoch */
    char *line;           /* the current COPY row (libpq memory), decoded in place */
    bool copying;         /* the COPY is under way */
    bool finished;        /* every row was read */
} wl_stock_export_t;

/**
 * Starts reading the organization's export on conn: opens the transaction,
 * whose first statement takes the snapshot and reads its data version and
 * clock into export->version and export->generated_ms. No row is read yet, so
 * a caller that only needs the version (a conditional request) stops here
 * with wl_stock_export_end. On failure the transaction is rolled back.
 *
 * since >= 0 makes it the delta from that version (a cursor) to the
 * snapshot's: the SKUs recorded in export_changes after since, each once, with
 * its current row or as removed. WL_EHISTORY when those changes are not all
 * kept any more (pruned, or the history restarted after since), or since is
 * above the organization's version (a cursor from a database restored
 * since): the caller must export in full. since equal to the version reads
 * no history at all.
 */
int wl_stock_export_begin(wl_stock_export_t *export, PGconn *conn, int64_t org_id, int64_t since,
                          wl_error_t *err) WL_CHECK_RESULT;

/**
 * The next row (of the delta: the next changed SKU), in SKU byte order: returns 1 with *row set
 * (its strings are valid until the next call), 0 after the last row, or a negative WL_E* code.
 *
 *     while ((rc = wl_stock_export_next(&export, &row, err)) == 1)
 *         emit(&row);
 */
int wl_stock_export_next(wl_stock_export_t *export, wl_export_row_t *row,
                         wl_error_t *err) WL_CHECK_RESULT;

/**
 * Ends the read whatever its state (finished, abandoned half way, failed):
 * frees the batch and rolls the transaction back, leaving conn idle (or
 * broken, which the pool notices). Calling it again does nothing.
 */
void wl_stock_export_end(wl_stock_export_t *export);

/**
 * The organization's export version read in its request's admission group (store/admit.h), so
 * that a conditional export costs its organization's first request no statement of its own.
 * Caller-owned until its request is answered; work.done then says it was read.
 */
typedef struct {
    wl_admit_work_t work; /* first: the answer's reader finds the rest from it */
    int64_t version;      /* 0 when never changed */
} wl_stock_version_work_t;

void wl_stock_version_work(wl_stock_version_work_t *work, int64_t org_id);

/** The version work work is, or NULL. */
wl_stock_version_work_t *wl_stock_version_work_of(wl_admit_work_t *work);

/** The organization's current export version (0 when never changed), in one statement. */
int wl_stock_export_version(PGconn *conn, int64_t org_id, int64_t *version,
                            wl_error_t *err) WL_CHECK_RESULT;

#endif
