/* Making WatchStock's messages, one delta at a time, for Connect and gRPC happens here. */
#include "protocols/watch_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors/error_info.h"
#include "export/export_message.h"

/* Cursors are about 80 characters. */
#define CURSOR_MAX 256

typedef struct {
    wl_generator_t base;
    wl_core_t *core;
    wl_stock_watch_t *watch;
    wl_stock_watcher_t *watcher;
    wl_principal_t principal;
    wl_rpc_stream_wire_t wire;
    char cursor[CURSOR_MAX]; /* the last whole delta's: where the next delta starts */
    bool first;              /* the first message is still to come */
    /* A delta being sent, from its first message to its last: its snapshot, or the items
     * another watcher of the organization read (delta_share.h) and the next one of them. */
    wl_export_cursor_t *delta;
    wl_shared_delta_t *shared;
    size_t shared_next;
    bool send_empty;    /* it is sent even without items (the first message, a heartbeat) */
    size_t parts;       /* its messages sent so far */
    unsigned pending;   /* changes heard while a delta went (WL_STOCK_WATCH_CHANGED) */
    int64_t heard_ns;   /* when the last of them was heard (stock_watch.h) */
    wl_piece_t message; /* the message being made, reused */
} watch_stream_t;

/* Between deltas a stream holds neither a snapshot nor a message's memory: idle streams may be
 * many. */
static void close_delta(watch_stream_t *stream)
{
    wl_export_cursor_close(stream->delta);
    stream->delta = NULL;
    wl_shared_delta_release(wl_stock_watch_deltas(stream->watch), stream->shared);
    stream->shared = NULL;
    stream->shared_next = 0;
    stream->parts = 0;
    wl_piece_dispose(&stream->message);
}

static wl_generator_next_t end_with(watch_stream_t *stream, wl_grpc_code_t code, wl_reason_t reason,
                                    const char *text, wl_piece_t *out)
{
    close_delta(stream);
    stream->wire.end(&stream->wire, code, reason, text, out);
    return WL_GENERATOR_DONE;
}

static wl_generator_next_t end_with_error(watch_stream_t *stream, const wl_error_t *err,
                                          wl_piece_t *out)
{
    wl_grpc_code_t code = wl_error_grpc_code(err->code);
    char text[320];
    /* An expired cursor's message says what to do instead (export in full). */
    snprintf(text, sizeof(text), "%s%s", err->message[0] ? err->message : wl_grpc_code_name(code),
             err->code == WL_EHISTORY ? "" : "; resume from the last cursor received");
    return end_with(stream, code, wl_reason_of_error(err->code), text, out);
}

/* The snapshot of the delta since the last cursor; from no cursor at all, the full export's,
 * whose rows are not read (its cursor only). */
static int open_delta(watch_stream_t *stream, wl_error_t *err)
{
    int64_t since = -1;
    int rc = 0;
    if (stream->cursor[0] != '\0')
        rc = wl_core_export_since(stream->core, &stream->principal, stream->cursor, "since", &since,
                                  err);
    /* A change's delta is first looked for among those other watchers read: from a snapshot
     * taken after the change was heard (a heartbeat's, or the first one's, from now on). */
    if (rc == 0 && since >= 0)
        rc = wl_delta_share_get(wl_stock_watch_deltas(stream->watch), stream->core,
                                &stream->principal, since, stream->heard_ns, &stream->shared, err);
    if (rc == 0 && stream->shared == NULL)
        rc =
            wl_core_export_open_since(stream->core, &stream->principal, since, &stream->delta, err);
    return rc;
}

/* The delta's next item: 1 with *item set, 0 after the last, or a negative WL_E* code. */
static int next_item(watch_stream_t *stream, wl_export_item_t *item, wl_error_t *err)
{
    if (stream->shared == NULL)
        return wl_export_cursor_next(stream->delta, item, err);
    if (stream->shared_next == wl_shared_delta_count(stream->shared))
        return 0;
    wl_shared_delta_item(stream->shared, stream->shared_next++, item);
    return 1;
}

/* The delta's next message; IDLE once it is all sent (or had nothing to send), MORE before. */
static wl_generator_next_t put_part(watch_stream_t *stream, wl_piece_t *out)
{
    wl_error_t err;
    wl_error_init(&err);
    stream->message.len = 0;
    wl_export_message_t message;
    wl_export_message_begin(&message, WL_EXPORT_MESSAGE_WATCH, stream->wire.json,
                            WL_RPC_STREAM_MESSAGE, &stream->message);
    int rc = 0;
    wl_export_item_t item;
    /* Without a cursor the stream starts at the full export's version: no row is read. */
    bool rows = stream->cursor[0] != '\0';
    while (rows && !wl_export_message_full(&message) && (rc = next_item(stream, &item, &err)) == 1)
        wl_export_message_add(&message, &item);
    if (rc < 0)
        return end_with_error(stream, &err, out);
    bool last = rc == 0;
    if (last && stream->parts == 0 && wl_export_message_items(&message) == 0 &&
        !stream->send_empty) {
        close_delta(stream); /* nothing changed: nothing to say */
        return stream->pending ? WL_GENERATOR_MORE : WL_GENERATOR_IDLE;
    }
    const char *cursor = !last                    ? NULL
                         : stream->shared != NULL ? wl_shared_delta_cursor(stream->shared)
                                                  : wl_export_cursor_token(stream->delta);
    if (cursor != NULL && strlen(cursor) >= sizeof(stream->cursor))
        stream->message.failed = true;
    wl_export_message_finish(&message, cursor, 0);
    wl_arena_t scratch; /* the gzip-coded message, when it is */
    wl_arena_init(&scratch, 0);
    bool made = !stream->message.failed && stream->wire.encoded(&stream->wire, stream->message.base,
                                                                stream->message.len, &scratch, out);
    wl_arena_dispose(&scratch);
    if (!made)
        return end_with(stream, WL_GRPC_RESOURCE_EXHAUSTED, WL_REASON_REPLY_TOO_LARGE,
                        "the next message could not be made (out of memory): resume from the "
                        "last cursor received",
                        out);
    wl_stock_watch_sent(stream->watch, stream->watcher);
    stream->parts++;
    if (!last)
        return WL_GENERATOR_MORE;
    strcpy(stream->cursor, cursor);
    close_delta(stream);
    /* A change heard while the delta went is read at once (it may be in the delta already:
     * then the next one is empty and nothing is sent). */
    return stream->pending ? WL_GENERATOR_MORE : WL_GENERATOR_IDLE;
}

/* On a request thread, after a wake or a message that more follow: whatever is to do. */
static wl_generator_next_t watch_proceed(wl_generator_t *gen, wl_piece_t *out, size_t want,
                                         wl_error_t *unused)
{
    (void)want;
    (void)unused;
    watch_stream_t *stream = (watch_stream_t *)gen;
    int64_t heard_ns = 0;
    unsigned what =
        wl_stock_watch_take(stream->watch, stream->watcher, &heard_ns) | stream->pending;
    stream->pending = 0;
    if (heard_ns > stream->heard_ns)
        stream->heard_ns = heard_ns;
    if (what & WL_STOCK_WATCH_STOPPING)
        return end_with(stream, WL_GRPC_UNAVAILABLE, WL_REASON_SHUTTING_DOWN,
                        "the server is shutting down: resume from the last cursor received", out);
    if (what & WL_STOCK_WATCH_STALLED)
        return end_with(stream, WL_GRPC_RESOURCE_EXHAUSTED, WL_REASON_STREAM_STALLED,
                        "the client did not take the last message within the stall limit "
                        "(--watch-stall-s): resume from the last cursor received",
                        out);
    if (stream->delta != NULL || stream->shared != NULL) {
        /* Asked for the next part: the one before the last has gone to the client. */
        wl_stock_watch_progress(stream->watch, stream->watcher);
        stream->pending = what & WL_STOCK_WATCH_CHANGED;
        return put_part(stream, out);
    }
    if (!stream->first && !(what & (WL_STOCK_WATCH_CHANGED | WL_STOCK_WATCH_HEARTBEAT)))
        return WL_GENERATOR_IDLE;
    stream->send_empty = stream->first || (what & WL_STOCK_WATCH_HEARTBEAT) != 0;
    /* The first message and a heartbeat's say how things are now: no delta read before. */
    if (stream->send_empty)
        stream->heard_ns = wl_delta_share_now_ns();
    stream->first = false;
    wl_error_t err;
    wl_error_init(&err);
    if (open_delta(stream, &err) != 0)
        return end_with_error(stream, &err, out);
    return put_part(stream, out);
}

/* The last message has gone whole: the stall clock starts again, and the watcher waits. */
static void watch_park(wl_generator_t *gen, void (*wake)(void *ctx), void *ctx)
{
    watch_stream_t *stream = (watch_stream_t *)gen;
    wl_stock_watch_rest(stream->watch, stream->watcher, wake, ctx);
}

static void watch_stop(wl_generator_t *gen)
{
    watch_stream_t *stream = (watch_stream_t *)gen;
    close_delta(stream);
    wl_stock_watch_remove(stream->watch, stream->watcher);
    wl_piece_dispose(&stream->message);
    free(stream);
}

wl_generator_t *wl_watch_stream_create(wl_core_t *core, wl_stock_watch_t *watch,
                                       const wl_principal_t *principal, const char *start,
                                       const wl_rpc_stream_wire_t *wire)
{
    if (strlen(start) >= CURSOR_MAX)
        return NULL; /* the method checked it: no cursor is this long */
    watch_stream_t *stream = calloc(1, sizeof(*stream));
    if (stream == NULL)
        return NULL;
    *stream = (watch_stream_t){
        .base = {.proceed = watch_proceed, .stop = watch_stop, .park = watch_park, .waits = true},
        .core = core,
        .watch = watch,
        .principal = *principal,
        .wire = *wire,
        .first = true};
    strcpy(stream->cursor, start);
    if ((stream->watcher = wl_stock_watch_add(watch, principal->org_id)) == NULL) {
        free(stream);
        return NULL;
    }
    return &stream->base;
}
