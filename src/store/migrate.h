/*
 * Versioned schema migrations. The SQL files in src/store/migrations are
 * embedded at build time (NNNN_name.sql, applied in order, each in its own
 * transaction, recorded in schema_migrations). Safe to run concurrently:
 * an advisory lock serialises migrators.
 */
#ifndef WALKLIST_STORE_MIGRATE_H
#define WALKLIST_STORE_MIGRATE_H

#include <libpq-fe.h>
#include <stddef.h>

#include "walklist/error.h"

typedef struct {
    int version;
    const char *name;
    const char *sql;
} wl_migration_t;

extern const wl_migration_t wl_migrations[];
extern const size_t wl_migration_count;

/** Applies every migration not yet applied; *applied (may be NULL) counts them. */
int wl_migrate(PGconn *conn, int *applied, wl_error_t *err) WL_CHECK_RESULT;

/** Number of embedded migrations the database has not applied yet. */
int wl_migrate_pending(PGconn *conn, int *pending, wl_error_t *err) WL_CHECK_RESULT;

/**
 * Whether the database serves the product, in one statement: the migrations recorded (how
 * many of the embedded ones are missing, in *pending) and an empty admission (wl_admit), which
 * fails when a function, PL/pgSQL or a table the requests need cannot be used. 0, or the
 * failure in err (WL_EUNAVAILABLE for a database that cannot be reached or used).
 */
int wl_migrate_ready(PGconn *conn, int *pending, wl_error_t *err) WL_CHECK_RESULT;

#endif
