/*
 * Stock reads: the per-SKU export is one ordered read of stock_availability
 * (kept current by every write), streamed row by row from PostgreSQL.
 */
#ifndef WALKLIST_STORE_STOCK_H
#define WALKLIST_STORE_STOCK_H

#include <libpq-fe.h>
#include <stdint.h>

#include "walklist/error.h"

typedef struct {
    const char *sku;
    int64_t qty;
    const char *location; /* NULL when the SKU has no rack assignment */
} wl_export_row_t;

/**
 * Reads the organization's export from one snapshot, ordered by SKU, calling
 * begin(generated_ms) once and then row() per SKU; the strings of a row are
 * valid during its call only. A callback returning non-zero stops the read
 * with that code.
 */
int wl_stock_export(PGconn *conn, int64_t org_id, int (*begin)(int64_t generated_ms, void *data),
                    int (*row)(const wl_export_row_t *row, void *data), void *data,
                    wl_error_t *err) WL_CHECK_RESULT;

#endif
