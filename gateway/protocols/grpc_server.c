/* Serving the core's services over gRPC with gRPC's C core happens here. */
#include "protocols/grpc_server.h"

#include <arpa/inet.h>
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/compression.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/log.h>
#include <grpc/support/time.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "protocols/access.h"
#include "google/protobuf/any.pb-c.h"
#include "google/rpc/status.pb-c.h"
#include "grpc/health/v1/health.pb-c.h"
#include "protocols/health_stream.h"
#include "http/gzip_filter.h"
#include "http/offload.h"
#include "protocols/grpc_coding.h"
#include "protocols/rpc.h"
#include "protocols/unary.h"
#include "protocols/rpc_streams.h"
#include "errors/status_map.h"
#include "reflection/reflection.h"
#include "walklist/log.h"
#include "walklist/redact.h"

/* Calls asked of gRPC's core ahead of their arrival, so that a burst finds one waiting. */
#define PENDING_REQUESTS 16
/* A pending admission waits for the method (one round trip with its work) only for messages
 * this small, as on Connect. */
#define DEFER_MESSAGE_LIMIT (64u * 1024)
/* Metadata of an answer: the exchange's headers and the five rate-limit values. */
#define MAX_ANSWER_METADATA (WL_EXCHANGE_MAX_HEADERS + 5)

/* The flags of a message sent: one too small to be worth coding goes uncoded, as on Connect
 * (the call's coding, chosen by gRPC's core from the client's grpc-accept-encoding, applies to
 * the others). */
static uint32_t send_flags(grpc_byte_buffer *message)
{
    return wl_gzip_worth(grpc_byte_buffer_length(message)) ? 0 : GRPC_WRITE_NO_COMPRESS;
}

static const char health_service[] = "grpc.health.v1.Health";
static const char health_check_path[] = "/grpc.health.v1.Health/Check";
static const char health_watch_path[] = "/grpc.health.v1.Health/Watch";
static const char bad_request_type_url[] = "type.googleapis.com/google.rpc.BadRequest";
static const char error_info_type_url[] = "type.googleapis.com/google.rpc.ErrorInfo";

typedef struct call call_t;

/* What a completion-queue event is about: each call's operations carry a tag of their own. */
typedef enum {
    TAG_NEW_CALL,
    TAG_MESSAGE,
    TAG_SENT,
    TAG_STREAM_SENT, /* a message of a server stream went out (or the call ended) */
    TAG_CLOSED,
    TAG_REFLECTION_SENT, /* a reflection answer went out (or the call ended) */
    TAG_SHUTDOWN
} tag_kind_t;

typedef struct {
    tag_kind_t kind;
    call_t *call;
} tag_t;

typedef enum {
    CALL_PROCEDURE,
    CALL_HEALTH,
    CALL_HEALTH_WATCH,
    CALL_REFLECTION,
    CALL_UNKNOWN
} call_kind_t;

struct call {
    wl_grpc_server_t *server;
    grpc_call *call;
    grpc_call_details details;
    grpc_metadata_array request_metadata;
    grpc_byte_buffer *request; /* the request message, NULL when none came */
    int close_cancelled;       /* written by gRPC's core when the call ends */
    atomic_bool cancelled;     /* the call ended without our status (client, deadline) */
    atomic_bool answered;      /* our status went out */
    /* Operations in flight plus the worker that holds the call; the last one frees it. */
    atomic_int refs;
    tag_t tag_new, tag_message, tag_sent, tag_closed, tag_stream_sent, tag_reflection_sent;
    wl_offload_job_t job; /* its run on a worker */
    /* A server stream (WatchStock, StreamExportStock): its generator (generator.h) makes one
     * message per proceed on a worker (stream_job), and a watch idles (parked) between messages.
     * The stream holds one reference to the call until its status is sent or the call is gone. */
    bool streaming;
    wl_generator_t *stream;
    wl_generator_next_t stream_next; /* what follows the message in flight */
    wl_offload_job_t stream_job;
    grpc_byte_buffer *stream_message; /* the message in flight */
    struct timespec started;          /* CLOCK_MONOTONIC */
    gpr_timespec deadline;            /* GPR_CLOCK_MONOTONIC */
    call_kind_t kind;
    const wl_rpc_procedure_t *procedure;
    struct sockaddr_storage peer;
    wl_exchange_t ex;
    /* A reflection stream (bidirectional): each request is answered (the answer in reply)
     * before the next one is read; the memory of what it sent is made with its first answer. */
    wl_reflection_stream_t *reflection_stream;
    bool initial_sent; /* initial metadata went out with a stream's first message */
    /* The answer. */
    wl_grpc_code_t code;
    const char *message;
    grpc_byte_buffer *reply;
    size_t reply_len;        /* the reply's bytes (gRPC's core empties the buffer it sends) */
    uint8_t *status_details; /* a packed google.rpc.Status; arena memory */
    size_t status_details_len;
    grpc_metadata initial[MAX_ANSWER_METADATA];
    size_t initial_count;
    grpc_metadata trailing[1];
    size_t trailing_count;
    grpc_slice status_slice;
    bool status_slice_set;
};

struct wl_grpc_server {
    wl_core_t *core;
    wl_metrics_t *metrics;
    wl_access_t access;
    wl_rpc_procedures_t procedures;
    wl_reflection_t *reflection;
    grpc_server *server;
    grpc_completion_queue *queue;
    uint16_t port;
    bool grpc_initialised;
    bool started; /* grpc_server_start was called: shut down before destroying */
    pthread_t queue_thread;
    bool queue_thread_started;
    wl_offload_t *workers;   /* where calls run (and wait for the database) */
    wl_stock_watch_t *watch; /* WatchStock streams; not owned */

    pthread_mutex_t lock;
    pthread_cond_t changed; /* a call freed, shutdown noticed */
    bool shutdown_begun;    /* no new calls asked for (GOAWAY sent) */
    bool shutdown_done;     /* gRPC's core says every call has ended */
    int active;             /* calls taken and not yet freed */
    tag_t tag_shutdown;
};

/* --- Calls ---------------------------------------------------------------------------------- */

static void request_call(wl_grpc_server_t *server);
static void start_op(call_t *c, grpc_op_type type, tag_t *tag);

static void free_call(call_t *c)
{
    for (size_t i = 0; i < c->initial_count; i++) {
        grpc_slice_unref(c->initial[i].key);
        grpc_slice_unref(c->initial[i].value);
    }
    for (size_t i = 0; i < c->trailing_count; i++) {
        grpc_slice_unref(c->trailing[i].key);
        grpc_slice_unref(c->trailing[i].value);
    }
    if (c->status_slice_set)
        grpc_slice_unref(c->status_slice);
    if (c->request != NULL)
        grpc_byte_buffer_destroy(c->request);
    if (c->reply != NULL)
        grpc_byte_buffer_destroy(c->reply);
    if (c->stream_message != NULL)
        grpc_byte_buffer_destroy(c->stream_message);
    if (c->stream != NULL)
        c->stream->stop(c->stream); /* made, never started */
    if (c->call != NULL)
        grpc_call_unref(c->call);
    grpc_call_details_destroy(&c->details);
    grpc_metadata_array_destroy(&c->request_metadata);
    wl_arena_dispose(&c->ex.arena);
    free(c);
}

/* The end of a call taken from gRPC's core: its metric and log line, then its memory. */
static void end_call(call_t *c)
{
    wl_grpc_server_t *server = c->server;
    bool answered = atomic_load(&c->answered) && !c->close_cancelled;
    wl_grpc_code_t code = answered ? c->code : WL_GRPC_CANCELLED;
    const char *method = c->kind == CALL_UNKNOWN ? NULL : c->ex.route;
    wl_metrics_record_grpc(server->metrics, method, code);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double ms = (double)(now.tv_sec - c->started.tv_sec) * 1e3 +
                (double)(now.tv_nsec - c->started.tv_nsec) / 1e6;
    wl_log_line_t line;
    wl_log_line_begin(&line, "info", "grpc call");
    char shown[256];
    size_t shown_len = wl_redact_keys((const char *)GRPC_SLICE_START_PTR(c->details.method),
                                      GRPC_SLICE_LENGTH(c->details.method), shown, sizeof(shown));
    wl_log_line_str(&line, "path", shown, shown_len > 200 ? 200 : shown_len);
    wl_log_line_str(&line, "route", method ? method : "", method ? strlen(method) : 0);
    wl_log_line_str(&line, "code", wl_grpc_code_name(code), strlen(wl_grpc_code_name(code)));
    wl_log_line_ms(&line, "durationMs", ms);
    wl_log_line_str(&line, "org", c->ex.principal.org_slug, strlen(c->ex.principal.org_slug));
    wl_log_line_int(&line, "bytes", answered && code == WL_GRPC_OK ? (long long)c->reply_len : 0);
    wl_exchange_log_origin(&c->ex, &line);
    wl_log_line_end(&line);
    free_call(c);
    pthread_mutex_lock(&server->lock);
    server->active--;
    pthread_cond_broadcast(&server->changed);
    pthread_mutex_unlock(&server->lock);
}

static void release(call_t *c)
{
    if (atomic_fetch_sub(&c->refs, 1) == 1)
        end_call(c);
}

static grpc_slice copied_slice(const char *text)
{
    return grpc_slice_from_copied_string(text);
}

static void add_initial(call_t *c, const char *name, const char *value)
{
    if (c->initial_count == MAX_ANSWER_METADATA)
        return;
    /* Metadata keys are lower case (HTTP/2). */
    char key[64];
    size_t len = strlen(name);
    if (len >= sizeof(key))
        return;
    for (size_t i = 0; i <= len; i++)
        key[i] = (char)((name[i] >= 'A' && name[i] <= 'Z') ? name[i] - 'A' + 'a' : name[i]);
    grpc_metadata *md = &c->initial[c->initial_count++];
    memset(md, 0, sizeof(*md));
    md->key = copied_slice(key);
    md->value = copied_slice(value);
}

static void add_rate_value(const char *name, const char *value, void *data)
{
    add_initial(data, name, value);
}

/* The answer's initial metadata: the exchange's headers and the rate-limit values. */
static void put_initial(call_t *c)
{
    wl_exchange_rate_values(&c->ex, add_rate_value, c);
    for (size_t i = 0; i < c->ex.header_count; i++)
        add_initial(c, c->ex.headers[i].name, c->ex.headers[i].value);
}

/* Sends the answer the call holds: the exchange's headers and the rate-limit values as
 * initial metadata (unless a stream sent it), the reply when the code is OK, then the status
 * with its details. */
static void send_answer(call_t *c)
{
    if (!c->initial_sent)
        put_initial(c);
    if (c->status_details != NULL) {
        grpc_metadata *md = &c->trailing[c->trailing_count++];
        memset(md, 0, sizeof(*md));
        md->key = copied_slice("grpc-status-details-bin");
        md->value =
            grpc_slice_from_copied_buffer((const char *)c->status_details, c->status_details_len);
    }
    c->status_slice = copied_slice(c->message ? c->message : "");
    c->status_slice_set = true;
    grpc_op ops[3];
    memset(ops, 0, sizeof(ops));
    size_t n = 0;
    if (!c->initial_sent) {
        ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[n].data.send_initial_metadata.count = c->initial_count;
        ops[n].data.send_initial_metadata.metadata = c->initial;
        n++;
    }
    if (c->code == WL_GRPC_OK && c->reply != NULL) {
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n].flags = send_flags(c->reply);
        ops[n].data.send_message.send_message = c->reply;
        n++;
    }
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = (grpc_status_code)c->code;
    ops[n].data.send_status_from_server.status_details = &c->status_slice;
    ops[n].data.send_status_from_server.trailing_metadata_count = c->trailing_count;
    ops[n].data.send_status_from_server.trailing_metadata = c->trailing;
    n++;
    atomic_fetch_add(&c->refs, 1);
    if (grpc_call_start_batch(c->call, ops, n, &c->tag_sent, NULL) != GRPC_CALL_OK)
        release(c);
}

/* Sets an error answer: the access module's and the unary call's way of answering. */
static void answer_error(wl_exchange_t *ex, unsigned status, wl_grpc_code_t code,
                         wl_reason_t reason, const char *message, const wl_error_t *err)
{
    call_t *c = ex->handler_state;
    ex->status = status;
    c->code = code;
    message = wl_rpc_public_message(code, message, err);
    c->message = message ? wl_arena_strdup(&ex->arena, message) : wl_grpc_code_name(code);
    if (c->message == NULL)
        c->message = wl_grpc_code_name(code);
    c->status_details = NULL;
    /* google.rpc.Status with the BadRequest detail of err's violations, when it has any, then
     * the ErrorInfo, as gRPC's richer error model sends them. */
    Google__Protobuf__Any any[2] = {GOOGLE__PROTOBUF__ANY__INIT, GOOGLE__PROTOBUF__ANY__INIT};
    Google__Protobuf__Any *details[2];
    size_t count = 0;
    if (err != NULL && err->violation_count > 0) {
        any[count].type_url = (char *)bad_request_type_url;
        any[count].value.data = wl_rpc_bad_request(&ex->arena, err, &any[count].value.len);
        if (any[count].value.data == NULL)
            return;
        details[count] = &any[count];
        count++;
    }
    ex->error_info.reason = reason;
    any[count].type_url = (char *)error_info_type_url;
    any[count].value.data = wl_error_info_pack(&ex->error_info, &ex->arena, &any[count].value.len);
    if (any[count].value.data == NULL)
        return;
    details[count] = &any[count];
    count++;
    Google__Rpc__Status rpc_status = GOOGLE__RPC__STATUS__INIT;
    rpc_status.code = (int32_t)code;
    rpc_status.message = (char *)c->message;
    rpc_status.n_details = count;
    rpc_status.details = details;
    size_t len = google__rpc__status__get_packed_size(&rpc_status);
    uint8_t *packed = wl_arena_alloc(&ex->arena, len ? len : 1);
    if (packed == NULL)
        return;
    google__rpc__status__pack(&rpc_status, packed);
    c->status_details = packed;
    c->status_details_len = len;
}

static bool set_reply(call_t *c, const ProtobufCMessage *reply)
{
    size_t len = protobuf_c_message_get_packed_size(reply);
    grpc_slice slice = grpc_slice_malloc(len);
    protobuf_c_message_pack(reply, GRPC_SLICE_START_PTR(slice));
    c->reply = wl_grpc_message(slice, wl_grpc_codes_answers(c->call));
    c->reply_len = len;
    c->code = WL_GRPC_OK;
    c->message = NULL;
    c->ex.status = 200;
    return c->reply != NULL;
}

/* --- The unary call (unary.h) ---------------------------------------------------------------- */

static int decode_message(wl_exchange_t *ex, const ProtobufCMessageDescriptor *desc,
                          ProtobufCMessage **input, wl_error_t *err, void *data)
{
    (void)data;
    return wl_rpc_decode_binary(desc, ex->body, ex->body_len, &ex->arena, input, err);
}

static bool answer_reply(wl_exchange_t *ex, const ProtobufCMessage *reply, void *data)
{
    (void)ex;
    return set_reply(data, reply);
}

/* A stream's message: its binary encoding alone (gRPC's core frames it). */
static bool grpc_stream_message(const wl_rpc_stream_wire_t *wire, const ProtobufCMessage *message,
                                wl_arena_t *arena, wl_piece_t *out)
{
    (void)wire;
    (void)arena;
    return wl_rpc_append_binary(message, out);
}

/* A stream's message encoded already (binary: gRPC's only codec here), as it is. */
static bool grpc_stream_encoded(const wl_rpc_stream_wire_t *wire, const char *bytes, size_t len,
                                wl_arena_t *arena, wl_piece_t *out)
{
    (void)wire;
    (void)arena;
    wl_piece_append(out, bytes, len);
    return !out->failed;
}

/* Ends a stream: the call's status (gRPC frames no end message), OK or an error. */
static void end_stream_with(const wl_rpc_stream_wire_t *wire, wl_grpc_code_t code,
                            wl_reason_t reason, const char *message, wl_piece_t *out)
{
    (void)out;
    call_t *c = wire->call;
    if (code != WL_GRPC_OK) {
        answer_error(&c->ex, wl_http_status_of(code), code, reason, message, NULL);
        return;
    }
    c->code = WL_GRPC_OK;
    c->message = NULL;
    c->status_details = NULL;
}

/* A stream starts where the method's run said (its reply is not sent): the generator makes
 * every message, the first at once on a worker (stream_begin). */
static bool answer_first(wl_exchange_t *ex, const ProtobufCMessage *reply, void *data)
{
    call_t *c = data;
    wl_rpc_stream_wire_t wire = {.message = grpc_stream_message,
                                 .encoded = grpc_stream_encoded,
                                 .end = end_stream_with,
                                 .call = c};
    c->stream = wl_rpc_stream_create(c->procedure, c->server->core, c->server->watch,
                                     &ex->principal, reply, &wire);
    c->stream_next = WL_GENERATOR_MORE;
    c->code = WL_GRPC_OK;
    c->message = NULL;
    ex->status = 200;
    return c->stream != NULL;
}

static bool call_expired(void *data)
{
    call_t *c = data;
    if (atomic_load(&c->cancelled))
        return true;
    return gpr_time_cmp(gpr_now(GPR_CLOCK_MONOTONIC), c->deadline) >= 0;
}

static void answer_expired(wl_exchange_t *ex, void *data)
{
    call_t *c = data;
    /* The client has its answer from gRPC already (its deadline, or its own cancellation):
     * this one only reaches the metric when the status could still be sent. */
    if (atomic_load(&c->cancelled) && gpr_time_cmp(gpr_now(GPR_CLOCK_MONOTONIC), c->deadline) < 0)
        answer_error(ex, 499, WL_GRPC_CANCELLED, WL_REASON_CANCELLED,
                     "the client cancelled the call", NULL);
    else
        answer_error(ex, 504, WL_GRPC_DEADLINE_EXCEEDED, WL_REASON_DEADLINE_EXCEEDED,
                     "the deadline (grpc-timeout) has passed", NULL);
}

/* Request metadata as the exchange's request headers (binary "-bin" values left out). */
static void read_metadata(call_t *c)
{
    wl_exchange_t *ex = &c->ex;
    wl_header_t *headers =
        wl_arena_alloc(&ex->arena, sizeof(*headers) * (c->request_metadata.count + 1));
    if (headers == NULL)
        return;
    size_t count = 0;
    for (size_t i = 0; i < c->request_metadata.count; i++) {
        const grpc_metadata *md = &c->request_metadata.metadata[i];
        size_t key_len = GRPC_SLICE_LENGTH(md->key);
        const char *key = (const char *)GRPC_SLICE_START_PTR(md->key);
        if (key_len >= 4 && memcmp(key + key_len - 4, "-bin", 4) == 0)
            continue;
        headers[count].name = wl_arena_strndup(&ex->arena, key, key_len);
        headers[count].value =
            wl_arena_strndup(&ex->arena, (const char *)GRPC_SLICE_START_PTR(md->value),
                             GRPC_SLICE_LENGTH(md->value));
        if (headers[count].name != NULL && headers[count].value != NULL &&
            strlen(headers[count].value) == GRPC_SLICE_LENGTH(md->value))
            count++;
    }
    ex->request_headers = headers;
    ex->request_header_count = count;
}

/* gRPC's peer string ("ipv4:127.0.0.1:5000", "ipv6:[::1]:5000") as an address, for the
 * per-address limit of calls without a valid key. */
static bool parse_peer(const char *peer, struct sockaddr_storage *out)
{
    bool v6 = strncmp(peer, "ipv6:[", 6) == 0;
    if (!v6 && strncmp(peer, "ipv4:", 5) != 0)
        return false;
    const char *start = peer + (v6 ? 6 : 5);
    const char *end = v6 ? strchr(start, ']') : strrchr(start, ':');
    size_t len = end ? (size_t)(end - start) : 0;
    char host[INET6_ADDRSTRLEN + 2];
    if (len == 0 || len >= sizeof(host))
        return false;
    memcpy(host, start, len);
    host[len] = '\0';
    host[strcspn(host, "%")] = '\0'; /* an IPv6 zone */
    memset(out, 0, sizeof(*out));
    if (v6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)out;
        in6->sin6_family = AF_INET6;
        return inet_pton(AF_INET6, host, &in6->sin6_addr) == 1;
    }
    struct sockaddr_in *in = (struct sockaddr_in *)out;
    in->sin_family = AF_INET;
    return inet_pton(AF_INET, host, &in->sin_addr) == 1;
}

static void read_peer(call_t *c)
{
    char *peer = grpc_call_get_peer(c->call);
    if (peer != NULL && parse_peer(peer, &c->peer))
        c->ex.client_addr = (const struct sockaddr *)&c->peer;
    gpr_free(peer);
}

/*
 * The bytes of a received message in arena memory (NUL-terminated). gRPC's core leaves gzip'd
 * messages to us (GRPC_ARG_ENABLE_PER_MESSAGE_DECOMPRESSION off): it would inflate a whole
 * message before checking its limit (a 1 MiB bomb took walklistd to 1.1 GB), where this stops
 * at WL_RPC_REQUEST_LIMIT. WL_EEXHAUSTED past it, WL_EINVAL for corrupt gzip.
 */
static int message_bytes(grpc_byte_buffer *message, wl_arena_t *arena, wl_span_t *out,
                         wl_error_t *err)
{
    bool coded =
        message->type == GRPC_BB_RAW && message->data.raw.compression == GRPC_COMPRESS_GZIP;
    grpc_slice all = grpc_empty_slice();
    if (coded) {
        const grpc_slice_buffer *slices = &message->data.raw.slice_buffer;
        all = grpc_slice_malloc(slices->length);
        size_t at = 0;
        for (size_t i = 0; i < slices->count; i++) {
            memcpy(GRPC_SLICE_START_PTR(all) + at, GRPC_SLICE_START_PTR(slices->slices[i]),
                   GRPC_SLICE_LENGTH(slices->slices[i]));
            at += GRPC_SLICE_LENGTH(slices->slices[i]);
        }
    } else {
        grpc_byte_buffer_reader reader;
        if (!grpc_byte_buffer_reader_init(&reader, message))
            return wl_error_set(err, WL_ENOMEM, NULL);
        all = grpc_byte_buffer_reader_readall(&reader);
        grpc_byte_buffer_reader_destroy(&reader);
    }
    const char *bytes = (const char *)GRPC_SLICE_START_PTR(all);
    size_t len = GRPC_SLICE_LENGTH(all);
    char *text = NULL;
    size_t text_len = len;
    int rc = 0;
    if (coded) {
        rc = wl_gunzip_body(bytes, len, WL_RPC_REQUEST_LIMIT, arena, &text, &text_len, err);
    } else if ((text = wl_arena_alloc(arena, len + 1)) != NULL) {
        memcpy(text, bytes, len);
        text[len] = '\0';
    } else {
        rc = wl_error_set(err, WL_ENOMEM, NULL);
    }
    grpc_slice_unref(all);
    *out = wl_span(text, text_len);
    return rc;
}

/* The request message as the exchange's body; answers and returns false when it cannot be
 * read (before the call's admission, as gRPC's core refuses a message over the limit). */
static bool read_message(call_t *c)
{
    wl_error_t err;
    wl_error_init(&err);
    wl_span_t body;
    int rc = message_bytes(c->request, &c->ex.arena, &body, &err);
    if (rc == WL_EEXHAUSTED) {
        char message[128];
        snprintf(message, sizeof(message), "the request message inflates to more than %u bytes",
                 WL_RPC_REQUEST_LIMIT);
        answer_error(&c->ex, 413, WL_GRPC_RESOURCE_EXHAUSTED, WL_REASON_BODY_TOO_LARGE, message,
                     NULL);
    } else if (rc == WL_EINVAL) {
        answer_error(&c->ex, 400, WL_GRPC_INVALID_ARGUMENT, WL_REASON_INVALID_REQUEST, err.message,
                     NULL);
    } else if (rc != 0) {
        answer_error(&c->ex, 500, WL_GRPC_INTERNAL, WL_REASON_INTERNAL, NULL, NULL);
    }
    c->ex.body = (char *)body.base;
    c->ex.body_len = body.len;
    return rc == 0;
}

static void run_procedure(wl_grpc_server_t *server, call_t *c)
{
    wl_exchange_t *ex = &c->ex;
    /* A call whose client has gone (or whose deadline passed while it waited for a worker)
     * is not started: nothing of it reaches the database. */
    if (call_expired(c)) {
        answer_expired(ex, c);
        return;
    }
    const wl_method_policy_t *policy =
        wl_core_method_policy(c->procedure->service, c->procedure->method_index);
    c->streaming = policy->server_streaming;
    wl_span_t token;
    if (!wl_access_read_key(&server->access, ex, NULL, &token))
        return;
    if (!wl_access_begin(&server->access, ex, token, policy, ex->body_len <= DEFER_MESSAGE_LIMIT))
        return;
    wl_unary_transport_t transport = {.access = &server->access,
                                      .decode = decode_message,
                                      .reply = c->streaming ? answer_first : answer_reply,
                                      .expired = call_expired,
                                      .answer_expired = answer_expired,
                                      .reply_limit = WL_RPC_REPLY_LIMIT,
                                      .data = c};
    wl_unary_call(&transport, server->core, ex, c->procedure->service, c->procedure->method_index);
}

/* The service a health call asks about, known or not; false when the request could not be read
 * (answered). */
static bool health_service_asked(wl_grpc_server_t *server, call_t *c, bool *known)
{
    wl_exchange_t *ex = &c->ex;
    wl_error_t err;
    wl_error_init(&err);
    ProtobufCMessage *input = NULL;
    if (wl_rpc_decode_binary(&grpc__health__v1__health_check_request__descriptor, ex->body,
                             ex->body_len, &ex->arena, &input, &err) != 0) {
        answer_error(ex, 400, WL_GRPC_INVALID_ARGUMENT, WL_REASON_INVALID_REQUEST, NULL, &err);
        return false;
    }
    const char *service = ((Grpc__Health__V1__HealthCheckRequest *)input)->service;
    *known = service[0] == '\0' || strcmp(service, health_service) == 0 ||
             wl_core_find_service(server->core, service) != NULL;
    return true;
}

/* grpc.health.v1.Health/Check: the readiness of /readyz, for the server ("") or one of its
 * services; NOT_SERVING from the start of a shutdown. No key needed, as for /readyz. */
static void run_health_check(wl_grpc_server_t *server, call_t *c)
{
    wl_exchange_t *ex = &c->ex;
    wl_error_t err;
    wl_error_init(&err);
    bool known = false;
    if (!health_service_asked(server, c, &known))
        return;
    if (!known) {
        answer_error(ex, 404, WL_GRPC_NOT_FOUND, WL_REASON_NOT_FOUND, "unknown service", NULL);
        return;
    }
    pthread_mutex_lock(&server->lock);
    bool stopping = server->shutdown_begun;
    pthread_mutex_unlock(&server->lock);
    Grpc__Health__V1__HealthCheckResponse reply = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
    reply.status = !stopping && wl_core_ready(server->core, &err) == 0
                       ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING
                       : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING;
    if (!set_reply(c, &reply.base))
        answer_error(ex, 500, WL_GRPC_INTERNAL, WL_REASON_INTERNAL, NULL, NULL);
}

/* --- Server streams (WatchStock) ------------------------------------------------------------ */

/* Sends msg as the stream's next message (initial metadata first with the first one); false
 * when the call is gone (msg freed): the caller ends the stream. */
static bool stream_send(call_t *c, grpc_byte_buffer *msg)
{
    c->stream_message = msg;
    grpc_op ops[2];
    memset(ops, 0, sizeof(ops));
    size_t n = 0;
    if (!c->initial_sent) {
        c->initial_sent = true;
        put_initial(c);
        ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[n].data.send_initial_metadata.count = c->initial_count;
        ops[n].data.send_initial_metadata.metadata = c->initial;
        n++;
    }
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n].flags = send_flags(msg);
    ops[n].data.send_message.send_message = msg;
    n++;
    atomic_fetch_add(&c->refs, 1);
    if (grpc_call_start_batch(c->call, ops, n, &c->tag_stream_sent, NULL) == GRPC_CALL_OK)
        return true;
    atomic_fetch_sub(&c->refs, 1);
    c->stream_message = NULL;
    grpc_byte_buffer_destroy(msg);
    return false;
}

/* Ends the stream: its status when still possible (with the initial metadata when no message
 * went), then the stream's hold on the call. */
static void stream_end(call_t *c, bool send_status)
{
    c->stream->stop(c->stream);
    c->stream = NULL;
    if (send_status && !c->initial_sent) {
        send_answer(c);
    } else if (send_status) {
        c->status_slice = copied_slice(c->message ? c->message : "");
        c->status_slice_set = true;
        if (c->status_details != NULL) {
            grpc_metadata *md = &c->trailing[c->trailing_count++];
            memset(md, 0, sizeof(*md));
            md->key = copied_slice("grpc-status-details-bin");
            md->value = grpc_slice_from_copied_buffer((const char *)c->status_details,
                                                      c->status_details_len);
        }
        grpc_op op;
        memset(&op, 0, sizeof(op));
        op.op = GRPC_OP_SEND_STATUS_FROM_SERVER;
        op.data.send_status_from_server.status = (grpc_status_code)c->code;
        op.data.send_status_from_server.status_details = &c->status_slice;
        op.data.send_status_from_server.trailing_metadata_count = c->trailing_count;
        op.data.send_status_from_server.trailing_metadata = c->trailing;
        atomic_fetch_add(&c->refs, 1);
        if (grpc_call_start_batch(c->call, &op, 1, &c->tag_sent, NULL) != GRPC_CALL_OK)
            release(c);
    }
    release(c); /* the stream's hold */
}

static void stream_wake(void *data);

/* After a message went (or a step that made none): the next on a worker, the generator parked
 * until it has something, or the status. */
static void stream_go_on(call_t *c)
{
    switch (c->stream_next) {
    case WL_GENERATOR_MORE:
        stream_wake(c);
        break;
    case WL_GENERATOR_IDLE:
        c->stream->park(c->stream, stream_wake, c);
        break;
    case WL_GENERATOR_DONE:
    case WL_GENERATOR_FAILED:
        stream_end(c, true);
        break;
    }
}

/* On a worker, when the stream has something to do: the generator's next message, or its end. */
static void stream_step(wl_offload_job_t *job)
{
    call_t *c = (call_t *)((char *)job - offsetof(call_t, stream_job));
    if (atomic_load(&c->cancelled)) {
        stream_end(c, false);
        return;
    }
    wl_piece_t piece = {0};
    wl_error_t err;
    wl_error_init(&err);
    wl_generator_next_t next = c->stream->proceed(c->stream, &piece, WL_RPC_REPLY_LIMIT, &err);
    if (piece.failed && next != WL_GENERATOR_FAILED) {
        wl_error_set(&err, WL_ENOMEM, NULL);
        next = WL_GENERATOR_FAILED;
    }
    if (next == WL_GENERATOR_FAILED) {
        wl_grpc_code_t code = wl_error_grpc_code(err.code);
        answer_error(&c->ex, wl_http_status_of(code), code, wl_reason_of_error(err.code),
                     err.message[0] ? err.message : NULL, NULL);
        piece.len = 0;
    }
    c->stream_next = next;
    if (piece.len == 0) {
        wl_piece_dispose(&piece);
        stream_go_on(c);
        return;
    }
    grpc_byte_buffer *msg = wl_grpc_message(grpc_slice_from_copied_buffer(piece.base, piece.len),
                                            wl_grpc_codes_answers(c->call));
    c->reply_len += piece.len;
    wl_piece_dispose(&piece);
    /* Sent, the call belongs to the completion queue's thread from here. */
    if (!stream_send(c, msg))
        stream_end(c, false);
}

static void stream_wake(void *data)
{
    call_t *c = data;
    c->stream_job.run = stream_step;
    wl_offload_submit(c->server->workers, &c->stream_job);
}

/* On the completion queue's thread: a message went out (what follows it) or the call is gone
 * (the stream ends). */
static void on_stream_sent(call_t *c, bool ok)
{
    grpc_byte_buffer_destroy(c->stream_message);
    c->stream_message = NULL;
    if (ok)
        stream_go_on(c);
    else
        stream_end(c, false);
    release(c); /* the batch's hold */
}

/* After the method's run let the stream start: its first message is made on a worker; else
 * the call answers unary-style (an error). */
static bool stream_begin(call_t *c)
{
    if (!c->streaming || c->code != WL_GRPC_OK || c->stream == NULL)
        return false;
    atomic_fetch_add(&c->refs, 1); /* the stream's hold */
    stream_go_on(c);
    return true;
}

/* grpc.health.v1.Health/Watch: the status Check gives, first at once and then on every change
 * (protocols/health_stream.h), as a server stream; SERVICE_UNKNOWN, not an error, for a service
 * the server does not have. No key needed, as for Check. */
static void run_health_watch(wl_grpc_server_t *server, call_t *c)
{
    wl_exchange_t *ex = &c->ex;
    bool known = false;
    if (!health_service_asked(server, c, &known))
        return;
    if (server->watch == NULL) {
        answer_error(ex, 501, WL_GRPC_UNIMPLEMENTED, WL_REASON_ENDPOINT_NOT_FOUND,
                     "this server does not keep streams", NULL);
        return;
    }
    wl_rpc_stream_wire_t wire = {.message = grpc_stream_message,
                                 .encoded = grpc_stream_encoded,
                                 .end = end_stream_with,
                                 .call = c};
    c->stream = wl_health_stream_create(server->core, server->watch, known, &wire);
    if (c->stream == NULL) {
        answer_error(ex, 500, WL_GRPC_RESOURCE_EXHAUSTED, WL_REASON_INTERNAL, "out of memory",
                     NULL);
        return;
    }
    c->streaming = true;
    c->stream_next = WL_GENERATOR_MORE;
    c->code = WL_GRPC_OK;
    c->message = NULL;
    ex->status = 200;
}

/* --- Server reflection (a bidirectional stream) --------------------------------------------- */

/* On a worker: the stream's request answered (the first answer with the initial metadata);
 * on_reflection_sent then reads the next request. No key needed, as for health. */
static void answer_reflection(wl_offload_job_t *job)
{
    call_t *c = (call_t *)((char *)job - offsetof(call_t, job));
    wl_arena_t arena; /* this request's: a long stream does not pile its requests up */
    wl_arena_init(&arena, WL_RPC_ARENA_LIMIT);
    wl_error_t err;
    wl_error_init(&err);
    wl_span_t request;
    int rc = message_bytes(c->request, &arena, &request, &err);
    grpc_byte_buffer_destroy(c->request);
    c->request = NULL;
    if (c->reflection_stream == NULL)
        c->reflection_stream = wl_reflection_stream_new(c->server->reflection, &c->ex.arena);
    wl_span_t answer;
    if (rc == 0)
        rc = c->reflection_stream == NULL
                 ? WL_ENOMEM
                 : wl_reflection_answer(c->server->reflection, c->reflection_stream, request,
                                        &arena, &answer, &err);
    if (rc != 0) {
        if (rc == WL_EINVAL)
            answer_error(&c->ex, 400, WL_GRPC_INVALID_ARGUMENT, WL_REASON_INVALID_REQUEST, NULL,
                         &err);
        else if (rc == WL_EEXHAUSTED)
            answer_error(&c->ex, 413, WL_GRPC_RESOURCE_EXHAUSTED, WL_REASON_BODY_TOO_LARGE,
                         "the request message inflates to more than 4 MiB", NULL);
        else
            answer_error(&c->ex, 500, WL_GRPC_INTERNAL, WL_REASON_INTERNAL, NULL, NULL);
        send_answer(c);
    } else {
        grpc_slice slice = grpc_slice_from_copied_buffer(answer.base, answer.len);
        c->reply = grpc_raw_byte_buffer_create(&slice, 1);
        c->reply_len += answer.len;
        grpc_slice_unref(slice);
        grpc_op ops[2];
        memset(ops, 0, sizeof(ops));
        size_t n = 0;
        if (!c->initial_sent) {
            ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
            n++;
            c->initial_sent = true;
        }
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n].flags = send_flags(c->reply);
        ops[n].data.send_message.send_message = c->reply;
        n++;
        atomic_fetch_add(&c->refs, 1);
        if (grpc_call_start_batch(c->call, ops, n, &c->tag_reflection_sent, NULL) != GRPC_CALL_OK)
            release(c);
    }
    wl_arena_dispose(&arena);
    release(c); /* the worker's hold */
}

/* On the completion queue's thread: an answer went out (the next request is read) or the call
 * is gone. */
static void on_reflection_sent(call_t *c, bool ok)
{
    grpc_byte_buffer_destroy(c->reply);
    c->reply = NULL;
    if (ok)
        start_op(c, GRPC_OP_RECV_MESSAGE, &c->tag_message);
    release(c); /* the batch's hold */
}

static void run_call(wl_grpc_server_t *server, call_t *c)
{
    c->ex.may_wait = true; /* a worker of its own: it may wait for the database */
    read_metadata(c);
    read_peer(c);
    wl_exchange_read_origin(&c->ex);
    if (!read_message(c)) {
        /* answered */
    } else if (c->kind == CALL_HEALTH) {
        run_health_check(server, c);
    } else if (c->kind == CALL_HEALTH_WATCH) {
        run_health_watch(server, c);
    } else {
        run_procedure(server, c);
    }
    if (!stream_begin(c))
        send_answer(c);
}

static void run_queued(wl_offload_job_t *job)
{
    call_t *c = (call_t *)((char *)job - offsetof(call_t, job));
    run_call(c->server, c);
    release(c); /* the worker's hold */
}

static void enqueue(wl_grpc_server_t *server, call_t *c)
{
    c->job.run = c->kind == CALL_REFLECTION ? answer_reflection : run_queued;
    wl_offload_submit(server->workers, &c->job);
}

/* --- The completion queue's thread --------------------------------------------------------- */

static call_t *new_call(wl_grpc_server_t *server)
{
    call_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->server = server;
    c->tag_new = (tag_t){TAG_NEW_CALL, c};
    c->tag_message = (tag_t){TAG_MESSAGE, c};
    c->tag_sent = (tag_t){TAG_SENT, c};
    c->tag_closed = (tag_t){TAG_CLOSED, c};
    c->tag_stream_sent = (tag_t){TAG_STREAM_SENT, c};
    c->tag_reflection_sent = (tag_t){TAG_REFLECTION_SENT, c};
    grpc_call_details_init(&c->details);
    grpc_metadata_array_init(&c->request_metadata);
    wl_arena_init(&c->ex.arena, WL_RPC_ARENA_LIMIT);
    c->ex.handler_state = c;
    c->ex.method = "POST";
    return c;
}

/* Asks gRPC's core for the next call (any method: generic calls). */
static void request_call(wl_grpc_server_t *server)
{
    call_t *c = new_call(server);
    if (c == NULL) {
        wl_log("error", "grpc", "out of memory: one call fewer asked for");
        return;
    }
    if (grpc_server_request_call(server->server, &c->call, &c->details, &c->request_metadata,
                                 server->queue, server->queue, &c->tag_new) != GRPC_CALL_OK)
        free_call(c);
}

static void start_op(call_t *c, grpc_op_type type, tag_t *tag)
{
    grpc_op op;
    memset(&op, 0, sizeof(op));
    op.op = type;
    if (type == GRPC_OP_RECV_MESSAGE)
        op.data.recv_message.recv_message = &c->request;
    else
        op.data.recv_close_on_server.cancelled = &c->close_cancelled;
    atomic_fetch_add(&c->refs, 1);
    if (grpc_call_start_batch(c->call, &op, 1, tag, NULL) != GRPC_CALL_OK)
        release(c);
}

/* A call has arrived: its method is looked up at once; a known one waits for its message. */
static void on_new_call(wl_grpc_server_t *server, call_t *c)
{
    clock_gettime(CLOCK_MONOTONIC, &c->started);
    c->deadline = gpr_convert_clock_type(c->details.deadline, GPR_CLOCK_MONOTONIC);
    wl_metrics_grpc_started(server->metrics);
    pthread_mutex_lock(&server->lock);
    server->active++;
    bool more = !server->shutdown_begun;
    pthread_mutex_unlock(&server->lock);
    if (more)
        request_call(server);
    atomic_store(&c->refs, 1); /* this function's hold */
    start_op(c, GRPC_OP_RECV_CLOSE_ON_SERVER, &c->tag_closed);
    wl_span_t path = wl_span((const char *)GRPC_SLICE_START_PTR(c->details.method),
                             GRPC_SLICE_LENGTH(c->details.method));
    c->ex.path = path;
    c->procedure = wl_rpc_procedures_find(&server->procedures, path);
    const char *reflection_method = wl_reflection_method(path);
    if (c->procedure != NULL) {
        c->kind = CALL_PROCEDURE;
        c->ex.route = c->procedure->path;
    } else if (wl_span_eq(path, wl_span(health_check_path, sizeof(health_check_path) - 1))) {
        c->kind = CALL_HEALTH;
        c->ex.route = health_check_path;
    } else if (wl_span_eq(path, wl_span(health_watch_path, sizeof(health_watch_path) - 1))) {
        c->kind = CALL_HEALTH_WATCH;
        c->ex.route = health_watch_path;
    } else if (reflection_method != NULL) {
        c->kind = CALL_REFLECTION;
        c->ex.route = reflection_method;
    } else {
        /* Answered before anything is read, without a key, as unknown Connect procedures are. */
        c->kind = CALL_UNKNOWN;
        answer_error(&c->ex, 404, WL_GRPC_UNIMPLEMENTED, WL_REASON_ENDPOINT_NOT_FOUND,
                     "no such method", NULL);
        send_answer(c);
        release(c);
        return;
    }
    start_op(c, GRPC_OP_RECV_MESSAGE, &c->tag_message);
    release(c);
}

static void on_message(call_t *c, bool ok)
{
    if (ok && c->request != NULL) {
        enqueue(c->server, c); /* the operation's hold goes to the worker */
        return;
    }
    if (ok && c->kind == CALL_REFLECTION) {
        /* The client closed its side: the stream ends well. */
        c->code = WL_GRPC_OK;
        c->ex.status = 200;
        send_answer(c);
    } else if (ok) {
        /* The client closed its side without a message. */
        answer_error(&c->ex, 400, WL_GRPC_INVALID_ARGUMENT, WL_REASON_INVALID_REQUEST,
                     "the call carries no request message", NULL);
        send_answer(c);
    }
    /* Otherwise the call is over already (cancelled, or its message refused by gRPC's core,
     * which answers RESOURCE_EXHAUSTED for one over the limit). */
    release(c);
}

static void *queue_main(void *data)
{
    wl_grpc_server_t *server = data;
    for (;;) {
        grpc_event event =
            grpc_completion_queue_next(server->queue, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (event.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (event.type != GRPC_OP_COMPLETE)
            continue;
        tag_t *tag = event.tag;
        call_t *c = tag->call;
        switch (tag->kind) {
        case TAG_NEW_CALL:
            if (event.success)
                on_new_call(server, c);
            else
                free_call(c); /* shutting down: no call came */
            break;
        case TAG_MESSAGE:
            on_message(c, event.success != 0);
            break;
        case TAG_SENT:
            atomic_store(&c->answered, event.success != 0);
            release(c);
            break;
        case TAG_STREAM_SENT:
            on_stream_sent(c, event.success != 0);
            break;
        case TAG_REFLECTION_SENT:
            on_reflection_sent(c, event.success != 0);
            break;
        case TAG_CLOSED:
            if (c->close_cancelled)
                atomic_store(&c->cancelled, true);
            release(c);
            break;
        case TAG_SHUTDOWN:
            pthread_mutex_lock(&server->lock);
            server->shutdown_done = true;
            pthread_cond_broadcast(&server->changed);
            pthread_mutex_unlock(&server->lock);
            break;
        }
    }
    return NULL;
}

/* --- The server ----------------------------------------------------------------------------- */

/* gRPC's own diagnostics as JSON log lines, as every other line walklistd writes. */
static void on_grpc_log(gpr_log_func_args *args)
{
    const char *level = args->severity == GPR_LOG_SEVERITY_ERROR  ? "error"
                        : args->severity == GPR_LOG_SEVERITY_INFO ? "info"
                                                                  : "warn";
    wl_log(level, "grpc", "%s (%s:%d)", args->message, args->file, args->line);
}

/* What reflection lists besides itself: the core's services and health. */
static bool serves_service(const char *service, void *data)
{
    wl_grpc_server_t *server = data;
    return strcmp(service, health_service) == 0 ||
           wl_core_find_service(server->core, service) != NULL;
}

int wl_grpc_server_start(wl_core_t *core, const wl_grpc_config_t *config, wl_grpc_server_t **out,
                         wl_error_t *err)
{
    if (config->threads == 0)
        return wl_error_set(err, WL_EINVAL, "the gRPC server needs at least one worker thread");
    if ((config->tls_cert_pem == NULL) != (config->tls_key_pem == NULL))
        return wl_error_set(err, WL_EINVAL, "TLS needs both a certificate and a key");
    wl_grpc_server_t *server = calloc(1, sizeof(*server));
    if (server == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    server->core = core;
    server->metrics = config->metrics;
    server->watch = config->watch;
    server->access = (wl_access_t){core, config->anonymous, answer_error};
    server->tag_shutdown = (tag_t){TAG_SHUTDOWN, NULL};
    pthread_mutex_init(&server->lock, NULL);
    pthread_cond_init(&server->changed, NULL);
    int rc = wl_rpc_procedures_init(&server->procedures, core, err);
    if (rc == 0)
        rc = wl_reflection_create(serves_service, server, &server->reflection, err);
    if (rc != 0) {
        wl_grpc_server_destroy(server);
        return rc;
    }
    gpr_set_log_function(on_grpc_log);
    grpc_init();
    server->grpc_initialised = true;
    grpc_arg args[] = {
        /* The request limit of every RPC transport; gRPC's core refuses a larger message with
         * RESOURCE_EXHAUSTED before walklistd sees it. */
        {.type = GRPC_ARG_INTEGER,
         .key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
         .value.integer = (int)WL_RPC_REQUEST_LIMIT},
        /* Answers in gzip to a client whose grpc-accept-encoding takes it (the level gRPC's core
         * maps to a coding the peer accepts, of those enabled below; a server's calls only).
         * Small messages go uncoded (send_flags). */
        {.type = GRPC_ARG_INTEGER,
         .key = GRPC_COMPRESSION_CHANNEL_DEFAULT_LEVEL,
         .value.integer = GRPC_COMPRESS_LEVEL_LOW},
        /* gzip'd requests are inflated here, under the limit (message_bytes); deflate is not
         * taken (the core refuses it: UNIMPLEMENTED), nor offered. */
        {.type = GRPC_ARG_INTEGER,
         .key = GRPC_ARG_ENABLE_PER_MESSAGE_DECOMPRESSION,
         .value.integer = 0},
        {.type = GRPC_ARG_INTEGER,
         .key = GRPC_COMPRESSION_CHANNEL_ENABLED_ALGORITHMS_BITSET,
         .value.integer = (1 << GRPC_COMPRESS_NONE) | (1 << GRPC_COMPRESS_GZIP)},
        /* Replies are limited by the unary call itself, with its message. */
        {.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, .value.integer = -1},
        /* A second walklistd on the same port is an error, not a silent share of it. */
        {.type = GRPC_ARG_INTEGER, .key = GRPC_ARG_ALLOW_REUSEPORT, .value.integer = 0},
    };
    grpc_channel_args channel_args = {sizeof(args) / sizeof(args[0]), args};
    server->server = grpc_server_create(&channel_args, NULL);
    server->queue = grpc_completion_queue_create_for_next(NULL);
    grpc_server_register_completion_queue(server->server, server->queue, NULL);
    grpc_server_credentials *credentials;
    if (config->tls_cert_pem != NULL) {
        grpc_ssl_pem_key_cert_pair pair = {config->tls_key_pem, config->tls_cert_pem};
        credentials = grpc_ssl_server_credentials_create_ex(
            NULL, &pair, 1, GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE, NULL);
    } else {
        credentials = grpc_insecure_server_credentials_create();
    }
    int port =
        credentials ? grpc_server_add_http2_port(server->server, config->listen, credentials) : 0;
    if (credentials != NULL)
        grpc_server_credentials_release(credentials);
    if (port <= 0) {
        wl_grpc_server_destroy(server);
        return wl_error_set(err, WL_EUNAVAILABLE,
                            "cannot serve gRPC on %s (an address host:port, free, and with TLS a "
                            "matching PEM certificate and key)",
                            config->listen);
    }
    server->port = (uint16_t)port;
    /* The threads wait for events and work before the first call can come. */
    if (pthread_create(&server->queue_thread, NULL, queue_main, server) != 0) {
        wl_grpc_server_destroy(server);
        return wl_error_set(err, WL_EINTERNAL, "cannot start the gRPC thread");
    }
    server->queue_thread_started = true;
    rc = wl_offload_create(config->threads, &server->workers, err);
    if (rc != 0) {
        wl_grpc_server_destroy(server);
        return rc;
    }
    grpc_server_start(server->server);
    server->started = true;
    for (int i = 0; i < PENDING_REQUESTS; i++)
        request_call(server);
    *out = server;
    return 0;
}

uint16_t wl_grpc_server_port(const wl_grpc_server_t *server)
{
    return server->port;
}

void wl_grpc_server_shutdown(wl_grpc_server_t *server)
{
    if (server == NULL || !server->started)
        return;
    pthread_mutex_lock(&server->lock);
    bool begun = server->shutdown_begun;
    server->shutdown_begun = true;
    pthread_mutex_unlock(&server->lock);
    if (!begun)
        grpc_server_shutdown_and_notify(server->server, server->queue, &server->tag_shutdown);
}

int wl_grpc_server_active(wl_grpc_server_t *server)
{
    if (server == NULL)
        return 0;
    pthread_mutex_lock(&server->lock);
    int active = server->active;
    pthread_mutex_unlock(&server->lock);
    return active;
}

void wl_grpc_server_destroy(wl_grpc_server_t *server)
{
    if (server == NULL)
        return;
    if (server->started) {
        wl_grpc_server_shutdown(server);
        /* What is still in flight ends CANCELLED; queued calls then run to nothing. */
        grpc_server_cancel_all_calls(server->server);
        pthread_mutex_lock(&server->lock);
        while (!server->shutdown_done || server->active > 0)
            pthread_cond_wait(&server->changed, &server->lock);
        pthread_mutex_unlock(&server->lock);
    }
    wl_offload_destroy(server->workers);
    if (server->queue != NULL) {
        /* The calls asked for and never come are handed back (freed) before the queue ends. */
        grpc_completion_queue_shutdown(server->queue);
        if (server->queue_thread_started)
            pthread_join(server->queue_thread, NULL);
        else
            queue_main(server);
    }
    if (server->server != NULL)
        grpc_server_destroy(server->server);
    if (server->queue != NULL)
        grpc_completion_queue_destroy(server->queue);
    if (server->grpc_initialised)
        grpc_shutdown();
    wl_reflection_destroy(server->reflection);
    wl_rpc_procedures_dispose(&server->procedures);
    pthread_cond_destroy(&server->changed);
    pthread_mutex_destroy(&server->lock);
    free(server);
}
