/*
 * Prometheus metrics of one walklistd process: requests by route and status,
 * a latency histogram per route, rate-limit rejections per bucket, and the
 * database pool. Recording is a short mutex-protected update; the text
 * exposition format is produced on demand for GET /metrics.
 */
#ifndef WALKLIST_GATEWAY_METRICS_H
#define WALKLIST_GATEWAY_METRICS_H

#include <stddef.h>

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

/** The exposition text (Prometheus text format 0.0.4) in arena memory; NULL when out of memory. */
char *wl_metrics_render(wl_metrics_t *metrics, wl_core_t *core, wl_arena_t *arena, size_t *len);

#endif
