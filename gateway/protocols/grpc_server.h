/*
 * The gRPC transport: every method of every core service, unary (server streams for methods
 * whose policy says so: WatchStock, parked in the watch registry between messages, holding no
 * worker), over HTTP/2 with gRPC's own
 * C core (grpc/grpc.h, a completion queue and generic calls, grpc_server_request_call), plus
 * grpc.health.v1.Health (Check, and Watch as a stream parked like WatchStock's between looks:
 * health_stream.h) and server reflection (reflection/reflection.h: each request of
 * the bidirectional stream answered on a worker before the next is read), both without a key.
 * Calls run on a fixed pool of worker threads, never on the
 * completion queue's thread, through the same procedures, access checks and unary call as the
 * Connect transport (rpc.h, unary.h, access.h): Bearer keys in the authorization metadata, the same
 * scopes, rate limits, tenancy, status codes and messages, field violations as a
 * google.rpc.Status with a google.rpc.BadRequest detail in grpc-status-details-bin.
 * Compression: gzip only. Requests in gzip are inflated here, not by gRPC's core (which inflates
 * a whole message before checking its limit), stopping at the 4 MiB message limit counted on
 * the inflated bytes; answers of 1 KiB and more go gzip-coded (by the core) to a client whose
 * grpc-accept-encoding takes gzip.
 */
#ifndef WALKLIST_GATEWAY_GRPC_SERVER_H
#define WALKLIST_GATEWAY_GRPC_SERVER_H

#include <stdint.h>

#include "http/anon_limit.h"
#include "process/metrics.h"
#include "export/stock_watch.h"
#include "walklist/core.h"
#include "walklist/error.h"

typedef struct wl_grpc_server wl_grpc_server_t;

typedef struct {
    const char *listen; /* "host:port", "[v6]:port"; port 0 picks a free port */
    unsigned threads;   /* worker threads, at least 1: each runs one call at a time */
    /* TLS (ALPN h2): both PEM texts, or both NULL for cleartext h2c; read at start only. */
    const char *tls_cert_pem;
    const char *tls_key_pem;
    /* Shared with the HTTP transports, not owned; both must outlive the server. */
    wl_anon_limiter_t *anonymous; /* per-address limit of calls without a valid key */
    wl_metrics_t *metrics;
    wl_stock_watch_t *watch; /* WatchStock streams' registry; must outlive the server */
} wl_grpc_config_t;

/** Binds the listener and starts serving. WL_EUNAVAILABLE when the address cannot be bound
 * (or the TLS pair is refused), with err saying so. */
int wl_grpc_server_start(wl_core_t *core, const wl_grpc_config_t *config, wl_grpc_server_t **out,
                         wl_error_t *err) WL_CHECK_RESULT;

/** The port bound. */
uint16_t wl_grpc_server_port(const wl_grpc_server_t *server);

/**
 * Begins a graceful shutdown and returns at once: GOAWAY to every connection, no new call is
 * taken, calls in flight go on (Health/Check answers NOT_SERVING from now on; Health/Watch streams
 * hear it from the watch registry's stop, which comes first).
 */
void wl_grpc_server_shutdown(wl_grpc_server_t *server);

/** Calls taken and not yet ended (0: nothing in flight). */
int wl_grpc_server_active(wl_grpc_server_t *server);

/**
 * Cancels the calls still in flight (CANCELLED), waits for every thread, frees the server.
 * NULL is fine.
 */
void wl_grpc_server_destroy(wl_grpc_server_t *server);

#endif
