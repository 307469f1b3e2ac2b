/*
 * Inventory writes in batches, all or nothing: the one
 * path by which CSV imports (store/import.c, rows named by line) and the
 * InventoryService (rows named by item index) write warehouses, locations,
 * products, stock, rack assignments and reservations.
 *
 * A batch is one transaction: each row's values are checked in C (shape of
 * each value), valid rows are staged with COPY into a temporary table, then
 * SQL checks references (of the caller's organization only) and duplicate
 * natural keys, the rows are upserted, and the export rows of every affected
 * SKU are refreshed (wl_refresh_availability) before the commit. Any problem
 * and nothing is written; every problem is reported, not only the first.
 *
 *     wl_inventory_batch_t batch;
 *     if (wl_inventory_batch_begin(&batch, conn, org_id, WL_INVENTORY_STOCK, &reporter,
 *                                  err) != 0)
 *         return err->code;
 *     for (size_t i = 0; i < n; i++) {
 *         wl_span_t values[3] = {sku[i], warehouse[i], on_hand_text[i]};
 *         if (wl_inventory_batch_add(&batch, i, values, err) != 0) {
 *             wl_inventory_batch_abort(&batch);
 *             return err->code;
 *         }
 *     }
 *     rc = wl_inventory_batch_finish(&batch, &rows, err); // WL_EINVAL: problems reported
 */
#ifndef WALKLIST_STORE_INVENTORY_H
#define WALKLIST_STORE_INVENTORY_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "walklist/error.h"
#include "walklist/span.h"

#define WL_INVENTORY_MAX_COLUMNS 5

/** What a batch writes; the values of a row come in the order of wl_inventory_column. */
typedef enum {
    WL_INVENTORY_WAREHOUSES,     /* code, name, kind (own|supplier): upsert by code */
    WL_INVENTORY_LOCATIONS,      /* warehouse, code, staging (true|false) */
    WL_INVENTORY_PRODUCTS,       /* sku, name, eans ('|'-separated, may be empty; replaced) */
    WL_INVENTORY_STOCK,          /* sku, warehouse, on_hand */
    WL_INVENTORY_LOCATION_STOCK, /* sku, warehouse, location, quantity */
    /* ref, sku, warehouse, quantity, status (active|released|consumed): upsert by ref */
    WL_INVENTORY_RESERVATIONS,
    /*
     * ref, sku, warehouse, quantity: new active reservations. A ref that exists as
     * the same active reservation is left alone; one with other values or another
     * status refuses the batch with WL_EEXISTS.
     */
    WL_INVENTORY_RESERVATIONS_CREATE,
    /*
     * ref: active -> released, or active -> consumed. A ref the organization does
     * not have refuses the batch with WL_ENOTFOUND, one not active with
     * WL_EPRECONDITION (WL_ENOTFOUND first when both occur).
     */
    WL_INVENTORY_RESERVATIONS_RELEASE,
    WL_INVENTORY_RESERVATIONS_CONSUME,
} wl_inventory_kind_t;

/** Number of values a row of the kind has. */
size_t wl_inventory_column_count(wl_inventory_kind_t kind);

/** Name of a column ("on_hand"), as the CSV header has it and problems report it. */
const char *wl_inventory_column(wl_inventory_kind_t kind, size_t index);

/**
 * How a batch reports. Labels are the caller's names for rows (a CSV line, an
 * item index), passed to wl_inventory_batch_add.
 */
typedef struct {
    /*
     * Receives each problem: the row's label, the column ("" for the row as a
     * whole; a column name with a suffix such as "eans[2]" when the caller
     * reports it so) and a description. Called while the batch runs.
     */
    void (*problem)(size_t label, const char *column, const char *description, void *data);
    /* Writes how a description refers to a row: "line 7", "items[7]". */
    void (*row_name)(size_t label, char *buf, size_t size, void *data);
    void *data;
} wl_inventory_reporter_t;

/**
 * Several batches of one organization in one transaction, a whole catalogue: each batch's
 * checks see the batches before it, any problem and none is written, and the export rows are
 * refreshed once, at the commit, for everything the batches changed (each file of a catalogue
 * imported alone refreshes them after it, so the stock file's rows are written again by the
 * rack assignments' file). Caller-allocated, fields private.
 */
typedef struct {
    PGconn *conn;
    int64_t org_id;
    char org[24];
    /* A bulk batch was written: the commit recomputes the organization's export rows. */
    bool whole;
    /* The SKUs of the smaller batches are in pg_temp.catalogue_skus. */
    bool skus_staged;
    /* The parts of the export rows the batches can change (wl_refresh_availability_from). */
    bool qty, location;
} wl_inventory_catalogue_t;

/** Opens the catalogue's transaction on conn, under the organization's inventory lock. */
int wl_inventory_catalogue_begin(wl_inventory_catalogue_t *catalogue, PGconn *conn, int64_t org_id,
                                 wl_error_t *err) WL_CHECK_RESULT;

/**
 * Refreshes the export rows and commits. WL_EINVAL when a SKU's available quantity would pass
 * bigint (err names it; nothing is written). The connection is out of the transaction after.
 */
int wl_inventory_catalogue_commit(wl_inventory_catalogue_t *catalogue,
                                  wl_error_t *err) WL_CHECK_RESULT;

/** Gives the catalogue up: nothing of it is written. */
void wl_inventory_catalogue_abort(wl_inventory_catalogue_t *catalogue);

/** One batch in progress; caller-allocated, fields private. */
typedef struct {
    PGconn *conn;
    /* The catalogue the batch is part of, or NULL: a transaction of its own. */
    wl_inventory_catalogue_t *catalogue;
    /* Written and released into its catalogue: nothing to roll back. */
    bool done;
    const void *kind;
    wl_inventory_reporter_t reporter;
    char org[24];
    size_t problems; /* reported so far */
    size_t rows;     /* staged so far */
    bool copying;
    char *buf; /* one COPY line, malloc'd */
    size_t len, cap;
    /* Natural keys seen so far, while rows come ordered by the key's first column: the
     * current group of rows sharing it (see note_key in inventory.c). malloc'd. */
    bool keys_distinct;    /* every staged key differs from the others, as far as known */
    size_t key_group_rows; /* rows in the current group */
    size_t key_first_len;  /* the group's first key column: key_buf[0, key_first_len) */
    char *key_buf;
    size_t key_len, key_cap;
    wl_error_t check; /* violations of the row being checked; cleared once reported */
    /* Rows go straight into the kind's table (wl_inventory_batch_begin_first); the EANs of
     * products wait in eans (a tmpfile) for product_eans. */
    bool direct;
    /* A direct batch found a problem: nothing was written or reported (see begin_first). */
    bool direct_refused;
    FILE *eans;
} wl_inventory_batch_t;

/**
 * Opens the batch's transaction on conn and starts staging. On failure nothing
 * is left open. The reporter is copied; its data must stay valid until the
 * batch is finished or aborted.
 */
int wl_inventory_batch_begin(wl_inventory_batch_t *batch, PGconn *conn, int64_t org_id,
                             wl_inventory_kind_t kind, const wl_inventory_reporter_t *reporter,
                             wl_error_t *err) WL_CHECK_RESULT;

/**
 * Like wl_inventory_batch_begin, for a caller that can give the same rows a second time (a
 * CSV file): when the organization has no rows of the kind yet (its first import of them),
 * the rows are COPYed straight into the kind's table, without staging, and the checks run on
 * what was written, under the organization's inventory lock, taken here. Then a problem of
 * any kind (a bad value, a duplicate key, an unknown reference) reports nothing: finish (or
 * the first add) sets batch->direct_refused, writes nothing, and the caller starts again with
 * wl_inventory_batch_begin, which reports every problem with its row. Kinds without a direct
 * path, and organizations that have rows of the kind, get wl_inventory_batch_begin's batch.
 *
 *     rc = wl_inventory_batch_finish(&batch, &rows, err);
 *     if (rc != 0 && batch.direct_refused)
 *         ... rewind the file, wl_inventory_batch_begin, add every row again, finish
 */
int wl_inventory_batch_begin_first(wl_inventory_batch_t *batch, PGconn *conn, int64_t org_id,
                                   wl_inventory_kind_t kind,
                                   const wl_inventory_reporter_t *reporter,
                                   wl_error_t *err) WL_CHECK_RESULT;

/**
 * wl_inventory_batch_begin and wl_inventory_batch_begin_first for a batch of the catalogue
 * (its organization's): the batch runs in the catalogue's transaction, and its finish writes
 * without committing or refreshing export rows (the catalogue's commit does both); a batch
 * that fails or is aborted leaves the catalogue as it was before the batch.
 */
int wl_inventory_batch_begin_in(wl_inventory_batch_t *batch, wl_inventory_catalogue_t *catalogue,
                                wl_inventory_kind_t kind, const wl_inventory_reporter_t *reporter,
                                wl_error_t *err) WL_CHECK_RESULT;
int wl_inventory_batch_begin_first_in(wl_inventory_batch_t *batch,
                                      wl_inventory_catalogue_t *catalogue, wl_inventory_kind_t kind,
                                      const wl_inventory_reporter_t *reporter,
                                      wl_error_t *err) WL_CHECK_RESULT;

/**
 * Checks one row (wl_inventory_column_count values, read during the call
 * only) and stages it when valid; a bad value is reported, not an error.
 * Returns a WL_E* code only when the batch cannot go on (out of memory,
 * database failure): then wl_inventory_batch_abort it.
 */
int wl_inventory_batch_add(wl_inventory_batch_t *batch, size_t label, const wl_span_t *values,
                           wl_error_t *err) WL_CHECK_RESULT;

/**
 * Checks one row's values as wl_inventory_batch_add does (the shape of each value; no
 * database), reporting each bad value through reporter. True when every value is good.
 */
bool wl_inventory_row_valid(wl_inventory_kind_t kind, size_t label, const wl_span_t *values,
                            const wl_inventory_reporter_t *reporter);

/**
 * Reports a problem the caller found itself (a CSV row with too few fields, a
 * bad list element): it counts like the batch's own, so nothing is written.
 */
void wl_inventory_batch_problem(wl_inventory_batch_t *batch, size_t label, const char *column,
                                const char *description);

/**
 * Ends staging, runs the checks and, when no problem was reported, writes and
 * commits. 0 with *rows the number of rows written; WL_EINVAL when problems
 * were reported (nothing written); WL_ENOTFOUND, WL_EPRECONDITION or
 * WL_EEXISTS when the current state refuses the batch (see the kinds; err's
 * message names the first refused row: "refs[3]: no reservation R9"); other
 * codes for failures. The connection is out of the transaction afterwards.
 */
int wl_inventory_batch_finish(wl_inventory_batch_t *batch, size_t *rows,
                              wl_error_t *err) WL_CHECK_RESULT;

/** Gives up the batch: nothing is written, the connection is out of the transaction. */
void wl_inventory_batch_abort(wl_inventory_batch_t *batch);

#endif
