/*
 * One message of a stock stream (StreamExportStockResponse, WatchStockResponse) written item by
 * item, in binary protobuf or in proto3 JSON, without building the message: the bytes are those
 * protobuf-c's pack and the JSON codec give the same message, so a stream of any number of SKUs
 * holds one message at a time. A message is full once its items take the limit given; it is
 * then at most the limit plus one item (an item is at most a few hundred bytes: SKU and bin
 * codes are 64 characters at most). Pure: no I/O; the bytes go onto a piece (generator.h).
 *
 *     wl_export_message_t message;
 *     wl_export_message_begin(&message, WL_EXPORT_MESSAGE_EXPORT, json, 1024 * 1024, &out);
 *     while (!wl_export_message_full(&message) && next_item(&item))
 *         wl_export_message_add(&message, &item);
 *     wl_export_message_finish(&message, last ? cursor : NULL, generated_ms);
 *     if (out.failed) ...; // out of memory (or past a fixed piece's room)
 */
#ifndef WALKLIST_GATEWAY_EXPORT_MESSAGE_H
#define WALKLIST_GATEWAY_EXPORT_MESSAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/generator.h"
#include "walklist/core.h"

/* Which message: the fields after items differ. */
typedef enum {
    WL_EXPORT_MESSAGE_EXPORT, /* StreamExportStockResponse: items 1, generated_at 2, cursor 3 */
    WL_EXPORT_MESSAGE_WATCH,  /* WatchStockResponse: items 1, cursor 2 */
} wl_export_message_kind_t;

/* A message being written; caller-allocated, fields private. */
typedef struct {
    wl_piece_t *out;
    size_t start; /* where the message begins on out */
    size_t limit;
    size_t items;
    wl_export_message_kind_t kind;
    bool json;
} wl_export_message_t;

/** Starts a message at the end of out (JSON: its opening text; binary: nothing yet). */
void wl_export_message_begin(wl_export_message_t *message, wl_export_message_kind_t kind, bool json,
                             size_t limit, wl_piece_t *out);

/** Appends item (out->failed says when it did not fit). */
void wl_export_message_add(wl_export_message_t *message, const wl_export_item_t *item);

/** True once the message's bytes reach its limit: finish it, the next item goes into the next. */
bool wl_export_message_full(const wl_export_message_t *message);

/** Items in the message so far. */
size_t wl_export_message_items(const wl_export_message_t *message);

/**
 * Ends the message. cursor NULL: a message that more of the same export or delta follow (no
 * cursor, and no generated_at); else the last one, with cursor and, in an export's message,
 * generated_ms (milliseconds since the epoch) as generated_at. The cursor is base64url text of at
 * most 160 bytes.
 */
void wl_export_message_finish(wl_export_message_t *message, const char *cursor,
                              int64_t generated_ms);

#endif
