/* Running parameterized statements and mapping PostgreSQL failures happens here. */
#include "store/db.h"

#include <libpq-events.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "walklist/log.h"

const char *wl_db_sqlstate(const PGresult *res)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    return state ? state : "";
}

static void log_notice(void *arg, const char *message)
{
    (void)arg;
    wl_log("warn", "database notice", "%s", message);
}

void wl_db_log_notices(PGconn *conn)
{
    PQsetNoticeProcessor(conn, log_notice, NULL);
}

int wl_db_fail(PGconn *conn, const PGresult *res, wl_error_t *err)
{
    const char *state = wl_db_sqlstate(res);
    /* Class 08 is a connection failure, 57P0x an administrator or crash shutdown,
     * 53 insufficient resources: all transient, the client may retry. */
    bool connection_lost = strncmp(state, "08", 2) == 0 && strcmp(state, "08P01") != 0;
    if (PQstatus(conn) != CONNECTION_OK || connection_lost || strncmp(state, "57P", 3) == 0 ||
        strncmp(state, "53", 2) == 0)
        return wl_error_set(err, WL_EUNAVAILABLE, "database unavailable");
    if (strcmp(state, "57014") == 0)
        return wl_error_set(err, WL_ETIMEDOUT, "database statement timed out");
    wl_log("error", "database error", "%s: %s", state,
           res ? PQresultErrorMessage(res) : PQerrorMessage(conn));
    return wl_error_set(err, WL_EINTERNAL, NULL);
}

/* The statements prepared on one connection, found by their text's address (string
 * constants only, see wl_db_exec_hot). libpq hands this to event_proc when the connection is
 * reset (the server forgot them) or freed. */
#define PREPARED_MAX 32

typedef struct {
    int count;
    const char *sql[PREPARED_MAX];
} prepared_t;

static int event_proc(PGEventId event, void *info, void *passthrough);

static prepared_t *prepared_of(PGconn *conn)
{
    prepared_t *prepared = PQinstanceData(conn, event_proc);
    if (prepared != NULL)
        return prepared;
    prepared = calloc(1, sizeof(*prepared));
    if (prepared == NULL || !PQregisterEventProc(conn, event_proc, "walklist-prepared", NULL) ||
        !PQsetInstanceData(conn, event_proc, prepared)) {
        free(prepared);
        return NULL;
    }
    return prepared;
}

static int event_proc(PGEventId event, void *info, void *passthrough)
{
    (void)passthrough;
    if (event == PGEVT_CONNRESET || event == PGEVT_CONNDESTROY) {
        PGconn *conn = event == PGEVT_CONNRESET ? ((PGEventConnReset *)info)->conn
                                                : ((PGEventConnDestroy *)info)->conn;
        prepared_t *prepared = PQinstanceData(conn, event_proc);
        if (event == PGEVT_CONNDESTROY)
            free(prepared);
        else if (prepared != NULL)
            prepared->count = 0;
    }
    return 1;
}

static int check_result(PGconn *conn, PGresult *res, PGresult **out, wl_error_t *err)
{
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

/* Names the statement prepared for sql on this connection, preparing it first when needed;
 * name is "" when there is no room left (run it unnamed). */
static int hot_statement(PGconn *conn, const char *sql, int nparams, char name[16], wl_error_t *err)
{
    prepared_t *prepared = prepared_of(conn);
    int index = -1;
    for (int i = 0; prepared != NULL && i < prepared->count; i++)
        if (prepared->sql[i] == sql)
            index = i;
    if (index < 0 && prepared != NULL && prepared->count < PREPARED_MAX) {
        snprintf(name, 16, "wl_%d", prepared->count);
        PGresult *res = PQprepare(conn, name, sql, nparams, NULL);
        if (check_result(conn, res, NULL, err) != 0)
            return err->code;
        index = prepared->count++;
        prepared->sql[index] = sql;
    }
    if (index < 0)
        name[0] = '\0';
    else
        snprintf(name, 16, "wl_%d", index);
    return 0;
}

int wl_db_exec_hot(PGconn *conn, const char *sql, int nparams, const char *const *values,
                   PGresult **out, wl_error_t *err)
{
    char name[16];
    if (hot_statement(conn, sql, nparams, name, err) != 0)
        return err->code;
    if (name[0] == '\0')
        return wl_db_exec(conn, sql, nparams, values, out, err);
    return check_result(conn, PQexecPrepared(conn, name, nparams, values, NULL, NULL, 0), out, err);
}

int wl_db_exec_params(PGconn *conn, const char *sql, int nparams, const char *const *values,
                      const int *lengths, const int *formats, PGresult **out, wl_error_t *err)
{
    return check_result(conn, PQexecParams(conn, sql, nparams, NULL, values, lengths, formats, 0),
                        out, err);
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
