/* walklistd: reading configuration, starting the core and the HTTP server, and stopping on a signal
 * happens here. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server.h"
#include "walklist/core.h"
#include "walklist/log.h"

typedef struct {
    const char *database_url;
    const char *read_database_url;
    const char *listen;
    const char *ops_listen;
    int threads;
    int db_pool_size;
    int db_timeout_ms;
    int connection_timeout_s;
    int max_connections;
    int max_connections_per_ip;
    const char *tls_cert_path;
    const char *tls_key_path;
    const char *tls_min_version;
    int rate_locate_lists;
    int rate_stock_export;
    int rate_shared;
    int rate_anonymous;
    int shutdown_timeout_ms;
    int key_cache_ttl_ms;
    int rate_lease_ms;
    int commit_groups;
} config_t;

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: walklistd [options]\n"
        "  --database-url URL        libpq conninfo or URI (WALKLIST_DATABASE_URL)\n"
        "  --database-read-url URL   optional replica for the stock export and breakdown\n"
        "                            (WALKLIST_DATABASE_READ_URL); without it the primary\n"
        "  --listen HOST:PORT        address to serve on, default 127.0.0.1:8080 "
        "(WALKLIST_LISTEN)\n"
        "  --ops-listen HOST:PORT    also serve /healthz, /readyz and /metrics on a listener of\n"
        "                            their own, a thread per connection, never behind a\n"
        "                            request that waits on the database; default none\n"
        "                            (WALKLIST_OPS_LISTEN)\n"
        "  --threads N               HTTP worker threads, default 2 x cores "
        "(WALKLIST_THREADS)\n"
        "  --db-pool-size N          database connections at most, default threads + 2 "
        "(WALKLIST_DB_POOL_SIZE)\n"
        "  --db-timeout-ms N         the longest a request waits on an unreachable or stuck\n"
        "                            database before 503, default 5000\n"
        "                            (WALKLIST_DB_TIMEOUT_MS)\n"
        "  --connection-timeout S    idle HTTP connections close after S seconds, default 30\n"
        "                            (WALKLIST_CONNECTION_TIMEOUT)\n"
        "  --max-connections N       open HTTP connections at most, default 1000\n"
        "                            (WALKLIST_MAX_CONNECTIONS)\n"
        "  --max-connections-per-ip N  open connections per client address, default 64\n"
        "                            (WALKLIST_MAX_CONNECTIONS_PER_IP)\n"
        "  --tls-cert FILE           serve HTTPS with this PEM certificate (chain)\n"
        "                            (WALKLIST_TLS_CERT); needs --tls-key\n"
        "  --tls-key FILE            the certificate's unencrypted PEM private key\n"
        "                            (WALKLIST_TLS_KEY)\n"
        "  --tls-min-version V       1.2 (default: TLS 1.2 with forward-secret AEAD suites,\n"
        "                            and 1.3) or 1.3 (WALKLIST_TLS_MIN_VERSION)\n"
        "  --rate-limit-locate-lists N   requests per minute per organization, default 30\n"
        "  --rate-limit-stock-export N   default 30\n"
        "  --rate-limit-shared N         every other /api/v1 endpoint, default 60\n"
        "  --rate-limit-anonymous N      per client address without a valid key, default 120\n"
        "                            (env: WALKLIST_RATE_LIMIT_LOCATE_LISTS, ..._STOCK_EXPORT,\n"
        "                            ..._SHARED, ..._ANONYMOUS)\n"
        "  --key-cache-ttl-ms N      checked API keys are kept in memory this long, default\n"
        "                            600000; 0: check every request in the database. A revoked\n"
        "                            key is refused once PostgreSQL announces it (milliseconds)\n"
        "                            (WALKLIST_KEY_CACHE_TTL_MS)\n"
        "  --rate-lease-ms N         busy buckets lease rate-limit permits for at most N ms,\n"
        "                            default 10000; 0: one database round trip per request\n"
        "                            (WALKLIST_RATE_LEASE_MS)\n"
        "  --commit-groups N         requests that need the database at the same moment (key\n"
        "                            checks, rate-limit decisions, walk lists) commit together,\n"
        "                            at most N commits in flight, default 2; 0: every request\n"
        "                            commits alone (WALKLIST_COMMIT_GROUPS)\n"
        "  --shutdown-timeout-ms N   on SIGTERM, how long requests in flight may finish,\n"
        "                            default 10000; then those not yet at the database\n"
        "                            are refused, those at it still waited for\n"
        "                            (WALKLIST_SHUTDOWN_TIMEOUT_MS)\n");
}

static int parse_int(const char *text, const char *name, int min, int max, int *out)
{
    char *end = NULL;
    long value = strtol(text, &end, 10);
    if (end == text || *end != '\0' || value < min || value > max) {
        fprintf(stderr, "walklistd: %s must be a number from %d to %d, got '%s'\n", name, min, max,
                text);
        return -1;
    }
    *out = (int)value;
    return 0;
}

static int env_int(const char *env, const char *name, int min, int max, int *out)
{
    const char *value = getenv(env);
    return value ? parse_int(value, name, min, max, out) : 0;
}

static int read_config(int argc, char **argv, config_t *config)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    config->database_url = getenv("WALKLIST_DATABASE_URL");
    config->read_database_url = getenv("WALKLIST_DATABASE_READ_URL");
    config->listen = getenv("WALKLIST_LISTEN") ? getenv("WALKLIST_LISTEN") : "127.0.0.1:8080";
    config->ops_listen = getenv("WALKLIST_OPS_LISTEN");
    config->threads = cores > 0 ? (int)(2 * cores) : 4;
    config->db_pool_size = 0;
    config->db_timeout_ms = 5000;
    config->connection_timeout_s = 30;
    config->max_connections = 1000;
    config->max_connections_per_ip = 64;
    config->tls_cert_path = getenv("WALKLIST_TLS_CERT");
    config->tls_key_path = getenv("WALKLIST_TLS_KEY");
    config->tls_min_version = getenv("WALKLIST_TLS_MIN_VERSION");
    config->rate_locate_lists = 30;
    config->rate_stock_export = 30;
    config->rate_shared = 60;
    config->rate_anonymous = 120;
    config->shutdown_timeout_ms = 10000;
    config->key_cache_ttl_ms = 600000;
    config->rate_lease_ms = 10000;
    config->commit_groups = 2;
    if (env_int("WALKLIST_SHUTDOWN_TIMEOUT_MS", "--shutdown-timeout-ms", 0, 600000,
                &config->shutdown_timeout_ms) != 0 ||
        env_int("WALKLIST_KEY_CACHE_TTL_MS", "--key-cache-ttl-ms", 0, 3600000,
                &config->key_cache_ttl_ms) != 0 ||
        env_int("WALKLIST_RATE_LEASE_MS", "--rate-lease-ms", 0, 60000, &config->rate_lease_ms) !=
            0 ||
        env_int("WALKLIST_COMMIT_GROUPS", "--commit-groups", 0, 64, &config->commit_groups) != 0)
        return -1;
    if (env_int("WALKLIST_RATE_LIMIT_LOCATE_LISTS", "--rate-limit-locate-lists", 1, 1000000,
                &config->rate_locate_lists) != 0 ||
        env_int("WALKLIST_RATE_LIMIT_STOCK_EXPORT", "--rate-limit-stock-export", 1, 1000000,
                &config->rate_stock_export) != 0 ||
        env_int("WALKLIST_RATE_LIMIT_SHARED", "--rate-limit-shared", 1, 1000000,
                &config->rate_shared) != 0 ||
        env_int("WALKLIST_RATE_LIMIT_ANONYMOUS", "--rate-limit-anonymous", 1, 1000000,
                &config->rate_anonymous) != 0)
        return -1;
    if (env_int("WALKLIST_THREADS", "--threads", 1, 1024, &config->threads) != 0 ||
        env_int("WALKLIST_DB_POOL_SIZE", "--db-pool-size", 1, 1024, &config->db_pool_size) != 0 ||
        env_int("WALKLIST_DB_TIMEOUT_MS", "--db-timeout-ms", 100, 600000, &config->db_timeout_ms) !=
            0 ||
        env_int("WALKLIST_CONNECTION_TIMEOUT", "--connection-timeout", 1, 3600,
                &config->connection_timeout_s) != 0 ||
        env_int("WALKLIST_MAX_CONNECTIONS", "--max-connections", 1, 1000000,
                &config->max_connections) != 0 ||
        env_int("WALKLIST_MAX_CONNECTIONS_PER_IP", "--max-connections-per-ip", 1, 1000000,
                &config->max_connections_per_ip) != 0)
        return -1;

    static const struct option options[] = {
        {"database-url", required_argument, NULL, 'd'},
        {"database-read-url", required_argument, NULL, 'r'},
        {"listen", required_argument, NULL, 'l'},
        {"ops-listen", required_argument, NULL, 'o'},
        {"threads", required_argument, NULL, 't'},
        {"db-pool-size", required_argument, NULL, 'p'},
        {"db-timeout-ms", required_argument, NULL, 'w'},
        {"connection-timeout", required_argument, NULL, 'c'},
        {"max-connections", required_argument, NULL, 'm'},
        {"max-connections-per-ip", required_argument, NULL, 'i'},
        {"tls-cert", required_argument, NULL, 'C'},
        {"tls-key", required_argument, NULL, 'K'},
        {"tls-min-version", required_argument, NULL, 'V'},
        {"rate-limit-locate-lists", required_argument, NULL, 'L'},
        {"rate-limit-stock-export", required_argument, NULL, 'E'},
        {"rate-limit-shared", required_argument, NULL, 'S'},
        {"rate-limit-anonymous", required_argument, NULL, 'A'},
        {"shutdown-timeout-ms", required_argument, NULL, 'T'},
        {"key-cache-ttl-ms", required_argument, NULL, 'k'},
        {"rate-lease-ms", required_argument, NULL, 'R'},
        {"commit-groups", required_argument, NULL, 'G'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        int rc = 0;
        switch (opt) {
        case 'd':
            config->database_url = optarg;
            break;
        case 'r':
            config->read_database_url = optarg;
            break;
        case 'l':
            config->listen = optarg;
            break;
        case 'o':
            config->ops_listen = optarg;
            break;
        case 't':
            rc = parse_int(optarg, "--threads", 1, 1024, &config->threads);
            break;
        case 'p':
            rc = parse_int(optarg, "--db-pool-size", 1, 1024, &config->db_pool_size);
            break;
        case 'w':
            rc = parse_int(optarg, "--db-timeout-ms", 100, 600000, &config->db_timeout_ms);
            break;
        case 'c':
            rc = parse_int(optarg, "--connection-timeout", 1, 3600, &config->connection_timeout_s);
            break;
        case 'm':
            rc = parse_int(optarg, "--max-connections", 1, 1000000, &config->max_connections);
            break;
        case 'i':
            rc = parse_int(optarg, "--max-connections-per-ip", 1, 1000000,
                           &config->max_connections_per_ip);
            break;
        case 'C':
            config->tls_cert_path = optarg;
            break;
        case 'K':
            config->tls_key_path = optarg;
            break;
        case 'V':
            config->tls_min_version = optarg;
            break;
        case 'L':
            rc = parse_int(optarg, "--rate-limit-locate-lists", 1, 1000000,
                           &config->rate_locate_lists);
            break;
        case 'E':
            rc = parse_int(optarg, "--rate-limit-stock-export", 1, 1000000,
                           &config->rate_stock_export);
            break;
        case 'S':
            rc = parse_int(optarg, "--rate-limit-shared", 1, 1000000, &config->rate_shared);
            break;
        case 'A':
            rc = parse_int(optarg, "--rate-limit-anonymous", 1, 1000000, &config->rate_anonymous);
            break;
        case 'T':
            rc =
                parse_int(optarg, "--shutdown-timeout-ms", 0, 600000, &config->shutdown_timeout_ms);
            break;
        case 'k':
            rc = parse_int(optarg, "--key-cache-ttl-ms", 0, 3600000, &config->key_cache_ttl_ms);
            break;
        case 'R':
            rc = parse_int(optarg, "--rate-lease-ms", 0, 60000, &config->rate_lease_ms);
            break;
        case 'G':
            rc = parse_int(optarg, "--commit-groups", 0, 64, &config->commit_groups);
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return -1;
        }
        if (rc != 0)
            return -1;
    }
    if (optind < argc) {
        fprintf(stderr, "walklistd: unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (config->database_url == NULL || config->database_url[0] == '\0') {
        fprintf(stderr, "walklistd: --database-url (or WALKLIST_DATABASE_URL) is required\n");
        return -1;
    }
    if (config->db_pool_size == 0)
        config->db_pool_size = config->threads + 2;
    /* An empty value (e.g. WALKLIST_TLS_CERT= in a unit file) means not set. */
    if (config->tls_cert_path != NULL && config->tls_cert_path[0] == '\0')
        config->tls_cert_path = NULL;
    if (config->tls_key_path != NULL && config->tls_key_path[0] == '\0')
        config->tls_key_path = NULL;
    if (config->tls_min_version != NULL && config->tls_min_version[0] != '\0' &&
        strcmp(config->tls_min_version, "1.2") != 0 &&
        strcmp(config->tls_min_version, "1.3") != 0) {
        fprintf(stderr,
                "walklistd: --tls-min-version (WALKLIST_TLS_MIN_VERSION) must be 1.2 or 1.3, not "
                "'%s'\n",
                config->tls_min_version);
        return -1;
    }
    if ((config->tls_cert_path == NULL) != (config->tls_key_path == NULL)) {
        fprintf(stderr, "walklistd: --tls-cert and --tls-key (WALKLIST_TLS_CERT, "
                        "WALKLIST_TLS_KEY) go together: give both or neither\n");
        return -1;
    }
    return 0;
}

/* PEM files are small; anything larger is not one. */
#define PEM_FILE_LIMIT (1024 * 1024)

/* Reads a whole PEM file into a NUL-terminated malloc'd buffer; prints why not and returns
 * NULL when it is missing, unreadable, too large or not PEM. */
static char *read_pem(const char *path, const char *flag)
{
    FILE *in = fopen(path, "rb");
    if (in == NULL) {
        fprintf(stderr, "walklistd: cannot read %s %s: %s\n", flag, path, strerror(errno));
        return NULL;
    }
    char *text = malloc(PEM_FILE_LIMIT + 1);
    size_t len = text ? fread(text, 1, PEM_FILE_LIMIT + 1, in) : 0;
    bool failed = ferror(in) != 0;
    int read_errno = errno;
    fclose(in);
    if (text == NULL || failed) {
        fprintf(stderr, "walklistd: cannot read %s %s: %s\n", flag, path,
                text ? strerror(read_errno) : "out of memory");
        free(text);
        return NULL;
    }
    if (len > PEM_FILE_LIMIT) {
        fprintf(stderr, "walklistd: %s %s is larger than 1 MiB: not a PEM file\n", flag, path);
        free(text);
        return NULL;
    }
    text[len] = '\0';
    if (strstr(text, "-----BEGIN ") == NULL) {
        fprintf(stderr, "walklistd: %s %s is not a PEM file (no -----BEGIN line)\n", flag, path);
        free(text);
        return NULL;
    }
    return text;
}

/* Frees a buffer that held a private key, wiping it first. */
static void free_secret(char *text)
{
    if (text == NULL)
        return;
    explicit_bzero(text, strlen(text));
    free(text);
}

int main(int argc, char **argv)
{
    /* No fastbins: glibc then never consolidates them when a larger block is asked for
     * (libpq's results), which showed in every request's profile; the per-thread caches
     * still serve small blocks. About 13% less CPU per walk list (BENCHMARKS.md). */
    mallopt(M_MXFAST, 0);
    config_t config;
    if (read_config(argc, argv, &config) != 0)
        return 2;
    wl_log_use_json(true); /* from here on diagnostics join the request log's JSON lines */
    char *tls_cert = NULL, *tls_key = NULL;
    if (config.tls_cert_path != NULL) {
        tls_cert = read_pem(config.tls_cert_path, "--tls-cert");
        tls_key = tls_cert ? read_pem(config.tls_key_path, "--tls-key") : NULL;
        if (tls_key == NULL) {
            free(tls_cert);
            return 2;
        }
    }

    /* Signals are taken synchronously by this thread; workers never see them. */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    wl_error_t err;
    wl_error_init(&err);
    wl_core_t *core = NULL;
    wl_server_t *server = NULL;
    wl_core_config_t core_config = {
        .database_url = config.database_url,
        .read_database_url = config.read_database_url,
        .db_pool_size = config.db_pool_size,
        .db_timeout_ms = config.db_timeout_ms,
        .rate_locate_lists = config.rate_locate_lists,
        .rate_stock_export = config.rate_stock_export,
        .rate_shared = config.rate_shared,
        /* 0 on the command line means off; in the core it means the default. */
        .key_cache_ttl_ms = config.key_cache_ttl_ms > 0 ? config.key_cache_ttl_ms : -1,
        .rate_lease_ms = config.rate_lease_ms > 0 ? config.rate_lease_ms : -1,
        .commit_groups = config.commit_groups > 0 ? config.commit_groups : -1,
    };
    if (wl_core_create(&core_config, &core, &err) != 0) {
        fprintf(stderr, "walklistd: %s\n", err.message);
        free(tls_cert);
        free_secret(tls_key);
        return 1;
    }
    wl_error_t ready_err;
    wl_error_init(&ready_err);
    if (wl_core_ready(core, &ready_err) != 0)
        wl_log("warn", "database not ready; serving 503 until it is", "%s", ready_err.message);
    /* Read from the environment only (tuning, not everyday configuration). */
    const char *cache_mb = getenv("WALKLIST_EXPORT_CACHE_MB");
    const char *trust = getenv("WALKLIST_EXPORT_CACHE_TRUST_NOTIFY");
    wl_export_cache_config_t export_cache = {
        .body_limit_mb = cache_mb != NULL ? strtoull(cache_mb, NULL, 10) : 1024,
        .trust_notify = trust == NULL || strcmp(trust, "0") != 0,
        .directory = getenv("TMPDIR"),
    };
    wl_server_config_t server_config = {
        .listen = config.listen,
        .threads = (unsigned)config.threads,
        .connection_timeout_s = (unsigned)config.connection_timeout_s,
        .connection_limit = (unsigned)config.max_connections,
        .per_ip_connection_limit = (unsigned)config.max_connections_per_ip,
        .anonymous_limit = (unsigned)config.rate_anonymous,
        .tls_cert_pem = tls_cert,
        .tls_key_pem = tls_key,
        .ops_listen = config.ops_listen,
        .export_cache = &export_cache,
        .tls_1_3_only =
            config.tls_min_version != NULL && strcmp(config.tls_min_version, "1.3") == 0,
    };
    if (wl_server_start(core, &server_config, &server, &err) != 0) {
        fprintf(stderr, "walklistd: %s\n", err.message);
        wl_core_destroy(core);
        free(tls_cert);
        free_secret(tls_key);
        return 1;
    }
    wl_log_line_t line;
    wl_log_line_begin(&line, "info", "listening");
    wl_log_line_str(&line, "listen", config.listen, strlen(config.listen));
    wl_log_line_int(&line, "port", wl_server_port(server));
    wl_log_line_bool(&line, "tls", tls_cert != NULL);
    wl_log_line_int(&line, "opsPort", wl_server_ops_port(server));
    wl_log_line_end(&line);

    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    wl_log_line_begin(&line, "info", "stopping");
    wl_log_line_int(&line, "signal", signal_number);
    wl_log_line_end(&line);
    wl_server_stop(server, config.shutdown_timeout_ms);
    wl_core_destroy(core);
    free(tls_cert);
    free_secret(tls_key);
    return 0;
}
