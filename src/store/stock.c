/* Reading the stock export from one snapshot happens here. */
#include "store/stock.h"

#include <stdio.h>
#include <stdlib.h>

#include "store/db.h"

int wl_stock_export(PGconn *conn, int64_t org_id, int (*begin)(int64_t generated_ms, void *data),
                    int (*row)(const wl_export_row_t *row, void *data), void *data,
                    wl_error_t *err)
{
    char org[24];
    snprintf(org, sizeof(org), "%lld", (long long)org_id);
    const char *params[] = {org};
    PGresult *res = NULL;
    int rc = wl_db_exec(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL, NULL,
                        err);
    if (rc != 0)
        return rc;
    /* The first statement takes the snapshot, so its clock is the snapshot's time. */
    rc = wl_db_exec(conn, "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint", 0,
                    NULL, &res, err);
    if (rc != 0)
        goto Exit;
    rc = begin(wl_db_int64(res, 0, 0), data);
    PQclear(res);
    res = NULL;
    if (rc != 0)
        goto Exit;

    if (!PQsendQueryParams(conn,
                           "SELECT sku, qty, location FROM stock_availability"
                           " WHERE org_id = $1 ORDER BY sku",
                           1, NULL, params, NULL, NULL, 0) ||
        !PQsetSingleRowMode(conn)) {
        rc = wl_db_fail(conn, NULL, err);
        goto Exit;
    }
    /* Rows arrive one at a time, so memory stays flat however large the catalogue. */
    while ((res = PQgetResult(conn)) != NULL) {
        ExecStatusType status = PQresultStatus(res);
        if (status == PGRES_SINGLE_TUPLE && rc == 0) {
            wl_export_row_t item = {
                .sku = PQgetvalue(res, 0, 0),
                .qty = wl_db_int64(res, 0, 1),
                .location = PQgetisnull(res, 0, 2) ? NULL : PQgetvalue(res, 0, 2),
            };
            rc = row(&item, data);
        } else if (status != PGRES_SINGLE_TUPLE && status != PGRES_TUPLES_OK && rc == 0) {
            rc = wl_db_fail(conn, res, err);
        }
        /* Drain the remaining results even after a failure, so the connection is idle again. */
        PQclear(res);
    }
    res = NULL;
    if (rc == 0)
        rc = wl_db_commit(conn, err);
Exit:
    PQclear(res);
    if (rc != 0)
        wl_db_rollback(conn);
    return rc;
}
