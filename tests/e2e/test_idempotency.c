/* Idempotency-Key on walk-list creation, over HTTP: a retry with the same key and list within
 * 24 hours returns the first answer and creates nothing; the same key for another list is 422. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"

static service_t service;
static PGconn *db;
static char key_a[WL_KEY_TOKEN_SIZE], key_b[WL_KEY_TOKEN_SIZE];

static long long list_count(void)
{
    return testdb_count(db, "SELECT count(*) FROM locate_lists");
}

static http_response_t post_with_key(const char *api_key, const char *idempotency_key,
                                     const char *body)
{
    char headers[1024];
    snprintf(headers, sizeof(headers),
             "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
             "Idempotency-Key: %s\r\n",
             api_key, idempotency_key);
    http_response_t res;
    http_request(service.port, "POST", "/api/v1/locate-lists", headers, body, strlen(body), &res);
    return res;
}

static void test_retry_returns_first_response(void)
{
    long long before = list_count();
    const char *body = "{\"name\":\"Retry me\",\"codes\":[\"A\",\"B\",\"A\"]}";
    http_response_t first = post_with_key(key_a, "order-4711", body);
    CHECK_INT(first.status, 201);
    char id[64], value[64];
    snprintf(id, sizeof(id), "%s", e2e_str(first.json, "id", NULL));
    CHECK(http_header(&first, "Idempotent-Replayed", value, sizeof(value)) == NULL);
    CHECK_INT(list_count(), before + 1);

    http_response_t again = post_with_key(key_a, "order-4711", body);
    CHECK_INT(again.status, 201);
    CHECK_STR(e2e_str(again.json, "id", NULL), id);
    CHECK_STR(e2e_str(again.json, "name", NULL), "Retry me");
    CHECK_INT(json_integer_value(json_object_get(again.json, "codesCount")), 2);
    CHECK_STR(http_header(&again, "Idempotent-Replayed", value, sizeof(value)), "true");
    char location[128], expected[128];
    snprintf(expected, sizeof(expected), "/api/v1/locate-lists/%s", id);
    CHECK_STR(http_header(&again, "Location", location, sizeof(location)), expected);

    /* The same list after normalisation, through the GET form: the same answer. */
    char target[256];
    snprintf(target, sizeof(target),
             "/api/v1/locate-lists?api_key=%s&name=Retry+me&codes=%%20A%%20|B,A", key_a);
    http_response_t get_form;
    http_request(service.port, "GET", target, "Idempotency-Key: order-4711\r\n", NULL, 0,
                 &get_form);
    CHECK_INT(get_form.status, 201);
    CHECK_STR(e2e_str(get_form.json, "id", NULL), id);
    CHECK_INT(list_count(), before + 1);

    /* The same key for another list: 422, nothing written. */
    http_response_t other =
        post_with_key(key_a, "order-4711", "{\"name\":\"Retry me\",\"codes\":[\"A\",\"C\"]}");
    CHECK_ERROR(other, 422, "FAILED_PRECONDITION", NULL);
    http_response_t renamed =
        post_with_key(key_a, "order-4711", "{\"name\":\"Retry me!\",\"codes\":[\"A\",\"B\"]}");
    CHECK_ERROR(renamed, 422, "FAILED_PRECONDITION", NULL);
    CHECK_INT(list_count(), before + 1);

    /* Keys belong to an organization: B's use of the same key is its own. */
    http_response_t org_b = post_with_key(key_b, "order-4711", body);
    CHECK_INT(org_b.status, 201);
    CHECK(strcmp(e2e_str(org_b.json, "id", NULL), id) != 0);
    CHECK_INT(list_count(), before + 2);

    /* After 24 hours the key is free again. */
    testdb_exec(db, "UPDATE idempotency_keys SET created_at = now() - interval '25 hours'"
                    " WHERE key = 'order-4711'");
    http_response_t later =
        post_with_key(key_a, "order-4711", "{\"name\":\"Retry me\",\"codes\":[\"A\",\"C\"]}");
    CHECK_INT(later.status, 201);
    CHECK(strcmp(e2e_str(later.json, "id", NULL), id) != 0);
    CHECK_INT(list_count(), before + 3);

    http_response_free(&first);
    http_response_free(&again);
    http_response_free(&get_form);
    http_response_free(&other);
    http_response_free(&renamed);
    http_response_free(&org_b);
    http_response_free(&later);
}

static void test_bad_keys(void)
{
    long long before = list_count();
    char *long_key = malloc(257);
    memset(long_key, 'k', 256);
    long_key[256] = '\0';
    const char *bad[] = {long_key, "caf\xc3\xa9", "tab\there"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        http_response_t res = post_with_key(key_a, bad[i], "{\"name\":\"n\",\"codes\":[\"A\"]}");
        CHECK_ERROR(res, 400, "INVALID_ARGUMENT", "Idempotency-Key");
        http_response_free(&res);
    }
    long_key[255] = '\0';
    http_response_t ok = post_with_key(key_a, long_key, "{\"name\":\"n\",\"codes\":[\"A\"]}");
    CHECK_INT(ok.status, 201);
    http_response_free(&ok);
    CHECK_INT(list_count(), before + 1);
    free(long_key);
}

typedef struct {
    int status;
    char id[64];
} attempt_t;

static void *concurrent_attempt(void *arg)
{
    attempt_t *attempt = arg;
    http_response_t res =
        post_with_key(key_a, "burst-1", "{\"name\":\"Burst\",\"codes\":[\"X\",\"Y\"]}");
    attempt->status = res.status;
    const char *id = e2e_str(res.json, "id", NULL);
    snprintf(attempt->id, sizeof(attempt->id), "%s", id ? id : "");
    http_response_free(&res);
    return NULL;
}

static void test_concurrent_retries_create_one_list(void)
{
    long long before = list_count();
    enum { N = 8 };
    pthread_t threads[N];
    attempt_t attempts[N];
    memset(attempts, 0, sizeof(attempts));
    for (int i = 0; i < N; i++)
        pthread_create(&threads[i], NULL, concurrent_attempt, &attempts[i]);
    for (int i = 0; i < N; i++)
        pthread_join(threads[i], NULL);
    for (int i = 0; i < N; i++) {
        CHECK_INT(attempts[i].status, 201);
        CHECK_STR(attempts[i].id, attempts[0].id);
    }
    CHECK_INT(list_count(), before + 1);
}

int main(void)
{
    const char *conninfo = testdb_create("e2e_idempotency");
    db = testdb_connect(conninfo);
    fixture_key(db, fixture_org(db, "idem-a"), "lists:write", key_a);
    fixture_key(db, fixture_org(db, "idem-b"), "lists:write", key_b);
    service_start(&service, conninfo, NULL);

    test_retry_returns_first_response();
    test_bad_keys();
    test_concurrent_retries_create_one_list();

    CHECK_INT(service_stop(&service), 0);
    PQfinish(db);
    return test_exit();
}
