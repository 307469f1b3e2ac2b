/*
 * Stream messages of stock export items written item by item, against protobuf-c and the JSON
 * codec: every message (an export's part and last, a watch's part and last) must be the bytes
 * protobuf-c packs and the text the codec writes for the same message; cutting a long run of
 * items at the limit must give messages of bounded size that, concatenated in binary, decode as
 * the one ExportStockResponse of all the items.
 */
#include "export/export_message.h"

#include <stdlib.h>

#include "codec/json_codec.h"
#include "test.h"
#include "walklist/v1/stock.pb-c.h"

static wl_arena_t arena;

/* protobuf-c's items of the given export items (arena memory). */
static Walklist__V1__StockExportItem **codec_items(const wl_export_item_t *items, size_t count)
{
    Walklist__V1__StockExportItem **pointers = wl_arena_alloc(&arena, (count + 1) * sizeof(void *));
    for (size_t i = 0; i < count; i++) {
        Walklist__V1__StockExportItem *item = wl_arena_alloc(&arena, sizeof(*item));
        walklist__v1__stock_export_item__init(item);
        item->sku = (char *)items[i].sku;
        item->qty = items[i].qty;
        if (items[i].location != NULL) {
            item->location = wl_arena_alloc(&arena, sizeof(*item->location));
            google__protobuf__string_value__init(item->location);
            item->location->value = (char *)items[i].location;
        }
        if (items[i].removed) {
            item->change_case = WALKLIST__V1__STOCK_EXPORT_ITEM__CHANGE_REMOVED;
            item->removed = 1;
        }
        pointers[i] = item;
    }
    return pointers;
}

/* The message protobuf-c and the codec know: cursor NULL is a part (no cursor, no time). */
static ProtobufCMessage *codec_message(wl_export_message_kind_t kind, const wl_export_item_t *items,
                                       size_t count, const char *cursor, int64_t generated_ms)
{
    if (kind == WL_EXPORT_MESSAGE_WATCH) {
        Walklist__V1__WatchStockResponse *watch = wl_arena_alloc(&arena, sizeof(*watch));
        walklist__v1__watch_stock_response__init(watch);
        watch->items = codec_items(items, count);
        watch->n_items = count;
        watch->cursor = (char *)(cursor ? cursor : "");
        return &watch->base;
    }
    Walklist__V1__StreamExportStockResponse *export = wl_arena_alloc(&arena, sizeof(*export));
    walklist__v1__stream_export_stock_response__init(export);
    export->items = codec_items(items, count);
    export->n_items = count;
    export->cursor = (char *)(cursor ? cursor : "");
    if (cursor != NULL) {
        Google__Protobuf__Timestamp *at = wl_arena_alloc(&arena, sizeof(*at));
        google__protobuf__timestamp__init(at);
        int64_t ms = generated_ms % 1000 < 0 ? generated_ms % 1000 + 1000 : generated_ms % 1000;
        at->seconds = (generated_ms - ms) / 1000;
        at->nanos = (int32_t)(ms * 1000000);
        export->generated_at = at;
    }
    return &export->base;
}

/* The writer's message of all the items, no limit. */
static void writer_message(wl_piece_t *out, wl_export_message_kind_t kind, bool json,
                           const wl_export_item_t *items, size_t count, const char *cursor,
                           int64_t generated_ms)
{
    wl_export_message_t message;
    wl_export_message_begin(&message, kind, json, SIZE_MAX, out);
    for (size_t i = 0; i < count; i++)
        wl_export_message_add(&message, &items[i]);
    CHECK_INT(wl_export_message_items(&message), count);
    wl_export_message_finish(&message, cursor, generated_ms);
}

static void check_same(wl_export_message_kind_t kind, const wl_export_item_t *items, size_t count,
                       const char *cursor, int64_t generated_ms, int line)
{
    ProtobufCMessage *want = codec_message(kind, items, count, cursor, generated_ms);
    /* Binary: protobuf-c's bytes. */
    size_t want_len = protobuf_c_message_get_packed_size(want);
    uint8_t *want_bytes = wl_arena_alloc(&arena, want_len + 1);
    protobuf_c_message_pack(want, want_bytes);
    wl_piece_t got = {0};
    writer_message(&got, kind, false, items, count, cursor, generated_ms);
    test_checks++;
    if (got.failed || got.len != want_len ||
        (want_len > 0 && memcmp(got.base, want_bytes, want_len))) {
        test_failures++;
        fprintf(stderr, "%s:%d: binary message differs from protobuf-c's (%zu bytes, want %zu)\n",
                __FILE__, line, got.len, want_len);
    }
    wl_piece_dispose(&got);
    /* JSON: the codec's text. */
    char *want_text = wl_json_encode_text(want, &arena, NULL);
    writer_message(&got, kind, true, items, count, cursor, generated_ms);
    wl_piece_append(&got, "", 1);
    test_checks++;
    if (want_text == NULL || got.failed || strcmp(want_text, got.base) != 0) {
        test_failures++;
        fprintf(stderr, "%s:%d: JSON message differs from the codec's\n  codec  %s\n  writer %s\n",
                __FILE__, line, want_text ? want_text : "(null)", got.base ? got.base : "(null)");
    }
    wl_piece_dispose(&got);
}
#define CHECK_SAME(kind, items, count, cursor, ms)                                                 \
    check_same(kind, items, count, cursor, ms, __LINE__)

static const wl_export_item_t sample[] = {
    {"A", 0, NULL},
    {"B", 1, "R-1"},
    {"C", INT64_MAX, "x"},
    {"D", -1, NULL},
    {"E", INT64_MIN, ""},
    {"F", 0, NULL, true},
    {"Q\"uote\\\xc3\xa4\xf0\x9f\x98\x80", 7, "\xe2\x80\xa8 tab\t"},
};
#define SAMPLE_COUNT (sizeof(sample) / sizeof(sample[0]))

static void test_messages(void)
{
    const wl_export_message_kind_t kinds[] = {WL_EXPORT_MESSAGE_EXPORT, WL_EXPORT_MESSAGE_WATCH};
    const int64_t times[] = {0, 1700000000999, -1, 253402300799999};
    for (size_t k = 0; k < 2; k++) {
        /* No items, a part and a last message. */
        CHECK_SAME(kinds[k], NULL, 0, NULL, 0);
        CHECK_SAME(kinds[k], NULL, 0, "c3RvY2s", 1700000000000);
        CHECK_SAME(kinds[k], sample, SAMPLE_COUNT, NULL, 0);
        for (size_t t = 0; t < sizeof(times) / sizeof(times[0]); t++)
            CHECK_SAME(kinds[k], sample, SAMPLE_COUNT, "AbC-_123", times[t]);
    }
}

/* A long run of items cut at limit: every message is within the limit plus one item, all but
 * the last are full, and the binary messages, concatenated, decode as one ExportStockResponse
 * of every item with the cursor and time of the last message (protobuf's merge of repeated and
 * singular fields). */
static void test_cutting(bool json, size_t limit)
{
    enum { COUNT = 20000 };
    static char skus[COUNT][16];
    static wl_export_item_t items[COUNT];
    for (size_t i = 0; i < COUNT; i++) {
        snprintf(skus[i], sizeof(skus[i]), "SKU-%06zu", i);
        items[i] = (wl_export_item_t){skus[i], (int64_t)(i % 97), i % 3 ? "A-01-02" : NULL};
    }
    wl_piece_t all = {0};
    size_t next = 0, messages = 0, largest = 0;
    while (next < COUNT || messages == 0) {
        wl_piece_t out = {0};
        wl_export_message_t message;
        wl_export_message_begin(&message, WL_EXPORT_MESSAGE_EXPORT, json, limit, &out);
        while (!wl_export_message_full(&message) && next < COUNT)
            wl_export_message_add(&message, &items[next++]);
        bool last = next == COUNT;
        wl_export_message_finish(&message, last ? "CURSOR" : NULL, 1700000000123);
        CHECK(!out.failed);
        if (!last)
            CHECK(out.len >= limit); /* cut only when full */
        largest = out.len > largest ? out.len : largest;
        /* Each message decodes alone, in its codec. */
        ProtobufCMessage *decoded = NULL;
        wl_error_t err;
        wl_error_init(&err);
        if (json) {
            CHECK_INT(wl_json_decode(&walklist__v1__stream_export_stock_response__descriptor,
                                     out.base, out.len, &arena, &decoded, &err),
                      0);
        } else {
            decoded =
                protobuf_c_message_unpack(&walklist__v1__stream_export_stock_response__descriptor,
                                          &arena.allocator, out.len, (const uint8_t *)out.base);
            wl_piece_append(&all, out.base, out.len);
        }
        CHECK(decoded != NULL);
        if (decoded != NULL) {
            const Walklist__V1__StreamExportStockResponse *part = (const void *)decoded;
            CHECK_INT(part->n_items, wl_export_message_items(&message));
            CHECK_STR(part->cursor, last ? "CURSOR" : "");
            CHECK(last ? part->generated_at != NULL : part->generated_at == NULL);
        }
        wl_piece_dispose(&out);
        messages++;
    }
    /* An item here is under 40 bytes in either codec, the closing fields under 80. */
    CHECK(largest < limit + 40 + 80);
    CHECK(messages > 1);
    if (!json) {
        Walklist__V1__ExportStockResponse *whole = walklist__v1__export_stock_response__unpack(
            &arena.allocator, all.len, (const uint8_t *)all.base);
        CHECK(whole != NULL);
        if (whole != NULL) {
            CHECK_INT(whole->n_items, COUNT);
            for (size_t i = 0; i < whole->n_items && i < COUNT; i++) {
                if (strcmp(whole->items[i]->sku, skus[i]) != 0 ||
                    whole->items[i]->qty != items[i].qty ||
                    (whole->items[i]->location != NULL) != (items[i].location != NULL)) {
                    FAIL("item %zu differs after concatenation", i);
                    break;
                }
            }
            CHECK_STR(whole->cursor, "CURSOR");
            CHECK(whole->generated_at != NULL && whole->generated_at->seconds == 1700000000 &&
                  whole->generated_at->nanos == 123000000);
        }
    }
    wl_piece_dispose(&all);
}

/* A fixed piece too small: the failure is sticky and nothing is written past its room. */
static void test_fixed_room(void)
{
    char room[16];
    wl_piece_t out = {.base = room, .cap = sizeof(room), .fixed = true};
    wl_export_message_t message;
    wl_export_message_begin(&message, WL_EXPORT_MESSAGE_WATCH, false, 1024, &out);
    wl_export_message_add(&message, &sample[6]);
    wl_export_message_finish(&message, "CURSOR", 0);
    CHECK(out.failed);
    CHECK(out.len <= sizeof(room));
}

int main(void)
{
    wl_arena_init(&arena, 0);
    test_messages();
    test_cutting(false, 4096);
    test_cutting(true, 4096);
    test_cutting(false, 64 * 1024);
    test_fixed_room();
    wl_arena_dispose(&arena);
    return test_exit();
}
