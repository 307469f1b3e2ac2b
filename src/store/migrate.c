/* Bringing a database's schema up to the embedded migrations and functions happens here. */
#include "store/migrate.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "walklist/log.h"

/* Any constant shared by all migrators works; this one spells "walk". */
#define MIGRATE_LOCK_KEY "2002872683"

/* Whether one migration is recorded (migrations apply by presence, not by a maximum, so a
 * migration merged with a lower number than one already applied still runs). */
static int is_applied(PGconn *conn, int version, bool *applied, wl_error_t *err)
{
    char text[16];
    snprintf(text, sizeof(text), "%d", version);
    const char *params[] = {text};
    PGresult *res = NULL;
    int rc = wl_db_exec(conn, "SELECT 1 FROM schema_migrations WHERE version = $1", 1, params, &res,
                        err);
    if (rc != 0)
        return rc;
    *applied = PQntuples(res) > 0;
    PQclear(res);
    return 0;
}

static int ensure_table(PGconn *conn, wl_error_t *err)
{
    return wl_db_exec(conn,
                      "CREATE TABLE IF NOT EXISTS schema_migrations ("
                      " version integer PRIMARY KEY, name text NOT NULL,"
                      " applied_at timestamptz NOT NULL DEFAULT now())",
                      0, NULL, NULL, err);
}

/* Runs one schema file inside the caller's transaction. Schema files hold several statements,
 * so they go through the simple query protocol; they are compiled into the binary, never user
 * input. */
static int run_file(PGconn *conn, const char *what, const char *name, const char *sql,
                    wl_error_t *err)
{
    PGresult *res = PQexec(conn, sql);
    int rc = 0;
    if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK) {
        wl_log("error", what, "%s: %s", name, PQresultErrorMessage(res));
        rc = wl_db_fail(conn, res, err);
    }
    PQclear(res);
    return rc;
}

static int apply_one(PGconn *conn, const wl_migration_t *m, wl_error_t *err)
{
    int rc = wl_db_begin(conn, err);
    if (rc != 0)
        return rc;
    /* A migration may CREATE TRIGGER on a function of the tree, which must exist by then (on a
     * fresh database no function does yet). A trigger function's signature cannot change (no
     * arguments, RETURNS trigger), so putting the tree's version in place first always works;
     * in the migration's transaction, so it never runs on tables the migration has not
     * changed yet. */
    for (size_t i = 0; rc == 0 && i < wl_function_count; i++) {
        if (wl_functions[i].trigger)
            rc = run_file(conn, "function failed", wl_functions[i].name, wl_functions[i].sql, err);
    }
    if (rc == 0)
        rc = run_file(conn, "migration failed", m->name, m->sql, err);
    if (rc != 0)
        goto Exit;
    char version[16];
    snprintf(version, sizeof(version), "%d", m->version);
    const char *params[] = {version, m->name};
    rc = wl_db_exec(conn, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", 2,
                    params, NULL, err);
    if (rc == 0)
        rc = wl_db_commit(conn, err);
Exit:
    if (rc != 0)
        wl_db_rollback(conn);
    return rc;
}

/*
 * Every function file, again, after the migrations: CREATE OR REPLACE keeps whatever depends
 * on a function (triggers, grants), and running them all needs no record of which changed. A
 * function whose arguments or result change is dropped by a migration first (CREATE OR
 * REPLACE cannot change them), and so is a function removed from the tree.
 *
 * PostgreSQL checks an SQL-language body at creation, so a function that calls another
 * (wl_rate_take calls wl_admit) can only be created after it. Rather than keep an order of
 * files by hand, every file is run twice: first without body checks (as pg_dump's output is
 * restored), which puts every function in place whatever the order, then with them, which
 * checks each body against the functions it calls. Functions are few and migrate is rare.
 */
static int apply_functions(PGconn *conn, wl_error_t *err)
{
    int rc = wl_db_begin(conn, err);
    static const char *const checks[] = {"SET LOCAL check_function_bodies = off",
                                         "SET LOCAL check_function_bodies = on"};
    for (size_t pass = 0; rc == 0 && pass < 2; pass++) {
        rc = wl_db_exec(conn, checks[pass], 0, NULL, NULL, err);
        for (size_t i = 0; rc == 0 && i < wl_function_count; i++)
            rc = run_file(conn, "function failed", wl_functions[i].name, wl_functions[i].sql, err);
    }
    if (rc == 0)
        rc = wl_db_commit(conn, err);
    if (rc != 0)
        wl_db_rollback(conn);
    return rc;
}

int wl_migrate(PGconn *conn, int *applied, wl_error_t *err)
{
    int count = 0;
    const char *lock[] = {MIGRATE_LOCK_KEY};
    int rc = wl_db_exec(conn, "SELECT pg_advisory_lock($1)", 1, lock, NULL, err);
    if (rc != 0)
        return rc;
    rc = ensure_table(conn, err);
    for (size_t i = 0; rc == 0 && i < wl_migration_count; i++) {
        bool applied_before = false;
        rc = is_applied(conn, wl_migrations[i].version, &applied_before, err);
        if (rc != 0 || applied_before)
            continue;
        rc = apply_one(conn, &wl_migrations[i], err);
        if (rc == 0)
            count++;
    }
    if (rc == 0)
        rc = apply_functions(conn, err);
    PGresult *res =
        PQexecParams(conn, "SELECT pg_advisory_unlock($1)", 1, NULL, lock, NULL, NULL, 0);
    PQclear(res);
    if (applied != NULL)
        *applied = count;
    return rc;
}

int wl_migrate_pending(PGconn *conn, int *pending, wl_error_t *err)
{
    PGresult *res = NULL;
    int rc =
        wl_db_exec(conn, "SELECT to_regclass('schema_migrations') IS NOT NULL", 0, NULL, &res, err);
    if (rc != 0)
        return rc;
    int exists = PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    *pending = 0;
    for (size_t i = 0; i < wl_migration_count; i++) {
        bool applied = false;
        if (exists && (rc = is_applied(conn, wl_migrations[i].version, &applied, err)) != 0)
            return rc;
        *pending += !applied;
    }
    return 0;
}

int wl_migrate_ready(PGconn *conn, int *pending, wl_error_t *err)
{
    PGresult *res = PQexec(conn, "SELECT (SELECT array_agg(version) FROM schema_migrations)::text,"
                                 " (SELECT count(*) FROM wl_admit(60000, '{}', '{}', '{}', '{}',"
                                 " '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}',"
                                 " '{}'))");
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        /* A schema from before the migrations, or missing what requests need. */
        const char *state = wl_db_sqlstate(res);
        bool behind = strcmp(state, "42P01") == 0 || strcmp(state, "42883") == 0;
        int rc = behind ? wl_error_set(err, WL_EUNAVAILABLE,
                                       "database schema is not current: run walklistctl migrate")
                        : wl_db_fail(conn, res, err);
        PQclear(res);
        return rc;
    }
    const char *recorded = PQgetvalue(res, 0, 0); /* "{1,2,3}" */
    *pending = 0;
    for (size_t i = 0; i < wl_migration_count; i++) {
        bool found = false;
        for (const char *p = recorded; *p != '\0' && !found; p++) {
            if ((*p == '{' || *p == ',') && atoi(p + 1) == wl_migrations[i].version)
                found = true;
        }
        *pending += !found;
    }
    PQclear(res);
    return 0;
}
