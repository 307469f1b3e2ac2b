/* Streaming WatchStock's messages to a Connect client, one delta at a time, happens here. */
#include "protocols/watch_stream.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocols/connect_wire.h"
#include "codec/json_codec.h"
#include "walklist/v1/stock.pb-c.h"

/* What one message may take while it is made: a delta of about a million SKUs. */
#define MESSAGE_ARENA_LIMIT (512u * 1024 * 1024)
/* Cursors are about 80 characters. */
#define CURSOR_MAX 256

typedef struct {
    wl_core_t *core;
    wl_stock_watch_t *watch;
    wl_stock_watcher_t *watcher;
    wl_principal_t principal;
    bool json;
    char cursor[CURSOR_MAX]; /* the last message's: where the next delta starts */
    /* The enveloped bytes not yet taken by libmicrohttpd: one message at most, and the
     * end-stream message after it. */
    char *data;
    size_t len, sent, cap;
    bool ended; /* the end-stream message is in data */
} stream_t;

static bool reserve(stream_t *stream, size_t extra)
{
    if (stream->cap - stream->len >= extra)
        return true;
    size_t cap = stream->len + extra;
    char *grown = realloc(stream->data, cap);
    if (grown == NULL)
        return false;
    stream->data = grown;
    stream->cap = cap;
    return true;
}

/* Appends message (a WatchStockResponse) enveloped in the stream's codec and takes its cursor. */
static bool put_message(stream_t *stream, const ProtobufCMessage *message, wl_arena_t *arena)
{
    const Walklist__V1__WatchStockResponse *reply =
        (const Walklist__V1__WatchStockResponse *)message;
    if (strlen(reply->cursor) >= sizeof(stream->cursor))
        return false;
    size_t len = 0;
    char *text = NULL;
    if (stream->json) {
        text = wl_json_encode_text(message, arena, &len);
    } else {
        len = protobuf_c_message_get_packed_size(message);
        text = wl_arena_alloc(arena, len ? len : 1);
        if (text != NULL)
            protobuf_c_message_pack(message, (uint8_t *)text);
    }
    if (text == NULL || len > UINT32_MAX || !reserve(stream, WL_CONNECT_ENVELOPE + len))
        return false;
    wl_connect_envelope(stream->data + stream->len, 0, text, len);
    stream->len += WL_CONNECT_ENVELOPE + len;
    strcpy(stream->cursor, reply->cursor);
    return true;
}

/* Appends the end-stream message with the error that ends the stream. */
static void put_end(stream_t *stream, wl_grpc_code_t code, wl_reason_t reason, const char *message,
                    const wl_error_t *err)
{
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    wl_error_info_t info = {.reason = reason};
    size_t len = 0;
    char *end = wl_connect_end_stream(
        &arena, wl_connect_error_json(&arena, code, message, err, &info), &len);
    if (end != NULL && reserve(stream, len)) {
        memcpy(stream->data + stream->len, end, len);
        stream->len += len;
    }
    /* Without the end message (out of memory) the client sees the stream cut. */
    stream->ended = true;
    wl_arena_dispose(&arena);
}

/* Reads the delta since the last cursor; sends it when it has items or a heartbeat is due. */
static void put_delta(stream_t *stream, bool heartbeat)
{
    wl_arena_t arena;
    wl_arena_init(&arena, MESSAGE_ARENA_LIMIT);
    wl_error_t err;
    wl_error_init(&err);
    ProtobufCMessage *message = NULL;
    int rc = wl_core_watch_stock(stream->core, &stream->principal, stream->cursor, &arena, &message,
                                 &err);
    if (rc != 0) {
        wl_grpc_code_t code = wl_error_grpc_code(err.code);
        char text[320];
        /* An expired cursor's message says what to do instead (export in full). */
        snprintf(text, sizeof(text), "%s%s", err.message[0] ? err.message : wl_grpc_code_name(code),
                 err.code == WL_EHISTORY ? "" : "; resume from the last cursor received");
        put_end(stream, code, wl_reason_of_error(err.code), text, NULL);
    } else if (((Walklist__V1__WatchStockResponse *)message)->n_items > 0 || heartbeat) {
        if (put_message(stream, message, &arena))
            wl_stock_watch_sent(stream->watch, stream->watcher);
        else
            put_end(stream, WL_GRPC_RESOURCE_EXHAUSTED, WL_REASON_REPLY_TOO_LARGE,
                    "the next message could not be made (out of memory): resume from the last "
                    "cursor received",
                    NULL);
    }
    wl_arena_dispose(&arena);
}

/* On a request thread, after a wake: whatever the watcher has to do. */
static void fill(void *state)
{
    stream_t *stream = state;
    if (stream->ended)
        return;
    unsigned what = wl_stock_watch_take(stream->watch, stream->watcher);
    if (what & WL_STOCK_WATCH_STOPPING)
        put_end(stream, WL_GRPC_UNAVAILABLE, WL_REASON_SHUTTING_DOWN,
                "the server is shutting down: resume from the last cursor received", NULL);
    else if (what & WL_STOCK_WATCH_STALLED)
        put_end(stream, WL_GRPC_RESOURCE_EXHAUSTED, WL_REASON_STREAM_STALLED,
                "the client did not take the last message within the stall limit "
                "(--watch-stall-s): resume from the last cursor received",
                NULL);
    else if (what & (WL_STOCK_WATCH_CHANGED | WL_STOCK_WATCH_HEARTBEAT))
        put_delta(stream, (what & WL_STOCK_WATCH_HEARTBEAT) != 0);
}

static ssize_t read_stream(void *state, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    stream_t *stream = state;
    if (stream->sent < stream->len) {
        size_t n = stream->len - stream->sent < max ? stream->len - stream->sent : max;
        memcpy(buf, stream->data + stream->sent, n);
        stream->sent += n;
        if (stream->sent == stream->len) {
            stream->len = stream->sent = 0;
            /* The stall clock measures how long a message takes to go, not single reads: a
             * client taking a few bytes now and then would keep a connection and its
             * coalescing forever otherwise. */
            wl_stock_watch_progress(stream->watch, stream->watcher);
        }
        return (ssize_t)n;
    }
    if (stream->ended)
        return MHD_CONTENT_READER_END_OF_STREAM;
    return WL_EXCHANGE_STREAM_PARKED;
}

static void park(void *state, void (*wake)(void *ctx), void *ctx)
{
    stream_t *stream = state;
    wl_stock_watch_park(stream->watch, stream->watcher, wake, ctx);
}

static void free_stream(void *state)
{
    stream_t *stream = state;
    wl_stock_watch_remove(stream->watch, stream->watcher);
    free(stream->data);
    free(stream);
}

bool wl_watch_stream_start(wl_exchange_t *ex, wl_core_t *core, wl_stock_watch_t *watch, bool json,
                           const ProtobufCMessage *first)
{
    stream_t *stream = calloc(1, sizeof(*stream));
    if (stream == NULL)
        return false;
    *stream = (stream_t){.core = core, .watch = watch, .principal = ex->principal, .json = json};
    stream->watcher = wl_stock_watch_add(watch, ex->principal.org_id);
    if (stream->watcher == NULL || !put_message(stream, first, &ex->arena)) {
        free_stream(stream);
        return false;
    }
    wl_exchange_stream(ex, 200, json ? "application/connect+json" : "application/connect+proto",
                       read_stream, fill, free_stream, stream);
    wl_exchange_stream_parks(ex, park);
    return true;
}
