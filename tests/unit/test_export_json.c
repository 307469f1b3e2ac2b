/*
 * The stock export's streamed JSON against the JSON codec: every item and
 * every generatedAt the writer makes must be the codec's text byte for byte,
 * for every byte value, escapes, non-ASCII and invalid UTF-8.
 */
#include "export/export_json.h"

#include <stdlib.h>

#include "codec/json_codec.h"
#include "test.h"
#include "walklist/v1/stock.pb-c.h"

static wl_arena_t arena;

/* The codec's text for the export of the given items and time. */
static char *codec_text(const wl_export_item_t *items, size_t count, int64_t generated_ms)
{
    Walklist__V1__ExportStockResponse reply = WALKLIST__V1__EXPORT_STOCK_RESPONSE__INIT;
    Walklist__V1__StockExportItem *messages = calloc(count + 1, sizeof(*messages));
    Walklist__V1__StockExportItem **pointers = calloc(count + 1, sizeof(*pointers));
    Google__Protobuf__StringValue *locations = calloc(count + 1, sizeof(*locations));
    for (size_t i = 0; i < count; i++) {
        walklist__v1__stock_export_item__init(&messages[i]);
        messages[i].sku = (char *)items[i].sku;
        messages[i].qty = items[i].qty;
        if (items[i].location != NULL) {
            google__protobuf__string_value__init(&locations[i]);
            locations[i].value = (char *)items[i].location;
            messages[i].location = &locations[i];
        }
        if (items[i].removed) {
            messages[i].change_case = WALKLIST__V1__STOCK_EXPORT_ITEM__CHANGE_REMOVED;
            messages[i].removed = 1;
        }
        pointers[i] = &messages[i];
    }
    reply.items = pointers;
    reply.n_items = count;
    reply.cursor = "CURSOR";
    Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
    ts.seconds = generated_ms / 1000;
    ts.nanos = (int32_t)(generated_ms % 1000) * 1000000;
    if (ts.nanos < 0) {
        ts.nanos += 1000000000;
        ts.seconds--;
    }
    reply.generated_at = &ts;
    char *text = wl_json_encode_text(&reply.base, &arena, NULL);
    free(messages);
    free(pointers);
    free(locations);
    return text;
}

/* The writer's text for the same, as the stream puts it together. */
static char *writer_text(const wl_export_item_t *items, size_t count, int64_t generated_ms)
{
    size_t size = 128;
    for (size_t i = 0; i < count; i++)
        size += wl_export_json_item_bound(&items[i]) + 1;
    char *text = malloc(size);
    char *out = text;
    memcpy(out, WL_EXPORT_JSON_OPEN, strlen(WL_EXPORT_JSON_OPEN));
    out += strlen(WL_EXPORT_JSON_OPEN);
    for (size_t i = 0; i < count; i++) {
        if (i > 0)
            *out++ = ',';
        char *end = wl_export_json_item(out, &items[i]);
        CHECK((size_t)(end - out) <= wl_export_json_item_bound(&items[i]));
        out = end;
    }
    wl_export_json_close(generated_ms, "CURSOR", out, WL_EXPORT_JSON_CLOSE_MAX);
    return text;
}

static void check_same(const wl_export_item_t *items, size_t count, int64_t generated_ms, int line)
{
    char *want = codec_text(items, count, generated_ms);
    char *got = writer_text(items, count, generated_ms);
    test_checks++;
    if (want == NULL || strcmp(want, got) != 0) {
        test_failures++;
        fprintf(stderr, "%s:%d: writer and codec differ\n  codec  %s\n  writer %s\n", __FILE__,
                line, want ? want : "(null)", got);
    }
    free(got);
}
#define CHECK_SAME(items, count, ms) check_same(items, count, ms, __LINE__)

static void test_every_byte(void)
{
    /* Each byte value alone, and after a valid two-byte character and before ASCII. */
    for (int b = 1; b < 256; b++) {
        char sku[8] = {(char)b, 0};
        char location[8] = {'\xc3', '\xa4', (char)b, 'x', 0};
        wl_export_item_t item = {sku, b, location};
        CHECK_SAME(&item, 1, 1700000000123);
    }
}

static void test_strings(void)
{
    const char *strings[] = {
        "",
        "A-1",
        "Q\"uote\\back/slash",
        "tab\there\nnl\rcr\bbs\fff",
        "\x01\x1f\x7f",
        "\xc3\xa4\xe2\x80\xa8\xf0\x9f\x98\x80", /* U+00E4, U+2028, U+1F600 */
        "\xc3",                                 /* cut off */
        "\xe2\x80",                             /* cut off */
        "\xc0\xaf",                             /* overlong '/' */
        "\xed\xa0\x80",                         /* a surrogate */
        "\xf4\x90\x80\x80",                     /* above U+10FFFF */
        "\x80\xbf",                             /* stray continuation bytes */
        "ok\xff\xfe"
        "end",
        "\xef\xbb\xbf"
        "BOM",
    };
    size_t n = sizeof(strings) / sizeof(strings[0]);
    for (size_t i = 0; i < n; i++) {
        wl_export_item_t item = {strings[i], 0, strings[n - 1 - i]};
        CHECK_SAME(&item, 1, 0);
        item.location = NULL;
        CHECK_SAME(&item, 1, 0);
    }
}

static void test_documents(void)
{
    CHECK_SAME(NULL, 0, 1700000000000);
    const wl_export_item_t items[] = {
        {"A", 0, NULL},  {"B", 1, "R-1"},      {"C", INT64_MAX, "x"},
        {"D", -1, NULL}, {"E", INT64_MIN, ""}, {"F", 0, NULL, true},
    };
    CHECK_SAME(items, sizeof(items) / sizeof(items[0]), 1700000000999);
    /* generatedAt over the years the codec writes, whole and fractional seconds. */
    const int64_t times[] = {0,
                             1,
                             999,
                             1000,
                             86399999,
                             951782400000 /* 2000-02-29 */,
                             -1,
                             -62135596800000 /* 0001-01-01 */,
                             253402300799999 /* 9999-12-31T23:59:59.999 */,
                             4102444800123};
    for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++)
        CHECK_SAME(items, 1, times[i]);
}

int main(void)
{
    wl_arena_init(&arena, 0);
    test_every_byte();
    test_strings();
    test_documents();
    wl_arena_dispose(&arena);
    return test_exit();
}
