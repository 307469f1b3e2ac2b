/* Mapping /api/v1 routes onto core service methods happens here. */
#include "api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <microhttpd.h>
#include <strings.h>

#include "access.h"
#include "anon_limit.h"
#include "device.h"
#include "export_stream.h"
#include "json_codec.h"
#include "query.h"
#include "status_map.h"

#define JSON_BODY_LIMIT (64u * 1024)
#define MAX_PATH_PARAMS 4

typedef struct {
    const char *method;
    const char *pattern; /* "{field}" segments bind a string field of the request */
    const char *service;
    const char *rpc;
    bool json_body;     /* the request message is the JSON body */
    bool query_api_key; /* api_key may authenticate (CONTRACT section 7) */
    bool bind_query;    /* query parameters set request fields */
    wl_query_mode_t query_mode;
    unsigned success_status;
    const char *location; /* Location: this prefix + the reply's id */
    /* Answers instead of invoking rpc, for a body streamed from the core (the rpc row
     * still names the method, for its scope and rate bucket). */
    void (*stream)(wl_core_t *core, wl_exchange_t *ex);
    /* A device route: nanopb request and response (application/proto) instead of JSON. */
    const wl_device_codec_t *device;
} route_t;

/* The public REST surface. Adding an endpoint means adding a row. */
static const route_t routes[] = {
    {"POST", "/api/v1/locate-lists", "walklist.v1.LocateListService", "CreateLocateList", true,
     false, false, WL_QUERY_PLAIN, 201, "/api/v1/locate-lists/"},
    {"GET", "/api/v1/locate-lists", "walklist.v1.LocateListService", "CreateLocateList", false,
     true, true, WL_QUERY_SPLIT_LISTS, 201, "/api/v1/locate-lists/"},
    {"GET", "/api/v1/locate-lists/{id}", "walklist.v1.LocateListService", "GetLocateList", false,
     false, false, WL_QUERY_PLAIN, 200, NULL},
    {"GET", "/api/v1/stock-export", "walklist.v1.StockService", "ExportStock", false, false, false,
     WL_QUERY_PLAIN, 200, NULL, wl_export_stream_respond},
    {"GET", "/api/v1/stock", "walklist.v1.StockService", "ListStock", false, false, true,
     WL_QUERY_PLAIN, 200, NULL},
    /* The device transport (CONTRACT section 9). */
    {"POST", "/walklist.scanner.v1.DeviceService/ListPending", "walklist.v1.ScannerService",
     "ListPendingLists", .success_status = 200, .device = &wl_device_list_pending},
    {"POST", "/walklist.scanner.v1.DeviceService/LoadList", "walklist.v1.ScannerService",
     "LoadLocateList", .success_status = 200, .device = &wl_device_load_list},
};
#define ROUTE_COUNT (sizeof(routes) / sizeof(routes[0]))

typedef struct {
    const wl_service_entry_t *service;
    unsigned method_index;
} route_target_t;

struct wl_api {
    wl_core_t *core;
    wl_anon_limiter_t *anonymous; /* requests without a valid key, per address */
    wl_access_t access;
    route_target_t targets[ROUTE_COUNT];
};

typedef struct {
    const char *field;
    wl_span_t value; /* decoded, arena memory */
} path_param_t;

typedef struct {
    size_t route;
    path_param_t params[MAX_PATH_PARAMS];
    size_t param_count;
    wl_query_t query;
} request_state_t;

int wl_api_create(wl_core_t *core, int anonymous_limit, wl_api_t **out, wl_error_t *err)
{
    wl_api_t *api = calloc(1, sizeof(*api));
    if (api == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    api->core = core;
    api->anonymous = wl_anon_limiter_create(anonymous_limit, 60);
    if (api->anonymous == NULL) {
        free(api);
        return wl_error_set(err, WL_ENOMEM, NULL);
    }
    api->access = (wl_access_t){core, api->anonymous, wl_exchange_error};
    for (size_t i = 0; i < ROUTE_COUNT; i++) {
        const wl_service_entry_t *service = wl_core_find_service(core, routes[i].service);
        const ProtobufCMethodDescriptor *method =
            service ? protobuf_c_service_descriptor_get_method_by_name(service->descriptor,
                                                                       routes[i].rpc)
                    : NULL;
        if (method == NULL) {
            wl_api_destroy(api);
            return wl_error_set(err, WL_EINTERNAL, "route %s %s names an unknown method %s/%s",
                                routes[i].method, routes[i].pattern, routes[i].service,
                                routes[i].rpc);
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
    wl_anon_limiter_destroy(api->anonymous);
    free(api);
}

size_t wl_api_routes(const char *const **methods, const char *const **patterns)
{
    static const char *method_list[ROUTE_COUNT];
    static const char *pattern_list[ROUTE_COUNT];
    for (size_t i = 0; i < ROUTE_COUNT; i++) {
        method_list[i] = routes[i].method;
        pattern_list[i] = routes[i].pattern;
    }
    *methods = method_list;
    *patterns = pattern_list;
    return ROUTE_COUNT;
}

/* Matches a raw path against a pattern, decoding "{field}" segments into params. */
static bool match_path(const char *pattern, wl_span_t path, wl_arena_t *arena,
                       request_state_t *state)
{
    state->param_count = 0;
    size_t pi = 0, si = 0;
    size_t plen = strlen(pattern);
    while (pi < plen && si < path.len) {
        if (pattern[pi] != '/' || path.base[si] != '/')
            return false;
        pi++;
        si++;
        size_t pend = pi, send = si;
        while (pend < plen && pattern[pend] != '/')
            pend++;
        while (send < path.len && path.base[send] != '/')
            send++;
        if (pattern[pi] == '{') {
            if (send == si || state->param_count == MAX_PATH_PARAMS)
                return false;
            path_param_t *param = &state->params[state->param_count++];
            param->field = wl_arena_strndup(arena, pattern + pi + 1, pend - pi - 2);
            if (param->field == NULL || wl_query_unescape(wl_span(path.base + si, send - si), false,
                                                          arena, &param->value) != 0)
                return false;
        } else if (pend - pi != send - si || memcmp(pattern + pi, path.base + si, pend - pi) != 0) {
            return false;
        }
        pi = pend;
        si = send;
    }
    return pi == plen && si == path.len;
}

/* Finds the route; answers 404 or 405 (with Allow) when there is none. */
static bool route_request(wl_exchange_t *ex, request_state_t *state)
{
    char allow[128] = "";
    for (size_t i = 0; i < ROUTE_COUNT; i++) {
        if (!match_path(routes[i].pattern, ex->path, &ex->arena, state))
            continue;
        if (strcmp(routes[i].method, ex->method) == 0) {
            state->route = i;
            return true;
        }
        if (strstr(allow, routes[i].method) == NULL) {
            size_t used = strlen(allow);
            snprintf(allow + used, sizeof(allow) - used, "%s%s", used ? ", " : "",
                     routes[i].method);
        }
    }
    if (allow[0] != '\0') {
        wl_exchange_add_header(ex, "Allow", allow);
        wl_exchange_error(ex, 405, WL_GRPC_UNIMPLEMENTED, "method not allowed", NULL);
    } else {
        wl_exchange_error(ex, 404, WL_GRPC_NOT_FOUND, "no such endpoint", NULL);
    }
    return false;
}

/* Extracts the credential of "Authorization: Bearer <token>". */
static bool bearer_token(const char *header, wl_span_t *token)
{
    while (*header == ' ' || *header == '\t')
        header++;
    if (strncasecmp(header, "Bearer", 6) != 0 || (header[6] != ' ' && header[6] != '\t'))
        return false;
    const char *start = header + 6;
    while (*start == ' ' || *start == '\t')
        start++;
    size_t len = strcspn(start, " \t");
    const char *rest = start + len;
    while (*rest == ' ' || *rest == '\t')
        rest++;
    if (len == 0 || *rest != '\0')
        return false;
    *token = wl_span(start, len);
    return true;
}

/* Reads the request's credential and starts its admission; answers 400, 401, or a refusal
 * decided at once. The admission of a method that admits with its work waits for it. */
static bool authenticate(wl_api_t *api, wl_exchange_t *ex, const route_t *route,
                         const wl_method_policy_t *policy, request_state_t *state)
{
    const char *header = wl_exchange_header(ex, "Authorization");
    size_t query_keys = route->query_api_key ? wl_query_count(&state->query, "api_key") : 0;
    if (header != NULL && query_keys > 0) {
        wl_exchange_error(ex, 400, WL_GRPC_INVALID_ARGUMENT,
                          "send the API key in the Authorization header or in api_key, not both",
                          NULL);
        return false;
    }
    if (query_keys > 1) {
        wl_exchange_error(ex, 400, WL_GRPC_INVALID_ARGUMENT, "api_key must be given once", NULL);
        return false;
    }
    wl_span_t token;
    if (query_keys == 1) {
        token = *wl_query_get(&state->query, "api_key");
    } else if (header == NULL) {
        wl_access_unauthenticated(&api->access, ex, false, "missing API key");
        return false;
    } else if (!bearer_token(header, &token)) {
        /* A Bearer credential of the wrong shape was still a key sent; another scheme was not. */
        bool bearer = strncasecmp(header + strspn(header, " \t"), "Bearer", 6) == 0;
        wl_access_unauthenticated(&api->access, ex, bearer,
                                  "the Authorization header must be 'Bearer <API key>'");
        return false;
    }
    return wl_access_begin(&api->access, ex, token, policy, route->device == NULL);
}

/* Answers a problem of the request itself, once its admission (which answers first) let it in. */
static void refuse(wl_api_t *api, wl_exchange_t *ex, unsigned status, const char *message)
{
    if (wl_access_admitted(&api->access, ex))
        wl_exchange_error(ex, status, WL_GRPC_INVALID_ARGUMENT, message, NULL);
}

/* application/json with an optional charset, which must be UTF-8. */
static bool is_json_content_type(const char *value)
{
    if (value == NULL)
        return false;
    while (*value == ' ')
        value++;
    static const char json[] = "application/json";
    if (strncasecmp(value, json, sizeof(json) - 1) != 0)
        return false;
    const char *rest = value + sizeof(json) - 1;
    while (*rest == ' ')
        rest++;
    if (*rest == '\0')
        return true;
    if (*rest != ';')
        return false;
    rest++;
    while (*rest == ' ')
        rest++;
    if (strncasecmp(rest, "charset=", 8) != 0)
        return false;
    rest += 8;
    if (*rest == '"')
        rest++;
    return strncasecmp(rest, "utf-8", 5) == 0 &&
           (rest[5] == '\0' || rest[5] == '"' || rest[5] == ' ' || rest[5] == ';');
}

void wl_api_begin(wl_api_t *api, wl_exchange_t *ex)
{
    request_state_t *state = wl_arena_alloc(&ex->arena, sizeof(*state));
    if (state == NULL) {
        wl_exchange_error(ex, 500, WL_GRPC_INTERNAL, NULL, NULL);
        return;
    }
    ex->handler_state = state;
    if (!route_request(ex, state))
        return;
    const route_t *route = &routes[state->route];
    ex->route = route->pattern;

    wl_error_t err;
    wl_error_init(&err);
    if (wl_query_parse(ex->query, &ex->arena, &state->query, &err) != 0) {
        wl_exchange_core_error(ex, &err);
        return;
    }
    const route_target_t *target = &api->targets[state->route];
    const wl_method_policy_t *policy = &target->service->policies[target->method_index];
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
    if (!is_json_content_type(wl_exchange_header(ex, "Content-Type"))) {
        refuse(api, ex, 415, "Content-Type must be application/json (charset utf-8)");
        return;
    }
    const char *length = wl_exchange_header(ex, "Content-Length");
    if (length != NULL && strtoull(length, NULL, 10) > JSON_BODY_LIMIT) {
        refuse(api, ex, 413, "request body is larger than 65536 bytes");
        return;
    }
    ex->body_limit = JSON_BODY_LIMIT;
}

static int bind_path_params(const request_state_t *state, ProtobufCMessage *input, wl_error_t *err)
{
    for (size_t i = 0; i < state->param_count; i++) {
        const ProtobufCFieldDescriptor *field = protobuf_c_message_descriptor_get_field_by_name(
            input->descriptor, state->params[i].field);
        if (field == NULL || field->type != PROTOBUF_C_TYPE_STRING)
            return wl_error_set(err, WL_EINTERNAL, "route binds an unknown field");
        if (memchr(state->params[i].value.base, '\0', state->params[i].value.len) != NULL)
            return wl_error_set(err, WL_ENOTFOUND, "not found");
        *(const char **)((char *)input + field->offset) = state->params[i].value.base;
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

void wl_api_finish(wl_api_t *api, wl_exchange_t *ex)
{
    request_state_t *state = ex->handler_state;
    const route_t *route = &routes[state->route];
    if (route->stream != NULL) {
        route->stream(api->core, ex);
        return;
    }
    const route_target_t *target = &api->targets[state->route];
    const ProtobufCMessageDescriptor *input_desc =
        target->service->descriptor->methods[target->method_index].input;
    wl_error_t err;
    wl_error_init(&err);

    ProtobufCMessage *input = NULL;
    int rc = 0;
    if (route->device != NULL) {
        rc = route->device->decode(wl_span(ex->body ? ex->body : "", ex->body_len), &ex->arena,
                                   &input, &err);
    } else if (route->json_body) {
        rc = wl_json_decode(input_desc, ex->body ? ex->body : "", ex->body_len, &ex->arena, &input,
                            &err);
    } else {
        input = wl_arena_alloc(&ex->arena, input_desc->sizeof_message);
        if (input == NULL)
            rc = wl_error_set(&err, WL_ENOMEM, NULL);
        else
            input_desc->message_init(input);
    }
    if (rc == 0)
        rc = bind_path_params(state, input, &err);
    if (rc == 0 && route->bind_query)
        rc = wl_query_bind(&state->query, input, route->query_mode, &ex->arena, &err);
    if (rc == 0) {
        wl_call_t call = {.core = api->core,
                          .arena = &ex->arena,
                          .admission = ex->admission,
                          .err = &err,
                          .idempotency_key = wl_exchange_header(ex, "Idempotency-Key")};
        rc = wl_core_invoke(&call, target->service, target->method_index, input);
        if (!wl_access_admitted(&api->access, ex))
            return;
        if (rc == 0 && route->device != NULL) {
            rc = route->device->encode(call.reply, ex, &err);
            if (rc == 0)
                return;
        } else if (rc == 0) {
            const char *id = route->location ? reply_id(call.reply) : NULL;
            if (id != NULL) {
                char *location = wl_arena_printf(&ex->arena, "%s%s", route->location, id);
                if (location != NULL)
                    wl_exchange_add_header(ex, "Location", location);
            }
            if (call.replayed)
                wl_exchange_add_header(ex, "Idempotent-Replayed", "true");
            wl_exchange_json(ex, route->success_status, wl_json_encode(call.reply));
            return;
        }
    }
    if (wl_access_admitted(&api->access, ex))
        wl_exchange_core_error(ex, &err);
}

void wl_api_body_too_large(wl_api_t *api, wl_exchange_t *ex)
{
    refuse(api, ex, 413, "request body is larger than the limit");
}

bool wl_api_bearer_token(const char *header, wl_span_t *token)
{
    return bearer_token(header, token);
}

wl_anon_limiter_t *wl_api_anonymous_limiter(wl_api_t *api)
{
    return api->anonymous;
}
