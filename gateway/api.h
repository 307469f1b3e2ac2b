/*
 * The public /api/v1 REST routes: one route table maps each method and path
 * onto a core service method, with authentication, scope, request decoding
 * (JSON body, path and query parameters) and reply encoding done the same way
 * for every row.
 */
#ifndef WALKLIST_GATEWAY_API_H
#define WALKLIST_GATEWAY_API_H

#include "anon_limit.h"
#include "exchange.h"
#include "walklist/core.h"

typedef struct wl_api wl_api_t;

/** anonymous_limit: requests per minute per address without a valid key, >= 1. */
int wl_api_create(wl_core_t *core, int anonymous_limit, wl_api_t **out,
                  wl_error_t *err) WL_CHECK_RESULT;
void wl_api_destroy(wl_api_t *api);

/**
 * Called once the request headers are in. Either sets a response (the
 * request is answered without reading a body) or sets ex->body_limit and
 * expects wl_api_finish once the body is read.
 */
void wl_api_begin(wl_api_t *api, wl_exchange_t *ex);

/** Called with the whole body read; sets the response. */
void wl_api_finish(wl_api_t *api, wl_exchange_t *ex);

/** Answers 413 for a body found over its limit while read (after a refused admission's answer). */
void wl_api_body_too_large(wl_api_t *api, wl_exchange_t *ex);

/** Route patterns ("GET /api/v1/stock-export"), for documentation checks. */
size_t wl_api_routes(const char *const **methods, const char *const **patterns);

/**
 * The credential of "Authorization: Bearer <token>" (scheme case-insensitive,
 * one token, blanks around it): true with *token pointing into header.
 */
bool wl_api_bearer_token(const char *header, wl_span_t *token);

/** The per-address limiter of requests without a valid key, for other transports to share. */
wl_anon_limiter_t *wl_api_anonymous_limiter(wl_api_t *api);

#endif
