/* Making StreamExportStock's messages from the export's snapshot happens here. */
#include "protocols/export_rpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors/error_info.h"
#include "export/export_message.h"
#include "walklist/log.h"

/* Cursors are about 80 characters. */
#define CURSOR_MAX 256

typedef struct {
    wl_generator_t base;
    wl_core_t *core;
    wl_principal_t principal;
    wl_rpc_stream_wire_t wire;
    char since[CURSOR_MAX];
    wl_export_cursor_t *cursor; /* the snapshot, from the first proceed to the last message */
    wl_piece_t message;         /* the message being made, reused */
    size_t items;               /* sent so far */
} export_rpc_t;

static void log_cut_off(const export_rpc_t *stream, const wl_error_t *err)
{
    const char *reason = wl_grpc_code_name(wl_error_grpc_code(err->code));
    wl_log_line_t line;
    wl_log_line_begin(&line, "error", "stock export stream cut off");
    wl_log_line_str(&line, "org", stream->principal.org_slug, strlen(stream->principal.org_slug));
    wl_log_line_int(&line, "items", (long long)stream->items);
    wl_log_line_str(&line, "reason", reason, strlen(reason));
    wl_log_line_end(&line);
}

/* Ends the stream with err (the snapshot given back). */
static wl_generator_next_t end_with(export_rpc_t *stream, const wl_error_t *err, wl_piece_t *out)
{
    wl_export_cursor_close(stream->cursor);
    stream->cursor = NULL;
    wl_grpc_code_t code = wl_error_grpc_code(err->code);
    char text[320];
    snprintf(text, sizeof(text), "%s%s", err->message[0] ? err->message : wl_grpc_code_name(code),
             stream->items > 0 ? "; the export is incomplete: export again" : "");
    stream->wire.end(&stream->wire, code, wl_reason_of_error(err->code), text, out);
    return WL_GENERATOR_DONE;
}

static int open_snapshot(export_rpc_t *stream, wl_error_t *err)
{
    int64_t since = -1;
    int rc = 0;
    if (stream->since[0] != '\0')
        rc = wl_core_export_since(stream->core, &stream->principal, stream->since, "since", &since,
                                  err);
    if (rc == 0)
        rc = wl_core_export_open_since(stream->core, &stream->principal, since, &stream->cursor,
                                       err);
    return rc;
}

/* On a request thread: the next message (the snapshot opened first). */
static wl_generator_next_t export_proceed(wl_generator_t *gen, wl_piece_t *out, size_t want,
                                          wl_error_t *unused)
{
    (void)want;
    (void)unused;
    export_rpc_t *stream = (export_rpc_t *)gen;
    wl_error_t err;
    wl_error_init(&err);
    if (stream->cursor == NULL && open_snapshot(stream, &err) != 0)
        return end_with(stream, &err, out);
    stream->message.len = 0;
    wl_export_message_t message;
    wl_export_message_begin(&message, WL_EXPORT_MESSAGE_EXPORT, stream->wire.json,
                            WL_RPC_STREAM_MESSAGE, &stream->message);
    int rc = 1;
    wl_export_item_t item;
    while (!wl_export_message_full(&message) &&
           (rc = wl_export_cursor_next(stream->cursor, &item, &err)) == 1)
        wl_export_message_add(&message, &item);
    if (rc < 0) {
        log_cut_off(stream, &err);
        return end_with(stream, &err, out);
    }
    bool last = rc == 0;
    wl_export_message_finish(&message, last ? wl_export_cursor_token(stream->cursor) : NULL,
                             wl_export_cursor_generated_ms(stream->cursor));
    wl_arena_t scratch; /* the gzip-coded message, when it is */
    wl_arena_init(&scratch, 0);
    bool made = !stream->message.failed && stream->wire.encoded(&stream->wire, stream->message.base,
                                                                stream->message.len, &scratch, out);
    wl_arena_dispose(&scratch);
    if (!made) {
        wl_error_set(&err, WL_ENOMEM, "the next message could not be made (out of memory)");
        return end_with(stream, &err, out);
    }
    stream->items += wl_export_message_items(&message);
    if (!last)
        return WL_GENERATOR_MORE;
    wl_export_cursor_close(stream->cursor);
    stream->cursor = NULL;
    stream->wire.end(&stream->wire, WL_GRPC_OK, WL_REASON_INTERNAL /* none: a good end */, NULL,
                     out);
    return WL_GENERATOR_DONE;
}

static void export_stop(wl_generator_t *gen)
{
    export_rpc_t *stream = (export_rpc_t *)gen;
    /* Closing the cursor rolls back and frees the connection, also when the client left. */
    wl_export_cursor_close(stream->cursor);
    wl_piece_dispose(&stream->message);
    free(stream);
}

wl_generator_t *wl_export_rpc_create(wl_core_t *core, const wl_principal_t *principal,
                                     const char *since, const wl_rpc_stream_wire_t *wire)
{
    if (strlen(since) >= CURSOR_MAX)
        return NULL; /* the method checked it: no cursor is this long */
    export_rpc_t *stream = calloc(1, sizeof(*stream));
    if (stream == NULL)
        return NULL;
    *stream =
        (export_rpc_t){.base = {.proceed = export_proceed, .stop = export_stop, .waits = true},
                       .core = core,
                       .principal = *principal,
                       .wire = *wire};
    strcpy(stream->since, since);
    return &stream->base;
}
