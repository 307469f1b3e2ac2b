/*
 * Every path walklistd serves, in one table (gateway/protocols/routes.c): the operations endpoints,
 * the REST routes, the device routes and the RPC prefix of the Connect transport. The server finds
 * a request's row here and hands the request to the module of the row's kind; a REST or device
 * row names the core method it calls. Adding an endpoint means adding a row; an RPC method
 * needs none (the prefix row covers every method of every core service).
 */
#ifndef WALKLIST_GATEWAY_ROUTES_H
#define WALKLIST_GATEWAY_ROUTES_H

#include <stdbool.h>
#include <stddef.h>

#include "protocols/device.h"
#include "http/exchange.h"
#include "export/export_cache.h"
#include "http/query.h"
#include "walklist/arena.h"
#include "walklist/core.h"
#include "walklist/span.h"

typedef enum {
    WL_ROUTE_OPS,    /* operations: served by the server itself, no key */
    WL_ROUTE_REST,   /* /api/v1: JSON (api.c) */
    WL_ROUTE_DEVICE, /* scanner devices: nanopb (api.c with device.c) */
    WL_ROUTE_RPC,    /* the Connect protocol: every core method (connect.c) */
    WL_ROUTE_NONE,   /* a namespace no later row may take: 404 */
} wl_route_kind_t;

typedef enum { WL_OPS_HEALTHZ, WL_OPS_READYZ, WL_OPS_METRICS, WL_OPS_OPENAPI } wl_ops_endpoint_t;

/* Answers a REST route instead of calling its method, for a body streamed from the core (the
 * row still names the method, for its scope and rate bucket). */
typedef void (*wl_route_stream_fn)(wl_core_t *core, wl_export_cache_t *cache, wl_exchange_t *ex,
                                   void *admitted);

/* Before a stream route's admission is decided (ex->admission started, pending): asks it for
 * what the stream will need from the database, so that its group reads that too. Returns what
 * the stream is then given as admitted (arena memory), or NULL. */
typedef void *(*wl_route_admit_fn)(wl_core_t *core, wl_export_cache_t *cache, wl_exchange_t *ex);

typedef struct {
    wl_route_kind_t kind;
    /* NULL: any (the RPC prefix: Connect answers other methods itself); a GET row serves HEAD
     * too, as GET without the body (RFC 9110 9.3.2) */
    const char *method;
    const char *pattern; /* "/a/{field}": {field} segments bind a string field */
    bool prefix;         /* pattern is a prefix of the paths (no {field}) */
    bool cors;           /* browsers may call it from the origins of --cors-origin (cors.h) */
    const char *service; /* REST, device: the core method called */
    const char *rpc;
    /* REST */
    bool json_body;     /* the request message is the JSON body */
    bool query_api_key; /* api_key may authenticate (GET /api/v1/locate-lists only) */
    bool bind_query;    /* query parameters set request fields */
    wl_query_mode_t query_mode;
    unsigned success_status;
    const char *location; /* Location: this prefix + the reply's id */
    wl_route_stream_fn stream;
    wl_route_admit_fn admit; /* with stream: may be NULL */
    /* device: nanopb request and response (application/proto) */
    const wl_device_codec_t *device;
    /* operations */
    wl_ops_endpoint_t ops;
} wl_route_t;

extern const wl_route_t wl_routes[];
extern const size_t wl_route_count;

#define WL_ROUTE_PARAMS_MAX 4

typedef struct {
    const wl_route_t *route;
    size_t index; /* of route in wl_routes */
    struct {
        const char *field;
        wl_span_t value; /* percent-decoded, arena memory */
    } params[WL_ROUTE_PARAMS_MAX];
    size_t param_count;
} wl_route_match_t;

/**
 * Finds the row of method and path: the first that matches, in table order; once a row has
 * matched the path for another method, prefix rows no longer count (the path is known). False
 * when there is none: allow then lists the methods the path has ("GET, HEAD"; "" when the path
 * is unknown: 404), for a 405's Allow.
 */
bool wl_routes_find(const char *method, wl_span_t path, wl_arena_t *arena, wl_route_match_t *match,
                    char allow[64]);

/**
 * Whether path is one browsers may call cross-origin (rows marked cors, cors.h): true with
 * methods listing what they may call it with ("GET, HEAD"; "POST" for a Connect procedure) and
 * *pattern the first such row's pattern, false for any other path (a device or operations
 * path, or none of the table's).
 */
bool wl_routes_cors(wl_span_t path, wl_arena_t *arena, char methods[64], const char **pattern);

#endif
