/*
 * The device payloads of the scanner firmware library, in C on nanopb alone: requests are
 * encoded into a caller's buffer and responses decoded from a caller's pb_istream_t (a socket,
 * a UART, a buffer, or the body of an HTTP answer, walklist/scanner_exchange.h), allocating
 * nothing: the walk of a loaded list is delivered one entry at a time through callbacks, so
 * the memory needed is one entry (the largest, a Stop, is under 1 KiB) whatever the list's
 * length. No I/O, no heap, no stdio, no static state.
 *
 * Requests go to POST /walklist.scanner.v1.DeviceService/<Method> with
 * Content-Type: application/proto and Authorization: Bearer <key with scope scanner>
 * (walklist/scanner_http.h builds them). A 200 answer carries the response message; any other
 * status carries a JSON error (walklist/scanner_error.h reads it).
 *
 * Example: load a list and show its stops as they arrive.
 *
 *     static bool show_stop(void *context, const walklist_scanner_v1_Stop *stop)
 *     {
 *         return display_row(context, stop->bin, stop->sku, stop->quantity, stop->name);
 *     }
 *
 *     uint8_t request[WL_SCANNER_LOAD_LIST_REQUEST_SIZE];
 *     size_t len;
 *     wl_scanner_encode_load_list(list_id, request, sizeof(request), &len);
 *     http_post("/walklist.scanner.v1.DeviceService/LoadList", request, len);
 *     pb_istream_t body = {socket_read, &socket, content_length}; // bytes_left bounds it
 *     walklist_scanner_v1_LoadListResponse walk;
 *     wl_scanner_walk_handler_t handler = {.stop = show_stop, .context = display};
 *     if (wl_scanner_decode_load_list(&body, &handler, &walk) != WL_SCANNER_OK)
 *         show_error(PB_GET_ERROR(&body));
 *     // walk.name and walk.truncated are set
 */
#ifndef WALKLIST_SCANNER_CLIENT_H
#define WALKLIST_SCANNER_CLIENT_H

#include <pb.h>
#include <pb_decode.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "walklist/scanner/v1/device.pb.h"
#include "walklist/scanner_status.h"

/* Buffer sizes that always fit an encoded request. */
#define WL_SCANNER_LIST_PENDING_REQUEST_SIZE walklist_scanner_v1_ListPendingRequest_size
#define WL_SCANNER_LOAD_LIST_REQUEST_SIZE    walklist_scanner_v1_LoadListRequest_size

/* The longest code (SKU, EAN, any list code) the walk carries, plus its NUL. */
#define WL_SCANNER_CODE_SIZE pb_membersize(walklist_scanner_v1_AmbiguousMatch, code)

/** Encodes a ListPendingRequest into buf; *len is its length (0: the request is empty). */
int wl_scanner_encode_list_pending(uint8_t *buf, size_t size, size_t *len);

/** Encodes a LoadListRequest for list id (1 to 40 characters) into buf. */
int wl_scanner_encode_load_list(const char *id, uint8_t *buf, size_t size, size_t *len);

/**
 * Decodes a ListPendingResponse (at most 10 lists, a static array) from stream.
 * The stream's bytes_left bounds what is read; a stream that can end early
 * (a socket) must set bytes_left to 0 when it returns false at its end.
 */
int wl_scanner_decode_list_pending(pb_istream_t *stream,
                                   walklist_scanner_v1_ListPendingResponse *out);

/**
 * Receives the walk of a loaded list, one entry at a time, in the order the
 * server sends them: stops in walk order, then the ambiguous matches (the
 * products of one code one after the other), then the codes not found, then
 * the products without a location. Each entry is valid only during the call.
 * A NULL function skips its entries; returning false stops the decode.
 */
typedef struct {
    bool (*stop)(void *context, const walklist_scanner_v1_Stop *stop);
    bool (*ambiguous)(void *context, const walklist_scanner_v1_AmbiguousMatch *match);
    bool (*not_found)(void *context, const char *code);
    bool (*unlocated)(void *context, const walklist_scanner_v1_Unlocated *product);
    void *context;
} wl_scanner_walk_handler_t;

/**
 * Decodes a LoadListResponse from stream, calling handler for every entry.
 * walk receives name and truncated (its callback fields are this function's
 * own); name is decoded before any entry because the server writes fields in
 * field-number order, so handlers may read it through their context.
 *
 * Stack use: one entry (walklist_scanner_v1_Stop, 828 bytes, is the largest)
 * plus nanopb's frames; no heap, no static state, reentrant.
 */
int wl_scanner_decode_load_list(pb_istream_t *stream, const wl_scanner_walk_handler_t *handler,
                                walklist_scanner_v1_LoadListResponse *walk);

#endif
