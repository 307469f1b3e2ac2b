/* Making WatchStock's messages, one delta at a time, for Connect and gRPC happens here. */
#include "protocols/watch_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocols/connect_wire.h"
#include "walklist/v1/stock.pb-c.h"

/* What one message may take while it is made: a delta of about a million SKUs. */
#define MESSAGE_ARENA_LIMIT (512u * 1024 * 1024)
/* Cursors are about 80 characters. */
#define CURSOR_MAX 256

typedef struct {
    wl_generator_t base;
    wl_core_t *core;
    wl_stock_watch_t *watch;
    wl_stock_watcher_t *watcher;
    wl_principal_t principal;
    wl_rpc_stream_wire_t wire;
    char cursor[CURSOR_MAX]; /* the last message's: where the next delta starts */
} watch_stream_t;

/* Takes the cursor of message (a WatchStockResponse); false when it is too long to keep. */
static bool take_cursor(watch_stream_t *stream, const ProtobufCMessage *message)
{
    const char *cursor = ((const Walklist__V1__WatchStockResponse *)message)->cursor;
    if (strlen(cursor) >= sizeof(stream->cursor))
        return false;
    strcpy(stream->cursor, cursor);
    return true;
}

/* Reads the delta since the last cursor; appends it when it has items or a heartbeat is due. */
static wl_generator_next_t put_delta(watch_stream_t *stream, bool heartbeat, wl_piece_t *out)
{
    wl_arena_t arena;
    wl_arena_init(&arena, MESSAGE_ARENA_LIMIT);
    wl_error_t err;
    wl_error_init(&err);
    wl_generator_next_t next = WL_GENERATOR_IDLE;
    ProtobufCMessage *message = NULL;
    int rc = wl_core_watch_stock(stream->core, &stream->principal, stream->cursor, &arena, &message,
                                 &err);
    if (rc != 0) {
        wl_grpc_code_t code = wl_error_grpc_code(err.code);
        char text[320];
        /* An expired cursor's message says what to do instead (export in full). */
        snprintf(text, sizeof(text), "%s%s", err.message[0] ? err.message : wl_grpc_code_name(code),
                 err.code == WL_EHISTORY ? "" : "; resume from the last cursor received");
        stream->wire.end(&stream->wire, code, wl_reason_of_error(err.code), text, out);
        next = WL_GENERATOR_DONE;
    } else if (((Walklist__V1__WatchStockResponse *)message)->n_items > 0 || heartbeat) {
        if (take_cursor(stream, message) &&
            stream->wire.message(&stream->wire, message, &arena, out)) {
            wl_stock_watch_sent(stream->watch, stream->watcher);
        } else {
            stream->wire.end(&stream->wire, WL_GRPC_RESOURCE_EXHAUSTED, WL_REASON_REPLY_TOO_LARGE,
                             "the next message could not be made (out of memory): resume from "
                             "the last cursor received",
                             out);
            next = WL_GENERATOR_DONE;
        }
    }
    wl_arena_dispose(&arena);
    return next;
}

/* On a request thread, after a wake: whatever the watcher has to do. */
static wl_generator_next_t watch_proceed(wl_generator_t *gen, wl_piece_t *out, size_t want,
                                         wl_error_t *err)
{
    (void)want;
    (void)err;
    watch_stream_t *stream = (watch_stream_t *)gen;
    unsigned what = wl_stock_watch_take(stream->watch, stream->watcher);
    if (what & WL_STOCK_WATCH_STOPPING) {
        stream->wire.end(&stream->wire, WL_GRPC_UNAVAILABLE, WL_REASON_SHUTTING_DOWN,
                         "the server is shutting down: resume from the last cursor received", out);
        return WL_GENERATOR_DONE;
    }
    if (what & WL_STOCK_WATCH_STALLED) {
        stream->wire.end(&stream->wire, WL_GRPC_RESOURCE_EXHAUSTED, WL_REASON_STREAM_STALLED,
                         "the client did not take the last message within the stall limit "
                         "(--watch-stall-s): resume from the last cursor received",
                         out);
        return WL_GENERATOR_DONE;
    }
    if (what & (WL_STOCK_WATCH_CHANGED | WL_STOCK_WATCH_HEARTBEAT))
        return put_delta(stream, (what & WL_STOCK_WATCH_HEARTBEAT) != 0, out);
    return WL_GENERATOR_IDLE;
}

/* The last message has gone whole: the stall clock starts again, and the watcher waits. */
static void watch_park(wl_generator_t *gen, void (*wake)(void *ctx), void *ctx)
{
    watch_stream_t *stream = (watch_stream_t *)gen;
    wl_stock_watch_progress(stream->watch, stream->watcher);
    wl_stock_watch_park(stream->watch, stream->watcher, wake, ctx);
}

static void watch_stop(wl_generator_t *gen)
{
    watch_stream_t *stream = (watch_stream_t *)gen;
    wl_stock_watch_remove(stream->watch, stream->watcher);
    free(stream);
}

wl_generator_t *wl_watch_stream_create(wl_core_t *core, wl_stock_watch_t *watch,
                                       const wl_principal_t *principal,
                                       const ProtobufCMessage *first,
                                       const wl_rpc_stream_wire_t *wire)
{
    watch_stream_t *stream = calloc(1, sizeof(*stream));
    if (stream == NULL)
        return NULL;
    *stream = (watch_stream_t){
        .base = {.proceed = watch_proceed, .stop = watch_stop, .park = watch_park, .waits = true},
        .core = core,
        .watch = watch,
        .principal = *principal,
        .wire = *wire};
    if (!take_cursor(stream, first) ||
        (stream->watcher = wl_stock_watch_add(watch, principal->org_id)) == NULL) {
        free(stream);
        return NULL;
    }
    return &stream->base;
}

bool wl_watch_stream_start(wl_exchange_t *ex, wl_core_t *core, wl_stock_watch_t *watch, bool json,
                           bool gzip, const ProtobufCMessage *first)
{
    wl_rpc_stream_wire_t wire = wl_connect_stream_wire(json, gzip);
    wl_generator_t *gen = wl_watch_stream_create(core, watch, &ex->principal, first, &wire);
    if (gen == NULL)
        return false;
    wl_piece_t first_piece = {0};
    if (!wire.message(&wire, first, &ex->arena, &first_piece)) {
        wl_piece_dispose(&first_piece);
        gen->stop(gen);
        return false;
    }
    if (gzip)
        wl_exchange_add_header(ex, "Connect-Content-Encoding", "gzip");
    wl_exchange_generate(ex, 200, json ? "application/connect+json" : "application/connect+proto",
                         gen, &first_piece, WL_GENERATOR_IDLE);
    return true;
}
