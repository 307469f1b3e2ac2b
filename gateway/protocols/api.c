/* Mapping /api/v1 routes onto core service methods happens here. */
#include "protocols/api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <microhttpd.h>
#include <strings.h>

#include "protocols/access.h"
#include "http/anon_limit.h"
#include "protocols/device.h"
#include "export/export_stream.h"
#include "codec/json_codec.h"
#include "http/gzip_filter.h"
#include "http/negotiate.h"
#include "http/query.h"
#include "protocols/routes.h"
#include "protocols/unary.h"
#include "errors/status_map.h"

#define JSON_BODY_LIMIT (64u * 1024)
typedef struct {
    const wl_service_entry_t *service;
    unsigned method_index;
} route_target_t;

struct wl_api {
    wl_core_t *core;
    wl_export_cache_t *export_cache; /* the owner's (the server's); NULL: none */
    wl_access_t access;
    route_target_t *targets; /* by row of wl_routes; set for REST and device rows */
};

typedef struct {
    wl_route_match_t match;
    wl_query_t query;
    ProtobufCMessage *input; /* decoded when the call first ran (it may run again) */
    void *admitted;          /* a stream route's admit's answer, for its stream */
} request_state_t;

int wl_api_create(wl_core_t *core, wl_anon_limiter_t *anonymous, wl_export_cache_t *export_cache,
                  wl_api_t **out, wl_error_t *err)
{
    wl_api_t *api = calloc(1, sizeof(*api));
    if (api == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    api->core = core;
    api->export_cache = export_cache;
    api->access = (wl_access_t){core, anonymous, wl_exchange_error};
    api->targets = calloc(wl_route_count, sizeof(*api->targets));
    if (api->targets == NULL) {
        free(api);
        return wl_error_set(err, WL_ENOMEM, NULL);
    }
    for (size_t i = 0; i < wl_route_count; i++) {
        const wl_route_t *row = &wl_routes[i];
        if (row->kind != WL_ROUTE_REST && row->kind != WL_ROUTE_DEVICE)
            continue;
        const wl_service_entry_t *service = wl_core_find_service(core, row->service);
        const ProtobufCMethodDescriptor *method =
            service
                ? protobuf_c_service_descriptor_get_method_by_name(service->descriptor, row->rpc)
                : NULL;
        if (method == NULL) {
            wl_api_destroy(api);
            return wl_error_set(err, WL_EINTERNAL, "route %s %s names an unknown method %s/%s",
                                row->method, row->pattern, row->service, row->rpc);
        }
        api->targets[i].service = service;
        api->targets[i].method_index = (unsigned)(method - service->descriptor->methods);
    }
    *out = api;
    return 0;
}

void wl_api_destroy(wl_api_t *api)
{
    if (api == NULL)
        return;
    free(api->targets);
    free(api);
}

size_t wl_api_routes(const char *const **methods, const char *const **patterns)
{
    static const char *method_list[16];
    static const char *pattern_list[16];
    size_t count = 0;
    for (size_t i = 0; i < wl_route_count && count < 16; i++) {
        if (wl_routes[i].kind != WL_ROUTE_REST && wl_routes[i].kind != WL_ROUTE_DEVICE)
            continue;
        method_list[count] = wl_routes[i].method;
        pattern_list[count++] = wl_routes[i].pattern;
    }
    *methods = method_list;
    *patterns = pattern_list;
    return count;
}

/* Reads the request's credential and starts its admission; answers 400, 401, or a refusal
 * decided at once. The admission of a method that admits with its work waits for it. */
static bool authenticate(wl_api_t *api, wl_exchange_t *ex, const wl_route_t *route,
                         const wl_method_policy_t *policy, request_state_t *state)
{
    size_t query_keys = route->query_api_key ? wl_query_count(&state->query, "api_key") : 0;
    if (query_keys > 1) {
        wl_exchange_error(ex, 400, WL_GRPC_INVALID_ARGUMENT, WL_REASON_API_KEY_AMBIGUOUS,
                          "api_key must be given once", NULL);
        return false;
    }
    wl_span_t token;
    if (!wl_access_read_key(&api->access, ex,
                            query_keys == 1 ? wl_query_get(&state->query, "api_key") : NULL,
                            &token))
        return false;
    if (ex->admission == NULL && route->admit != NULL) {
        ex->admission = wl_core_admission(api->core, &ex->arena, token, policy);
        if (ex->admission != NULL)
            state->admitted = route->admit(api->core, api->export_cache, ex);
    }
    return wl_access_begin(&api->access, ex, token, policy, route->device == NULL);
}

/* Answers a problem of the request itself, once its admission (which answers first) let it in. */
static void refuse(wl_api_t *api, wl_exchange_t *ex, unsigned status, wl_reason_t reason,
                   const char *message)
{
    if (wl_access_admitted(&api->access, ex))
        wl_exchange_error(ex, status, WL_GRPC_INVALID_ARGUMENT, reason, message, NULL);
}

void wl_api_begin(wl_api_t *api, wl_exchange_t *ex, const wl_route_match_t *match)
{
    const request_state_t *earlier = ex->handler_state; /* its first run's, when run again */
    request_state_t *state = wl_arena_alloc(&ex->arena, sizeof(*state));
    if (state == NULL) {
        wl_exchange_error(ex, 500, WL_GRPC_INTERNAL, WL_REASON_INTERNAL, NULL, NULL);
        return;
    }
    ex->handler_state = state;
    state->match = *match;
    /* What the admission started then was asked for (authenticate). */
    state->admitted = earlier != NULL ? earlier->admitted : NULL;
    const wl_route_t *route = match->route;
    ex->route = route->pattern;

    wl_error_t err;
    wl_error_init(&err);
    if (wl_query_parse(ex->query, &ex->arena, &state->query, &err) != 0) {
        wl_exchange_core_error(ex, &err);
        return;
    }
    const route_target_t *target = &api->targets[match->index];
    const wl_method_policy_t *policy = wl_core_method_policy(target->service, target->method_index);
    if (!authenticate(api, ex, route, policy, state))
        return;
    if (route->device != NULL) {
        wl_device_accept(ex); /* 415, 413, or the body limit */
        return;
    }
    if (!route->json_body) {
        wl_api_finish(api, ex);
        return;
    }
    if (wl_negotiate_content_type(wl_exchange_header(ex, "Content-Type"), NULL) != WL_MEDIA_JSON) {
        refuse(api, ex, 415, WL_REASON_UNSUPPORTED_MEDIA_TYPE,
               "Content-Type must be application/json (charset utf-8)");
        return;
    }
    const char *length = wl_exchange_header(ex, "Content-Length");
    if (length != NULL && strtoull(length, NULL, 10) > JSON_BODY_LIMIT) {
        refuse(api, ex, 413, WL_REASON_BODY_TOO_LARGE, "request body is larger than 65536 bytes");
        return;
    }
    ex->body_limit = JSON_BODY_LIMIT;
}

static int bind_path_params(const request_state_t *state, ProtobufCMessage *input, wl_error_t *err)
{
    const wl_route_match_t *match = &state->match;
    for (size_t i = 0; i < match->param_count; i++) {
        const ProtobufCFieldDescriptor *field = protobuf_c_message_descriptor_get_field_by_name(
            input->descriptor, match->params[i].field);
        if (field == NULL || field->type != PROTOBUF_C_TYPE_STRING)
            return wl_error_set(err, WL_EINTERNAL, "route binds an unknown field");
        if (memchr(match->params[i].value.base, '\0', match->params[i].value.len) != NULL)
            return wl_error_set(err, WL_ENOTFOUND, "not found");
        *(const char **)((char *)input + field->offset) = match->params[i].value.base;
    }
    return 0;
}

static const char *reply_id(const ProtobufCMessage *reply)
{
    const ProtobufCFieldDescriptor *field =
        protobuf_c_message_descriptor_get_field_by_name(reply->descriptor, "id");
    if (field == NULL || field->type != PROTOBUF_C_TYPE_STRING)
        return NULL;
    return *(const char *const *)((const char *)reply + field->offset);
}

/* The request message of a REST or device route: decoded from the body (or made empty), then
 * bound from the path and the query; kept for a run again after the admission. */
static int decode_route(wl_exchange_t *ex, const ProtobufCMessageDescriptor *desc,
                        ProtobufCMessage **input, wl_error_t *err, void *data)
{
    (void)data;
    request_state_t *state = ex->handler_state;
    const wl_route_t *route = state->match.route;
    if (state->input != NULL) {
        *input = state->input;
        return 0;
    }
    int rc = 0;
    ProtobufCMessage *message = NULL;
    if (route->device != NULL) {
        rc = route->device->decode(wl_span(ex->body ? ex->body : "", ex->body_len), &ex->arena,
                                   &message, err);
    } else if (route->json_body) {
        rc =
            wl_json_decode(desc, ex->body ? ex->body : "", ex->body_len, &ex->arena, &message, err);
    } else {
        message = wl_arena_alloc(&ex->arena, desc->sizeof_message);
        if (message == NULL)
            rc = wl_error_set(err, WL_ENOMEM, NULL);
        else
            desc->message_init(message);
    }
    if (rc == 0)
        rc = bind_path_params(state, message, err);
    if (rc == 0 && route->bind_query)
        rc = wl_query_bind(&state->query, message, route->query_mode, &ex->arena, err);
    if (rc == 0)
        state->input = *input = message;
    return rc;
}

/* The route's answer: the device encoding, or JSON with the route's status (and Location). */
static bool reply_route(wl_exchange_t *ex, const ProtobufCMessage *reply, void *data)
{
    (void)data;
    request_state_t *state = ex->handler_state;
    const wl_route_t *route = state->match.route;
    if (route->device != NULL) {
        wl_error_t err;
        wl_error_init(&err);
        if (route->device->encode(reply, ex, &err) == 0)
            return true;
        wl_exchange_core_error(ex, &err);
        return true;
    }
    const char *id = route->location ? reply_id(reply) : NULL;
    if (id != NULL) {
        char *location = wl_arena_printf(&ex->arena, "%s%s", route->location, id);
        if (location != NULL)
            wl_exchange_add_header(ex, "Location", location);
    }
    size_t len = 0;
    char *text = wl_json_encode_text(reply, &ex->arena, &len);
    wl_exchange_json_text(ex, route->success_status, text, len);
    if (ex->status == route->success_status)
        wl_gzip_offer(ex, "Accept-Encoding", "Content-Encoding");
    return true;
}

static void answer_route_error(wl_exchange_t *ex, const wl_error_t *err, void *data)
{
    (void)data;
    wl_exchange_core_error(ex, err);
}

void wl_api_finish(wl_api_t *api, wl_exchange_t *ex)
{
    request_state_t *state = ex->handler_state;
    const wl_route_t *route = state->match.route;
    if (route->stream != NULL) {
        route->stream(api->core, api->export_cache, ex, state->admitted);
        return;
    }
    const route_target_t *target = &api->targets[state->match.index];
    wl_unary_transport_t transport = {.access = &api->access,
                                      .decode = decode_route,
                                      .reply = reply_route,
                                      .answer_error = answer_route_error};
    wl_unary_call(&transport, api->core, ex, target->service, target->method_index);
}

void wl_api_body_too_large(wl_api_t *api, wl_exchange_t *ex)
{
    refuse(api, ex, 413, WL_REASON_BODY_TOO_LARGE, "request body is larger than the limit");
}
