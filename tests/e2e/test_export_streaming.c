/*
 * End to end over HTTP: the stock export streams (chunked, flat memory), is
 * conditional (ETag, If-None-Match -> 304) and gzip-coded on request
 * (RFC 9110 sections 8.8, 12.5.3, 13.1.2), server memory flat however many
 * SKUs there are.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "fixture.h"
#include "gunzip.h"
#include "service.h"
#include "testdb.h"

#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif

static service_t service;
static PGconn *db;
static uint16_t port;

/* One response read off the wire, with how its body was framed. */
typedef struct {
    int status;
    char *head; /* status line and header lines */
    unsigned char *body;
    size_t body_len;
    bool chunked;
    size_t chunks;
    bool complete; /* the body ended as its framing says (last chunk, length or close) */
} wire_response_t;

static void wire_free(wire_response_t *res)
{
    free(res->head);
    free(res->body);
    memset(res, 0, sizeof(*res));
}

static const char *wire_header(const wire_response_t *res, const char *name, char *buf, size_t size)
{
    http_response_t view = {.head = res->head};
    return http_header(&view, name, buf, size);
}

/* A raw buffer of received bytes. */
typedef struct {
    int fd;
    unsigned char *data;
    size_t len, pos, cap;
    size_t total;
    size_t hook_at;
    void (*hook)(void);
} reader_t;

/* Reads more bytes; false at EOF or error. */
static bool fill(reader_t *r)
{
    if (r->cap - r->len < 65536) {
        r->cap = r->cap ? r->cap * 2 : 131072;
        r->data = realloc(r->data, r->cap);
    }
    ssize_t n = recv(r->fd, r->data + r->len, r->cap - r->len, 0);
    if (n <= 0)
        return false;
    r->len += (size_t)n;
    r->total += (size_t)n;
    if (r->hook != NULL && r->total >= r->hook_at) {
        void (*hook)(void) = r->hook;
        r->hook = NULL;
        hook();
    }
    return true;
}

/* Position of "\r\n" at or after from, filling as needed; -1 at EOF. */
static long find_crlf(reader_t *r, size_t from)
{
    for (;;) {
        for (size_t i = from; i + 1 < r->len; i++)
            if (r->data[i] == '\r' && r->data[i + 1] == '\n')
                return (long)i;
        if (!fill(r))
            return -1;
    }
}

static bool need(reader_t *r, size_t bytes)
{
    while (r->len - r->pos < bytes)
        if (!fill(r))
            return false;
    return true;
}

static void append_body(wire_response_t *res, size_t *cap, const unsigned char *p, size_t n)
{
    if (res->body_len + n + 1 > *cap) {
        while (res->body_len + n + 1 > *cap)
            *cap = *cap ? *cap * 2 : 65536;
        res->body = realloc(res->body, *cap);
    }
    memcpy(res->body + res->body_len, p, n);
    res->body_len += n;
    res->body[res->body_len] = '\0';
}

/*
 * GET target over a kept-alive HTTP/1.1 connection (or HTTP/1.0 when asked),
 * reading the body by its framing, so that a body cut off by the server shows
 * as incomplete. hook runs once after hook_at bytes have arrived.
 */
static int wire_get(const char *version, const char *target, const char *key, const char *headers,
                    size_t hook_at, void (*hook)(void), wire_response_t *res)
{
    memset(res, 0, sizeof(*res));
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct timeval timeout = {20, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        close(fd);
        return -1;
    }
    char request[2048];
    int n = snprintf(request, sizeof(request),
                     "GET %s %s\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n%s\r\n", target,
                     version, key, headers ? headers : "");
    if (send(fd, request, (size_t)n, MSG_NOSIGNAL) != n) {
        close(fd);
        return -1;
    }
    reader_t r = {.fd = fd, .hook_at = hook_at, .hook = hook};
    size_t cap = 0;
    long head_end = -1;
    for (;;) {
        for (size_t i = 0; i + 3 < r.len && head_end < 0; i++)
            if (memcmp(r.data + i, "\r\n\r\n", 4) == 0)
                head_end = (long)i;
        if (head_end >= 0)
            break;
        if (!fill(&r)) {
            close(fd);
            free(r.data);
            return -1;
        }
    }
    res->head = strndup((const char *)r.data, (size_t)head_end + 2);
    sscanf(res->head, "HTTP/1.%*d %d", &res->status);
    r.pos = (size_t)head_end + 4;
    char value[64];
    res->chunked = wire_header(res, "Transfer-Encoding", value, sizeof(value)) != NULL &&
                   strcasecmp(value, "chunked") == 0;
    const char *length = wire_header(res, "Content-Length", value, sizeof(value));
    if (res->status == 304 || res->status == 204) {
        res->complete = true;
    } else if (res->chunked) {
        for (;;) {
            long line = find_crlf(&r, r.pos);
            if (line < 0)
                break;
            unsigned long size = strtoul((const char *)r.data + r.pos, NULL, 16);
            r.pos = (size_t)line + 2;
            if (size == 0) {
                res->complete = need(&r, 2) && memcmp(r.data + r.pos, "\r\n", 2) == 0;
                break;
            }
            if (!need(&r, size + 2))
                break;
            append_body(res, &cap, r.data + r.pos, size);
            res->chunks++;
            r.pos += size + 2;
        }
    } else if (length != NULL) {
        size_t want = strtoull(length, NULL, 10);
        res->complete = need(&r, want);
        append_body(res, &cap, r.data + r.pos, r.len - r.pos < want ? r.len - r.pos : want);
    } else {
        do
            append_body(res, &cap, r.data + r.pos, r.len - r.pos), r.pos = r.len;
        while (fill(&r));
        res->complete = true; /* delimited by the close */
    }
    if (res->body == NULL)
        append_body(res, &cap, (const unsigned char *)"", 0);
    close(fd);
    free(r.data);
    return 0;
}

static int wire_export(const char *key, const char *headers, wire_response_t *res)
{
    return wire_get("HTTP/1.1", "/api/v1/stock-export", key, headers, 0, NULL, res);
}

static char *header_copy(const wire_response_t *res, const char *name)
{
    char value[256];
    const char *v = wire_header(res, name, value, sizeof(value));
    return v ? strdup(v) : NULL;
}

/* The body's JSON, or NULL (and a failure) when it does not parse. */
static json_t *body_json(const wire_response_t *res)
{
    json_error_t error;
    json_t *json = json_loadb((const char *)res->body, res->body_len, 0, &error);
    if (json == NULL)
        FAIL("body is not JSON (%s): %.200s", error.text, (const char *)res->body);
    return json;
}

/* Length of the body before its generatedAt value, which differs from answer to answer. */
static size_t before_generated_at(const char *body, size_t len)
{
    static const char tail[] = "],\"generatedAt\":\"2";
    const char *at = NULL;
    for (const char *p = body; p != NULL && (size_t)(p - body) < len; p++) {
        p = strstr(p, tail);
        if (p == NULL)
            break;
        at = p;
    }
    return at ? (size_t)(at - body) : len;
}

static int64_t org_with_key(const char *slug, char key[WL_KEY_TOKEN_SIZE])
{
    int64_t org_id = fixture_org(db, slug);
    fixture_key(db, org_id, "stock:read", key);
    return org_id;
}

static void import_basics(int64_t org)
{
    fixture_import(db, org, "warehouses", "code,name,kind\nW1,Main,own\n");
    fixture_import(db, org, "locations", "warehouse,code,staging\nW1,A-1,false\nW1,A-2,false\n");
    fixture_import(db, org, "products", "sku,name,eans\nS-1,one,\nS-2,two,\nS-3,three,\n");
    fixture_import(db, org, "stock", "sku,warehouse,on_hand\nS-1,W1,5\nS-2,W1,7\nS-3,W1,0\n");
    fixture_import(db, org, "location-stock",
                   "sku,warehouse,location,quantity\nS-1,W1,A-1,5\nS-2,W1,A-2,7\n");
}

/* Chunked transfer, the headers of a 200, and the body in the JSON codec's exact form. */
static void test_chunked(void)
{
    char key[WL_KEY_TOKEN_SIZE];
    int64_t org = org_with_key("chunked", key);
    import_basics(org);
    /* Strings that need escaping, written straight into the export table. */
    char sql[512];
    snprintf(sql, sizeof(sql),
             "INSERT INTO stock_availability (org_id, sku, qty, location) VALUES"
             " (%lld, E'Q\"uote\\\\back/slash', 1, E'tab\\there\\nnl'),"
             " (%lld, E'ctl\\x01\\x1f\\x7f', 2, NULL),"
             " (%lld, E'uni\\u00e4\\u2028\\U0001F600', 3, E'\\u00c4-1')",
             (long long)org, (long long)org, (long long)org);
    testdb_exec(db, sql);

    wire_response_t res;
    CHECK_INT(wire_export(key, NULL, &res), 0);
    CHECK_INT(res.status, 200);
    CHECK(res.chunked);
    CHECK(res.complete);
    char value[256];
    CHECK(wire_header(&res, "Content-Length", value, sizeof(value)) == NULL);
    CHECK(wire_header(&res, "Content-Encoding", value, sizeof(value)) == NULL);
    CHECK_STR(wire_header(&res, "Content-Type", value, sizeof(value)), "application/json");
    CHECK_STR(wire_header(&res, "Cache-Control", value, sizeof(value)), "no-cache");
    CHECK_STR(wire_header(&res, "Vary", value, sizeof(value)), "Accept-Encoding");
    char etag[64];
    snprintf(etag, sizeof(etag), "\"%lld-", (long long)org);
    const char *got_etag = wire_header(&res, "ETag", value, sizeof(value));
    CHECK(got_etag != NULL && strncmp(got_etag, etag, strlen(etag)) == 0 &&
          got_etag[strlen(got_etag) - 1] == '"');

    json_t *json = body_json(&res);
    json_t *items = json_object_get(json, "items");
    CHECK_INT(json_array_size(items), 6);
    CHECK_STR(json_string_value(json_object_get(json_array_get(items, 0), "sku")),
              "Q\"uote\\back/slash");
    CHECK_STR(json_string_value(json_object_get(json_array_get(items, 0), "location")),
              "tab\there\nnl");
    CHECK_STR(json_string_value(json_object_get(json_array_get(items, 4), "sku")),
              "ctl\x01\x1f\x7f");
    CHECK_STR(json_string_value(json_object_get(json_array_get(items, 5), "sku")),
              "uni\xc3\xa4\xe2\x80\xa8\xf0\x9f\x98\x80");
    CHECK(json_is_null(json_object_get(json_array_get(items, 3), "location")));
    CHECK(json_is_null(json_object_get(json_array_get(items, 4), "location")));
    CHECK_STR(json_string_value(json_object_get(json_array_get(items, 5), "location")),
              "\xc3\x84-1");
    /* Byte for byte what the JSON codec (jansson, compact, in order) writes. */
    char *canonical = json_dumps(json, JSON_COMPACT | JSON_PRESERVE_ORDER);
    CHECK(canonical != NULL && strlen(canonical) == res.body_len &&
          memcmp(canonical, res.body, res.body_len) == 0);
    if (canonical != NULL && strcmp(canonical, (const char *)res.body) != 0)
        fprintf(stderr, "  canonical %s\n  streamed  %s\n", canonical, (const char *)res.body);
    free(canonical);
    json_decref(json);
    wire_free(&res);

    /* An HTTP/1.0 client gets the same body, delimited by the connection's close. */
    CHECK_INT(wire_get("HTTP/1.0", "/api/v1/stock-export", key, NULL, 0, NULL, &res), 0);
    CHECK_INT(res.status, 200);
    CHECK(!res.chunked);
    json = body_json(&res);
    CHECK_INT(json_array_size(json_object_get(json, "items")), 6);
    json_decref(json);
    wire_free(&res);
}

/* Takes a lock that makes any read of stock_availability wait, in db's open transaction. */
static void lock_export_table(void)
{
    testdb_exec(db, "BEGIN");
    testdb_exec(db, "LOCK TABLE stock_availability IN ACCESS EXCLUSIVE MODE");
}

/* ETag, 304 and which writes move the ETag. */
static void test_conditional(void)
{
    char key[WL_KEY_TOKEN_SIZE], other_key[WL_KEY_TOKEN_SIZE];
    int64_t org = org_with_key("conditional", key);
    int64_t other = org_with_key("conditional-other", other_key);
    import_basics(org);
    import_basics(other);

    wire_response_t first, res;
    CHECK_INT(wire_export(key, NULL, &first), 0);
    CHECK_INT(first.status, 200);
    char *etag = header_copy(&first, "ETag");
    CHECK(etag != NULL);
    if (etag == NULL)
        return;
    CHECK_INT(wire_export(key, NULL, &res), 0);
    CHECK_INT(res.status, 200);
    char value[256];
    CHECK_STR(wire_header(&res, "ETag", value, sizeof(value)), etag);
    /* Same data: the bodies differ at most in generatedAt. */
    CHECK(before_generated_at((char *)res.body, res.body_len) ==
              before_generated_at((char *)first.body, first.body_len) &&
          memcmp(res.body, first.body, before_generated_at((char *)res.body, res.body_len)) == 0);
    wire_free(&res);
    wire_free(&first);

    /* 304 for the current ETag: alone, in a list, weak, "*", over several field lines;
     * answered while stock_availability is locked, so without reading it. */
    char headers[512];
    const char *matching[] = {"%s",   "\"0-0\", %s", "W/\"x\" ,, %s ,",
                              "W/%s", "*",           "\"nope\"\r\nIf-None-Match: %s"};
    lock_export_table();
    for (size_t i = 0; i < sizeof(matching) / sizeof(matching[0]); i++) {
        char list[256];
        snprintf(list, sizeof(list), matching[i], etag);
        snprintf(headers, sizeof(headers), "If-None-Match: %s\r\n", list);
        CHECK_INT(wire_export(key, headers, &res), 0);
        if (res.status != 304)
            FAIL("If-None-Match: %s got %d", list, res.status);
        CHECK_STR(wire_header(&res, "ETag", value, sizeof(value)), etag);
        CHECK_STR(wire_header(&res, "Vary", value, sizeof(value)), "Accept-Encoding");
        CHECK_STR(wire_header(&res, "Cache-Control", value, sizeof(value)), "no-cache");
        CHECK(wire_header(&res, "Content-Type", value, sizeof(value)) == NULL);
        /* libmicrohttpd 0.9.75 adds "Content-Length: 0" to a 304 and cannot be told not to. */
        CHECK(!res.chunked && res.body_len == 0);
        wire_free(&res);
    }
    testdb_exec(db, "ROLLBACK");

    /* Tags that do not match, or a field that is not a list of tags: the full answer. */
    char other_etag_value[64];
    snprintf(other_etag_value, sizeof(other_etag_value), "\"%lld-%s", (long long)other,
             strchr(etag, '-') + 1);
    char unquoted[128];
    snprintf(unquoted, sizeof(unquoted), "%.*s", (int)strlen(etag) - 2, etag + 1);
    const char *not_matching[] = {"\"0-0\"", other_etag_value, unquoted, "w/x", ""};
    for (size_t i = 0; i < sizeof(not_matching) / sizeof(not_matching[0]); i++) {
        snprintf(headers, sizeof(headers), "If-None-Match: %s\r\n", not_matching[i]);
        CHECK_INT(wire_export(key, headers, &res), 0);
        if (res.status != 200 || !res.complete)
            FAIL("If-None-Match: %s got %d", not_matching[i], res.status);
        wire_free(&res);
    }

    /* Writes that change nothing exported keep the ETag: the same stock again, a product
     * renamed, a new product without stock, another organization's change. */
    fixture_import(db, org, "stock", "sku,warehouse,on_hand\nS-1,W1,5\nS-2,W1,7\n");
    fixture_import(db, org, "products", "sku,name,eans\nS-1,renamed,123\nS-9,new,\n");
    fixture_import(db, org, "location-stock", "sku,warehouse,location,quantity\nS-2,W1,A-2,7\n");
    fixture_import(db, other, "stock", "sku,warehouse,on_hand\nS-1,W1,500\n");
    snprintf(headers, sizeof(headers), "If-None-Match: %s\r\n", etag);
    CHECK_INT(wire_export(key, headers, &res), 0);
    CHECK_INT(res.status, 304);
    wire_free(&res);

    /* A change to an exported value moves it: a stale tag gets 200 with the new data. */
    fixture_import(db, org, "stock", "sku,warehouse,on_hand\nS-1,W1,6\n");
    CHECK_INT(wire_export(key, headers, &res), 0);
    CHECK_INT(res.status, 200);
    char *etag2 = header_copy(&res, "ETag");
    CHECK(etag2 != NULL && strcmp(etag2, etag) != 0);
    json_t *json = body_json(&res);
    CHECK_INT(json_integer_value(
                  json_object_get(json_array_get(json_object_get(json, "items"), 0), "qty")),
              6);
    json_decref(json);
    wire_free(&res);
    snprintf(headers, sizeof(headers), "If-None-Match: %s\r\n", etag2 ? etag2 : "");
    CHECK_INT(wire_export(key, headers, &res), 0);
    CHECK_INT(res.status, 304);
    wire_free(&res);

    /* So do a new primary location, a SKU leaving the export and one joining it. */
    const char *changes[][2] = {
        {"location-stock", "sku,warehouse,location,quantity\nS-1,W1,A-2,9\n"},
        {"locations", "warehouse,code,staging\nW1,A-2,true\n"},
        {"stock", "sku,warehouse,on_hand\nS-9,W1,1\n"},
    };
    char *previous = etag2;
    for (size_t i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
        fixture_import(db, org, changes[i][0], changes[i][1]);
        CHECK_INT(wire_export(key, NULL, &res), 0);
        char *next = header_copy(&res, "ETag");
        if (next == NULL || previous == NULL || strcmp(next, previous) == 0)
            FAIL("the ETag did not move after the %s import", changes[i][0]);
        free(previous);
        previous = next;
        wire_free(&res);
    }
    free(previous);
    free(etag);
}

/* gzip when asked for (q-values and "*" honoured), decompressing to the plain body. */
static void test_gzip(void)
{
    char key[WL_KEY_TOKEN_SIZE];
    int64_t org = org_with_key("gzip", key);
    char sql[512];
    /* Enough rows for the body to take many pieces and chunks. */
    snprintf(sql, sizeof(sql),
             "INSERT INTO stock_availability (org_id, sku, qty, location)"
             " SELECT %lld, 'G-' || lpad(i::text, 6, '0'), i %% 97,"
             " CASE WHEN i %% 5 = 0 THEN NULL ELSE 'R-' || (i %% 300) END"
             " FROM generate_series(1, 20000) AS i",
             (long long)org);
    testdb_exec(db, sql);

    wire_response_t plain, res;
    CHECK_INT(wire_export(key, "Accept-Encoding: identity\r\n", &plain), 0);
    CHECK_INT(plain.status, 200);
    char value[256];
    CHECK(wire_header(&plain, "Content-Encoding", value, sizeof(value)) == NULL);
    char *plain_etag = header_copy(&plain, "ETag");
    size_t plain_prefix = before_generated_at((char *)plain.body, plain.body_len);

    CHECK_INT(wire_export(key, "Accept-Encoding: gzip, deflate, br\r\n", &res), 0);
    CHECK_INT(res.status, 200);
    CHECK(res.chunked && res.complete && res.chunks > 1);
    CHECK_STR(wire_header(&res, "Content-Encoding", value, sizeof(value)), "gzip");
    CHECK_STR(wire_header(&res, "Vary", value, sizeof(value)), "Accept-Encoding");
    char *gzip_etag = header_copy(&res, "ETag");
    /* Different bytes, different strong tag: the plain one with "-gzip". */
    char expected_etag[128];
    snprintf(expected_etag, sizeof(expected_etag), "%.*s-gzip\"",
             plain_etag ? (int)strlen(plain_etag) - 1 : 0, plain_etag ? plain_etag : "");
    CHECK_STR(gzip_etag, expected_etag);
    CHECK(res.body_len < plain.body_len / 3);
    size_t text_len = 0;
    char *text = gunzip(res.body, res.body_len, true, &text_len);
    CHECK(text != NULL);
    if (text != NULL) {
        size_t prefix = before_generated_at(text, text_len);
        CHECK(prefix == plain_prefix && memcmp(text, plain.body, prefix) == 0);
        CHECK_INT(text_len, plain.body_len); /* generatedAt has one fixed width */
        json_error_t error;
        json_t *json = json_loadb(text, text_len, 0, &error);
        CHECK_INT(json_array_size(json_object_get(json, "items")), 20000);
        json_decref(json);
    }
    free(text);
    wire_free(&res);

    /* Which Accept-Encoding values get gzip. */
    const struct {
        const char *value;
        bool gzip;
    } cases[] = {
        {"gzip", true},
        {"GZIP;q=0.5", true},
        {"x-gzip", true},
        {"*", true},
        {"br, *;q=0.1", true},
        {"gzip;q=0", false},
        {"gzip;q=0.000, *", false},
        {"*;q=0", false},
        {"identity", false},
        {"br, deflate", false},
        {"identity;q=1, gzip;q=0.5", false},
        {"identity;q=0.5, gzip", true},
        {"gzip;q=2", false},
        {"", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char headers[256];
        snprintf(headers, sizeof(headers), "Accept-Encoding: %s\r\n", cases[i].value);
        CHECK_INT(wire_export(key, headers, &res), 0);
        bool coded = wire_header(&res, "Content-Encoding", value, sizeof(value)) != NULL;
        if (res.status != 200 || coded != cases[i].gzip || !res.complete)
            FAIL("Accept-Encoding: %s: status %d, gzip %d", cases[i].value, res.status, coded);
        wire_free(&res);
    }

    /* Conditional requests compare the tag of the coding that would be sent. */
    char headers[512];
    snprintf(headers, sizeof(headers), "Accept-Encoding: gzip\r\nIf-None-Match: %s\r\n",
             gzip_etag ? gzip_etag : "");
    CHECK_INT(wire_export(key, headers, &res), 0);
    CHECK_INT(res.status, 304);
    CHECK_STR(wire_header(&res, "ETag", value, sizeof(value)), gzip_etag);
    wire_free(&res);
    snprintf(headers, sizeof(headers), "Accept-Encoding: gzip\r\nIf-None-Match: %s\r\n",
             plain_etag ? plain_etag : "");
    CHECK_INT(wire_export(key, headers, &res), 0);
    CHECK_INT(res.status, 200);
    CHECK_STR(wire_header(&res, "Content-Encoding", value, sizeof(value)), "gzip");
    wire_free(&res);
    snprintf(headers, sizeof(headers), "If-None-Match: %s\r\n", gzip_etag ? gzip_etag : "");
    CHECK_INT(wire_export(key, headers, &res), 0);
    CHECK_INT(res.status, 200);
    wire_free(&res);

    free(plain_etag);
    free(gzip_etag);
    wire_free(&plain);
}

static long peak_rss_kib(void)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)service.pid);
    FILE *f = fopen(path, "r");
    long kib = -1;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, "VmHWM:", 6) == 0)
            kib = strtol(line + 6, NULL, 10);
    if (f != NULL)
        fclose(f);
    return kib;
}

static double seconds_since(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

#define LARGE_SKUS 200000

static char large_key[WL_KEY_TOKEN_SIZE];

/* Counts the server's connections that sit in an open transaction. */
static long long open_transactions(void)
{
    return testdb_count(db, "SELECT count(*) FROM pg_stat_activity"
                            " WHERE datname = current_database() AND application_name = 'walklist'"
                            " AND state LIKE 'idle in transaction%'");
}

static void wait_for_no_open_transactions(const char *after)
{
    for (int attempt = 0; attempt < 100 && open_transactions() != 0; attempt++) {
        struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    if (open_transactions() != 0)
        FAIL("a transaction of walklistd stayed open after %s", after);
}

/* A catalogue of 200,000 SKUs streams with flat memory. */
static void test_large(void)
{
    int64_t org = org_with_key("large", large_key);
    char sql[512];
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    snprintf(sql, sizeof(sql),
             "INSERT INTO stock_availability (org_id, sku, qty, location)"
             " SELECT %lld, 'SKU-' || lpad(i::text, 7, '0'), i %% 1000,"
             " CASE WHEN i %% 3 = 0 THEN NULL ELSE 'A-' || (i %% 500) || '-' || (i %% 7) END"
             " FROM generate_series(1, %d) AS i",
             (long long)org, LARGE_SKUS);
    testdb_exec(db, sql);
    testdb_exec(db, "ANALYZE stock_availability");
    fprintf(stderr, "inserted %d SKUs in %.2f s\n", LARGE_SKUS, seconds_since(&start));

    const char *codings[] = {NULL, "Accept-Encoding: gzip\r\n"};
    for (size_t c = 0; c < 2; c++) {
        long before = peak_rss_kib();
        clock_gettime(CLOCK_MONOTONIC, &start);
        wire_response_t res;
        CHECK_INT(wire_export(large_key, codings[c], &res), 0);
        double elapsed = seconds_since(&start);
        long after = peak_rss_kib();
        CHECK_INT(res.status, 200);
        CHECK(res.chunked && res.complete);
        char *text = (char *)res.body;
        size_t text_len = res.body_len;
        if (codings[c] != NULL)
            text = gunzip(res.body, res.body_len, true, &text_len);
        json_error_t error;
        json_t *json = text ? json_loadb(text, text_len, 0, &error) : NULL;
        json_t *items = json_object_get(json, "items");
        CHECK_INT(json_array_size(items), LARGE_SKUS);
        CHECK_STR(json_string_value(json_object_get(json_array_get(items, 0), "sku")),
                  "SKU-0000001");
        CHECK_STR(json_string_value(json_object_get(json_array_get(items, LARGE_SKUS - 1), "sku")),
                  "SKU-0200000");
        CHECK(json_is_string(json_object_get(json, "generatedAt")));
        fprintf(stderr,
                "%s export of %d SKUs: %zu bytes (%zu chunks) in %.2f s; walklistd peak RSS "
                "%ld -> %ld KiB (+%ld KiB)\n",
                codings[c] ? "gzip" : "plain", LARGE_SKUS, res.body_len, res.chunks, elapsed,
                before, after, after - before);
        CHECK(before > 0 && after - before < 32 * 1024);
        CHECK(elapsed < 15.0);
        json_decref(json);
        if (text != (char *)res.body)
            free(text);
        wire_free(&res);
    }
    /* Every export gave its connection back, transaction closed. */
    wait_for_no_open_transactions("the large exports");
}

static void kill_export_backend(void)
{
    /* The export's connection is in its COPY (waiting for walklistd to take more rows), or
     * idle in its transaction just before it. */
    long long killed = 0;
    for (int attempt = 0; attempt < 100 && killed == 0; attempt++) {
        killed =
            testdb_count(db, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                             " WHERE datname = current_database() AND application_name = 'walklist'"
                             " AND (state LIKE 'idle in transaction%'"
                             " OR (state = 'active' AND query LIKE 'COPY %'))");
        if (killed == 0) {
            struct timespec pause = {0, 10 * 1000 * 1000};
            nanosleep(&pause, NULL);
        }
    }
    CHECK(killed > 0);
}

/* A client that leaves half way, and a database that fails half way. */
static void test_interrupted(void)
{
    /* Clients that hang up early: their connections come back to the pool, more of them
     * than the pool holds. Each export is read from the database (a new version each time,
     * not walklistd's cache), so each leaves a COPY half read: its connection is shut, not
     * drained, and that is no failure of the database. */
    for (int i = 0; i < 12; i++) {
        testdb_exec(db, "INSERT INTO export_versions AS v (org_id, version)"
                        " SELECT org_id, 1 FROM organizations"
                        " ON CONFLICT (org_id) DO UPDATE SET version = v.version + 1");
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        CHECK(connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0);
        char request[512];
        int n = snprintf(request, sizeof(request),
                         "GET /api/v1/stock-export HTTP/1.1\r\nHost: x\r\n"
                         "Authorization: Bearer %s\r\n\r\n",
                         large_key);
        CHECK(send(fd, request, (size_t)n, MSG_NOSIGNAL) == n);
        char buf[65536];
        CHECK(recv(fd, buf, sizeof(buf), MSG_WAITALL) > 0);
        /* A reset rather than an orderly close, as from a client that died. */
        struct linger reset = {1, 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
        close(fd);
    }
    wait_for_no_open_transactions("clients hung up");
    http_response_t metrics = e2e_request(port, "GET", "/metrics", NULL, NULL, NULL);
    CHECK(metrics.body != NULL && strstr(metrics.body, "walklist_db_reachable 1\n") != NULL);
    http_response_free(&metrics);
    char *hung_up_log = service_log(&service);
    CHECK(strstr(hung_up_log, "database unreachable") == NULL);
    free(hung_up_log);
    wire_response_t res;
    CHECK_INT(wire_export(large_key, NULL, &res), 0);
    CHECK(res.status == 200 && res.complete);
    wire_free(&res);

    /* The database goes away after the first bytes: the body is cut off, never closed
     * into a complete-looking document. (A new version first, so that the export is read
     * from the database rather than from walklistd's cache of the unchanged one.) */
    testdb_exec(db, "INSERT INTO export_versions AS v (org_id, version)"
                    " SELECT org_id, 1 FROM organizations"
                    " ON CONFLICT (org_id) DO UPDATE SET version = v.version + 1");
    CHECK_INT(wire_get("HTTP/1.1", "/api/v1/stock-export", large_key, NULL, 64 * 1024,
                       kill_export_backend, &res),
              0);
    CHECK_INT(res.status, 200);
    CHECK(!res.complete);
    CHECK(res.body_len > 0);
    CHECK(json_loadb((const char *)res.body, res.body_len, 0, NULL) == NULL);
    wire_free(&res);
    char *log = service_log(&service);
    CHECK(strstr(log, "stock export cut off") != NULL);
    free(log);

    /* And the service carries on with a fresh connection. */
    wait_for_no_open_transactions("the database failed");
    CHECK_INT(wire_export(large_key, NULL, &res), 0);
    CHECK(res.status == 200 && res.complete);
    wire_free(&res);
}

int main(void)
{
#ifdef TEST_ASAN
    /* AddressSanitizer keeps freed memory in quarantine (256 MiB by default), which would
     * count every freed row batch as growth; a small one keeps the peak about live memory. */
    char asan_options[512];
    const char *given = getenv("ASAN_OPTIONS");
    snprintf(asan_options, sizeof(asan_options), "%s%squarantine_size_mb=4", given ? given : "",
             given && given[0] ? ":" : "");
    setenv("ASAN_OPTIONS", asan_options, 1);
#endif
    const char *conninfo = testdb_create("e2e_export_streaming");
    db = testdb_connect(conninfo);
    service_start(&service, conninfo, NULL);
    port = service.port;

    test_chunked();
    test_conditional();
    test_gzip();
    test_large();
    test_interrupted();

    CHECK_INT(service_stop(&service), 0);
    PQfinish(db);
    return test_exit();
}
