/* Rate limits over HTTP (never more than the limit in any rolling 60 seconds, per organization
 * and bucket), with two walklistd processes sharing one database. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"

static service_t first, second;
static PGconn *db;
static char key_a[WL_KEY_TOKEN_SIZE], key_b[WL_KEY_TOKEN_SIZE], key_lists_only[WL_KEY_TOKEN_SIZE];

static int header_int(const http_response_t *res, const char *name)
{
    char value[64];
    return http_header(res, name, value, sizeof(value)) ? atoi(value) : -1;
}

typedef struct {
    uint16_t port;
    int requests;
    int accepted;
    int rejected;
} burst_t;

static void *burst(void *arg)
{
    burst_t *b = arg;
    for (int i = 0; i < b->requests; i++) {
        http_response_t res = e2e_request(
            b->port, "GET", "/api/v1/locate-lists/AAAAAAAAAAAAAAAAAAAAAA", key_a, NULL, NULL);
        if (res.status == 429)
            b->rejected++;
        else if (res.status == 404)
            b->accepted++;
        http_response_free(&res);
    }
    return NULL;
}

/* Concurrent requests through both processes: exactly the limit is accepted. */
static void test_shared_limit_across_processes(void)
{
    burst_t bursts[4] = {{first.port, 6, 0, 0},
                         {second.port, 6, 0, 0},
                         {first.port, 6, 0, 0},
                         {second.port, 6, 0, 0}};
    pthread_t threads[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&threads[i], NULL, burst, &bursts[i]);
    int accepted = 0, rejected = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        accepted += bursts[i].accepted;
        rejected += bursts[i].rejected;
    }
    CHECK_INT(accepted, 5);
    CHECK_INT(rejected, 19);
}

static void test_headers_and_429(void)
{
    /* Organization B's bucket is its own: A exhausted locate-lists above. */
    http_response_t res = e2e_request(
        first.port, "GET", "/api/v1/locate-lists/AAAAAAAAAAAAAAAAAAAAAA", key_b, NULL, NULL);
    CHECK_INT(res.status, 404);
    CHECK_INT(header_int(&res, "RateLimit-Limit"), 5);
    CHECK_INT(header_int(&res, "RateLimit-Remaining"), 4);
    int reset = header_int(&res, "RateLimit-Reset");
    CHECK(reset >= 59 && reset <= 60);
    char value[128];
    CHECK_STR(http_header(&res, "RateLimit-Policy", value, sizeof(value)),
              "\"locate-lists\";q=5;w=60");
    char expected[128];
    snprintf(expected, sizeof(expected), "\"locate-lists\";r=4;t=%d", reset);
    CHECK_STR(http_header(&res, "RateLimit", value, sizeof(value)), expected);
    http_response_free(&res);

    /* A's bucket is full: 429 with Retry-After, the error body and the headers; nothing written. */
    long long lists = testdb_count(db, "SELECT count(*) FROM locate_lists");
    res = e2e_request(second.port, "POST", "/api/v1/locate-lists", key_a, "application/json",
                      "{\"name\":\"n\",\"codes\":[\"A\"]}");
    CHECK_ERROR(res, 429, "RESOURCE_EXHAUSTED", NULL);
    int retry = header_int(&res, "Retry-After");
    CHECK(retry >= 1 && retry <= 60);
    CHECK_INT(header_int(&res, "RateLimit-Remaining"), 0);
    CHECK_INT(header_int(&res, "RateLimit-Limit"), 5);
    CHECK_INT(testdb_count(db, "SELECT count(*) FROM locate_lists"), lists);
    http_response_free(&res);
    /* The GET form shares the bucket. */
    char target[256];
    snprintf(target, sizeof(target), "/api/v1/locate-lists?api_key=%s&name=n&codes=A", key_a);
    res = e2e_request(first.port, "GET", target, NULL, NULL, NULL);
    CHECK_ERROR(res, 429, "RESOURCE_EXHAUSTED", NULL);
    http_response_free(&res);
    CHECK_INT(testdb_count(db, "SELECT count(*) FROM locate_lists"), lists);

    /* Other buckets of A are untouched. */
    res = e2e_request(first.port, "GET", "/api/v1/stock-export", key_a, NULL, NULL);
    CHECK_INT(res.status, 200);
    CHECK_INT(header_int(&res, "RateLimit-Limit"), 3);
    CHECK_INT(header_int(&res, "RateLimit-Remaining"), 2);
    CHECK_STR(http_header(&res, "RateLimit-Policy", value, sizeof(value)),
              "\"stock-export\";q=3;w=60");
    http_response_free(&res);
}

/* 403 and 400 answers count; 404/405 before authentication do not. */
static void test_what_counts(void)
{
    for (int i = 0; i < 3; i++) {
        http_response_t res =
            e2e_request(first.port, "GET", "/api/v1/stock-export", key_lists_only, NULL, NULL);
        CHECK_ERROR(res, 403, "PERMISSION_DENIED", NULL);
        CHECK_INT(header_int(&res, "RateLimit-Remaining"), 2 - i);
        http_response_free(&res);
    }
    http_response_t res =
        e2e_request(second.port, "GET", "/api/v1/stock-export", key_lists_only, NULL, NULL);
    CHECK_ERROR(res, 429, "RESOURCE_EXHAUSTED", NULL);
    http_response_free(&res);

    /* B: invalid bodies count in locate-lists (B used 1 of 5 above). */
    for (int i = 0; i < 4; i++) {
        res = e2e_request(first.port, "POST", "/api/v1/locate-lists", key_b, "application/json",
                          "{\"name\":\"\",\"codes\":[]}");
        CHECK_ERROR(res, 400, "INVALID_ARGUMENT", NULL);
        http_response_free(&res);
    }
    res = e2e_request(first.port, "POST", "/api/v1/locate-lists", key_b, "application/json",
                      "{\"name\":\"n\",\"codes\":[\"A\"]}");
    CHECK_ERROR(res, 429, "RESOURCE_EXHAUSTED", NULL);
    http_response_free(&res);

    /* Unknown paths and wrong methods are answered before the key is looked at. */
    for (int i = 0; i < 5; i++) {
        res = e2e_request(first.port, "GET", "/api/v1/nope", key_a, NULL, NULL);
        CHECK_INT(res.status, 404);
        CHECK_INT(header_int(&res, "RateLimit-Limit"), -1);
        http_response_free(&res);
    }
}

/* Without a valid key, one address gets 6 requests a minute per process; a valid key is never
 * held back by that. */
static void test_anonymous_limit(void)
{
    int unauthorized = 0, limited = 0;
    for (int i = 0; i < 8; i++) {
        http_response_t res =
            e2e_request(second.port, "GET", "/api/v1/stock-export",
                        i % 2 ? "wlk_AAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB" : NULL, NULL, NULL);
        if (res.status == 401)
            unauthorized++;
        if (res.status == 429) {
            limited++;
            CHECK_ERROR(res, 429, "RESOURCE_EXHAUSTED", NULL);
            CHECK(header_int(&res, "Retry-After") >= 1);
        }
        http_response_free(&res);
    }
    CHECK_INT(unauthorized, 6);
    CHECK_INT(limited, 2);
    http_response_t res =
        e2e_request(second.port, "GET", "/api/v1/stock-export", key_b, NULL, NULL);
    CHECK_INT(res.status, 200);
    http_response_free(&res);
}

int main(void)
{
    const char *conninfo = testdb_create("e2e_rate_limits");
    db = testdb_connect(conninfo);
    int64_t org_a = fixture_org(db, "rate-a");
    int64_t org_b = fixture_org(db, "rate-b");
    int64_t org_c = fixture_org(db, "rate-c");
    fixture_key(db, org_a, "lists:write,stock:read", key_a);
    fixture_key(db, org_b, "lists:write,stock:read", key_b);
    fixture_key(db, org_c, "lists:write", key_lists_only);
    const char *limits[] = {"--rate-limit-locate-lists",
                            "5",
                            "--rate-limit-stock-export",
                            "3",
                            "--rate-limit-shared",
                            "4",
                            "--rate-limit-anonymous",
                            "6",
                            NULL};
    service_start(&first, conninfo, limits);
    service_start(&second, conninfo, limits);

    test_shared_limit_across_processes();
    test_headers_and_429();
    test_what_counts();
    test_anonymous_limit();

    CHECK_INT(service_stop(&first), 0);
    CHECK_INT(service_stop(&second), 0);
    PQfinish(db);
    return test_exit();
}
