/* Serving the core's services over the Connect protocol (unary and server streams, HTTP/1.1)
 * happens here. */
#include "protocols/connect.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "protocols/access.h"
#include "protocols/api.h"
#include "protocols/connect_get.h"
#include "protocols/rpc.h"
#include "protocols/unary.h"
#include "codec/json_codec.h"
#include "http/gzip_filter.h"
#include "http/negotiate.h"
#include "errors/status_map.h"
#include "protocols/connect_wire.h"
#include "protocols/rpc_streams.h"

/* A pending admission waits for the method (and its body) only for bodies this small. */
#define CONNECT_DEFER_BODY_LIMIT (64u * 1024)
#define ACCEPT_POST              "application/proto, application/json, application/json; charset=utf-8"
#define ACCEPT_POST_STREAM       "application/connect+proto, application/connect+json"

static void answer_error_status(wl_exchange_t *ex, unsigned status, wl_grpc_code_t code,
                                wl_reason_t reason, const char *message, const wl_error_t *err);

struct wl_connect {
    wl_core_t *core;
    wl_anon_limiter_t *anonymous; /* not owned */
    wl_access_t access;
    wl_rpc_procedures_t procedures;
    wl_stock_watch_t *watch; /* not owned: WatchStock's streams */
};

typedef enum { CODEC_PROTO, CODEC_JSON } codec_t;

/* How far the request's message has been read out of the body (its envelope taken off, its
 * gzip inflated): once, before the call, whichever run of the request gets there first. */
typedef enum {
    MESSAGE_UNREAD,
    MESSAGE_READ,      /* state->message */
    MESSAGE_TOO_LARGE, /* it inflates past WL_CONNECT_BODY_LIMIT */
    MESSAGE_INVALID,   /* state->problem says why */
    MESSAGE_NO_MEMORY,
} message_read_t;

typedef struct {
    const wl_rpc_procedure_t *procedure;
    codec_t codec;
    const char *content_type; /* the request's, in canonical spelling, for the reply */
    /* A server-streaming procedure: every answer, errors too, is 200 with enveloped messages
     * ending in the end-stream message (Connect's streaming protocol). */
    bool streaming;
    bool gzip_request; /* the body (unary) or a flagged message (stream) is gzip-coded */
    /* Connect's GET form (connect_get.h): the message came in the query, as query_message. */
    bool get;
    wl_span_t query_message;
    const ProtobufCMessage *input; /* the decoded request, for a GET answer's validator */
    message_read_t message_read;
    wl_span_t message;   /* the request message once read (arena or body memory) */
    const char *problem; /* MESSAGE_INVALID: what is wrong with the message */
    wl_connect_t *connect;
    struct timespec started; /* CLOCK_MONOTONIC, when the request headers were in */
    bool has_deadline;
    struct timespec deadline; /* CLOCK_MONOTONIC */
} call_state_t;

int wl_connect_create(wl_core_t *core, wl_anon_limiter_t *anonymous, wl_stock_watch_t *watch,
                      wl_connect_t **out, wl_error_t *err)
{
    wl_connect_t *connect = calloc(1, sizeof(*connect));
    if (connect == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    connect->core = core;
    connect->anonymous = anonymous;
    connect->watch = watch;
    connect->access = (wl_access_t){core, anonymous, answer_error_status};
    int rc = wl_rpc_procedures_init(&connect->procedures, core, err);
    if (rc != 0) {
        free(connect);
        return rc;
    }
    *out = connect;
    return 0;
}

void wl_connect_destroy(wl_connect_t *connect)
{
    if (connect == NULL)
        return;
    wl_rpc_procedures_dispose(&connect->procedures);
    free(connect);
}

/* --- Answers ------------------------------------------------------------------------------ */

/* The answer when not even an error body can be allocated: written once, kept. */
static char fallback[256];
static pthread_once_t fallback_once = PTHREAD_ONCE_INIT;

static void write_fallback(void)
{
    (void)wl_connect_error_plain(fallback, sizeof(fallback), WL_GRPC_INTERNAL, WL_REASON_INTERNAL,
                                 "internal error");
}

/* Connect's Error: {"code","message","details"} with Content-Type application/json; details
 * hold the BadRequest of err's violations, when it has any, then the ErrorInfo. A streaming
 * procedure's error is its stream's end message, in a 200 (the protocol's rule for streams). */
static void answer_error_status(wl_exchange_t *ex, unsigned status, wl_grpc_code_t code,
                                wl_reason_t reason, const char *message, const wl_error_t *err)
{
    ex->error_info.reason = reason;
    json_t *body = wl_connect_error_json(&ex->arena, code, message, err, &ex->error_info);
    const call_state_t *state = ex->handler_state;
    if (state != NULL && state->streaming && body != NULL) {
        ex->response = wl_connect_end_stream(&ex->arena, body, &ex->response_len);
        ex->status = 200;
        ex->content_type = state->content_type;
        if (ex->response != NULL)
            return;
        body = NULL;
    }
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(body);
    ex->content_type = "application/json";
    ex->status = status;
    ex->response = text ? wl_arena_strdup(&ex->arena, text) : NULL;
    free(text);
    if (ex->response == NULL) {
        pthread_once(&fallback_once, write_fallback);
        ex->status = 500;
        ex->response = fallback;
    }
    ex->response_len = strlen(ex->response);
}

static void answer_error(wl_exchange_t *ex, wl_grpc_code_t code, wl_reason_t reason,
                         const char *message, const wl_error_t *err)
{
    answer_error_status(ex, wl_http_status_of(code), code, reason, message, err);
}

/* The body, or the message it inflates to (inflated), past the limit. */
static void answer_too_large(wl_exchange_t *ex, bool inflated)
{
    char message[256];
    snprintf(message, sizeof(message), "the request %s larger than %u bytes",
             inflated ? "message inflates to" : "body is", WL_CONNECT_BODY_LIMIT);
    answer_error_status(ex, 413, WL_GRPC_RESOURCE_EXHAUSTED, WL_REASON_BODY_TOO_LARGE, message,
                        NULL);
}

/* --- Request headers ---------------------------------------------------------------------- */

/* application/proto or application/json (charset UTF-8 when given): the two codecs of Connect
 * unary with Protocol Buffers. The reply says the same, in canonical spelling. */
static bool parse_content_type(const char *value, call_state_t *state)
{
    bool charset = false;
    wl_media_t media = wl_negotiate_content_type(value, &charset);
    if (media == WL_MEDIA_OTHER)
        return false;
    state->codec = media == WL_MEDIA_PROTO ? CODEC_PROTO : CODEC_JSON;
    state->content_type = media == WL_MEDIA_PROTO ? "application/proto"
                          : charset               ? "application/json; charset=utf-8"
                                                  : "application/json";
    return true;
}

/* application/connect+proto or application/connect+json (parameters ignored): the codecs of
 * Connect streams. */
static bool parse_stream_content_type(const char *value, call_state_t *state)
{
    static const char *const types[] = {"application/connect+proto", "application/connect+json"};
    for (size_t i = 0; value != NULL && i < 2; i++) {
        size_t len = strlen(types[i]);
        if (strncasecmp(value, types[i], len) == 0 &&
            (value[len] == '\0' || value[len] == ';' || value[len] == ' ')) {
            state->codec = i == 0 ? CODEC_PROTO : CODEC_JSON;
            state->content_type = types[i];
            return true;
        }
    }
    return false;
}

/* Connect-Timeout-Ms: a non-negative integer of at most 10 ASCII digits, counted from start. */
static bool parse_timeout(const char *value, struct timespec start, struct timespec *deadline)
{
    size_t len = strlen(value);
    if (len == 0 || len > 10 || strspn(value, "0123456789") != len)
        return false;
    long long ms = strtoll(value, NULL, 10);
    *deadline = start;
    deadline->tv_sec += (time_t)(ms / 1000);
    deadline->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (deadline->tv_nsec >= 1000000000L) {
        deadline->tv_sec++;
        deadline->tv_nsec -= 1000000000L;
    }
    return true;
}

static bool deadline_passed(const call_state_t *state)
{
    if (!state->has_deadline)
        return false;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > state->deadline.tv_sec ||
           (now.tv_sec == state->deadline.tv_sec && now.tv_nsec >= state->deadline.tv_nsec);
}

static void answer_deadline_exceeded(wl_exchange_t *ex)
{
    answer_error(ex, WL_GRPC_DEADLINE_EXCEEDED, WL_REASON_DEADLINE_EXCEEDED,
                 "the deadline (Connect-Timeout-Ms) has passed", NULL);
}

/* Reads the Bearer key and starts the request's admission, as the REST routes do; a
 * conditional GET of a versioned procedure asks it for the version its 304 needs. */
static bool authenticate(wl_connect_t *connect, wl_exchange_t *ex, const wl_method_policy_t *policy,
                         const call_state_t *state)
{
    bool get = state->get;
    wl_span_t token;
    if (!wl_access_read_key(&connect->access, ex, NULL, &token))
        return false;
    if (ex->admission == NULL && get && wl_exchange_header(ex, "If-None-Match") != NULL &&
        wl_connect_get_versioned(state->procedure->path)) {
        ex->admission = wl_core_admission(connect->core, &ex->arena, token, policy);
        wl_connect_get_admit(connect->core, state->procedure->path, ex->admission);
    }
    /* Only a small body is read before a pending admission is decided (a GET's is unread). */
    const char *length = wl_exchange_header(ex, "Content-Length");
    bool small = get || (length != NULL && strtoull(length, NULL, 10) <= CONNECT_DEFER_BODY_LIMIT);
    return wl_access_begin(&connect->access, ex, token, policy, small);
}

static bool accept_timeout(wl_connect_t *connect, wl_exchange_t *ex, call_state_t *state);

/* The protocol headers, in the order a Connect server meets them: codec, version, coding,
 * timeout. Answers and returns false at the first one refused. */
static bool accept_headers(wl_connect_t *connect, wl_exchange_t *ex, call_state_t *state)
{
    const char *content_type = wl_exchange_header(ex, "Content-Type");
    if (state->streaming ? !parse_stream_content_type(content_type, state)
                         : !parse_content_type(content_type, state)) {
        if (!wl_access_admitted(&connect->access, ex))
            return false;
        /* The protocol answers an unknown codec 415, stream or not. */
        bool streaming = state->streaming;
        state->streaming = false;
        wl_exchange_add_header(ex, "Accept-Post", streaming ? ACCEPT_POST_STREAM : ACCEPT_POST);
        answer_error_status(ex, 415, WL_GRPC_INVALID_ARGUMENT, WL_REASON_UNSUPPORTED_MEDIA_TYPE,
                            streaming
                                ? "Content-Type must be application/connect+proto or "
                                  "application/connect+json (a server-streaming procedure)"
                                : "Content-Type must be application/proto or application/json",
                            NULL);
        return false;
    }
    const char *version = wl_exchange_header(ex, "Connect-Protocol-Version");
    if (version == NULL) {
        if (!wl_access_admitted(&connect->access, ex))
            return false;
        answer_error(ex, WL_GRPC_INVALID_ARGUMENT, WL_REASON_PROTOCOL_HEADER_INVALID,
                     "missing required header: set Connect-Protocol-Version to \"1\"", NULL);
        return false;
    }
    if (strcmp(version, "1") != 0) {
        if (!wl_access_admitted(&connect->access, ex))
            return false;
        answer_error(ex, WL_GRPC_INVALID_ARGUMENT, WL_REASON_PROTOCOL_HEADER_INVALID,
                     "Connect-Protocol-Version must be \"1\"", NULL);
        return false;
    }
    /* A unary body is coded as a whole (Content-Encoding), a stream's messages one by one. */
    const char *coding =
        wl_exchange_header(ex, state->streaming ? "Connect-Content-Encoding" : "Content-Encoding");
    state->gzip_request = coding != NULL && strcasecmp(coding, "gzip") == 0;
    if (coding != NULL && !state->gzip_request && strcasecmp(coding, "identity") != 0) {
        if (!wl_access_admitted(&connect->access, ex))
            return false;
        wl_exchange_add_header(ex, state->streaming ? "Connect-Accept-Encoding" : "Accept-Encoding",
                               "gzip");
        answer_error(ex, WL_GRPC_UNIMPLEMENTED, WL_REASON_CONTENT_ENCODING_UNSUPPORTED,
                     state->streaming ? "unsupported Connect-Content-Encoding: this server "
                                        "supports gzip and identity"
                                      : "unsupported Content-Encoding: this server supports gzip "
                                        "and identity",
                     NULL);
        return false;
    }
    return accept_timeout(connect, ex, state);
}

/* Connect-Timeout-Ms, a header on POST and GET alike. */
static bool accept_timeout(wl_connect_t *connect, wl_exchange_t *ex, call_state_t *state)
{
    const char *timeout = wl_exchange_header(ex, "Connect-Timeout-Ms");
    if (timeout != NULL) {
        if (!parse_timeout(timeout, state->started, &state->deadline)) {
            if (!wl_access_admitted(&connect->access, ex))
                return false;
            answer_error(ex, WL_GRPC_INVALID_ARGUMENT, WL_REASON_PROTOCOL_HEADER_INVALID,
                         "Connect-Timeout-Ms must be a whole number of milliseconds (at most 10 "
                         "digits)",
                         NULL);
            return false;
        }
        state->has_deadline = true;
    }
    return true;
}

/* A GET call's query (connect_get.h) in the order of the headers of a POST, then its timeout;
 * answers and returns false at the first problem. */
static bool accept_query(wl_connect_t *connect, wl_exchange_t *ex, call_state_t *state)
{
    wl_connect_get_t get;
    wl_connect_get_result_t result = wl_connect_get_read(ex->query, &ex->arena, &get);
    if (result != WL_CONNECT_GET_READ) {
        if (!wl_access_admitted(&connect->access, ex))
            return false;
        if (result == WL_CONNECT_GET_CODEC) {
            answer_error_status(ex, 415, WL_GRPC_INVALID_ARGUMENT, WL_REASON_UNSUPPORTED_MEDIA_TYPE,
                                get.problem, NULL);
        } else if (result == WL_CONNECT_GET_VERSION) {
            answer_error(ex, WL_GRPC_INVALID_ARGUMENT, WL_REASON_PROTOCOL_HEADER_INVALID,
                         get.problem, NULL);
        } else if (result == WL_CONNECT_GET_COMPRESSION) {
            wl_exchange_add_header(ex, "Accept-Encoding", "gzip");
            answer_error(ex, WL_GRPC_UNIMPLEMENTED, WL_REASON_CONTENT_ENCODING_UNSUPPORTED,
                         get.problem, NULL);
        } else if (result == WL_CONNECT_GET_NO_MEMORY) {
            answer_error(ex, WL_GRPC_INTERNAL, WL_REASON_INTERNAL, NULL, NULL);
        } else {
            answer_error(ex, WL_GRPC_INVALID_ARGUMENT, WL_REASON_INVALID_REQUEST, get.problem,
                         NULL);
        }
        return false;
    }
    state->codec = get.json ? CODEC_JSON : CODEC_PROTO;
    state->content_type = get.json ? "application/json" : "application/proto";
    state->gzip_request = get.gzip;
    state->query_message = get.message;
    return accept_timeout(connect, ex, state);
}

void wl_connect_begin(wl_connect_t *connect, wl_exchange_t *ex)
{
    call_state_t *state = wl_arena_alloc(&ex->arena, sizeof(*state));
    if (state == NULL) {
        answer_error(ex, WL_GRPC_INTERNAL, WL_REASON_INTERNAL, NULL, NULL);
        return;
    }
    *state = (call_state_t){.connect = connect};
    state->started = ex->started;
    ex->handler_state = state;
    ex->arena.limit = WL_RPC_ARENA_LIMIT;
    state->procedure = wl_rpc_procedures_find(&connect->procedures, ex->path);
    if (state->procedure == NULL) {
        /* Connect clients read 404 as unimplemented; the body says so too. */
        answer_error_status(ex, 404, WL_GRPC_UNIMPLEMENTED, WL_REASON_ENDPOINT_NOT_FOUND,
                            "no such procedure", NULL);
        return;
    }
    ex->route = state->procedure->path;
    const wl_service_entry_t *service = state->procedure->service;
    const wl_method_policy_t *policy =
        wl_core_method_policy(service, state->procedure->method_index);
    /* Connect's GET form is for unary procedures without side effects. */
    bool gettable = state->procedure->no_side_effects && !policy->server_streaming;
    state->get = gettable && strcmp(ex->method, "GET") == 0;
    if (!state->get && strcmp(ex->method, "POST") != 0) {
        wl_exchange_add_header(ex, "Allow", gettable ? "GET, POST" : "POST");
        answer_error_status(ex, 405, WL_GRPC_UNIMPLEMENTED, WL_REASON_METHOD_NOT_ALLOWED,
                            gettable ? "this procedure is called with GET or POST"
                                     : "this procedure is called with POST (GET only for "
                                       "procedures without side effects)",
                            NULL);
        return;
    }
    state->streaming = policy->server_streaming;
    state->content_type = "application/connect+json"; /* until the request's is read */
    /* A refused admission is answered before the headers are checked: its end-stream message
     * goes in the request's stream codec when it names one (a client refuses another). */
    if (state->streaming)
        (void)parse_stream_content_type(wl_exchange_header(ex, "Content-Type"), state);
    if (!authenticate(connect, ex, policy, state))
        return;
    /* Whatever is wrong with the request is answered once its admission let it in. */
    if (state->get ? !accept_query(connect, ex, state) : !accept_headers(connect, ex, state))
        return;
    if (deadline_passed(state)) {
        if (wl_access_admitted(&connect->access, ex))
            answer_deadline_exceeded(ex);
        return;
    }
    const char *length = wl_exchange_header(ex, "Content-Length");
    if (length != NULL && strtoull(length, NULL, 10) > WL_CONNECT_BODY_LIMIT) {
        if (wl_access_admitted(&connect->access, ex))
            answer_too_large(ex, false);
        return;
    }
    ex->body_limit = WL_CONNECT_BODY_LIMIT;
}

void wl_connect_body_too_large(wl_connect_t *connect, wl_exchange_t *ex)
{
    if (wl_access_admitted(&connect->access, ex))
        answer_too_large(ex, false);
}

/* --- The call ----------------------------------------------------------------------------- */

/* Takes the request's message out of the body: a stream's envelope off, gzip inflated under
 * the body limit (so that a small body cannot expand past what an uncoded one may be). */
static void read_message(wl_exchange_t *ex, call_state_t *state)
{
    const char *body = state->get ? state->query_message.base : ex->body;
    size_t len = state->get ? state->query_message.len : ex->body_len;
    if (body == NULL)
        body = "";
    bool coded = state->gzip_request;
    if (state->streaming) {
        /* One enveloped message: its flags, its length, the message. */
        const unsigned char *head = (const unsigned char *)body;
        size_t said = len >= WL_CONNECT_ENVELOPE ? (size_t)head[1] << 24 | (size_t)head[2] << 16 |
                                                       (size_t)head[3] << 8 | head[4]
                                                 : 0;
        if (len < WL_CONNECT_ENVELOPE || (head[0] & ~WL_CONNECT_FLAG_COMPRESSED) != 0 ||
            said != len - WL_CONNECT_ENVELOPE) {
            state->message_read = MESSAGE_INVALID;
            state->problem = "a stream's request is one enveloped message: flags 0 (or 1: "
                             "compressed), its length (4 bytes, big-endian), the message";
            return;
        }
        coded = (head[0] & WL_CONNECT_FLAG_COMPRESSED) != 0;
        if (coded && !state->gzip_request) {
            state->message_read = MESSAGE_INVALID;
            state->problem = "the request message is flagged compressed, but the request names "
                             "no Connect-Content-Encoding";
            return;
        }
        body += WL_CONNECT_ENVELOPE;
        len -= WL_CONNECT_ENVELOPE;
    }
    state->message = (wl_span_t){body, len};
    state->message_read = MESSAGE_READ;
    /* The protocol: zero-length content is never decompressed (it is the empty message). */
    if (!coded || len == 0)
        return;
    wl_error_t err;
    wl_error_init(&err);
    char *text = NULL;
    size_t text_len = 0;
    int rc = wl_gunzip_body(body, len, WL_CONNECT_BODY_LIMIT, &ex->arena, &text, &text_len, &err);
    state->message = (wl_span_t){text, text_len};
    if (rc == WL_EEXHAUSTED) {
        state->message_read = MESSAGE_TOO_LARGE;
    } else if (rc == WL_EINVAL) {
        state->message_read = MESSAGE_INVALID;
        state->problem = wl_arena_strdup(&ex->arena, err.message);
    } else if (rc != 0) {
        state->message_read = MESSAGE_NO_MEMORY;
    }
}

/* Answers a request whose message could not be read (an admitted one: the caller checks). */
static void answer_unread(wl_exchange_t *ex, const call_state_t *state)
{
    if (state->message_read == MESSAGE_TOO_LARGE)
        answer_too_large(ex, true);
    else if (state->message_read == MESSAGE_INVALID)
        answer_error(ex, WL_GRPC_INVALID_ARGUMENT, WL_REASON_INVALID_REQUEST, state->problem, NULL);
    else
        answer_error(ex, WL_GRPC_INTERNAL, WL_REASON_INTERNAL, NULL, NULL);
}

static int decode_request(wl_exchange_t *ex, const ProtobufCMessageDescriptor *desc,
                          ProtobufCMessage **input, wl_error_t *err, void *data)
{
    call_state_t *state = data;
    if (state->input != NULL) { /* decoded already (answer_unchanged) */
        *input = (ProtobufCMessage *)state->input;
        return 0;
    }
    const char *body = state->message.base ? state->message.base : "";
    int rc = state->codec == CODEC_JSON
                 ? wl_json_decode(desc, body, state->message.len, &ex->arena, input, err)
                 : wl_rpc_decode_binary(desc, body, state->message.len, &ex->arena, input, err);
    if (rc == 0)
        state->input = *input;
    return rc;
}

/* The reply in the request's codec, as the 200 answer; false when it cannot be sent. */
static bool answer_reply(wl_exchange_t *ex, const ProtobufCMessage *reply, void *data)
{
    const call_state_t *state = data;
    char *body;
    size_t body_len;
    if (state->codec == CODEC_JSON) {
        body = wl_json_encode_text(reply, &ex->arena, &body_len);
    } else {
        size_t packed_len = protobuf_c_message_get_packed_size(reply);
        body = wl_arena_alloc(&ex->arena, packed_len ? packed_len : 1);
        body_len = body ? protobuf_c_message_pack(reply, (uint8_t *)body) : 0;
    }
    if (body == NULL)
        return false;
    if (state->get) {
        char tag[128];
        bool versioned =
            wl_connect_get_version_tag(state->connect->core, state->procedure->path, &ex->principal,
                                       state->input, reply, tag, sizeof(tag));
        return wl_connect_get_answer(ex, state->content_type, body, body_len,
                                     versioned ? tag : NULL);
    }
    ex->status = 200;
    ex->content_type = state->content_type;
    ex->response = body;
    ex->response_len = body_len;
    wl_gzip_offer(ex, "Accept-Encoding", "Content-Encoding");
    return true;
}

/* The stream starts where the method's run said: its messages are made on request threads as
 * the client reads, gzip-coded when they are worth it and Connect-Accept-Encoding takes gzip. */
static bool start_stream(wl_exchange_t *ex, const ProtobufCMessage *start, void *data)
{
    const call_state_t *state = data;
    wl_connect_t *connect = state->connect;
    bool gzip = wl_negotiate_gzip(wl_exchange_header_list(ex, "Connect-Accept-Encoding"));
    wl_rpc_stream_wire_t wire = wl_connect_stream_wire(state->codec == CODEC_JSON, gzip);
    wl_generator_t *gen = wl_rpc_stream_create(state->procedure, connect->core, connect->watch,
                                               &ex->principal, start, &wire);
    if (gen == NULL)
        return false;
    if (gzip)
        wl_exchange_add_header(ex, "Connect-Content-Encoding", "gzip");
    wl_exchange_generate(ex, 200, state->content_type, gen, NULL, WL_GENERATOR_MORE);
    return true;
}

static bool call_expired(void *data)
{
    return deadline_passed(data);
}

static void answer_expired(wl_exchange_t *ex, void *data)
{
    (void)data;
    answer_deadline_exceeded(ex);
}

/*
 * A conditional GET of a procedure whose reply has a version: 304 from the version alone
 * while it has not moved, without running the call, as GET /api/v1/stock-export answers; on
 * libmicrohttpd's thread when the admission's group read the version, else on a request
 * thread. True when the request is answered, or goes on elsewhere (ex->stop); false when the
 * call is to run (the tag differs, or the request's own problems are the call's to answer).
 */
static bool answer_unchanged(wl_connect_t *connect, wl_exchange_t *ex, call_state_t *state)
{
    if (!wl_access_admitted(&connect->access, ex))
        return true;
    if (deadline_passed(state))
        return false;
    const wl_rpc_procedure_t *procedure = state->procedure;
    const ProtobufCMessageDescriptor *desc =
        procedure->service->descriptor->methods[procedure->method_index].input;
    ProtobufCMessage *input = NULL;
    wl_error_t err;
    wl_error_init(&err);
    char tag[128];
    if (decode_request(ex, desc, &input, &err, state) != 0)
        return false;
    wl_connect_tag_t read =
        wl_connect_get_current_tag(connect->core, procedure->path, ex->admission, &ex->principal,
                                   input, ex->may_wait, tag, sizeof(tag));
    if (read == WL_CONNECT_TAG_WAITS) {
        (void)wl_exchange_may_wait(ex); /* runs again on a request thread */
        return true;
    }
    if (read != WL_CONNECT_TAG_READ ||
        !wl_negotiate_none_match(wl_exchange_header_list(ex, "If-None-Match"), tag))
        return false;
    wl_connect_get_not_modified(ex, tag);
    return true;
}

void wl_connect_finish(wl_connect_t *connect, wl_exchange_t *ex)
{
    call_state_t *state = ex->handler_state;
    if (state->message_read == MESSAGE_UNREAD)
        read_message(ex, state);
    if (state->message_read != MESSAGE_READ) {
        if (wl_access_admitted(&connect->access, ex))
            answer_unread(ex, state);
        return;
    }
    if (state->get && wl_exchange_header(ex, "If-None-Match") != NULL &&
        wl_connect_get_versioned(state->procedure->path) && answer_unchanged(connect, ex, state))
        return;
    wl_unary_transport_t transport = {.access = &connect->access,
                                      .decode = decode_request,
                                      .reply = state->streaming ? start_stream : answer_reply,
                                      .expired = call_expired,
                                      .answer_expired = answer_expired,
                                      .reply_limit = WL_RPC_REPLY_LIMIT,
                                      .data = state};
    wl_unary_call(&transport, connect->core, ex, state->procedure->service,
                  state->procedure->method_index);
}

bool wl_connect_parse_timeout(const char *value, struct timespec start, struct timespec *deadline)
{
    return parse_timeout(value, start, deadline);
}
