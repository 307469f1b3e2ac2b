/*
 * walklistd's configuration as data: one table of options (WL_CONFIG_OPTIONS) from which the
 * settings struct, its defaults, the environment variables, the command-line flags, their
 * bounds, --help and the configuration table of docs/operations.md are all generated. A setting
 * comes from its default, then its environment variable, then its flag: the last one read wins.
 * Adding an option means adding a row.
 */
#ifndef WALKLIST_GATEWAY_CONFIG_H
#define WALKLIST_GATEWAY_CONFIG_H

#include <stdbool.h>
#include <stdio.h>

#include "walklist/core.h"
#include "walklist/delivery.h"
#include "walklist/error.h"

/*
 * The rows, in the order --help and docs/operations.md list them. Three kinds:
 *
 *   INT(field, flag, env, metavar, min, max, default, derived, help, doc)
 *       a whole number from min to max. derived: NULL, or what a default of 0 stands for
 *       ("2 x cores"), worked out by wl_config_read once every source is read (0 is then below
 *       min, so no source can give it).
 *   TEXT(field, flag, env, metavar, required, default, help, doc)
 *       a string; default NULL: none. An empty value means the default (a unit file's
 *       WALKLIST_TLS_CERT= unsets it).
 *   CHOICE(field, flag, env, choices, default, help, doc)
 *       one of choices ("1.2|1.3"); an empty value means the default.
 *
 * help is the --help text (plain); doc the Meaning column of docs/operations.md (Markdown), NULL:
 * the same as help. Defaults the core also falls back on come from walklist/core.h, so each is
 * written once.
 */
// clang-format off
#define WL_CONFIG_OPTIONS(INT, TEXT, CHOICE)                                                       \
    TEXT(database_url, "database-url", "WALKLIST_DATABASE_URL", "URL", true, NULL,                 \
         "libpq conninfo or URI", NULL)                                                            \
    TEXT(read_database_url, "database-read-url", "WALKLIST_DATABASE_READ_URL", "URL", false, NULL, \
         "a replica for the stock export and the breakdown; without it they read the primary",     \
         "a replica for the stock export and the breakdown; keys, rate limits, walk lists and "    \
         "every write stay on the primary (see below)")                                            \
    CHOICE(db_workers, "db-workers", "WALKLIST_DB_WORKERS", "direct|coordinator", "direct",        \
           "on a distributed database (Citus): send walk list creations, reads and key checks "   \
           "straight to the worker holding the organization (direct), or through the coordinator", \
           "on a distributed database (Citus): admissions (walk list creation and reads by id, "   \
           "key checks, rate-limit decisions) go `direct` to the worker holding the "               \
           "organization, connecting with the database URL's settings at the address the "         \
           "coordinator's catalog gives (a worker that cannot be reached that way is reached "     \
           "through the coordinator), or all through the `coordinator`; see "                      \
           "[Scaling out](scaling-out.md)")                                 \
    TEXT(listen, "listen", "WALKLIST_LISTEN", "HOST:PORT", false, "127.0.0.1:8080",                \
         "address to serve on; port 0 picks a free port (logged)",                                 \
         "`host:port` or `[v6]:port`; port 0 picks a free port (logged)")                          \
    TEXT(ops_listen, "ops-listen", "WALKLIST_OPS_LISTEN", "HOST:PORT", false, NULL,                \
         "also serve /healthz, /readyz and /metrics on a plain-HTTP listener of their own, a "     \
         "thread per connection, never behind a request that waits on the database",               \
         "`host:port` of a plain-HTTP listener for `/healthz`, `/readyz`, `/metrics` and the "     \
         "OpenAPI document only (404 for anything else), a thread per connection (16 at most), "   \
         "never behind a request that waits on the database: point liveness probes here; "         \
         "`/readyz` there says 503 from SIGTERM on")                                               \
    TEXT(grpc_listen, "grpc-listen", "WALKLIST_GRPC_LISTEN", "HOST:PORT", false, NULL,             \
         "also serve every core service over gRPC (HTTP/2) on this address; TLS with "             \
         "--tls-cert/--tls-key; port 0 picks a free port (logged)",                                \
         "`host:port` or `[v6]:port` of a gRPC (HTTP/2) listener for every core service, "         \
         "`grpc.health.v1.Health` and server reflection: cleartext h2c, or TLS with ALPN h2 when " \
         "`--tls-cert` and `--tls-key` are given; port 0 picks a free port (logged); see "       \
         "[gRPC](rpc.md#grpc)")                                                                          \
    INT(threads, "threads", "WALKLIST_THREADS", "N", 1, 1024, 0, "2 x cores",                      \
        "request threads: where requests wait for the database", NULL)  \
    INT(grpc_threads, "grpc-threads", "WALKLIST_GRPC_THREADS", "N", 1, 1024, 0, "threads",         \
        "gRPC worker threads: each runs one call at a time", NULL)                                 \
    INT(db_pool_size, "db-pool-size", "WALKLIST_DB_POOL_SIZE", "N", 1, 1024, 0, "threads + 2",     \
        "PostgreSQL connections at most", NULL)                                                    \
    INT(db_timeout_ms, "db-timeout-ms", "WALKLIST_DB_TIMEOUT_MS", "MS", 100, 600000,               \
        WL_CORE_DEFAULT_DB_TIMEOUT_MS, NULL,                                                       \
        "the longest a request waits on an unreachable or stuck database before 503",              \
        "the longest a request waits on an unreachable or stuck database before 503 (a free "      \
        "connection, a new one, a server gone silent, a row lock); see [Database "                 \
        "outages](behaviour.md#database-outages)")                                                 \
    INT(connection_timeout_s, "connection-timeout", "WALKLIST_CONNECTION_TIMEOUT", "S", 1, 3600,   \
        30, NULL, "idle HTTP connections are closed after this many seconds", NULL)                \
    INT(watch_heartbeat_s, "watch-heartbeat-s", "WALKLIST_WATCH_HEARTBEAT_S", "S", 1, 3600, 15,    \
        NULL, "WatchStock streams get a heartbeat message after this many seconds of silence",     \
        "WatchStock streams get a heartbeat message after this many seconds of silence (see "      \
        "[Watching stock](change-feeds.md#watching-stock))")                                                     \
    INT(watch_stall_s, "watch-stall-s", "WALKLIST_WATCH_STALL_S", "S", 1, 3600, 60, NULL,          \
        "a WatchStock client that takes longer than this for one message is cut off",              \
        NULL)                                                                                      \
    INT(max_connections, "max-connections", "WALKLIST_MAX_CONNECTIONS", "N", 1, 1000000, 1000,     \
        NULL, "open HTTP connections at most; further ones wait in the kernel's accept queue",     \
        NULL)                                                                                      \
    INT(max_connections_per_ip, "max-connections-per-ip", "WALKLIST_MAX_CONNECTIONS_PER_IP", "N",  \
        1, 1000000, 64, NULL,                                                                      \
        "open connections per client address; further ones are closed at once", NULL)              \
    TEXT(tls_cert_path, "tls-cert", "WALKLIST_TLS_CERT", "FILE", false, NULL,                      \
         "PEM certificate (then any intermediates): serve HTTPS; needs --tls-key",                 \
         "PEM certificate (then any intermediates): serve HTTPS; needs `--tls-key`")               \
    TEXT(tls_key_path, "tls-key", "WALKLIST_TLS_KEY", "FILE", false, NULL,                         \
         "the certificate's private key, PEM, unencrypted", NULL)                                  \
    CHOICE(tls_min_version, "tls-min-version", "WALKLIST_TLS_MIN_VERSION", "1.2|1.3", "1.2",       \
           "1.2 (TLS 1.2 with forward-secret AEAD suites, and 1.3) or 1.3 (TLS 1.3 only)",         \
           "`1.2` (TLS 1.2 with forward-secret AEAD suites, and 1.3) or `1.3` (TLS 1.3 only)")     \
    TEXT(cors_origin, "cors-origin", "WALKLIST_CORS_ORIGIN", "ORIGINS", false, NULL,               \
         "let browsers on these origins call /api/v1 and Connect (comma-separated, e.g. "          \
         "https://app.example.com, or *); off by default",                                         \
         "browsers on these origins may call `/api/v1` and the Connect procedures: "                \
         "comma-separated exact origins (`https://app.example.com,http://localhost:3000`), or "    \
         "`*`; off by default; see [CORS](api.md#cors)")                                                 \
    INT(rate_locate_lists, "rate-limit-locate-lists", "WALKLIST_RATE_LIMIT_LOCATE_LISTS", "N", 1,  \
        1000000, WL_CORE_DEFAULT_RATE_LOCATE_LISTS, NULL,                                          \
        "walk list creations per organization per minute (the spec's value)",                      \
        "per organization per minute (the spec's value)")                                          \
    INT(rate_stock_export, "rate-limit-stock-export", "WALKLIST_RATE_LIMIT_STOCK_EXPORT", "N", 1,  \
        1000000, WL_CORE_DEFAULT_RATE_STOCK_EXPORT, NULL,                                          \
        "stock exports per organization per minute", "per organization per minute")                \
    INT(rate_shared, "rate-limit-shared", "WALKLIST_RATE_LIMIT_SHARED", "N", 1, 1000000,           \
        WL_CORE_DEFAULT_RATE_SHARED, NULL,                                                         \
        "requests to every other /api/v1 endpoint per organization per minute",                    \
        "per organization per minute")                                                             \
    INT(rate_anonymous, "rate-limit-anonymous", "WALKLIST_RATE_LIMIT_ANONYMOUS", "N", 1, 1000000,  \
        120, NULL, "per client address per minute, requests without a valid key", NULL)            \
    INT(rate_lease_ms, "rate-lease-ms", "WALKLIST_RATE_LEASE_MS", "MS", 0, 60000,                  \
        WL_CORE_DEFAULT_RATE_LEASE_MS, NULL,                                                       \
        "how long busy buckets may hold leased rate-limit permits; 0: every counted request "      \
        "asks PostgreSQL",                                                                         \
        "how long leased rate-limit permits may be held (see [Rate limits](api.md#rate-limits)); 0: "    \
        "every counted request asks PostgreSQL")                                                   \
    INT(key_cache_ttl_ms, "key-cache-ttl-ms", "WALKLIST_KEY_CACHE_TTL_MS", "MS", 0, 3600000,       \
        WL_CORE_DEFAULT_KEY_CACHE_TTL_MS, NULL,                                                    \
        "how long a checked API key is kept in memory (a revoked key is refused once "             \
        "PostgreSQL announces it); 0: every request checks its key in PostgreSQL",                 \
        "how long a checked API key is kept in memory; 0: every request checks its key in "        \
        "PostgreSQL")                                                                              \
    INT(commit_groups, "commit-groups", "WALKLIST_COMMIT_GROUPS", "N", 0, 64,                      \
        WL_CORE_DEFAULT_COMMIT_GROUPS, NULL,                                                       \
        "requests that need PostgreSQL at the same moment (key checks, rate-limit decisions, "     \
        "walk lists) commit together, at most this many commits in flight; 0: every request "      \
        "commits alone",                                                                           \
        "requests that need PostgreSQL at the same moment are admitted together (group commit, "   \
        "see [Admissions](architecture.md#admissions)) by this many committer threads, so at most this many "     \
        "commits are in flight (capped at the pool size); 0: every request commits alone, in "     \
        "its own thread")                                                                          \
    INT(export_cache_mb, "export-cache-mb", "WALKLIST_EXPORT_CACHE_MB", "MIB", 0, 1048576, 1024,  \
        NULL, "stock export bodies kept for unchanged exports, in MiB; 0: versions only",          \
        "stock export bodies kept for unchanged exports, in MiB (files in `TMPDIR`); 0: only "     \
        "versions, for 304s (see [the export cache](#export-cache))")                                  \
    CHOICE(export_cache_trust_notify, "export-cache-trust-notify",                                 \
           "WALKLIST_EXPORT_CACHE_TRUST_NOTIFY", "1|0", "1",                                       \
           "1: export versions are trusted from memory until PostgreSQL announces a change; 0: "   \
           "each export reads its version",                                                        \
           "`1`: export versions are trusted from memory until PostgreSQL announces a change; "    \
           "`0`: each export reads its version (exact across processes, one statement)")           \
    INT(shutdown_timeout_ms, "shutdown-timeout-ms", "WALKLIST_SHUTDOWN_TIMEOUT_MS", "MS", 0,       \
        600000, 8000, NULL,                                                                        \
        "on SIGTERM, how long requests in flight may finish; then those not yet at the database "  \
        "are refused, those at it still waited for",                                               \
        "on SIGTERM or SIGINT, how long requests in flight may finish; then those not yet at the " \
        "database are refused 503, those at it are still waited for (see **Shutdown** below); "    \
        "the default ends before Docker's 10 s stop grace period")                                 \
    INT(webhook_workers, "webhook-workers", "WALKLIST_WEBHOOK_WORKERS", "N", 0, 64, 1, NULL,       \
        "webhook delivery threads, each with a database connection of its own; 0: this process "   \
        "delivers none (events wait for another)",                                                 \
        "webhook delivery threads, each with a database connection of its own; 0: this process "   \
        "delivers none (events wait for another); see [Webhooks](change-feeds.md#webhooks)")                      \
    INT(webhook_poll_ms, "webhook-poll-ms", "WALKLIST_WEBHOOK_POLL_MS", "MS", 10, 60000,           \
        WL_DELIVERY_DEFAULT_POLL_MS, NULL,                                                         \
        "how often an idle webhook worker looks for events to deliver", NULL)                      \
    INT(webhook_connect_timeout_ms, "webhook-connect-timeout-ms",                                  \
        "WALKLIST_WEBHOOK_CONNECT_TIMEOUT_MS", "MS", 10, 60000,                                    \
        WL_DELIVERY_DEFAULT_CONNECT_TIMEOUT_MS, NULL,                                              \
        "a webhook attempt's connection (TLS included) fails after this long", NULL)               \
    INT(webhook_timeout_ms, "webhook-timeout-ms", "WALKLIST_WEBHOOK_TIMEOUT_MS", "MS", 10, 300000, \
        WL_DELIVERY_DEFAULT_TIMEOUT_MS, NULL,                                                      \
        "a webhook attempt, whole (connection, request, answer), fails after this long", NULL)     \
    INT(webhook_retry_base_ms, "webhook-retry-base-ms", "WALKLIST_WEBHOOK_RETRY_BASE_MS", "MS",    \
        10, 3600000, WL_DELIVERY_DEFAULT_RETRY_BASE_MS, NULL,                                      \
        "the delay before a webhook's first retry; each further one doubles (with jitter)", NULL)  \
    INT(webhook_retry_max_ms, "webhook-retry-max-ms", "WALKLIST_WEBHOOK_RETRY_MAX_MS", "MS", 10,   \
        86400000, WL_DELIVERY_DEFAULT_RETRY_MAX_MS, NULL,                                          \
        "the longest delay between two attempts of a webhook", NULL)                               \
    INT(webhook_disable_after_s, "webhook-disable-after-s", "WALKLIST_WEBHOOK_DISABLE_AFTER_S",    \
        "S", 1, 31536000, WL_DELIVERY_DEFAULT_DISABLE_AFTER_S, NULL,                               \
        "a webhook endpoint whose deliveries have failed for this long is disabled (default: 5 "   \
        "days)", NULL)                                                                             \
    CHOICE(webhook_allow_private, "webhook-allow-private", "WALKLIST_WEBHOOK_ALLOW_PRIVATE",       \
           "0|1", "0",                                                                             \
           "1: webhooks may be delivered to private, loopback, link-local, multicast and "         \
           "unspecified addresses (a test receiver on this machine); 0: such deliveries are "      \
           "refused", NULL)
// clang-format on

/*
 * Every setting, one field a row. Strings point into argv, the environment or static text: they
 * stay valid as long as those do (the whole run for walklistd).
 */
typedef struct {
#define WL__CONFIG_INT_FIELD(field, ...)  int field;
#define WL__CONFIG_TEXT_FIELD(field, ...) const char *field;
    WL_CONFIG_OPTIONS(WL__CONFIG_INT_FIELD, WL__CONFIG_TEXT_FIELD, WL__CONFIG_TEXT_FIELD)
#undef WL__CONFIG_INT_FIELD
#undef WL__CONFIG_TEXT_FIELD
    /* --probe URL: not a setting (no environment twin, no default), the URL to check. */
    const char *probe_url;
} wl_config_t;

/* What the command line asks for besides the settings. */
typedef enum {
    WL_CONFIG_SERVE,    /* run with the settings */
    WL_CONFIG_HELP,     /* --help, -h: print wl_config_usage to stdout */
    WL_CONFIG_MARKDOWN, /* --print-config-markdown: print wl_config_markdown to stdout */
    WL_CONFIG_VERSION,  /* --version: print the version and commit to stdout */
    WL_CONFIG_PROBE,    /* --probe URL: GET config->probe_url, exit 0 on a 2xx (wl_probe) */
} wl_config_action_t;

/** Sets every setting to its default (derived ones to 0, worked out by wl_config_read). */
void wl_config_defaults(wl_config_t *config);

/**
 * Reads the settings: defaults, then each option's environment variable (getenv), then the
 * flags in argv (getopt_long; argv may be permuted). Then works out the derived defaults and
 * checks what needs more than one option (a --database-url; --tls-cert with --tls-key). A bad
 * value is refused wherever it comes from, even when a later source would replace it.
 * Returns 0 with *action set, or WL_EINVAL with err's message saying what is wrong, without the
 * program's name ("--threads must be a number from 1 to 1024, got '0'"). With an action other
 * than WL_CONFIG_SERVE nothing after the flags is read or checked.
 *
 *     wl_config_t config;
 *     wl_config_action_t action;
 *     if (wl_config_read(&config, argc, argv, &action, &err) != 0) {
 *         fprintf(stderr, "walklistd: %s\n", err.message);
 *         return 2;
 *     }
 */
int wl_config_read(wl_config_t *config, int argc, char **argv, wl_config_action_t *action,
                   wl_error_t *err) WL_CHECK_RESULT;

/** Writes --help: every option with its value, environment variable, default and bounds. */
void wl_config_usage(FILE *out);

/** Writes the configuration table of docs/operations.md (Markdown): flag, environment, default,
 * values and meaning of every option. tests/config_readme.sh keeps docs/operations.md equal to it.
 */
void wl_config_markdown(FILE *out);

#endif
