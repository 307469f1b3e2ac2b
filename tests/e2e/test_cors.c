/*
 * CORS (docs/api.md, "CORS") over raw HTTP against real walklistd processes: off by
 * default; with --cors-origin, preflights of the REST and Connect paths from an allowed origin
 * answered 204 before any key, permit or database; nothing for another origin, the device
 * transport or the operations endpoints; the exposed headers on a 201, a 304, a 429 and an
 * error; "*"; and values of --cors-origin (or WALKLIST_CORS_ORIGIN) that are not origins
 * refused at startup.
 */
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"

#define APP   "https://app.example.com"
#define LOCAL "http://localhost:3000"

static const char *conninfo;
static char key[WL_KEY_TOKEN_SIZE], key_limited[WL_KEY_TOKEN_SIZE];

static const char *header_of(const http_response_t *res, const char *name)
{
    static char value[8][1024];
    static int next;
    char *buf = value[next++ % 8];
    return http_header(res, name, buf, 1024);
}

/* A request with Origin (NULL: none), a Bearer key (NULL: none) and more header lines. */
static http_response_t request(uint16_t port, const char *method, const char *target,
                               const char *origin, const char *token, const char *extra,
                               const char *body)
{
    char headers[1024];
    snprintf(headers, sizeof(headers), "%s%s%s%s%s%s%s", origin ? "Origin: " : "",
             origin ? origin : "", origin ? "\r\n" : "", token ? "Authorization: Bearer " : "",
             token ? token : "", token ? "\r\n" : "", extra ? extra : "");
    http_response_t res;
    if (http_request(port, method, target, headers, body, body ? strlen(body) : 0, &res) != 0)
        FAIL("%s %s failed", method, target);
    return res;
}

static http_response_t preflight(uint16_t port, const char *target, const char *origin,
                                 const char *method)
{
    char extra[256];
    snprintf(extra, sizeof(extra),
             "Access-Control-Request-Method: %s\r\n"
             "Access-Control-Request-Headers: authorization, content-type\r\n",
             method);
    return request(port, "OPTIONS", target, origin, NULL, extra, NULL);
}

/* No Access-Control-* header at all. */
static void check_no_cors(const http_response_t *res, int line)
{
    const char *names[] = {"Access-Control-Allow-Origin", "Access-Control-Allow-Methods",
                           "Access-Control-Allow-Headers", "Access-Control-Max-Age",
                           "Access-Control-Expose-Headers"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (header_of(res, names[i]) != NULL)
            FAIL("line %d: %s in an answer that should have no CORS header (%d)", line, names[i],
                 res->status);
    }
}
#define CHECK_NO_CORS(res) check_no_cors(&(res), __LINE__)

/* An actual answer to an allowed origin: Allow-Origin, Vary and every exposed header. */
static void check_actual(const http_response_t *res, const char *allow_origin, int line)
{
    const char *allowed = header_of(res, "Access-Control-Allow-Origin");
    if (allowed == NULL || strcmp(allowed, allow_origin) != 0)
        FAIL("line %d: Access-Control-Allow-Origin is %s, expected %s", line,
             allowed ? allowed : "(none)", allow_origin);
    const char *vary = header_of(res, "Vary");
    if (vary == NULL || strstr(vary, "Origin") == NULL)
        FAIL("line %d: no Vary: Origin", line);
    const char *exposed = header_of(res, "Access-Control-Expose-Headers");
    const char *names[] = {"RateLimit-Limit",
                           "RateLimit-Remaining",
                           "RateLimit-Reset",
                           "RateLimit-Policy",
                           "RateLimit,",
                           "Retry-After",
                           "ETag",
                           "Location",
                           "X-Request-Id",
                           "Idempotent-Replayed",
                           "WWW-Authenticate"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (exposed == NULL || strstr(exposed, names[i]) == NULL)
            FAIL("line %d: %s not exposed: %s", line, names[i], exposed ? exposed : "(none)");
    }
}
#define CHECK_ACTUAL(res, origin) check_actual(&(res), origin, __LINE__)

static int remaining(const http_response_t *res)
{
    const char *value = header_of(res, "RateLimit-Remaining");
    return value ? atoi(value) : -1;
}

/* Without --cors-origin: OPTIONS is 405 as before, and no answer has a CORS header. */
static void test_off_by_default(void)
{
    service_t service;
    service_start(&service, conninfo, NULL);
    http_response_t res = preflight(service.port, "/api/v1/stock", APP, "GET");
    CHECK_ERROR(res, 405, "UNIMPLEMENTED", NULL);
    CHECK_NO_CORS(res);
    CHECK(header_of(&res, "Vary") == NULL);
    http_response_free(&res);
    res = request(service.port, "GET", "/api/v1/stock", APP, key, NULL, NULL);
    CHECK_INT(res.status, 200);
    CHECK_NO_CORS(res);
    http_response_free(&res);
    CHECK_INT(service_stop(&service), 0);
}

static void test_preflights(uint16_t port)
{
    /* REST: 204, the path's methods, the headers a client sends, before any key. */
    http_response_t res = preflight(port, "/api/v1/locate-lists", APP, "POST");
    CHECK_INT(res.status, 204);
    CHECK_STR(header_of(&res, "Access-Control-Allow-Origin"), APP);
    CHECK_STR(header_of(&res, "Access-Control-Allow-Methods"), "POST, GET, HEAD");
    const char *allowed = header_of(&res, "Access-Control-Allow-Headers");
    const char *needed[] = {
        "Authorization", "Content-Type", "Idempotency-Key",          "If-None-Match",
        "X-Request-Id",  "traceparent",  "Connect-Protocol-Version", "Connect-Timeout-Ms"};
    for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
        if (allowed == NULL || strstr(allowed, needed[i]) == NULL)
            FAIL("%s not allowed: %s", needed[i], allowed ? allowed : "(none)");
    }
    CHECK_STR(header_of(&res, "Access-Control-Max-Age"), "7200");
    CHECK_STR(header_of(&res, "Vary"), "Origin");
    CHECK(header_of(&res, "WWW-Authenticate") == NULL);
    CHECK(header_of(&res, "Content-Length") == NULL); /* RFC 9110 8.6: none on a 204 */
    http_response_free(&res);

    res = preflight(port, "/api/v1/locate-lists/AAAAAAAAAAAAAAAAAAAAAA", LOCAL, "GET");
    CHECK_INT(res.status, 204);
    CHECK_STR(header_of(&res, "Access-Control-Allow-Origin"), LOCAL);
    CHECK_STR(header_of(&res, "Access-Control-Allow-Methods"), "GET, HEAD");
    http_response_free(&res);

    /* Connect: POST. */
    res = preflight(port, "/walklist.v1.StockService/ListStock", APP, "POST");
    CHECK_INT(res.status, 204);
    CHECK_STR(header_of(&res, "Access-Control-Allow-Origin"), APP);
    CHECK_STR(header_of(&res, "Access-Control-Allow-Methods"), "POST");
    http_response_free(&res);

    /* Not the device transport nor the operations endpoints: routed as before. */
    res = preflight(port, "/walklist.scanner.v1.DeviceService/ListPending", APP, "POST");
    CHECK_ERROR(res, 405, "UNIMPLEMENTED", NULL);
    CHECK_NO_CORS(res);
    http_response_free(&res);
    res = preflight(port, "/healthz", APP, "GET");
    CHECK_ERROR(res, 405, "UNIMPLEMENTED", NULL);
    CHECK_NO_CORS(res);
    http_response_free(&res);
    res = request(port, "GET", "/metrics", APP, NULL, NULL, NULL);
    CHECK_INT(res.status, 200);
    CHECK_NO_CORS(res);
    http_response_free(&res);

    /* Another origin: no CORS header, OPTIONS routed as before; Vary still says Origin. */
    res = preflight(port, "/api/v1/locate-lists", "https://evil.example", "POST");
    CHECK_ERROR(res, 405, "UNIMPLEMENTED", NULL);
    CHECK_NO_CORS(res);
    CHECK_STR(header_of(&res, "Vary"), "Origin");
    http_response_free(&res);
    res = request(port, "GET", "/api/v1/stock", "https://evil.example", key, NULL, NULL);
    CHECK_INT(res.status, 200);
    CHECK_NO_CORS(res);
    http_response_free(&res);
    /* A prefix of an allowed origin is another origin. */
    res = preflight(port, "/api/v1/stock", APP ".evil.example", "GET");
    CHECK_INT(res.status, 405);
    CHECK_NO_CORS(res);
    http_response_free(&res);
}

/* Preflights cost no permit: the bucket's remaining count moves only with actual requests. */
static void test_preflight_is_free(uint16_t port)
{
    http_response_t res = request(port, "GET", "/api/v1/stock", APP, key, NULL, NULL);
    int before = remaining(&res);
    CHECK(before > 0);
    http_response_free(&res);
    for (int i = 0; i < 3; i++) {
        res = preflight(port, "/api/v1/stock", APP, "GET");
        CHECK_INT(res.status, 204);
        CHECK(header_of(&res, "RateLimit-Remaining") == NULL);
        http_response_free(&res);
    }
    res = request(port, "GET", "/api/v1/stock", APP, key, NULL, NULL);
    CHECK_INT(remaining(&res), before - 1);
    http_response_free(&res);
}

/* Actual answers: a 201, a 304, a 401, a 429 and a Connect answer carry the CORS headers. */
static void test_actual_answers(uint16_t port)
{
    http_response_t res =
        request(port, "POST", "/api/v1/locate-lists", APP, key,
                "Content-Type: application/json\r\n", "{\"name\":\"Browser\",\"codes\":[\"A\"]}");
    CHECK_INT(res.status, 201);
    CHECK(header_of(&res, "Location") != NULL);
    CHECK_ACTUAL(res, APP);
    http_response_free(&res);

    res = request(port, "GET", "/api/v1/stock-export", APP, key, NULL, NULL);
    CHECK_INT(res.status, 200);
    CHECK_ACTUAL(res, APP);
    char etag[256], extra[300];
    snprintf(etag, sizeof(etag), "%s", header_of(&res, "ETag") ? header_of(&res, "ETag") : "");
    http_response_free(&res);
    snprintf(extra, sizeof(extra), "If-None-Match: %s\r\n", etag);
    res = request(port, "GET", "/api/v1/stock-export", APP, key, extra, NULL);
    CHECK_INT(res.status, 304);
    CHECK_ACTUAL(res, APP);
    http_response_free(&res);

    res = request(port, "GET", "/api/v1/stock", LOCAL, NULL, NULL, NULL);
    CHECK_ERROR(res, 401, "UNAUTHENTICATED", NULL);
    CHECK_ACTUAL(res, LOCAL);
    http_response_free(&res);

    /* --rate-limit-stock-export 2: the limited organization's third export. */
    for (int i = 0; i < 2; i++) {
        res = request(port, "GET", "/api/v1/stock-export", APP, key_limited, NULL, NULL);
        CHECK_INT(res.status, 200);
        http_response_free(&res);
    }
    res = request(port, "GET", "/api/v1/stock-export", APP, key_limited, NULL, NULL);
    CHECK_ERROR(res, 429, "RESOURCE_EXHAUSTED", NULL);
    CHECK(header_of(&res, "Retry-After") != NULL);
    CHECK_ACTUAL(res, APP);
    http_response_free(&res);

    res = request(port, "POST", "/walklist.v1.StockService/ListStock", APP, key,
                  "Content-Type: application/json\r\nConnect-Protocol-Version: 1\r\n", "{}");
    CHECK_INT(res.status, 200);
    CHECK_ACTUAL(res, APP);
    http_response_free(&res);
}

/* A preflight never waits for the database: answered while it cannot be reached. */
static void test_preflight_without_database(void)
{
    char url[128];
    service_unreachable_database(url, sizeof(url));
    service_t down;
    const char *args[] = {"--cors-origin", APP, NULL};
    service_start(&down, url, args);
    http_response_t res = preflight(down.port, "/api/v1/locate-lists", APP, "POST");
    CHECK_INT(res.status, 204);
    CHECK_STR(header_of(&res, "Access-Control-Allow-Origin"), APP);
    http_response_free(&res);
    res = request(down.port, "GET", "/api/v1/stock", APP, key, NULL, NULL);
    CHECK_ERROR(res, 503, "UNAVAILABLE", NULL);
    CHECK_ACTUAL(res, APP);
    http_response_free(&res);
    CHECK_INT(service_stop(&down), 0);
}

/* "*": any origin, answered as "*". */
static void test_any_origin(void)
{
    service_t service;
    const char *args[] = {"--cors-origin", "*", NULL};
    service_start(&service, conninfo, args);
    http_response_t res =
        preflight(service.port, "/api/v1/stock", "https://anywhere.example", "GET");
    CHECK_INT(res.status, 204);
    CHECK_STR(header_of(&res, "Access-Control-Allow-Origin"), "*");
    http_response_free(&res);
    res =
        request(service.port, "GET", "/api/v1/stock", "https://anywhere.example", key, NULL, NULL);
    CHECK_INT(res.status, 200);
    CHECK_ACTUAL(res, "*");
    CHECK(header_of(&res, "Access-Control-Allow-Credentials") == NULL);
    http_response_free(&res);
    CHECK_INT(service_stop(&service), 0);
}

/* Values that are not origins stop walklistd at startup, naming the option and the value. */
static void test_invalid_values_refused(void)
{
    const struct {
        const char *value, *env, *named;
    } cases[] = {
        {"https://app.example.com/", NULL, "https://app.example.com/"},
        {"https://app.example.com/path", NULL, "https://app.example.com/path"},
        {"app.example.com", NULL, "app.example.com"},
        {"ftp://app.example.com", NULL, "ftp://app.example.com"},
        {"https://app.example.com:99999", NULL, "https://app.example.com:99999"},
        {"https://app.example.com,,http://localhost:3000", NULL, "''"},
        {"https://app.example.com,*", NULL, "'*'"},
        {"https://", NULL, "https://"},
        {NULL, "WALKLIST_CORS_ORIGIN=https://app.example.com?x=1", "https://app.example.com?x=1"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *args[] = {"--database-url",
                              conninfo,
                              "--listen",
                              "127.0.0.1:0",
                              cases[i].value ? "--cors-origin" : NULL,
                              cases[i].value,
                              NULL};
        char out[2048];
        CHECK_INT(service_run(args, cases[i].env, out, sizeof(out)), 2);
        if (strstr(out, "--cors-origin") == NULL || strstr(out, cases[i].named) == NULL)
            FAIL("case %zu: the refusal does not name --cors-origin and %s: %s", i, cases[i].named,
                 out);
        CHECK(strstr(out, "\"msg\":\"listening\"") == NULL);
    }
}

int main(void)
{
    conninfo = testdb_create("e2e_cors");
    PGconn *db = testdb_connect(conninfo);
    int64_t org = fixture_org(db, "cors");
    int64_t limited = fixture_org(db, "cors-limited");
    fixture_key(db, org, "lists:write,stock:read", key);
    fixture_key(db, limited, "stock:read", key_limited);

    test_off_by_default();
    service_t service;
    const char *args[] = {"--cors-origin", " " APP ", " LOCAL " ", "--rate-limit-stock-export", "2",
                          NULL};
    service_start(&service, conninfo, args);
    test_preflights(service.port);
    test_preflight_is_free(service.port);
    test_actual_answers(service.port);
    CHECK_INT(service_stop(&service), 0);
    test_preflight_without_database();
    test_any_origin();
    test_invalid_values_refused();

    PQfinish(db);
    return test_exit();
}
