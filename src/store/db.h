/*
 * Thin helpers over libpq: parameterized statements only, results checked in
 * one place, and PostgreSQL failures turned into WL_E* codes (a lost
 * connection is WL_EUNAVAILABLE, anything else WL_EINTERNAL).
 */
#ifndef WALKLIST_STORE_DB_H
#define WALKLIST_STORE_DB_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "walklist/error.h"

/** How to open a connection (wl_db_connect). */
typedef struct {
    const char *conninfo;    /* libpq conninfo or URI; what it says wins over the defaults */
    const char *application; /* application_name */
    /* A server that stops answering (a partition, a dead host) fails a call after about this
     * long: TCP keepalives every second and a TCP user timeout, on both ends of the
     * connection. 0: libpq's and the kernel's defaults (hours). */
    int liveness_timeout_ms;
    int statement_timeout_ms; /* 0: none */
    /* Waits for a row lock and idleness inside a transaction end after this long (a holder
     * that went silent must not block others for longer). 0: none. */
    int lock_timeout_ms;
    /* The session never plans a sequential scan where an index can answer (enable_seqscan
     * off): a statement prepared once per connection, or a PL/pgSQL statement, keeps its plan
     * for the session, and one made while a table was small would scan it on every request
     * once it has grown. For sessions that serve requests, whose statements read rows by key. */
    bool plan_by_key;
    /* On a distributed database (Citus), a statement over every shard reaches each node through
     * one connection, its shards one after the other, instead of opening more at once (up to 16
     * a node, new backends each time the statement runs): for background sessions that read
     * across organizations, whose statements have no one waiting on them, so that they never
     * take the nodes' CPU from the requests in a burst. Ignored by plain PostgreSQL. */
    bool one_connection_per_node;
    /* Statements prepared by the session keep one plan (plan_cache_mode force_generic_plan).
     * Citus dissuades PostgreSQL from a generic plan of any statement that calls a function
     * with parameters (so that a call of a distributed function can be sent on with its
     * values), so each run of such a statement was planned again: for sessions whose
     * statements call functions not distributed, on a node that runs them itself. */
    bool generic_plans;
} wl_db_connect_t;

/** Milliseconds of CLOCK_MONOTONIC: the clock of every deadline below. */
int64_t wl_db_clock_ms(void);

/**
 * Opens a connection, giving up at deadline_ms (wl_db_clock_ms) whatever the network
 * does: NULL with WL_EUNAVAILABLE in err when the server cannot be reached in time. err's
 * message is for clients ("database unavailable"); why (may be NULL) then receives libpq's
 * reason on one line with its secrets redacted, for the operator's log.
 */
PGconn *wl_db_connect(const wl_db_connect_t *how, int64_t deadline_ms, wl_error_t *err, char *why,
                      size_t why_size);

/** WL_EINVAL, saying why with its secrets redacted, when conninfo is not one libpq can read. */
int wl_db_check_conninfo(const char *conninfo, wl_error_t *err) WL_CHECK_RESULT;

/** Closes a connection that may be broken or stuck without waiting on its peer. */
void wl_db_discard(PGconn *conn);

/**
 * Sets how long a call on conn may go without a byte from the server before it is given up
 * (WL_EUNAVAILABLE, and the connection shut: a server that keeps TCP alive but answers nothing
 * is noticed too). 0: wait as long as the server takes. Returns the previous limit, so that a
 * caller can tighten it around its own calls and restore it.
 */
int wl_db_set_silence_limit(PGconn *conn, int silence_ms);

/**
 * Watches the call this thread serves: while set, a statement whose client has given up on the
 * call (gave_up(data) true: its deadline passed, it cancelled) is given up too, within
 * WL_DB_WATCH_MS, with WL_ECANCELLED, and its connection is shut so that the server rolls its
 * transaction back and, from PostgreSQL 14, stops the statement within a second
 * (client_connection_check_interval). NULL: nothing watched.
 */
#define WL_DB_WATCH_MS 50
void wl_db_watch_call(bool (*gave_up)(void *data), void *data);

/** Starts a COPY ... TO STDOUT (sql has no parameters: COPY takes none). */
int wl_db_copy_start(PGconn *conn, const char *sql, wl_error_t *err) WL_CHECK_RESULT;

/**
 * The next row of a COPY started with wl_db_copy_start, waiting with the connection's silence
 * limit: its length with *line set (PQfreemem it), -1 after the last row (then PQgetResult
 * tells how the COPY ended), -2 on failure with err set.
 */
int wl_db_copy_row(PGconn *conn, char **line, wl_error_t *err);

/**
 * Gives up on whatever conn is in the middle of (a COPY nobody reads any more): the connection
 * is shut at once, never waited on, and the pool drops it without taking it for a failure of
 * the server (wl_db_abandoned).
 */
void wl_db_abandon(PGconn *conn);
bool wl_db_abandoned(PGconn *conn);

/** Whether an idle connection still looks usable: no error, nothing unexpected to read (a
 * server that went away sends its FATAL and closes). */
bool wl_db_idle_usable(PGconn *conn);

/**
 * Runs one parameterized statement with text parameters (values may be NULL
 * for SQL NULL). On success *out (when out is not NULL) holds the result,
 * which the caller PQclears; on failure nothing is left to clear.
 */
int wl_db_exec(PGconn *conn, const char *sql, int nparams, const char *const *values,
               PGresult **out, wl_error_t *err) WL_CHECK_RESULT;

/** Like wl_db_exec with explicit lengths and formats (binary parameters). */
int wl_db_exec_params(PGconn *conn, const char *sql, int nparams, const char *const *values,
                      const int *lengths, const int *formats, PGresult **out,
                      wl_error_t *err) WL_CHECK_RESULT;

/**
 * Like wl_db_exec for a statement run on every request: it is prepared once
 * per connection (on first use; the connection keeps up to 32) and then only
 * executed, which spares PostgreSQL the parsing and planning. sql must be a
 * string constant: the same text always means the same statement.
 */
int wl_db_exec_hot(PGconn *conn, const char *sql, int nparams, const char *const *values,
                   PGresult **out, wl_error_t *err) WL_CHECK_RESULT;

/** Sends the connection's notices (and the server's messages between queries, such as a
 * shutdown's FATAL) to wl_log instead of libpq's plain stderr lines. */
void wl_db_log_notices(PGconn *conn);

/** Maps a failed result (or NULL) to a WL_E* code recorded in err. */
int wl_db_fail(PGconn *conn, const PGresult *res, wl_error_t *err);

int wl_db_begin(PGconn *conn, wl_error_t *err) WL_CHECK_RESULT;
int wl_db_commit(PGconn *conn, wl_error_t *err) WL_CHECK_RESULT;

/** Rolls back if a transaction is open; errors are ignored (the pool drops broken connections). */
void wl_db_rollback(PGconn *conn);

/** SQLSTATE of a failed result, "" when none. */
const char *wl_db_sqlstate(const PGresult *res);

/** Parses a bigint column value. */
int64_t wl_db_int64(const PGresult *res, int row, int col);

/**
 * A timestamptz field (ISO text, as every session of wl_db_connect has it) as milliseconds
 * since the epoch, truncated like floor(extract(epoch FROM t) * 1000); INT64_MIN when it is not
 * one. Times are converted here rather than in SQL: a distributed database (Citus) refuses
 * functions that are not immutable in RETURNING, UPDATE and ON CONFLICT.
 */
int64_t wl_db_timestamp_ms(const PGresult *res, int row, int col);

/** This machine's wall clock, milliseconds since the epoch. */
int64_t wl_db_wall_clock_ms(void);

/** ms since the epoch as a timestamptz literal in UTC ("2024-06-10 08:15:30.123+00"). */
void wl_db_format_timestamp(int64_t ms, char out[64]);

#endif
