/* Running parameterized statements and mapping PostgreSQL failures happens here. */
#include "store/db.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *wl_db_sqlstate(const PGresult *res)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    return state ? state : "";
}

int wl_db_fail(PGconn *conn, const PGresult *res, wl_error_t *err)
{
    const char *state = wl_db_sqlstate(res);
    /* Class 08 is a connection failure, 57P0x an administrator or crash shutdown,
     * 53 insufficient resources: all transient, the client may retry. */
    bool connection_lost = strncmp(state, "08", 2) == 0 && strcmp(state, "08P01") != 0;
    if (PQstatus(conn) != CONNECTION_OK || connection_lost ||
        strncmp(state, "57P", 3) == 0 || strncmp(state, "53", 2) == 0)
        return wl_error_set(err, WL_EUNAVAILABLE, "database unavailable");
    if (strcmp(state, "57014") == 0)
        return wl_error_set(err, WL_ETIMEDOUT, "database statement timed out");
    fprintf(stderr, "walklist: database error %s: %s", state,
            res ? PQresultErrorMessage(res) : PQerrorMessage(conn));
    return wl_error_set(err, WL_EINTERNAL, NULL);
}

int wl_db_exec_params(PGconn *conn, const char *sql, int nparams, const char *const *values,
                      const int *lengths, const int *formats, PGresult **out, wl_error_t *err)
{
    PGresult *res = PQexecParams(conn, sql, nparams, NULL, values, lengths, formats, 0);
    ExecStatusType status = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
        int rc = wl_db_fail(conn, res, err);
        PQclear(res);
        return rc;
    }
    if (out != NULL)
        *out = res;
    else
        PQclear(res);
    return 0;
}

int wl_db_exec(PGconn *conn, const char *sql, int nparams, const char *const *values,
               PGresult **out, wl_error_t *err)
{
    return wl_db_exec_params(conn, sql, nparams, values, NULL, NULL, out, err);
}

int wl_db_begin(PGconn *conn, wl_error_t *err)
{
    return wl_db_exec(conn, "BEGIN", 0, NULL, NULL, err);
}

int wl_db_commit(PGconn *conn, wl_error_t *err)
{
    return wl_db_exec(conn, "COMMIT", 0, NULL, NULL, err);
}

void wl_db_rollback(PGconn *conn)
{
    if (PQtransactionStatus(conn) == PQTRANS_IDLE)
        return;
    PGresult *res = PQexec(conn, "ROLLBACK");
    PQclear(res);
}

int64_t wl_db_int64(const PGresult *res, int row, int col)
{
    return strtoll(PQgetvalue(res, row, col), NULL, 10);
}
