/*
 * HTTP semantics of RFC 9110 around the routes: HEAD on every GET route answers as GET without
 * content, Allow lists HEAD with GET, a 304 carries no Content-Length but the 200's (the cached
 * export body's) and keeps its connection, and nothing follows the headers of an answer without
 * content on a kept-alive connection. A large JSON answer is gzip-coded for a client that takes
 * gzip, with Vary: Accept-Encoding, and is the same JSON once decoded.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "e2e.h"
#include "fixture.h"
#include "gunzip.h"
#include "service.h"
#include "testdb.h"

static service_t service;
static PGconn *db;
static char key[WL_KEY_TOKEN_SIZE];

/*
 * Sends request on a kept-alive connection and reads every byte the server sends until it
 * closes the connection (each request here ends with a close: the answers without content
 * close it, and a pipelined request asks to), so that a body after HEAD's headers shows.
 */
static char *exchange_raw(const char *request)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct timeval timeout = {30, 0}; /* a hang fails, it is not waited out */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(service.port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    char *buf = calloc(1, 65536);
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        send(fd, request, strlen(request), MSG_NOSIGNAL) != (ssize_t)strlen(request)) {
        FAIL("cannot send the request");
        close(fd);
        return buf;
    }
    size_t used = 0;
    for (;;) {
        ssize_t n = recv(fd, buf + used, 65535 - used, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || used + (size_t)n >= 65535)
            break;
        used += (size_t)n;
    }
    close(fd);
    return buf;
}

static http_response_t head_request(const char *target, const char *extra)
{
    char headers[600];
    snprintf(headers, sizeof(headers), "Authorization: Bearer %s\r\n%s", key, extra ? extra : "");
    http_response_t res;
    http_request(service.port, "HEAD", target, headers, NULL, 0, &res);
    return res;
}

/* HEAD answers what GET answers (status, type, length, rate-limit headers), with no content. */
static void test_head_as_get(void)
{
    http_response_t created =
        e2e_request(service.port, "POST", "/api/v1/locate-lists", key, "application/json",
                    "{\"name\":\"Head\",\"codes\":[\"SKU-1\"]}");
    CHECK_INT(created.status, 201);
    char target[128];
    snprintf(target, sizeof(target), "/api/v1/locate-lists/%s",
             e2e_str(created.json, "id", NULL) ? e2e_str(created.json, "id", NULL) : "x");
    http_response_free(&created);

    const char *targets[] = {target, "/api/v1/stock?pageSize=2", "/api/v1/openapi.json",
                             "/healthz"};
    for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
        http_response_t get = e2e_request(service.port, "GET", targets[i], key, NULL, NULL);
        http_response_t head = head_request(targets[i], NULL);
        CHECK_INT(get.status, 200);
        CHECK_INT(head.status, 200);
        CHECK_INT(head.body_len, 0);
        char a[256], b[256];
        CHECK_STR(http_header(&head, "Content-Type", a, sizeof(a)),
                  http_header(&get, "Content-Type", b, sizeof(b)));
        CHECK_STR(http_header(&head, "Content-Length", a, sizeof(a)),
                  http_header(&get, "Content-Length", b, sizeof(b)));
        if (strncmp(targets[i], "/api/v1/locate", 14) == 0 ||
            strncmp(targets[i], "/api/v1/stock", 13) == 0)
            CHECK(http_header(&head, "RateLimit-Policy", a, sizeof(a)) != NULL);
        http_response_free(&get);
        http_response_free(&head);
    }

    /* Errors too: HEAD without a key is the GET's 401, with its headers. */
    http_response_t res;
    http_request(service.port, "HEAD", "/api/v1/stock", NULL, NULL, 0, &res);
    CHECK_INT(res.status, 401);
    char value[128];
    CHECK(http_header(&res, "WWW-Authenticate", value, sizeof(value)) != NULL);
    CHECK_INT(res.body_len, 0);
    http_response_free(&res);

    /* The URL-only creation form: HEAD is its GET, so it creates (the spec made that GET
     * unsafe; docs/api.md, "HEAD"). */
    http_response_t head = head_request("/api/v1/locate-lists?name=ByHead&codes=A,B", NULL);
    CHECK_INT(head.status, 201);
    CHECK(http_header(&head, "Location", value, sizeof(value)) != NULL);
    CHECK_INT(head.body_len, 0);
    http_response_free(&head);
}

static http_response_t get_coded(const char *target, const char *accept_encoding)
{
    char headers[600];
    snprintf(headers, sizeof(headers), "Authorization: Bearer %s\r\n%s%s%s", key,
             accept_encoding ? "Accept-Encoding: " : "", accept_encoding ? accept_encoding : "",
             accept_encoding ? "\r\n" : "");
    http_response_t res;
    http_request(service.port, "GET", target, headers, NULL, 0, &res);
    return res;
}

/* JSON answers of 1 KiB and more go gzip-coded to a client that takes gzip, Vary saying so; the
 * same JSON once decoded; identity without Accept-Encoding, or with gzip refused (q=0). */
static void test_gzip_answers(void)
{
    char body[8192];
    size_t used = (size_t)snprintf(body, sizeof(body), "{\"name\":\"Many\",\"codes\":[");
    for (int i = 0; i < 120; i++)
        used += (size_t)snprintf(body + used, sizeof(body) - used, "%s\"SKU-MANY-%04d\"",
                                 i ? "," : "", i);
    snprintf(body + used, sizeof(body) - used, "]}");
    http_response_t created =
        e2e_request(service.port, "POST", "/api/v1/locate-lists", key, "application/json", body);
    CHECK_INT(created.status, 201);
    char target[128], value[128];
    snprintf(target, sizeof(target), "/api/v1/locate-lists/%s",
             e2e_str(created.json, "id", NULL) ? e2e_str(created.json, "id", NULL) : "x");
    http_response_free(&created);

    http_response_t plain = get_coded(target, NULL);
    CHECK_INT(plain.status, 200);
    CHECK(plain.body_len >= 1024);
    CHECK(http_header(&plain, "Content-Encoding", value, sizeof(value)) == NULL);
    CHECK_STR(http_header(&plain, "Vary", value, sizeof(value)), "Accept-Encoding");

    http_response_t coded = get_coded(target, "gzip, deflate, br");
    CHECK_INT(coded.status, 200);
    CHECK_STR(http_header(&coded, "Content-Encoding", value, sizeof(value)), "gzip");
    CHECK_STR(http_header(&coded, "Vary", value, sizeof(value)), "Accept-Encoding");
    CHECK_STR(http_header(&coded, "Content-Type", value, sizeof(value)), "application/json");
    CHECK(coded.body_len < plain.body_len);
    size_t len = 0;
    char *inflated = gunzip(coded.body, coded.body_len, true, &len);
    CHECK(inflated != NULL && len == plain.body_len && memcmp(inflated, plain.body, len) == 0);
    free(inflated);

    /* HEAD says what GET would send in the same coding. */
    http_response_t head = head_request(target, "Accept-Encoding: gzip\r\n");
    CHECK_STR(http_header(&head, "Content-Encoding", value, sizeof(value)), "gzip");
    char length[32];
    CHECK_STR(http_header(&head, "Content-Length", length, sizeof(length)),
              http_header(&coded, "Content-Length", value, sizeof(value)));
    http_response_free(&head);

    const char *identity[] = {"gzip;q=0", "identity", "br"};
    for (size_t i = 0; i < sizeof(identity) / sizeof(identity[0]); i++) {
        http_response_t res = get_coded(target, identity[i]);
        CHECK_INT(res.status, 200);
        if (http_header(&res, "Content-Encoding", value, sizeof(value)) != NULL)
            FAIL("Accept-Encoding: %s: coded %s", identity[i], value);
        CHECK(res.body_len == plain.body_len && memcmp(res.body, plain.body, res.body_len) == 0);
        http_response_free(&res);
    }
    http_response_free(&plain);
    http_response_free(&coded);

    /* A small answer is never coded, nor does it vary. */
    http_response_t small = get_coded("/api/v1/stock?pageSize=1", "gzip");
    CHECK_INT(small.status, 200);
    CHECK(small.body_len < 1024);
    CHECK(http_header(&small, "Content-Encoding", value, sizeof(value)) == NULL);
    CHECK(http_header(&small, "Vary", value, sizeof(value)) == NULL);
    http_response_free(&small);
}

/* The streamed export: its headers, and nothing after them on a kept-alive connection. */
static void test_head_of_stream(void)
{
    http_response_t get = e2e_request(service.port, "GET", "/api/v1/stock-export", key, NULL, NULL);
    CHECK_INT(get.status, 200);
    char etag[128] = "";
    http_header(&get, "ETag", etag, sizeof(etag));
    http_response_free(&get);

    char request[600];
    snprintf(request, sizeof(request),
             "HEAD /api/v1/stock-export HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n"
             "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
             key);
    char *raw = exchange_raw(request);
    CHECK(strncmp(raw, "HTTP/1.1 200", 12) == 0);
    CHECK(strstr(raw, "Content-Type: application/json") != NULL);
    char line[200];
    snprintf(line, sizeof(line), "ETag: %s\r\n", etag);
    CHECK(etag[0] != '\0' && strstr(raw, line) != NULL);
    const char *end = strstr(raw, "\r\n\r\n");
    /* The next bytes, if any, are the next answer's: no chunk of a body HEAD has not. */
    if (end == NULL || (end[4] != '\0' && strncmp(end + 4, "HTTP/1.1 ", 9) != 0))
        FAIL("bytes after the headers of HEAD: %s", end ? end + 4 : raw);
    free(raw);
}

/*
 * 304, for GET and HEAD, no chunks, and the connection stays open (the pipelined request after
 * it is answered): with the export's body cached, Content-Length is the 200's (RFC 9110 8.6);
 * on a server that keeps no bodies (--export-cache-mb 0) it has none.
 */
static void check_not_modified(uint16_t port, bool body_cached)
{
    http_response_t get = e2e_request(port, "GET", "/api/v1/stock-export", key, NULL, NULL);
    http_response_free(&get);
    get = e2e_request(port, "GET", "/api/v1/stock-export", key, NULL, NULL);
    CHECK_INT(get.status, 200);
    char etag[128] = "";
    http_header(&get, "ETag", etag, sizeof(etag));
    char length[64];
    snprintf(length, sizeof(length), "Content-Length: %zu\r\n", get.body_len);
    http_response_free(&get);
    const char *methods[] = {"GET", "HEAD"};
    for (size_t i = 0; i < 2; i++) {
        char request[800];
        snprintf(request, sizeof(request),
                 "%s /api/v1/stock-export HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                 "If-None-Match: %s\r\n\r\n"
                 "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                 methods[i], key, etag);
        uint16_t saved = service.port;
        service.port = port;
        char *raw = exchange_raw(request);
        service.port = saved;
        CHECK(strncmp(raw, "HTTP/1.1 304", 12) == 0);
        CHECK(strstr(raw, "ETag: ") != NULL);
        CHECK(strstr(raw, "Transfer-Encoding") == NULL);
        const char *end = strstr(raw, "\r\n\r\n");
        CHECK(end != NULL);
        if (body_cached) {
            if (strstr(raw, length) == NULL || end == NULL || strstr(raw, length) > end)
                FAIL("%s 304 without \"%.*s\": %s", methods[i], (int)strlen(length) - 2, length,
                     raw);
            /* Kept alive: the next answer follows at once, nothing in between. */
            CHECK(end != NULL && strncmp(end + 4, "HTTP/1.1 200", 12) == 0);
        } else {
            /* No length in the 304's head, and still kept alive. */
            const char *length_at = strstr(raw, "Content-Length");
            CHECK(end != NULL && (length_at == NULL || length_at > end));
            CHECK(end != NULL && strncmp(end + 4, "HTTP/1.1 200", 12) == 0);
        }
        free(raw);
    }
}

static void test_not_modified(const char *conninfo)
{
    check_not_modified(service.port, true);
    service_t bodiless;
    const char *args[] = {"--export-cache-mb",
                          "0",
                          "--rate-limit-shared",
                          "1000",
                          "--rate-limit-stock-export",
                          "1000",
                          NULL};
    service_start(&bodiless, conninfo, args);
    check_not_modified(bodiless.port, false);
    CHECK_INT(service_stop(&bodiless), 0);
}

/* 405's Allow lists HEAD wherever GET is served. */
static void test_allow(void)
{
    struct {
        const char *target, *allow;
    } cases[] = {
        {"/api/v1/stock-export", "GET, HEAD"},
        {"/api/v1/stock", "GET, HEAD"},
        {"/api/v1/locate-lists", "POST, GET, HEAD"},
        {"/api/v1/locate-lists/abc", "GET, HEAD"},
        {"/healthz", "GET, HEAD"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        http_response_t res = e2e_request(service.port, "DELETE", cases[i].target, key, NULL, NULL);
        CHECK_INT(res.status, 405);
        char allow[64];
        CHECK_STR(http_header(&res, "Allow", allow, sizeof(allow)), cases[i].allow);
        http_response_free(&res);
    }
}

int main(void)
{
    const char *conninfo = testdb_create("e2e_http_semantics");
    db = testdb_connect(conninfo);
    int64_t org = fixture_org(db, "semantics");
    fixture_key(db, org, "lists:write,stock:read", key);
    fixture_import(db, org, "warehouses", "code,name,kind\nW1,Main,own\n");
    fixture_import(db, org, "products", "sku,name,eans\nSKU-1,One,\n");
    fixture_import(db, org, "stock", "sku,warehouse,on_hand\nSKU-1,W1,5\n");
    const char *args[] = {"--rate-limit-shared",
                          "1000",
                          "--rate-limit-stock-export",
                          "1000",
                          "--rate-limit-locate-lists",
                          "1000",
                          NULL};
    service_start(&service, conninfo, args);

    test_head_as_get();
    test_gzip_answers();
    test_head_of_stream();
    test_not_modified(conninfo);
    test_allow();

    service_stop(&service);
    PQfinish(db);
    return test_exit();
}
