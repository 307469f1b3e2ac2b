/*
 * Splitting a text of SQL into its statements, so that they can run one at a time
 * (store/migrate.c: Citus sends the text of some DDL statements, CREATE INDEX among them, to
 * its workers as it received it, and a text of several statements fails there). What may hide
 * a semicolon is skipped: quoted strings ('..', with '' inside, and E'..' with backslash
 * escapes), quoted identifiers, dollar-quoted bodies ($$..$$, $tag$..$tag$) and comments (--
 * to the end of the line, and block comments, nested as PostgreSQL nests them).
 */
#ifndef WALKLIST_DOMAIN_SQL_SPLIT_H
#define WALKLIST_DOMAIN_SQL_SPLIT_H

#include <stdbool.h>
#include <stddef.h>

#include "walklist/span.h"

/**
 * The next statement of sql from *pos: true with *statement set (its text without the ending
 * semicolon, comments and blanks before it included) and *pos past it; false when nothing but
 * blanks, comments and semicolons is left.
 */
bool wl_sql_next_statement(wl_span_t sql, size_t *pos, wl_span_t *statement);

#endif
