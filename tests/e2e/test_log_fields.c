/*
 * The request log line's fields for operators: the time first (RFC 3339, UTC, milliseconds),
 * the client's address, the content bytes sent, and the trace-id and parent-id of a valid W3C
 * traceparent (an invalid one ignored), on REST and Connect (gRPC: tests/grpc-client).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"

#define TRACE       "4bf92f3577b34da6a3ce929d0e0e4736"
#define PARENT      "00f067aa0ba902b7"
#define TRACEPARENT "traceparent: 00-" TRACE "-" PARENT "-01\r\n"

static service_t service;
static char key[WL_KEY_TOKEN_SIZE];

/* The request log line of request_id, parsed; the line is written once the answer is out, so
 * the log is read until it is there (or walklistd's 10 s are up: a failure). */
static json_t *request_line(const char *request_id)
{
    char needle[128];
    snprintf(needle, sizeof(needle), "\"requestId\":\"%s\"", request_id);
    for (int attempt = 0; attempt < 200; attempt++) {
        char *log = service_log(&service);
        char *at = strstr(log, needle);
        if (at != NULL) {
            char *start = at, *end = strchr(at, '\n');
            while (start > log && start[-1] != '\n')
                start--;
            json_t *line = json_loadb(start, end ? (size_t)(end - start) : strlen(start), 0, NULL);
            free(log);
            return line;
        }
        free(log);
        struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    FAIL("no log line for %s", request_id);
    return NULL;
}

/* Sends a request with an id of its own and returns its log line; *body_len the content
 * length it got. */
static json_t *logged(const char *method, const char *target, const char *extra_headers,
                      const char *content_type, const char *body, size_t *body_len)
{
    static int serial;
    char id[32], headers[1024];
    snprintf(id, sizeof(id), "log-fields-%d", ++serial);
    snprintf(headers, sizeof(headers), "X-Request-Id: %s\r\nAuthorization: Bearer %s\r\n%s%s%s%s",
             id, key, extra_headers ? extra_headers : "", content_type ? "Content-Type: " : "",
             content_type ? content_type : "", content_type ? "\r\n" : "");
    http_response_t res;
    http_request(service.port, method, target, headers, body, body ? strlen(body) : 0, &res);
    *body_len = res.body_len;
    http_response_free(&res);
    return request_line(id);
}

static void check_common(json_t *line, size_t body_len)
{
    const char *time_text = json_string_value(json_object_get(line, "time"));
    CHECK(time_text != NULL && strlen(time_text) == 24 && time_text[10] == 'T' &&
          time_text[19] == '.' && time_text[23] == 'Z');
    CHECK_STR(json_string_value(json_object_get(line, "client")), "127.0.0.1");
    CHECK_INT(json_integer_value(json_object_get(line, "bytes")), (long long)body_len);
}

static void check_traced(json_t *line, bool traced)
{
    CHECK_STR(json_string_value(json_object_get(line, "traceId")), traced ? TRACE : NULL);
    CHECK_STR(json_string_value(json_object_get(line, "parentId")), traced ? PARENT : NULL);
}

static void test_rest(void)
{
    size_t len = 0;
    json_t *line = logged("GET", "/api/v1/stock?pageSize=5", TRACEPARENT, NULL, NULL, &len);
    CHECK(len > 0);
    check_common(line, len);
    check_traced(line, true);
    json_decref(line);

    /* A streamed (chunked) body: the content bytes, not the chunks' framing. */
    line = logged("GET", "/api/v1/stock-export", TRACEPARENT, NULL, NULL, &len);
    CHECK(len > 0);
    check_common(line, len);
    check_traced(line, true);
    json_decref(line);

    /* HEAD sends no content; an error's body counts. */
    line = logged("HEAD", "/api/v1/stock", NULL, NULL, NULL, &len);
    CHECK_INT(len, 0);
    check_common(line, 0);
    json_decref(line);

    /* Invalid traceparents are ignored: upper case, all-zero ids, two of them. */
    const char *invalid[] = {"traceparent: 00-4BF92F3577B34DA6A3CE929D0E0E4736-" PARENT "-01\r\n",
                             "traceparent: 00-" TRACE "-0000000000000000-01\r\n",
                             TRACEPARENT TRACEPARENT};
    for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
        line = logged("GET", "/api/v1/stock", invalid[i], NULL, NULL, &len);
        check_common(line, len);
        check_traced(line, false);
        json_decref(line);
    }
}

static void test_connect(void)
{
    size_t len = 0;
    json_t *line = logged("POST", "/walklist.v1.StockService/ListStock",
                          TRACEPARENT "Connect-Protocol-Version: 1\r\n", "application/json",
                          "{\"pageSize\":2}", &len);
    CHECK(len > 0);
    check_common(line, len);
    check_traced(line, true);
    json_decref(line);
}

int main(void)
{
    const char *conninfo = testdb_create("e2e_log_fields");
    PGconn *db = testdb_connect(conninfo);
    int64_t org = fixture_org(db, "log-fields");
    fixture_key(db, org, "lists:write,stock:read", key);
    fixture_import(db, org, "warehouses", "code,name,kind\nW1,Main,own\n");
    fixture_import(db, org, "products", "sku,name,eans\nSKU-1,One,\n");
    fixture_import(db, org, "stock", "sku,warehouse,on_hand\nSKU-1,W1,5\n");
    service_start(&service, conninfo, NULL);
    test_rest();
    test_connect();
    CHECK_INT(service_stop(&service), 0);
    PQfinish(db);
    return test_exit();
}
