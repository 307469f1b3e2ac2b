/*
 * Admission together with the work: a request whose key this walklistd has not seen
 * (or whose rate-limit decision needs the database) is let in, counted and served in one
 * grouped statement. Whatever the request's body, a refused admission answers first and writes
 * nothing; a request let in is counted whatever its own answer; each request is one commit.
 * Every key here is used for the first time by this process.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"

static service_t service, second;
static PGconn *db;

static long long metric_now(const char *series)
{
    return e2e_metric(service.port, series);
}

static long long counted(int64_t org)
{
    return fixture_counted(db, org, "locate-lists");
}

static long long lists_of(int64_t org)
{
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM locate_lists WHERE org_id = %lld",
             (long long)org);
    return testdb_count(db, sql);
}

static int header_int(const http_response_t *res, const char *name)
{
    char value[64];
    return http_header(res, name, value, sizeof(value)) ? atoi(value) : -1;
}

static const char valid_body[] =
    "{\"name\":\"Admitted\",\"codes\":[\"SKU-1\",\" SKU-2 \",\"SKU-1\"]}";

/* A key nobody has, a wrong secret and a revoked key: 401 before the body is looked at, and
 * nothing written or counted anywhere. */
static void test_refused_keys_write_nothing(void)
{
    int64_t org = fixture_org(db, "adm-refused");
    char key[WL_KEY_TOKEN_SIZE], revoked[WL_KEY_TOKEN_SIZE], wrong[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org, "lists:write", key);
    fixture_key(db, org, "lists:write", revoked);
    fixture_revoke(db, revoked);
    snprintf(wrong, sizeof(wrong), "%s", key);
    wrong[strlen(wrong) - 1] = wrong[strlen(wrong) - 1] == 'x' ? 'y' : 'x';
    const char *bodies[] = {valid_body, "{not json", "{\"name\":\"\",\"codes\":[]}"};
    const char *keys[] = {"wlk_Nobody00_0123456789abcdefghijklmnopqrstuvwxyzABCD", wrong, revoked};
    for (size_t k = 0; k < 3; k++) {
        for (size_t b = 0; b < 3; b++) {
            http_response_t res = e2e_request(service.port, "POST", "/api/v1/locate-lists", keys[k],
                                              "application/json", bodies[b]);
            CHECK_ERROR(res, 401, "UNAUTHENTICATED", NULL);
            char value[128];
            CHECK_STR(http_header(&res, "WWW-Authenticate", value, sizeof(value)),
                      "Bearer realm=\"walklist\", error=\"invalid_token\"");
            CHECK_INT(header_int(&res, "RateLimit-Limit"), -1);
            http_response_free(&res);
        }
        http_response_t res = e2e_request(service.port, "GET", "/api/v1/locate-lists/AAAAAAAAAAAA",
                                          keys[k], NULL, NULL);
        CHECK_ERROR(res, 401, "UNAUTHENTICATED", NULL);
        http_response_free(&res);
    }
    CHECK_INT(lists_of(org), 0);
    CHECK_INT(counted(org), 0);
}

/* A valid key without lists:write: 403 whatever the body, each request counted, nothing
 * written; the 403 comes before the body's own problem (400, 415). */
static void test_scope_refusal_counts_and_writes_nothing(void)
{
    int64_t org = fixture_org(db, "adm-scope");
    char key[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org, "stock:read", key);
    const char *bodies[] = {valid_body, "{\"name\":\"\",\"codes\":[]}"};
    for (int i = 0; i < 2; i++) {
        http_response_t res = e2e_request(service.port, "POST", "/api/v1/locate-lists", key,
                                          "application/json", bodies[i]);
        CHECK_ERROR(res, 403, "PERMISSION_DENIED", NULL);
        CHECK_INT(header_int(&res, "RateLimit-Remaining"), 30 - (i + 1));
        http_response_free(&res);
    }
    http_response_t res =
        e2e_request(service.port, "POST", "/api/v1/locate-lists", key, "text/plain", valid_body);
    CHECK_ERROR(res, 403, "PERMISSION_DENIED", NULL);
    http_response_free(&res);
    CHECK_INT(lists_of(org), 0);
    CHECK_INT(counted(org), 3);
}

/* A valid key's own mistakes: 400 and 415, counted, nothing written; then a list it may create
 * is created and read back, each request one commit. */
static void test_valid_key_one_commit_each(void)
{
    int64_t org = fixture_org(db, "adm-valid"), other = fixture_org(db, "adm-other");
    char key[WL_KEY_TOKEN_SIZE], other_key[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org, "lists:write", key);
    fixture_key(db, other, "lists:write", other_key);

    http_response_t res = e2e_request(service.port, "POST", "/api/v1/locate-lists", key,
                                      "application/json", "{\"name\":\"\",\"codes\":[]}");
    CHECK_ERROR(res, 400, "INVALID_ARGUMENT", "name");
    CHECK_INT(header_int(&res, "RateLimit-Remaining"), 29);
    http_response_free(&res);
    res = e2e_request(service.port, "POST", "/api/v1/locate-lists", key, "text/plain", valid_body);
    CHECK_ERROR(res, 415, "INVALID_ARGUMENT", NULL);
    CHECK_INT(header_int(&res, "RateLimit-Remaining"), 28);
    http_response_free(&res);
    CHECK_INT(lists_of(org), 0);

    long long commits = metric_now("walklist_admission_commits_total");
    res = e2e_request(service.port, "POST", "/api/v1/locate-lists", key, "application/json",
                      valid_body);
    CHECK_INT(res.status, 201);
    CHECK_INT(json_integer_value(json_object_get(res.json, "codesCount")), 2);
    CHECK_INT(header_int(&res, "RateLimit-Remaining"), 27);
    const char *id = e2e_str(res.json, "id", NULL);
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/locate-lists/%s", id ? id : "");
    http_response_free(&res);
    CHECK_INT(metric_now("walklist_admission_commits_total"), commits + 1);
    CHECK_INT(lists_of(org), 1);

    /* Read back: one commit again; another organization's key sees 404 and is counted. */
    res = e2e_request(service.port, "GET", path, key, NULL, NULL);
    CHECK_INT(res.status, 200);
    CHECK_STR(e2e_str(res.json, "state", NULL), "pending");
    CHECK_INT(json_array_size(json_object_get(res.json, "codes")), 2);
    CHECK_STR(json_string_value(json_array_get(json_object_get(res.json, "codes"), 1)), "SKU-2");
    http_response_free(&res);
    CHECK_INT(metric_now("walklist_admission_commits_total"), commits + 2);
    res = e2e_request(service.port, "GET", path, other_key, NULL, NULL);
    CHECK_ERROR(res, 404, "NOT_FOUND", NULL);
    CHECK_INT(header_int(&res, "RateLimit-Remaining"), 29);
    http_response_free(&res);
    CHECK_INT(counted(org), 4);
    CHECK_INT(counted(other), 1);

    /* The GET form, its key in the query. */
    char target[256];
    snprintf(target, sizeof(target), "/api/v1/locate-lists?api_key=%s&name=Form&codes=A|B,C",
             other_key);
    res = e2e_request(service.port, "GET", target, NULL, NULL, NULL);
    CHECK_INT(res.status, 201);
    CHECK_INT(json_integer_value(json_object_get(res.json, "codesCount")), 3);
    http_response_free(&res);
    CHECK_INT(lists_of(other), 1);
    CHECK_INT(counted(other), 2);
}

/* A client waiting for 100 Continue with a key nobody has gets its 401 instead, before any body;
 * with a valid key it is told to go on and its list is created. */
static void test_expect_continue(void)
{
    int64_t org = fixture_org(db, "adm-expect");
    char key[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org, "lists:write", key);
    const char *keys[] = {"wlk_Nobody02_0123456789abcdefghijklmnopqrstuvwxyzABCD", key};
    for (int i = 0; i < 2; i++) {
        char request[512];
        int len = snprintf(request, sizeof(request),
                           "POST /api/v1/locate-lists HTTP/1.1\r\nHost: localhost\r\n"
                           "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                           "Content-Length: %zu\r\nExpect: 100-continue\r\n"
                           "Connection: close\r\n\r\n%s",
                           keys[i], strlen(valid_body), i == 0 ? "" : valid_body);
        http_response_t res;
        CHECK_INT(http_raw(service.port, request, (size_t)len, &res), 0);
        if (i == 0) {
            CHECK_INT(res.status, 401);
            CHECK(res.body == NULL || strstr(res.body, "100 Continue") == NULL);
        } else {
            CHECK(res.status == 100 || res.status == 201);
        }
        http_response_free(&res);
    }
    CHECK_INT(lists_of(org), 1);
}

static http_response_t connect_call(const char *key, const char *body)
{
    char headers[256];
    snprintf(headers, sizeof(headers),
             "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
             "Connect-Protocol-Version: 1\r\n",
             key);
    http_response_t res;
    if (http_request(service.port, "POST", "/walklist.v1.LocateListService/CreateLocateList",
                     headers, body, strlen(body), &res) != 0)
        FAIL("Connect request failed");
    return res;
}

/* The Connect transport lets requests in the same way, in its own error shape. */
static void test_connect(void)
{
    int64_t org = fixture_org(db, "adm-connect");
    char key[WL_KEY_TOKEN_SIZE], reader[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org, "lists:write", key);
    fixture_key(db, org, "stock:read", reader);
    http_response_t res =
        connect_call("wlk_Nobody01_0123456789abcdefghijklmnopqrstuvwxyzABCD", "{not json");
    CHECK_INT(res.status, 401);
    CHECK_STR(e2e_str(res.json, "code", NULL), "unauthenticated");
    http_response_free(&res);
    res = connect_call(reader, "{not json");
    CHECK_INT(res.status, 403);
    CHECK_STR(e2e_str(res.json, "code", NULL), "permission_denied");
    http_response_free(&res);
    res = connect_call(key, "{\"name\":\"Connect\",\"codes\":[]}");
    CHECK_INT(res.status, 400);
    CHECK_STR(e2e_str(res.json, "code", NULL), "invalid_argument");
    http_response_free(&res);
    CHECK_INT(lists_of(org), 0);
    res = connect_call(key, "{\"name\":\"Connect\",\"codes\":[\"X\"]}");
    CHECK_INT(res.status, 200);
    CHECK(e2e_str(res.json, "id", NULL) != NULL);
    http_response_free(&res);
    CHECK_INT(lists_of(org), 1);
    CHECK_INT(counted(org), 3);
}

typedef struct {
    uint16_t port;
    const char *key;
    int accepted, refused, other;
} burst_t;

static void *burst(void *arg)
{
    burst_t *b = arg;
    for (int i = 0; i < 15; i++) {
        http_response_t res = e2e_request(b->port, "GET", "/api/v1/locate-lists/AAAAAAAAAAAAAAAA",
                                          b->key, NULL, NULL);
        if (res.status == 404)
            b->accepted++;
        else if (res.status == 429)
            b->refused++;
        else
            b->other++;
        http_response_free(&res);
    }
    return NULL;
}

/* Two processes, four clients, 60 requests of a key neither process has seen: exactly the
 * specified 30 are let in, the rest refused with nothing counted. */
static void test_exact_limit_across_processes(void)
{
    int64_t org = fixture_org(db, "adm-exact");
    char key[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org, "lists:write", key);
    burst_t bursts[4] = {{service.port, key, 0, 0, 0},
                         {second.port, key, 0, 0, 0},
                         {service.port, key, 0, 0, 0},
                         {second.port, key, 0, 0, 0}};
    pthread_t threads[4];
    for (int i = 0; i < 4; i++)
        CHECK_INT(pthread_create(&threads[i], NULL, burst, &bursts[i]), 0);
    int accepted = 0, refused = 0, other = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(threads[i], NULL);
        accepted += bursts[i].accepted;
        refused += bursts[i].refused;
        other += bursts[i].other;
    }
    CHECK_INT(accepted, 30);
    CHECK_INT(refused, 30);
    CHECK_INT(other, 0);
    CHECK_INT(counted(org), 30);
}

int main(void)
{
    const char *conninfo = testdb_create("e2e_admission");
    db = testdb_connect(conninfo);
    /* The specified limits (the harness raises them by default). */
    const char *limits[] = {"--rate-limit-locate-lists",
                            "30",
                            "--rate-limit-stock-export",
                            "30",
                            "--rate-limit-shared",
                            "60",
                            NULL};
    service_start(&service, conninfo, limits);
    service_start(&second, conninfo, limits);
    test_refused_keys_write_nothing();
    test_scope_refusal_counts_and_writes_nothing();
    test_valid_key_one_commit_each();
    test_connect();
    test_expect_continue();
    test_exact_limit_across_processes();
    CHECK_INT(service_stop(&service), 0);
    CHECK_INT(service_stop(&second), 0);
    PQfinish(db);
    return test_exit();
}
