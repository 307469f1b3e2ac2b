/*
 * One HTTP request and its answer as the gateway's handlers see it: the
 * request line split into path and raw query, the body, the request's arena,
 * and the response being built. The server owns it for the request's life.
 */
#ifndef WALKLIST_GATEWAY_EXCHANGE_H
#define WALKLIST_GATEWAY_EXCHANGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "walklist/arena.h"
#include "walklist/core.h"
#include "walklist/error.h"
#include "errors/error_info.h"
#include "http/generator.h"
#include "http/trace_context.h"
#include "walklist/log.h"
#include "walklist/span.h"

struct MHD_Connection;
struct sockaddr;

#define WL_EXCHANGE_MAX_HEADERS 12

typedef struct {
    const char *name;
    const char *value;
} wl_header_t;

/* How a step of a request (routing it, answering it) ended when it returned unanswered. */
typedef enum {
    WL_EXCHANGE_GOES_ON, /* it did not stop: answered, or waiting for the body */
    /* It would wait for the database where it may not (!may_wait): it runs again, from where it
     * began, on a request thread (offload.h). */
    WL_EXCHANGE_NEEDS_DATABASE,
    /* It started a step of the core that went on without it (wl_admission_decide_async,
     * wl_core_invoke_async with the exchange's completion): it runs again, from where it began,
     * on libmicrohttpd's thread once that step finished. */
    WL_EXCHANGE_AWAITS_CORE,
} wl_exchange_stop_t;

/* A unary call the core runs meanwhile (protocols/unary.c owns it). */
typedef struct wl_unary_pending wl_unary_pending_t;

typedef struct {
    /* The HTTP/1.1 request's connection, or NULL for a transport of its own (gRPC), which
     * gives its request headers in request_headers and the client's address in client_addr. */
    struct MHD_Connection *connection;
    const wl_header_t *request_headers; /* names lower case; with connection NULL only */
    size_t request_header_count;
    const struct sockaddr *client_addr; /* with connection NULL only; NULL: unknown */
    wl_arena_t arena;
    const char *method;
    wl_span_t path;  /* raw (percent-encoded) path, no query */
    wl_span_t query; /* raw query after '?', empty when none */
    char *body;      /* NUL-terminated for convenience; body_len is authoritative */
    size_t body_len;
    size_t body_limit; /* set by the handler before the body is read; 0 = no body expected */
    char request_id[65];
    char client[46];          /* the client's address as text ("" unknown), for the log line */
    wl_trace_context_t trace; /* a valid traceparent the client sent, when traced */
    bool traced;
    const char *route;         /* route pattern for logs and metrics */
    wl_admission_t *admission; /* the request's way in (access.h); NULL before one started */
    wl_principal_t principal;  /* followed from the admission once decided */
    bool authenticated;
    wl_rate_t rate;      /* the rate-limit decision, when rate.bucket is set */
    void *handler_state; /* the handler's own per-request data (arena memory) */

    unsigned scope_needed; /* the scope bits of the method admitted (access.h), for errors */

    unsigned status; /* 0 until a response is set */
    /* An error answer's ErrorInfo: its reason set by the answer, metadata added by whoever
     * decided the error before answering it. */
    wl_error_info_t error_info;
    const char *content_type;
    char *response;
    size_t response_len;
    wl_header_t headers[WL_EXCHANGE_MAX_HEADERS];
    size_t header_count;
    const char *cache_control; /* NULL: "no-store" */
    bool close;                /* Connection: close (the connection is closed after the answer) */
    /* A streamed body instead of response (wl_exchange_generate): its generator, the piece of
     * it the handler made already and what follows that piece. The exchange owns them until the
     * server takes them (or wl_exchange_drop_generator). */
    wl_generator_t *generator;
    wl_piece_t generated;
    wl_generator_next_t generated_next;
    /* Where the request runs (offload.h): true on a thread that may wait for the database. */
    bool may_wait;
    /* How a step of the core started for the request ends, as the server set it up: the core's
     * waits go to the request threads, and its completion brings the request back to
     * libmicrohttpd's thread (the one way completions return there). */
    wl_completion_t completion;
    wl_unary_pending_t *unary; /* the unary call started for the request, NULL before */
    /* Why the step that just ran returned unanswered, when it stopped (the server reads and
     * clears it): see wl_exchange_stop_t. */
    wl_exchange_stop_t stop;
    /* For an answer without content (a 304, HEAD of a stream): the length of the content a 200
     * would carry, when known. It goes out as Content-Length (RFC 9110 8.6 allows that value
     * only) and the connection stays open; unknown, the answer has no length and closes it. */
    bool content_length_known;
    uint64_t content_length;
    struct timespec started; /* CLOCK_MONOTONIC, when the request line was in */
} wl_exchange_t;

/**
 * True when the caller may wait for the database here. Otherwise marks the request to continue
 * on a thread that may (the caller returns without answering or changing anything).
 */
static inline bool wl_exchange_may_wait(wl_exchange_t *ex)
{
    if (!ex->may_wait)
        ex->stop = WL_EXCHANGE_NEEDS_DATABASE;
    return ex->may_wait;
}

/** A request header's value (case-insensitive name), or NULL. */
const char *wl_exchange_header(const wl_exchange_t *ex, const char *name);

/**
 * Every value of a request header that may come as several field lines,
 * joined with ", " as RFC 9110 section 5.3 allows for list fields (arena
 * memory); NULL when absent.
 */
const char *wl_exchange_header_list(wl_exchange_t *ex, const char *name);

/** Adds a response header; both strings are copied into the arena. */
void wl_exchange_add_header(wl_exchange_t *ex, const char *name, const char *value);

struct MHD_Response;

/**
 * Calls add(name, value, data) for each rate-limit header of an authenticated request
 * (every authenticated /api/v1 answer carries them): RateLimit-Limit/-Remaining/-Reset and
 * the structured RateLimit-Policy and RateLimit; nothing without a rate decision. value is valid
 * during the call only.
 */
void wl_exchange_rate_values(const wl_exchange_t *ex,
                             void (*add)(const char *name, const char *value, void *data),
                             void *data);

/** Adds the rate-limit headers (wl_exchange_rate_values) to an HTTP response. */
void wl_exchange_rate_headers(const wl_exchange_t *ex, struct MHD_Response *response);

/** The client's address (NULL when unknown). */
const struct sockaddr *wl_exchange_client_addr(const wl_exchange_t *ex);

/**
 * Reads what the request's log line shows of its origin: the client's address, and the
 * trace-id and parent-id of a valid W3C traceparent header (trace_context.h; an invalid one is
 * ignored). Called once the request's headers and address are known, on every transport.
 */
void wl_exchange_read_origin(wl_exchange_t *ex);

/** Adds the origin's fields (client, and traceId and parentId when traced) to a log line. */
void wl_exchange_log_origin(const wl_exchange_t *ex, wl_log_line_t *line);

/** Sets a JSON response (instead of a stream set before, whose generator is stopped); takes the
 * reference to body. */
void wl_exchange_json(wl_exchange_t *ex, unsigned status, json_t *body);

/** The same with the body as JSON text in the exchange's arena (NULL: out of memory, answered
 * 500). */
void wl_exchange_json_text(wl_exchange_t *ex, unsigned status, char *text, size_t len);

/** Sets a response without a body (304 Not Modified). */
void wl_exchange_empty(wl_exchange_t *ex, unsigned status);

/**
 * Sets a response whose body gen produces while the client reads it (generator.h), sent chunked
 * (its length is unknown). first (NULL: none) is what the handler made of the body already,
 * typically by calling gen->proceed itself where it may wait, so that a failure before the first
 * byte is still an ordinary error answer; its memory is taken (first is left empty). next says
 * what follows it (WL_GENERATOR_MORE: gen's next piece). gen is stopped exactly once on every
 * path: finished, cut off, the client gone, never sent.
 */
void wl_exchange_generate(wl_exchange_t *ex, unsigned status, const char *content_type,
                          wl_generator_t *gen, wl_piece_t *first, wl_generator_next_t next);

/** Stops the generator of a streamed body that will not be sent (HEAD), if any. */
void wl_exchange_drop_generator(wl_exchange_t *ex);

/**
 * Sets a Google API error response for an HTTP status and gRPC code, with an ErrorInfo of
 * reason (and the metadata in ex->error_info).
 */
void wl_exchange_error(wl_exchange_t *ex, unsigned status, wl_grpc_code_t code, wl_reason_t reason,
                       const char *message, const wl_error_t *err);

/** Sets the error response for a core error (status from the gRPC mapping, reason from the
 * error's code). */
void wl_exchange_core_error(wl_exchange_t *ex, const wl_error_t *err);

#endif
