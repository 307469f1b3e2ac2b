/*
 * CSV imports of inventory data (header row, UTF-8, RFC 4180): one file, one
 * transaction, or the files of a whole catalogue in one. The file is read here; each row goes
 * through the same inventory batch as the InventoryService's items (store/inventory.h): checked
 * in C (shape of each value) and in SQL (references, duplicate keys), staged
 * with COPY, then upserted by their natural key; the export rows of every
 * affected SKU are refreshed in the same transaction. Any bad row and nothing
 * is imported; every bad line is reported.
 */
#ifndef WALKLIST_STORE_IMPORT_H
#define WALKLIST_STORE_IMPORT_H

#include <libpq-fe.h>
#include <stdint.h>
#include <stdio.h>

#include "store/inventory.h"
#include "walklist/error.h"

/** Receives each problem: the 1-based line, the column (may be ""), a description. */
typedef void (*wl_import_report_fn)(size_t line, const char *column, const char *description,
                                    void *data);

/** Kind names: warehouses, locations, products, stock, location-stock, reservations. */
int wl_import_kind_valid(const char *kind);

/** The CSV kinds, in the order a whole catalogue is imported: how many, the name of kind
 * i (NULL past the last) and its batch kind (i below the count). */
size_t wl_import_kind_count(void);
const char *wl_import_kind_name(size_t i);
wl_inventory_kind_t wl_import_kind(size_t i);

/**
 * Imports one CSV file of the given kind for the organization. *rows
 * receives the number of rows imported. WL_EINVAL when the file has problems
 * (each reported through report, nothing written).
 */
int wl_import_csv(PGconn *conn, int64_t org_id, const char *kind, FILE *in,
                  wl_import_report_fn report, void *report_data, size_t *rows,
                  wl_error_t *err) WL_CHECK_RESULT;

/** Receives each problem of a catalogue: the file's kind (its index among the kinds), then as
 * wl_import_report_fn. */
typedef void (*wl_import_catalogue_report_fn)(size_t kind, size_t line, const char *column,
                                              const char *description, void *data);

/**
 * Imports a whole catalogue in one transaction: files[i] is the CSV file of kind i
 * (wl_import_kind_name; NULL: none), imported in the kinds' order, each as wl_import_csv
 * would, and the export rows refreshed once, at the end. Any problem in any file and nothing is
 * imported; the import stops at the first file with problems (the later ones would report its
 * rows again as unknown references). rows[i] receives the rows of file i.
 */
int wl_import_catalogue(PGconn *conn, int64_t org_id, FILE *const files[],
                        wl_import_catalogue_report_fn report, void *report_data, size_t rows[],
                        wl_error_t *err) WL_CHECK_RESULT;

#endif
