/*
 * A minimal HTTP/1.1 client codec for scanner firmware: builds the device request and parses
 * the response from whatever fragments a TCP stack hands over (lwIP pbufs, a modem's AT socket
 * reads, one byte at a time), without buffering: the parser keeps a few dozen bytes of state
 * and hands body bytes out as pointers into the caller's fragment. Pure C11: no I/O, no heap,
 * no stdio, no static state.
 *
 * Understood: the status line (HTTP/1.0 or 1.1), interim 1xx answers (skipped), header fields
 * Content-Length, Transfer-Encoding: chunked, Content-Type and Retry-After (others are read
 * and ignored), and a body framed by Content-Length, by chunks (extensions and trailer fields
 * ignored), or by the end of the connection. CRLF or bare LF end lines. Everything else
 * malformed is WL_SCANNER_EHTTP: a bare CR, obs-fold, control bytes in a field, a bad or
 * conflicting Content-Length, a transfer coding other than chunked, a head over
 * WL_SCANNER_HTTP_HEAD_MAX bytes.
 *
 * Example: feed fragments until the message is done.
 *
 *     wl_scanner_http_t http;
 *     wl_scanner_http_init(&http, 64 * 1024);
 *     for (;;) {
 *         size_t n = tcp_read(sock, buf, sizeof(buf)), pos = 0;   // 0: connection closed
 *         if (n == 0) { rc = wl_scanner_http_finish(&http); break; }
 *         while (pos < n) {
 *             size_t used; wl_scanner_span_t body;
 *             int ev = wl_scanner_http_parse(&http, buf + pos, n - pos, &used, &body);
 *             pos += used;
 *             if (ev < 0) fail(ev);
 *             if (ev == WL_SCANNER_HTTP_HEAD) check(http.status, http.proto);
 *             if (ev == WL_SCANNER_HTTP_BODY) consume(body.base, body.len);
 *             if (ev == WL_SCANNER_HTTP_DONE) goto done;
 *         }
 *     }
 */
#ifndef WALKLIST_SCANNER_HTTP_H
#define WALKLIST_SCANNER_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "walklist/scanner_status.h"

/* The most bytes of status line and header fields (or of chunk trailer fields) accepted. */
#define WL_SCANNER_HTTP_HEAD_MAX 8192u

/* Bytes of a field value kept to recognise it (Content-Type, Transfer-Encoding). */
#define WL_SCANNER_HTTP_VALUE_SIZE 24

/* Where the device methods live, relative to the server's base path. */
#define WL_SCANNER_LIST_PENDING_PATH "/walklist.scanner.v1.DeviceService/ListPending"
#define WL_SCANNER_LOAD_LIST_PATH    "/walklist.scanner.v1.DeviceService/LoadList"
#define WL_SCANNER_CONTENT_TYPE      "application/proto"

/** A run of bytes in someone else's buffer, not NUL-terminated. */
typedef struct {
    const uint8_t *base;
    size_t len;
} wl_scanner_span_t;

/** Where requests go; every string must stay valid while a request is built. */
typedef struct {
    const char *host;      /* the Host field: "host" or "host:port" (IPv6 in brackets) */
    const char *base_path; /* "" (or NULL) or a prefix such as "/walklist", no trailing slash */
    const char *key;       /* an API key with the scanner scope */
    bool keep_alive;       /* false: the request asks the server to close (Connection: close) */
} wl_scanner_server_t;

/**
 * Writes a complete request into buf: POST base_path + path, Host, Authorization: Bearer,
 * Content-Type: application/proto, Accept, Content-Length, then body_len bytes of body.
 * *len is the number of bytes to send. EARGUMENT when a string is empty or holds a byte that
 * would break the request (control bytes, spaces, non-ASCII), EBUFFER when buf is too small
 * (WL_SCANNER_REQUEST_SIZE is always enough for a host and key under 128 bytes each).
 */
int wl_scanner_http_request(const wl_scanner_server_t *server, const char *path,
                            const uint8_t *body, size_t body_len, uint8_t *buf, size_t size,
                            size_t *len);

#define WL_SCANNER_REQUEST_SIZE 640

typedef enum {
    WL_SCANNER_HTTP_MORE = 0, /* all of the fragment is consumed: feed the next one */
    WL_SCANNER_HTTP_HEAD = 1, /* the head of the (final) response is complete: see the fields */
    WL_SCANNER_HTTP_BODY = 2, /* *body holds the next body bytes (inside the fragment) */
    WL_SCANNER_HTTP_DONE = 3, /* the response is complete; bytes after it are left unconsumed */
} wl_scanner_http_event_t;

/** Response parser state; caller-allocated, set up by wl_scanner_http_init. */
typedef struct {
    /* Set once WL_SCANNER_HTTP_HEAD was returned. */
    int status;              /* 200, 404, ... */
    bool chunked;            /* Transfer-Encoding: chunked */
    bool has_content_length; /* and not chunked */
    bool proto;              /* Content-Type: application/proto */
    bool json;               /* Content-Type: application/json (parameters allowed) */
    uint64_t content_length; /* when has_content_length */
    uint32_t retry_after;    /* Retry-After in seconds, 0 when absent or a date */
    uint64_t body_limit;     /* the most body bytes accepted, else ETOO_LARGE */
    /* Private. */
    uint8_t state, next, field, candidates, value_state;
    int8_t error;
    uint16_t head_bytes, name_len;
    uint8_t value_len;
    char value[WL_SCANNER_HTTP_VALUE_SIZE];
    uint64_t number;    /* the Content-Length, chunk size or Retry-After being read */
    uint64_t remaining; /* body bytes left: of the Content-Length, or of the current chunk */
    uint64_t body_bytes;
} wl_scanner_http_t;

/** Prepares http for one response; body_limit bounds its body (0: no bound). */
void wl_scanner_http_init(wl_scanner_http_t *http, uint64_t body_limit);

/**
 * Parses the start of data[0..len): sets *consumed (at most len; it may be less than len
 * only with HEAD, BODY and DONE) and returns one event, or a negative code (EHTTP,
 * ETOO_LARGE), after which the parser stays failed. A BODY's *body points into data.
 * Call again with the rest of the fragment until it is consumed.
 */
int wl_scanner_http_parse(wl_scanner_http_t *http, const uint8_t *data, size_t len,
                          size_t *consumed, wl_scanner_span_t *body);

/**
 * The connection ended: WL_SCANNER_HTTP_DONE when that completes the response (a body
 * framed by the end of the connection, or a response already done), else ECLOSED.
 */
int wl_scanner_http_finish(wl_scanner_http_t *http);

#endif
