/* Serving the core's services over the Connect protocol (unary, HTTP/1.1) happens here. */
#include "connect.h"

#include <microhttpd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "access.h"
#include "api.h"
#include "google/rpc/error_details.pb-c.h"
#include "json_codec.h"
#include "negotiate.h"
#include "proto_strings.h"
#include "status_map.h"
#include "walklist/base64.h"

/* Everything one Connect request allocates: the decoded request, the reply message and its
 * encoding. A reply of WL_CONNECT_REPLY_LIMIT takes about 20 MiB of it; a reply that would need
 * more than this is refused as resource_exhausted while it is being built. */
#define CONNECT_ARENA_LIMIT (64u * 1024 * 1024)
/* A pending admission waits for the method (and its body) only for bodies this small. */
#define CONNECT_DEFER_BODY_LIMIT (64u * 1024)
#define ACCEPT_POST              "application/proto, application/json, application/json; charset=utf-8"

typedef struct {
    char *path; /* "/walklist.v1.StockService/ExportStock" */
    size_t path_len;
    const wl_service_entry_t *service;
    unsigned method_index;
} procedure_t;

static void answer_error_status(wl_exchange_t *ex, unsigned status, wl_grpc_code_t code,
                                const char *message, const wl_error_t *err);

struct wl_connect {
    wl_core_t *core;
    wl_anon_limiter_t *anonymous; /* not owned */
    wl_access_t access;
    procedure_t *procedures;
    size_t procedure_count;
};

typedef enum { CODEC_PROTO, CODEC_JSON } codec_t;

typedef struct {
    const procedure_t *procedure;
    codec_t codec;
    const char *content_type; /* the request's, in canonical spelling, for the reply */
    struct timespec started;  /* CLOCK_MONOTONIC, when the request headers were in */
    bool has_deadline;
    struct timespec deadline; /* CLOCK_MONOTONIC */
} call_state_t;

int wl_connect_create(wl_core_t *core, wl_anon_limiter_t *anonymous, wl_connect_t **out,
                      wl_error_t *err)
{
    wl_connect_t *connect = calloc(1, sizeof(*connect));
    if (connect == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    connect->core = core;
    connect->anonymous = anonymous;
    connect->access = (wl_access_t){core, anonymous, answer_error_status};
    const wl_service_entry_t *services;
    size_t service_count = wl_core_services(core, &services);
    size_t total = 0;
    for (size_t i = 0; i < service_count; i++)
        total += services[i].descriptor->n_methods;
    connect->procedures = calloc(total ? total : 1, sizeof(*connect->procedures));
    if (connect->procedures == NULL) {
        free(connect);
        return wl_error_set(err, WL_ENOMEM, NULL);
    }
    for (size_t i = 0; i < service_count; i++) {
        const ProtobufCServiceDescriptor *desc = services[i].descriptor;
        for (unsigned m = 0; m < desc->n_methods; m++) {
            procedure_t *procedure = &connect->procedures[connect->procedure_count];
            size_t len = 1 + strlen(desc->name) + 1 + strlen(desc->methods[m].name);
            procedure->path = malloc(len + 1);
            if (procedure->path == NULL) {
                wl_connect_destroy(connect);
                return wl_error_set(err, WL_ENOMEM, NULL);
            }
            snprintf(procedure->path, len + 1, "/%s/%s", desc->name, desc->methods[m].name);
            procedure->path_len = len;
            procedure->service = &services[i];
            procedure->method_index = m;
            connect->procedure_count++;
        }
    }
    *out = connect;
    return 0;
}

void wl_connect_destroy(wl_connect_t *connect)
{
    if (connect == NULL)
        return;
    for (size_t i = 0; i < connect->procedure_count; i++)
        free(connect->procedures[i].path);
    free(connect->procedures);
    free(connect);
}

/* --- Answers ------------------------------------------------------------------------------ */

/*
 * The field violations as a Connect error detail: google.rpc.BadRequest in binary, base64
 * without padding, under "value", and the same message as JSON under "debug", which the
 * protocol allows for readability (clients must not depend on it).
 */
static json_t *bad_request_detail(wl_arena_t *arena, const wl_error_t *err)
{
    Google__Rpc__BadRequest request = GOOGLE__RPC__BAD_REQUEST__INIT;
    Google__Rpc__BadRequest__FieldViolation violations[WL_MAX_VIOLATIONS];
    Google__Rpc__BadRequest__FieldViolation *pointers[WL_MAX_VIOLATIONS];
    size_t count =
        err->violation_count < WL_MAX_VIOLATIONS ? err->violation_count : WL_MAX_VIOLATIONS;
    for (size_t i = 0; i < count; i++) {
        google__rpc__bad_request__field_violation__init(&violations[i]);
        violations[i].field = (char *)err->violations[i].field;
        violations[i].description = (char *)err->violations[i].description;
        pointers[i] = &violations[i];
    }
    request.n_field_violations = count;
    request.field_violations = pointers;
    size_t packed_len = google__rpc__bad_request__get_packed_size(&request);
    uint8_t *packed = wl_arena_alloc(arena, packed_len ? packed_len : 1);
    char *encoded = wl_arena_alloc(arena, 4 * (packed_len / 3 + 1) + 1);
    if (packed == NULL || encoded == NULL)
        return NULL;
    google__rpc__bad_request__pack(&request, packed);
    wl_base64_encode(packed, packed_len, WL_BASE64_STANDARD, false, encoded);
    return json_pack("{s:s, s:s, s:o*}", "type", request.base.descriptor->name, "value", encoded,
                     "debug", wl_json_encode(&request.base));
}

/* Connect's Error: {"code","message","details"} with Content-Type application/json. */
static void answer_error_status(wl_exchange_t *ex, unsigned status, wl_grpc_code_t code,
                                const char *message, const wl_error_t *err)
{
    /* Internal errors never show internals. */
    if (code == WL_GRPC_INTERNAL || code == WL_GRPC_UNKNOWN || code == WL_GRPC_DATA_LOSS)
        message = "internal error";
    else if (message == NULL && err != NULL && err->message[0] != '\0')
        message = err->message;
    json_t *body = json_pack("{s:s, s:s}", "code", wl_grpc_connect_name(code), "message",
                             message ? message : wl_grpc_connect_name(code));
    if (body != NULL && err != NULL && err->violation_count > 0) {
        json_t *detail = bad_request_detail(&ex->arena, err);
        if (detail != NULL)
            json_object_set_new(body, "details", json_pack("[o]", detail));
    }
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(body);
    ex->content_type = "application/json";
    ex->status = status;
    ex->response = text ? wl_arena_strdup(&ex->arena, text) : NULL;
    free(text);
    if (ex->response == NULL) {
        static const char fallback[] = "{\"code\":\"internal\",\"message\":\"internal error\"}";
        ex->status = 500;
        ex->response = (char *)fallback;
    }
    ex->response_len = strlen(ex->response);
}

static void answer_error(wl_exchange_t *ex, wl_grpc_code_t code, const char *message,
                         const wl_error_t *err)
{
    answer_error_status(ex, wl_http_status_of(code), code, message, err);
}

static void answer_core_error(wl_exchange_t *ex, const wl_error_t *err)
{
    wl_grpc_code_t code = wl_error_grpc_code(err->code);
    if (code == WL_GRPC_UNAVAILABLE)
        wl_exchange_add_header(ex, "Retry-After", "1");
    answer_error(ex, code, NULL, err);
}

static void answer_too_large(wl_exchange_t *ex, unsigned status, const char *what, size_t limit,
                             const char *hint)
{
    char message[256];
    snprintf(message, sizeof(message), "the %s is larger than %zu bytes%s", what, limit, hint);
    answer_error_status(ex, status, WL_GRPC_RESOURCE_EXHAUSTED, message, NULL);
}

/* --- Request headers ---------------------------------------------------------------------- */

static const procedure_t *find_procedure(const wl_connect_t *connect, wl_span_t path)
{
    for (size_t i = 0; i < connect->procedure_count; i++) {
        const procedure_t *procedure = &connect->procedures[i];
        if (wl_span_eq(path, wl_span(procedure->path, procedure->path_len)))
            return procedure;
    }
    return NULL;
}

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
    answer_error(ex, WL_GRPC_DEADLINE_EXCEEDED, "the deadline (Connect-Timeout-Ms) has passed",
                 NULL);
}

/* Reads the Bearer key and starts the request's admission, as the REST routes do. */
static bool authenticate(wl_connect_t *connect, wl_exchange_t *ex, const wl_method_policy_t *policy)
{
    wl_span_t token;
    if (!wl_access_read_key(&connect->access, ex, NULL, &token))
        return false;
    /* Only a small body is read before a pending admission is decided. */
    const char *length = wl_exchange_header(ex, "Content-Length");
    bool small = length != NULL && strtoull(length, NULL, 10) <= CONNECT_DEFER_BODY_LIMIT;
    return wl_access_begin(&connect->access, ex, token, policy, small);
}

/* The protocol headers, in the order a Connect server meets them: codec, version, coding,
 * timeout. Answers and returns false at the first one refused. */
static bool accept_headers(wl_connect_t *connect, wl_exchange_t *ex, call_state_t *state)
{
    if (!parse_content_type(wl_exchange_header(ex, "Content-Type"), state)) {
        if (!wl_access_admitted(&connect->access, ex))
            return false;
        wl_exchange_add_header(ex, "Accept-Post", ACCEPT_POST);
        answer_error_status(ex, 415, WL_GRPC_INVALID_ARGUMENT,
                            "Content-Type must be application/proto or application/json", NULL);
        return false;
    }
    const char *version = wl_exchange_header(ex, "Connect-Protocol-Version");
    if (version == NULL) {
        if (!wl_access_admitted(&connect->access, ex))
            return false;
        answer_error(ex, WL_GRPC_INVALID_ARGUMENT,
                     "missing required header: set Connect-Protocol-Version to \"1\"", NULL);
        return false;
    }
    if (strcmp(version, "1") != 0) {
        if (!wl_access_admitted(&connect->access, ex))
            return false;
        answer_error(ex, WL_GRPC_INVALID_ARGUMENT, "Connect-Protocol-Version must be \"1\"", NULL);
        return false;
    }
    const char *coding = wl_exchange_header(ex, "Content-Encoding");
    if (coding != NULL && strcasecmp(coding, "identity") != 0) {
        if (!wl_access_admitted(&connect->access, ex))
            return false;
        answer_error(ex, WL_GRPC_UNIMPLEMENTED,
                     "unsupported Content-Encoding: this server supports identity", NULL);
        return false;
    }
    const char *timeout = wl_exchange_header(ex, "Connect-Timeout-Ms");
    if (timeout != NULL) {
        if (!parse_timeout(timeout, state->started, &state->deadline)) {
            if (!wl_access_admitted(&connect->access, ex))
                return false;
            answer_error(ex, WL_GRPC_INVALID_ARGUMENT,
                         "Connect-Timeout-Ms must be a whole number of milliseconds (at most 10 "
                         "digits)",
                         NULL);
            return false;
        }
        state->has_deadline = true;
    }
    return true;
}

void wl_connect_begin(wl_connect_t *connect, wl_exchange_t *ex)
{
    call_state_t *state = wl_arena_alloc(&ex->arena, sizeof(*state));
    if (state == NULL) {
        answer_error(ex, WL_GRPC_INTERNAL, NULL, NULL);
        return;
    }
    state->started = ex->started;
    ex->handler_state = state;
    ex->arena.limit = CONNECT_ARENA_LIMIT;
    state->procedure = find_procedure(connect, ex->path);
    if (state->procedure == NULL) {
        /* Connect clients read 404 as unimplemented; the body says so too. */
        answer_error_status(ex, 404, WL_GRPC_UNIMPLEMENTED, "no such procedure", NULL);
        return;
    }
    ex->route = state->procedure->path;
    if (strcmp(ex->method, "POST") != 0) {
        wl_exchange_add_header(ex, "Allow", "POST");
        answer_error_status(ex, 405, WL_GRPC_UNIMPLEMENTED,
                            "Connect procedures are called with POST", NULL);
        return;
    }
    const wl_service_entry_t *service = state->procedure->service;
    const wl_method_policy_t *policy =
        wl_core_method_policy(service, state->procedure->method_index);
    if (!authenticate(connect, ex, policy))
        return;
    /* Whatever is wrong with the request is answered once its admission let it in. */
    if (!accept_headers(connect, ex, state))
        return;
    if (deadline_passed(state)) {
        if (wl_access_admitted(&connect->access, ex))
            answer_deadline_exceeded(ex);
        return;
    }
    const char *length = wl_exchange_header(ex, "Content-Length");
    if (length != NULL && strtoull(length, NULL, 10) > WL_CONNECT_BODY_LIMIT) {
        if (wl_access_admitted(&connect->access, ex))
            answer_too_large(ex, 413, "request body", WL_CONNECT_BODY_LIMIT, "");
        return;
    }
    ex->body_limit = WL_CONNECT_BODY_LIMIT;
}

void wl_connect_body_too_large(wl_connect_t *connect, wl_exchange_t *ex)
{
    if (wl_access_admitted(&connect->access, ex))
        answer_too_large(ex, 413, "request body", WL_CONNECT_BODY_LIMIT, "");
}

/* --- The call ----------------------------------------------------------------------------- */

static int decode_request(const call_state_t *state, wl_exchange_t *ex,
                          const ProtobufCMessageDescriptor *desc, ProtobufCMessage **input,
                          wl_error_t *err)
{
    const char *body = ex->body ? ex->body : "";
    if (state->codec == CODEC_JSON)
        return wl_json_decode(desc, body, ex->body_len, &ex->arena, input, err);
    /* protobuf-c would cut a string at a NUL byte and pass invalid UTF-8 on. */
    if (wl_proto_check_strings(desc, (const uint8_t *)body, ex->body_len, err) != 0)
        return WL_EINVAL;
    *input =
        protobuf_c_message_unpack(desc, &ex->arena.allocator, ex->body_len, (const uint8_t *)body);
    if (*input == NULL)
        return wl_error_set(err, WL_EINVAL, "the body is not a valid %s message", desc->name);
    return 0;
}

/* The reply in the request's codec, as the 200 answer; false when it cannot be sent. */
static bool answer_reply(wl_exchange_t *ex, const call_state_t *state,
                         const ProtobufCMessage *reply)
{
    size_t packed_len = protobuf_c_message_get_packed_size(reply);
    if (packed_len > WL_CONNECT_REPLY_LIMIT) {
        answer_too_large(ex, 429, "reply", WL_CONNECT_REPLY_LIMIT,
                         ", the most a unary Connect call returns (GET /api/v1/stock-export "
                         "streams the stock export at any size)");
        return true;
    }
    char *body;
    size_t body_len;
    if (state->codec == CODEC_JSON) {
        body = wl_json_encode_text(reply, &ex->arena, &body_len);
    } else {
        body = wl_arena_alloc(&ex->arena, packed_len ? packed_len : 1);
        body_len = body ? protobuf_c_message_pack(reply, (uint8_t *)body) : 0;
    }
    if (body == NULL)
        return false;
    ex->status = 200;
    ex->content_type = state->content_type;
    ex->response = body;
    ex->response_len = body_len;
    return true;
}

void wl_connect_finish(wl_connect_t *connect, wl_exchange_t *ex)
{
    if (!wl_exchange_may_wait(ex))
        return;
    const call_state_t *state = ex->handler_state;
    const wl_service_entry_t *service = state->procedure->service;
    unsigned method_index = state->procedure->method_index;
    wl_error_t err;
    wl_error_init(&err);

    ProtobufCMessage *input = NULL;
    int rc =
        decode_request(state, ex, service->descriptor->methods[method_index].input, &input, &err);
    if (rc == 0 && deadline_passed(state)) {
        if (wl_access_admitted(&connect->access, ex))
            answer_deadline_exceeded(ex);
        return;
    }
    wl_call_t call = {.core = connect->core,
                      .arena = &ex->arena,
                      .admission = ex->admission,
                      .err = &err,
                      .idempotency_key = wl_exchange_header(ex, "Idempotency-Key")};
    if (rc == 0)
        rc = wl_core_invoke(&call, service, method_index, input);
    /* A refused admission answers first (also when the body could not be decoded). */
    if (!wl_access_admitted(&connect->access, ex))
        return;
    bool answered = rc == 0 && !deadline_passed(state) && answer_reply(ex, state, call.reply);
    if (ex->arena.limit_reached) {
        /* The reply is dropped; the few bytes of the error answer may still come from the arena. */
        ex->arena.limit += 64 * 1024;
        answered = false;
    }
    if (answered) {
        if (call.replayed && ex->status == 200)
            wl_exchange_add_header(ex, "Idempotent-Replayed", "true");
        return;
    }
    if (deadline_passed(state)) {
        /* The client has given up by now, whatever the method did. */
        answer_deadline_exceeded(ex);
        return;
    }
    if (ex->arena.limit_reached) {
        char message[128];
        snprintf(message, sizeof(message),
                 "the reply needs more than the %u MiB a unary Connect call may use",
                 CONNECT_ARENA_LIMIT / (1024 * 1024));
        answer_error(ex, WL_GRPC_RESOURCE_EXHAUSTED, message, NULL);
        return;
    }
    if (rc == 0)
        wl_error_set(&err, WL_ENOMEM, NULL);
    answer_core_error(ex, &err);
}

bool wl_connect_parse_timeout(const char *value, struct timespec start, struct timespec *deadline)
{
    return parse_timeout(value, start, deadline);
}
