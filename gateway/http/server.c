/* Serving HTTP with libmicrohttpd and routing each request happens here. */
#include "http/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http/acceptor.h"
#include "protocols/api.h"
#include "protocols/connect.h"
#include "walklist/log.h"
#include "walklist/random.h"
#include "walklist/redact.h"
#include "http/exchange.h"
#include "http/framing.h"
#include "protocols/grpc_server.h"
#include "http/linger.h"
#include "process/metrics.h"
#include "http/offload.h"
#include "protocols/routes.h"
#include "export/stock_watch.h"
#include "http/wire_guard.h"

/* A request's memory: decoded messages and replies. Export replies are larger. */
#define REQUEST_ARENA_LIMIT (512u * 1024 * 1024)
/* How much of an oversized chunked body is read (and dropped) to answer 413. */
#define BODY_DRAIN_LIMIT (1024u * 1024)
/* Buffer of a streamed response sent without chunks (to HTTP/1.0 clients). */
#define STREAM_BLOCK_SIZE (32u * 1024)
/* What a request thread makes of a generated body at a time (its next piece is made while the
 * I/O thread sends this one): each piece is one hand-off to a request thread, and two pieces
 * are held at most, whatever the body's size. */
#define STREAM_PIECE (1024u * 1024)

/* What a daemon's request callback is given: the operations listener (--ops-listen) serves the
 * operations rows of the routing table only. */
typedef struct {
    wl_server_t *server;
    bool ops_only;
} listener_t;

struct wl_server {
    listener_t listener, ops_listener;
    bool tls;
    wl_core_t *core;
    wl_api_t *api;
    wl_connect_t *connect;           /* the Connect transport: /walklist.* paths */
    wl_grpc_server_t *grpc;          /* --grpc-listen; NULL: none */
    wl_export_cache_t *export_cache; /* NULL: none (exports read from the database) */
    wl_stock_watch_t *watch;         /* WatchStock streams, woken through the export cache */
    wl_anon_limiter_t *anonymous; /* requests without a valid key, per address: every transport */
    const wl_cors_t *cors;        /* NULL: no cross-origin requests (cors.h) */
    wl_metrics_t *metrics;
    wl_offload_t *offload; /* request threads: every wait for the database happens on them */
    struct MHD_Daemon *daemon;
    struct MHD_Daemon *ops_daemon; /* --ops-listen: /healthz, /readyz, /metrics on their own */
    uint16_t ops_port;
    wl_acceptor_t *acceptor;    /* owns the listening socket once started */
    wl_linger_t *linger;        /* connections answered before their body was read */
    atomic_int active_requests; /* between the request line and its completion */
    atomic_int awaiting_core;   /* connections suspended until a step of the core finished */
    atomic_bool stopping;       /* wl_server_stop began: close after every answer */
    int listen_fd;
    uint16_t port;
};

/*
 * Where a request is in its life: the step it is at. advance() moves it on (the first call
 * sets where it starts; the body's calls only take the body). A step that stops goes away
 * (go_away) and comes back (come_back), through the one pair of functions that suspend and
 * resume connections (suspend_while_away, resume_on_io_thread).
 *
 *   HEAD -> ROUTE -> BODY -> ANSWER -> DECIDED -> SENT
 *             |        (routed, unanswered: the body comes in; then the protocol answers)
 *             |-> DECIDED (answered by routing: sent once the request is in, or at once)
 *   ROUTE, ANSWER -> AWAY -> (the step ran on a request thread, or the step of the core it
 *                            started finished) -> the same step again, or the next
 *   HEAD -> ROUTE_AT_FINAL_CALL -> ROUTE (a request without a body is routed at libmicrohttpd's
 *            final call, where its connection may be suspended should routing go away)
 */
typedef enum {
    REQ_HEAD,                /* nothing read yet: the head is checked in the first call */
    REQ_ROUTE,               /* the routing table's row and the protocol's beginning (dispatch) */
    REQ_ROUTE_AT_FINAL_CALL, /* no body announced: routed once the final call came */
    REQ_BODY,                /* routed and unanswered: the body comes in */
    REQ_ANSWER,              /* the whole request is in: the protocol answers it (finish) */
    REQ_AWAY,                /* suspended: its step runs on a request thread, or awaits the core */
    REQ_DECIDED, /* answered: sent once the request is in (the body is dropped), or at once */
    REQ_SENT,    /* queued to libmicrohttpd: what still comes is discarded */
} request_state_t;

/* Where advance() runs: libmicrohttpd's thread, or a request thread, which never talks to
 * libmicrohttpd. */
typedef enum { ON_IO_THREAD, ON_REQUEST_THREAD } runs_on_t;

typedef struct {
    wl_exchange_t ex;
    wl_server_t *server;
    const listener_t *listener;
    char *raw_uri;
    request_state_t state;
    bool whole; /* libmicrohttpd's final call came: the whole request is in */
    /* While away: the step it was at. come_back sets the step to go on from: the same one
     * after a step of the core, the next after a request thread. */
    request_state_t step;
    /* A step of the core started by the request, while away: who got there first, the core's
     * completion (CORE_FINISHED) or the suspension (CORE_AWAITED); the second one resumes. */
    atomic_uint core_meeting;
    wl_offload_job_t job; /* its step on a request thread, while the connection waits */
    bool connect;         /* handled by the Connect transport */
    bool body_too_large;
    wl_framing_target_t target; /* the request target in libmicrohttpd's read buffer */
    size_t body_drained;
    size_t body_cap;
    uint64_t body_sent; /* content bytes handed to libmicrohttpd (none for HEAD and 304) */
    /* CORS (cors.h): the path is one browsers may call cross-origin, with these methods; the
     * Access-Control-Allow-Origin its Origin gets (NULL: none). */
    bool cors_path;
    bool preflight;
    char cors_methods[64];
    const char *cors_pattern;
    const char *cors_allow_origin;
} request_t;

static double elapsed_ms(const struct timespec *since)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - since->tv_sec) * 1e3 +
           (double)(now.tv_nsec - since->tv_nsec) / 1e6;
}

/* MHD calls this with the raw request target before parsing it; the query is
 * kept raw so that percent-decoding follows our rules, not MHD's. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *connection)
{
    request_t *req = calloc(1, sizeof(*req));
    if (req == NULL)
        return NULL;
    req->server = cls;
    atomic_fetch_add(&req->server->active_requests, 1);
    req->raw_uri = strdup(uri ? uri : "/");
    req->target = (wl_framing_target_t){uri, req->raw_uri, uri ? strlen(uri) : 0};
    wl_arena_init(&req->ex.arena, REQUEST_ARENA_LIMIT);
    req->ex.connection = connection;
    clock_gettime(CLOCK_MONOTONIC, &req->ex.started);
    return req;
}

static bool valid_request_id(const char *id)
{
    size_t len = strlen(id);
    if (len == 0 || len > 64)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (id[i] <= 0x20 || id[i] >= 0x7f || id[i] == '"' || id[i] == '\\')
            return false;
    }
    return true;
}

static void core_step_finished(void *data);

static void prepare(request_t *req, const char *method)
{
    wl_exchange_t *ex = &req->ex;
    ex->method = method;
    const char *raw = req->raw_uri ? req->raw_uri : "/";
    const char *q = strchr(raw, '?');
    ex->path = wl_span(raw, q ? (size_t)(q - raw) : strlen(raw));
    ex->query = q ? wl_span_str(q + 1) : wl_span("", 0);
    const char *given = wl_exchange_header(ex, "X-Request-Id");
    if (given != NULL && valid_request_id(given)) {
        snprintf(ex->request_id, sizeof(ex->request_id), "%s", given);
    } else if (wl_random_base62(ex->request_id, 20) != 0) {
        snprintf(ex->request_id, sizeof(ex->request_id), "unknown");
    }
    wl_exchange_read_origin(ex);
    ex->completion = (wl_completion_t){.run_elsewhere = wl_offload_run_elsewhere,
                                       .executor = req->server->offload,
                                       .done = core_step_finished,
                                       .data = req};
}

typedef struct {
    size_t block; /* every field line, with its CRLF */
    size_t longest_line;
} header_sizes_t;

static enum MHD_Result add_header_size(void *cls, enum MHD_ValueKind kind, const char *name,
                                       size_t name_size, const char *value, size_t value_size)
{
    (void)kind;
    (void)name;
    (void)value;
    header_sizes_t *sizes = cls;
    size_t line = name_size + 2 + value_size; /* "Name: value" */
    sizes->block += line + 2;
    if (line > sizes->longest_line)
        sizes->longest_line = line;
    return MHD_YES;
}

/* libmicrohttpd only refuses header fields that overflow its connection memory, and then with
 * an HTML body; smaller blocks over our limits get 431 in the error JSON here instead. */
static bool header_fields_too_large(struct MHD_Connection *connection)
{
    header_sizes_t sizes = {0, 0};
    MHD_get_connection_values_n(connection, MHD_HEADER_KIND, add_header_size, &sizes);
    return sizes.longest_line > WL_SERVER_HEADER_LINE_LIMIT ||
           sizes.block > WL_SERVER_HEADER_BLOCK_LIMIT;
}

/* Decides what CORS means for the request once its head is in (cors.h): nothing on the
 * operations listener, nor off the paths browsers may call. */
static void read_cors(request_t *req)
{
    wl_exchange_t *ex = &req->ex;
    if (req->server->cors == NULL || req->listener->ops_only)
        return;
    req->cors_path = wl_routes_cors(ex->path, &ex->arena, req->cors_methods, &req->cors_pattern);
    if (req->cors_path)
        req->cors_allow_origin =
            wl_cors_allow_origin(req->server->cors, wl_exchange_header(ex, "Origin"));
}

/* A CORS preflight from an allowed origin: 204 with what the path allows, before any key is
 * read, counted in no bucket and never waiting for the database (it is answered here, on
 * libmicrohttpd's thread). From another origin an OPTIONS request is routed as any other. */
static bool answer_preflight(request_t *req)
{
    wl_exchange_t *ex = &req->ex;
    if (req->cors_allow_origin == NULL || strcmp(ex->method, "OPTIONS") != 0 ||
        wl_exchange_header(ex, "Access-Control-Request-Method") == NULL)
        return false;
    req->preflight = true;
    ex->route = req->cors_pattern;
    wl_exchange_add_header(ex, "Access-Control-Allow-Methods", req->cors_methods);
    wl_exchange_add_header(ex, "Access-Control-Allow-Headers", WL_CORS_ALLOW_HEADERS);
    wl_exchange_add_header(ex, "Access-Control-Max-Age", WL_CORS_MAX_AGE);
    wl_exchange_empty(ex, 204);
    return true;
}

/* Answers a request whose framing cannot be trusted (framing.h) and closes its connection;
 * false when it can be read. */
static bool refuse_framing(request_t *req, struct MHD_Connection *connection, const char *method,
                           const char *version)
{
    wl_exchange_t *ex = &req->ex;
    wl_framing_verdict_t verdict;
    wl_framing_check(connection, method, &req->target, version, &verdict);
    ex->close = ex->close || verdict.close;
    if (verdict.status == 0)
        return false;
    bool unsupported = verdict.status == 501;
    wl_exchange_error(
        ex, verdict.status, unsupported ? WL_GRPC_UNIMPLEMENTED : WL_GRPC_INVALID_ARGUMENT,
        unsupported ? WL_REASON_TRANSFER_CODING_UNSUPPORTED : WL_REASON_MALFORMED_REQUEST,
        verdict.message, NULL);
    return true;
}

/* The OpenAPI description of /api/v1, embedded at build time from gateway/openapi.json. */
extern const char wl_openapi_json[];
extern const size_t wl_openapi_json_len;

/* {"status":"ready"}, and on a distributed database each worker and whether the coordinator
 * reached it at the last check (docs/scaling-out.md: an unreachable worker leaves the process
 * ready). */
static json_t *ready_body(wl_core_t *core)
{
    json_t *body = json_pack("{s:s}", "status", "ready");
    wl_core_node_t nodes[WL_CORE_NODES_MAX];
    size_t count = wl_core_nodes(core, nodes, WL_CORE_NODES_MAX);
    if (body == NULL || count == 0)
        return body;
    json_t *list = json_array();
    for (size_t i = 0; list != NULL && i < count && i < WL_CORE_NODES_MAX; i++)
        json_array_append_new(list, json_pack("{s:s,s:b}", "node", nodes[i].address, "reachable",
                                              nodes[i].reachable));
    json_object_set_new(body, "nodes", list);
    return body;
}

static void handle_ops(wl_server_t *server, wl_exchange_t *ex, wl_ops_endpoint_t endpoint)
{
    if (endpoint == WL_OPS_OPENAPI) {
        ex->status = 200;
        ex->content_type = "application/json";
        ex->response = (char *)wl_openapi_json;
        ex->response_len = wl_openapi_json_len;
        return;
    }
    if (endpoint == WL_OPS_METRICS) {
        size_t len = 0;
        wl_delta_share_stats_t watch_deltas = {0, 0};
        if (server->watch != NULL)
            wl_delta_share_stats(wl_stock_watch_deltas(server->watch), &watch_deltas);
        char *text =
            wl_metrics_render(server->metrics, server->core, wl_offload_submitted(server->offload),
                              &watch_deltas, &ex->arena, &len);
        if (text == NULL) {
            wl_exchange_error(ex, 500, WL_GRPC_INTERNAL, WL_REASON_INTERNAL, NULL, NULL);
            return;
        }
        ex->status = 200;
        ex->content_type = "text/plain; version=0.0.4; charset=utf-8";
        ex->response = text;
        ex->response_len = len;
        return;
    }
    if (endpoint == WL_OPS_HEALTHZ) {
        wl_exchange_json(ex, 200, json_pack("{s:s}", "status", "ok"));
        return;
    }
    if (atomic_load(&server->stopping)) {
        wl_exchange_add_header(ex, "Retry-After", "1");
        wl_exchange_error(ex, 503, WL_GRPC_UNAVAILABLE, WL_REASON_SHUTTING_DOWN, "shutting down",
                          NULL);
        return;
    }
    if (!wl_exchange_may_wait(ex))
        return;
    wl_error_t err;
    wl_error_init(&err);
    if (wl_core_ready(server->core, &err) != 0) {
        wl_exchange_add_header(ex, "Retry-After", "1");
        wl_exchange_error(ex, 503, WL_GRPC_UNAVAILABLE,
                          err.code == WL_ETIMEDOUT ? WL_REASON_DATABASE_TIMEOUT
                                                   : WL_REASON_DATABASE_UNAVAILABLE,
                          err.message, NULL);
        return;
    }
    wl_exchange_json(ex, 200, ready_body(server->core));
}

/* The descriptor of the request's connection, or -1. */
static int connection_fd(const wl_exchange_t *ex)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(ex->connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info != NULL ? info->connect_fd : -1;
}

/*
 * Work that may wait runs off libmicrohttpd's threads (a request's step on a request thread, a
 * generator's piece its connection waits for, an admission's group on a committer), its
 * connection suspended meanwhile. These two are the only places a connection is suspended and
 * resumed: suspended before the work is handed over (it may end at once), resumed once the
 * work's outcome is stored where the next call of libmicrohttpd's thread reads it.
 */
static void suspend_while_away(struct MHD_Connection *connection)
{
    MHD_suspend_connection(connection);
}

static void resume_on_io_thread(struct MHD_Connection *connection)
{
    MHD_resume_connection(connection);
}

/*
 * A generated body (generator.h) as libmicrohttpd pulls it, counted for the log line. The I/O
 * thread sends the current piece while a request thread makes the next one (when the generator
 * waits for the database); the connection is suspended only when the current piece has gone and
 * the next is not made yet, or while the generator idles (parked until its wake). A generator
 * that never waits makes its pieces on the I/O thread, straight into libmicrohttpd's buffer.
 */
typedef enum {
    STREAM_READY,      /* next is made and after says what follows it; nothing runs */
    STREAM_PROCEEDING, /* a request thread makes next */
    STREAM_IDLE,       /* the generator idles once current has gone */
    STREAM_PARKED,     /* current has gone: suspended until the generator's wake */
    STREAM_ENDED,      /* nothing follows current: after is DONE, or FAILED (cut off) */
} stream_state_t;

typedef struct {
    wl_offload_t *offload;
    struct MHD_Connection *connection;
    wl_generator_t *gen;
    uint64_t *sent;       /* the request's body_sent: the request outlives every read */
    wl_piece_t current;   /* being sent: the I/O thread's */
    size_t taken;         /* of current */
    wl_piece_t next;      /* the request thread's while PROCEEDING, else the I/O thread's */
    pthread_mutex_t lock; /* state, after, suspended, orphaned */
    stream_state_t state;
    wl_generator_next_t after;
    bool suspended; /* the connection waits for next (or a wake) */
    bool orphaned;  /* libmicrohttpd let the stream go while next was being made */
    wl_offload_job_t job;
} counted_stream_t;

static void free_stream(counted_stream_t *stream)
{
    stream->gen->stop(stream->gen);
    wl_piece_dispose(&stream->current);
    wl_piece_dispose(&stream->next);
    pthread_mutex_destroy(&stream->lock);
    free(stream);
}

/* On a request thread: the next piece, then the connection resumes if it waits for it. */
static void proceed_offloaded(wl_offload_job_t *job)
{
    counted_stream_t *stream = (counted_stream_t *)((char *)job - offsetof(counted_stream_t, job));
    wl_error_t err;
    wl_error_init(&err);
    wl_generator_next_t after =
        stream->gen->proceed(stream->gen, &stream->next, STREAM_PIECE, &err);
    if (stream->next.failed)
        after = WL_GENERATOR_FAILED;
    pthread_mutex_lock(&stream->lock);
    if (stream->orphaned) {
        pthread_mutex_unlock(&stream->lock);
        free_stream(stream);
        return;
    }
    stream->state = STREAM_READY;
    stream->after = after;
    if (stream->suspended) {
        stream->suspended = false;
        resume_on_io_thread(stream->connection);
    }
    pthread_mutex_unlock(&stream->lock);
}

/* A parked generator has something to do again: its next piece is made on a request thread. */
static void wake_parked(void *ctx)
{
    counted_stream_t *stream = ctx;
    pthread_mutex_lock(&stream->lock);
    stream->state = STREAM_PROCEEDING;
    pthread_mutex_unlock(&stream->lock);
    stream->job.run = proceed_offloaded;
    wl_offload_submit(stream->offload, &stream->job);
}

/* A generator that never waits: its next piece, made on the I/O thread into buf. */
static size_t proceed_here(counted_stream_t *stream, char *buf, size_t max)
{
    wl_piece_t piece = {.base = buf, .cap = max, .fixed = true};
    wl_error_t err;
    wl_error_init(&err);
    stream->after = stream->gen->proceed(stream->gen, &piece, max, &err);
    if (piece.failed)
        stream->after = WL_GENERATOR_FAILED;
    return piece.len;
}

/* What goes next into buf: bytes, 0 while suspended, or libmicrohttpd's end of the body. */
static ssize_t read_generated(counted_stream_t *stream, char *buf, size_t max)
{
    for (;;) {
        if (stream->taken < stream->current.len) {
            size_t n = stream->current.len - stream->taken;
            n = n < max ? n : max;
            memcpy(buf, stream->current.base + stream->taken, n);
            stream->taken += n;
            return (ssize_t)n;
        }
        /* A generator that never waits has no request thread: its state is this thread's. */
        if (!stream->gen->waits && stream->state == STREAM_READY && stream->next.len == 0 &&
            stream->after == WL_GENERATOR_MORE) {
            size_t n = proceed_here(stream, buf, max);
            if (n > 0)
                return (ssize_t)n;
            continue;
        }
        bool submit = false, park = false, again = false;
        ssize_t result = 0;
        pthread_mutex_lock(&stream->lock);
        switch (stream->state) {
        case STREAM_READY: {
            wl_piece_t sent = stream->current;
            stream->current = stream->next;
            stream->next = sent;
            stream->next.len = 0;
            stream->taken = 0;
            /* The next piece is made while this one goes. */
            submit = stream->after == WL_GENERATOR_MORE && stream->gen->waits;
            stream->state = submit                               ? STREAM_PROCEEDING
                            : stream->after == WL_GENERATOR_MORE ? STREAM_READY
                            : stream->after == WL_GENERATOR_IDLE ? STREAM_IDLE
                                                                 : STREAM_ENDED;
            if (stream->state == STREAM_IDLE && stream->gen->park == NULL) {
                stream->state = STREAM_ENDED;
                stream->after = WL_GENERATOR_FAILED;
            }
            again = true; /* current goes */
            break;
        }
        case STREAM_PROCEEDING:
        case STREAM_IDLE:
            /* Suspended first: the piece, or the wake, may come at once from another thread.
             * libmicrohttpd asks again once the connection is resumed (it frees no suspended
             * connection, so the stream outlives the job). */
            park = stream->state == STREAM_IDLE;
            if (park)
                stream->state = STREAM_PARKED;
            stream->suspended = true;
            suspend_while_away(stream->connection);
            break;
        case STREAM_PARKED:
            break;
        case STREAM_ENDED:
            result = stream->after == WL_GENERATOR_DONE ? MHD_CONTENT_READER_END_OF_STREAM
                                                        : MHD_CONTENT_READER_END_WITH_ERROR;
            break;
        }
        pthread_mutex_unlock(&stream->lock);
        if (submit) {
            stream->job.run = proceed_offloaded;
            wl_offload_submit(stream->offload, &stream->job);
        }
        if (park)
            stream->gen->park(stream->gen, wake_parked, stream);
        if (!again)
            return result;
    }
}

static ssize_t read_counted(void *cls, uint64_t pos, char *buf, size_t max)
{
    counted_stream_t *stream = cls;
    ssize_t n = read_generated(stream, buf, max);
    if (n > 0)
        *stream->sent = pos + (uint64_t)n;
    return n;
}

/* libmicrohttpd is done with the response (finished, failed, or the client went away); a
 * piece being made is left to its request thread, which frees the stream when it is done. */
static void free_counted(void *cls)
{
    counted_stream_t *stream = cls;
    pthread_mutex_lock(&stream->lock);
    bool proceeding = stream->state == STREAM_PROCEEDING;
    stream->orphaned = proceeding;
    pthread_mutex_unlock(&stream->lock);
    if (!proceeding)
        free_stream(stream);
}

/* From here libmicrohttpd owns the generator (through the stream) and frees it when the
 * response is done with; NULL (the generator stopped) when out of memory. */
static struct MHD_Response *stream_response(request_t *req)
{
    wl_exchange_t *ex = &req->ex;
    counted_stream_t *stream = malloc(sizeof(*stream));
    if (stream == NULL) {
        wl_exchange_drop_generator(ex);
        return NULL;
    }
    *stream = (counted_stream_t){.offload = req->server->offload,
                                 .connection = ex->connection,
                                 .gen = ex->generator,
                                 .sent = &req->body_sent,
                                 .next = ex->generated,
                                 .state = STREAM_READY,
                                 .after = ex->generated_next};
    pthread_mutex_init(&stream->lock, NULL);
    ex->generator = NULL;
    ex->generated = (wl_piece_t){0};
    struct MHD_Response *response = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, STREAM_BLOCK_SIZE, read_counted, stream, free_counted);
    if (response == NULL)
        free_stream(stream);
    return response;
}

static ssize_t no_content(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)cls;
    (void)pos;
    (void)buf;
    (void)max;
    return MHD_CONTENT_READER_END_OF_STREAM;
}

/*
 * An answer without content: a 304, or HEAD on a streamed body. Its headers may carry only the
 * length of the content a 200 would have (RFC 9110 8.6, 9.3.2): when that is known (the cached
 * export body), it is the response's size, which libmicrohttpd sends as Content-Length without
 * reading any of it, and the connection stays open. When it is not, libmicrohttpd 0.9.75
 * (0.9.77 too) would send "Content-Length: 0" with an empty 304, and a last chunk after the
 * headers of a HEAD answer it would have chunked, which a kept-alive client reads as the start
 * of the next answer. On plain HTTP a 304 goes out as an empty body whose length line the wire
 * guard leaves out (wire_guard.h); otherwise (TLS, HEAD of a stream) libmicrohttpd's
 * HTTP/1.0-compatible mode sends a body of unknown length neither chunked nor with a length: the
 * headers alone, then the connection closes (as such a body would end).
 */
static struct MHD_Response *headers_only_response(const wl_exchange_t *ex)
{
    if (ex->content_length_known)
        return MHD_create_response_from_callback(ex->content_length, 64, no_content, NULL, NULL);
    /* A 304 of unknown length on plain HTTP: an empty body keeps the connection, and the wire
     * guard takes libmicrohttpd's "Content-Length: 0" out of its header block. */
    if (ex->status == 304 && wl_wire_guard_strip_empty_length(connection_fd(ex)))
        return MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    struct MHD_Response *response =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64, no_content, NULL, NULL);
    if (response != NULL && MHD_set_response_options(response, MHD_RF_HTTP_1_0_COMPATIBLE_STRICT,
                                                     MHD_RO_END) != MHD_YES) {
        MHD_destroy_response(response);
        response = NULL;
    }
    return response;
}

static enum MHD_Result send_response(request_t *req)
{
    wl_exchange_t *ex = &req->ex;
    req->state = REQ_SENT;
    if (wl_wire_guard_release_eof(connection_fd(ex)))
        ex->close = true; /* the client has said all it will (while it was away) */
    bool head_of_stream =
        ex->generator != NULL && ex->method != NULL && strcmp(ex->method, "HEAD") == 0;
    if (head_of_stream)
        wl_exchange_drop_generator(ex); /* never read */
    struct MHD_Response *response;
    if (ex->status == 304 || head_of_stream) {
        response = headers_only_response(ex);
    } else if (ex->generator != NULL) {
        response = stream_response(req);
    } else {
        /* The body lives in the request's arena (or is static) until on_completed, which
         * libmicrohttpd calls after it is done sending: no copy needed. */
        response =
            MHD_create_response_from_buffer(ex->response_len, ex->response, MHD_RESPMEM_PERSISTENT);
        if (ex->method == NULL || strcmp(ex->method, "HEAD") != 0)
            req->body_sent = ex->response_len;
    }
    if (response == NULL)
        return MHD_NO;
    if (ex->content_type != NULL)
        MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, ex->content_type);
    MHD_add_response_header(response, "X-Request-Id", ex->request_id);
    MHD_add_response_header(response, "Cache-Control",
                            ex->cache_control ? ex->cache_control : "no-store");
    wl_exchange_rate_headers(ex, response);
    /* Vary on every answer of a CORS path, the allowed origin's or not: a cache must not give
     * one origin's answer to another. */
    if (req->cors_path)
        MHD_add_response_header(response, "Vary", "Origin");
    if (req->cors_allow_origin != NULL) {
        MHD_add_response_header(response, "Access-Control-Allow-Origin", req->cors_allow_origin);
        if (!req->preflight)
            MHD_add_response_header(response, "Access-Control-Expose-Headers",
                                    WL_CORS_EXPOSE_HEADERS);
    }
    if (atomic_load(&req->server->stopping))
        ex->close = true; /* clients go to another process */
    if (ex->close)
        MHD_add_response_header(response, MHD_HTTP_HEADER_CONNECTION, "close");
    for (size_t i = 0; i < ex->header_count; i++)
        MHD_add_response_header(response, ex->headers[i].name, ex->headers[i].value);
    enum MHD_Result result = MHD_queue_response(ex->connection, ex->status, response);
    MHD_destroy_response(response);
    return result;
}

static bool request_body_beyond_drain(const wl_exchange_t *ex)
{
    const char *length = wl_exchange_header(ex, "Content-Length");
    return length != NULL && strtoull(length, NULL, 10) > BODY_DRAIN_LIMIT;
}

/* A client that sent "Expect: 100-continue" waits before its body (RFC 9110 10.1.1): a decided
 * answer goes at once, instead of the 100 libmicrohttpd would send to read a body to drop. */
static bool client_waits_to_continue(const wl_exchange_t *ex)
{
    const char *expect = wl_exchange_header(ex, "Expect");
    return expect != NULL && strcasecmp(expect, "100-continue") == 0;
}

/* Finds the request's row of the routing table (routes.h) and hands the request to the module
 * of its kind; answers 404, or 405 with Allow. */
static void dispatch(const listener_t *listener, request_t *req)
{
    wl_server_t *server = listener->server;
    wl_exchange_t *ex = &req->ex;
    wl_route_match_t *match = wl_arena_alloc(&ex->arena, sizeof(*match));
    char allow[64];
    bool found = match != NULL && wl_routes_find(ex->method, ex->path, &ex->arena, match, allow);
    if (match == NULL) {
        wl_exchange_error(ex, 500, WL_GRPC_INTERNAL, WL_REASON_INTERNAL, NULL, NULL);
    } else if (listener->ops_only && found && match->route->kind != WL_ROUTE_OPS) {
        wl_exchange_error(ex, 404, WL_GRPC_NOT_FOUND, WL_REASON_ENDPOINT_NOT_FOUND,
                          "not found: this listener serves /healthz, /readyz, /metrics and "
                          "/api/v1/openapi.json",
                          NULL);
    } else if (!found) {
        if (allow[0] != '\0') {
            wl_exchange_add_header(ex, "Allow", allow);
            wl_exchange_error(ex, 405, WL_GRPC_UNIMPLEMENTED, WL_REASON_METHOD_NOT_ALLOWED,
                              "method not allowed", NULL);
        } else {
            wl_exchange_error(ex, 404, WL_GRPC_NOT_FOUND, WL_REASON_ENDPOINT_NOT_FOUND,
                              "no such endpoint", NULL);
        }
    } else if (match->route->kind == WL_ROUTE_OPS) {
        ex->route = match->route->pattern;
        handle_ops(server, ex, match->route->ops);
    } else if (match->route->kind == WL_ROUTE_RPC) {
        req->connect = true;
        wl_connect_begin(server->connect, ex);
    } else {
        wl_api_begin(server->api, ex, match);
    }
}

static bool body_announced(const wl_exchange_t *ex)
{
    const char *length = wl_exchange_header(ex, "Content-Length");
    return wl_exchange_header(ex, "Transfer-Encoding") != NULL ||
           (length != NULL && strspn(length, "0") != strlen(length));
}

/* Answers before the request's body is read: libmicrohttpd then closes the connection, and
 * what the client still sends is read and dropped meanwhile (linger.h) so that the client
 * reads the answer rather than a reset. */
static enum MHD_Result answer_before_body(request_t *req)
{
    wl_exchange_t *ex = &req->ex;
    int fd = connection_fd(ex);
    if (body_announced(ex) && fd >= 0)
        wl_linger_add(req->server->linger, fd);
    return send_response(req);
}

/* What is left of a request once its body is in: the handler's answer (or its refusal of an
 * oversized body). */
static void finish(request_t *req)
{
    wl_server_t *server = req->server;
    wl_exchange_t *ex = &req->ex;
    if (req->body_too_large && req->connect)
        wl_connect_body_too_large(server->connect, ex);
    else if (req->body_too_large)
        wl_api_body_too_large(server->api, ex);
    else if (req->connect)
        wl_connect_finish(server->connect, ex);
    else
        wl_api_finish(server->api, ex);
}

/* On a request thread, where the step that went away has gone as far as it goes: its
 * connection is resumed, and libmicrohttpd calls on_request again, which finds the request AWAY
 * and goes on from req->step. req may be gone once it returns. */
static enum MHD_Result come_back(request_t *req)
{
    req->step = req->state;
    req->state = REQ_AWAY;
    req->ex.may_wait = false;
    resume_on_io_thread(req->ex.connection);
    return MHD_YES;
}

static enum MHD_Result advance(request_t *req, runs_on_t where);

/* On a request thread: the step that went away goes on where it may wait for the database. */
static void run_away(wl_offload_job_t *job)
{
    request_t *req = (request_t *)((char *)job - offsetof(request_t, job));
    req->ex.may_wait = true;
    advance(req, ON_REQUEST_THREAD);
}

enum { CORE_FINISHED = 1, CORE_AWAITED = 2 };

/* Once a step of the core the request started finished and its connection is suspended: the
 * step (req->step) runs again on libmicrohttpd's thread. */
static void back_from_core(request_t *req)
{
    wl_server_t *server = req->server;
    resume_on_io_thread(req->ex.connection);
    atomic_fetch_sub(&server->awaiting_core, 1); /* req may be gone by now */
}

/* The exchange's completion (wl_completion_t.done): on the thread that finished the step of the
 * core, possibly before the request went away. */
static void core_step_finished(void *data)
{
    request_t *req = data;
    if (atomic_fetch_or(&req->core_meeting, CORE_FINISHED) & CORE_AWAITED)
        back_from_core(req);
}

/*
 * Where a request goes when its step (req->state) stopped: on a request thread, or (it started
 * a step of the core) nowhere until that step finished, its connection suspended meanwhile.
 */
static enum MHD_Result go_away(request_t *req, wl_exchange_stop_t stop)
{
    wl_server_t *server = req->server;
    req->step = req->state;
    req->state = REQ_AWAY;
    wl_wire_guard_hold_eof(connection_fd(&req->ex));
    if (stop == WL_EXCHANGE_AWAITS_CORE)
        atomic_fetch_add(&server->awaiting_core, 1);
    suspend_while_away(req->ex.connection);
    if (stop == WL_EXCHANGE_AWAITS_CORE) {
        /* The step may have finished already (it is suspended now either way). */
        if (atomic_fetch_or(&req->core_meeting, CORE_AWAITED) & CORE_FINISHED)
            back_from_core(req);
    } else {
        req->job.run = run_away;
        wl_offload_submit(server->offload, &req->job);
    }
    return MHD_YES;
}

/* The exchange's stop, taken (cleared) from it. */
static wl_exchange_stop_t take_stop(wl_exchange_t *ex)
{
    wl_exchange_stop_t stop = ex->stop;
    ex->stop = WL_EXCHANGE_GOES_ON;
    return stop;
}

/* What the server refuses of a head before routing; false when the request may be routed. */
static bool refuse_head(request_t *req)
{
    wl_server_t *server = req->server;
    wl_exchange_t *ex = &req->ex;
    if (atomic_load(&server->stopping) && !req->listener->ops_only) {
        /* Arrived after SIGTERM (on a kept-alive connection): not served. A definite "not
         * done" lets the client send it elsewhere, even a creation. (Probes still get their
         * answer on the operations listener: /readyz says 503 there.) */
        ex->close = true;
        wl_exchange_add_header(ex, "Retry-After", "1");
        wl_exchange_error(ex, 503, WL_GRPC_UNAVAILABLE, WL_REASON_SHUTTING_DOWN,
                          "the server is shutting down: not served, retry", NULL);
        return true;
    }
    if (header_fields_too_large(ex->connection)) {
        wl_exchange_error(ex, 431, WL_GRPC_INVALID_ARGUMENT, WL_REASON_HEADERS_TOO_LARGE,
                          "request header fields are too large (16 KiB a field line, 32 KiB "
                          "in all)",
                          NULL);
        return true;
    }
    return answer_preflight(req);
}

/*
 * The request's transitions: runs its steps from req->state as far as they go on this thread,
 * and only here (and in the exits it takes: go_away, come_back, send_response) does the state
 * change. Routing, then (the whole request in) the protocol's answer, then sending; it stops
 * where it needs more of the request, where a step stopped (away, or stopped until the final
 * call: libmicrohttpd lets a connection be suspended in the final call, or while a body it has
 * not read yet is announced), and once sent. On a request thread it comes back before sending.
 */
static enum MHD_Result advance(request_t *req, runs_on_t where)
{
    wl_exchange_t *ex = &req->ex;
    for (;;) {
        switch (req->state) {
        case REQ_HEAD:
            /* Requests on the operations listener have a thread of their own (and the probes
             * there are meant to see the database). */
            ex->may_wait = req->listener->ops_only;
            if (refuse_head(req))
                req->state = REQ_DECIDED;
            else
                req->state = req->whole || body_announced(ex) ? REQ_ROUTE : REQ_ROUTE_AT_FINAL_CALL;
            break;
        case REQ_ROUTE_AT_FINAL_CALL:
            if (!req->whole)
                return MHD_YES;
            req->state = REQ_ROUTE;
            break;
        case REQ_AWAY:
            /* Resumed, or on the request thread that runs it: nothing else touches it now. */
            atomic_store(&req->core_meeting, 0);
            req->state = req->step;
            break;
        case REQ_ROUTE:
        case REQ_ANSWER: {
            bool routing = req->state == REQ_ROUTE;
            if (routing)
                dispatch(req->listener, req);
            else
                finish(req);
            /* Routing runs once the request is in or its body is announced, so the connection
             * may be suspended here (libmicrohttpd's rule). */
            wl_exchange_stop_t stop = take_stop(ex);
            if (stop != WL_EXCHANGE_GOES_ON && where == ON_IO_THREAD)
                return go_away(req, stop);
            if (!routing && ex->status == 0)
                wl_exchange_error(ex, 500, WL_GRPC_INTERNAL, WL_REASON_INTERNAL, NULL, NULL);
            req->state = ex->status != 0 ? REQ_DECIDED : REQ_BODY;
            break;
        }
        case REQ_BODY:
            if (req->whole) {
                req->state = REQ_ANSWER;
                break;
            }
            return where == ON_REQUEST_THREAD ? come_back(req) : MHD_YES;
        case REQ_DECIDED:
            if (where == ON_REQUEST_THREAD)
                return come_back(req);
            if (req->whole)
                return send_response(req);
            /* Answering before the whole request is in makes libmicrohttpd close the
             * connection while the client may still be writing its body (it then sees EPIPE,
             * not the answer). So a decided answer waits for the end of the body, which is
             * read and dropped, unless the body is announced larger than we are willing to
             * drain or the client waits for 100 Continue before sending it. */
            if (ex->status == 413 || request_body_beyond_drain(ex) || client_waits_to_continue(ex))
                return answer_before_body(req);
            return MHD_YES;
        case REQ_SENT:
            return MHD_YES;
        }
    }
}

/* Takes a piece of the body: kept while the request is unanswered and within its limit,
 * dropped otherwise. MHD_NO when too much was dropped: the connection goes. */
static enum MHD_Result take_body(request_t *req, const char *data, size_t size)
{
    wl_exchange_t *ex = &req->ex;
    if (req->state == REQ_SENT)
        return MHD_YES; /* answered early (e.g. 401, 413): the rest of the upload goes */
    if (req->state == REQ_DECIDED || req->body_too_large || ex->body_len + size > ex->body_limit) {
        /* libmicrohttpd cannot answer in the middle of a body, so an oversized body of
         * unannounced length (chunked) is drained and answered 413 at its end; one that keeps
         * going far past the limit loses its connection instead. */
        req->body_too_large = req->body_too_large || req->state != REQ_DECIDED;
        req->body_drained += size;
        return req->body_drained > BODY_DRAIN_LIMIT ? MHD_NO : MHD_YES;
    }
    if (ex->body_len + size + 1 > req->body_cap) {
        size_t cap = req->body_cap ? req->body_cap : 4096;
        while (cap < ex->body_len + size + 1)
            cap *= 2;
        char *grown = realloc(ex->body, cap);
        if (grown == NULL)
            return MHD_NO;
        ex->body = grown;
        req->body_cap = cap;
    }
    memcpy(ex->body + ex->body_len, data, size);
    ex->body_len += size;
    ex->body[ex->body_len] = '\0';
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *connection, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    (void)url;
    request_t *req = *req_cls;
    if (req == NULL || req->raw_uri == NULL)
        return MHD_NO;
    req->ex.connection = connection;
    if (req->state == REQ_HEAD) {
        req->listener = cls;
        prepare(req, method);
        read_cors(req);
        /* A head that cannot be trusted is answered before anything of it is read: the
         * connection closes after the answer. */
        if (refuse_framing(req, connection, method, version))
            return answer_before_body(req);
        return advance(req, ON_IO_THREAD);
    }
    /* Resumed (its step came back): what this call brings of the body, libmicrohttpd hands
     * over again. */
    if (req->state == REQ_AWAY)
        return advance(req, ON_IO_THREAD);
    if (*upload_data_size > 0) {
        size_t size = *upload_data_size;
        *upload_data_size = 0;
        return take_body(req, upload_data, size);
    }
    req->whole = true; /* the final call */
    return advance(req, ON_IO_THREAD);
}

static void on_completed(void *cls, struct MHD_Connection *connection, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    wl_server_t *server = cls;
    (void)connection;
    request_t *req = *req_cls;
    if (req == NULL)
        return;
    wl_exchange_t *ex = &req->ex;
    if (req->state != REQ_HEAD) {
        const char *rejected_bucket = NULL;
        if (ex->status == 429)
            rejected_bucket =
                ex->rate.bucket != NULL && ex->authenticated ? ex->rate.bucket : "anonymous";
        wl_metrics_record(server->metrics, ex->route, ex->status, elapsed_ms(&ex->started) / 1000.0,
                          rejected_bucket);
        /* Keys never reach the log: the query string is not logged at all, and whatever
         * else the client sent (a key pasted into the path, or sent as the request id) is
         * logged with its keys redacted, before it is cut to length. */
        wl_log_line_t line;
        wl_log_line_begin(&line, "info", "request");
        size_t method_len = ex->method ? strlen(ex->method) : 0;
        wl_log_line_str(&line, "method", ex->method, method_len > 32 ? 32 : method_len);
        char shown[256];
        size_t shown_len = wl_redact_keys(ex->path.base, ex->path.len, shown, sizeof(shown));
        wl_log_line_str(&line, "path", shown, shown_len > 200 ? 200 : shown_len);
        wl_log_line_str(&line, "route", ex->route ? ex->route : "",
                        ex->route ? strlen(ex->route) : 0);
        wl_log_line_int(&line, "status", ex->status);
        wl_log_line_ms(&line, "durationMs", elapsed_ms(&ex->started));
        wl_log_line_str(&line, "org", ex->principal.org_slug, strlen(ex->principal.org_slug));
        shown_len = wl_redact_keys(ex->request_id, strlen(ex->request_id), shown, sizeof(shown));
        wl_log_line_str(&line, "requestId", shown, shown_len);
        wl_log_line_bool(&line, "completed", toe == MHD_REQUEST_TERMINATED_COMPLETED_OK);
        wl_log_line_int(&line, "bytes", (long long)req->body_sent);
        wl_exchange_log_origin(ex, &line);
        wl_log_line_end(&line);
    }
    /* A stream that was set but never handed over (the client left first). */
    wl_exchange_drop_generator(ex);
    free(ex->body);
    wl_arena_dispose(&ex->arena);
    free(req->raw_uri);
    atomic_fetch_sub(&server->active_requests, 1);
    free(req);
    *req_cls = NULL;
}

static int open_listener(const char *listen_addr, int *fd_out, uint16_t *port_out, wl_error_t *err)
{
    char host[256];
    const char *colon = strrchr(listen_addr, ':');
    if (colon == NULL || colon == listen_addr)
        return wl_error_set(err, WL_EINVAL, "--listen must be host:port, got '%s'", listen_addr);
    size_t host_len = (size_t)(colon - listen_addr);
    const char *host_start = listen_addr;
    if (host_start[0] == '[' && host_len >= 2 && host_start[host_len - 1] == ']') {
        host_start++;
        host_len -= 2;
    }
    if (host_len >= sizeof(host))
        return wl_error_set(err, WL_EINVAL, "--listen host is too long");
    memcpy(host, host_start, host_len);
    host[host_len] = '\0';

    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *addrs = NULL;
    int gai = getaddrinfo(host_len ? host : NULL, colon + 1, &hints, &addrs);
    if (gai != 0)
        return wl_error_set(err, WL_EINVAL, "cannot resolve --listen '%s': %s", listen_addr,
                            gai_strerror(gai));
    int fd = -1, failure = 0;
    for (struct addrinfo *a = addrs; a != NULL && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            failure = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
            failure = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(addrs);
    if (fd < 0)
        return wl_error_set(err, WL_EUNAVAILABLE, "cannot listen on %s: %s", listen_addr,
                            strerror(failure));
    struct sockaddr_storage bound;
    socklen_t bound_len = sizeof(bound);
    getsockname(fd, (struct sockaddr *)&bound, &bound_len);
    *port_out = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                  : ((struct sockaddr_in *)&bound)->sin_port);
    *fd_out = fd;
    return 0;
}

/* libmicrohttpd's own messages (refused connections, protocol errors) as log lines. */
static void on_mhd_message(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    wl_logv("warn", "libmicrohttpd", fmt, ap);
}

static void on_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    (void)socket_context;
    wl_server_t *server = cls;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    /* Called before libmicrohttpd first reads from the connection, and before it closes the
     * descriptor: the guard never sees another connection's bytes under the same number. TLS
     * connections carry records, not HTTP: they are not guarded. */
    if (code == MHD_CONNECTION_NOTIFY_STARTED && info != NULL && !server->tls)
        wl_wire_guard_register(info->connect_fd);
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        if (info != NULL)
            wl_wire_guard_unregister(info->connect_fd);
        wl_acceptor_closed(server->acceptor);
    }
}

int wl_server_start(wl_core_t *core, const wl_server_config_t *config, wl_server_t **out,
                    wl_error_t *err)
{
    /* No defaults here: walklistd's come from its option table (config.h), and a caller that
     * forgot a number should hear so rather than get someone else's choice. */
    if (config->threads == 0 || config->connection_timeout_s == 0 ||
        config->connection_limit == 0 || config->per_ip_connection_limit == 0 ||
        config->anonymous_limit == 0 || config->watch_heartbeat_s == 0 ||
        config->watch_stall_s == 0)
        return wl_error_set(err, WL_EINVAL,
                            "the server needs threads, a connection timeout, connection limits, "
                            "an anonymous rate limit and watch intervals, each at least 1");
    wl_server_t *server = calloc(1, sizeof(*server));
    if (server == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    server->core = core;
    server->cors = config->cors;
    server->listener = (listener_t){server, false};
    server->ops_listener = (listener_t){server, true};
    server->listen_fd = -1;
    server->metrics = wl_metrics_create();
    if (server->metrics == NULL) {
        free(server);
        return wl_error_set(err, WL_ENOMEM, NULL);
    }
    int rc = wl_linger_create(&server->linger, err);
    if (rc == 0)
        rc = wl_stock_watch_create(config->watch_heartbeat_s, config->watch_stall_s, &server->watch,
                                   err);
    if (rc == 0 && config->export_cache != NULL) {
        wl_error_t cache_err;
        wl_error_init(&cache_err);
        wl_export_cache_config_t cache_config = *config->export_cache;
        cache_config.on_change = wl_stock_watch_changed;
        cache_config.on_change_data = server->watch;
        if (wl_export_cache_create(core, &cache_config, &server->export_cache, &cache_err) != 0)
            wl_log("warn", "export cache off", "%s: every export is read from the database",
                   cache_err.message);
    }
    if (rc == 0 && (server->anonymous = wl_anon_limiter_create(
                        config->anonymous_limit ? (int)config->anonymous_limit : 120, 60)) == NULL)
        rc = wl_error_set(err, WL_ENOMEM, NULL);
    if (rc == 0)
        rc = wl_api_create(core, server->anonymous, server->export_cache, &server->api, err);
    if (rc == 0)
        rc = wl_connect_create(core, server->anonymous, server->watch, &server->connect, err);
    if (rc == 0)
        rc = wl_offload_create(config->threads, &server->offload, err);
    if (rc == 0)
        rc = open_listener(config->listen, &server->listen_fd, &server->port, err);
    if (rc != 0)
        goto Fail;
    /* libmicrohttpd's threads never wait for the database (offload.h), so one a core is
     * enough to move the bytes. */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned threads = cores < 1 ? 1u : cores > 16 ? 16u : (unsigned)cores;
    unsigned connection_limit = config->connection_limit;
    /* Connections come from the acceptor (MHD_add_connection, which needs MHD_USE_ITC so that
     * a worker notices a connection added while it waits). */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG |
                     MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET | MHD_ALLOW_SUSPEND_RESUME;
    struct MHD_OptionItem tls_options[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)config->tls_cert_pem},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)config->tls_key_pem},
        {MHD_OPTION_HTTPS_PRIORITIES, 0,
         (void *)(config->tls_1_3_only ? WL_SERVER_TLS_1_3_PRIORITIES : WL_SERVER_TLS_PRIORITIES)},
        {MHD_OPTION_END, 0, NULL},
    };
    bool tls = config->tls_cert_pem != NULL || config->tls_key_pem != NULL;
    server->tls = tls;
    if (tls) {
        if (config->tls_cert_pem == NULL || config->tls_key_pem == NULL) {
            rc = wl_error_set(err, WL_EINVAL, "TLS needs both a certificate and a key");
            goto Fail;
        }
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
            rc = wl_error_set(err, WL_EINVAL,
                              "this libmicrohttpd was built without TLS; serve plain HTTP "
                              "behind a TLS-terminating proxy instead");
            goto Fail;
        }
        flags |= MHD_USE_TLS;
    }
    server->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, &server->listener, MHD_OPTION_EXTERNAL_LOGGER,
        on_mhd_message, NULL, MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_TIMEOUT,
        config->connection_timeout_s,
        /* The acceptor keeps the limit; libmicrohttpd's own (per worker, a share of it) has
         * room for connections handed over before a worker has let a closed one go. */
        MHD_OPTION_CONNECTION_LIMIT, connection_limit + 64 * threads, MHD_OPTION_NOTIFY_CONNECTION,
        on_connection, server, MHD_OPTION_PER_IP_CONNECTION_LIMIT, config->per_ip_connection_limit,
        /* libmicrohttpd zeroes the whole of it after every request on a connection, and the
         * unused half of its read buffer once a request is read: at 256 KiB that was a fifth of
         * walklistd's CPU per walk list, at 128 KiB still a sixth (BENCHMARKS.md). */
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)WL_SERVER_CONNECTION_MEMORY,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, server, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
        server, MHD_OPTION_ARRAY, tls ? tls_options : &tls_options[3], MHD_OPTION_END);
    if (server->daemon == NULL) {
        rc = tls ? wl_error_set(err, WL_EINVAL,
                                "cannot start the HTTPS server: the TLS certificate and key must "
                                "be PEM files of a matching pair (the key unencrypted)")
                 : wl_error_set(err, WL_EINTERNAL, "cannot start the HTTP server");
        goto Fail;
    }
    rc = wl_acceptor_start(server->listen_fd, server->daemon, connection_limit, &server->acceptor,
                           err);
    if (rc != 0) {
        MHD_stop_daemon(server->daemon);
        goto Fail;
    }
    server->listen_fd = -1;
    if (config->ops_listen != NULL && config->ops_listen[0] != '\0') {
        int ops_fd = -1;
        rc = open_listener(config->ops_listen, &ops_fd, &server->ops_port, err);
        if (rc == 0) {
            server->ops_daemon = MHD_start_daemon(
                MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
                0, NULL, NULL, on_request, &server->ops_listener, MHD_OPTION_EXTERNAL_LOGGER,
                on_mhd_message, NULL, MHD_OPTION_LISTEN_SOCKET, ops_fd, MHD_OPTION_CONNECTION_LIMIT,
                (unsigned)16, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
                MHD_OPTION_URI_LOG_CALLBACK, on_uri, server, MHD_OPTION_NOTIFY_COMPLETED,
                on_completed, server, MHD_OPTION_END);
            if (server->ops_daemon == NULL) {
                close(ops_fd);
                rc = wl_error_set(err, WL_EINTERNAL, "cannot start the operations listener");
            }
        }
        if (rc != 0) {
            wl_server_stop(server, 0);
            return rc;
        }
    }
    if (config->grpc_listen != NULL && config->grpc_listen[0] != '\0') {
        wl_grpc_config_t grpc_config = {
            config->grpc_listen, config->grpc_threads, config->tls_cert_pem, config->tls_key_pem,
            server->anonymous,   server->metrics,      server->watch};
        rc = wl_grpc_server_start(core, &grpc_config, &server->grpc, err);
        if (rc != 0) {
            wl_server_stop(server, 0);
            return rc;
        }
    }
    *out = server;
    return 0;
Fail:
    if (server->listen_fd >= 0)
        close(server->listen_fd);
    wl_offload_destroy(server->offload);
    wl_connect_destroy(server->connect);
    wl_api_destroy(server->api);
    wl_anon_limiter_destroy(server->anonymous);
    wl_export_cache_destroy(server->export_cache);
    wl_stock_watch_destroy(server->watch);
    wl_linger_destroy(server->linger);
    wl_metrics_destroy(server->metrics);
    free(server);
    return rc;
}

uint16_t wl_server_port(const wl_server_t *server)
{
    return server->port;
}

uint16_t wl_server_grpc_port(const wl_server_t *server)
{
    return server->grpc ? wl_grpc_server_port(server->grpc) : 0;
}

uint16_t wl_server_ops_port(const wl_server_t *server)
{
    return server->ops_port;
}

/* Past the shutdown timeout, requests at the database are waited for this long at most (its
 * statement_timeout, 30 s, and the time to notice a silent server); then their answers this
 * long to go out. */
#define SHUTDOWN_DATABASE_WAIT_MS 35000
#define SHUTDOWN_ANSWER_WAIT_MS   2000

/* Polls until done(server) or timeout_ms have passed; true when done. */
static bool wait_for(wl_server_t *server, bool (*done)(wl_server_t *), int timeout_ms)
{
    for (int waited = 0; !done(server); waited += 20) {
        if (waited >= timeout_ms)
            return false;
        usleep(20 * 1000);
    }
    return true;
}

static bool no_request_active(wl_server_t *server)
{
    return atomic_load(&server->active_requests) == 0 && wl_grpc_server_active(server->grpc) == 0;
}

static bool no_core_step_awaited(wl_server_t *server)
{
    return atomic_load(&server->awaiting_core) == 0;
}

static bool database_idle(wl_server_t *server)
{
    return wl_core_database_busy(server->core) == 0;
}

void wl_server_stop(wl_server_t *server, int drain_timeout_ms)
{
    if (server == NULL)
        return;
    /* From here every answer closes its connection and a request that arrives on a kept-alive
     * connection is answered 503 unserved; no new connection is accepted. */
    atomic_store(&server->stopping, true);
    /* Streams never end by themselves: each ends now with its end message (resume later). */
    wl_stock_watch_stop(server->watch);
    wl_acceptor_stop(server->acceptor);
    wl_grpc_server_shutdown(server->grpc); /* GOAWAY; calls in flight go on */
    if (!wait_for(server, no_request_active, drain_timeout_ms)) {
        /* The timeout cuts only what has not reached the database. A request at it may have
         * committed: it is waited for, so that its client hears how it ended. */
        wl_core_close_database(server->core);
        wl_log("warn", "shutdown",
               "%d requests still in flight after %d ms: those not yet at the database are "
               "refused 503 (shutting down), those at it are waited for",
               atomic_load(&server->active_requests), drain_timeout_ms);
        if (!wait_for(server, database_idle, SHUTDOWN_DATABASE_WAIT_MS))
            wl_log("error", "shutdown",
                   "%d requests still at the database after %d ms more: their connections are "
                   "cut, their outcome unknown to their clients",
                   wl_core_database_busy(server->core), SHUTDOWN_DATABASE_WAIT_MS);
        if (!wait_for(server, no_request_active, SHUTDOWN_ANSWER_WAIT_MS))
            wl_log("warn", "shutdown",
                   "%d requests cut that never reached the database (a client still sending "
                   "its request or reading its answer)",
                   atomic_load(&server->active_requests));
    }
    /* Every suspended connection is resumed before libmicrohttpd stops (its rule): the steps
     * still queued run now, against closed pools when the drain timed out. */
    wl_offload_stop(server->offload);
    /* Steps of the core in flight (admission groups; calls on the request threads, which run
     * on their starters' threads from now on) end within their statements' limits. */
    (void)wait_for(server, no_core_step_awaited, INT_MAX);
    /* Closes whatever is left: idle keep-alive connections. The operations listener goes last:
     * probes see the drain (/readyz 503) until the end. */
    MHD_stop_daemon(server->daemon);
    if (server->ops_daemon != NULL)
        MHD_stop_daemon(server->ops_daemon);
    wl_grpc_server_destroy(server->grpc);
    wl_acceptor_destroy(server->acceptor);
    wl_offload_destroy(server->offload);
    wl_linger_destroy(server->linger);
    wl_connect_destroy(server->connect);
    wl_api_destroy(server->api);
    wl_anon_limiter_destroy(server->anonymous);
    wl_export_cache_destroy(server->export_cache);
    wl_stock_watch_destroy(server->watch); /* after the cache: its last hook call */
    wl_metrics_destroy(server->metrics);
    free(server);
}
