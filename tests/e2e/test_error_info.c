/*
 * The google.rpc.ErrorInfo of every error answer, one representative of each
 * error class on REST and on Connect side by side: the same case carries the same reason on
 * both, in the domain walklist.dev, with the metadata the table of docs/api.md promises, while the
 * HTTP status and code follow each protocol (REST: the gRPC code name of the standard mapping, e.g.
 * 413 INVALID_ARGUMENT; Connect: its own table, e.g. 413 resource_exhausted). gRPC's side is
 * e2e.grpc_python's.
 */
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"

#define JSON "application/json"

static service_t service;
static PGconn *db;
static char key_all[WL_KEY_TOKEN_SIZE], key_lists[WL_KEY_TOKEN_SIZE];
static char key_limited[WL_KEY_TOKEN_SIZE];

/* A Connect call (JSON codec) with a Bearer key (NULL: none) and extra header lines. */
static http_response_t connect_call(uint16_t port, const char *procedure, const char *key,
                                    const char *body, const char *extra)
{
    char target[256], headers[1024];
    snprintf(target, sizeof(target), "/walklist.v1.%s", procedure);
    snprintf(headers, sizeof(headers), "%s%s%sContent-Type: " JSON "\r\n%s",
             key ? "Authorization: Bearer " : "", key ? key : "", key ? "\r\n" : "",
             extra ? extra : "Connect-Protocol-Version: 1\r\n");
    http_response_t res;
    if (http_request(port, "POST", target, headers, body, strlen(body), &res) != 0)
        FAIL("POST %s failed", target);
    return res;
}

static http_response_t rest(uint16_t port, const char *method, const char *target, const char *key,
                            const char *body)
{
    return e2e_request(port, method, target, key, body ? JSON : NULL, body);
}

#define CHECK_CONNECT(res, http_status, code)                                                      \
    do {                                                                                           \
        CHECK_INT((res).status, http_status);                                                      \
        CHECK_STR(e2e_str((res).json, "code", NULL), code);                                        \
    } while (0)

static void test_keys(void)
{
    /* No key, and another scheme than Bearer: API_KEY_MISSING. */
    http_response_t res = rest(service.port, "GET", "/api/v1/stock", NULL, NULL);
    CHECK_ERROR(res, 401, "UNAUTHENTICATED", NULL);
    CHECK_REASON(res, "API_KEY_MISSING");
    http_response_free(&res);
    res = connect_call(service.port, "StockService/ListStock", NULL, "{}", NULL);
    CHECK_CONNECT(res, 401, "unauthenticated");
    CHECK_CONNECT_REASON(res, "API_KEY_MISSING", NULL, NULL);
    http_response_free(&res);

    /* An unknown key: API_KEY_INVALID. */
    const char *unknown = "wlk_nothing0_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
    res = rest(service.port, "GET", "/api/v1/stock", unknown, NULL);
    CHECK_ERROR(res, 401, "UNAUTHENTICATED", NULL);
    CHECK_REASON(res, "API_KEY_INVALID");
    http_response_free(&res);
    res = connect_call(service.port, "StockService/ListStock", unknown, "{}", NULL);
    CHECK_CONNECT(res, 401, "unauthenticated");
    CHECK_CONNECT_REASON(res, "API_KEY_INVALID", NULL, NULL);
    http_response_free(&res);

    /* Both the header and api_key (REST only: Connect reads no api_key). */
    char target[256];
    snprintf(target, sizeof(target), "/api/v1/locate-lists?name=x&codes=A&api_key=%s", key_all);
    res = rest(service.port, "GET", target, key_all, NULL);
    CHECK_ERROR(res, 400, "INVALID_ARGUMENT", NULL);
    CHECK_REASON(res, "API_KEY_AMBIGUOUS");
    http_response_free(&res);

    /* A scope the key lacks: SCOPE_MISSING naming it. */
    res = rest(service.port, "GET", "/api/v1/stock", key_lists, NULL);
    CHECK_ERROR(res, 403, "PERMISSION_DENIED", NULL);
    CHECK_REASON(res, "SCOPE_MISSING");
    CHECK_STR(e2e_reason_metadata(&res, "scope"), "stock:read");
    http_response_free(&res);
    res = connect_call(service.port, "StockService/ListStock", key_lists, "{}", NULL);
    CHECK_CONNECT(res, 403, "permission_denied");
    CHECK_CONNECT_REASON(res, "SCOPE_MISSING", "scope", "stock:read");
    http_response_free(&res);
}

/* A full bucket: RATE_LIMITED with the bucket, its limit and window (--rate-limit-stock-export
 * 1: the second export of the organization within the minute). */
static void test_rate_limited(void)
{
    http_response_t res = rest(service.port, "GET", "/api/v1/stock-export", key_limited, NULL);
    CHECK_INT(res.status, 200);
    http_response_free(&res);
    res = rest(service.port, "GET", "/api/v1/stock-export", key_limited, NULL);
    CHECK_ERROR(res, 429, "RESOURCE_EXHAUSTED", NULL);
    CHECK_REASON(res, "RATE_LIMITED");
    CHECK_STR(e2e_reason_metadata(&res, "bucket"), "stock-export");
    CHECK_STR(e2e_reason_metadata(&res, "limit"), "1");
    CHECK_STR(e2e_reason_metadata(&res, "windowSeconds"), "60");
    http_response_free(&res);
    res = connect_call(service.port, "StockService/ExportStock", key_limited, "{}", NULL);
    CHECK_CONNECT(res, 429, "resource_exhausted");
    CHECK_CONNECT_REASON(res, "RATE_LIMITED", "bucket", "stock-export");
    http_response_free(&res);
}

/* What the request itself gets wrong. */
static void test_request(void)
{
    /* A body over the limit: BODY_TOO_LARGE, 413 on both, INVALID_ARGUMENT on REST (413 is an
     * invalid argument there) and resource_exhausted on Connect (its protocol). */
    const char *too_large = "Content-Length: 99999999\r\n";
    char request[1024];
    int len = snprintf(request, sizeof(request),
                       "POST /api/v1/locate-lists HTTP/1.1\r\nHost: localhost\r\n"
                       "Authorization: Bearer %s\r\nContent-Type: " JSON "\r\n%s"
                       "Connection: close\r\n\r\n",
                       key_all, too_large);
    http_response_t res;
    CHECK_INT(http_raw(service.port, request, (size_t)len, &res), 0);
    CHECK_ERROR(res, 413, "INVALID_ARGUMENT", NULL);
    CHECK_REASON(res, "BODY_TOO_LARGE");
    http_response_free(&res);
    len = snprintf(request, sizeof(request),
                   "POST /walklist.v1.StockService/ListStock HTTP/1.1\r\nHost: localhost\r\n"
                   "Authorization: Bearer %s\r\nContent-Type: " JSON "\r\n"
                   "Connect-Protocol-Version: 1\r\n%sConnection: close\r\n\r\n",
                   key_all, too_large);
    CHECK_INT(http_raw(service.port, request, (size_t)len, &res), 0);
    CHECK_CONNECT(res, 413, "resource_exhausted");
    CHECK_CONNECT_REASON(res, "BODY_TOO_LARGE", NULL, NULL);
    http_response_free(&res);

    /* Another Content-Type: UNSUPPORTED_MEDIA_TYPE, 415 on both. */
    res = e2e_request(service.port, "POST", "/api/v1/locate-lists", key_all, "text/plain", "x");
    CHECK_ERROR(res, 415, "INVALID_ARGUMENT", NULL);
    CHECK_REASON(res, "UNSUPPORTED_MEDIA_TYPE");
    http_response_free(&res);
    char headers[256];
    snprintf(headers, sizeof(headers),
             "Authorization: Bearer %s\r\nContent-Type: text/plain\r\n"
             "Connect-Protocol-Version: 1\r\n",
             key_all);
    CHECK_INT(http_request(service.port, "POST", "/walklist.v1.StockService/ListStock", headers,
                           "x", 1, &res),
              0);
    CHECK_CONNECT(res, 415, "invalid_argument");
    CHECK_CONNECT_REASON(res, "UNSUPPORTED_MEDIA_TYPE", NULL, NULL);
    http_response_free(&res);

    /* Invalid content: INVALID_REQUEST after the BadRequest, which stays first. */
    const char *invalid = "{\"name\":\"\",\"codes\":[\"A\"]}";
    res = rest(service.port, "POST", "/api/v1/locate-lists", key_all, invalid);
    CHECK_ERROR(res, 400, "INVALID_ARGUMENT", "name");
    CHECK_REASON(res, "INVALID_REQUEST");
    CHECK_STR(
        e2e_str(json_array_get(json_object_get(json_object_get(res.json, "error"), "details"), 0),
                "@type", NULL),
        "type.googleapis.com/google.rpc.BadRequest");
    http_response_free(&res);
    res = connect_call(service.port, "LocateListService/CreateLocateList", key_all, invalid, NULL);
    CHECK_CONNECT(res, 400, "invalid_argument");
    CHECK_CONNECT_REASON(res, "INVALID_REQUEST", NULL, NULL);
    CHECK_STR(e2e_str(json_array_get(json_object_get(res.json, "details"), 0), "type", NULL),
              "google.rpc.BadRequest");
    http_response_free(&res);

    /* A protocol header of Connect's: PROTOCOL_HEADER_INVALID. */
    res = connect_call(service.port, "StockService/ListStock", key_all, "{}",
                       "Connect-Protocol-Version: 2\r\n");
    CHECK_CONNECT(res, 400, "invalid_argument");
    CHECK_CONNECT_REASON(res, "PROTOCOL_HEADER_INVALID", NULL, NULL);
    http_response_free(&res);

    /* A deadline passed: DEADLINE_EXCEEDED (Connect only). */
    res = connect_call(service.port, "StockService/ListStock", key_all, "{}",
                       "Connect-Protocol-Version: 1\r\nConnect-Timeout-Ms: 0\r\n");
    CHECK_CONNECT(res, 504, "deadline_exceeded");
    CHECK_CONNECT_REASON(res, "DEADLINE_EXCEEDED", NULL, NULL);
    http_response_free(&res);
}

/* Paths, methods and resources. */
static void test_not_found(void)
{
    http_response_t res = rest(service.port, "GET", "/api/v1/nothing", key_all, NULL);
    CHECK_ERROR(res, 404, "NOT_FOUND", NULL);
    CHECK_REASON(res, "ENDPOINT_NOT_FOUND");
    http_response_free(&res);
    res = connect_call(service.port, "StockService/Nothing", key_all, "{}", NULL);
    CHECK_CONNECT(res, 404, "unimplemented");
    CHECK_CONNECT_REASON(res, "ENDPOINT_NOT_FOUND", NULL, NULL);
    http_response_free(&res);

    res = rest(service.port, "DELETE", "/api/v1/stock", key_all, NULL);
    CHECK_ERROR(res, 405, "UNIMPLEMENTED", NULL);
    CHECK_REASON(res, "METHOD_NOT_ALLOWED");
    http_response_free(&res);
    CHECK_INT(
        http_request(service.port, "PUT", "/walklist.v1.StockService/ListStock", "", NULL, 0, &res),
        0);
    CHECK_CONNECT(res, 405, "unimplemented");
    CHECK_CONNECT_REASON(res, "METHOD_NOT_ALLOWED", NULL, NULL);
    http_response_free(&res);

    /* An id that names nothing: NOT_FOUND. */
    res = rest(service.port, "GET", "/api/v1/locate-lists/AAAAAAAAAAAAAAAAAAAAAA", key_all, NULL);
    CHECK_ERROR(res, 404, "NOT_FOUND", NULL);
    CHECK_REASON(res, "NOT_FOUND");
    http_response_free(&res);
    res = connect_call(service.port, "LocateListService/GetLocateList", key_all,
                       "{\"id\":\"AAAAAAAAAAAAAAAAAAAAAA\"}", NULL);
    CHECK_CONNECT(res, 404, "not_found");
    CHECK_CONNECT_REASON(res, "NOT_FOUND", NULL, NULL);
    http_response_free(&res);
}

/* An Idempotency-Key sent again with another request: IDEMPOTENCY_KEY_REUSED, 422 on REST
 * (same key, other list) and failed_precondition (400) on Connect. */
static void test_idempotency_key_reused(void)
{
    const char *first = "{\"name\":\"Once\",\"codes\":[\"A\"]}";
    const char *other = "{\"name\":\"Other\",\"codes\":[\"B\"]}";
    char headers[256];
    snprintf(headers, sizeof(headers),
             "Authorization: Bearer %s\r\nContent-Type: " JSON "\r\nIdempotency-Key: reused-1\r\n",
             key_all);
    http_response_t res;
    CHECK_INT(http_request(service.port, "POST", "/api/v1/locate-lists", headers, first,
                           strlen(first), &res),
              0);
    CHECK_INT(res.status, 201);
    http_response_free(&res);
    CHECK_INT(http_request(service.port, "POST", "/api/v1/locate-lists", headers, other,
                           strlen(other), &res),
              0);
    CHECK_ERROR(res, 422, "FAILED_PRECONDITION", NULL);
    CHECK_REASON(res, "IDEMPOTENCY_KEY_REUSED");
    http_response_free(&res);
    res = connect_call(service.port, "LocateListService/CreateLocateList", key_all, other,
                       "Connect-Protocol-Version: 1\r\nIdempotency-Key: reused-1\r\n");
    CHECK_CONNECT(res, 400, "failed_precondition");
    CHECK_CONNECT_REASON(res, "IDEMPOTENCY_KEY_REUSED", NULL, NULL);
    http_response_free(&res);
}

/* Requests without a valid key past the per-address limit: RATE_LIMITED in the bucket
 * "anonymous". Sent until refused (the earlier ones of this test counted too). */
static void test_anonymous_rate_limited(void)
{
    http_response_t res = {0};
    for (int i = 0; i < 100; i++) {
        http_response_free(&res);
        res = rest(service.port, "GET", "/api/v1/stock", NULL, NULL);
        if (res.status == 429)
            break;
    }
    CHECK_ERROR(res, 429, "RESOURCE_EXHAUSTED", NULL);
    CHECK_REASON(res, "RATE_LIMITED");
    CHECK_STR(e2e_reason_metadata(&res, "bucket"), "anonymous");
    http_response_free(&res);
    res = connect_call(service.port, "StockService/ListStock", NULL, "{}", NULL);
    CHECK_CONNECT(res, 429, "resource_exhausted");
    CHECK_CONNECT_REASON(res, "RATE_LIMITED", "bucket", "anonymous");
    http_response_free(&res);
}

/* A database that cannot be reached: DATABASE_UNAVAILABLE, 503 with Retry-After on both. */
static void test_database_unavailable(void)
{
    char url[128];
    service_unreachable_database(url, sizeof(url));
    service_t down;
    service_start(&down, url, NULL);
    http_response_t res = rest(down.port, "GET", "/api/v1/stock", key_all, NULL);
    CHECK_ERROR(res, 503, "UNAVAILABLE", NULL);
    CHECK_REASON(res, "DATABASE_UNAVAILABLE");
    http_response_free(&res);
    res = connect_call(down.port, "StockService/ListStock", key_all, "{}", NULL);
    CHECK_CONNECT(res, 503, "unavailable");
    CHECK_CONNECT_REASON(res, "DATABASE_UNAVAILABLE", NULL, NULL);
    http_response_free(&res);
    res = rest(down.port, "GET", "/readyz", NULL, NULL);
    CHECK_ERROR(res, 503, "UNAVAILABLE", NULL);
    CHECK_REASON(res, "DATABASE_UNAVAILABLE");
    http_response_free(&res);
    CHECK_INT(service_stop(&down), 0);
}

int main(void)
{
    const char *conninfo = testdb_create("e2e_error_info");
    db = testdb_connect(conninfo);
    int64_t org = fixture_org(db, "reasons");
    int64_t limited_org = fixture_org(db, "reasons-limited");
    fixture_key(db, org, "lists:write,stock:read,scanner,inventory:write", key_all);
    fixture_key(db, org, "lists:write", key_lists);
    fixture_key(db, limited_org, "stock:read", key_limited);
    const char *args[] = {"--rate-limit-stock-export", "1", "--rate-limit-anonymous", "20", NULL};
    service_start(&service, conninfo, args);

    test_keys();
    test_rate_limited();
    test_request();
    test_not_found();
    test_idempotency_key_reused();
    test_anonymous_rate_limited();
    test_database_unavailable();

    CHECK_INT(service_stop(&service), 0);
    PQfinish(db);
    return test_exit();
}
