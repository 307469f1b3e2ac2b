/*
 * Prometheus metrics of one walklistd process: requests by route and status, gRPC calls by
 * method and code,
 * a latency histogram per route, rate-limit rejections per bucket, and the
 * database pool. Recording is a short mutex-protected update; the text
 * exposition format is produced on demand for GET /metrics.
 */
#ifndef WALKLIST_GATEWAY_METRICS_H
#define WALKLIST_GATEWAY_METRICS_H

#include <stddef.h>

#include "export/delta_share.h"
#include "walklist/arena.h"
#include "walklist/core.h"

typedef struct wl_metrics wl_metrics_t;

wl_metrics_t *wl_metrics_create(void);
void wl_metrics_destroy(wl_metrics_t *metrics);

/**
 * Records one answered request. route is a route pattern with static storage
 * ("" or NULL for unmatched paths); rate_bucket names the bucket of a 429
 * (NULL otherwise).
 */
void wl_metrics_record(wl_metrics_t *metrics, const char *route, unsigned status, double seconds,
                       const char *rate_bucket);

/** Counts a gRPC call taken (in flight until wl_metrics_record_grpc records its end). */
void wl_metrics_grpc_started(wl_metrics_t *metrics);

/**
 * Records one gRPC call by how it ended. method is a procedure path valid while the metrics
 * are ("" or NULL for an unknown method); code the status the client was sent, or CANCELLED
 * for a call that ended without one (the client left, its deadline passed, or gRPC's core
 * refused its message).
 */
void wl_metrics_record_grpc(wl_metrics_t *metrics, const char *method, wl_grpc_code_t code);

/** The exposition text (Prometheus text format 0.0.4) in arena memory; NULL when out of memory.
 * request_thread_jobs: the steps handed to request threads so far (offload.h); watch_deltas:
 * the WatchStock deltas read and shared so far (delta_share.h). */
char *wl_metrics_render(wl_metrics_t *metrics, wl_core_t *core, uint64_t request_thread_jobs,
                        const wl_delta_share_stats_t *watch_deltas, wl_arena_t *arena, size_t *len);

#endif
