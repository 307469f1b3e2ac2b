/*
 * walklistd's webhook delivery (docs/change-feeds.md, "Webhooks"): threads of their own that take
 * endpoints with deliveries due from the core's outbox (walklist/outbox.h), each through an outbox
 * with its own database connection, and POST their events over HTTP with libcurl, oldest first,
 * signed. The core keeps the outbox and knows nothing of HTTP; this library links libcurl.
 */
#ifndef WALKLIST_DELIVERY_H
#define WALKLIST_DELIVERY_H

#include <stdbool.h>

#include "walklist/core.h"
#include "walklist/error.h"

/* What wl_delivery_start takes for a number left 0. walklistd's options
 * (gateway/process/config.h) start from the same values, named here so that each is written
 * once. */
#define WL_DELIVERY_DEFAULT_POLL_MS            1000
#define WL_DELIVERY_DEFAULT_CONNECT_TIMEOUT_MS 5000
#define WL_DELIVERY_DEFAULT_TIMEOUT_MS         15000
#define WL_DELIVERY_DEFAULT_RETRY_BASE_MS      5000
#define WL_DELIVERY_DEFAULT_RETRY_MAX_MS       3600000
#define WL_DELIVERY_DEFAULT_DISABLE_AFTER_S    (5 * 24 * 3600)

/*
 * workers threads, each with its own outbox, claim endpoints with pending deliveries (a lease
 * in the database, so that processes sharing it never deliver to one endpoint at once) and
 * POST their events, oldest first. Every other number left 0 takes its WL_DELIVERY_DEFAULT_
 * value.
 */
typedef struct {
    int workers;            /* at least 1 (a process that delivers nothing starts none) */
    int poll_ms;            /* how often an idle worker looks for work */
    int connect_timeout_ms; /* an attempt's connection, TLS included */
    int timeout_ms;         /* an attempt, whole */
    int retry_base_ms;      /* the first retry's delay; each next one doubles, with jitter */
    int retry_max_ms;       /* the longest delay between attempts */
    int disable_after_s;    /* an endpoint failing this long is disabled */
    bool allow_private;     /* deliver to private, loopback, ... addresses too */
} wl_delivery_config_t;

typedef struct wl_delivery wl_delivery_t;

/**
 * Starts config->workers delivery threads on the core's database (each connects, and
 * reconnects, on its own); their attempts count in wl_core_webhook_stats. core must outlive
 * them: stop them before wl_core_destroy.
 */
int wl_delivery_start(wl_core_t *core, const wl_delivery_config_t *config, wl_delivery_t **out,
                      wl_error_t *err) WL_CHECK_RESULT;

/** Stops the threads (an attempt in flight is given up: it is retried later) and frees; NULL
 * is fine. */
void wl_delivery_stop(wl_delivery_t *delivery);

#endif
