/*
 * HTTP/1.1 framing (RFC 9112) at the edge: the shapes that let one request smuggle another are
 * answered once, with Connection: close, and nothing after them on the connection is served;
 * a lone Content-Length or chunked body is read as before. A refused request writes nothing and
 * is not counted, even with a valid key and a valid body.
 */
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"

static service_t service;

/* Sends request as it is; checks the one answer's status, that it closes the connection, and
 * that nothing smuggled behind it was answered. */
static void check_refused(const char *request, int status)
{
    http_response_t res;
    CHECK_INT(http_raw(service.port, request, strlen(request), &res), 0);
    CHECK_INT(res.status, status);
    char value[32];
    CHECK_STR(http_header(&res, "Connection", value, sizeof(value)), "close");
    /* A second answer would follow the first one's body, starting a line with "HTTP/". */
    CHECK(res.body == NULL ||
          (strncmp(res.body, "HTTP/", 5) != 0 && strstr(res.body, "\nHTTP/") == NULL &&
           strstr(res.body, "}HTTP/") == NULL));
    http_response_free(&res);
}

int main(void)
{
    const char *conninfo = testdb_create("e2e_http_framing");
    PGconn *db = testdb_connect(conninfo);
    int64_t org = fixture_org(db, "framing");
    char key[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org, "lists:write", key);
    service_start(&service, conninfo, NULL);

    /* With a valid key and a valid list in the body: refused all the same, nothing written. */
    char request[1024];
    const char *body = "{\"name\":\"Smuggled\",\"codes\":[\"A\"]}";
    snprintf(request, sizeof(request),
             "POST /api/v1/locate-lists HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer %s\r\n"
             "Content-Type: application/json\r\nContent-Length: %zu\r\nContent-Length: %zu\r\n"
             "\r\n%s",
             key, strlen(body), strlen(body), body);
    check_refused(request, 400);
    snprintf(request, sizeof(request),
             "POST /api/v1/locate-lists HTTP/1.1\r\nAuthorization: Bearer %s\r\n"
             "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
             key, strlen(body), body);
    check_refused(request, 400);
    snprintf(request, sizeof(request),
             "POST /api/v1/locate-lists HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer %s\r\n"
             "Content-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n%s",
             key, body);
    check_refused(request, 501);
    CHECK_INT(testdb_count(db, "SELECT count(*) FROM locate_lists"), 0);
    CHECK_INT(fixture_counted(db, org, "locate-lists"), 0);

    /* Two Content-Length fields, equal or not: which one frames the body is ambiguous. */
    check_refused("POST /healthz HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 30\r\n"
                  "\r\nabcGET /nope HTTP/1.1\r\nHost: a\r\n\r\n",
                  400);
    check_refused("POST /healthz HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n"
                  "\r\nabc",
                  400);
    /* Whitespace before the colon: "Transfer-Encoding " is no field a proxy would agree on. */
    check_refused("POST /api/v1/locate-lists HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n"
                  "\r\n5\r\nhello\r\n0\r\n\r\nGET /nope HTTP/1.1\r\nHost: a\r\n\r\n",
                  400);
    /* HTTP/1.1 needs exactly one Host. */
    check_refused("GET /healthz HTTP/1.1\r\n\r\n", 400);
    check_refused("GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400);
    /* Codings other than chunked alone are not implemented. */
    check_refused(
        "POST /api/v1/locate-lists HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\nxx", 501);
    check_refused("POST /api/v1/locate-lists HTTP/1.1\r\nHost: a\r\n"
                  "Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
                  501);
    /* Content-Length with Transfer-Encoding: the coding frames the body, and the connection
     * closes after the answer. */
    check_refused("POST /healthz HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                  405);

    /* What is well framed is served as before, and HTTP/1.0 needs no Host. */
    http_response_t res;
    const char *ok = "GET /healthz HTTP/1.0\r\n\r\n";
    CHECK_INT(http_raw(service.port, ok, strlen(ok), &res), 0);
    CHECK_INT(res.status, 200);
    http_response_free(&res);
    const char *chunked = "POST /healthz HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                          "Connection: close\r\n\r\n0\r\n\r\n";
    CHECK_INT(http_raw(service.port, chunked, strlen(chunked), &res), 0);
    CHECK_INT(res.status, 405);
    http_response_free(&res);

    CHECK_INT(testdb_count(db, "SELECT count(*) FROM locate_lists"), 0);
    CHECK_INT(service_stop(&service), 0);
    PQfinish(db);
    return test_exit();
}
