/* Reading the stock export from one snapshot, batch by batch, happens here. */
#include "store/stock.h"

#include <stdio.h>
#include <string.h>

#include "store/db.h"

/* Rows per FETCH: a few hundred kilobytes of text at most, and few round trips. */
#define EXPORT_BATCH_ROWS "1000"

int wl_stock_export_begin(wl_stock_export_t *export, PGconn *conn, int64_t org_id, wl_error_t *err)
{
    memset(export, 0, sizeof(*export));
    export->conn = conn;
    export->org_id = org_id;
    int rc =
        wl_db_exec(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL, NULL, err);
    if (rc != 0)
        return rc;
    char org[24];
    snprintf(org, sizeof(org), "%lld", (long long)org_id);
    const char *params[] = {org};
    PGresult *res = NULL;
    /* The first statement takes the snapshot: the version it reads is the version of the
     * rows read later, and its clock is the snapshot's time. */
    rc = wl_db_exec(conn,
                    "SELECT coalesce((SELECT version FROM export_versions WHERE org_id = $1), 0),"
                    " floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint",
                    1, params, &res, err);
    if (rc != 0) {
        wl_stock_export_end(export);
        return rc;
    }
    export->version = wl_db_int64(res, 0, 0);
    export->generated_ms = wl_db_int64(res, 0, 1);
    PQclear(res);
    return 0;
}

/* Declares the cursor on first use and fetches the next batch into export->batch. */
static int fetch_batch(wl_stock_export_t *export, wl_error_t *err)
{
    PQclear(export->batch);
    export->batch = NULL;
    export->batch_row = 0;
    int rc = 0;
    if (!export->declared) {
        char org[24];
        snprintf(org, sizeof(org), "%lld", (long long)export->org_id);
        const char *params[] = {org};
        /* The primary key (org_id, sku) delivers the rows in order, without a sort. */
        rc = wl_db_exec(export->conn,
                        "DECLARE wl_export NO SCROLL CURSOR FOR"
                        " SELECT sku, qty, location FROM stock_availability"
                        " WHERE org_id = $1 ORDER BY sku",
                        1, params, NULL, err);
        if (rc != 0)
            return rc;
        export->declared = true;
    }
    return wl_db_exec(export->conn, "FETCH FORWARD " EXPORT_BATCH_ROWS " FROM wl_export", 0, NULL,
                      &export->batch, err);
}

int wl_stock_export_next(wl_stock_export_t *export, wl_export_row_t *row, wl_error_t *err)
{
    if (export->finished)
        return 0;
    if (export->batch == NULL || export->batch_row >= PQntuples(export->batch)) {
        int rc = fetch_batch(export, err);
        if (rc != 0)
            return rc;
        if (PQntuples(export->batch) == 0) {
            export->finished = true;
            return 0;
        }
    }
    PGresult *res = export->batch;
    int i = export->batch_row++;
    row->sku = PQgetvalue(res, i, 0);
    row->qty = wl_db_int64(res, i, 1);
    row->location = PQgetisnull(res, i, 2) ? NULL : PQgetvalue(res, i, 2);
    return 1;
}

void wl_stock_export_end(wl_stock_export_t *export)
{
    PQclear(export->batch);
    export->batch = NULL;
    export->finished = true;
    /* Read only: rolling back ends the transaction and closes the cursor with it. */
    if (export->conn != NULL)
        wl_db_rollback(export->conn);
    export->conn = NULL;
}
