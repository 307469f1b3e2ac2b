/*
 * Cross-origin requests from browsers (the Fetch standard's CORS protocol), off unless
 * --cors-origin names the origins allowed: a list of exact origins ("https://app.example.com")
 * or "*". It covers the REST routes (/api/v1) and the Connect procedures, the rows of the
 * routing table marked cors; not the device transport, nor /healthz, /readyz, /metrics, which
 * browsers have no business calling. A preflight (OPTIONS with Origin and
 * Access-Control-Request-Method) from an allowed origin on such a path is answered 204 at
 * once, before any key is read and without the database; every other answer there to an
 * allowed origin carries Access-Control-Allow-Origin and Access-Control-Expose-Headers. No
 * credentials mode: keys travel in Authorization, never in cookies, so
 * Access-Control-Allow-Credentials is never sent and "*" is answered as "*".
 */
#ifndef WALKLIST_GATEWAY_CORS_H
#define WALKLIST_GATEWAY_CORS_H

#include <stdbool.h>

#include "walklist/error.h"

/* What a preflight allows besides the method, and how long a browser may keep its answer (two
 * hours, the most Chromium keeps). */
#define WL_CORS_ALLOW_HEADERS                                                                      \
    "Authorization, Content-Type, Idempotency-Key, If-None-Match, X-Request-Id, traceparent, "     \
    "Connect-Protocol-Version, Connect-Timeout-Ms"
#define WL_CORS_MAX_AGE "7200"
/* The response headers a page may read besides the CORS-safelisted ones. */
#define WL_CORS_EXPOSE_HEADERS                                                                     \
    "RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, RateLimit-Policy, RateLimit, "         \
    "Retry-After, ETag, Location, X-Request-Id, Idempotent-Replayed, WWW-Authenticate"

typedef struct wl_cors wl_cors_t;

/**
 * Parses --cors-origin: "*", or comma-separated origins, each scheme "http" or "https", "://",
 * a host and an optional ":port" (1 to 65535), nothing else (no path, not even "/"), blanks
 * around entries ignored, scheme and host compared in lower case. NULL (or blank): *out NULL,
 * CORS off. WL_EINVAL with a message naming the first value refused.
 */
int wl_cors_create(const char *origins, wl_cors_t **out, wl_error_t *err) WL_CHECK_RESULT;
void wl_cors_destroy(wl_cors_t *cors);

/**
 * The Access-Control-Allow-Origin for a request's Origin header: "*" when any origin is
 * allowed, origin itself when it is one of the list, NULL when none (cors NULL, origin NULL
 * or not allowed). Valid while cors and origin are.
 */
const char *wl_cors_allow_origin(const wl_cors_t *cors, const char *origin);

#endif
