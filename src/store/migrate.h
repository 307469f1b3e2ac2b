/*
 * The database schema, embedded at build time from two kinds of SQL files:
 * - src/store/migrations/NNNN_name.sql: tables, indexes, triggers, types; each
 *   applied once, in order, in its own transaction, and recorded in
 *   schema_migrations with its checksum (SHA-256 of its text, hex), so that a
 *   migration edited after it was applied is noticed;
 * - src/store/functions/<name>.sql: one SQL function each (with its overloads),
 *   CREATE OR REPLACE; all of them applied again, in one transaction, by every
 *   migrate after the migrations.
 * Safe to run concurrently: an advisory lock serialises migrators.
 */
#ifndef WALKLIST_STORE_MIGRATE_H
#define WALKLIST_STORE_MIGRATE_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "walklist/error.h"

typedef struct {
    int version;
    const char *name;
    const char *sql;
} wl_migration_t;

/* One SQL function (every overload of one name), from src/store/functions/<name>.sql. */
typedef struct {
    const char *name;
    bool trigger; /* RETURNS trigger: also put in place before each migration */
    const char *sql;
} wl_function_t;

extern const wl_migration_t wl_migrations[];
extern const size_t wl_migration_count;
extern const wl_function_t wl_functions[];
extern const size_t wl_function_count;

/**
 * Runs a schema file's statements one at a time (as compiled into the binary, never user input;
 * simple query protocol), in the caller's transaction if any: Citus sends the text of some DDL
 * statements (CREATE INDEX) to its workers as it received it, and a text of several statements
 * fails there (docs/scaling-out.md). A failure is logged as what, with the file's name.
 */
int wl_migrate_run_file(PGconn *conn, const char *what, const char *name, const char *sql,
                        wl_error_t *err) WL_CHECK_RESULT;

/**
 * Applies every migration not yet applied, then every function; *applied (may be NULL)
 * counts the migrations. WL_EPRECONDITION, with the migration named in err and nothing
 * changed, when an applied migration differs from the embedded one of its number (edited
 * since, or another migration). A migration recorded without a checksum (before there were
 * checksums) is taken for the embedded one, and its checksum recorded.
 */
int wl_migrate(PGconn *conn, int *applied, wl_error_t *err) WL_CHECK_RESULT;

/** Number of embedded migrations the database has not applied yet. */
int wl_migrate_pending(PGconn *conn, int *pending, wl_error_t *err) WL_CHECK_RESULT;

/**
 * Whether the database serves the product, in one statement: the migrations recorded (how
 * many of the embedded ones are missing, in *pending; WL_EUNAVAILABLE naming those applied
 * that differ from the embedded ones, by checksum or name) and an empty admission (wl_admit),
 * which fails when a function, PL/pgSQL or a table the requests need cannot be used. 0, or
 * the failure in err (WL_EUNAVAILABLE for a database that cannot be reached or used).
 */
int wl_migrate_ready(PGconn *conn, int *pending, wl_error_t *err) WL_CHECK_RESULT;

#endif
