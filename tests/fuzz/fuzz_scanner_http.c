/*
 * The scanner firmware library's HTTP side (src/scanner: walklist/scanner_http.h, scanner_error.h,
 * scanner_exchange.h): the input is an answer from the network. Byte 0 picks the fragment size
 * the transport hands over (1 to 64), bit 7 of byte 1 the decoder (walk or queue), the rest of
 * byte 1 the body limit. Every result is a known code; the parser never hands out bytes outside
 * its fragment nor more body than the limit allows.
 */
#include <string.h>

#include "fuzz.h"
#include "walklist/scanner_exchange.h"

typedef struct {
    const uint8_t *data;
    size_t len, pos, fragment;
} wire_t;

static int wire_recv(void *io, uint8_t *buf, size_t size)
{
    wire_t *wire = io;
    size_t n = wire->len - wire->pos;
    n = n < size ? n : size;
    n = n < wire->fragment ? n : wire->fragment;
    memcpy(buf, wire->data + wire->pos, n);
    wire->pos += n;
    return (int)n;
}

static bool on_stop(void *context, const walklist_scanner_v1_Stop *stop)
{
    (void)context;
    FUZZ_CHECK(memchr(stop->bin, '\0', sizeof(stop->bin)) != NULL);
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    uint64_t limit = (data[1] & 0x7f) * 64u; /* 0: none */
    wire_t wire = {data + 2, size - 2, 0, 1u + data[0] % 64u};

    /* The parser alone, over the same fragments. */
    wl_scanner_http_t http;
    wl_scanner_http_init(&http, limit);
    uint64_t body_total = 0;
    int ev = WL_SCANNER_HTTP_MORE;
    for (size_t pos = 0; pos < wire.len && ev >= 0 && ev != WL_SCANNER_HTTP_DONE;) {
        size_t n = wire.len - pos < wire.fragment ? wire.len - pos : wire.fragment, used;
        wl_scanner_span_t body;
        ev = wl_scanner_http_parse(&http, wire.data + pos, n, &used, &body);
        FUZZ_CHECK(used <= n);
        FUZZ_CHECK(ev != WL_SCANNER_HTTP_MORE || used == n);
        if (ev == WL_SCANNER_HTTP_BODY)
            FUZZ_CHECK(body.base >= wire.data + pos && body.base + body.len <= wire.data + pos + n);
        body_total += ev == WL_SCANNER_HTTP_BODY ? body.len : 0;
        pos += used;
    }
    FUZZ_CHECK(limit == 0 || body_total <= limit);

    /* The exchange into the decoders. */
    uint8_t rx[32];
    wl_scanner_exchange_t ex;
    wl_scanner_exchange_init(&ex, wire_recv, &wire, rx, sizeof(rx), limit);
    wl_scanner_error_t err = {0};
    int rc;
    if (data[1] & 0x80) {
        walklist_scanner_v1_ListPendingResponse queue;
        rc = wl_scanner_receive_list_pending(&ex, &queue, &err);
    } else {
        wl_scanner_walk_handler_t handler = {.stop = on_stop};
        walklist_scanner_v1_LoadListResponse walk;
        rc = wl_scanner_receive_load_list(&ex, &handler, &walk, &err);
    }
    FUZZ_CHECK(rc <= 0 && strcmp(wl_scanner_strerror(rc), "unknown status") != 0);
    FUZZ_CHECK(memchr(err.status, '\0', sizeof(err.status)) != NULL);
    FUZZ_CHECK(memchr(err.message, '\0', sizeof(err.message)) != NULL);
    return 0;
}
