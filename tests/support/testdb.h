/*
 * Databases for integration and end-to-end tests: each test program gets its
 * own database, copied from the migrated template that the "pg" fixture made
 * in the private PostgreSQL (tests/pg_fixture.sh).
 */
#ifndef WALKLIST_TESTDB_H
#define WALKLIST_TESTDB_H

#include <libpq-fe.h>

/** Drops and recreates database `name` from walklist_template; returns its conninfo (static). Exits
 * on failure. */
const char *testdb_create(const char *name);

/** Connects or exits. */
PGconn *testdb_connect(const char *conninfo);

/** Runs a statement (no parameters) or exits. */
void testdb_exec(PGconn *conn, const char *sql);

/** First column of the first row as a number; -1 when no row. */
long long testdb_count(PGconn *conn, const char *sql);

/** First column of the first row, copied into buf ("" when none or NULL). */
const char *testdb_value(PGconn *conn, const char *sql, char *buf, size_t size);

/**
 * Calls and rows so far (counts[0], counts[1]) of the connection's database's statements whose
 * text holds piece, nested ones too (the test cluster's pg_stat_statements tracks all; the
 * database needs the extension). Exits on failure.
 */
void testdb_statement_counts(PGconn *conn, const char *piece, long long counts[2]);

#endif
