/*
 * The walklistctl binary ($WALKLISTCTL) run as an operator would run it, against a real
 * PostgreSQL: stdout, stderr and the exit code of each command are checked separately.
 */
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/keys.h"
#include "store/migrate.h"
#include "test.h"
#include "testdb.h"

extern char **environ;

static PGconn *conn;
static const char *db_url;      /* the test's database */
static const char *walklistctl; /* $WALKLISTCTL */
static char tmp_dir[64];

typedef struct {
    int status; /* exit code; -1 when the process did not exit normally */
    char *out;
    char *err;
} run_t;

static char *slurp_fd(int fd)
{
    off_t size = lseek(fd, 0, SEEK_END);
    char *text = malloc(size > 0 ? (size_t)size + 1 : 1);
    if (text == NULL || lseek(fd, 0, SEEK_SET) != 0) {
        fprintf(stderr, "cannot read captured output\n");
        exit(1);
    }
    size_t have = 0;
    while (size > 0 && have < (size_t)size) {
        ssize_t n = read(fd, text + have, (size_t)size - have);
        if (n <= 0)
            break;
        have += (size_t)n;
    }
    text[have] = '\0';
    return text;
}

static int capture_file(const char *what)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s-XXXXXX", tmp_dir, what);
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        exit(1);
    }
    unlink(path);
    return fd;
}

static void run_free(run_t *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

#define MAX_ARGS 16

/*
 * Runs walklistctl with args (NULL-terminated). WALKLIST_DATABASE_URL is removed from the
 * environment and set to env_url when that is not NULL; stdin comes from stdin_path (NULL:
 * /dev/null).
 */
static void run_argv(run_t *r, const char *env_url, const char *stdin_path, const char *const *args)
{
    const char *argv[MAX_ARGS + 2];
    size_t argc = 0;
    argv[argc++] = walklistctl;
    for (size_t i = 0; args[i] != NULL && i < MAX_ARGS; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;

    char *envp[512];
    size_t envc = 0;
    static char url_var[1400];
    for (char **e = environ; *e != NULL && envc < 510; e++) {
        if (strncmp(*e, "WALKLIST_DATABASE_URL=", 22) != 0)
            envp[envc++] = *e;
    }
    if (env_url != NULL) {
        snprintf(url_var, sizeof(url_var), "WALKLIST_DATABASE_URL=%s", env_url);
        envp[envc++] = url_var;
    }
    envp[envc] = NULL;

    int out_fd = capture_file("out"), err_fd = capture_file("err");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, stdin_path ? stdin_path : "/dev/null", O_RDONLY,
                                     0);
    posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, err_fd, 2);
    pid_t pid;
    int rc = posix_spawn(&pid, walklistctl, &actions, NULL, (char *const *)argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        fprintf(stderr, "cannot run %s: %s\n", walklistctl, strerror(rc));
        exit(1);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
    }
    r->status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r->out = slurp_fd(out_fd);
    r->err = slurp_fd(err_fd);
    close(out_fd);
    close(err_fd);
}

static void run_va(run_t *r, const char *env_url, const char *stdin_path, const char *first,
                   va_list ap)
{
    const char *args[MAX_ARGS + 1];
    size_t count = 0;
    for (const char *arg = first; arg != NULL && count < MAX_ARGS; arg = va_arg(ap, const char *))
        args[count++] = arg;
    args[count] = NULL;
    run_argv(r, env_url, stdin_path, args);
}

/* walklistctl ARGS... (NULL-terminated), without WALKLIST_DATABASE_URL. */
static void run(run_t *r, const char *first, ...)
{
    va_list ap;
    va_start(ap, first);
    run_va(r, NULL, NULL, first, ap);
    va_end(ap);
}

/* walklistctl ARGS... with WALKLIST_DATABASE_URL=env_url (NULL: unset) and stdin. */
static void run_env(run_t *r, const char *env_url, const char *stdin_path, const char *first, ...)
{
    va_list ap;
    va_start(ap, first);
    run_va(r, env_url, stdin_path, first, ap);
    va_end(ap);
}

static void show(const char *what, const run_t *r)
{
    fprintf(stderr, "  %s: exit %d\n  stdout: %s\n  stderr: %s\n", what, r->status, r->out, r->err);
}

#define CHECK_CONTAINS(haystack, needle)                                                           \
    do {                                                                                           \
        test_checks++;                                                                             \
        if (strstr((haystack), (needle)) == NULL) {                                                \
            test_failures++;                                                                       \
            fprintf(stderr, "%s:%d: \"%s\" not found in: %s\n", __FILE__, __LINE__, (needle),      \
                    (haystack));                                                                   \
        }                                                                                          \
    } while (0)

#define CHECK_LACKS(haystack, needle)                                                              \
    do {                                                                                           \
        test_checks++;                                                                             \
        if (strstr((haystack), (needle)) != NULL) {                                                \
            test_failures++;                                                                       \
            fprintf(stderr, "%s:%d: \"%s\" unexpectedly in: %s\n", __FILE__, __LINE__, (needle),   \
                    (haystack));                                                                   \
        }                                                                                          \
    } while (0)

static long long sql_count_on(PGconn *db, const char *sql, const char *param)
{
    const char *params[] = {param};
    PGresult *res = PQexecParams(db, sql, param ? 1 : 0, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "SQL failed: %s\n%s", sql, PQresultErrorMessage(res));
        exit(1);
    }
    long long value = PQntuples(res) ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : -1;
    PQclear(res);
    return value;
}

static long long sql_count(const char *sql, const char *param)
{
    return sql_count_on(conn, sql, param);
}

static const char *sql_text(const char *sql, const char *param, char *buf, size_t size)
{
    const char *params[] = {param};
    PGresult *res = PQexecParams(conn, sql, param ? 1 : 0, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "SQL failed: %s\n%s", sql, PQresultErrorMessage(res));
        exit(1);
    }
    snprintf(buf, size, "%s",
             PQntuples(res) == 0      ? "(no row)"
             : PQgetisnull(res, 0, 0) ? "(null)"
                                      : PQgetvalue(res, 0, 0));
    PQclear(res);
    return buf;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

/* A digest of every inventory table: equal digests, equal data. */
static void inventory_digest(char digest[33])
{
    testdb_value(conn,
                 "SELECT md5(concat_ws('#',"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM warehouses t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM locations t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM products t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM product_eans t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM stock t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM location_stock t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM reservations t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM stock_availability t)))",
                 digest, 33);
}

static void test_usage(void)
{
    run_t r;
    struct {
        const char *what;
        const char *args[6];
        const char *message; /* also on stderr, besides the usage */
    } cases[] = {
        {"no command", {NULL}, NULL},
        {"unknown command", {"--database-url", db_url, "frobnicate", NULL}, NULL},
        {"unknown subcommand", {"--database-url", db_url, "org", "delete", "x", NULL}, NULL},
        {"key alone", {"--database-url", db_url, "key", NULL}, NULL},
        {"import without a file", {"--database-url", db_url, "import", "stock", NULL}, NULL},
        {"org create without a slug", {"--database-url", db_url, "org", "create", NULL}, NULL},
        {"unknown option", {"--database-url", db_url, "--bogus", "migrate", NULL}, "--bogus"},
        {"option without a value", {"--database-url", db_url, "demo", "--org", NULL}, "--org"},
        {"missing --database-url", {"migrate", NULL}, "--database-url"},
        {"missing --database-url, other command", {"org", "create", "x", NULL}, "--database-url"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        run_argv(&r, NULL, NULL, cases[i].args);
        int failures = test_failures;
        CHECK_INT(r.status, 2);
        CHECK_CONTAINS(r.err, "usage: walklistctl");
        if (cases[i].message != NULL)
            CHECK_CONTAINS(r.err, cases[i].message);
        CHECK_STR(r.out, "");
        if (test_failures != failures)
            show(cases[i].what, &r);
        run_free(&r);
    }
    CHECK_INT(sql_count("SELECT count(*) FROM organizations WHERE slug = 'x'", NULL), 0);

    run_env(&r, NULL, NULL, "--help", NULL);
    CHECK_INT(r.status, 0);
    CHECK_CONTAINS(r.out, "usage: walklistctl");
    CHECK_CONTAINS(r.out, "key create --org SLUG --scopes");
    run_free(&r);

    /* The database URL may come from the environment instead. */
    run_env(&r, db_url, NULL, "migrate", NULL);
    CHECK_INT(r.status, 0);
    CHECK_CONTAINS(r.err, "0 migration(s) applied");
    run_free(&r);

    /* A database that is not there: a clear message, exit 1. */
    run(&r, "--database-url", "host=/nonexistent-walklist-socket-dir dbname=x connect_timeout=2",
        "migrate", NULL);
    CHECK_INT(r.status, 1);
    CHECK_CONTAINS(r.err, "cannot connect");
    run_free(&r);
}

/*
 * What migrate may change, in one hash: functions (signature, language, body), columns with
 * their types and defaults, indexes, constraints, triggers, and the recorded migrations.
 */
static const char *schema_fingerprint(PGconn *db, char *buf, size_t size)
{
    return testdb_value(
        db,
        "SELECT md5(string_agg(d, E'\\n' ORDER BY d)) FROM ("
        " SELECT 'f ' || p.oid::regprocedure || ' ' || p.prolang || ' ' || p.prosrc AS d"
        "   FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace"
        " UNION ALL SELECT 'c ' || a.attrelid::regclass || '.' || a.attname || ' '"
        "   || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull || ' '"
        "   || coalesce(pg_get_expr(ad.adbin, ad.adrelid), '')"
        "   FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
        "   LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum"
        "  WHERE c.relnamespace = 'public'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped"
        " UNION ALL SELECT 'i ' || indexdef FROM pg_indexes WHERE schemaname = 'public'"
        " UNION ALL SELECT 'k ' || conrelid::regclass || ' ' || conname || ' '"
        "   || pg_get_constraintdef(oid) FROM pg_constraint"
        "  WHERE connamespace = 'public'::regnamespace"
        " UNION ALL SELECT 't ' || pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal"
        " UNION ALL SELECT 'm ' || version || ' ' || name || ' ' || coalesce(checksum, '-')"
        "   || ' ' || applied_at FROM schema_migrations) s",
        buf, size);
}

/* walklistctl migrate on db_url: exit 0, and how many migrations it applied. */
static void migrate_ok(const char *url, size_t expect_applied)
{
    char expected[64];
    snprintf(expected, sizeof(expected), "%zu migration(s) applied", expect_applied);
    run_t r;
    run(&r, "--database-url", url, "migrate", NULL);
    int failures = test_failures;
    CHECK_INT(r.status, 0);
    CHECK_CONTAINS(r.err, expected);
    CHECK_STR(r.out, "");
    if (test_failures != failures)
        show("migrate", &r);
    run_free(&r);
}

/* Every function of src/store/functions is re-applied by every migrate: one dropped, or
 * changed behind migrate's back, is back as the file says. */
static void test_migrate_functions(PGconn *db, const char *url, const char *fingerprint)
{
    for (size_t i = 0; i < wl_function_count; i++)
        CHECK_INT(sql_count_on(db, "SELECT (count(*) > 0)::int FROM pg_proc WHERE proname = $1",
                               wl_functions[i].name),
                  1);
    CHECK(wl_function_count > 0);
    char now[64];
    testdb_exec(db, "DROP FUNCTION wl_rate_take(bigint, text, integer, integer, integer, integer,"
                    " timestamptz, integer)");
    testdb_exec(db, "DROP FUNCTION wl_admit");
    testdb_exec(db, "CREATE OR REPLACE FUNCTION wl__export_bump(p_org bigint, p_reset boolean)"
                    " RETURNS bigint LANGUAGE plpgsql AS $$BEGIN RETURN 0; END$$");
    CHECK(strcmp(schema_fingerprint(db, now, sizeof(now)), fingerprint) != 0);
    migrate_ok(url, 0);
    CHECK_STR(schema_fingerprint(db, now, sizeof(now)), fingerprint);
}

/*
 * An applied migration is recorded with the SHA-256 of its text. One that differs from the
 * database's record (edited after it was applied, simulated here by changing the record) is
 * refused by migrate, naming it, with nothing changed (not even the functions re-applied), and
 * makes the readiness check fail, naming it.
 */
static void test_migrate_checksums(PGconn *db, const char *url, const char *fingerprint)
{
    for (size_t i = 0; i < wl_migration_count; i++)
        CHECK_INT(sql_count_on(db,
                               "SELECT count(*) FROM schema_migrations"
                               " WHERE checksum = encode(sha256(convert_to($1, 'UTF8')), 'hex')",
                               wl_migrations[i].sql),
                  1);
    const wl_migration_t *first = &wl_migrations[0];
    char sql[256], now[64], edited[160], checksum[80];
    snprintf(sql, sizeof(sql), "SELECT checksum FROM schema_migrations WHERE version = %d",
             first->version);
    testdb_value(db, sql, checksum, sizeof(checksum));
    snprintf(edited, sizeof(edited), "migration %s was edited after it was applied", first->name);
    snprintf(sql, sizeof(sql),
             "UPDATE schema_migrations SET checksum = repeat('0', 64) WHERE version = %d",
             first->version);
    testdb_exec(db, sql);
    testdb_exec(db, "DROP FUNCTION wl_refresh_availability(bigint, text[])");
    char before[64];
    schema_fingerprint(db, before, sizeof(before));

    run_t r;
    run(&r, "--database-url", url, "migrate", NULL);
    CHECK_INT(r.status, 1);
    CHECK_CONTAINS(r.err, edited);
    CHECK_CONTAINS(r.err, "checksum 000000000000 in the database");
    CHECK_STR(r.out, "");
    run_free(&r);
    CHECK_STR(schema_fingerprint(db, now, sizeof(now)), before);

    /* What /readyz asks (wl_core_ready). */
    wl_error_t err;
    wl_error_init(&err);
    int pending = -1;
    CHECK_INT(wl_migrate_ready(db, &pending, &err), WL_EUNAVAILABLE);
    CHECK_CONTAINS(err.message, "database schema differs from this build");
    CHECK_CONTAINS(err.message, first->name);

    /* The file back as it was applied: migrate goes on (and puts the function back). */
    snprintf(sql, sizeof(sql), "UPDATE schema_migrations SET checksum = '%s' WHERE version = %d",
             checksum, first->version);
    testdb_exec(db, sql);
    migrate_ok(url, 0);
    CHECK_STR(schema_fingerprint(db, now, sizeof(now)), fingerprint);

    /* A migration recorded before there were checksums is ready, and gets its checksum. */
    snprintf(sql, sizeof(sql), "UPDATE schema_migrations SET checksum = NULL WHERE version = %d",
             first->version);
    testdb_exec(db, sql);
    wl_error_init(&err);
    CHECK_INT(wl_migrate_ready(db, &pending, &err), 0);
    CHECK_INT(pending, 0);
    migrate_ok(url, 0);
    CHECK_STR(schema_fingerprint(db, now, sizeof(now)), fingerprint);

    /* Another migration recorded under the same number. */
    snprintf(sql, sizeof(sql), "UPDATE schema_migrations SET name = 'other' WHERE version = %d",
             first->version);
    testdb_exec(db, sql);
    run(&r, "--database-url", url, "migrate", NULL);
    CHECK_INT(r.status, 1);
    snprintf(edited, sizeof(edited), "migration %d is %s in this build but other in the database",
             first->version, first->name);
    CHECK_CONTAINS(r.err, edited);
    run_free(&r);
    wl_error_init(&err);
    CHECK_INT(wl_migrate_ready(db, &pending, &err), WL_EUNAVAILABLE);
    CHECK_CONTAINS(err.message, first->name);
    snprintf(sql, sizeof(sql), "UPDATE schema_migrations SET name = '%s' WHERE version = %d",
             first->name, first->version);
    testdb_exec(db, sql);

    /* A database migrated before there were checksums: not ready until migrate adds them. */
    testdb_exec(db, "ALTER TABLE schema_migrations DROP COLUMN checksum");
    wl_error_init(&err);
    CHECK_INT(wl_migrate_ready(db, &pending, &err), WL_EUNAVAILABLE);
    CHECK_CONTAINS(err.message, "run walklistctl migrate");
    migrate_ok(url, 0);
    CHECK_STR(schema_fingerprint(db, now, sizeof(now)), fingerprint);
    wl_error_init(&err);
    CHECK_INT(wl_migrate_ready(db, &pending, &err), 0);
}

static void test_migrate(void)
{
    /* An empty database next to the test's own: the first migrate applies everything. */
    const char *pgdir = getenv("WALKLIST_TEST_PGDIR");
    char path[1024], base[1024] = "";
    snprintf(path, sizeof(path), "%s/conninfo", pgdir ? pgdir : ".");
    FILE *f = fopen(path, "r");
    if (f == NULL || fgets(base, sizeof(base), f) == NULL) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    base[strcspn(base, "\r\n")] = '\0';
    PGconn *admin = testdb_connect(base);
    testdb_exec(admin, "DROP DATABASE IF EXISTS wl_test_ctl_empty WITH (FORCE)");
    testdb_exec(admin, "CREATE DATABASE wl_test_ctl_empty");
    char empty_url[1200];
    snprintf(empty_url, sizeof(empty_url), "%s dbname=wl_test_ctl_empty", base);

    CHECK(wl_migration_count > 0);
    migrate_ok(empty_url, wl_migration_count);
    PGconn *empty = testdb_connect(empty_url);
    CHECK_INT(testdb_count(empty, "SELECT count(*) FROM schema_migrations"),
              (long long)wl_migration_count);
    CHECK_INT(testdb_count(empty, "SELECT count(*) FROM stock_availability"), 0);
    char fingerprint[64], now[64];
    schema_fingerprint(empty, fingerprint, sizeof(fingerprint));

    /* Migrate twice: nothing to apply, nothing changes. */
    migrate_ok(empty_url, 0);
    CHECK_INT(testdb_count(empty, "SELECT count(*) FROM schema_migrations"),
              (long long)wl_migration_count);
    CHECK_STR(schema_fingerprint(empty, now, sizeof(now)), fingerprint);

    test_migrate_functions(empty, empty_url, fingerprint);
    test_migrate_checksums(empty, empty_url, fingerprint);

    PQfinish(empty);
    testdb_exec(admin, "DROP DATABASE wl_test_ctl_empty WITH (FORCE)");
    PQfinish(admin);
}

static void test_orgs(void)
{
    run_t r;
    char buf[256];
    run(&r, "--database-url", db_url, "org", "create", "acme", "--name", "Acme, Inc.", NULL);
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, "");
    run_free(&r);
    CHECK_STR(sql_text("SELECT name FROM organizations WHERE slug = $1", "acme", buf, sizeof(buf)),
              "Acme, Inc.");

    /* Options may come before the command words. */
    run(&r, "--name", "Plain Org", "--database-url", db_url, "org", "create", "plain", NULL);
    CHECK_INT(r.status, 0);
    run_free(&r);
    CHECK_STR(sql_text("SELECT name FROM organizations WHERE slug = $1", "plain", buf, sizeof(buf)),
              "Plain Org");
    run(&r, "--database-url", db_url, "org", "create", "no-name", NULL);
    CHECK_INT(r.status, 0);
    run_free(&r);
    CHECK_STR(
        sql_text("SELECT name FROM organizations WHERE slug = $1", "no-name", buf, sizeof(buf)),
        "no-name");

    run(&r, "--database-url", db_url, "org", "create", "acme", "--name", "Impostor", NULL);
    CHECK(r.status != 0 && r.status != -1);
    CHECK_CONTAINS(r.err, "acme");
    CHECK_CONTAINS(r.err, "exists");
    CHECK_STR(r.out, "");
    run_free(&r);
    CHECK_STR(sql_text("SELECT name FROM organizations WHERE slug = $1", "acme", buf, sizeof(buf)),
              "Acme, Inc.");

    long long orgs = sql_count("SELECT count(*) FROM organizations", NULL);
    static const char *const bad_slugs[] = {
        "Acme",
        "-acme",
        "a_b",
        "a b",
        "",
        "ac/me",
        "caf\xC3\xA9",
        "a.b",
        "a123456789012345678901234567890123456789012345678901234567890123", /* 64 */
    };
    for (size_t i = 0; i < sizeof(bad_slugs) / sizeof(bad_slugs[0]); i++) {
        run(&r, "--database-url", db_url, "org", "create", bad_slugs[i], NULL);
        int failures = test_failures;
        CHECK(r.status != 0 && r.status != -1);
        CHECK_CONTAINS(r.err, "slug");
        if (test_failures != failures)
            show(bad_slugs[i], &r);
        run_free(&r);
    }
    /* A name with a control character is refused too. */
    run(&r, "--database-url", db_url, "org", "create", "ctl", "--name", "bad\x01name", NULL);
    CHECK(r.status != 0 && r.status != -1);
    CHECK_CONTAINS(r.err, "name");
    run_free(&r);
    CHECK_INT(sql_count("SELECT count(*) FROM organizations", NULL), orgs);
    /* 63 characters is the longest slug. */
    run(&r, "--database-url", db_url, "org", "create",
        "a12345678901234567890123456789012345678901234567890123456789012", NULL);
    CHECK_INT(r.status, 0);
    run_free(&r);
}

static int authenticate(const char *token, wl_principal_t *who)
{
    wl_error_t err;
    wl_error_init(&err);
    return wl_keys_authenticate(conn, wl_span_str(token), who, &err);
}

static void test_keys(void)
{
    run_t r;
    long long keys = sql_count("SELECT count(*) FROM api_keys", NULL);
    run(&r, "--database-url", db_url, "key", "create", "--org", "acme", "--scopes",
        "lists:write,stock:read", "--name", "ci", NULL);
    CHECK_INT(r.status, 0);
    /* Only the token, on one line. */
    size_t len = strlen(r.out);
    CHECK(len > 0 && r.out[len - 1] == '\n');
    CHECK(strchr(r.out, '\n') == r.out + len - 1);
    char token[WL_KEY_TOKEN_SIZE + 64] = "";
    if (len > 0 && len < sizeof(token))
        memcpy(token, r.out, len - 1);
    char prefix[WL_KEY_PREFIX_LEN + 1] = "";
    CHECK(wl_keys_parse(wl_span_str(token), prefix));
    CHECK_LACKS(r.err, token + 13);
    run_free(&r);
    CHECK_INT(sql_count("SELECT count(*) FROM api_keys", NULL), keys + 1);

    wl_principal_t who;
    memset(&who, 0, sizeof(who));
    CHECK_INT(authenticate(token, &who), 0);
    CHECK_STR(who.org_slug, "acme");
    CHECK_STR(who.key_prefix, prefix);
    CHECK_INT(who.scopes, WL_SCOPE_LISTS_WRITE | WL_SCOPE_STOCK_READ);

    /* A second key, of another organization, for the listing below. */
    run(&r, "--database-url", db_url, "key", "create", "--org", "plain", "--scopes", "scanner",
        NULL);
    CHECK_INT(r.status, 0);
    char plain_token[WL_KEY_TOKEN_SIZE + 64] = "";
    snprintf(plain_token, sizeof(plain_token), "%.*s", (int)strcspn(r.out, "\n"), r.out);
    run_free(&r);
    CHECK_INT(authenticate(plain_token, &who), 0);
    CHECK_STR(who.org_slug, "plain");
    CHECK_INT(who.scopes, WL_SCOPE_SCANNER);

    struct {
        const char *what;
        const char *org;
        const char *scopes; /* NULL: no --scopes */
        const char *message;
    } bad[] = {
        {"unknown scope", "acme", "lists:write,admin", "unknown scope"},
        {"empty scopes", "acme", "", "scope"},
        {"no --scopes", "acme", NULL, "--scopes"},
        {"unknown organization", "nosuch", "stock:read", "nosuch"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (bad[i].scopes != NULL)
            run(&r, "--database-url", db_url, "key", "create", "--org", bad[i].org, "--scopes",
                bad[i].scopes, NULL);
        else
            run(&r, "--database-url", db_url, "key", "create", "--org", bad[i].org, NULL);
        int failures = test_failures;
        CHECK(r.status != 0 && r.status != -1);
        CHECK_STR(r.out, "");
        CHECK_CONTAINS(r.err, bad[i].message);
        if (test_failures != failures)
            show(bad[i].what, &r);
        run_free(&r);
    }
    run(&r, "--database-url", db_url, "key", "create", "--scopes", "stock:read", NULL);
    CHECK(r.status != 0 && r.status != -1);
    CHECK_CONTAINS(r.err, "--org");
    run_free(&r);
    CHECK_INT(sql_count("SELECT count(*) FROM api_keys", NULL), keys + 2);

    /* The listing shows the prefix and scopes, never the secret, and only the org's keys. */
    run(&r, "--database-url", db_url, "key", "list", "--org", "acme", NULL);
    CHECK_INT(r.status, 0);
    CHECK_CONTAINS(r.out, prefix);
    CHECK_CONTAINS(r.out, "lists:write,stock:read");
    CHECK_CONTAINS(r.out, "active");
    CHECK_CONTAINS(r.out, "\tci\n");
    CHECK_LACKS(r.out, token + 13);
    char piece[9];
    for (size_t at = 13; at + 8 <= strlen(token); at += 8) {
        memcpy(piece, token + at, 8);
        piece[8] = '\0';
        CHECK_LACKS(r.out, piece);
    }
    snprintf(piece, sizeof(piece), "%.8s", plain_token + 4);
    CHECK_LACKS(r.out, piece);
    run_free(&r);
    run(&r, "--database-url", db_url, "key", "list", "--org", "nosuch", NULL);
    CHECK(r.status != 0 && r.status != -1);
    CHECK_CONTAINS(r.err, "nosuch");
    run_free(&r);

    /* Revoking: the key stops working; the other org's key does not. */
    run(&r, "--database-url", db_url, "key", "revoke", prefix, NULL);
    CHECK_INT(r.status, 0);
    run_free(&r);
    CHECK_INT(authenticate(token, &who), WL_EUNAUTHENTICATED);
    CHECK_INT(authenticate(plain_token, &who), 0);
    run(&r, "--database-url", db_url, "key", "list", "--org", "acme", NULL);
    CHECK_INT(r.status, 0);
    CHECK_CONTAINS(r.out, prefix);
    CHECK_LACKS(r.out, "active");
    run_free(&r);
    run(&r, "--database-url", db_url, "key", "revoke", "nosuchpx", NULL);
    CHECK(r.status != 0 && r.status != -1);
    CHECK_CONTAINS(r.err, "nosuchpx");
    run_free(&r);
}

/* Lines of stderr that start with "path:". */
static size_t count_lines_starting(const char *text, const char *path)
{
    size_t count = 0, n = strlen(path);
    for (const char *line = text; *line != '\0';) {
        if (strncmp(line, path, n) == 0 && line[n] == ':')
            count++;
        const char *end = strchr(line, '\n');
        if (end == NULL)
            break;
        line = end + 1;
    }
    return count;
}

static void test_import(void)
{
    static const struct {
        const char *kind;
        const char *csv;
    } files[] = {
        {"warehouses", "code,name,kind\nW1,Main,own\nSUP,Supplier,supplier\n"},
        {"locations", "warehouse,code,staging\nW1,A-2,false\nW1,A-10,false\nSUP,S-1,false\n"},
        {"products", "sku,name,eans\nP1,\"Drill, 18V\",4006381333931\nP2,Bits,\n"},
        {"stock", "sku,warehouse,on_hand\nP1,W1,10\nP1,SUP,50\nP2,W1,4\n"},
        {"location-stock", "sku,warehouse,location,quantity\nP1,W1,A-10,6\nP1,W1,A-2,4\n"},
        {"reservations", "ref,sku,warehouse,quantity,status\nR1,P1,W1,3,active\n"},
    };
    run_t r;
    char path[128], buf[256];
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s.csv", tmp_dir, files[i].kind);
        write_file(path, files[i].csv);
        run(&r, "--database-url", db_url, "import", files[i].kind, path, "--org", "acme", NULL);
        int failures = test_failures;
        CHECK_INT(r.status, 0);
        CHECK_STR(r.out, "");
        CHECK_CONTAINS(r.err, "imported");
        if (test_failures != failures)
            show(files[i].kind, &r);
        run_free(&r);
    }
    CHECK_STR(sql_text("SELECT qty || '@' || location FROM stock_availability s"
                       " JOIN organizations o USING (org_id) WHERE o.slug = 'acme' AND sku = $1",
                       "P1", buf, sizeof(buf)),
              "7@A-10");
    CHECK_STR(sql_text("SELECT p.name FROM products p JOIN organizations o USING (org_id)"
                       " WHERE o.slug = 'acme' AND sku = $1",
                       "P1", buf, sizeof(buf)),
              "Drill, 18V");

    /* From stdin. */
    snprintf(path, sizeof(path), "%s/stdin.csv", tmp_dir);
    write_file(path, "sku,warehouse,on_hand\nP2,W1,9\n");
    run_env(&r, db_url, path, "import", "stock", "-", "--org", "acme", NULL);
    CHECK_INT(r.status, 0);
    run_free(&r);
    CHECK_STR(sql_text("SELECT qty::text FROM stock_availability s JOIN organizations o"
                       " USING (org_id) WHERE o.slug = 'acme' AND sku = $1",
                       "P2", buf, sizeof(buf)),
              "9");

    /* A bad file: every bad line as FILE:LINE: ..., exit non-zero, nothing written. */
    char before[33], after[33];
    inventory_digest(before);
    snprintf(path, sizeof(path), "%s/bad-stock.csv", tmp_dir);
    write_file(path, "sku,warehouse,on_hand\nP1,W1,1\nP1,SUP,-1\nP2,W1,2\nP9,W1,1\nP2,SUP,3\n"
                     "P2,W1,5\n");
    run(&r, "--database-url", db_url, "import", "stock", path, "--org", "acme", NULL);
    CHECK(r.status != 0 && r.status != -1);
    CHECK_STR(r.out, "");
    char expected[200];
    snprintf(expected, sizeof(expected), "%s:3: on_hand: ", path);
    CHECK_CONTAINS(r.err, expected);
    snprintf(expected, sizeof(expected), "%s:5: sku: unknown product P9", path);
    CHECK_CONTAINS(r.err, expected);
    snprintf(expected, sizeof(expected), "%s:7: ", path);
    CHECK_CONTAINS(r.err, expected);
    CHECK_CONTAINS(r.err, "first on line 4");
    CHECK_INT(count_lines_starting(r.err, path), 3);
    CHECK_CONTAINS(r.err, "nothing was imported");
    run_free(&r);
    inventory_digest(after);
    CHECK_STR(after, before);

    /* The file's own errors name the line too. */
    snprintf(path, sizeof(path), "%s/unterminated.csv", tmp_dir);
    write_file(path, "code,name,kind\nW2,Second,own\nW3,\"Third,own\n");
    run(&r, "--database-url", db_url, "import", "warehouses", path, "--org", "acme", NULL);
    CHECK(r.status != 0 && r.status != -1);
    snprintf(expected, sizeof(expected), "%s:3: unterminated quoted field", path);
    CHECK_CONTAINS(r.err, expected);
    run_free(&r);
    inventory_digest(after);
    CHECK_STR(after, before);

    run(&r, "--database-url", db_url, "import", "bins", path, "--org", "acme", NULL);
    CHECK(r.status != 0 && r.status != -1);
    CHECK_CONTAINS(r.err, "unknown import kind");
    CHECK_CONTAINS(r.err, "location-stock");
    run_free(&r);
    snprintf(path, sizeof(path), "%s/missing.csv", tmp_dir);
    run(&r, "--database-url", db_url, "import", "stock", path, "--org", "acme", NULL);
    CHECK(r.status != 0 && r.status != -1);
    CHECK_CONTAINS(r.err, "missing.csv");
    run_free(&r);
    snprintf(path, sizeof(path), "%s/stock.csv", tmp_dir);
    run(&r, "--database-url", db_url, "import", "stock", path, "--org", "nosuch", NULL);
    CHECK(r.status != 0 && r.status != -1);
    CHECK_CONTAINS(r.err, "nosuch");
    run_free(&r);
    run(&r, "--database-url", db_url, "import", "stock", path, NULL);
    CHECK(r.status != 0 && r.status != -1);
    CHECK_CONTAINS(r.err, "--org");
    run_free(&r);
    inventory_digest(after);
    CHECK_STR(after, before);
}

/* `import catalogue DIR`: DIR's files of every kind in one transaction; a bad line is named with
 * its file, and nothing of any file is written. */
static void test_import_catalogue(void)
{
    run_t r;
    char dir[128], path[160], expected[256], buf[64];
    run(&r, "--database-url", db_url, "org", "create", "whole", NULL);
    CHECK_INT(r.status, 0);
    run_free(&r);
    snprintf(dir, sizeof(dir), "%s/catalogue", tmp_dir);
    CHECK_INT(mkdir(dir, 0700), 0);

    /* No catalogue file in DIR. */
    char before[33], after[33];
    inventory_digest(before);
    run(&r, "--database-url", db_url, "import", "catalogue", dir, "--org", "whole", NULL);
    CHECK_INT(r.status, 1);
    CHECK_CONTAINS(r.err, "holds no catalogue file");
    run_free(&r);

    static const struct {
        const char *kind, *csv;
    } files[] = {
        {"warehouses", "code,name,kind\nW1,Main,own\n"},
        {"locations", "warehouse,code,staging\nW1,A-2,false\nW1,A-10,false\n"},
        {"products", "sku,name,eans\nP1,Drill,\nP2,Bits,\n"},
        {"stock", "sku,warehouse,on_hand\nP1,W1,10\nP2,W1,4\n"},
        {"location-stock", "sku,warehouse,location,quantity\nP1,W1,A-10,6\nP9,W1,A-2,4\n"},
    };
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s.csv", dir, files[i].kind);
        write_file(path, files[i].csv);
    }
    /* A .csv named after no kind is refused rather than left out; a DIR that is not there is
     * named. */
    snprintf(path, sizeof(path), "%s/location_stock.csv", dir);
    write_file(path, "sku,warehouse,location,quantity\nP1,W1,A-10,6\n");
    run(&r, "--database-url", db_url, "import", "catalogue", dir, "--org", "whole", NULL);
    CHECK_INT(r.status, 1);
    CHECK_CONTAINS(r.err, "holds location_stock.csv, which names no kind");
    CHECK_CONTAINS(r.err, "nothing was imported");
    run_free(&r);
    CHECK_INT(unlink(path), 0);
    snprintf(path, sizeof(path), "%s/no-such-dir", tmp_dir);
    run(&r, "--database-url", db_url, "import", "catalogue", path, "--org", "whole", NULL);
    CHECK_INT(r.status, 1);
    CHECK_CONTAINS(r.err, "cannot read");
    CHECK_CONTAINS(r.err, "no-such-dir");
    run_free(&r);
    inventory_digest(after);
    CHECK_STR(after, before);

    /* A bad line in the last file: named FILE:LINE, and not even the first file is written. */
    run(&r, "--database-url", db_url, "import", "catalogue", dir, "--org", "whole", NULL);
    CHECK_INT(r.status, 1);
    snprintf(expected, sizeof(expected), "%s/location-stock.csv:3: sku: unknown product P9", dir);
    CHECK_CONTAINS(r.err, expected);
    CHECK_CONTAINS(r.err, "location-stock file has 1 problem(s); nothing was imported");
    CHECK_LACKS(r.err, "row(s) imported");
    run_free(&r);
    inventory_digest(after);
    CHECK_STR(after, before);

    /* Fixed, it imports: each file's rows, then the catalogue. */
    snprintf(path, sizeof(path), "%s/location-stock.csv", dir);
    write_file(path, "sku,warehouse,location,quantity\nP1,W1,A-10,6\nP2,W1,A-2,4\n");
    char dir_slash[160];
    snprintf(dir_slash, sizeof(dir_slash), "%s/", dir);
    run(&r, "--database-url", db_url, "import", "catalogue", dir_slash, "--org", "whole", NULL);
    int failures = test_failures;
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, "");
    snprintf(expected, sizeof(expected), "%s/stock.csv: 2 stock row(s) imported", dir);
    CHECK_CONTAINS(r.err, expected);
    CHECK_CONTAINS(r.err, "catalogue imported in one transaction");
    if (test_failures != failures)
        show("catalogue", &r);
    run_free(&r);
    CHECK_STR(sql_text("SELECT string_agg(sku || ' ' || qty || '@' || location, ', ' ORDER BY sku)"
                       " FROM stock_availability JOIN organizations o USING (org_id)"
                       " WHERE o.slug = $1",
                       "whole", buf, sizeof(buf)),
              "P1 10@A-10, P2 4@A-2");

    /* A generated catalogue big enough that its files are bulk (over 5,000 rows: the export of
     * the whole organization computed at the commit) gives the export rows that generate
     * writes straight into the database from the same seed. */
    char big[160];
    snprintf(big, sizeof(big), "%s/catalogue-big", tmp_dir);
    run(&r, "generate", "--csv", big, "--skus", "6000", "--seed", "11", NULL);
    CHECK_INT(r.status, 0);
    run_free(&r);
    const char *slugs[] = {"whole-csv", "whole-gen"};
    for (size_t i = 0; i < 2; i++) {
        run(&r, "--database-url", db_url, "org", "create", slugs[i], NULL);
        CHECK_INT(r.status, 0);
        run_free(&r);
    }
    run(&r, "--database-url", db_url, "import", "catalogue", big, "--org", "whole-csv", NULL);
    CHECK_INT(r.status, 0);
    CHECK_CONTAINS(r.err, "6000 products row(s) imported");
    run_free(&r);
    run(&r, "--database-url", db_url, "generate", "--org", "whole-gen", "--skus", "6000", "--seed",
        "11", NULL);
    CHECK_INT(r.status, 0);
    run_free(&r);
    static const char export_md5[] =
        "SELECT count(*) || ' ' || md5(string_agg(sku || ':' || qty || '@' ||"
        " coalesce(location, '-'), ' ' ORDER BY sku)) FROM stock_availability"
        " JOIN organizations o USING (org_id) WHERE o.slug = $1";
    char from_csv[80], generated[80];
    sql_text(export_md5, "whole-csv", from_csv, sizeof(from_csv));
    CHECK_STR(sql_text(export_md5, "whole-gen", generated, sizeof(generated)), from_csv);
    CHECK(strncmp(from_csv, "0 ", 2) != 0);

    /* Its --help says so; a kind that is neither a file kind nor catalogue names both. */
    run(&r, "import", "--help", NULL);
    CHECK_CONTAINS(r.out, "walklistctl import catalogue DIR --org SLUG");
    run_free(&r);
    run(&r, "--database-url", db_url, "import", "catalogs", dir, "--org", "whole", NULL);
    CHECK(r.status != 0 && r.status != -1);
    CHECK_CONTAINS(r.err, "or catalogue DIR");
    run_free(&r);
}

static void test_demo(void)
{
    run_t r;
    char buf[256];
    run(&r, "--database-url", db_url, "org", "create", "demo", NULL);
    CHECK_INT(r.status, 0);
    run_free(&r);
    run(&r, "--database-url", db_url, "demo", "--org", "demo", NULL);
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, "");
    run_free(&r);
    const char *count_sql = "SELECT count(*) FROM stock_availability s JOIN organizations o"
                            " USING (org_id) WHERE o.slug = $1";
    long long rows = sql_count(count_sql, "demo");
    CHECK(rows > 0);
    /* SKU-1001: 12 + 3 in own warehouses, 2 reserved; A-10 holds the most. */
    CHECK_STR(sql_text("SELECT qty || '@' || location FROM stock_availability s"
                       " JOIN organizations o USING (org_id) WHERE o.slug = 'demo' AND sku = $1",
                       "SKU-1001", buf, sizeof(buf)),
              "13@A-10");
    CHECK(sql_count("SELECT count(*) FROM products p JOIN organizations o USING (org_id)"
                    " WHERE o.slug = $1",
                    "demo") > 0);
    /* Loading it again changes nothing. */
    run(&r, "--database-url", db_url, "demo", "--org", "demo", NULL);
    CHECK_INT(r.status, 0);
    run_free(&r);
    CHECK_INT(sql_count(count_sql, "demo"), rows);
    /* The demo lands in its organization only. */
    CHECK_INT(sql_count("SELECT count(*) FROM products p JOIN organizations o USING (org_id)"
                        " WHERE o.slug = $1 AND sku LIKE 'SKU-10%'",
                        "acme"),
              0);

    run(&r, "--database-url", db_url, "demo", "--org", "nosuch", NULL);
    CHECK(r.status != 0 && r.status != -1);
    CHECK_CONTAINS(r.err, "nosuch");
    run_free(&r);
    run(&r, "--database-url", db_url, "demo", NULL);
    CHECK(r.status != 0 && r.status != -1);
    CHECK_CONTAINS(r.err, "--org");
    run_free(&r);
}

/* Each command's --help is its own, on stdout; `formats` and `import KIND --help` are the CSV
 * reference, and each example row they show imports; wrong words are named. */
static void test_command_help(void)
{
    static const struct {
        const char *args[4];
        const char *usage_line;
    } helps[] = {
        {{"migrate", "--help"}, "usage: walklistctl migrate\n"},
        {{"org", "create", "--help"}, "usage: walklistctl org create SLUG [--name NAME]\n"},
        {{"help", "org", "list"}, "usage: walklistctl org list\n"},
        {{"key", "revoke", "-h"}, "usage: walklistctl key revoke PREFIX\n"},
        {{"import", "--help"}, "usage: walklistctl import KIND FILE.csv --org SLUG\n"},
        {{"import", "location-stock", "--help"},
         "usage: walklistctl import location-stock FILE.csv --org SLUG\n"},
        {{"help", "import", "stock"}, "usage: walklistctl import stock FILE.csv --org SLUG\n"},
        {{"generate", "--help"}, "usage: walklistctl generate (--org SLUG | --csv DIR)"},
    };
    run_t r;
    for (size_t i = 0; i < sizeof(helps) / sizeof(helps[0]); i++) {
        run_argv(&r, NULL, NULL, helps[i].args);
        int failures = test_failures;
        CHECK_INT(r.status, 0);
        CHECK_STR(r.err, "");
        CHECK(strncmp(r.out, helps[i].usage_line, strlen(helps[i].usage_line)) == 0);
        if (test_failures != failures)
            show(helps[i].usage_line, &r);
        run_free(&r);
    }
    run(&r, "import", "stock", "--help", NULL);
    CHECK_CONTAINS(r.out, "on_hand");
    CHECK_CONTAINS(r.out, "18 digits");
    CHECK_CONTAINS(r.out, "sku,warehouse,on_hand\n  SKU-1001,MAIN,12\n");
    run_free(&r);
    run(&r, "formats", NULL);
    CHECK_INT(r.status, 0);
    CHECK_CONTAINS(r.out, "RFC 4180");
    CHECK_CONTAINS(r.out, "9223372036854775807");
    CHECK_CONTAINS(r.out, "ref,sku,warehouse,quantity,status\n");
    run_free(&r);

    /* The example rows, imported in the documented order, are accepted as they stand. */
    run(&r, "--database-url", db_url, "org", "create", "formats", NULL);
    CHECK_INT(r.status, 0);
    run_free(&r);
    static const char *const kinds[] = {"warehouses", "locations",      "products",
                                        "stock",      "location-stock", "reservations"};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        run(&r, "import", kinds[i], "--help", NULL);
        const char *example = strstr(r.out, "example:\n");
        char csv[512] = "", path[128];
        size_t len = 0;
        for (const char *at = example ? example + 9 : ""; strncmp(at, "  ", 2) == 0;) {
            const char *end = strchr(at, '\n');
            if (end == NULL)
                break;
            len += (size_t)snprintf(csv + len, sizeof(csv) - len, "%.*s\n", (int)(end - at - 2),
                                    at + 2);
            at = end + 1;
        }
        run_free(&r);
        snprintf(path, sizeof(path), "%s/example-%s.csv", tmp_dir, kinds[i]);
        write_file(path, csv);
        run(&r, "--database-url", db_url, "import", kinds[i], path, "--org", "formats", NULL);
        int failures = test_failures;
        CHECK_INT(r.status, 0);
        if (test_failures != failures)
            show(kinds[i], &r);
        run_free(&r);
    }

    const struct {
        const char *args[6];
        const char *named;
    } wrong[] = {
        {{"--database-url", db_url, "frobnicate"}, "unknown command 'frobnicate'"},
        {{"--database-url", db_url, "org", "delete", "x"}, "unknown command 'org delete'"},
        {{"--database-url", db_url, "key"}, "'key' needs one more word (key create"},
        {{"--database-url", db_url, "key", "list", "extra"}, "unexpected argument 'extra'"},
        {{"--database-url", db_url, "import", "bins", "x.csv"}, "unknown import kind 'bins'"},
        {{"help", "nosuch"}, "unknown command 'nosuch'"},
    };
    for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
        run_argv(&r, NULL, NULL, wrong[i].args);
        int failures = test_failures;
        CHECK_INT(r.status, 2);
        CHECK_CONTAINS(r.err, wrong[i].named);
        CHECK_STR(r.out, "");
        if (test_failures != failures)
            show(wrong[i].named, &r);
        run_free(&r);
    }
}

static void test_org_list(void)
{
    run_t r;
    run(&r, "--database-url", db_url, "org", "list", NULL);
    CHECK_INT(r.status, 0);
    CHECK(strncmp(r.out, "SLUG\tCREATED\tACTIVE KEYS\tNAME\n", 30) == 0);
    CHECK_CONTAINS(r.out, "\nacme\t");
    CHECK_CONTAINS(r.out, "\tAcme, Inc.\n");
    CHECK_CONTAINS(r.out, "\nplain\t");
    /* By slug: acme before plain. */
    CHECK(strstr(r.out, "\nacme\t") < strstr(r.out, "\nplain\t"));
    run_free(&r);
}

/* distribute needs Citus: on plain PostgreSQL it says so and changes nothing (on a Citus
 * coordinator it was run by hand, docs/scaling-out.md: CI has no Citus), and a bad --shards
 * is refused before it connects. */
static void test_distribute_without_citus(void)
{
    run_t r;
    run(&r, "--database-url", db_url, "distribute", NULL);
    CHECK(r.status != 0);
    CHECK_CONTAINS(r.err, "the citus extension is not installed in this database");
    CHECK(strstr(r.err, "internal error") == NULL);
    run_free(&r);
    /* A shard count is checked before anything else; a good one reaches the same refusal. */
    static const char *const bad_shards[] = {"0", "257", "-1", "8x", ""};
    for (size_t i = 0; i < sizeof(bad_shards) / sizeof(bad_shards[0]); i++) {
        run(&r, "--database-url", db_url, "distribute", "--shards", bad_shards[i], NULL);
        CHECK(r.status != 0);
        CHECK_CONTAINS(r.err, "--shards must be a whole number from 1 to 256");
        CHECK(strstr(r.err, "citus") == NULL);
        run_free(&r);
    }
    run(&r, "--database-url", db_url, "distribute", "--shards", "8", NULL);
    CHECK(r.status != 0);
    CHECK_CONTAINS(r.err, "the citus extension is not installed in this database");
    run_free(&r);
    PGconn *db = testdb_connect(db_url);
    char count[32];
    /* The foreign key distribute drops and makes again is still there. */
    CHECK_STR(testdb_value(db,
                           "SELECT count(*) FROM pg_constraint"
                           " WHERE conname = 'idempotency_keys_org_id_list_id_fkey'",
                           count, sizeof(count)),
              "1");
    PQfinish(db);
}

/* Problems come sorted by line whatever found them (a value, a reference), and at most 50 of
 * them: the rest are counted. */
static void test_problem_order_and_cap(void)
{
    run_t r;
    char path[128], expected[400];
    snprintf(path, sizeof(path), "%s/many-bad.csv", tmp_dir);
    FILE *out = fopen(path, "w");
    if (out == NULL) {
        FAIL("cannot write %s", path);
        return;
    }
    /* Line 2 fails a reference check (found after every value check), lines 3.. a value. */
    fprintf(out, "sku,warehouse,on_hand\nNO-SUCH,W1,1\n");
    for (int i = 0; i < 200000; i++)
        fprintf(out, "P%d,W1,-1\n", i);
    fclose(out);
    char before[33], after[33];
    inventory_digest(before);
    run(&r, "--database-url", db_url, "import", "stock", path, "--org", "acme", NULL);
    CHECK_INT(r.status, 1);
    snprintf(expected, sizeof(expected),
             "%s:2: sku: unknown product NO-SUCH\n%s:3: on_hand: ", path, path);
    CHECK(strncmp(r.err, expected, strlen(expected)) == 0);
    CHECK_INT(count_lines_starting(r.err, path), 51);
    snprintf(expected, sizeof(expected), "%s:51: on_hand: ", path);
    CHECK_CONTAINS(r.err, expected);
    snprintf(expected, sizeof(expected), "%s:52: ", path);
    CHECK_LACKS(r.err, expected);
    snprintf(expected, sizeof(expected), "%s: ... and 199,951 more\n", path);
    CHECK_CONTAINS(r.err, expected);
    CHECK_CONTAINS(r.err, "200001 problem(s); nothing was imported");
    run_free(&r);
    inventory_digest(after);
    CHECK_STR(after, before);
    unlink(path);
}

/* An organization's first import of a kind goes straight into the table; a duplicate there
 * says what the staged import says, and nothing of PostgreSQL's. */
static void test_first_import_duplicate(void)
{
    run_t r;
    char path[128], expected[400];
    run(&r, "--database-url", db_url, "org", "create", "fresh", NULL);
    CHECK_INT(r.status, 0);
    run_free(&r);
    snprintf(path, sizeof(path), "%s/dup-products.csv", tmp_dir);
    write_file(path, "sku,name,eans\nD1,One,\nD2,Two,\nD1,Again,\n");
    run(&r, "--database-url", db_url, "import", "products", path, "--org", "fresh", NULL);
    CHECK_INT(r.status, 1);
    snprintf(expected, sizeof(expected),
             "%s:4: duplicate key (sku): first on line 2\n"
             "walklistctl: the file has 1 problem(s); nothing was imported\n",
             path);
    CHECK_STR(r.err, expected);
    run_free(&r);
    CHECK_INT(sql_count("SELECT count(*) FROM products p JOIN organizations o USING (org_id)"
                        " WHERE o.slug = $1",
                        "fresh"),
              0);
}

/* Ten warehouses at 18 nines each: every row within the limit, their sum past bigint. Refused
 * naming each line, on a first import (straight into the table) and on a later one (staged). */
static void test_quantity_overflow(void)
{
    run_t r;
    char path[128], expected[400];
    run(&r, "--database-url", db_url, "org", "create", "huge", NULL);
    CHECK_INT(r.status, 0);
    run_free(&r);
    char warehouses[512] = "code,name,kind\n", stock[1024] = "sku,warehouse,on_hand\n";
    for (int i = 1; i <= 10; i++) {
        size_t w = strlen(warehouses), st = strlen(stock);
        snprintf(warehouses + w, sizeof(warehouses) - w, "H%d,Hall %d,own\n", i, i);
        snprintf(stock + st, sizeof(stock) - st, "BIG,H%d,999999999999999999\n", i);
    }
    const struct {
        const char *kind, *csv;
    } setup[] = {{"warehouses", warehouses}, {"products", "sku,name,eans\nBIG,Big,\n"}};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/huge-%s.csv", tmp_dir, setup[i].kind);
        write_file(path, setup[i].csv);
        run(&r, "--database-url", db_url, "import", setup[i].kind, path, "--org", "huge", NULL);
        CHECK_INT(r.status, 0);
        run_free(&r);
    }
    snprintf(path, sizeof(path), "%s/huge-stock.csv", tmp_dir);
    write_file(path, stock);
    for (int attempt = 0; attempt < 2; attempt++) {
        char before[33], after[33];
        inventory_digest(before);
        run(&r, "--database-url", db_url, "import", "stock", path, "--org", "huge", NULL);
        int failures = test_failures;
        CHECK_INT(r.status, 1);
        CHECK_INT(count_lines_starting(r.err, path), 10);
        for (int line = 2; line <= 11; line++) {
            snprintf(expected, sizeof(expected),
                     "%s:%d: on_hand: SKU BIG would have 9999999999999999990 available", path,
                     line);
            CHECK_CONTAINS(r.err, expected);
        }
        CHECK_CONTAINS(r.err, "10 problem(s); nothing was imported");
        CHECK_LACKS(r.err, "bigint");
        CHECK_LACKS(r.err, "database error");
        CHECK_LACKS(r.err, "internal");
        if (test_failures != failures)
            show("overflow", &r);
        run_free(&r);
        inventory_digest(after);
        CHECK_STR(after, before);
        /* Then the organization has stock rows, and the file goes through staging. */
        char small[128];
        snprintf(small, sizeof(small), "%s/huge-small.csv", tmp_dir);
        write_file(small, "sku,warehouse,on_hand\nBIG,H1,5\n");
        run(&r, "--database-url", db_url, "import", "stock", small, "--org", "huge", NULL);
        CHECK_INT(r.status, 0);
        run_free(&r);
    }
    CHECK_INT(sql_count("SELECT qty FROM stock_availability s JOIN organizations o USING (org_id)"
                        " WHERE o.slug = $1 AND sku = 'BIG'",
                        "huge"),
              5);
}

/* generate --csv DIR makes DIR; with --org it also loads the organization. */
static void test_generate_cli(void)
{
    run_t r;
    char dir[160], file[200];
    snprintf(dir, sizeof(dir), "%s/gen/nested", tmp_dir);
    run(&r, "generate", "--csv", dir, "--skus", "20", "--seed", "3", NULL);
    CHECK_INT(r.status, 0);
    run_free(&r);
    snprintf(file, sizeof(file), "%s/stock.csv", dir);
    CHECK(access(file, R_OK) == 0);
    run(&r, "--database-url", db_url, "org", "create", "gen", NULL);
    CHECK_INT(r.status, 0);
    run_free(&r);
    run(&r, "--database-url", db_url, "generate", "--csv", dir, "--org", "gen", "--skus", "20",
        NULL);
    CHECK_INT(r.status, 0);
    CHECK_CONTAINS(r.err, "written to the CSV files");
    CHECK_CONTAINS(r.err, "loaded");
    run_free(&r);
    CHECK_INT(sql_count("SELECT count(*) FROM products p JOIN organizations o USING (org_id)"
                        " WHERE o.slug = $1",
                        "gen"),
              20);
    run(&r, "generate", "--csv", dir, "--org", "gen", "--skus", "20", NULL);
    CHECK_INT(r.status, 2);
    CHECK_CONTAINS(r.err, "--database-url");
    run_free(&r);
    /* A count out of its range is refused with the range, and nothing is written. */
    char refused_dir[160];
    snprintf(refused_dir, sizeof(refused_dir), "%s/gen/refused", tmp_dir);
    static const char *const bad_skus[] = {"0", "100000001", "-5", "20x"};
    for (size_t i = 0; i < sizeof(bad_skus) / sizeof(bad_skus[0]); i++) {
        run(&r, "--database-url", db_url, "generate", "--csv", refused_dir, "--org", "gen",
            "--skus", bad_skus[i], NULL);
        CHECK(r.status != 0);
        CHECK_CONTAINS(r.err, "--skus must be a whole number from 1 to 100000000");
        run_free(&r);
        CHECK(access(refused_dir, F_OK) != 0);
    }
    CHECK_INT(sql_count("SELECT count(*) FROM products p JOIN organizations o USING (org_id)"
                        " WHERE o.slug = $1",
                        "gen"),
              20);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    return remove(path);
}

/* Removes the CSV files and the directory, also when a helper exits early. */
static void remove_tmp_dir(void)
{
    nftw(tmp_dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
    walklistctl = getenv("WALKLISTCTL");
    if (walklistctl == NULL || access(walklistctl, X_OK) != 0) {
        fprintf(stderr, "WALKLISTCTL is not set to an executable: run under ctest\n");
        return 1;
    }
    snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/wl_ctl_XXXXXX");
    if (mkdtemp(tmp_dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    atexit(remove_tmp_dir);
    static char url[1300];
    snprintf(url, sizeof(url), "%s", testdb_create("wl_test_walklistctl"));
    db_url = url;
    conn = testdb_connect(db_url);

    test_usage();
    test_migrate();
    test_orgs();
    test_keys();
    test_import();
    test_import_catalogue();
    test_demo();
    test_command_help();
    test_org_list();
    test_distribute_without_citus();
    test_problem_order_and_cap();
    test_first_import_duplicate();
    test_quantity_overflow();
    test_generate_cli();

    PQfinish(conn);
    return test_exit();
}
