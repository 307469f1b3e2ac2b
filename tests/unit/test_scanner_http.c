/*
 * The scanner firmware library's HTTP side (src/scanner: walklist/scanner_http.h, scanner_error.h,
 * scanner_exchange.h): requests byte for byte, responses fed in every fragment size from one
 * byte to the whole, malformed answers refused, error answers mapped to result codes.
 */
#include <stdlib.h>
#include <string.h>

#include <pb_encode.h>

#include "test.h"
#include "walklist/scanner_exchange.h"

/* --- the parser, fed in fragments of one size --------------------------------------------- */

typedef struct {
    int rc; /* WL_SCANNER_HTTP_DONE or the error */
    int status;
    bool proto, json, chunked;
    uint32_t retry_after;
    char body[256];
    size_t body_len;
    size_t leftover; /* bytes after the response, left unconsumed */
} parsed_t;

static parsed_t parse_in(const char *text, size_t len, size_t fragment, uint64_t limit)
{
    parsed_t out = {0};
    wl_scanner_http_t http;
    wl_scanner_http_init(&http, limit);
    const uint8_t *data = (const uint8_t *)text;
    size_t pos = 0;
    while (pos < len) {
        size_t n = len - pos < fragment ? len - pos : fragment;
        size_t at = 0;
        while (at < n) {
            size_t used;
            wl_scanner_span_t body;
            int ev = wl_scanner_http_parse(&http, data + pos + at, n - at, &used, &body);
            CHECK(used <= n - at);
            at += used;
            if (ev < 0) {
                out.rc = ev;
                return out;
            }
            if (ev == WL_SCANNER_HTTP_HEAD) {
                out.status = http.status;
                out.proto = http.proto;
                out.json = http.json;
                out.chunked = http.chunked;
                out.retry_after = http.retry_after;
            } else if (ev == WL_SCANNER_HTTP_BODY) {
                CHECK(body.len > 0 && out.body_len + body.len < sizeof(out.body));
                memcpy(out.body + out.body_len, body.base, body.len);
                out.body_len += body.len;
            } else if (ev == WL_SCANNER_HTTP_DONE) {
                out.rc = ev;
                out.leftover = len - pos - at;
                return out;
            } else {
                CHECK_INT(at, n); /* MORE consumes everything */
            }
        }
        pos += n;
    }
    out.rc = wl_scanner_http_finish(&http);
    return out;
}

typedef struct {
    const char *label;
    const char *response;
    int rc;
    int status;
    const char *body;
    uint64_t limit;
} parse_case_t;

#define OK_HEAD "HTTP/1.1 200 OK\r\nContent-Type: application/proto\r\n"

static const parse_case_t parse_cases[] = {
    {"content-length", OK_HEAD "Content-Length: 5\r\n\r\nhello", WL_SCANNER_HTTP_DONE, 200, "hello",
     0},
    {"chunked with extensions and trailer",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;name=value\r\nhel\r\n2\r\nlo\r\n"
     "0\r\nX-Trailer: yes\r\n\r\n",
     WL_SCANNER_HTTP_DONE, 200, "hello", 0},
    {"chunked, uppercase hex, chunked wins over content-length",
     "HTTP/1.1 200 OK\r\nContent-Length: 99\r\ntransfer-encoding:  Chunked \r\n\r\nA\r\n0123456789"
     "\r\n0\r\n\r\n",
     WL_SCANNER_HTTP_DONE, 200, "0123456789", 0},
    {"until close, HTTP/1.0", "HTTP/1.0 200 OK\r\n\r\nhello", WL_SCANNER_HTTP_DONE, 200, "hello",
     0},
    {"bare LF line ends", "HTTP/1.1 200 OK\nContent-Length: 2\n\nhi", WL_SCANNER_HTTP_DONE, 200,
     "hi", 0},
    {"no reason phrase", "HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n", WL_SCANNER_HTTP_DONE, 404, "",
     0},
    {"interim 100 skipped",
     "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx",
     WL_SCANNER_HTTP_DONE, 201, "x", 0},
    {"204 has no body", "HTTP/1.1 204 No Content\r\n\r\n", WL_SCANNER_HTTP_DONE, 204, "", 0},
    {"repeated equal content-length", OK_HEAD "Content-Length: 2\r\nContent-Length: 2\r\n\r\nok",
     WL_SCANNER_HTTP_DONE, 200, "ok", 0},
    {"unknown fields with odd bytes",
     OK_HEAD "X-A: \xc3\xa9t\xc3\xa9\r\nContent-Lengthy: 9\r\n"
             "Content-Length: 1\r\n\r\n!",
     WL_SCANNER_HTTP_DONE, 200, "!", 0},
    {"body at its limit", OK_HEAD "Content-Length: 5\r\n\r\nhello", WL_SCANNER_HTTP_DONE, 200,
     "hello", 5},
    {"bare CR", "HTTP/1.1 200 OK\rContent-Length: 0\r\n\r\n", WL_SCANNER_EHTTP, 0, NULL, 0},
    {"obs-fold", OK_HEAD "X-A: a\r\n b\r\nContent-Length: 0\r\n\r\n", WL_SCANNER_EHTTP, 0, NULL, 0},
    {"space before colon", OK_HEAD "Content-Length : 0\r\n\r\n", WL_SCANNER_EHTTP, 0, NULL, 0},
    {"two content-lengths", OK_HEAD "Content-Length: 2\r\nContent-Length: 3\r\n\r\nabc",
     WL_SCANNER_EHTTP, 0, NULL, 0},
    {"content-length list", OK_HEAD "Content-Length: 2, 2\r\n\r\nab", WL_SCANNER_EHTTP, 0, NULL, 0},
    {"negative content-length", OK_HEAD "Content-Length: -1\r\n\r\n", WL_SCANNER_EHTTP, 0, NULL, 0},
    {"empty content-length", OK_HEAD "Content-Length:\r\n\r\n", WL_SCANNER_EHTTP, 0, NULL, 0},
    {"huge content-length", OK_HEAD "Content-Length: 99999999999999999999999\r\n\r\n",
     WL_SCANNER_EHTTP, 0, NULL, 0},
    {"gzip", OK_HEAD "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", WL_SCANNER_EHTTP, 0, NULL,
     0},
    {"chunked twice", OK_HEAD "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
     WL_SCANNER_EHTTP, 0, NULL, 0},
    {"control byte in a value", OK_HEAD "X-A: a\x01b\r\n\r\n", WL_SCANNER_EHTTP, 0, NULL, 0},
    {"HTTP/2 status line", "HTTP/2 200\r\n\r\n", WL_SCANNER_EHTTP, 0, NULL, 0},
    {"two-digit status", "HTTP/1.1 20 OK\r\n\r\n", WL_SCANNER_EHTTP, 0, NULL, 0},
    {"101", "HTTP/1.1 101 Switching\r\n\r\n", WL_SCANNER_EHTTP, 0, NULL, 0},
    {"chunk longer than its size",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n",
     WL_SCANNER_EHTTP, 0, NULL, 0},
    {"chunk size not hex", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
     WL_SCANNER_EHTTP, 0, NULL, 0},
    {"chunk size overflows",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n11111111111111111\r\n",
     WL_SCANNER_ETOO_LARGE, 0, NULL, 0},
    {"content-length over the limit", OK_HEAD "Content-Length: 6\r\n\r\nhello!",
     WL_SCANNER_ETOO_LARGE, 0, NULL, 5},
    {"chunks over the limit",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n3\r\nlo!\r\n0\r\n\r\n",
     WL_SCANNER_ETOO_LARGE, 0, NULL, 5},
    {"until close over the limit", "HTTP/1.1 200 OK\r\n\r\nhello!", WL_SCANNER_ETOO_LARGE, 0, NULL,
     5},
    {"cut in the body", OK_HEAD "Content-Length: 10\r\n\r\nhello", WL_SCANNER_ECLOSED, 0, NULL, 0},
    {"cut in the head", OK_HEAD "Content-Len", WL_SCANNER_ECLOSED, 0, NULL, 0},
    {"cut before the last chunk",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", WL_SCANNER_ECLOSED, 0,
     NULL, 0},
    {"nothing", "", WL_SCANNER_ECLOSED, 0, NULL, 0},
};

static void test_parse_cases(void)
{
    for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
        const parse_case_t *c = &parse_cases[i];
        size_t len = strlen(c->response);
        for (size_t fragment = 1; fragment <= len + 1; fragment++) {
            parsed_t out = parse_in(c->response, len, fragment, c->limit);
            if (out.rc != c->rc ||
                (c->body != NULL && (out.status != c->status || out.body_len != strlen(c->body) ||
                                     memcmp(out.body, c->body, out.body_len) != 0))) {
                FAIL("case '%s', %zu-byte fragments: rc %d status %d body '%.*s'", c->label,
                     fragment, out.rc, out.status, (int)out.body_len, out.body);
                break;
            }
        }
    }
}

static void test_head_fields(void)
{
    const char *text = "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 17\r\n"
                       "Content-Type: Application/JSON; charset=utf-8\r\nContent-Length: 2\r\n\r\n"
                       "{}HTTP/1.1 200 OK\r\n";
    parsed_t out = parse_in(text, strlen(text), strlen(text), 0);
    CHECK_INT(out.rc, WL_SCANNER_HTTP_DONE);
    CHECK_INT(out.status, 429);
    CHECK_INT(out.retry_after, 17);
    CHECK(out.json && !out.proto && !out.chunked);
    CHECK_INT(out.leftover, strlen("HTTP/1.1 200 OK\r\n")); /* the next answer's, untouched */

    text = "HTTP/1.1 503 Unavailable\r\nRetry-After: Fri, 31 Dec 1999 23:59:59 GMT\r\n"
           "Content-Type: application/protobuf\r\nContent-Length: 0\r\n\r\n";
    out = parse_in(text, strlen(text), 3, 0);
    CHECK_INT(out.rc, WL_SCANNER_HTTP_DONE);
    CHECK_INT(out.retry_after, 0); /* a date: not a number of seconds */
    CHECK(!out.proto && !out.json);

    /* A head just under the limit passes, one byte more does not. */
    static char big[WL_SCANNER_HTTP_HEAD_MAX + 64];
    const char *start = "HTTP/1.1 200 OK\r\nX-Pad: ", *end = "\r\nContent-Length: 0\r\n\r\n";
    size_t pad = WL_SCANNER_HTTP_HEAD_MAX - strlen(start) - strlen(end);
    snprintf(big, sizeof(big), "%s%*s%s", start, (int)pad, "", end);
    memset(big + strlen(start), 'x', pad);
    CHECK_INT(parse_in(big, strlen(big), 1000, 0).rc, WL_SCANNER_HTTP_DONE);
    snprintf(big, sizeof(big), "%s%*s%s", start, (int)pad + 1, "", end);
    memset(big + strlen(start), 'x', pad + 1);
    CHECK_INT(parse_in(big, strlen(big), 1000, 0).rc, WL_SCANNER_EHTTP);

    /* Failed stays failed. */
    wl_scanner_http_t http;
    wl_scanner_http_init(&http, 0);
    size_t used;
    wl_scanner_span_t body;
    CHECK_INT(wl_scanner_http_parse(&http, (const uint8_t *)"XTTP", 4, &used, &body),
              WL_SCANNER_EHTTP);
    CHECK_INT(wl_scanner_http_parse(&http, (const uint8_t *)OK_HEAD, 5, &used, &body),
              WL_SCANNER_EHTTP);
    CHECK_INT(wl_scanner_http_finish(&http), WL_SCANNER_EHTTP);
}

/* --- the request ---------------------------------------------------------------------------- */

static void test_request(void)
{
    uint8_t buf[WL_SCANNER_REQUEST_SIZE];
    size_t len = 0;
    wl_scanner_server_t server = {.host = "10.0.0.5:8080", .base_path = "/wl", .key = "wlk_k"};
    CHECK_INT(wl_scanner_request_load_list(&server, "abc", buf, sizeof(buf), &len), 0);
    const char expected[] = "POST /wl/walklist.scanner.v1.DeviceService/LoadList HTTP/1.1\r\n"
                            "Host: 10.0.0.5:8080\r\nAuthorization: Bearer wlk_k\r\n"
                            "Content-Type: application/proto\r\n"
                            "Accept: application/proto, application/json\r\n"
                            "Content-Length: 5\r\nConnection: close\r\n\r\n\x0a\x03"
                            "abc";
    CHECK_INT(len, sizeof(expected) - 1);
    CHECK(memcmp(buf, expected, len) == 0);

    server = (wl_scanner_server_t){.host = "h", .key = "k", .keep_alive = true};
    CHECK_INT(wl_scanner_request_list_pending(&server, buf, sizeof(buf), &len), 0);
    const char pending[] = "POST /walklist.scanner.v1.DeviceService/ListPending HTTP/1.1\r\n"
                           "Host: h\r\nAuthorization: Bearer k\r\n"
                           "Content-Type: application/proto\r\n"
                           "Accept: application/proto, application/json\r\n"
                           "Content-Length: 0\r\n\r\n";
    CHECK_INT(len, sizeof(pending) - 1);
    CHECK(memcmp(buf, pending, len) == 0);
    CHECK_INT(wl_scanner_request_list_pending(&server, buf, len - 1, &len), WL_SCANNER_EBUFFER);

    const char *bad_keys[] = {"", "a b", "a\r\nX-Evil: 1", "caf\xc3\xa9", NULL};
    for (size_t i = 0; i < sizeof(bad_keys) / sizeof(bad_keys[0]); i++) {
        server.key = bad_keys[i];
        CHECK_INT(wl_scanner_request_list_pending(&server, buf, sizeof(buf), &len),
                  WL_SCANNER_EARGUMENT);
    }
    server.key = "k";
    server.base_path = "no-slash";
    CHECK_INT(wl_scanner_request_list_pending(&server, buf, sizeof(buf), &len),
              WL_SCANNER_EARGUMENT);
    server.base_path = NULL;
    server.host = "a\nb";
    CHECK_INT(wl_scanner_request_list_pending(&server, buf, sizeof(buf), &len),
              WL_SCANNER_EARGUMENT);
    server.host = "h";
    CHECK_INT(wl_scanner_request_load_list(&server, "", buf, sizeof(buf), &len),
              WL_SCANNER_EARGUMENT);
}

/* --- error answers ---------------------------------------------------------------------------- */

typedef struct {
    int http_status;
    const char *body;
    int code;
    const char *status;
    const char *message;
} error_case_t;

static const error_case_t error_cases[] = {
    {400,
     "{\"error\":{\"code\":400,\"status\":\"FAILED_PRECONDITION\",\"message\":\"list abc is "
     "already loaded\",\"details\":[]}}",
     WL_SCANNER_EFAILED_PRECONDITION, "FAILED_PRECONDITION", "list abc is already loaded"},
    {400,
     "{ \"error\" : { \"details\" : [ {\"status\":\"NOT_FOUND\",\"x\":{\"status\":\"A\"}} ],\n"
     "\"message\":\"say \\\"hi\\\"\\n\\u00e9\", \"status\" : \"INVALID_ARGUMENT\" } }",
     WL_SCANNER_EINVALID_ARGUMENT, "INVALID_ARGUMENT", "say \"hi\"\n?"},
    {404, "{\"status\":\"UNAVAILABLE\",\"error\":{\"message\":\"no such list\"}}",
     WL_SCANNER_ENOT_FOUND, "", "no such list"},
    {401, "", WL_SCANNER_EUNAUTHENTICATED, "", ""},
    {429, "<html>slow down</html>", WL_SCANNER_ERESOURCE_EXHAUSTED, "", ""},
    {503, "{\"error\":{\"status\":\"SOMETHING_NEW\"}}", WL_SCANNER_EUNAVAILABLE, "SOMETHING_NEW",
     ""},
    {418, "{\"error\":{\"status\":\"PERMISSION_DENIED\"}}", WL_SCANNER_EPERMISSION_DENIED,
     "PERMISSION_DENIED", ""},
    {418, "{\"error\":[\"status\",\"NOT_FOUND\"]}", WL_SCANNER_ESERVER, "", ""},
    {502, "{\"error\":{\"status\":\"INTERNAL\",\"status\":\"DEADLINE_EXCEEDED\"}}",
     WL_SCANNER_EDEADLINE_EXCEEDED, "DEADLINE_EXCEEDED", ""},
};

static void test_error_json(void)
{
    for (size_t i = 0; i < sizeof(error_cases) / sizeof(error_cases[0]); i++) {
        const error_case_t *c = &error_cases[i];
        size_t len = strlen(c->body);
        for (size_t fragment = 1; fragment <= len + 1; fragment++) {
            char raw[16];
            wl_scanner_error_t err = {.body = raw, .body_size = sizeof(raw)};
            wl_scanner_error_init(&err, c->http_status);
            for (size_t pos = 0; pos < len; pos += fragment)
                wl_scanner_error_feed(&err, (const uint8_t *)c->body + pos,
                                      len - pos < fragment ? len - pos : fragment);
            if (wl_scanner_error_code(&err) != c->code || strcmp(err.status, c->status) != 0 ||
                strcmp(err.message, c->message) != 0 || strncmp(raw, c->body, 15) != 0 ||
                err.body_len != (len < 15 ? len : 15)) {
                FAIL("error case %zu, %zu-byte fragments: code %d status '%s' message '%s'", i,
                     fragment, wl_scanner_error_code(&err), err.status, err.message);
                break;
            }
        }
    }
    /* A long message is cut to fit, NUL-terminated. */
    wl_scanner_error_t err = {0};
    wl_scanner_error_init(&err, 400);
    char body[512] = "{\"error\":{\"message\":\"";
    memset(body + strlen(body), 'm', 300);
    strcat(body, "\",\"status\":\"NOT_FOUND\"}}");
    wl_scanner_error_feed(&err, (const uint8_t *)body, strlen(body));
    CHECK_INT(strlen(err.message), sizeof(err.message) - 1);
    CHECK_INT(wl_scanner_error_code(&err), WL_SCANNER_ENOT_FOUND);
    CHECK_STR(wl_scanner_strerror(WL_SCANNER_ENOT_FOUND), "no such list");
    CHECK_STR(wl_scanner_strerror(WL_SCANNER_EHTTP), "malformed HTTP response");
    CHECK(wl_scanner_is_server_error(WL_SCANNER_ESERVER));
    CHECK(!wl_scanner_is_server_error(WL_SCANNER_ETOO_LARGE));
}

/* --- the exchange: a transport handing over fragments of one size --------------------------- */

typedef struct {
    const uint8_t *data;
    size_t len, pos, fragment;
    size_t fail_at; /* recv fails once pos reaches this (0: never) */
} wire_t;

static int wire_recv(void *io, uint8_t *buf, size_t size)
{
    wire_t *wire = io;
    if (wire->fail_at != 0 && wire->pos >= wire->fail_at)
        return -1;
    size_t n = wire->len - wire->pos;
    if (n > size)
        n = size;
    if (n > wire->fragment)
        n = wire->fragment;
    memcpy(buf, wire->data + wire->pos, n);
    wire->pos += n;
    return (int)n;
}

typedef struct {
    size_t stops;
    char first_bin[WL_SCANNER_CODE_SIZE], last_sku[WL_SCANNER_CODE_SIZE];
} seen_t;

static bool on_stop(void *context, const walklist_scanner_v1_Stop *stop)
{
    seen_t *seen = context;
    if (seen->stops++ == 0)
        snprintf(seen->first_bin, sizeof(seen->first_bin), "%s", stop->bin);
    snprintf(seen->last_sku, sizeof(seen->last_sku), "%s", stop->sku);
    return true;
}

/* A LoadListResponse of `stops` stops, nanopb-encoded (the server's encoder). */
static size_t encode_walk(uint8_t *buf, size_t size, int stops);

static bool encode_stops(pb_ostream_t *stream, const pb_field_iter_t *field, void *const *arg)
{
    int stops = *(const int *)*arg;
    for (int i = 0; i < stops; i++) {
        walklist_scanner_v1_Stop stop = walklist_scanner_v1_Stop_init_zero;
        snprintf(stop.bin, sizeof(stop.bin), "A-%d", i + 1);
        snprintf(stop.warehouse, sizeof(stop.warehouse), "WH1");
        snprintf(stop.sku, sizeof(stop.sku), "SKU-%d", i);
        stop.quantity = (uint32_t)i;
        if (!pb_encode_tag_for_field(stream, field) ||
            !pb_encode_submessage(stream, walklist_scanner_v1_Stop_fields, &stop))
            return false;
    }
    return true;
}

static size_t encode_walk(uint8_t *buf, size_t size, int stops)
{
    walklist_scanner_v1_LoadListResponse walk = walklist_scanner_v1_LoadListResponse_init_zero;
    snprintf(walk.name, sizeof(walk.name), "Aisle 7");
    walk.stops.funcs.encode = encode_stops;
    walk.stops.arg = &stops;
    pb_ostream_t stream = pb_ostream_from_buffer(buf, size);
    CHECK(pb_encode(&stream, walklist_scanner_v1_LoadListResponse_fields, &walk));
    return stream.bytes_written;
}

/* The body as chunks of `chunk` bytes. */
static size_t frame(char *out, const char *head, const uint8_t *body, size_t len, size_t chunk)
{
    size_t n = (size_t)sprintf(out, "%s", head);
    if (chunk == 0) {
        n += (size_t)sprintf(out + n, "Content-Length: %zu\r\n\r\n", len);
        memcpy(out + n, body, len);
        return n + len;
    }
    n += (size_t)sprintf(out + n, "Transfer-Encoding: chunked\r\n\r\n");
    for (size_t pos = 0; pos < len; pos += chunk) {
        size_t k = len - pos < chunk ? len - pos : chunk;
        n += (size_t)sprintf(out + n, "%zx\r\n", k);
        memcpy(out + n, body + pos, k);
        n += k;
        n += (size_t)sprintf(out + n, "\r\n");
    }
    return n + (size_t)sprintf(out + n, "0\r\n\r\n");
}

static void test_exchange_walk(void)
{
    static uint8_t body[64 * 1024];
    static char wire_bytes[128 * 1024];
    size_t body_len = encode_walk(body, sizeof(body), 300);
    const size_t chunks[] = {0, 1, 7, 100, 4096};
    const size_t fragments[] = {1, 2, 3, 13, 64, 1000, 100000};
    for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
        size_t len = frame(wire_bytes, OK_HEAD, body, body_len, chunks[c]);
        for (size_t f = 0; f < sizeof(fragments) / sizeof(fragments[0]); f++) {
            for (size_t buf_size = 1; buf_size <= 256; buf_size *= 16) {
                wire_t wire = {(const uint8_t *)wire_bytes, len, 0, fragments[f], 0};
                uint8_t buf[256];
                wl_scanner_exchange_t ex;
                wl_scanner_exchange_init(&ex, wire_recv, &wire, buf, buf_size, 0);
                seen_t seen = {0};
                wl_scanner_walk_handler_t handler = {.stop = on_stop, .context = &seen};
                walklist_scanner_v1_LoadListResponse walk;
                int rc = wl_scanner_receive_load_list(&ex, &handler, &walk, NULL);
                if (rc != 0 || seen.stops != 300 || strcmp(walk.name, "Aisle 7") != 0 ||
                    strcmp(seen.first_bin, "A-1") != 0 || strcmp(seen.last_sku, "SKU-299") != 0 ||
                    wire.pos != len) {
                    FAIL("chunks %zu, fragments %zu, buffer %zu: rc %d, %zu stops", chunks[c],
                         fragments[f], buf_size, rc, seen.stops);
                    return;
                }
            }
        }
    }

    /* Broken transports and answers. */
    size_t len = frame(wire_bytes, OK_HEAD, body, body_len, 0);
    uint8_t buf[64];
    wl_scanner_exchange_t ex;
    walklist_scanner_v1_LoadListResponse walk;
    wl_scanner_walk_handler_t none = {0};
    wire_t wire = {(const uint8_t *)wire_bytes, len - 10, 0, 50, 0};
    wl_scanner_exchange_init(&ex, wire_recv, &wire, buf, sizeof(buf), 0);
    CHECK_INT(wl_scanner_receive_load_list(&ex, &none, &walk, NULL), WL_SCANNER_ECLOSED);
    wire = (wire_t){(const uint8_t *)wire_bytes, len, 0, 50, 500};
    wl_scanner_exchange_init(&ex, wire_recv, &wire, buf, sizeof(buf), 0);
    CHECK_INT(wl_scanner_receive_load_list(&ex, &none, &walk, NULL), WL_SCANNER_ERECV);
    wire = (wire_t){(const uint8_t *)wire_bytes, len, 0, 50, 0};
    wl_scanner_exchange_init(&ex, wire_recv, &wire, buf, sizeof(buf), 1000);
    CHECK_INT(wl_scanner_receive_load_list(&ex, &none, &walk, NULL), WL_SCANNER_ETOO_LARGE);
    len = frame(wire_bytes, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n", body, body_len,
                0);
    wire = (wire_t){(const uint8_t *)wire_bytes, len, 0, 50, 0};
    wl_scanner_exchange_init(&ex, wire_recv, &wire, buf, sizeof(buf), 0);
    CHECK_INT(wl_scanner_receive_load_list(&ex, &none, &walk, NULL), WL_SCANNER_ECONTENT_TYPE);
    static const uint8_t garbage[] = {0xff, 0xff, 0xff};
    len = frame(wire_bytes, OK_HEAD, garbage, sizeof(garbage), 0);
    wire = (wire_t){(const uint8_t *)wire_bytes, len, 0, 50, 0};
    wl_scanner_exchange_init(&ex, wire_recv, &wire, buf, sizeof(buf), 0);
    CHECK_INT(wl_scanner_receive_load_list(&ex, &none, &walk, NULL), WL_SCANNER_EDECODE);
    wl_scanner_exchange_init(&ex, wire_recv, &wire, NULL, 0, 0);
    CHECK_INT(wl_scanner_receive_load_list(&ex, &none, &walk, NULL), WL_SCANNER_EARGUMENT);
}

static void test_exchange_errors(void)
{
    const char *answer = "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 12\r\n"
                         "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                         "10\r\n{\"error\":{\"code\"\r\n"
                         "2c\r\n:429,\"status\":\"RESOURCE_EXHAUSTED\",\"message\"\r\n"
                         "c\r\n:\"slow down\"\r\n3\r\n}}\n\r\n0\r\n\r\n";
    for (size_t fragment = 1; fragment < 40; fragment += 3) {
        wire_t wire = {(const uint8_t *)answer, strlen(answer), 0, fragment, 0};
        uint8_t buf[32];
        char raw[64];
        wl_scanner_exchange_t ex;
        wl_scanner_exchange_init(&ex, wire_recv, &wire, buf, sizeof(buf), 0);
        wl_scanner_error_t err = {.body = raw, .body_size = sizeof(raw)};
        walklist_scanner_v1_ListPendingResponse queue;
        CHECK_INT(wl_scanner_receive_list_pending(&ex, &queue, &err),
                  WL_SCANNER_ERESOURCE_EXHAUSTED);
        CHECK_INT(err.http_status, 429);
        CHECK_INT(err.retry_after, 12);
        CHECK_STR(err.status, "RESOURCE_EXHAUSTED");
        CHECK_STR(err.message, "slow down");
        CHECK_STR(raw,
                  "{\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\",\"message\":\"s");
    }
    /* Without an err, the code alone. */
    const char *gone = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
    wire_t wire = {(const uint8_t *)gone, strlen(gone), 0, 5, 0};
    uint8_t buf[8];
    wl_scanner_exchange_t ex;
    wl_scanner_exchange_init(&ex, wire_recv, &wire, buf, sizeof(buf), 0);
    walklist_scanner_v1_ListPendingResponse queue;
    CHECK_INT(wl_scanner_receive_list_pending(&ex, &queue, NULL), WL_SCANNER_ENOT_FOUND);
}

int main(void)
{
    test_parse_cases();
    test_head_fields();
    test_request();
    test_error_json();
    test_exchange_walk();
    test_exchange_errors();
    return test_exit();
}
