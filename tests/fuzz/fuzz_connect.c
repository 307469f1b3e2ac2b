/*
 * Connect requests (gateway/protocols/connect.c): the first byte picks a method of the core's
 * services and a codec, the rest is the body, decoded as wl_connect_finish does (the JSON codec; or
 * wl_proto_check_strings of gateway/codec/proto_strings.c, then protobuf-c with the request's
 * arena); one more choice of the first byte reads the rest as a Connect-Timeout-Ms value instead.
 * Decoded messages are complete (no NULL strings or messages), hold only UTF-8 strings, pack,
 * and encode as JSON.
 */
#include <string.h>

#include "protocols/connect.h"
#include "fuzz.h"
#include "codec/json_codec.h"
#include "codec/proto_strings.h"
#include "walklist/utf8.h"
#include "walklist/v1/inventory.pb-c.h"
#include "walklist/v1/locate_list.pb-c.h"
#include "walklist/v1/scanner.pb-c.h"
#include "walklist/v1/stock.pb-c.h"

static const ProtobufCServiceDescriptor *const services[] = {
    &walklist__v1__locate_list_service__descriptor, &walklist__v1__stock_service__descriptor,
    &walklist__v1__scanner_service__descriptor, &walklist__v1__inventory_service__descriptor};

static void timeout(const uint8_t *data, size_t size)
{
    char *value = fuzz_cstring(data, size);
    struct timespec start = {1000, 999999999}, deadline;
    size_t len = strlen(value);
    bool valid = len >= 1 && len <= 10 && strspn(value, "0123456789") == len;
    FUZZ_CHECK(wl_connect_parse_timeout(value, start, &deadline) == valid);
    if (valid) {
        long long ms = strtoll(value, NULL, 10);
        FUZZ_CHECK(deadline.tv_nsec >= 0 && deadline.tv_nsec < 1000000000L);
        FUZZ_CHECK((deadline.tv_sec - start.tv_sec) * 1000000000LL + deadline.tv_nsec -
                       start.tv_nsec ==
                   ms * 1000000LL);
    }
    free(value);
}

/* Every string of m, nested messages included, is valid UTF-8. */
static void strings_valid(const ProtobufCMessage *m)
{
    for (unsigned f = 0; f < m->descriptor->n_fields; f++) {
        const ProtobufCFieldDescriptor *field = &m->descriptor->fields[f];
        if (field->type != PROTOBUF_C_TYPE_STRING && field->type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        const char *slot = (const char *)m + field->offset,
                   *quantifier = (const char *)m + field->quantifier_offset;
        size_t n = 1;
        if (field->label == PROTOBUF_C_LABEL_REPEATED) {
            n = *(const size_t *)quantifier;
            slot = *(const char *const *)slot;
        } else if ((field->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
                   *(const uint32_t *)quantifier != field->id) {
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            const void *item = *(const void *const *)(slot + i * sizeof(void *));
            if (field->type == PROTOBUF_C_TYPE_STRING)
                FUZZ_CHECK(item != NULL && wl_utf8_count(wl_span_str(item)) >= 0);
            else if (field->type == PROTOBUF_C_TYPE_MESSAGE && item != NULL)
                strings_valid(item);
        }
    }
}

static const ProtobufCMessageDescriptor *input_type(unsigned pick, size_t *count)
{
    const ProtobufCMessageDescriptor *found = NULL;
    *count = 0;
    for (size_t s = 0; s < sizeof(services) / sizeof(services[0]); s++)
        for (unsigned m = 0; m < services[s]->n_methods; m++, (*count)++)
            if (*count == pick)
                found = services[s]->methods[m].input;
    return found;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t methods;
    input_type(0, &methods);
    if (size == 0 || data[0] % (methods + 1) == methods) {
        timeout(data + (size > 0), size - (size > 0));
        return 0;
    }
    const ProtobufCMessageDescriptor *desc = input_type(data[0] % (methods + 1), &methods);
    bool json = data[0] / (methods + 1) % 2;
    const uint8_t *body = data + 1;
    size_t len = size - 1;
    wl_arena_t arena;
    wl_arena_init(&arena, 64u << 20);
    wl_error_t err;
    wl_error_init(&err);
    ProtobufCMessage *msg = NULL;
    if (json)
        (void)!wl_json_decode(desc, (const char *)body, len, &arena, &msg, &err);
    else if (wl_proto_check_strings(desc, body, len, &err) == 0)
        msg = protobuf_c_message_unpack(desc, &arena.allocator, len, body);
    else
        FUZZ_CHECK(err.code == WL_EINVAL && err.violation_count > 0);
    if (msg != NULL) {
        FUZZ_CHECK(protobuf_c_message_check(msg));
        strings_valid(msg);
        size_t packed_len = protobuf_c_message_get_packed_size(msg);
        uint8_t *packed = wl_arena_alloc(&arena, packed_len + 1);
        FUZZ_CHECK(packed != NULL && protobuf_c_message_pack(msg, packed) == packed_len);
        FUZZ_CHECK(wl_json_encode_text(msg, &arena, NULL) != NULL);
    }
    wl_arena_dispose(&arena);
    return 0;
}
