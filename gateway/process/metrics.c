/* Counting requests for Prometheus and rendering the exposition text happens here. */
#include "process/metrics.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "walklist/version.h"

#define MAX_SERIES  256
#define MAX_ROUTES  64
#define MAX_BUCKETS 8

static const double latency_bounds[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
                                        0.25,  0.5,   1.0,  2.5,   5.0,  10.0};
#define LATENCY_BOUNDS (sizeof(latency_bounds) / sizeof(latency_bounds[0]))

typedef struct {
    const char *route;
    unsigned status;
    unsigned long long count;
} request_series_t;

typedef struct {
    const char *route;
    unsigned long long buckets[LATENCY_BOUNDS]; /* cumulative on render, not here */
    unsigned long long count;
    double sum;
} latency_series_t;

typedef struct {
    const char *bucket;
    unsigned long long count;
} rejection_series_t;

typedef struct {
    const char *method;
    wl_grpc_code_t code;
    unsigned long long count;
} grpc_series_t;

struct wl_metrics {
    pthread_mutex_t lock;
    grpc_series_t grpc_calls[MAX_SERIES];
    size_t grpc_call_count;
    long long grpc_in_flight;
    request_series_t requests[MAX_SERIES];
    size_t request_count;
    unsigned long long requests_dropped; /* series beyond MAX_SERIES */
    latency_series_t latency[MAX_ROUTES];
    size_t latency_count;
    rejection_series_t rejections[MAX_BUCKETS];
    size_t rejection_count;
};

wl_metrics_t *wl_metrics_create(void)
{
    wl_metrics_t *metrics = calloc(1, sizeof(*metrics));
    if (metrics != NULL)
        pthread_mutex_init(&metrics->lock, NULL);
    return metrics;
}

void wl_metrics_destroy(wl_metrics_t *metrics)
{
    if (metrics == NULL)
        return;
    pthread_mutex_destroy(&metrics->lock);
    free(metrics);
}

/* One gauge per node: 1 when reachable, 0 when not. */
static void write_node_gauge(FILE *out, const char *name, const char *help,
                             const wl_core_node_t *nodes, size_t count)
{
    if (count == 0)
        return;
    fprintf(out, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
    for (size_t i = 0; i < count && i < WL_CORE_NODES_MAX; i++)
        fprintf(out, "%s{node=\"%s\"} %d\n", name, nodes[i].address, nodes[i].reachable ? 1 : 0);
}

/* On a distributed database, each worker as the last readiness check found it (an alert on
 * walklist_db_node_reachable == 0 names the node its organizations wait for), and whether this
 * process reaches it itself. */
static void write_nodes(FILE *out, wl_core_t *core)
{
    wl_core_node_t nodes[WL_CORE_NODES_MAX];
    size_t count = wl_core_nodes(core, nodes, WL_CORE_NODES_MAX);
    write_node_gauge(out, "walklist_db_node_reachable",
                     "1 when the coordinator reached the database node at the last readiness "
                     "check, 0 when not (its organizations get 503).",
                     nodes, count);
    count = wl_core_worker_routes(core, nodes, WL_CORE_NODES_MAX);
    write_node_gauge(out, "walklist_db_worker_direct",
                     "1 when this process reaches the worker itself and sends its admissions "
                     "there, 0 when they go through the coordinator.",
                     nodes, count);
}

/* Route labels are static route patterns, so they compare by content once and are kept. */
static bool same_label(const char *a, const char *b)
{
    return a == b || strcmp(a, b) == 0;
}

void wl_metrics_record(wl_metrics_t *metrics, const char *route, unsigned status, double seconds,
                       const char *rate_bucket)
{
    if (metrics == NULL)
        return;
    if (route == NULL || route[0] == '\0')
        route = "unmatched";
    pthread_mutex_lock(&metrics->lock);
    request_series_t *series = NULL;
    for (size_t i = 0; i < metrics->request_count && series == NULL; i++) {
        if (metrics->requests[i].status == status && same_label(metrics->requests[i].route, route))
            series = &metrics->requests[i];
    }
    if (series == NULL && metrics->request_count < MAX_SERIES) {
        series = &metrics->requests[metrics->request_count++];
        series->route = route;
        series->status = status;
    }
    if (series != NULL)
        series->count++;
    else
        metrics->requests_dropped++;

    latency_series_t *latency = NULL;
    for (size_t i = 0; i < metrics->latency_count && latency == NULL; i++) {
        if (same_label(metrics->latency[i].route, route))
            latency = &metrics->latency[i];
    }
    if (latency == NULL && metrics->latency_count < MAX_ROUTES) {
        latency = &metrics->latency[metrics->latency_count++];
        latency->route = route;
    }
    if (latency != NULL) {
        for (size_t b = 0; b < LATENCY_BOUNDS; b++) {
            if (seconds <= latency_bounds[b]) {
                latency->buckets[b]++;
                break;
            }
        }
        latency->count++;
        latency->sum += seconds;
    }

    if (status == 429 && rate_bucket != NULL) {
        rejection_series_t *rejection = NULL;
        for (size_t i = 0; i < metrics->rejection_count && rejection == NULL; i++) {
            if (same_label(metrics->rejections[i].bucket, rate_bucket))
                rejection = &metrics->rejections[i];
        }
        if (rejection == NULL && metrics->rejection_count < MAX_BUCKETS) {
            rejection = &metrics->rejections[metrics->rejection_count++];
            rejection->bucket = rate_bucket;
        }
        if (rejection != NULL)
            rejection->count++;
    }
    pthread_mutex_unlock(&metrics->lock);
}

void wl_metrics_grpc_started(wl_metrics_t *metrics)
{
    if (metrics == NULL)
        return;
    pthread_mutex_lock(&metrics->lock);
    metrics->grpc_in_flight++;
    pthread_mutex_unlock(&metrics->lock);
}

void wl_metrics_record_grpc(wl_metrics_t *metrics, const char *method, wl_grpc_code_t code)
{
    if (metrics == NULL)
        return;
    if (method == NULL || method[0] == '\0')
        method = "unmatched";
    pthread_mutex_lock(&metrics->lock);
    metrics->grpc_in_flight--;
    grpc_series_t *series = NULL;
    for (size_t i = 0; i < metrics->grpc_call_count && series == NULL; i++) {
        if (metrics->grpc_calls[i].code == code &&
            same_label(metrics->grpc_calls[i].method, method))
            series = &metrics->grpc_calls[i];
    }
    if (series == NULL && metrics->grpc_call_count < MAX_SERIES) {
        series = &metrics->grpc_calls[metrics->grpc_call_count++];
        series->method = method;
        series->code = code;
    }
    if (series != NULL)
        series->count++;
    pthread_mutex_unlock(&metrics->lock);
}

char *wl_metrics_render(wl_metrics_t *metrics, wl_core_t *core, uint64_t request_thread_jobs,
                        const wl_delta_share_stats_t *watch_deltas, wl_arena_t *arena, size_t *len)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    if (out == NULL)
        return NULL;
    pthread_mutex_lock(&metrics->lock);
    fprintf(out,
            "# HELP walklist_build_info The running build: version and git commit, always 1.\n"
            "# TYPE walklist_build_info gauge\n"
            "walklist_build_info{version=\"%s\",commit=\"%s\"} 1\n",
            WL_VERSION, WL_COMMIT);
    fprintf(out,
            "# HELP walklist_http_requests_total HTTP requests answered, by route and status.\n"
            "# TYPE walklist_http_requests_total counter\n");
    for (size_t i = 0; i < metrics->request_count; i++)
        fprintf(out, "walklist_http_requests_total{route=\"%s\",status=\"%u\"} %llu\n",
                metrics->requests[i].route, metrics->requests[i].status,
                metrics->requests[i].count);
    fprintf(out,
            "# HELP walklist_http_request_duration_seconds Time from request line to the answer"
            " being queued.\n"
            "# TYPE walklist_http_request_duration_seconds histogram\n");
    for (size_t i = 0; i < metrics->latency_count; i++) {
        const latency_series_t *l = &metrics->latency[i];
        unsigned long long cumulative = 0;
        for (size_t b = 0; b < LATENCY_BOUNDS; b++) {
            cumulative += l->buckets[b];
            fprintf(out,
                    "walklist_http_request_duration_seconds_bucket{route=\"%s\",le=\"%g\"} %llu\n",
                    l->route, latency_bounds[b], cumulative);
        }
        fprintf(out,
                "walklist_http_request_duration_seconds_bucket{route=\"%s\",le=\"+Inf\"} %llu\n"
                "walklist_http_request_duration_seconds_sum{route=\"%s\"} %.6f\n"
                "walklist_http_request_duration_seconds_count{route=\"%s\"} %llu\n",
                l->route, l->count, l->route, l->sum, l->route, l->count);
    }
    fprintf(out, "# HELP walklist_rate_limit_rejections_total Requests answered 429, by bucket.\n"
                 "# TYPE walklist_rate_limit_rejections_total counter\n");
    for (size_t i = 0; i < metrics->rejection_count; i++)
        fprintf(out, "walklist_rate_limit_rejections_total{bucket=\"%s\"} %llu\n",
                metrics->rejections[i].bucket, metrics->rejections[i].count);
    fprintf(out, "# HELP walklist_grpc_calls_total gRPC calls ended, by method and status code.\n"
                 "# TYPE walklist_grpc_calls_total counter\n");
    for (size_t i = 0; i < metrics->grpc_call_count; i++)
        fprintf(out, "walklist_grpc_calls_total{method=\"%s\",code=\"%s\"} %llu\n",
                metrics->grpc_calls[i].method, wl_grpc_code_name(metrics->grpc_calls[i].code),
                metrics->grpc_calls[i].count);
    fprintf(out,
            "# HELP walklist_grpc_calls_in_flight gRPC calls taken and not yet ended (queued for a "
            "worker or running).\n"
            "# TYPE walklist_grpc_calls_in_flight gauge\n"
            "walklist_grpc_calls_in_flight %lld\n",
            metrics->grpc_in_flight);
    pthread_mutex_unlock(&metrics->lock);

    int size_total = 0, in_use = 0, open = 0;
    bool reachable = false;
    wl_core_pool_stats(core, &size_total, &in_use, &open, &reachable);
    fprintf(out,
            "# HELP walklist_db_pool_connections Database connections by state.\n"
            "# TYPE walklist_db_pool_connections gauge\n"
            "walklist_db_pool_connections{state=\"in_use\"} %d\n"
            "walklist_db_pool_connections{state=\"idle\"} %d\n"
            "# HELP walklist_db_pool_size Database connections at most.\n"
            "# TYPE walklist_db_pool_size gauge\n"
            "walklist_db_pool_size %d\n"
            "# HELP walklist_db_reachable 0 from a failed database connection until one works "
            "again (requests are refused 503 meanwhile).\n"
            "# TYPE walklist_db_reachable gauge\n"
            "walklist_db_reachable %d\n",
            in_use, open > in_use ? open - in_use : 0, size_total, reachable ? 1 : 0);
    write_nodes(out, core);
    uint64_t borrows = 0, read_borrows = 0;
    wl_core_pool_borrows(core, &borrows, &read_borrows);
    fprintf(out,
            "# HELP walklist_db_borrows_total Database connections lent to requests and upkeep, "
            "by pool (the read replica's: read).\n"
            "# TYPE walklist_db_borrows_total counter\n"
            "walklist_db_borrows_total{pool=\"primary\"} %llu\n"
            "walklist_db_borrows_total{pool=\"read\"} %llu\n"
            "# HELP walklist_request_thread_jobs_total Steps of requests and pieces of streamed "
            "answers handed from the I/O threads to request threads.\n"
            "# TYPE walklist_request_thread_jobs_total counter\n"
            "walklist_request_thread_jobs_total %llu\n",
            (unsigned long long)borrows, (unsigned long long)read_borrows,
            (unsigned long long)request_thread_jobs);
    wl_core_access_stats_t access;
    wl_core_access_stats(core, &access);
    uint64_t admission_commits = 0, admission_requests = 0, admission_on_workers = 0;
    wl_core_admission_stats(core, &admission_commits, &admission_requests, &admission_on_workers);
    fprintf(
        out,
        "# HELP walklist_key_checks_total API key checks, by where they were answered.\n"
        "# TYPE walklist_key_checks_total counter\n"
        "walklist_key_checks_total{source=\"cache\"} %llu\n"
        "walklist_key_checks_total{source=\"database\"} %llu\n"
        "# HELP walklist_key_watch_up Whether key revocations are heard (1), so keys are kept.\n"
        "# TYPE walklist_key_watch_up gauge\n"
        "walklist_key_watch_up %d\n"
        "# HELP walklist_rate_limit_decisions_total Counted requests, by where decided.\n"
        "# TYPE walklist_rate_limit_decisions_total counter\n"
        "walklist_rate_limit_decisions_total{source=\"lease\"} %llu\n"
        "walklist_rate_limit_decisions_total{source=\"database\"} %llu\n"
        "# HELP walklist_rate_limit_refills_total Permit leases asked for ahead of need.\n"
        "# TYPE walklist_rate_limit_refills_total counter\n"
        "walklist_rate_limit_refills_total %llu\n"
        "# HELP walklist_admission_commits_total Commits that let requests in (group commit).\n"
        "# TYPE walklist_admission_commits_total counter\n"
        "walklist_admission_commits_total %llu\n"
        "# HELP walklist_admission_requests_total Requests in those commits.\n"
        "# TYPE walklist_admission_requests_total counter\n"
        "walklist_admission_requests_total %llu\n"
        "# HELP walklist_admission_commits_on_workers_total Admission commits sent straight to "
        "the worker holding their organizations (distributed database).\n"
        "# TYPE walklist_admission_commits_on_workers_total counter\n"
        "walklist_admission_commits_on_workers_total %llu\n",
        (unsigned long long)access.key_cache_hits, (unsigned long long)access.key_cache_misses,
        access.key_watch_listening ? 1 : 0, (unsigned long long)access.rate_local,
        (unsigned long long)access.rate_round_trips, (unsigned long long)access.rate_refills,
        (unsigned long long)admission_commits, (unsigned long long)admission_requests,
        (unsigned long long)admission_on_workers);
    wl_core_webhook_stats_t webhooks;
    wl_core_webhook_stats(core, &webhooks);
    fprintf(out,
            "# HELP walklist_webhook_attempts_total Webhook delivery attempts of this process, by "
            "result (refused: the host resolved to an address deliveries may not go to).\n"
            "# TYPE walklist_webhook_attempts_total counter\n"
            "walklist_webhook_attempts_total{result=\"delivered\"} %llu\n"
            "walklist_webhook_attempts_total{result=\"failed\"} %llu\n"
            "walklist_webhook_attempts_total{result=\"refused\"} %llu\n"
            "# HELP walklist_webhook_endpoints_disabled_total Webhook endpoints this process "
            "disabled after failing for too long.\n"
            "# TYPE walklist_webhook_endpoints_disabled_total counter\n"
            "walklist_webhook_endpoints_disabled_total %llu\n"
            "# HELP walklist_webhook_workers Webhook delivery threads of this process.\n"
            "# TYPE walklist_webhook_workers gauge\n"
            "walklist_webhook_workers %d\n",
            (unsigned long long)webhooks.delivered, (unsigned long long)webhooks.failed,
            (unsigned long long)webhooks.refused, (unsigned long long)webhooks.disabled,
            webhooks.workers);
    fprintf(out,
            "# HELP walklist_watch_deltas_total WatchStock deltas of this process, by where their "
            "items came from (shared: read by another watcher of the organization woken by the "
            "same change).\n"
            "# TYPE walklist_watch_deltas_total counter\n"
            "walklist_watch_deltas_total{source=\"database\"} %llu\n"
            "walklist_watch_deltas_total{source=\"shared\"} %llu\n",
            (unsigned long long)watch_deltas->read, (unsigned long long)watch_deltas->shared);
    if (fclose(out) != 0) {
        free(text);
        return NULL;
    }
    char *copy = wl_arena_strndup(arena, text, size);
    free(text);
    *len = size;
    return copy;
}
