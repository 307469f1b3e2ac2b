/* Running parameterized statements and mapping PostgreSQL failures happens here. */
#include "store/db.h"

#include <errno.h>
#include <libpq-events.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "walklist/log.h"
#include "walklist/redact.h"

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
    /* lock_timeout: a row this request needs is held by a session that does not finish. */
    if (strcmp(state, "55P03") == 0)
        return wl_error_set(err, WL_EUNAVAILABLE, "database busy: a lock was not granted in time");
    /* numeric_value_out_of_range: data past bigint (a sum of quantities), not a fault here;
     * the caller names the rows (store/inventory.c). */
    if (strcmp(state, "22003") == 0)
        return wl_error_set(err, WL_EINVAL, "a quantity is larger than 9223372036854775807");
    wl_log("error", "database error", "%s: %s", state,
           res ? PQresultErrorMessage(res) : PQerrorMessage(conn));
    return wl_error_set(err, WL_EINTERNAL, NULL);
}

int64_t wl_db_clock_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* libpq's message on one line, its secrets redacted: what a log line may show of it. */
static void describe_failure(const char *message, char *why, size_t why_size)
{
    wl_redact_conninfo(message ? message : "", why, why_size);
    /* libpq breaks its hints onto indented lines: one space for each run of white space. */
    size_t len = 0;
    for (const char *c = why; *c != '\0'; c++) {
        bool blank = *c == ' ' || *c == '\n' || *c == '\t';
        if (!blank)
            why[len++] = *c;
        else if (len > 0 && why[len - 1] != ' ')
            why[len++] = ' ';
    }
    while (len > 0 && why[len - 1] == ' ')
        len--;
    why[len] = '\0';
}

int wl_db_check_conninfo(const char *conninfo, wl_error_t *err)
{
    char *message = NULL;
    PQconninfoOption *options = PQconninfoParse(conninfo ? conninfo : "", &message);
    if (options != NULL) {
        PQconninfoFree(options);
        return 0;
    }
    char why[256];
    describe_failure(message ? message : "out of memory", why, sizeof(why));
    PQfreemem(message);
    return wl_error_set(err, WL_EINVAL, "not a libpq connection string or URI: %s", why);
}

PGconn *wl_db_connect(const wl_db_connect_t *how, int64_t deadline_ms, wl_error_t *err, char *why,
                      size_t why_size)
{
    /* The server ends a session whose client went silent just as fast (its keepalives and
     * user timeout are session settings), so a partitioned walklistd cannot hold row locks
     * (rate-limit buckets) that other processes wait for. */
    int liveness_ms = how->liveness_timeout_ms;
    char user_timeout[16], options[512];
    snprintf(user_timeout, sizeof(user_timeout), "%d", liveness_ms);
    /* ISO dates: timestamps are read as text (wl_db_timestamp_ms). */
    int len = snprintf(options, sizeof(options), "-c datestyle=ISO -c statement_timeout=%d",
                       how->statement_timeout_ms);
    if (how->lock_timeout_ms > 0)
        len += snprintf(options + len, sizeof(options) - (size_t)len,
                        " -c lock_timeout=%d -c idle_in_transaction_session_timeout=%d",
                        how->lock_timeout_ms, how->lock_timeout_ms);
    if (how->plan_by_key)
        len += snprintf(options + len, sizeof(options) - (size_t)len, " -c enable_seqscan=off");
    /* A placeholder where Citus is not loaded (a custom setting's name has a dot). */
    if (how->generic_plans)
        len += snprintf(options + len, sizeof(options) - (size_t)len,
                        " -c plan_cache_mode=force_generic_plan");
    if (how->one_connection_per_node)
        len += snprintf(options + len, sizeof(options) - (size_t)len,
                        " -c citus.max_adaptive_executor_pool_size=1");
    if (liveness_ms > 0)
        snprintf(options + len, sizeof(options) - (size_t)len,
                 " -c tcp_keepalives_idle=1 -c tcp_keepalives_interval=1"
                 " -c tcp_keepalives_count=%d -c tcp_user_timeout=%d",
                 liveness_ms / 1000 > 1 ? liveness_ms / 1000 : 1, liveness_ms);
    /* Keywords before dbname are defaults the conninfo may override (libpq processes them in
     * order and expands dbname in place): an application_name the user gave names the
     * sessions in pg_stat_activity. The ones after it are walklist's own. */
    const char *keys[] = {"keepalives",       "keepalives_idle",  "keepalives_interval",
                          "keepalives_count", "tcp_user_timeout", "application_name",
                          "dbname",           "options",          NULL};
    const char *values[] = {
        "1",     "1", "1", "3", user_timeout, how->application, how->conninfo ? how->conninfo : "",
        options, NULL};
    int first = liveness_ms > 0 ? 0 : 5;
    PGconn *conn = PQconnectStartParams(keys + first, values + first, 1);
    if (conn == NULL) {
        wl_error_set(err, WL_ENOMEM, NULL);
        return NULL;
    }
    /* libpq's connect_timeout counts whole seconds per address tried; polling here keeps
     * the caller's deadline to the millisecond, whatever the addresses. */
    PostgresPollingStatusType polling = PGRES_POLLING_WRITING;
    while (PQstatus(conn) != CONNECTION_BAD && polling != PGRES_POLLING_OK &&
           polling != PGRES_POLLING_FAILED) {
        int64_t left = deadline_ms - wl_db_clock_ms();
        if (left <= 0)
            break;
        struct pollfd pfd = {.fd = PQsocket(conn),
                             .events = polling == PGRES_POLLING_READING ? POLLIN : POLLOUT};
        int ready = poll(&pfd, 1, (int)left);
        if (ready < 0 && errno != EINTR)
            break;
        if (ready > 0)
            polling = PQconnectPoll(conn);
    }
    if (polling != PGRES_POLLING_OK || PQstatus(conn) != CONNECTION_OK) {
        bool timed_out = PQstatus(conn) != CONNECTION_BAD && polling != PGRES_POLLING_FAILED;
        wl_error_set(err, WL_EUNAVAILABLE,
                     timed_out ? "database unavailable: no connection in time"
                               : "database unavailable");
        if (why != NULL)
            describe_failure(timed_out ? "no connection in time" : PQerrorMessage(conn), why,
                             why_size);
        wl_db_discard(conn);
        return NULL;
    }
    wl_db_log_notices(conn);
    /* A server from PostgreSQL 14 on checks every second that the client is still there while
     * a statement runs, so that one given up on (wl_db_watch_call) stops rather than runs on.
     * (Older servers refuse the setting: they stop at their next write to the client.) */
    if (PQserverVersion(conn) >= 140000) {
        int silence_ms = wl_db_set_silence_limit(conn, (int)(deadline_ms - wl_db_clock_ms()));
        PGresult *res = NULL;
        int rc =
            wl_db_exec(conn, "SET client_connection_check_interval = 1000", 0, NULL, &res, err);
        PQclear(res);
        wl_db_set_silence_limit(conn, silence_ms);
        if (rc != 0) {
            wl_db_discard(conn);
            return NULL;
        }
    }
    return conn;
}

void wl_db_discard(PGconn *conn)
{
    if (conn == NULL)
        return;
    /* PQfinish says goodbye to the server first; on a connection whose peer is silent that
     * write could wait. Shut the socket first: the goodbye then fails at once. */
    int fd = PQsocket(conn);
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
    PQfinish(conn);
}

bool wl_db_idle_usable(PGconn *conn)
{
    if (PQstatus(conn) != CONNECTION_OK)
        return false;
    struct pollfd pfd = {.fd = PQsocket(conn), .events = POLLIN};
    int ready = poll(&pfd, 1, 0);
    if (ready == 0)
        return true;
    if (ready < 0 || (pfd.revents & (POLLERR | POLLHUP | POLLNVAL)))
        return false;
    return PQconsumeInput(conn) == 1 && PQstatus(conn) == CONNECTION_OK && !PQisBusy(conn) &&
           PQnotifies(conn) == NULL;
}

/* What walklist keeps with one connection: the statements prepared on it, found by their
 * text's address (string constants only, see wl_db_exec_hot), and how long a call may go
 * without a byte from the server. libpq hands this to event_proc when the connection is reset
 * (the server forgot the statements) or freed. */
#define PREPARED_MAX 32

typedef struct {
    int count;
    const char *sql[PREPARED_MAX];
    int silence_ms; /* 0: wait as long as the server takes */
    bool abandoned; /* wl_db_abandon: shut by its borrower, not broken by the server */
} prepared_t;

static int event_proc(PGEventId event, void *info, void *passthrough);

/* The call this thread serves (wl_db_watch_call). */
static _Thread_local bool (*watched_gave_up)(void *data);
static _Thread_local void *watched_data;

void wl_db_watch_call(bool (*gave_up)(void *data), void *data)
{
    watched_gave_up = gave_up;
    watched_data = data;
}

static bool call_given_up(void)
{
    return watched_gave_up != NULL && watched_gave_up(watched_data);
}

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

int wl_db_set_silence_limit(PGconn *conn, int silence_ms)
{
    prepared_t *state = prepared_of(conn);
    if (state == NULL)
        return 0;
    int previous = state->silence_ms;
    state->silence_ms = silence_ms;
    return previous;
}

typedef enum {
    WAIT_DONE,     /* input came (or the connection failed: libpq says how) */
    WAIT_SILENT,   /* nothing for the silence limit */
    WAIT_GIVEN_UP, /* the watched call's client gave up */
} wait_outcome_t;

/* Shuts conn, so that the pool finds it broken (probing before it lends again, unless
 * abandoned) and the server rolls back what it was doing. */
static void shut(PGconn *conn, bool abandoned)
{
    prepared_t *state = abandoned ? prepared_of(conn) : NULL;
    if (state != NULL)
        state->abandoned = true;
    shutdown(PQsocket(conn), SHUT_RDWR);
    (void)PQconsumeInput(conn); /* libpq sees the end: CONNECTION_BAD */
}

/* Waits until conn has input, at most until give_up_ms (0: no limit); the watched call is
 * looked at every WL_DB_WATCH_MS. Shuts conn when it gives up. */
static wait_outcome_t await_readable(PGconn *conn, int64_t give_up_ms)
{
    for (;;) {
        int wait_ms = -1;
        if (give_up_ms != 0) {
            int64_t left = give_up_ms - wl_db_clock_ms();
            if (left <= 0) {
                shut(conn, false);
                return WAIT_SILENT;
            }
            wait_ms = (int)left;
        }
        if (watched_gave_up != NULL && (wait_ms < 0 || wait_ms > WL_DB_WATCH_MS))
            wait_ms = WL_DB_WATCH_MS;
        struct pollfd pfd = {.fd = PQsocket(conn), .events = POLLIN};
        int ready = poll(&pfd, 1, wait_ms);
        if (ready > 0 || (ready < 0 && errno != EINTR))
            return WAIT_DONE;
        if (call_given_up()) {
            shut(conn, true);
            return WAIT_GIVEN_UP;
        }
    }
}

/*
 * Waits for the answer to what was just sent, as PQexec would, but gives up once the server
 * has sent nothing for the connection's silence limit: a server that keeps its TCP connection
 * alive but does not answer (a stopped process, a host that froze) is then given up on too;
 * and once the watched call's client gave up. The connection is shut on the way out. NULL
 * with *outcome set then; otherwise the result PQexec would return.
 */
static PGresult *await_answer(PGconn *conn, wait_outcome_t *outcome)
{
    *outcome = WAIT_DONE;
    prepared_t *state = PQinstanceData(conn, event_proc);
    int silence_ms = state != NULL ? state->silence_ms : 0;
    int64_t give_up = silence_ms > 0 ? wl_db_clock_ms() + silence_ms : 0;
    PGresult *kept = NULL;
    for (;;) {
        while (PQisBusy(conn) && PQstatus(conn) == CONNECTION_OK) {
            *outcome = await_readable(conn, give_up);
            if (*outcome != WAIT_DONE) {
                PQclear(kept);
                return NULL;
            }
            if (PQconsumeInput(conn) == 0)
                break; /* PQgetResult reports the failure */
            if (give_up != 0)
                give_up = wl_db_clock_ms() + silence_ms;
        }
        PGresult *res = PQgetResult(conn);
        if (res == NULL)
            return kept;
        ExecStatusType got = PQresultStatus(res);
        if (got == PGRES_COPY_OUT || got == PGRES_COPY_IN || got == PGRES_COPY_BOTH) {
            PQclear(kept); /* the COPY's rows follow: wl_db_copy_row */
            return res;
        }
        /* Like PQexec: the last result, unless an earlier one was an error. */
        ExecStatusType status = PQresultStatus(kept);
        if (kept != NULL && (status == PGRES_FATAL_ERROR || status == PGRES_NONFATAL_ERROR)) {
            PQclear(res);
        } else {
            PQclear(kept);
            kept = res;
        }
        if (PQstatus(conn) != CONNECTION_OK && PQisBusy(conn))
            return kept;
    }
}

/* The error of a wait that gave up; 0 when it did not. */
static int wait_failed(wait_outcome_t outcome, wl_error_t *err)
{
    if (outcome == WAIT_SILENT)
        return wl_error_set(err, WL_EUNAVAILABLE, "database unavailable: no answer in time");
    if (outcome == WAIT_GIVEN_UP)
        return wl_error_set(err, WL_ECANCELLED, "the client gave up on the call");
    return 0;
}

/* Takes what a PQsend* call started (sent: its return value) to its result; NULL with err set
 * when the wait gave up. */
static PGresult *answer_of(PGconn *conn, int sent, wl_error_t *err, bool *gave_up)
{
    *gave_up = false;
    if (!sent)
        return NULL; /* PQerrorMessage says why; check_result maps it */
    wait_outcome_t outcome;
    PGresult *res = await_answer(conn, &outcome);
    *gave_up = wait_failed(outcome, err) != 0;
    return res;
}

/* Waits (with the connection's silence limit) until conn has input. */
static wait_outcome_t await_input(PGconn *conn)
{
    prepared_t *state = PQinstanceData(conn, event_proc);
    int silence_ms = state != NULL ? state->silence_ms : 0;
    return await_readable(conn, silence_ms > 0 ? wl_db_clock_ms() + silence_ms : 0);
}

int wl_db_copy_start(PGconn *conn, const char *sql, wl_error_t *err)
{
    bool gave_up;
    PGresult *res = answer_of(conn, PQsendQuery(conn, sql), err, &gave_up);
    if (gave_up)
        return err->code;
    int rc = PQresultStatus(res) == PGRES_COPY_OUT ? 0 : wl_db_fail(conn, res, err);
    PQclear(res);
    return rc;
}

int wl_db_copy_row(PGconn *conn, char **line, wl_error_t *err)
{
    for (;;) {
        int len = PQgetCopyData(conn, line, 1);
        if (len != 0)
            return len >= -1 ? len : (wl_db_fail(conn, NULL, err), -2);
        if (wait_failed(await_input(conn), err) != 0)
            return -2;
        if (PQconsumeInput(conn) == 0) {
            wl_db_fail(conn, NULL, err);
            return -2;
        }
    }
}

void wl_db_abandon(PGconn *conn)
{
    prepared_t *state = prepared_of(conn);
    if (state != NULL)
        state->abandoned = true;
    shutdown(PQsocket(conn), SHUT_RDWR);
}

bool wl_db_abandoned(PGconn *conn)
{
    prepared_t *state = PQinstanceData(conn, event_proc);
    return state != NULL && state->abandoned;
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
        bool gave_up;
        PGresult *res =
            answer_of(conn, PQsendPrepare(conn, name, sql, nparams, NULL), err, &gave_up);
        if (gave_up)
            return err->code;
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
    bool gave_up;
    PGresult *res = answer_of(conn, PQsendQueryPrepared(conn, name, nparams, values, NULL, NULL, 0),
                              err, &gave_up);
    return gave_up ? err->code : check_result(conn, res, out, err);
}

int wl_db_exec_params(PGconn *conn, const char *sql, int nparams, const char *const *values,
                      const int *lengths, const int *formats, PGresult **out, wl_error_t *err)
{
    bool gave_up;
    PGresult *res =
        answer_of(conn, PQsendQueryParams(conn, sql, nparams, NULL, values, lengths, formats, 0),
                  err, &gave_up);
    return gave_up ? err->code : check_result(conn, res, out, err);
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

int64_t wl_db_wall_clock_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

void wl_db_format_timestamp(int64_t ms, char out[64])
{
    time_t seconds = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&seconds, &tm);
    snprintf(out, 64, "%04d-%02d-%02d %02d:%02d:%02d.%03d+00", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

int64_t wl_db_timestamp_ms(const PGresult *res, int row, int col)
{
    const char *text = PQgetvalue(res, row, col);
    int year, month, day, hour, minute, second, used = 0;
    if (text == NULL || sscanf(text, "%4d-%2d-%2d %2d:%2d:%2d%n", &year, &month, &day, &hour,
                               &minute, &second, &used) != 6)
        return INT64_MIN;
    const char *p = text + used;
    int64_t millis = 0;
    if (*p == '.') {
        int digits = 0;
        for (p++; *p >= '0' && *p <= '9'; p++)
            if (digits++ < 3)
                millis = millis * 10 + (*p - '0');
        for (; digits < 3; digits++)
            millis *= 10;
    }
    /* The session's UTC offset: +HH, +HH:MM or +HH:MM:SS. */
    int64_t offset_s = 0;
    if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1, part[3] = {0, 0, 0}, parts = 0;
        for (p++; parts < 3 && *p >= '0' && *p <= '9'; parts++) {
            part[parts] = (p[0] - '0') * 10 + (p[1] >= '0' && p[1] <= '9' ? p[1] - '0' : 0);
            p += 2;
            if (*p == ':')
                p++;
        }
        offset_s = sign * (part[0] * 3600 + part[1] * 60 + part[2]);
    }
    struct tm tm = {.tm_year = year - 1900,
                    .tm_mon = month - 1,
                    .tm_mday = day,
                    .tm_hour = hour,
                    .tm_min = minute,
                    .tm_sec = second};
    return ((int64_t)timegm(&tm) - offset_s) * 1000 + millis;
}

int64_t wl_db_int64(const PGresult *res, int row, int col)
{
    return strtoll(PQgetvalue(res, row, col), NULL, 10);
}
