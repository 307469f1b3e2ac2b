/*
 * Letting a request in at the edge, for every transport: reading nothing but
 * the credential the transport found, starting the core's admission, and
 * answering its refusal (401 with WWW-Authenticate, or 429 past the
 * per-address limit for requests without a valid key; 429 with Retry-After
 * for a full bucket; 403; 503). The exchange's principal and rate decision
 * (for the RateLimit headers and the log line) follow the admission.
 */
#ifndef WALKLIST_GATEWAY_ACCESS_H
#define WALKLIST_GATEWAY_ACCESS_H

#include <stdbool.h>
#include <stddef.h>

#include "http/anon_limit.h"
#include "http/exchange.h"
#include "errors/status_map.h"
#include "walklist/core.h"

/** How a transport writes an error answer (REST's Google error body, Connect's error JSON, a
 * gRPC status), with an ErrorInfo of reason and the metadata in ex->error_info. */
typedef void (*wl_access_answer_fn)(wl_exchange_t *ex, unsigned status, wl_grpc_code_t code,
                                    wl_reason_t reason, const char *message, const wl_error_t *err);

typedef struct {
    wl_core_t *core;
    wl_anon_limiter_t *anonymous; /* requests without a valid key, per address */
    wl_access_answer_fn answer;
} wl_access_t;

/**
 * The credential of "Authorization: Bearer <token>" (RFC 6750 2.1; scheme case-insensitive,
 * one token, blanks around it): true with *token pointing into header.
 */
bool wl_access_bearer_token(const char *header, wl_span_t *token);

/**
 * Reads the request's API key: from "Authorization: Bearer <key>", or query_key when the
 * transport allows one there (REST's api_key; NULL: none given). Answers 400 for both at once,
 * 401 (or 429 past the per-address limit) for none or a malformed header, and returns false
 * then.
 */
bool wl_access_read_key(const wl_access_t *access, wl_exchange_t *ex, const wl_span_t *query_key,
                        wl_span_t *token);

/** Answers a request without a usable key: 401, or 429 past the per-address limit. */
void wl_access_unauthenticated(const wl_access_t *access, wl_exchange_t *ex, bool key_sent,
                               const char *message);

/**
 * Starts the admission of the request with token for the method of policy
 * (ex->admission). It is decided at once unless the method admits with its
 * work and may_defer: then it waits for the method, which decides it with
 * its work (one round trip), provided that the request's address is within
 * the per-address limit (so that a client without a valid key cannot send
 * bodies that are read before it is refused more often than that) and that
 * it does not wait for 100 Continue (Expect: a refusal is owed before the
 * body). False after answering a refusal.
 */
bool wl_access_begin(const wl_access_t *access, wl_exchange_t *ex, wl_span_t token,
                     const wl_method_policy_t *policy, bool may_defer);

/**
 * Decides the admission when still pending and, when it was refused,
 * answers the refusal and returns false. Call it before answering anything
 * about the request's content: a refused admission answers first.
 */
bool wl_access_admitted(const wl_access_t *access, wl_exchange_t *ex);

#endif
