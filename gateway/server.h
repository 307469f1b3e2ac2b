/*
 * The HTTP server: libmicrohttpd with a thread pool, bounded request bodies
 * and connection timeouts, one JSON log line per request. It hands each
 * request to the REST routes (api.h) or the operations endpoints.
 */
#ifndef WALKLIST_GATEWAY_SERVER_H
#define WALKLIST_GATEWAY_SERVER_H

#include <stdint.h>

#include "walklist/core.h"
#include "walklist/error.h"

typedef struct wl_server wl_server_t;

typedef struct {
    const char *listen;            /* "host:port", "[v6]:port"; port 0 picks a free port */
    unsigned threads;              /* worker threads, >= 1 */
    unsigned connection_timeout_s; /* idle connections are closed after this */
    unsigned connection_limit;     /* concurrent connections at most */
    unsigned anonymous_limit;      /* requests per minute per address without a valid key */
} wl_server_config_t;

int wl_server_start(wl_core_t *core, const wl_server_config_t *config, wl_server_t **out,
                    wl_error_t *err) WL_CHECK_RESULT;

/** The port actually bound (useful with port 0). */
uint16_t wl_server_port(const wl_server_t *server);

/**
 * Stops accepting connections, lets requests in flight finish for up to
 * drain_timeout_ms, then closes every connection and frees the server.
 */
void wl_server_stop(wl_server_t *server, int drain_timeout_ms);

#endif
