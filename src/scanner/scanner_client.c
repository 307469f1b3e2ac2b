/* Encoding scanner requests and streaming scanner responses, with no heap, happens here. */
#include "walklist/scanner_client.h"

#include <pb_encode.h>
#include <string.h>

static int encode(const pb_msgdesc_t *fields, const void *message, uint8_t *buf, size_t size,
                  size_t *len)
{
    pb_ostream_t stream = pb_ostream_from_buffer(buf, size);
    if (!pb_encode(&stream, fields, message))
        return WL_SCANNER_EBUFFER;
    *len = stream.bytes_written;
    return WL_SCANNER_OK;
}

int wl_scanner_encode_list_pending(uint8_t *buf, size_t size, size_t *len)
{
    walklist_scanner_v1_ListPendingRequest request =
        walklist_scanner_v1_ListPendingRequest_init_zero;
    return encode(walklist_scanner_v1_ListPendingRequest_fields, &request, buf, size, len);
}

int wl_scanner_encode_load_list(const char *id, uint8_t *buf, size_t size, size_t *len)
{
    walklist_scanner_v1_LoadListRequest request = walklist_scanner_v1_LoadListRequest_init_zero;
    size_t id_len = id ? strlen(id) : 0;
    if (id_len == 0 || id_len >= sizeof(request.id))
        return WL_SCANNER_EARGUMENT;
    memcpy(request.id, id, id_len + 1);
    return encode(walklist_scanner_v1_LoadListRequest_fields, &request, buf, size, len);
}

int wl_scanner_decode_list_pending(pb_istream_t *stream,
                                   walklist_scanner_v1_ListPendingResponse *out)
{
    return pb_decode(stream, walklist_scanner_v1_ListPendingResponse_fields, out)
               ? WL_SCANNER_OK
               : WL_SCANNER_EDECODE;
}

typedef struct {
    const wl_scanner_walk_handler_t *handler;
    bool stopped; /* a handler said stop: not a decoding error */
} walk_decode_t;

/* nanopb calls these once per entry, with stream bounded to that entry. */
static bool decode_stop(pb_istream_t *stream, const pb_field_iter_t *field, void **arg)
{
    (void)field;
    walk_decode_t *state = *arg;
    walklist_scanner_v1_Stop stop;
    if (!pb_decode(stream, walklist_scanner_v1_Stop_fields, &stop))
        return false;
    if (state->handler->stop != NULL && !state->handler->stop(state->handler->context, &stop)) {
        state->stopped = true;
        return false;
    }
    return true;
}

static bool decode_ambiguous(pb_istream_t *stream, const pb_field_iter_t *field, void **arg)
{
    (void)field;
    walk_decode_t *state = *arg;
    walklist_scanner_v1_AmbiguousMatch match;
    if (!pb_decode(stream, walklist_scanner_v1_AmbiguousMatch_fields, &match))
        return false;
    if (state->handler->ambiguous != NULL &&
        !state->handler->ambiguous(state->handler->context, &match)) {
        state->stopped = true;
        return false;
    }
    return true;
}

static bool decode_not_found(pb_istream_t *stream, const pb_field_iter_t *field, void **arg)
{
    (void)field;
    walk_decode_t *state = *arg;
    char code[WL_SCANNER_CODE_SIZE];
    size_t len = stream->bytes_left;
    if (len >= sizeof(code))
        PB_RETURN_ERROR(stream, "string overflow");
    if (!pb_read(stream, (pb_byte_t *)code, len))
        return false;
    code[len] = '\0';
    if (state->handler->not_found != NULL &&
        !state->handler->not_found(state->handler->context, code)) {
        state->stopped = true;
        return false;
    }
    return true;
}

static bool decode_unlocated(pb_istream_t *stream, const pb_field_iter_t *field, void **arg)
{
    (void)field;
    walk_decode_t *state = *arg;
    walklist_scanner_v1_Unlocated product;
    if (!pb_decode(stream, walklist_scanner_v1_Unlocated_fields, &product))
        return false;
    if (state->handler->unlocated != NULL &&
        !state->handler->unlocated(state->handler->context, &product)) {
        state->stopped = true;
        return false;
    }
    return true;
}

int wl_scanner_decode_load_list(pb_istream_t *stream, const wl_scanner_walk_handler_t *handler,
                                walklist_scanner_v1_LoadListResponse *walk)
{
    walk_decode_t state = {handler, false};
    memset(walk, 0, sizeof(*walk));
    walk->stops = (pb_callback_t){.funcs.decode = decode_stop, .arg = &state};
    walk->ambiguous = (pb_callback_t){.funcs.decode = decode_ambiguous, .arg = &state};
    walk->not_found = (pb_callback_t){.funcs.decode = decode_not_found, .arg = &state};
    walk->unlocated = (pb_callback_t){.funcs.decode = decode_unlocated, .arg = &state};
    bool ok = pb_decode(stream, walklist_scanner_v1_LoadListResponse_fields, walk);
    /* The callbacks point at this frame: leave none behind in the caller's struct. */
    walk->stops = walk->ambiguous = walk->not_found = walk->unlocated =
        (pb_callback_t){{NULL}, NULL};
    if (ok)
        return WL_SCANNER_OK;
    return state.stopped ? WL_SCANNER_ESTOPPED : WL_SCANNER_EDECODE;
}
