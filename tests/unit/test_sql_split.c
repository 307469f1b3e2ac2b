/*
 * Splitting SQL into statements (domain/sql_split.h), as migrate runs a file: semicolons in
 * strings, identifiers, dollar-quoted bodies and comments do not end a statement.
 */
#include <string.h>

#include "domain/sql_split.h"
#include "test.h"

/* Splits sql and checks the statements against expected (NULL-terminated), trimmed of blanks. */
static void check_split(const char *sql, const char *const *expected)
{
    wl_span_t text = wl_span_str(sql), statement;
    size_t pos = 0, n = 0;
    while (wl_sql_next_statement(text, &pos, &statement)) {
        while (statement.len > 0 && strchr(" \t\n", statement.base[0]) != NULL) {
            statement.base++;
            statement.len--;
        }
        char got[512];
        snprintf(got, sizeof(got), "%.*s", (int)statement.len, statement.base);
        if (expected[n] == NULL) {
            FAIL("unexpected statement %s\n", got);
            return;
        }
        CHECK_STR(got, expected[n]);
        n++;
    }
    CHECK(expected[n] == NULL);
    CHECK_INT(pos, strlen(sql));
}

int main(void)
{
    check_split("CREATE INDEX a ON t (x);\nCREATE INDEX b ON t (y);\n",
                (const char *[]){"CREATE INDEX a ON t (x)", "CREATE INDEX b ON t (y)", NULL});
    /* No statement: blanks, comments and empty statements only. */
    check_split("  -- nothing; here\n/* nor; here */ ;; \n", (const char *[]){NULL});
    check_split("", (const char *[]){NULL});
    /* The last statement needs no semicolon. */
    check_split("SELECT 1; SELECT 2", (const char *[]){"SELECT 1", "SELECT 2", NULL});
    /* Semicolons that do not end a statement. */
    check_split("INSERT INTO t VALUES ('a;b', 'it''s; x');SELECT 2",
                (const char *[]){"INSERT INTO t VALUES ('a;b', 'it''s; x')", "SELECT 2", NULL});
    check_split("SELECT E'a\\';b';SELECT 'c\\';SELECT 3",
                (const char *[]){"SELECT E'a\\';b'", "SELECT 'c\\'", "SELECT 3", NULL});
    check_split("CREATE TABLE \"x;y\" (a int);SELECT 1",
                (const char *[]){"CREATE TABLE \"x;y\" (a int)", "SELECT 1", NULL});
    check_split("CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$;"
                "DO $body$ BEGIN PERFORM 1; PERFORM '$$;'; END $body$;SELECT $1",
                (const char *[]){"CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN "
                                 "RETURN 1; END $$",
                                 "DO $body$ BEGIN PERFORM 1; PERFORM '$$;'; END $body$",
                                 "SELECT $1", NULL});
    /* A comment keeps its place before the statement it precedes; nested block comments. */
    check_split("-- one; two\nSELECT 1; /* a /* b; */ c; */ SELECT 2;",
                (const char *[]){"-- one; two\nSELECT 1", "/* a /* b; */ c; */ SELECT 2", NULL});
    /* Cut off in a string: the rest is one statement (the server names the error). */
    check_split("SELECT 'open; ", (const char *[]){"SELECT 'open; ", NULL});
    return test_exit();
}
