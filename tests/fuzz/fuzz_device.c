/*
 * The gateway's side of the device transport (gateway/protocols/device.c). The first byte picks
 * what the rest is: a ListPending or LoadList request body from a device, decoded into the core's
 * request; or a core reply (protobuf-c) to encode for the device, which the device's own
 * decoder (src/scanner/scanner_client.c) must then read.
 */
#include <string.h>

#include "protocols/device.h"
#include "fuzz.h"
#include "walklist/scanner_client.h"
#include "walklist/v1/scanner.pb-c.h"

static bool any_stop(void *context, const walklist_scanner_v1_Stop *stop)
{
    (void)context, (void)stop;
    return true;
}

static void encode(const wl_device_codec_t *codec, const ProtobufCMessageDescriptor *desc,
                   const uint8_t *data, size_t size)
{
    wl_exchange_t ex;
    memset(&ex, 0, sizeof(ex));
    wl_arena_init(&ex.arena, 64u << 20);
    wl_error_t err;
    wl_error_init(&err);
    ProtobufCMessage *reply = protobuf_c_message_unpack(desc, &ex.arena.allocator, size, data);
    if (reply != NULL && codec->encode(reply, &ex, &err) == 0) {
        FUZZ_CHECK(ex.status == 200 && ex.response != NULL);
        pb_istream_t stream =
            pb_istream_from_buffer((const pb_byte_t *)ex.response, ex.response_len);
        walklist_scanner_v1_ListPendingResponse pending;
        walklist_scanner_v1_LoadListResponse walk;
        wl_scanner_walk_handler_t handler = {.stop = any_stop};
        FUZZ_CHECK((codec == &wl_device_list_pending
                        ? wl_scanner_decode_list_pending(&stream, &pending)
                        : wl_scanner_decode_load_list(&stream, &handler, &walk)) == WL_SCANNER_OK);
    }
    wl_arena_dispose(&ex.arena);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const wl_device_codec_t *codec = data[0] % 2 ? &wl_device_load_list : &wl_device_list_pending;
    if (data[0] % 4 >= 2) {
        encode(codec,
               codec == &wl_device_load_list
                   ? &walklist__v1__load_locate_list_response__descriptor
                   : &walklist__v1__list_pending_lists_response__descriptor,
               data + 1, size - 1);
        return 0;
    }
    wl_arena_t arena;
    wl_arena_init(&arena, 1u << 20);
    wl_error_t err;
    wl_error_init(&err);
    ProtobufCMessage *input = NULL;
    if (codec->decode(wl_span((const char *)data + 1, size - 1), &arena, &input, &err) == 0) {
        FUZZ_CHECK(input != NULL && protobuf_c_message_check(input));
        if (codec == &wl_device_load_list)
            FUZZ_CHECK(strlen(((Walklist__V1__LoadLocateListRequest *)input)->id) <= 40);
    } else {
        FUZZ_CHECK(err.code == WL_EINVAL);
    }
    wl_arena_dispose(&arena);
    return 0;
}
