/* End to end over HTTP: creating and reading walk lists, their validation and errors. */
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"

static service_t service;
static PGconn *db;
static uint16_t port;
static char key_a[WL_KEY_TOKEN_SIZE], key_b[WL_KEY_TOKEN_SIZE], key_stock_only[WL_KEY_TOKEN_SIZE],
    key_revoked[WL_KEY_TOKEN_SIZE];

static long long list_count(void)
{
    return testdb_count(db, "SELECT count(*) FROM locate_lists");
}

static http_response_t post(const char *key, const char *body)
{
    return e2e_request(port, "POST", "/api/v1/locate-lists", key, "application/json", body);
}

static char *repeat(const char *piece, int times, const char *sep)
{
    size_t size = (strlen(piece) + strlen(sep)) * (size_t)times + 1;
    char *out = calloc(1, size);
    for (int i = 0; i < times; i++) {
        strcat(out, piece);
        if (i + 1 < times)
            strcat(out, sep);
    }
    return out;
}

/* The stored codes of a list as a PostgreSQL array literal. */
static const char *stored_codes(const char *id, char *buf, size_t size)
{
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT codes::text FROM locate_lists WHERE id = '%s'", id);
    return testdb_value(db, sql, buf, size);
}

static void test_create_json(void)
{
    long long before = list_count();
    http_response_t res = post(key_a, "{\"name\":\"Aisle 3 recount\",\"codes\":[\" SKU-1001 \","
                                      "\"4006381333931\",\"NOPE-1\",\"SKU-1001\",\"sku-1001\"]}");
    CHECK_INT(res.status, 201);
    const char *id = e2e_str(res.json, "id", NULL);
    CHECK(id != NULL && strlen(id) > 0 && strlen(id) <= 40);
    for (const char *p = id ? id : ""; *p; p++)
        CHECK(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", *p));
    CHECK_STR(e2e_str(res.json, "name", NULL), "Aisle 3 recount");
    CHECK_INT(json_integer_value(json_object_get(res.json, "codesCount")), 4);
    CHECK_INT(json_object_size(res.json), 3);
    char location[128], expected[128], codes[512];
    snprintf(expected, sizeof(expected), "/api/v1/locate-lists/%s", id ? id : "");
    CHECK_STR(http_header(&res, "Location", location, sizeof(location)), expected);
    CHECK_INT(list_count(), before + 1);
    /* Trimmed, deduplicated exactly (case-sensitive), first appearance kept. */
    CHECK_STR(stored_codes(id, codes, sizeof(codes)), "{SKU-1001,4006381333931,NOPE-1,sku-1001}");

    /* The same request twice makes two lists. */
    http_response_t again = post(key_a, "{\"name\":\"Aisle 3 recount\",\"codes\":[\" SKU-1001 \","
                                        "\"4006381333931\",\"NOPE-1\",\"SKU-1001\",\"sku-1001\"]}");
    CHECK_INT(again.status, 201);
    CHECK(strcmp(e2e_str(again.json, "id", NULL), id) != 0);
    CHECK_INT(list_count(), before + 2);

    /* Read it back. */
    char target[128];
    snprintf(target, sizeof(target), "/api/v1/locate-lists/%s", id);
    http_response_t got = e2e_request(port, "GET", target, key_a, NULL, NULL);
    CHECK_INT(got.status, 200);
    CHECK_STR(e2e_str(got.json, "id", NULL), id);
    CHECK_STR(e2e_str(got.json, "name", NULL), "Aisle 3 recount");
    CHECK_STR(e2e_str(got.json, "state", NULL), "pending");
    CHECK_INT(json_integer_value(json_object_get(got.json, "codesCount")), 4);
    json_t *list = json_object_get(got.json, "codes");
    CHECK_INT(json_array_size(list), 4);
    CHECK_STR(json_string_value(json_array_get(list, 0)), "SKU-1001");
    CHECK_STR(json_string_value(json_array_get(list, 3)), "sku-1001");
    const char *created = e2e_str(got.json, "createdAt", NULL);
    CHECK(created != NULL && strlen(created) == 24 && created[10] == 'T' && created[19] == '.' &&
          created[23] == 'Z');
    CHECK(json_is_null(json_object_get(got.json, "loadedAt")));

    /* Another organization's id, an unknown id and an impossible id are all 404. */
    http_response_t other = e2e_request(port, "GET", target, key_b, NULL, NULL);
    CHECK_ERROR(other, 404, "NOT_FOUND", NULL);
    http_response_t unknown =
        e2e_request(port, "GET", "/api/v1/locate-lists/AAAAAAAAAAAAAAAAAAAAAA", key_a, NULL, NULL);
    CHECK_ERROR(unknown, 404, "NOT_FOUND", NULL);
    char *long_id = repeat("a", 41, "");
    snprintf(target, sizeof(target), "/api/v1/locate-lists/%s", long_id);
    http_response_t too_long = e2e_request(port, "GET", target, key_a, NULL, NULL);
    CHECK_ERROR(too_long, 404, "NOT_FOUND", NULL);
    http_response_t quote =
        e2e_request(port, "GET", "/api/v1/locate-lists/x'%20OR%20'1'='1", key_a, NULL, NULL);
    CHECK_ERROR(quote, 404, "NOT_FOUND", NULL);
    free(long_id);
    http_response_free(&res);
    http_response_free(&again);
    http_response_free(&got);
    http_response_free(&other);
    http_response_free(&unknown);
    http_response_free(&too_long);
    http_response_free(&quote);
}

static void test_limits_accepted(void)
{
    /* 120 code points of two bytes each, 200 entries as sent (all the same code). */
    char *name = repeat("\xc3\xa4", 120, "");
    char *codes = repeat("\"A\"", 200, ",");
    char *body = malloc(strlen(name) + strlen(codes) + 64);
    sprintf(body, "{\"name\":\"%s\",\"codes\":[%s]}", name, codes);
    http_response_t res = post(key_a, body);
    CHECK_INT(res.status, 201);
    CHECK_INT(json_integer_value(json_object_get(res.json, "codesCount")), 1);
    http_response_free(&res);

    /* A 64-character code; charset parameter allowed. */
    char *code = repeat("7", 64, "");
    sprintf(body, "{\"name\":\"n\",\"codes\":[\"%s\"]}", code);
    res = e2e_request(port, "POST", "/api/v1/locate-lists", key_a,
                      "application/json; charset=UTF-8", body);
    CHECK_INT(res.status, 201);
    http_response_free(&res);
    free(code);
    free(name);
    free(codes);
    free(body);
}

typedef struct {
    const char *label;
    const char *body;
    const char *field; /* violation expected, or NULL */
} bad_body_t;

static void test_bad_bodies(void)
{
    char *name121 = repeat("n", 121, "");
    char *codes201 = repeat("\"A\"", 201, ",");
    char *code65 = repeat("7", 65, "");
    char long_name[512], many_codes[2048], long_code[256];
    snprintf(long_name, sizeof(long_name), "{\"name\":\"%s\",\"codes\":[\"A\"]}", name121);
    snprintf(many_codes, sizeof(many_codes), "{\"name\":\"n\",\"codes\":[%s]}", codes201);
    snprintf(long_code, sizeof(long_code), "{\"name\":\"n\",\"codes\":[\"%s\"]}", code65);
    const bad_body_t cases[] = {
        {"name missing", "{\"codes\":[\"A\"]}", "name"},
        {"name empty", "{\"name\":\"\",\"codes\":[\"A\"]}", "name"},
        {"name blank", "{\"name\":\" \\t\\u00a0 \",\"codes\":[\"A\"]}", "name"},
        {"name too long", long_name, "name"},
        {"name with control character", "{\"name\":\"a\\u0007b\",\"codes\":[\"A\"]}", "name"},
        {"name with newline", "{\"name\":\"a\\nb\",\"codes\":[\"A\"]}", "name"},
        {"name not a string", "{\"name\":5,\"codes\":[\"A\"]}", "name"},
        {"codes missing", "{\"name\":\"n\"}", "codes"},
        {"codes empty", "{\"name\":\"n\",\"codes\":[]}", "codes"},
        {"codes too many", many_codes, "codes"},
        {"codes not an array", "{\"name\":\"n\",\"codes\":\"A,B\"}", "codes"},
        {"code empty", "{\"name\":\"n\",\"codes\":[\"A\",\"\"]}", "codes[1]"},
        {"code blank", "{\"name\":\"n\",\"codes\":[\"   \"]}", "codes[0]"},
        {"code too long", long_code, "codes[0]"},
        {"code with control character", "{\"name\":\"n\",\"codes\":[\"A\",\"B\\u001fC\"]}",
         "codes[1]"},
        {"code not a string", "{\"name\":\"n\",\"codes\":[\"A\",7]}", "codes[1]"},
        {"code null", "{\"name\":\"n\",\"codes\":[null]}", "codes[0]"},
        {"unknown field", "{\"name\":\"n\",\"codes\":[\"A\"],\"colour\":\"red\"}", "colour"},
        {"duplicate key", "{\"name\":\"n\",\"name\":\"m\",\"codes\":[\"A\"]}", NULL},
        {"malformed", "{\"name\":\"n\",", NULL},
        {"trailing garbage", "{\"name\":\"n\",\"codes\":[\"A\"]} x", NULL},
        {"not an object", "[\"A\"]", NULL},
        {"invalid UTF-8", "{\"name\":\"\xff\xfe\",\"codes\":[\"A\"]}", NULL},
        {"NUL escape", "{\"name\":\"a\\u0000b\",\"codes\":[\"A\"]}", NULL},
        {"empty body", "", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        long long before = list_count();
        http_response_t res = post(key_a, cases[i].body);
        if (res.status != 400)
            fprintf(stderr, "case '%s': status %d body %s\n", cases[i].label, res.status,
                    res.body ? res.body : "");
        CHECK_ERROR(res, 400, "INVALID_ARGUMENT", cases[i].field);
        CHECK_INT(list_count(), before);
        http_response_free(&res);
    }
    free(name121);
    free(codes201);
    free(code65);
}

static void test_transport_errors(void)
{
    long long before = list_count();
    const char *body = "{\"name\":\"n\",\"codes\":[\"A\"]}";
    http_response_t res = e2e_request(port, "POST", "/api/v1/locate-lists", key_a, NULL, body);
    CHECK_ERROR(res, 415, "INVALID_ARGUMENT", NULL);
    http_response_free(&res);
    res = e2e_request(port, "POST", "/api/v1/locate-lists", key_a, "text/plain", body);
    CHECK_ERROR(res, 415, "INVALID_ARGUMENT", NULL);
    http_response_free(&res);
    res = e2e_request(port, "POST", "/api/v1/locate-lists", key_a,
                      "application/json; charset=latin1", body);
    CHECK_ERROR(res, 415, "INVALID_ARGUMENT", NULL);
    http_response_free(&res);

    /* Over 64 KiB: 413, whether announced by Content-Length or not. */
    size_t big_len = 64 * 1024 + 1;
    char *big = malloc(big_len + 1);
    memset(big, ' ', big_len);
    memcpy(big, "{\"name\":\"n\",\"codes\":[\"A\"]", 25);
    big[big_len - 1] = '}';
    big[big_len] = '\0';
    res = post(key_a, big);
    CHECK_ERROR(res, 413, "INVALID_ARGUMENT", NULL);
    http_response_free(&res);
    char *chunked = malloc(big_len + 256);
    int n = sprintf(chunked,
                    "POST /api/v1/locate-lists HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                    "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n%zx\r\n",
                    key_a, big_len);
    memcpy(chunked + n, big, big_len);
    n += (int)big_len;
    n += sprintf(chunked + n, "\r\n0\r\n\r\n");
    http_raw(port, chunked, (size_t)n, &res);
    CHECK_ERROR(res, 413, "INVALID_ARGUMENT", NULL);
    http_response_free(&res);
    free(chunked);
    free(big);

    /* Unknown paths and wrong methods are answered before authentication. */
    res = e2e_request(port, "GET", "/api/v1/nothing-here", NULL, NULL, NULL);
    CHECK_ERROR(res, 404, "NOT_FOUND", NULL);
    http_response_free(&res);
    res = e2e_request(port, "GET", "/api/v1/locate-lists/a/b", NULL, NULL, NULL);
    CHECK_ERROR(res, 404, "NOT_FOUND", NULL);
    http_response_free(&res);
    res = e2e_request(port, "DELETE", "/api/v1/locate-lists", NULL, NULL, NULL);
    CHECK_ERROR(res, 405, "UNIMPLEMENTED", NULL);
    char allow[64];
    CHECK_STR(http_header(&res, "Allow", allow, sizeof(allow)), "POST, GET, HEAD");
    http_response_free(&res);
    res = e2e_request(port, "POST", "/api/v1/stock-export", NULL, NULL, NULL);
    CHECK_ERROR(res, 405, "UNIMPLEMENTED", NULL);
    CHECK_STR(http_header(&res, "Allow", allow, sizeof(allow)), "GET, HEAD");
    http_response_free(&res);
    CHECK_INT(list_count(), before);
}

static void test_authentication(void)
{
    long long before = list_count();
    const char *body = "{\"name\":\"n\",\"codes\":[\"A\"]}";
    char www[128];

    http_response_t res = post(NULL, body);
    CHECK_ERROR(res, 401, "UNAUTHENTICATED", NULL);
    CHECK_STR(http_header(&res, "WWW-Authenticate", www, sizeof(www)), "Bearer realm=\"walklist\"");
    http_response_free(&res);

    const char *bad_keys[] = {
        "wlk_AAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", /* well-formed, unknown */
        "not-a-key",
        key_revoked,
    };
    for (size_t i = 0; i < sizeof(bad_keys) / sizeof(bad_keys[0]); i++) {
        res = post(bad_keys[i], body);
        CHECK_ERROR(res, 401, "UNAUTHENTICATED", NULL);
        CHECK_STR(http_header(&res, "WWW-Authenticate", www, sizeof(www)),
                  "Bearer realm=\"walklist\", error=\"invalid_token\"");
        http_response_free(&res);
    }
    /* A valid key with a wrong secret. */
    char tampered[WL_KEY_TOKEN_SIZE];
    memcpy(tampered, key_a, sizeof(tampered));
    tampered[strlen(tampered) - 1] = tampered[strlen(tampered) - 1] == 'a' ? 'b' : 'a';
    res = post(tampered, body);
    CHECK_ERROR(res, 401, "UNAUTHENTICATED", NULL);
    http_response_free(&res);

    /* Other schemes are not a key. */
    http_request(port, "POST", "/api/v1/locate-lists",
                 "Authorization: Basic dXNlcjpwYXNz\r\nContent-Type: application/json\r\n", body,
                 strlen(body), &res);
    CHECK_ERROR(res, 401, "UNAUTHENTICATED", NULL);
    http_response_free(&res);

    /* A key without lists:write. */
    res = post(key_stock_only, body);
    CHECK_ERROR(res, 403, "PERMISSION_DENIED", NULL);
    http_response_free(&res);

    /* api_key in the query authenticates the GET form only. */
    char target[256];
    snprintf(target, sizeof(target), "/api/v1/locate-lists?api_key=%s", key_a);
    res = e2e_request(port, "POST", target, NULL, "application/json", body);
    CHECK_ERROR(res, 401, "UNAUTHENTICATED", NULL);
    http_response_free(&res);
    snprintf(target, sizeof(target), "/api/v1/stock-export?api_key=%s", key_a);
    res = e2e_request(port, "GET", target, NULL, NULL, NULL);
    CHECK_ERROR(res, 401, "UNAUTHENTICATED", NULL);
    http_response_free(&res);
    CHECK_INT(list_count(), before);
}

static void test_get_form(void)
{
    long long before = list_count();
    char target[1024], codes[512];

    /* Both separators, a repeated codes parameter appended in order, empty pieces
     * ignored, '+' as space, percent-decoding, unknown parameters ignored. */
    snprintf(target, sizeof(target),
             "/api/v1/locate-lists?api_key=%s&name=Aisle+4%%20north&codes=A,B%%7CC|%%20D%%20"
             "&codes=,,E||&utm_source=x&codes=A",
             key_a);
    http_response_t res = e2e_request(port, "GET", target, NULL, NULL, NULL);
    CHECK_INT(res.status, 201);
    CHECK_STR(e2e_str(res.json, "name", NULL), "Aisle 4 north");
    CHECK_INT(json_integer_value(json_object_get(res.json, "codesCount")), 5);
    const char *id = e2e_str(res.json, "id", NULL);
    CHECK_STR(stored_codes(id, codes, sizeof(codes)), "{A,B,C,D,E}");
    char location[128];
    CHECK(http_header(&res, "Location", location, sizeof(location)) != NULL);
    http_response_free(&res);

    /* The longest GET form documented (docs/api.md, "Walk lists"): 200 codes of 64 characters,
     * every character percent-encoded (about 38 KB of target), fits in libmicrohttpd's connection
     * memory. */
    char *code = repeat("%41", 61, "");
    char *coded = calloc(1, 200 * 200);
    for (int i = 0; i < 200; i++)
        sprintf(coded + strlen(coded), "%s%s%%3%d%%3%d%%3%d", i ? "," : "", code, i / 100,
                i / 10 % 10, i % 10);
    char *long_target = calloc(1, strlen(coded) + 64);
    sprintf(long_target, "/api/v1/locate-lists?name=Long&codes=%s", coded);
    res = e2e_request(port, "GET", long_target, key_a, NULL, NULL);
    CHECK_INT(res.status, 201);
    CHECK_INT(json_integer_value(json_object_get(res.json, "codesCount")), 200);
    http_response_free(&res);
    before++;
    free(long_target);
    free(coded);
    free(code);

    /* The Authorization header works on the GET form too. */
    res = e2e_request(port, "GET", "/api/v1/locate-lists?name=H&codes=X", key_a, NULL, NULL);
    CHECK_INT(res.status, 201);
    http_response_free(&res);
    CHECK_INT(list_count(), before + 2);

    before = list_count();
    char *many = repeat("C", 201, "|");
    char *big_target = malloc(strlen(many) + 256);
    sprintf(big_target, "/api/v1/locate-lists?api_key=%s&name=n&codes=%s", key_a, many);
    struct {
        const char *label;
        const char *target;
        int with_header;
        int status;
        const char *grpc;
        const char *field;
    } cases[] = {
        {"header and query key", "/api/v1/locate-lists?api_key=%s&name=n&codes=A", 1, 400,
         "INVALID_ARGUMENT", NULL},
        {"api_key twice", "/api/v1/locate-lists?api_key=%s&api_key=x&name=n&codes=A", 0, 400,
         "INVALID_ARGUMENT", NULL},
        {"name twice", "/api/v1/locate-lists?api_key=%s&name=n&name=m&codes=A", 0, 400,
         "INVALID_ARGUMENT", "name"},
        {"name missing", "/api/v1/locate-lists?api_key=%s&codes=A", 0, 400, "INVALID_ARGUMENT",
         "name"},
        {"codes missing", "/api/v1/locate-lists?api_key=%s&name=n", 0, 400, "INVALID_ARGUMENT",
         "codes"},
        {"only separators", "/api/v1/locate-lists?api_key=%s&name=n&codes=,|,", 0, 400,
         "INVALID_ARGUMENT", "codes"},
        {"bad percent escape", "/api/v1/locate-lists?api_key=%s&name=%%zz&codes=A", 0, 400,
         "INVALID_ARGUMENT", NULL},
        {"NUL byte in name", "/api/v1/locate-lists?api_key=%s&name=a%%00b&codes=A", 0, 400,
         "INVALID_ARGUMENT", "name"},
        {"control character in a code", "/api/v1/locate-lists?api_key=%s&name=n&codes=A%%07", 0,
         400, "INVALID_ARGUMENT", "codes[0]"},
        {"bad key in query", "/api/v1/locate-lists?api_key=wlk_nope&name=n&codes=A", 0, 401,
         "UNAUTHENTICATED", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(target, sizeof(target), cases[i].target, key_a);
        res = e2e_request(port, "GET", target, cases[i].with_header ? key_a : NULL, NULL, NULL);
        if (res.status != cases[i].status)
            fprintf(stderr, "case '%s': status %d body %s\n", cases[i].label, res.status,
                    res.body ? res.body : "");
        CHECK_ERROR(res, cases[i].status, cases[i].grpc, cases[i].field);
        http_response_free(&res);
    }
    res = e2e_request(port, "GET", big_target, NULL, NULL, NULL);
    CHECK_ERROR(res, 400, "INVALID_ARGUMENT", "codes");
    http_response_free(&res);
    CHECK_INT(list_count(), before);
    free(many);
    free(big_target);
}

static void test_logs_hide_keys(void)
{
    char *log = service_log(&service);
    CHECK(strstr(log, key_a) == NULL);
    CHECK(strstr(log, key_a + 4) == NULL);
    CHECK(strstr(log, "\"msg\":\"request\"") != NULL);
    free(log);
}

int main(void)
{
    const char *conninfo = testdb_create("e2e_locate_lists");
    db = testdb_connect(conninfo);
    int64_t org_a = fixture_org(db, "org-a");
    int64_t org_b = fixture_org(db, "org-b");
    fixture_key(db, org_a, "lists:write,stock:read", key_a);
    fixture_key(db, org_b, "lists:write", key_b);
    fixture_key(db, org_a, "stock:read", key_stock_only);
    fixture_key(db, org_a, "lists:write", key_revoked);
    char sql[128];
    /* Before walklistd starts: nothing to announce to. */
    snprintf(sql, sizeof(sql), "UPDATE api_keys SET revoked_at = now() WHERE prefix = '%.8s'",
             key_revoked + 4);
    testdb_exec(db, sql);
    service_start(&service, conninfo, NULL);
    port = service.port;

    test_create_json();
    test_limits_accepted();
    test_bad_bodies();
    test_transport_errors();
    test_authentication();
    test_get_form();
    test_logs_hide_keys();

    CHECK_INT(service_stop(&service), 0);
    PQfinish(db);
    return test_exit();
}
