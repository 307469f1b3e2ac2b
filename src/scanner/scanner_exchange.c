/* Reading one answer from the firmware's transport into the payload decoders happens here. */
#include "walklist/scanner_exchange.h"

#include <string.h>

void wl_scanner_exchange_init(wl_scanner_exchange_t *ex, wl_scanner_recv_t recv, void *io,
                              uint8_t *buf, size_t size, uint64_t body_limit)
{
    memset(ex, 0, sizeof(*ex));
    wl_scanner_http_init(&ex->http, body_limit);
    ex->recv = recv;
    ex->io = io;
    ex->buf = buf;
    ex->size = size;
    if (recv == NULL || buf == NULL || size == 0)
        ex->error = WL_SCANNER_EARGUMENT;
}

static int fail(wl_scanner_exchange_t *ex, int code)
{
    if (ex->error == 0)
        ex->error = code;
    return ex->error;
}

/* The next HEAD, BODY (in ex->piece) or DONE event, receiving as much as that takes. */
static int pump(wl_scanner_exchange_t *ex)
{
    if (ex->error != 0)
        return ex->error;
    for (;;) {
        size_t used;
        wl_scanner_span_t body;
        /* Parsed before receiving: a body that ends where the buffer does is done already. */
        int event =
            wl_scanner_http_parse(&ex->http, ex->buf + ex->pos, ex->len - ex->pos, &used, &body);
        ex->pos += used;
        if (event < 0)
            return fail(ex, event);
        if (event == WL_SCANNER_HTTP_BODY)
            ex->piece = body;
        if (event != WL_SCANNER_HTTP_MORE)
            return event;
        int n = ex->recv(ex->io, ex->buf, ex->size);
        if (n < 0 || (size_t)n > ex->size)
            return fail(ex, WL_SCANNER_ERECV);
        if (n == 0) {
            int end = wl_scanner_http_finish(&ex->http);
            return end < 0 ? fail(ex, end) : end;
        }
        ex->pos = 0;
        ex->len = (size_t)n;
    }
}

int wl_scanner_exchange_head(wl_scanner_exchange_t *ex)
{
    int event = pump(ex);
    if (event < 0)
        return event;
    return event == WL_SCANNER_HTTP_HEAD ? WL_SCANNER_OK : fail(ex, WL_SCANNER_EHTTP);
}

/* nanopb's read callback: count bytes of the body, piece by piece. */
static bool read_body(pb_istream_t *stream, pb_byte_t *out, size_t count)
{
    wl_scanner_exchange_t *ex = stream->state;
    while (count > 0) {
        if (ex->piece.len == 0) {
            int event = pump(ex);
            if (event == WL_SCANNER_HTTP_DONE) /* nanopb tells a clean end from a cut by this */
                stream->bytes_left = 0;
            if (event != WL_SCANNER_HTTP_BODY)
                PB_RETURN_ERROR(stream, event < 0 ? wl_scanner_strerror(event) : "end of body");
        }
        size_t n = ex->piece.len < count ? ex->piece.len : count;
        memcpy(out, ex->piece.base, n);
        ex->piece.base += n;
        ex->piece.len -= n;
        out += n;
        count -= n;
    }
    return true;
}

pb_istream_t wl_scanner_exchange_body(wl_scanner_exchange_t *ex)
{
    uint64_t bound = ex->http.has_content_length ? ex->http.content_length : ex->http.body_limit;
    pb_istream_t stream = {read_body, ex, bound < SIZE_MAX ? (size_t)bound : SIZE_MAX, NULL};
    return stream;
}

int wl_scanner_exchange_end(wl_scanner_exchange_t *ex)
{
    for (;;) {
        ex->piece.len = 0; /* what the decoder left is not part of a message: dropped */
        int event = pump(ex);
        if (event < 0)
            return event;
        if (event == WL_SCANNER_HTTP_DONE)
            return WL_SCANNER_OK;
    }
}

int wl_scanner_exchange_error(wl_scanner_exchange_t *ex, wl_scanner_error_t *err)
{
    wl_scanner_error_init(err, ex->http.status);
    err->retry_after = ex->http.retry_after;
    for (;;) {
        if (ex->piece.len > 0) {
            wl_scanner_error_feed(err, ex->piece.base, ex->piece.len);
            ex->piece.len = 0;
        }
        int event = pump(ex);
        if (event < 0)
            return event;
        if (event == WL_SCANNER_HTTP_DONE)
            return wl_scanner_error_code(err);
    }
}

/* Head, then the status: a non-200 answer's code, or OK with a protobuf body to decode. */
static int receive_head(wl_scanner_exchange_t *ex, wl_scanner_error_t *err)
{
    int rc = wl_scanner_exchange_head(ex);
    if (rc != WL_SCANNER_OK)
        return rc;
    if (ex->http.status != 200) {
        wl_scanner_error_t scratch = {0};
        return wl_scanner_exchange_error(ex, err != NULL ? err : &scratch);
    }
    return ex->http.proto ? WL_SCANNER_OK : fail(ex, WL_SCANNER_ECONTENT_TYPE);
}

/* A decode that failed because the transport did is reported as the transport's failure. */
static int after_decode(wl_scanner_exchange_t *ex, int rc)
{
    if (rc == WL_SCANNER_EDECODE && ex->error != 0)
        return ex->error;
    return rc != WL_SCANNER_OK ? fail(ex, rc) : wl_scanner_exchange_end(ex);
}

int wl_scanner_receive_list_pending(wl_scanner_exchange_t *ex,
                                    walklist_scanner_v1_ListPendingResponse *out,
                                    wl_scanner_error_t *err)
{
    int rc = receive_head(ex, err);
    if (rc != WL_SCANNER_OK)
        return rc;
    pb_istream_t stream = wl_scanner_exchange_body(ex);
    return after_decode(ex, wl_scanner_decode_list_pending(&stream, out));
}

int wl_scanner_receive_load_list(wl_scanner_exchange_t *ex,
                                 const wl_scanner_walk_handler_t *handler,
                                 walklist_scanner_v1_LoadListResponse *walk,
                                 wl_scanner_error_t *err)
{
    int rc = receive_head(ex, err);
    if (rc != WL_SCANNER_OK)
        return rc;
    pb_istream_t stream = wl_scanner_exchange_body(ex);
    return after_decode(ex, wl_scanner_decode_load_list(&stream, handler, walk));
}

int wl_scanner_request_list_pending(const wl_scanner_server_t *server, uint8_t *buf, size_t size,
                                    size_t *len)
{
    uint8_t body[WL_SCANNER_LIST_PENDING_REQUEST_SIZE + 1];
    size_t body_len = 0;
    int rc = wl_scanner_encode_list_pending(body, sizeof(body), &body_len);
    if (rc != WL_SCANNER_OK)
        return rc;
    return wl_scanner_http_request(server, WL_SCANNER_LIST_PENDING_PATH, body, body_len, buf, size,
                                   len);
}

int wl_scanner_request_load_list(const wl_scanner_server_t *server, const char *id, uint8_t *buf,
                                 size_t size, size_t *len)
{
    uint8_t body[WL_SCANNER_LOAD_LIST_REQUEST_SIZE];
    size_t body_len = 0;
    int rc = wl_scanner_encode_load_list(id, body, sizeof(body), &body_len);
    if (rc != WL_SCANNER_OK)
        return rc;
    return wl_scanner_http_request(server, WL_SCANNER_LOAD_LIST_PATH, body, body_len, buf, size,
                                   len);
}
