/*
 * HTTP/1.1 framing (RFC 9112) at the edge: the shapes that let one request smuggle another are
 * answered once, with Connection: close, and nothing after them on the connection is served;
 * a lone Content-Length or chunked body is read as before. A refused request writes nothing and
 * is not counted, even with a valid key and a valid body.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"

static service_t service;

/* Sends request as it is (len bytes, NULs included); checks the one answer's status, that it
 * closes the connection, and that nothing smuggled behind it was answered. */
static void check_refused_n(const char *request, size_t len, int status)
{
    http_response_t res;
    CHECK_INT(http_raw(service.port, request, len, &res), 0);
    CHECK_INT(res.status, status);
    char value[32];
    CHECK_STR(http_header(&res, "Connection", value, sizeof(value)), "close");
    /* A second answer would follow the first one's body, starting a line with "HTTP/". */
    CHECK(res.body == NULL ||
          (strncmp(res.body, "HTTP/", 5) != 0 && strstr(res.body, "\nHTTP/") == NULL &&
           strstr(res.body, "}HTTP/") == NULL));
    http_response_free(&res);
}

static void check_refused(const char *request, int status)
{
    check_refused_n(request, strlen(request), status);
}

/* A creation with a valid key: host (the Host line, or ""), fields framing its body, then what
 * follows the head as it is (the body, its chunks, anything smuggled behind). */
static void check_list_refused(const char *key, const char *host, const char *fields,
                               const char *after_head, int status)
{
    char request[2048];
    snprintf(request, sizeof(request),
             "POST /api/v1/locate-lists HTTP/1.1\r\n%sAuthorization: Bearer %s\r\n"
             "Content-Type: application/json\r\n%s\r\n%s",
             host, key, fields, after_head);
    check_refused(request, status);
}

static int connect_service(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(service.port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval timeout = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    CHECK(connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0);
    return fd;
}

/* Reads one answer's status line (within the receive timeout); 0 when none came. */
static int read_status(int fd)
{
    char buf[256] = "";
    ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
    int status = 0;
    if (n > 0)
        sscanf(buf, "HTTP/1.1 %d", &status);
    return status;
}

/* A Content-Length over the limit is answered 413 before the body: without Expect, when the
 * body never comes, and when it streams in (the answer is read, not a reset: the rest of the
 * body is drained after it). */
static void check_413_before_body(const char *key)
{
    char head[512];
    snprintf(head, sizeof(head),
             "POST /api/v1/locate-lists HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer %s\r\n"
             "Content-Type: application/json\r\nContent-Length: 900000\r\n\r\n",
             key);
    int fd = connect_service();
    CHECK(send(fd, head, strlen(head), 0) == (ssize_t)strlen(head));
    CHECK_INT(read_status(fd), 413); /* no byte of the body was sent */
    close(fd);

    fd = connect_service();
    static char body[900000];
    memset(body, 'a', sizeof(body));
    CHECK(send(fd, head, strlen(head), 0) == (ssize_t)strlen(head));
    size_t sent = 0;
    while (sent < sizeof(body)) {
        ssize_t n = send(fd, body + sent, sizeof(body) - sent, MSG_NOSIGNAL);
        if (n <= 0)
            break;
        sent += (size_t)n;
    }
    CHECK_INT(sent, sizeof(body)); /* drained, not reset */
    CHECK_INT(read_status(fd), 413);
    close(fd);
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
    const char *body = "{\"name\":\"Smuggled\",\"codes\":[\"A\"]}";
    char lengths[128], length[64], chunks[256];
    snprintf(lengths, sizeof(lengths), "Content-Length: %zu\r\nContent-Length: %zu\r\n",
             strlen(body), strlen(body));
    snprintf(length, sizeof(length), "Content-Length: %zu\r\n", strlen(body));
    check_list_refused(key, "Host: a\r\n", lengths, body, 400);
    check_list_refused(key, "", length, body, 400);
    check_list_refused(key, "Host: a\r\n", "Transfer-Encoding: gzip\r\n", body, 501);
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

    /* Every line ends with CRLF: a bare LF in the request line, a field line or the blank line
     * is read differently by different parsers. */
    check_refused("GET /healthz HTTP/1.1\nHost: a\r\n\r\nGET /nope HTTP/1.1\r\nHost: a\r\n\r\n",
                  400);
    check_refused("GET /healthz HTTP/1.1\r\nHost: a\nX-A: b\r\n\r\n", 400);
    check_refused("GET /healthz HTTP/1.1\r\nHost: a\r\n\nGET /nope HTTP/1.1\r\nHost: a\r\n\r\n",
                  400);
    /* obs-fold (RFC 9112 5.2: reject), a lone CR or another control byte in a value. */
    check_refused("GET /healthz HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n", 400);
    check_refused("GET /healthz HTTP/1.1\r\nHost: a\r\nX-A: b\rc\r\n\r\n", 400);
    check_refused("GET /healthz HTTP/1.1\r\nHost: a\r\nX-A: b\x01c\r\n\r\n", 400);
    /* The request line: a NUL in the target (which would cut it short: /healthz answered for
     * /metrics), a control byte, a space, or more than one space between its parts. */
    const char nul_target[] = "GET /healthz\0/../metrics HTTP/1.1\r\nHost: a\r\n\r\n";
    check_refused_n(nul_target, sizeof(nul_target) - 1, 400);
    check_refused("GET /healthz\x01 HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    check_refused("GET /health z HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    check_refused("GET  /healthz HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    check_refused("GET /healthz  HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    /* A NUL after a valid key: the key is not taken, nothing is written. */
    char with_nul[1024];
    int len = snprintf(with_nul, sizeof(with_nul),
                       "POST /api/v1/locate-lists HTTP/1.1\r\nHost: a\r\n"
                       "Authorization: Bearer %s@junk\r\nContent-Type: application/json\r\n"
                       "Content-Length: %zu\r\n\r\n%s",
                       key, strlen(body), body);
    *strchr(with_nul, '@') = '\0';
    check_refused_n(with_nul, (size_t)len, 400);
    CHECK_INT(testdb_count(db, "SELECT count(*) FROM locate_lists"), 0);
    CHECK_INT(fixture_counted(db, org, "locate-lists"), 0);

    /* What libmicrohttpd decodes or parses before any callback, refused in front of it
     * (gateway/http/wire_guard.c): a bare LF ending a chunk-size line or a chunk's data, chunk data
     * longer than its size, a Content-Length that is no number of bytes (libmicrohttpd would
     * write its own status line twice). One answer each, and nothing behind it served. */
    snprintf(chunks, sizeof(chunks), "%zx\n%s\r\n0\r\n\r\nGET /nope HTTP/1.1\r\nHost: a\r\n\r\n",
             strlen(body), body);
    check_list_refused(key, "Host: a\r\n", "Transfer-Encoding: chunked\r\n", chunks, 400);
    snprintf(chunks, sizeof(chunks), "%zx\r\n%s\n0\r\n\r\n", strlen(body), body);
    check_list_refused(key, "Host: a\r\n", "Transfer-Encoding: chunked\r\n", chunks, 400);
    check_refused("POST /healthz HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "3\r\nabcdef\r\n0\r\n\r\n",
                  400);
    check_refused("POST /healthz HTTP/1.1\r\nHost: a\r\nContent-Length: 18446744073709551616\r\n"
                  "\r\n",
                  400);
    check_refused("POST /healthz HTTP/1.1\r\nHost: a\r\nContent-Length: 12abc\r\n\r\n", 400);
    CHECK_INT(testdb_count(db, "SELECT count(*) FROM locate_lists"), 0);
    CHECK_INT(fixture_counted(db, org, "locate-lists"), 0);

    check_413_before_body(key);

    /* What is well framed is served as before, and HTTP/1.0 needs no Host. */
    http_response_t res;
    const char *query = "GET /healthz?a=b%20c&d HTTP/1.1\r\nHost: a\r\nX-Empty:\r\n"
                        "X-Tabs:\tv\t\r\nCookie: a=b; c=d\r\nConnection: close\r\n\r\n";
    CHECK_INT(http_raw(service.port, query, strlen(query), &res), 0);
    CHECK_INT(res.status, 200);
    http_response_free(&res);
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
