/* walklistd: reading configuration, starting the core and the HTTP server, and stopping on a signal
 * happens here. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "process/config.h"
#include "http/cors.h"
#include "process/notify.h"
#include "process/probe.h"
#include "http/server.h"
#include "walklist/core.h"
#include "walklist/delivery.h"
#include "walklist/log.h"
#include "walklist/version.h"

/* A health check answers well within Docker's default 30 s timeout. */
#define PROBE_TIMEOUT_MS 5000

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
    wl_error_t err;
    wl_error_init(&err);
    wl_config_t config;
    wl_config_action_t action;
    if (wl_config_read(&config, argc, argv, &action, &err) != 0) {
        fprintf(stderr, "walklistd: %s\n", err.message);
        return 2;
    }
    if (action == WL_CONFIG_HELP) {
        wl_config_usage(stdout);
        return 0;
    }
    if (action == WL_CONFIG_MARKDOWN) {
        wl_config_markdown(stdout);
        return 0;
    }
    if (action == WL_CONFIG_VERSION) {
        printf("walklistd %s (commit %s)\n", WL_VERSION, WL_COMMIT);
        return 0;
    }
    if (action == WL_CONFIG_PROBE)
        return wl_probe(config.probe_url, PROBE_TIMEOUT_MS, stderr);
    const char *url_flags[] = {"--database-url", "--database-read-url"};
    const char *urls[] = {config.database_url, config.read_database_url};
    for (size_t i = 0; i < 2; i++) {
        if (urls[i] != NULL && wl_core_check_database_url(urls[i], &err) != 0) {
            fprintf(stderr, "walklistd: %s: %s\n", url_flags[i], err.message);
            return 2;
        }
    }
    wl_cors_t *cors = NULL;
    if (wl_cors_create(config.cors_origin, &cors, &err) != 0) {
        fprintf(stderr, "walklistd: %s\n", err.message);
        return 2;
    }
    wl_log_use_json(true); /* from here on diagnostics join the request log's JSON lines */
    char *tls_cert = NULL, *tls_key = NULL;
    if (config.tls_cert_path != NULL) {
        tls_cert = read_pem(config.tls_cert_path, "--tls-cert");
        tls_key = tls_cert ? read_pem(config.tls_key_path, "--tls-key") : NULL;
        if (tls_key == NULL) {
            free(tls_cert);
            wl_cors_destroy(cors);
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
        .workers_through_coordinator = strcmp(config.db_workers, "coordinator") == 0,
    };
    wl_delivery_config_t delivery_config = {
        .workers = config.webhook_workers,
        .poll_ms = config.webhook_poll_ms,
        .connect_timeout_ms = config.webhook_connect_timeout_ms,
        .timeout_ms = config.webhook_timeout_ms,
        .retry_base_ms = config.webhook_retry_base_ms,
        .retry_max_ms = config.webhook_retry_max_ms,
        .disable_after_s = config.webhook_disable_after_s,
        .allow_private = strcmp(config.webhook_allow_private, "1") == 0,
    };
    /* 0 workers: this process delivers no webhooks (events wait in the outbox for another). */
    wl_delivery_t *delivery = NULL;
    if (wl_core_create(&core_config, &core, &err) != 0 ||
        (delivery_config.workers > 0 &&
         wl_delivery_start(core, &delivery_config, &delivery, &err) != 0)) {
        fprintf(stderr, "walklistd: %s\n", err.message);
        wl_core_destroy(core);
        wl_cors_destroy(cors);
        free(tls_cert);
        free_secret(tls_key);
        return 1;
    }
    wl_error_t ready_err;
    wl_error_init(&ready_err);
    if (wl_core_ready(core, &ready_err) != 0)
        wl_log("warn", "database not ready; serving 503 until it is", "%s", ready_err.message);
    wl_export_cache_config_t export_cache = {
        .body_limit_mb = (uint64_t)config.export_cache_mb,
        .trust_notify = strcmp(config.export_cache_trust_notify, "1") == 0,
        .directory = getenv("TMPDIR"), /* the system's temporary directory, not our setting */
    };
    wl_server_config_t server_config = {
        .listen = config.listen,
        .threads = (unsigned)config.threads,
        .connection_timeout_s = (unsigned)config.connection_timeout_s,
        .watch_heartbeat_s = (unsigned)config.watch_heartbeat_s,
        .watch_stall_s = (unsigned)config.watch_stall_s,
        .connection_limit = (unsigned)config.max_connections,
        .per_ip_connection_limit = (unsigned)config.max_connections_per_ip,
        .anonymous_limit = (unsigned)config.rate_anonymous,
        .tls_cert_pem = tls_cert,
        .tls_key_pem = tls_key,
        .ops_listen = config.ops_listen,
        .export_cache = &export_cache,
        .tls_1_3_only = strcmp(config.tls_min_version, "1.3") == 0,
        .grpc_listen = config.grpc_listen,
        .grpc_threads = (unsigned)config.grpc_threads,
        .cors = cors,
    };
    if (wl_server_start(core, &server_config, &server, &err) != 0) {
        fprintf(stderr, "walklistd: %s\n", err.message);
        wl_cors_destroy(cors);
        wl_delivery_stop(delivery);
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
    wl_log_line_int(&line, "grpcPort", wl_server_grpc_port(server));
    wl_log_line_end(&line);
    wl_notify_ready();

    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    wl_notify_stopping();
    wl_log_line_begin(&line, "info", "stopping");
    wl_log_line_int(&line, "signal", signal_number);
    wl_log_line_end(&line);
    wl_server_stop(server, config.shutdown_timeout_ms);
    wl_cors_destroy(cors);
    wl_delivery_stop(delivery); /* its threads use the core */
    wl_core_destroy(core);
    free(tls_cert);
    free_secret(tls_key);
    return 0;
}
