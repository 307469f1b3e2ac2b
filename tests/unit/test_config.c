/* walklistd's settings (gateway/process/config.c): defaults, environment under flags, bounds,
 * choices, unknown flags, and the --help and docs/operations.md texts generated from the same
 * option table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process/config.h"
#include "test.h"

/* No WALKLIST_ variable of the machine running the tests may leak into them. */
static void clear_environment(void)
{
#define UNSET(field, flag, env, ...) unsetenv(env);
    WL_CONFIG_OPTIONS(UNSET, UNSET, UNSET)
#undef UNSET
}

/* Reads args (NULL-terminated, without the program name) as walklistd would. */
static int read_args(const char *const *args, wl_config_t *config, wl_config_action_t *action,
                     wl_error_t *err)
{
    char *argv[32] = {"walklistd"};
    int argc = 1;
    while (args[argc - 1] != NULL && argc < 31) {
        /* getopt_long permutes the pointers, never the strings. */
        argv[argc] = (char *)args[argc - 1];
        argc++;
    }
    wl_error_init(err);
    return wl_config_read(config, argc, argv, action, err);
}

static void test_defaults(void)
{
    clear_environment();
    const char *args[] = {"--database-url", "dbname=x", NULL};
    wl_config_t config;
    wl_config_action_t action;
    wl_error_t err;
    CHECK_INT(read_args(args, &config, &action, &err), 0);
    CHECK_INT(action, WL_CONFIG_SERVE);
    CHECK_STR(config.database_url, "dbname=x");
    CHECK_STR(config.listen, "127.0.0.1:8080");
    CHECK(config.read_database_url == NULL);
    CHECK(config.ops_listen == NULL);
    CHECK(config.tls_cert_path == NULL && config.tls_key_path == NULL);
    CHECK_STR(config.tls_min_version, "1.2");
    /* Derived: 2 x cores, and the pool threads + 2. */
    CHECK(config.threads >= 2);
    CHECK_INT(config.db_pool_size, config.threads + 2);
    CHECK_INT(config.db_timeout_ms, WL_CORE_DEFAULT_DB_TIMEOUT_MS);
    CHECK_INT(config.connection_timeout_s, 30);
    CHECK_INT(config.max_connections, 1000);
    CHECK_INT(config.max_connections_per_ip, 64);
    CHECK_INT(config.rate_locate_lists, 30);
    CHECK_INT(config.rate_stock_export, 30);
    CHECK_INT(config.rate_shared, 60);
    CHECK_INT(config.rate_anonymous, 120);
    CHECK_INT(config.rate_lease_ms, 10000);
    CHECK_INT(config.key_cache_ttl_ms, 600000);
    CHECK_INT(config.commit_groups, 2);
    /* Under Docker's 10 s stop grace period (docker/compose.yaml, docs/operations.md "Configuration
     * of walklistd"). */
    CHECK_INT(config.shutdown_timeout_ms, 8000);
}

static void test_precedence(void)
{
    clear_environment();
    setenv("WALKLIST_DATABASE_URL", "dbname=env", 1);
    setenv("WALKLIST_THREADS", "3", 1);
    setenv("WALKLIST_LISTEN", "127.0.0.1:9000", 1);
    setenv("WALKLIST_RATE_LIMIT_SHARED", "7", 1);
    wl_config_t config;
    wl_config_action_t action;
    wl_error_t err;

    /* The environment over the defaults. */
    const char *none[] = {NULL};
    CHECK_INT(read_args(none, &config, &action, &err), 0);
    CHECK_STR(config.database_url, "dbname=env");
    CHECK_INT(config.threads, 3);
    CHECK_INT(config.db_pool_size, 5);
    CHECK_STR(config.listen, "127.0.0.1:9000");
    CHECK_INT(config.rate_shared, 7);

    /* Flags over the environment; a derived default follows the value that won. */
    const char *flags[] = {"--threads",      "5",           "--listen=[::1]:0",
                           "--database-url", "dbname=flag", NULL};
    CHECK_INT(read_args(flags, &config, &action, &err), 0);
    CHECK_INT(config.threads, 5);
    CHECK_INT(config.db_pool_size, 7);
    CHECK_STR(config.listen, "[::1]:0");
    CHECK_STR(config.database_url, "dbname=flag");
    CHECK_INT(config.rate_shared, 7);

    /* The last of a repeated flag wins. */
    const char *twice[] = {"--rate-limit-shared", "8", "--rate-limit-shared", "9", NULL};
    CHECK_INT(read_args(twice, &config, &action, &err), 0);
    CHECK_INT(config.rate_shared, 9);

    /* An empty text means the default, wherever it comes from. */
    setenv("WALKLIST_LISTEN", "", 1);
    setenv("WALKLIST_TLS_CERT", "", 1);
    setenv("WALKLIST_TLS_MIN_VERSION", "", 1);
    CHECK_INT(read_args(none, &config, &action, &err), 0);
    CHECK_STR(config.listen, "127.0.0.1:8080");
    CHECK(config.tls_cert_path == NULL);
    CHECK_STR(config.tls_min_version, "1.2");
    setenv("WALKLIST_TLS_CERT", "/env/cert.pem", 1);
    setenv("WALKLIST_TLS_KEY", "/env/key.pem", 1);
    const char *unset_tls[] = {"--tls-cert", "", "--tls-key", "", NULL};
    CHECK_INT(read_args(unset_tls, &config, &action, &err), 0);
    CHECK(config.tls_cert_path == NULL && config.tls_key_path == NULL);
    clear_environment();
}

/* Refused values: exit status 2 in walklistd, with these messages after "walklistd: ". */
static void test_refused(void)
{
    static const struct {
        const char *env; /* NAME=value set for the case, or NULL */
        const char *args[6];
        const char *message;
    } cases[] = {
        {NULL, {"--threads", "0"}, "--threads must be a number from 1 to 1024, got '0'"},
        {NULL, {"--threads", "1025"}, "--threads must be a number from 1 to 1024, got '1025'"},
        {NULL,
         {"--rate-lease-ms", "10s"},
         "--rate-lease-ms must be a number from 0 to 60000, got '10s'"},
        {NULL,
         {"--key-cache-ttl-ms", ""},
         "--key-cache-ttl-ms must be a number from 0 to 3600000, got ''"},
        {NULL,
         {"--db-timeout-ms", "99"},
         "--db-timeout-ms must be a number from 100 to 600000, got '99'"},
        {NULL,
         {"--max-connections", "99999999999999999999"},
         "--max-connections must be a number from 1 to 1000000, got '99999999999999999999'"},
        {"WALKLIST_COMMIT_GROUPS=two",
         {NULL},
         "--commit-groups (WALKLIST_COMMIT_GROUPS) must be a number from 0 to 64, got 'two'"},
        /* A bad environment value is refused even when a flag replaces it. */
        {"WALKLIST_SHUTDOWN_TIMEOUT_MS=-1",
         {"--shutdown-timeout-ms", "5"},
         "--shutdown-timeout-ms (WALKLIST_SHUTDOWN_TIMEOUT_MS) must be a number from 0 to "
         "600000, got '-1'"},
        {NULL, {"--tls-min-version", "1.1"}, "--tls-min-version must be 1.2 or 1.3, got '1.1'"},
        {"WALKLIST_TLS_MIN_VERSION=TLSv1.3",
         {NULL},
         "--tls-min-version (WALKLIST_TLS_MIN_VERSION) must be 1.2 or 1.3, got 'TLSv1.3'"},
        {NULL,
         {"--bogus", "1"},
         "unrecognized option '--bogus' (walklistd --help lists the options)"},
        {NULL, {"-x"}, "unrecognized option '-x' (walklistd --help lists the options)"},
        {NULL,
         {"--rate-limit", "5"},
         "option '--rate-limit' is ambiguous (walklistd --help lists the options)"},
        {NULL,
         {"--help=yes"},
         "option '--help=yes' takes no argument (walklistd --help lists the options)"},
        {NULL,
         {"--threads"},
         "option '--threads' requires an argument (walklistd --help lists the options)"},
        {NULL, {"serve"}, "unexpected argument 'serve'"},
        /* Ports out of range or not numbers are refused, not read modulo 65536 or as names. */
        {NULL,
         {"--listen", "127.0.0.1:99999"},
         "--listen must be host:port or [v6]:port with a port from 0 to 65535 (0: any free one), "
         "got '127.0.0.1:99999'"},
        {NULL,
         {"--listen", "127.0.0.1:http"},
         "--listen must be host:port or [v6]:port with a port from 0 to 65535 (0: any free one), "
         "got '127.0.0.1:http'"},
        {NULL,
         {"--grpc-listen", "localhost"},
         "--grpc-listen must be host:port or [v6]:port with a port from 0 to 65535 (0: any free "
         "one), got 'localhost'"},
        {"WALKLIST_OPS_LISTEN=[::1]:-1",
         {NULL},
         "--ops-listen (WALKLIST_OPS_LISTEN) must be host:port or [v6]:port with a port from 0 to "
         "65535 (0: any free one), got '[::1]:-1'"},
        {"WALKLIST_DATABASE_URL=", {NULL}, "--database-url (or WALKLIST_DATABASE_URL) is required"},
        {NULL,
         {"--tls-cert", "cert.pem"},
         "--tls-cert and --tls-key (WALKLIST_TLS_CERT, WALKLIST_TLS_KEY) go together: give both "
         "or neither"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        clear_environment();
        if (strstr(cases[i].message, "--database-url") == NULL)
            setenv("WALKLIST_DATABASE_URL", "dbname=x", 1);
        char env[128];
        if (cases[i].env != NULL) {
            snprintf(env, sizeof(env), "%s", cases[i].env);
            char *eq = strchr(env, '=');
            *eq = '\0';
            setenv(env, eq + 1, 1);
        }
        wl_config_t config;
        wl_config_action_t action;
        wl_error_t err;
        CHECK_INT(read_args(cases[i].args, &config, &action, &err), WL_EINVAL);
        CHECK_STR(err.message, cases[i].message);
    }
    clear_environment();
}

static void test_accepted_edges(void)
{
    clear_environment();
    const char *args[] = {"--database-url",
                          "x",
                          "--threads",
                          "1024",
                          "--tls-min-version",
                          "1.3",
                          "--commit-groups",
                          "0",
                          "--key-cache-ttl-ms",
                          "0",
                          "--rate-lease-ms",
                          "60000",
                          "--db-pool-size",
                          "1",
                          "--connection-timeout",
                          "3600",
                          "--listen",
                          "[::1]:65535",
                          NULL};
    wl_config_t config;
    wl_config_action_t action;
    wl_error_t err;
    CHECK_INT(read_args(args, &config, &action, &err), 0);
    CHECK_INT(config.threads, 1024);
    CHECK_STR(config.tls_min_version, "1.3");
    CHECK_INT(config.commit_groups, 0);
    CHECK_INT(config.key_cache_ttl_ms, 0);
    CHECK_INT(config.rate_lease_ms, 60000);
    CHECK_INT(config.db_pool_size, 1);
    CHECK_INT(config.connection_timeout_s, 3600);
    CHECK_STR(config.listen, "[::1]:65535");
}

static void test_actions(void)
{
    clear_environment();
    wl_config_t config;
    wl_config_action_t action;
    wl_error_t err;
    /* Neither needs a database URL: nothing after the flags is checked. */
    const char *help[] = {"--help", NULL};
    CHECK_INT(read_args(help, &config, &action, &err), 0);
    CHECK_INT(action, WL_CONFIG_HELP);
    const char *short_help[] = {"-h", NULL};
    CHECK_INT(read_args(short_help, &config, &action, &err), 0);
    CHECK_INT(action, WL_CONFIG_HELP);
    const char *markdown[] = {"--print-config-markdown", NULL};
    CHECK_INT(read_args(markdown, &config, &action, &err), 0);
    CHECK_INT(action, WL_CONFIG_MARKDOWN);
    const char *version[] = {"--version", NULL};
    CHECK_INT(read_args(version, &config, &action, &err), 0);
    CHECK_INT(action, WL_CONFIG_VERSION);
    /* --probe reads no setting: a bad one in the environment does not stop it. */
    setenv("WALKLIST_THREADS", "0", 1);
    const char *probe[] = {"--probe", "http://127.0.0.1:8080/readyz", NULL};
    CHECK_INT(read_args(probe, &config, &action, &err), 0);
    CHECK_INT(action, WL_CONFIG_PROBE);
    CHECK_STR(config.probe_url, "http://127.0.0.1:8080/readyz");
    const char *serve[] = {"--database-url", "dbname=x", NULL};
    CHECK_INT(read_args(serve, &config, &action, &err), WL_EINVAL);
    CHECK(strstr(err.message, "WALKLIST_THREADS") != NULL);
    unsetenv("WALKLIST_THREADS");
    const char *probe_alone[] = {"--probe", NULL};
    CHECK_INT(read_args(probe_alone, &config, &action, &err), WL_EINVAL);
    CHECK_STR(err.message, "option '--probe' requires an argument (walklistd --help lists the "
                           "options)");
}

static char *captured(void (*write)(FILE *))
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    write(out);
    fclose(out);
    return text;
}

/* --help names every option with its environment variable and default; the Markdown table has
 * one row for each, in the table's order. */
static void test_texts(void)
{
    char *usage = captured(wl_config_usage);
    char *markdown = captured(wl_config_markdown);
    const char *row = strstr(markdown, "|---|");
    size_t rows = 0;
#define CHECK_ROW(field, flag, env, ...)                                                           \
    do {                                                                                           \
        char needle[128];                                                                          \
        snprintf(needle, sizeof(needle), "  --%s ", flag);                                         \
        const char *at = strstr(usage, needle);                                                    \
        CHECK(at != NULL);                                                                         \
        snprintf(needle, sizeof(needle), "env %s;", env);                                          \
        CHECK(at != NULL && strstr(at, needle) != NULL);                                           \
        CHECK(at != NULL && (strstr(at, "default ") != NULL || strstr(at, "required") != NULL));   \
        snprintf(needle, sizeof(needle), "\n| `--%s` | `%s` | ", flag, env);                       \
        row = row ? strstr(row, needle) : NULL;                                                    \
        CHECK(row != NULL);                                                                        \
        rows++;                                                                                    \
    } while (0);
    WL_CONFIG_OPTIONS(CHECK_ROW, CHECK_ROW, CHECK_ROW)
#undef CHECK_ROW
    size_t lines = 0;
    for (const char *at = markdown; *at != '\0'; at++)
        lines += *at == '\n';
    CHECK_INT(lines, rows + 2);
    CHECK(strstr(usage, "default 2 x cores") != NULL);
    CHECK(strstr(usage, "env WALKLIST_DATABASE_URL; required") != NULL);
    CHECK(strstr(markdown, "| 1.2 | `1.2` or `1.3` |") != NULL);
    free(usage);
    free(markdown);
}

int main(void)
{
    test_defaults();
    test_precedence();
    test_refused();
    test_accepted_edges();
    test_actions();
    test_texts();
    return test_exit();
}
