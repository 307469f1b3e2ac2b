/*
 * The proto3 JSON codec (gateway/codec/json_codec.c): the first byte picks a message type, the rest
 * is the JSON text. What decodes must be a valid message, encode, and read back to the same text.
 * And the plain reader (codec/json_plain.h) reads nothing jansson would read otherwise: what it
 * reads, jansson reads to the same value with its keys in the same order.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "codec_test.pb-c.h"
#include "fuzz.h"
#include "codec/json_codec.h"
#include "codec/json_plain.h"
#include "walklist/v1/inventory.pb-c.h"
#include "walklist/v1/locate_list.pb-c.h"
#include "walklist/v1/stock.pb-c.h"

static const ProtobufCMessageDescriptor *const types[] = {
    &walklist__v1__create_locate_list_request__descriptor,
    &walklist__v1__list_stock_request__descriptor,
    &walklist__v1__upsert_products_request__descriptor,
    &walklist__v1__set_location_stock_request__descriptor,
    &walklist__test__scalars__descriptor,
    &walklist__test__repeateds__descriptor,
    &walklist__test__well_known__descriptor,
    &walklist__test__choice__descriptor,
    &walklist__test__maps__descriptor,
};

static void check_plain_reader(const char *text, size_t len)
{
    json_t *plain = wl_json_read_plain(text, len);
    if (plain == NULL)
        return;
    json_error_t jerr;
    json_t *jansson = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    FUZZ_CHECK(jansson != NULL && json_equal(plain, jansson));
    size_t flags = JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY;
    char *a = json_dumps(plain, flags), *b = json_dumps(jansson, flags);
    FUZZ_CHECK(a != NULL && b != NULL && strcmp(a, b) == 0);
    free(a);
    free(b);
    json_decref(plain);
    json_decref(jansson);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    check_plain_reader((const char *)data + 1, size - 1);
    const ProtobufCMessageDescriptor *desc = types[data[0] % (sizeof(types) / sizeof(types[0]))];
    wl_arena_t arena;
    wl_arena_init(&arena, 16u << 20);
    wl_error_t err;
    wl_error_init(&err);
    ProtobufCMessage *msg = NULL, *again = NULL;
    if (wl_json_decode(desc, (const char *)data + 1, size - 1, &arena, &msg, &err) != 0) {
        FUZZ_CHECK(msg == NULL && err.code != 0);
    } else {
        FUZZ_CHECK(msg != NULL && protobuf_c_message_check(msg));
        size_t len = 0, len2 = 0;
        char *text = wl_json_encode_text(msg, &arena, &len);
        FUZZ_CHECK(text != NULL);
        FUZZ_CHECK(wl_json_decode(desc, text, len, &arena, &again, &err) == 0);
        char *text2 = wl_json_encode_text(again, &arena, &len2);
        FUZZ_CHECK(text2 != NULL && len == len2 && memcmp(text, text2, len) == 0);
        uint8_t *packed = wl_arena_alloc(&arena, protobuf_c_message_get_packed_size(msg) + 1);
        FUZZ_CHECK(packed != NULL);
        FUZZ_CHECK(protobuf_c_message_pack(msg, packed) == protobuf_c_message_get_packed_size(msg));
    }
    wl_arena_dispose(&arena);
    return 0;
}
