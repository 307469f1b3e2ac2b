/*
 * One request's answer, read from the firmware's own transport: a receive function (lwIP
 * socket or netconn, a modem's AT socket, a UART bridge) fills a caller-owned buffer of any
 * size, the HTTP codec (walklist/scanner_http.h) frames the answer, and the payload decoders
 * (walklist/scanner_client.h) read the body through a pb_istream_t, so a walk streams from the
 * socket into the handler one entry at a time. Non-200 answers become result codes through
 * walklist/scanner_error.h. No heap, no stdio, no static state.
 *
 * Example (the request was sent already, e.g. built with wl_scanner_request_load_list):
 *
 *     static int modem_recv(void *io, uint8_t *buf, size_t size)
 *     {
 *         return modem_socket_read(io, buf, size, 10000);  // >0 bytes, 0 closed, <0 error
 *     }
 *
 *     uint8_t rx[256];
 *     wl_scanner_exchange_t ex;
 *     wl_scanner_exchange_init(&ex, modem_recv, &modem, rx, sizeof(rx), 64 * 1024);
 *     wl_scanner_error_t err = {0};
 *     walklist_scanner_v1_LoadListResponse walk;
 *     int rc = wl_scanner_receive_load_list(&ex, &handler, &walk, &err);
 *     if (rc == WL_SCANNER_EFAILED_PRECONDITION) show("Loaded on another scanner");
 */
#ifndef WALKLIST_SCANNER_EXCHANGE_H
#define WALKLIST_SCANNER_EXCHANGE_H

#include "walklist/scanner_client.h"
#include "walklist/scanner_error.h"
#include "walklist/scanner_http.h"

/**
 * Reads up to size bytes of the connection into buf. Returns how many (at least 1), 0 when
 * the peer closed the connection, or a negative number on an error (a timeout included: the
 * library has no clock, so the transport bounds every wait). It may block; firmware without
 * threads runs its network poll loop inside it until bytes arrive.
 */
typedef int (*wl_scanner_recv_t)(void *io, uint8_t *buf, size_t size);

/** The state of one answer; caller-allocated. */
typedef struct {
    wl_scanner_http_t http; /* the head's fields, once read: http.status, http.retry_after */
    wl_scanner_recv_t recv;
    void *io;
    uint8_t *buf; /* the caller's receive buffer, which must outlive the exchange */
    size_t size, pos, len;
    wl_scanner_span_t piece; /* body bytes not yet handed to the decoder */
    int error;               /* the first failure, sticky */
} wl_scanner_exchange_t;

/**
 * Prepares ex to read one answer from recv(io, ...) through buf (any size from 1 byte; 128
 * to 512 is plenty). body_limit bounds the body (0: no bound). The largest walk the server
 * sends, every list at the bounds of device.options, is about 1.2 MB; a 200-code list with
 * three bins per product and realistic codes about 55 KB.
 */
void wl_scanner_exchange_init(wl_scanner_exchange_t *ex, wl_scanner_recv_t recv, void *io,
                              uint8_t *buf, size_t size, uint64_t body_limit);

/** Reads the head of the answer: WL_SCANNER_OK, then ex->http says what follows. */
int wl_scanner_exchange_head(wl_scanner_exchange_t *ex);

/**
 * The body as a nanopb input stream, bounded by its Content-Length when it has one; a chunked
 * body or one that ends with the connection ends the stream cleanly (bytes_left 0). Valid while
 * ex is.
 */
pb_istream_t wl_scanner_exchange_body(wl_scanner_exchange_t *ex);

/** Reads the rest of the answer up to its end: WL_SCANNER_OK when it ended well. */
int wl_scanner_exchange_end(wl_scanner_exchange_t *ex);

/**
 * Reads a non-200 answer's body into err (wl_scanner_error_init is called for it; set
 * err->body first to keep the raw text) and returns its result code (walklist/scanner_error.h),
 * or a local code when the body could not be read.
 */
int wl_scanner_exchange_error(wl_scanner_exchange_t *ex, wl_scanner_error_t *err);

/**
 * The whole answer to ListPending: head, body decoded into out, end. Returns WL_SCANNER_OK,
 * a local code (EHTTP, ECLOSED, ERECV, ETOO_LARGE, ECONTENT_TYPE, EDECODE) or the server's
 * (err, when not NULL, says what it answered).
 */
int wl_scanner_receive_list_pending(wl_scanner_exchange_t *ex,
                                    walklist_scanner_v1_ListPendingResponse *out,
                                    wl_scanner_error_t *err);

/**
 * The whole answer to LoadList, each entry handed to handler as it is decoded (see
 * wl_scanner_decode_load_list); returns as wl_scanner_receive_list_pending, or ESTOPPED when
 * a handler stopped it (then the rest of the answer is unread: close the connection).
 */
int wl_scanner_receive_load_list(wl_scanner_exchange_t *ex,
                                 const wl_scanner_walk_handler_t *handler,
                                 walklist_scanner_v1_LoadListResponse *walk,
                                 wl_scanner_error_t *err);

/**
 * Builds the complete HTTP request for ListPending or LoadList (list id, 1 to 40 characters)
 * into buf (WL_SCANNER_REQUEST_SIZE bytes always fit a host and key under 128 bytes each).
 */
int wl_scanner_request_list_pending(const wl_scanner_server_t *server, uint8_t *buf, size_t size,
                                    size_t *len);
int wl_scanner_request_load_list(const wl_scanner_server_t *server, const char *id, uint8_t *buf,
                                 size_t size, size_t *len);

#endif
