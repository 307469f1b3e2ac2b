/*
 * The record of REST exchanges that e2e.zz_openapi_bodies checks (tests/support/exchange_log.h):
 * only request lines for /api/v1 are recorded, api_key values are redacted, bodies are what the
 * client reads (gzip inflated, bytes past Content-Length left to the next answer, other bytes
 * than UTF-8 as base64), large JSON has its arrays cut, and larger bodies are left out with
 * their size.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exchange_log.h"
#include "gunzip.h"
#include "test.h"

#define LOG_DIR WL_TEST_OUTPUT_DIR "/exchange-log-unit"
/* Base62, key-shaped (made up for this test). */
#define KEY_SECRET "q8Zr2Lk7Vx4Nc9Wm1Ty6Pb0Sd3"

static void record(const char *request, int status, const char *head, const char *body,
                   size_t body_len)
{
    http_response_t res = {
        .status = status, .head = (char *)head, .body = (char *)body, .body_len = body_len};
    exchange_log_record(request, strlen(request), &res, true, false);
}

/* The records written so far, in order. */
static json_t *records(void)
{
    json_t *all = json_array();
    FILE *in = fopen(LOG_DIR "/unit_test_exchange_log.jsonl", "r");
    if (in == NULL) {
        FAIL("no record file");
        return all;
    }
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, in) > 0) {
        json_t *one = json_loads(line, 0, NULL);
        CHECK(one != NULL);
        if (one != NULL)
            json_array_append_new(all, one);
    }
    free(line);
    fclose(in);
    return all;
}

static const char *str(json_t *record, const char *key)
{
    return json_string_value(json_object_get(record, key));
}

int main(void)
{
    mkdir(LOG_DIR, 0700);
    unlink(LOG_DIR "/unit_test_exchange_log.jsonl");
    setenv("WALKLIST_TEST_EXCHANGES", LOG_DIR, 1);
    const char *json_head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n";

    /* Not recorded: other paths, a malformed request line, an exchange that failed. */
    record("GET /healthz HTTP/1.1\r\n\r\n", 200, json_head, "{}", 2);
    record("GET /api/v1x HTTP/1.1\r\n\r\n", 404, json_head, "{}", 2);
    record("GET  /api/v1/stock HTTP/1.1\r\n\r\n", 400, json_head, "{}", 2);
    record("get /api/v1/stock HTTP/1.1\r\n\r\n", 400, json_head, "{}", 2);
    record("GET /api/v1/stock\r\n\r\n", 400, json_head, "{}", 2);
    record("GET /api/v1/stock HTTP/1.1\r\n\r\n", 0, NULL, NULL, 0);

    /* 0: the key in the query is redacted; repeated header lines are kept. */
    record("GET /api/v1/locate-lists?name=a&api_key=wlk_Ab3dE5gH_secret&codes=b HTTP/1.1\r\n\r\n",
           201,
           "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nVary: Origin\r\n"
           "Vary: Accept-Encoding\r\nX-Request-Id: wlk_Ab3dE5gH_" KEY_SECRET "\r\n",
           "{\"id\":\"x\"}", 10);
    /* 1: gzip inflated. */
    const char *plain = "{\"items\":[],\"cursor\":\"c\"}";
    size_t gz_len = 0;
    char *gz = gzip_encode(plain, strlen(plain), &gz_len);
    record("GET /api/v1/stock-export HTTP/1.1\r\n\r\n", 200,
           "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n", gz,
           gz_len);
    free(gz);
    /* 2: a coded body that does not inflate. */
    record("GET /api/v1/stock-export HTTP/1.1\r\n\r\n", 200,
           "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n",
           "not gzip", 8);
    /* 3: bytes after Content-Length belong to the next answer. */
    const char *two = "{}HTTP/1.1 200 OK\r\n\r\n";
    record("GET /api/v1?x=1 HTTP/1.1\r\n\r\n", 404,
           "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 2\r\n", two,
           strlen(two));
    /* 4: not UTF-8. */
    record("GET /api/v1/stock HTTP/1.1\r\n\r\n", 400, "HTTP/1.1 400 Bad Request\r\n", "\xff\xfe",
           2);
    /* 5: large JSON, its arrays cut. */
    size_t items = 300000, cap = items * 8 + 64, used = 0;
    char *large = malloc(cap);
    used += (size_t)snprintf(large + used, cap - used, "{\"items\":[");
    for (size_t i = 0; i < items; i++)
        used += (size_t)snprintf(large + used, cap - used, "%s%zu", i ? "," : "", i);
    used += (size_t)snprintf(large + used, cap - used, "],\"n\":1}");
    CHECK(used > EXCHANGE_LOG_WHOLE_BYTES);
    record("GET /api/v1/stock-export HTTP/1.1\r\n\r\n", 200, json_head, large, used);
    /* 6: large and not JSON: left out. */
    memset(large, 'x', used);
    record("GET /api/v1/stock-export HTTP/1.1\r\n\r\n", 200, json_head, large, used);
    free(large);

    json_t *all = records();
    CHECK_INT(json_array_size(all), 7);
    json_t *r = json_array_get(all, 0);
    CHECK_STR(str(r, "test"), "unit_test_exchange_log");
    CHECK_STR(str(r, "method"), "GET");
    CHECK_STR(str(r, "target"), "/api/v1/locate-lists?name=a&api_key=REDACTED&codes=b");
    CHECK_INT(json_integer_value(json_object_get(r, "status")), 201);
    CHECK_STR(str(r, "body"), "{\"id\":\"x\"}");
    CHECK(json_is_false(json_object_get(r, "raw")));
    CHECK(json_is_true(json_object_get(r, "complete")));
    json_t *headers = json_object_get(r, "headers");
    CHECK_INT(json_array_size(headers), 4);
    CHECK_STR(json_string_value(json_array_get(json_array_get(headers, 2), 1)), "Accept-Encoding");
    CHECK_STR(json_string_value(json_array_get(json_array_get(headers, 3), 1)),
              "wlk_Ab3dE5gH_xxxxxxxxxxxxxxxxxxxxxxxxxx");

    r = json_array_get(all, 1);
    CHECK_STR(str(r, "body"), plain);
    CHECK_INT(json_integer_value(json_object_get(r, "bodyBytes")), (long long)strlen(plain));
    CHECK(json_integer_value(json_object_get(r, "encodedBytes")) > 0);
    CHECK_INT(json_integer_value(json_object_get(r, "seq")),
              json_integer_value(json_object_get(json_array_get(all, 0), "seq")) + 1);

    r = json_array_get(all, 2);
    CHECK(str(r, "bodyError") != NULL && str(r, "body") == NULL);

    r = json_array_get(all, 3);
    CHECK_STR(str(r, "target"), "/api/v1?x=1");
    CHECK_STR(str(r, "body"), "{}");
    CHECK_INT(json_integer_value(json_object_get(r, "trailingBytes")), (long long)strlen(two) - 2);

    r = json_array_get(all, 4);
    CHECK(str(r, "body") == NULL);
    CHECK_STR(str(r, "bodyBase64"), "//4=");

    r = json_array_get(all, 5);
    CHECK(json_is_true(json_object_get(r, "truncated")));
    CHECK_INT(json_integer_value(json_object_get(r, "bodyBytes")), (long long)used);
    json_t *cut = json_loads(str(r, "body") ? str(r, "body") : "", 0, NULL);
    CHECK_INT(json_array_size(json_object_get(cut, "items")), EXCHANGE_LOG_ARRAY_ITEMS);
    CHECK_INT(json_integer_value(json_object_get(cut, "n")), 1);
    json_decref(cut);

    r = json_array_get(all, 6);
    CHECK(json_is_true(json_object_get(r, "omitted")) && str(r, "body") == NULL);
    CHECK_INT(json_integer_value(json_object_get(r, "bodyBytes")), (long long)used);
    json_decref(all);
    return test_exit();
}
