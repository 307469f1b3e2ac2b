/*
 * The public /api/v1 REST routes: one route table maps each method and path
 * onto a core service method, with authentication, scope, request decoding
 * (JSON body, path and query parameters) and reply encoding done the same way
 * for every row.
 */
#ifndef WALKLIST_GATEWAY_API_H
#define WALKLIST_GATEWAY_API_H

#include "http/anon_limit.h"
#include "http/exchange.h"
#include "protocols/routes.h"
#include "export/export_cache.h"
#include "walklist/core.h"

typedef struct wl_api wl_api_t;

/** anonymous: the per-address limiter of requests without a valid key, shared by every
 * transport; export_cache: the stock export's cache (NULL: none). Both stay the caller's. */
int wl_api_create(wl_core_t *core, wl_anon_limiter_t *anonymous, wl_export_cache_t *export_cache,
                  wl_api_t **out, wl_error_t *err) WL_CHECK_RESULT;
void wl_api_destroy(wl_api_t *api);

/**
 * Called once the request headers are in, for its REST or device row of the routing table
 * (routes.h). Either sets a response (the request is answered without reading a body) or sets
 * ex->body_limit and expects wl_api_finish once the body is read.
 */
void wl_api_begin(wl_api_t *api, wl_exchange_t *ex, const wl_route_match_t *match);

/** Called with the whole body read; sets the response. */
void wl_api_finish(wl_api_t *api, wl_exchange_t *ex);

/** Answers 413 for a body found over its limit while read (after a refused admission's answer). */
void wl_api_body_too_large(wl_api_t *api, wl_exchange_t *ex);

/** Route patterns ("GET /api/v1/stock-export"), for documentation checks. */
size_t wl_api_routes(const char *const **methods, const char *const **patterns);

#endif
