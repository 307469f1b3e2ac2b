/* Bringing a database's schema up to the embedded migrations and functions happens here. */
#include "store/migrate.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/sql_split.h"
#include "store/db.h"
#include "store/secrets.h"
#include "store/shard_direct.h"
#include "walklist/log.h"

/* Any constant shared by all migrators works; this one spells "walk". */
#define MIGRATE_LOCK_KEY "2002872683"

#define CHECKSUM_SIZE 65 /* SHA-256 in hex, and its NUL */

/* The checksum of a migration: SHA-256 of its text as embedded, in lower-case hex. */
static int checksum_of(const wl_migration_t *m, char hex[CHECKSUM_SIZE], wl_error_t *err)
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (!EVP_Digest(m->sql, strlen(m->sql), digest, &len, EVP_sha256(), NULL) || len != 32)
        return wl_error_set(err, WL_EINTERNAL, "cannot compute the checksum of %s", m->name);
    for (unsigned int i = 0; i < len; i++)
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    return 0;
}

/* checksum is NULL in rows recorded before there were checksums: migrate fills it. */
static int ensure_table(PGconn *conn, wl_error_t *err)
{
    int rc = wl_db_exec(conn,
                        "CREATE TABLE IF NOT EXISTS schema_migrations ("
                        " version integer PRIMARY KEY, name text NOT NULL,"
                        " applied_at timestamptz NOT NULL DEFAULT now(), checksum text)",
                        0, NULL, NULL, err);
    if (rc == 0)
        rc =
            wl_db_exec(conn, "ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text",
                       0, NULL, NULL, err);
    return rc;
}

/* The recorded migrations: version, name, checksum (the caller PQclears *out). */
static int load_recorded(PGconn *conn, PGresult **out, wl_error_t *err)
{
    return wl_db_exec(conn, "SELECT version, name, checksum FROM schema_migrations", 0, NULL, out,
                      err);
}

/* The row of recorded that records version, or -1. Migrations apply by presence, not by a
 * maximum, so a migration merged with a lower number than one already applied still runs. */
static int recorded_row(const PGresult *recorded, int version)
{
    for (int row = 0; row < PQntuples(recorded); row++) {
        if (atoi(PQgetvalue(recorded, row, 0)) == version)
            return row;
    }
    return -1;
}

/*
 * Refuses a database whose applied migrations are not the embedded ones: one edited after it
 * was applied (its checksum differs), or another migration under the same number. An applied
 * migration is never run again, so the database would silently lack the edit; the change
 * belongs in a new migration.
 */
static int verify_recorded(const PGresult *recorded, wl_error_t *err)
{
    for (size_t i = 0; i < wl_migration_count; i++) {
        const wl_migration_t *m = &wl_migrations[i];
        int row = recorded_row(recorded, m->version);
        if (row < 0)
            continue;
        const char *name = PQgetvalue(recorded, row, 1);
        if (strcmp(name, m->name) != 0)
            return wl_error_set(err, WL_EPRECONDITION,
                                "migration %d is %s in this build but %s in the database: the "
                                "database was migrated from another tree",
                                m->version, m->name, name);
        if (PQgetisnull(recorded, row, 2))
            continue;
        char checksum[CHECKSUM_SIZE];
        int rc = checksum_of(m, checksum, err);
        if (rc != 0)
            return rc;
        const char *applied = PQgetvalue(recorded, row, 2);
        if (strcmp(applied, checksum) != 0)
            return wl_error_set(err, WL_EPRECONDITION,
                                "migration %s was edited after it was applied (checksum %.12s in "
                                "the database, %.12s in this build): restore it and put the "
                                "change in a new migration",
                                m->name, applied, checksum);
    }
    return 0;
}

/* A migration recorded before there were checksums is taken for the embedded one. */
static int record_checksum(PGconn *conn, const wl_migration_t *m, wl_error_t *err)
{
    char version[16], checksum[CHECKSUM_SIZE];
    snprintf(version, sizeof(version), "%d", m->version);
    int rc = checksum_of(m, checksum, err);
    const char *params[] = {version, checksum};
    if (rc == 0)
        rc = wl_db_exec(conn,
                        "UPDATE schema_migrations SET checksum = $2"
                        " WHERE version = $1 AND checksum IS NULL",
                        2, params, NULL, err);
    return rc;
}

int wl_migrate_run_file(PGconn *conn, const char *what, const char *name, const char *sql,
                        wl_error_t *err)
{
    wl_span_t text = wl_span_str(sql), statement;
    size_t pos = 0;
    int rc = 0;
    while (rc == 0 && wl_sql_next_statement(text, &pos, &statement)) {
        char *one = strndup(statement.base, statement.len);
        if (one == NULL)
            return wl_error_set(err, WL_ENOMEM, NULL);
        PGresult *res = PQexec(conn, one);
        if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK) {
            wl_log("error", what, "%s: %s", name, PQresultErrorMessage(res));
            rc = wl_db_fail(conn, res, err);
        }
        PQclear(res);
        free(one);
    }
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
            rc = wl_migrate_run_file(conn, "function failed", wl_functions[i].name,
                                     wl_functions[i].sql, err);
    }
    if (rc == 0)
        rc = wl_migrate_run_file(conn, "migration failed", m->name, m->sql, err);
    if (rc != 0)
        goto Exit;
    char version[16], checksum[CHECKSUM_SIZE];
    snprintf(version, sizeof(version), "%d", m->version);
    rc = checksum_of(m, checksum, err);
    const char *params[] = {version, m->name, checksum};
    if (rc == 0)
        rc = wl_db_exec(conn,
                        "INSERT INTO schema_migrations (version, name, checksum)"
                        " VALUES ($1, $2, $3)",
                        3, params, NULL, err);
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
            rc = wl_migrate_run_file(conn, "function failed", wl_functions[i].name,
                                     wl_functions[i].sql, err);
    }
    /* Where the tenant tables are distributed, the functions' shard-direct form replaces the
     * plain one in the same transaction, so that no moment runs without it. */
    if (rc == 0)
        rc = wl_shard_direct_install(conn, NULL, err);
    if (rc == 0)
        rc = wl_db_commit(conn, err);
    if (rc != 0)
        wl_db_rollback(conn);
    return rc;
}

int wl_migrate(PGconn *conn, int *applied, wl_error_t *err)
{
    int count = 0;
    PGresult *recorded = NULL;
    const char *lock[] = {MIGRATE_LOCK_KEY};
    int rc = wl_db_exec(conn, "SELECT pg_advisory_lock($1)", 1, lock, NULL, err);
    if (rc != 0)
        return rc;
    rc = ensure_table(conn, err);
    if (rc == 0)
        rc = load_recorded(conn, &recorded, err);
    if (rc == 0)
        rc = verify_recorded(recorded, err);
    for (size_t i = 0; rc == 0 && i < wl_migration_count; i++) {
        const wl_migration_t *m = &wl_migrations[i];
        int row = recorded_row(recorded, m->version);
        if (row >= 0) {
            if (PQgetisnull(recorded, row, 2))
                rc = record_checksum(conn, m, err);
            continue;
        }
        rc = apply_one(conn, m, err);
        if (rc == 0)
            count++;
    }
    if (rc == 0)
        rc = apply_functions(conn, err);
    if (rc == 0)
        rc = wl_secrets_make(conn, WL_SECRET_PAGE_TOKEN, err);
    PQclear(recorded);
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
    bool exists = PQgetvalue(res, 0, 0)[0] == 't';
    PQclear(res);
    res = NULL;
    if (exists && (rc = load_recorded(conn, &res, err)) != 0)
        return rc;
    *pending = 0;
    for (size_t i = 0; i < wl_migration_count; i++)
        *pending += res == NULL || recorded_row(res, wl_migrations[i].version) < 0;
    PQclear(res);
    return 0;
}

/* The embedded migrations as the readiness statement's three array parameters: versions,
 * names and checksums. All three live in *text, which the caller frees. */
static int embedded_arrays(char **text, const char *params[3], wl_error_t *err)
{
    size_t size = 0;
    for (size_t i = 0; i < wl_migration_count; i++)
        size += 12 + strlen(wl_migrations[i].name) + CHECKSUM_SIZE + 3;
    char *p = *text = malloc(size + 3 * 3);
    if (p == NULL)
        return wl_error_set(err, WL_ENOMEM, "out of memory");
    for (int column = 0; column < 3; column++) {
        params[column] = p;
        for (size_t i = 0; i < wl_migration_count; i++) {
            const wl_migration_t *m = &wl_migrations[i];
            char value[CHECKSUM_SIZE];
            int rc = 0;
            if (column == 0)
                snprintf(value, sizeof(value), "%d", m->version);
            else if (column == 2)
                rc = checksum_of(m, value, err);
            if (rc != 0)
                return rc;
            /* Names are [0-9a-z_] (cmake/embed_schema.cmake): no quotes in an array literal. */
            p += sprintf(p, "%c%s", i == 0 ? '{' : ',', column == 1 ? m->name : value);
        }
        p += sprintf(p, "}") + 1;
    }
    return 0;
}

int wl_migrate_ready(PGconn *conn, int *pending, wl_error_t *err)
{
    char *text = NULL;
    const char *params[4] = {[3] = WL_SECRET_PAGE_TOKEN};
    int rc = embedded_arrays(&text, params, err);
    if (rc != 0) {
        free(text);
        return rc;
    }
    /* A recorded migration without a checksum (recorded before there were checksums) counts as
     * applied: the next migrate records its checksum. */
    PGresult *res = PQexecParams(
        conn,
        "WITH embedded AS (SELECT * FROM unnest($1::integer[], $2::text[], $3::text[])"
        "                    AS e(version, name, checksum))"
        " SELECT (SELECT count(*) FROM embedded e WHERE NOT EXISTS"
        "          (SELECT 1 FROM schema_migrations m WHERE m.version = e.version)),"
        "  (SELECT string_agg(e.name, ', ' ORDER BY e.version)"
        "     FROM embedded e JOIN schema_migrations m ON m.version = e.version"
        "    WHERE m.name <> e.name OR m.checksum <> e.checksum),"
        "  (SELECT count(*) FROM wl_admit(60000, '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}',"
        "   '{}', '{}', '{}', '{}', '{}', '{}', '{}')),"
        "  EXISTS (SELECT 1 FROM server_secrets WHERE name = $4)",
        4, NULL, params, NULL, NULL, 0);
    free(text);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        /* A schema from before the migrations (or their checksums), or missing what requests
         * need. */
        const char *state = wl_db_sqlstate(res);
        bool behind = strcmp(state, "42P01") == 0 || strcmp(state, "42883") == 0 ||
                      strcmp(state, "42703") == 0;
        rc = behind ? wl_error_set(err, WL_EUNAVAILABLE,
                                   "database schema is not current: run walklistctl migrate")
                    : wl_db_fail(conn, res, err);
        PQclear(res);
        return rc;
    }
    *pending = atoi(PQgetvalue(res, 0, 0));
    if (!PQgetisnull(res, 0, 1))
        rc = wl_error_set(err, WL_EUNAVAILABLE,
                          "database schema differs from this build: migration(s) %s changed since "
                          "applied; walklistctl migrate names the difference",
                          PQgetvalue(res, 0, 1));
    else if (PQgetvalue(res, 0, 3)[0] != 't')
        rc = wl_error_set(err, WL_EUNAVAILABLE,
                          "the database has no page-token secret yet: run walklistctl migrate");
    PQclear(res);
    return rc;
}
