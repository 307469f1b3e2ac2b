/* Writing one message of stock export items, in binary or JSON, item by item happens here. */
#include "export/export_message.h"

#include <string.h>

#include "export/export_json.h"
#include "walklist/v1/stock.pb-c.h"

/* Field keys (field number << 3 | wire type 2, length-delimited), each one byte. */
#define KEY_ITEMS               0x0a /* field 1 of both messages */
#define KEY_EXPORT_GENERATED_AT 0x12 /* StreamExportStockResponse.generated_at, field 2 */
#define KEY_EXPORT_CURSOR       0x1a /* StreamExportStockResponse.cursor, field 3 */
#define KEY_WATCH_CURSOR        0x12 /* WatchStockResponse.cursor, field 2 */
#define VARINT_MAX              10
#define JSON_EXPORT_PART_CLOSE  "],\"generatedAt\":null,\"cursor\":\"\"}"
#define JSON_WATCH_CLOSE_OPEN   "],\"cursor\":\""
#define JSON_WATCH_CLOSE_CLOSE  "\"}"

static size_t put_varint(uint8_t *out, uint64_t value)
{
    size_t n = 0;
    while (value >= 0x80) {
        out[n++] = (uint8_t)(value | 0x80);
        value >>= 7;
    }
    out[n++] = (uint8_t)value;
    return n;
}

/* A length-delimited field: key, length, then packed (protobuf-c packs it in place). */
static void put_field(wl_piece_t *out, uint8_t key, const ProtobufCMessage *packed)
{
    size_t len = protobuf_c_message_get_packed_size(packed);
    uint8_t *room = (uint8_t *)wl_piece_reserve(out, 1 + VARINT_MAX + len);
    if (room == NULL)
        return;
    size_t head = 1 + put_varint(room + 1, len);
    room[0] = key;
    protobuf_c_message_pack(packed, room + head);
    out->len += head + len;
}

static void put_string_field(wl_piece_t *out, uint8_t key, const char *text)
{
    size_t len = strlen(text);
    if (len == 0)
        return; /* proto3: an empty string is not written */
    uint8_t *room = (uint8_t *)wl_piece_reserve(out, 1 + VARINT_MAX + len);
    if (room == NULL)
        return;
    size_t head = 1 + put_varint(room + 1, len);
    room[0] = key;
    memcpy(room + head, text, len);
    out->len += head + len;
}

void wl_export_message_begin(wl_export_message_t *message, wl_export_message_kind_t kind, bool json,
                             size_t limit, wl_piece_t *out)
{
    *message = (wl_export_message_t){
        .out = out, .start = out->len, .limit = limit, .kind = kind, .json = json};
    if (json)
        wl_piece_append(out, WL_EXPORT_JSON_OPEN, strlen(WL_EXPORT_JSON_OPEN));
}

static void add_binary(wl_export_message_t *message, const wl_export_item_t *item)
{
    Walklist__V1__StockExportItem packed = WALKLIST__V1__STOCK_EXPORT_ITEM__INIT;
    Google__Protobuf__StringValue location = GOOGLE__PROTOBUF__STRING_VALUE__INIT;
    packed.sku = (char *)item->sku;
    packed.qty = item->qty;
    if (item->location != NULL) {
        location.value = (char *)item->location;
        packed.location = &location;
    }
    if (item->removed) {
        packed.change_case = WALKLIST__V1__STOCK_EXPORT_ITEM__CHANGE_REMOVED;
        packed.removed = 1;
    }
    put_field(message->out, KEY_ITEMS, &packed.base);
}

static void add_json(wl_export_message_t *message, const wl_export_item_t *item)
{
    wl_piece_t *out = message->out;
    size_t bound = wl_export_json_item_bound(item);
    char *start = bound == SIZE_MAX ? NULL : wl_piece_reserve(out, bound + 1);
    if (start == NULL) {
        out->failed = true;
        return;
    }
    char *end = start;
    if (message->items > 0)
        *end++ = ',';
    end = wl_export_json_item(end, item);
    out->len += (size_t)(end - start);
}

void wl_export_message_add(wl_export_message_t *message, const wl_export_item_t *item)
{
    if (message->json)
        add_json(message, item);
    else
        add_binary(message, item);
    message->items++;
}

bool wl_export_message_full(const wl_export_message_t *message)
{
    return message->out->len - message->start >= message->limit;
}

size_t wl_export_message_items(const wl_export_message_t *message)
{
    return message->items;
}

static void finish_json(wl_export_message_t *message, const char *cursor, int64_t generated_ms)
{
    wl_piece_t *out = message->out;
    if (message->kind == WL_EXPORT_MESSAGE_EXPORT && cursor == NULL) {
        wl_piece_append(out, JSON_EXPORT_PART_CLOSE, strlen(JSON_EXPORT_PART_CLOSE));
    } else if (message->kind == WL_EXPORT_MESSAGE_EXPORT) {
        /* The REST export's closing text: the same fields in the same form. */
        char closing[WL_EXPORT_JSON_CLOSE_MAX];
        size_t len = wl_export_json_close(generated_ms, cursor, closing, sizeof(closing));
        if (len == 0 || len >= sizeof(closing))
            out->failed = true;
        else
            wl_piece_append(out, closing, len);
    } else {
        /* A cursor is base64url: nothing in it is escaped. */
        const char *text = cursor != NULL ? cursor : "";
        wl_piece_append(out, JSON_WATCH_CLOSE_OPEN, strlen(JSON_WATCH_CLOSE_OPEN));
        wl_piece_append(out, text, strlen(text));
        wl_piece_append(out, JSON_WATCH_CLOSE_CLOSE, strlen(JSON_WATCH_CLOSE_CLOSE));
    }
}

static void finish_binary(wl_export_message_t *message, const char *cursor, int64_t generated_ms)
{
    if (cursor == NULL)
        return; /* a message before the last: neither field is set */
    if (message->kind == WL_EXPORT_MESSAGE_EXPORT) {
        Google__Protobuf__Timestamp at = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
        int64_t ms = generated_ms % 1000 < 0 ? generated_ms % 1000 + 1000 : generated_ms % 1000;
        at.seconds = (generated_ms - ms) / 1000;
        at.nanos = (int32_t)(ms * 1000000);
        put_field(message->out, KEY_EXPORT_GENERATED_AT, &at.base);
        put_string_field(message->out, KEY_EXPORT_CURSOR, cursor);
    } else {
        put_string_field(message->out, KEY_WATCH_CURSOR, cursor);
    }
}

void wl_export_message_finish(wl_export_message_t *message, const char *cursor,
                              int64_t generated_ms)
{
    if (message->json)
        finish_json(message, cursor, generated_ms);
    else
        finish_binary(message, cursor, generated_ms);
}
