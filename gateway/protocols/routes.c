/* The table of every path walklistd serves, and finding a request's row in it, happen here. */
#include "protocols/routes.h"

#include <stdio.h>
#include <string.h>

#include "export/export_stream.h"

#define LOCATE_LISTS "walklist.v1.LocateListService"
#define STOCK        "walklist.v1.StockService"
#define SCANNER      "walklist.v1.ScannerService"

const wl_route_t wl_routes[] = {
    /* Operations. */
    {.kind = WL_ROUTE_OPS, .method = "GET", .pattern = "/healthz", .ops = WL_OPS_HEALTHZ},
    {.kind = WL_ROUTE_OPS, .method = "GET", .pattern = "/readyz", .ops = WL_OPS_READYZ},
    {.kind = WL_ROUTE_OPS, .method = "GET", .pattern = "/metrics", .ops = WL_OPS_METRICS},
    {.kind = WL_ROUTE_OPS,
     .method = "GET",
     .pattern = "/api/v1/openapi.json",
     .cors = true,
     .ops = WL_OPS_OPENAPI},
    /* The public REST surface (gateway/openapi.json). */
    {.kind = WL_ROUTE_REST,
     .cors = true,
     .method = "POST",
     .pattern = "/api/v1/locate-lists",
     .service = LOCATE_LISTS,
     .rpc = "CreateLocateList",
     .json_body = true,
     .success_status = 201,
     .location = "/api/v1/locate-lists/"},
    {.kind = WL_ROUTE_REST,
     .cors = true,
     .method = "GET",
     .pattern = "/api/v1/locate-lists",
     .service = LOCATE_LISTS,
     .rpc = "CreateLocateList",
     .query_api_key = true,
     .bind_query = true,
     .query_mode = WL_QUERY_SPLIT_LISTS,
     .success_status = 201,
     .location = "/api/v1/locate-lists/"},
    {.kind = WL_ROUTE_REST,
     .cors = true,
     .method = "GET",
     .pattern = "/api/v1/locate-lists/{id}",
     .service = LOCATE_LISTS,
     .rpc = "GetLocateList",
     .success_status = 200},
    {.kind = WL_ROUTE_REST,
     .cors = true,
     .method = "GET",
     .pattern = "/api/v1/stock-export",
     .service = STOCK,
     .rpc = "ExportStock",
     .success_status = 200,
     .stream = wl_export_stream_respond,
     .admit = wl_export_stream_admit},
    {.kind = WL_ROUTE_REST,
     .cors = true,
     .method = "GET",
     .pattern = "/api/v1/stock",
     .service = STOCK,
     .rpc = "ListStock",
     .bind_query = true,
     .success_status = 200},
    /* The device transport (nanopb payloads, application/proto), before the RPC prefix that
     * also covers it. */
    {.kind = WL_ROUTE_DEVICE,
     .method = "POST",
     .pattern = "/walklist.scanner.v1.DeviceService/ListPending",
     .service = SCANNER,
     .rpc = "ListPendingLists",
     .success_status = 200,
     .device = &wl_device_list_pending},
    {.kind = WL_ROUTE_DEVICE,
     .method = "POST",
     .pattern = "/walklist.scanner.v1.DeviceService/LoadList",
     .service = SCANNER,
     .rpc = "LoadLocateList",
     .success_status = 200,
     .device = &wl_device_load_list},
    {.kind = WL_ROUTE_NONE, .pattern = "/walklist.scanner.v1.DeviceService/", .prefix = true},
    /* Connect: /<package>.<Service>/<Method> of every core service. */
    {.kind = WL_ROUTE_RPC, .pattern = "/walklist.", .prefix = true, .cors = true},
};

const size_t wl_route_count = sizeof(wl_routes) / sizeof(wl_routes[0]);

/* Matches a raw path against a pattern, decoding "{field}" segments into the match's params. */
static bool match_pattern(const char *pattern, wl_span_t path, wl_arena_t *arena,
                          wl_route_match_t *match)
{
    match->param_count = 0;
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
            if (send == si || match->param_count == WL_ROUTE_PARAMS_MAX)
                return false;
            size_t n = match->param_count++;
            match->params[n].field = wl_arena_strndup(arena, pattern + pi + 1, pend - pi - 2);
            if (match->params[n].field == NULL ||
                wl_query_unescape(wl_span(path.base + si, send - si), false, arena,
                                  &match->params[n].value) != 0)
                return false;
        } else if (pend - pi != send - si || memcmp(pattern + pi, path.base + si, pend - pi) != 0) {
            return false;
        }
        pi = pend;
        si = send;
    }
    return pi == plen && si == path.len;
}

static bool matches(const wl_route_t *route, wl_span_t path, wl_arena_t *arena,
                    wl_route_match_t *match)
{
    if (route->prefix) {
        size_t len = strlen(route->pattern);
        return path.len >= len && memcmp(path.base, route->pattern, len) == 0;
    }
    return match_pattern(route->pattern, path, arena, match);
}

static void allow_add(char allow[64], const char *method)
{
    if (strstr(allow, method) != NULL)
        return;
    size_t used = strlen(allow);
    snprintf(allow + used, 64 - used, "%s%s", used ? ", " : "", method);
}

bool wl_routes_find(const char *method, wl_span_t path, wl_arena_t *arena, wl_route_match_t *match,
                    char allow[64])
{
    allow[0] = '\0';
    for (size_t i = 0; i < wl_route_count; i++) {
        const wl_route_t *route = &wl_routes[i];
        if ((route->prefix && allow[0] != '\0') || !matches(route, path, arena, match))
            continue;
        if (route->kind == WL_ROUTE_NONE)
            return false;
        /* RFC 9110 9.3.2: HEAD is GET without the content, on every GET row. */
        bool serves_get = route->method != NULL && strcmp(route->method, "GET") == 0;
        if (route->method == NULL || strcmp(route->method, method) == 0 ||
            (serves_get && strcmp(method, "HEAD") == 0)) {
            match->route = route;
            match->index = i;
            return true;
        }
        allow_add(allow, route->method);
        if (serves_get)
            allow_add(allow, "HEAD");
    }
    return false;
}

bool wl_routes_cors(wl_span_t path, wl_arena_t *arena, char methods[64], const char **pattern)
{
    methods[0] = '\0';
    *pattern = NULL;
    wl_route_match_t match;
    bool matched = false; /* a row took the path: prefix rows no longer count, as in find */
    for (size_t i = 0; i < wl_route_count; i++) {
        const wl_route_t *route = &wl_routes[i];
        if ((route->prefix && matched) || !matches(route, path, arena, &match))
            continue;
        if (route->kind == WL_ROUTE_NONE)
            break;
        matched = true;
        if (!route->cors)
            continue;
        if (*pattern == NULL)
            *pattern = route->pattern;
        /* Connect procedures are called with POST (connect.h). */
        allow_add(methods, route->method != NULL ? route->method : "POST");
        if (route->method != NULL && strcmp(route->method, "GET") == 0)
            allow_add(methods, "HEAD");
    }
    return *pattern != NULL;
}
