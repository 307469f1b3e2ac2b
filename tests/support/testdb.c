/* Creating per-test databases from the migrated template happens here. */
#include "testdb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char base_conninfo[1024];

static void load_base(void)
{
    if (base_conninfo[0] != '\0')
        return;
    const char *dir = getenv("WALKLIST_TEST_PGDIR");
    if (dir == NULL) {
        fprintf(stderr, "WALKLIST_TEST_PGDIR is not set: run under ctest (fixture pg)\n");
        exit(1);
    }
    char path[1024];
    snprintf(path, sizeof(path), "%s/conninfo", dir);
    FILE *f = fopen(path, "r");
    if (f == NULL || fgets(base_conninfo, sizeof(base_conninfo), f) == NULL) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    base_conninfo[strcspn(base_conninfo, "\r\n")] = '\0';
}

PGconn *testdb_connect(const char *conninfo)
{
    PGconn *conn = PQconnectdb(conninfo);
    if (PQstatus(conn) != CONNECTION_OK) {
        fprintf(stderr, "cannot connect to %s: %s", conninfo, PQerrorMessage(conn));
        exit(1);
    }
    PGresult *res = PQexec(conn, "SET client_min_messages = warning");
    PQclear(res);
    return conn;
}

void testdb_exec(PGconn *conn, const char *sql)
{
    PGresult *res = PQexec(conn, sql);
    ExecStatusType status = PQresultStatus(res);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
        fprintf(stderr, "SQL failed: %s\n%s", sql, PQresultErrorMessage(res));
        exit(1);
    }
    PQclear(res);
}

const char *testdb_create(const char *name)
{
    static char conninfo[1200];
    load_base();
    PGconn *admin = testdb_connect(base_conninfo);
    char sql[256];
    snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS \"%s\" WITH (FORCE)", name);
    testdb_exec(admin, sql);
    snprintf(sql, sizeof(sql), "CREATE DATABASE \"%s\" TEMPLATE walklist_template", name);
    testdb_exec(admin, sql);
    PQfinish(admin);
    /* A later dbname keyword overrides the base's. */
    snprintf(conninfo, sizeof(conninfo), "%s dbname=%s", base_conninfo, name);
    return conninfo;
}

const char *testdb_value(PGconn *conn, const char *sql, char *buf, size_t size)
{
    PGresult *res = PQexec(conn, sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "SQL failed: %s\n%s", sql, PQresultErrorMessage(res));
        exit(1);
    }
    snprintf(buf, size, "%s",
             PQntuples(res) > 0 && !PQgetisnull(res, 0, 0) ? PQgetvalue(res, 0, 0) : "");
    PQclear(res);
    return buf;
}

long long testdb_count(PGconn *conn, const char *sql)
{
    PGresult *res = PQexec(conn, sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "SQL failed: %s\n%s", sql, PQresultErrorMessage(res));
        exit(1);
    }
    long long value = PQntuples(res) > 0 ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : -1;
    PQclear(res);
    return value;
}

void testdb_statement_counts(PGconn *conn, const char *piece, long long counts[2])
{
    const char *params[] = {piece};
    PGresult *res = PQexecParams(conn,
                                 "SELECT coalesce(sum(calls), 0), coalesce(sum(rows), 0)"
                                 " FROM pg_stat_statements WHERE dbid = (SELECT oid FROM"
                                 " pg_database WHERE datname = current_database())"
                                 " AND strpos(query, $1) > 0",
                                 1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        fprintf(stderr, "statement counts: %s", PQresultErrorMessage(res));
        exit(1);
    }
    counts[0] = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    counts[1] = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
    PQclear(res);
}
