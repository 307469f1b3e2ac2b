/* Connect's envelopes, error JSON and end-stream messages are written here. */
#include "protocols/connect_wire.h"

#include <stdlib.h>
#include <string.h>

#include "google/rpc/error_details.pb-c.h"
#include "codec/json_codec.h"
#include "http/gzip_filter.h"
#include "protocols/rpc.h"
#include "walklist/base64.h"
#include "walklist/json_writer.h"

/*
 * A packed message of type desc as a Connect error detail: in binary, base64 without padding,
 * under "value", and the same message as JSON under "debug", which the protocol allows for
 * readability (clients must not depend on it).
 */
static json_t *error_detail(wl_arena_t *arena, const ProtobufCMessageDescriptor *desc,
                            const uint8_t *packed, size_t packed_len)
{
    char *encoded = wl_arena_alloc(arena, 4 * (packed_len / 3 + 1) + 1);
    if (packed == NULL || encoded == NULL)
        return NULL;
    ProtobufCMessage *message =
        protobuf_c_message_unpack(desc, &arena->allocator, packed_len, packed);
    if (message == NULL)
        return NULL;
    wl_base64_encode(packed, packed_len, WL_BASE64_STANDARD, false, encoded);
    return json_pack("{s:s, s:s, s:o*}", "type", desc->name, "value", encoded, "debug",
                     wl_json_encode(message));
}

json_t *wl_connect_error_json(wl_arena_t *arena, wl_grpc_code_t code, const char *message,
                              const wl_error_t *err, const wl_error_info_t *info)
{
    message = wl_rpc_public_message(code, message, err);
    json_t *body = json_pack("{s:s, s:s, s:[]}", "code", wl_grpc_connect_name(code), "message",
                             message ? message : wl_grpc_connect_name(code), "details");
    json_t *details = json_object_get(body, "details");
    size_t len = 0;
    if (err != NULL && err->violation_count > 0) {
        uint8_t *packed = wl_rpc_bad_request(arena, err, &len);
        json_array_append_new(
            details, error_detail(arena, &google__rpc__bad_request__descriptor, packed, len));
    }
    uint8_t *packed = wl_error_info_pack(info, arena, &len);
    json_array_append_new(details,
                          error_detail(arena, &google__rpc__error_info__descriptor, packed, len));
    return body;
}

/* An envelope's flags and length, before its len bytes. */
static void put_envelope_head(char *out, uint8_t flags, size_t len)
{
    out[0] = (char)flags;
    out[1] = (char)(len >> 24);
    out[2] = (char)(len >> 16);
    out[3] = (char)(len >> 8);
    out[4] = (char)len;
}

void wl_connect_envelope(char *out, uint8_t flags, const void *data, size_t len)
{
    put_envelope_head(out, flags, len);
    if (len > 0)
        memcpy(out + WL_CONNECT_ENVELOPE, data, len);
}

char *wl_connect_end_stream(wl_arena_t *arena, json_t *error, size_t *len)
{
    json_t *end = json_pack("{s:o*, s:{}}", "error", error, "metadata");
    char *text = end ? json_dumps(end, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(end);
    if (text == NULL)
        return NULL;
    size_t text_len = strlen(text);
    char *out = wl_arena_alloc(arena, WL_CONNECT_ENVELOPE + text_len);
    if (out != NULL)
        wl_connect_envelope(out, WL_CONNECT_FLAG_END_STREAM, text, text_len);
    free(text);
    *len = WL_CONNECT_ENVELOPE + text_len;
    return out;
}

/* An encoded message of the stream enveloped, gzip-coded when the stream's are and it is worth
 * it. */
static bool stream_encoded(const wl_rpc_stream_wire_t *wire, const char *bytes, size_t len,
                           wl_arena_t *arena, wl_piece_t *out)
{
    (void)arena;
    if (wire->gzip && wl_gzip_worth(len)) {
        /* Coded straight after the envelope's room, whose length is known once it is. */
        size_t start = out->len;
        wl_error_t err;
        wl_error_init(&err);
        if (wl_piece_reserve(out, WL_CONNECT_ENVELOPE) == NULL)
            return false;
        out->len += WL_CONNECT_ENVELOPE;
        if (wl_gzip_append(bytes, len, out, &err) != 0 ||
            out->len - start - WL_CONNECT_ENVELOPE > UINT32_MAX) {
            out->len = start;
            return false;
        }
        put_envelope_head(out->base + start, WL_CONNECT_FLAG_COMPRESSED,
                          out->len - start - WL_CONNECT_ENVELOPE);
        return true;
    }
    const char *text = bytes;
    uint8_t flags = 0;
    char *room = len <= UINT32_MAX ? wl_piece_reserve(out, WL_CONNECT_ENVELOPE + len) : NULL;
    if (room == NULL)
        return false;
    wl_connect_envelope(room, flags, text, len);
    out->len += WL_CONNECT_ENVELOPE + len;
    return true;
}

/* A message of the stream in its codec, enveloped. */
static bool stream_message(const wl_rpc_stream_wire_t *wire, const ProtobufCMessage *message,
                           wl_arena_t *arena, wl_piece_t *out)
{
    size_t len = 0;
    char *text = NULL;
    if (wire->json) {
        text = wl_json_encode_text(message, arena, &len);
    } else {
        len = protobuf_c_message_get_packed_size(message);
        text = wl_arena_alloc(arena, len ? len : 1);
        if (text != NULL)
            protobuf_c_message_pack(message, (uint8_t *)text);
    }
    return text != NULL && stream_encoded(wire, text, len, arena, out);
}

/* The end-stream message, with the error that ends the stream unless it ends well. Without it
 * (out of memory) the client sees the stream cut. */
static void stream_end(const wl_rpc_stream_wire_t *wire, wl_grpc_code_t code, wl_reason_t reason,
                       const char *message, wl_piece_t *out)
{
    (void)wire;
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    wl_error_info_t info = {.reason = reason};
    size_t len = 0;
    json_t *error =
        code == WL_GRPC_OK ? NULL : wl_connect_error_json(&arena, code, message, NULL, &info);
    char *end =
        code == WL_GRPC_OK || error != NULL ? wl_connect_end_stream(&arena, error, &len) : NULL;
    if (end != NULL)
        wl_piece_append(out, end, len);
    wl_arena_dispose(&arena);
}

wl_rpc_stream_wire_t wl_connect_stream_wire(bool json, bool gzip)
{
    return (wl_rpc_stream_wire_t){.message = stream_message,
                                  .encoded = stream_encoded,
                                  .end = stream_end,
                                  .json = json,
                                  .gzip = gzip};
}

size_t wl_connect_error_plain(char *buf, size_t size, wl_grpc_code_t code, wl_reason_t reason,
                              const char *message)
{
    /* ErrorInfo{reason, domain} packed on the stack: nothing here allocates. */
    Google__Rpc__ErrorInfo info = GOOGLE__RPC__ERROR_INFO__INIT;
    info.reason = (char *)wl_reason_name(reason);
    info.domain = WL_ERROR_DOMAIN;
    uint8_t packed[128];
    char encoded[4 * (sizeof(packed) / 3 + 1) + 1];
    size_t packed_len = google__rpc__error_info__get_packed_size(&info);
    if (packed_len > sizeof(packed))
        return 0;
    google__rpc__error_info__pack(&info, packed);
    wl_base64_encode(packed, packed_len, WL_BASE64_STANDARD, false, encoded);
    wl_json_writer_t w;
    wl_json_writer_init(&w, buf, size > 0 ? size - 1 : 0, 0);
    wl_json_open_object(&w);
    wl_json_key(&w, "code");
    wl_json_cstring(&w, wl_grpc_connect_name(code));
    wl_json_key(&w, "message");
    wl_json_cstring(&w, message);
    wl_json_key(&w, "details");
    wl_json_open_array(&w);
    wl_json_open_object(&w);
    wl_json_key(&w, "type");
    wl_json_cstring(&w, "google.rpc.ErrorInfo");
    wl_json_key(&w, "value");
    wl_json_cstring(&w, encoded);
    wl_json_close_object(&w);
    wl_json_close_array(&w);
    wl_json_close_object(&w);
    if (!wl_json_ok(&w))
        return 0;
    buf[w.len] = '\0';
    return w.len;
}
