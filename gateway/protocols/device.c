/* Translating between the devices' nanopb payloads and the core ScannerService happens here. */
#include "protocols/device.h"

#include <pb_decode.h>
#include <pb_encode.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/negotiate.h"
#include "walklist/scanner/v1/device.pb.h"
#include "walklist/utf8.h"
#include "walklist/v1/scanner.pb-c.h"

/* The bounds come from device.options through the build (CMakeLists.txt, nanopb section). */
#if !defined(WL_DEVICE_MAX_LISTS) || !defined(WL_DEVICE_MAX_STOPS) ||                              \
    !defined(WL_DEVICE_MAX_AMBIGUOUS) || !defined(WL_DEVICE_MAX_NOT_FOUND) ||                      \
    !defined(WL_DEVICE_MAX_UNLOCATED)
#error "the device bounds are read from device.options by the build"
#endif
_Static_assert(WL_DEVICE_MAX_LISTS == pb_arraysize(walklist_scanner_v1_ListPendingResponse, lists),
               "ListPendingResponse.lists bound");

#define PROTO_CONTENT_TYPE "application/proto"

bool wl_device_accept(wl_exchange_t *ex)
{
    if (wl_negotiate_content_type(wl_exchange_header(ex, "Content-Type"), NULL) != WL_MEDIA_PROTO) {
        wl_exchange_error(ex, 415, WL_GRPC_INVALID_ARGUMENT, WL_REASON_UNSUPPORTED_MEDIA_TYPE,
                          "Content-Type must be application/proto", NULL);
        return false;
    }
    const char *length = wl_exchange_header(ex, "Content-Length");
    if (length != NULL && strtoull(length, NULL, 10) > WL_DEVICE_BODY_LIMIT) {
        char message[64];
        snprintf(message, sizeof(message), "request body is larger than %u bytes",
                 WL_DEVICE_BODY_LIMIT);
        wl_exchange_error(ex, 413, WL_GRPC_INVALID_ARGUMENT, WL_REASON_BODY_TOO_LARGE, message,
                          NULL);
        return false;
    }
    ex->body_limit = WL_DEVICE_BODY_LIMIT;
    return true;
}

static int decode_body(wl_span_t body, const pb_msgdesc_t *fields, void *message, wl_error_t *err)
{
    pb_istream_t stream = pb_istream_from_buffer((const pb_byte_t *)body.base, body.len);
    if (!pb_decode(&stream, fields, message))
        return wl_error_set(err, WL_EINVAL, "the request is not a valid device message: %s",
                            PB_GET_ERROR(&stream));
    return 0;
}

/* Sets the encoded message as the 200 response; the body lives in the exchange's arena. */
static int respond(wl_exchange_t *ex, const pb_msgdesc_t *fields, const void *message,
                   wl_error_t *err)
{
    size_t size = 0;
    if (!pb_get_encoded_size(&size, fields, message))
        return wl_error_set(err, WL_EINTERNAL, "cannot size the device response");
    pb_byte_t *buf = wl_arena_alloc(&ex->arena, size ? size : 1);
    if (buf == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    pb_ostream_t stream = pb_ostream_from_buffer(buf, size);
    if (!pb_encode(&stream, fields, message))
        return wl_error_set(err, WL_EINTERNAL, "cannot encode the device response: %s",
                            PB_GET_ERROR(&stream));
    ex->status = 200;
    ex->content_type = PROTO_CONTENT_TYPE;
    ex->response = (char *)buf;
    ex->response_len = stream.bytes_written;
    return 0;
}

/*
 * Copies text into a bounded nanopb string, cut on a UTF-8 boundary. Names are cut by design;
 * identifiers have their own length limit (list id 40, codes 64 characters) as their bound,
 * so for them this never cuts.
 */
static void copy_text(char *dest, size_t size, const char *text)
{
    wl_span_t s = wl_span_str(text);
    size_t len = wl_utf8_truncate(s, size - 1);
    memcpy(dest, s.base, len);
    dest[len] = '\0';
}
#define COPY_TEXT(dest, text) copy_text((dest), sizeof(dest), (text))

static uint64_t epoch_seconds(const Google__Protobuf__Timestamp *ts)
{
    return ts != NULL && ts->seconds > 0 ? (uint64_t)ts->seconds : 0;
}

/* --- ListPending --------------------------------------------------------------------------- */

static int decode_list_pending(wl_span_t body, wl_arena_t *arena, ProtobufCMessage **input,
                               wl_error_t *err)
{
    walklist_scanner_v1_ListPendingRequest request =
        walklist_scanner_v1_ListPendingRequest_init_zero;
    int rc = decode_body(body, walklist_scanner_v1_ListPendingRequest_fields, &request, err);
    if (rc != 0)
        return rc;
    Walklist__V1__ListPendingListsRequest *core_request =
        wl_arena_alloc(arena, sizeof(*core_request));
    if (core_request == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    walklist__v1__list_pending_lists_request__init(core_request);
    core_request->page_size = WL_DEVICE_MAX_LISTS;
    *input = &core_request->base;
    return 0;
}

static int encode_list_pending(const ProtobufCMessage *reply, wl_exchange_t *ex, wl_error_t *err)
{
    const Walklist__V1__ListPendingListsResponse *queue =
        (const Walklist__V1__ListPendingListsResponse *)reply;
    walklist_scanner_v1_ListPendingResponse *response =
        wl_arena_alloc(&ex->arena, sizeof(*response));
    if (response == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    size_t count = queue->n_lists < WL_DEVICE_MAX_LISTS ? queue->n_lists : WL_DEVICE_MAX_LISTS;
    for (size_t i = 0; i < count; i++) {
        const Walklist__V1__PendingList *from = queue->lists[i];
        walklist_scanner_v1_PendingList *to = &response->lists[i];
        COPY_TEXT(to->id, from->id);
        COPY_TEXT(to->name, from->name);
        to->codes_count = from->codes_count > 0 ? (uint32_t)from->codes_count : 0;
        to->created_at = epoch_seconds(from->created_at);
    }
    response->lists_count = (pb_size_t)count;
    response->more = queue->more || queue->n_lists > count;
    return respond(ex, walklist_scanner_v1_ListPendingResponse_fields, response, err);
}

/* --- LoadList ------------------------------------------------------------------------------ */

/*
 * The length the last field `tag` (a string) was sent with, 0 when absent. nanopb ends a static
 * string at its first NUL, so an id sent as "ID\0junk" decodes as "ID": comparing with the
 * sent length tells the two apart. The body already decoded, so its structure is sound.
 */
static size_t sent_string_length(wl_span_t body, uint32_t tag)
{
    pb_istream_t stream = pb_istream_from_buffer((const pb_byte_t *)body.base, body.len);
    size_t len = 0;
    pb_wire_type_t wire_type;
    uint32_t field_tag;
    bool eof;
    while (pb_decode_tag(&stream, &wire_type, &field_tag, &eof)) {
        if (field_tag == tag && wire_type == PB_WT_STRING) {
            pb_istream_t value;
            if (!pb_make_string_substream(&stream, &value))
                break;
            len = value.bytes_left;
            if (!pb_close_string_substream(&stream, &value))
                break;
        } else if (!pb_skip_field(&stream, wire_type)) {
            break;
        }
    }
    return len;
}

static int decode_load_list(wl_span_t body, wl_arena_t *arena, ProtobufCMessage **input,
                            wl_error_t *err)
{
    walklist_scanner_v1_LoadListRequest request = walklist_scanner_v1_LoadListRequest_init_zero;
    int rc = decode_body(body, walklist_scanner_v1_LoadListRequest_fields, &request, err);
    if (rc != 0)
        return rc;
    if (strlen(request.id) != sent_string_length(body, walklist_scanner_v1_LoadListRequest_id_tag))
        return wl_error_add_violation(err, "id", "must not contain NUL characters");
    Walklist__V1__LoadLocateListRequest *core_request =
        wl_arena_alloc(arena, sizeof(*core_request));
    char *id = wl_arena_strdup(arena, request.id);
    if (core_request == NULL || id == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    walklist__v1__load_locate_list_request__init(core_request);
    core_request->id = id;
    *input = &core_request->base;
    return 0;
}

typedef struct {
    const char *code;
    const char *sku;
} ambiguous_match_t;

/* What LoadListResponse sends of a loaded list, each section within its bound. */
typedef struct {
    const Walklist__V1__LoadLocateListResponse *walk;
    size_t stop_count;
    ambiguous_match_t *ambiguous;
    size_t ambiguous_count;
    const char **not_found;
    size_t not_found_count;
    size_t unlocated_count;
    bool truncated;
} load_sections_t;

static int collect_sections(const Walklist__V1__LoadLocateListResponse *walk, wl_arena_t *arena,
                            load_sections_t *out, wl_error_t *err)
{
    memset(out, 0, sizeof(*out));
    out->walk = walk;
    out->stop_count = walk->n_stops < WL_DEVICE_MAX_STOPS ? walk->n_stops : WL_DEVICE_MAX_STOPS;
    out->unlocated_count =
        walk->n_unlocated < WL_DEVICE_MAX_UNLOCATED ? walk->n_unlocated : WL_DEVICE_MAX_UNLOCATED;
    out->truncated = walk->n_stops > out->stop_count || walk->n_unlocated > out->unlocated_count;
    out->ambiguous = wl_arena_alloc(arena, WL_DEVICE_MAX_AMBIGUOUS * sizeof(*out->ambiguous));
    out->not_found = wl_arena_alloc(arena, WL_DEVICE_MAX_NOT_FOUND * sizeof(*out->not_found));
    if (out->ambiguous == NULL || out->not_found == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    for (size_t i = 0; i < walk->n_codes; i++) {
        const Walklist__V1__CodeResolution *code = walk->codes[i];
        if (code->outcome == WALKLIST__V1__CODE_OUTCOME__CODE_OUTCOME_NOT_FOUND) {
            if (out->not_found_count == WL_DEVICE_MAX_NOT_FOUND)
                out->truncated = true;
            else
                out->not_found[out->not_found_count++] = code->code;
        } else if (code->outcome == WALKLIST__V1__CODE_OUTCOME__CODE_OUTCOME_AMBIGUOUS) {
            for (size_t j = 0; j < code->n_skus; j++) {
                if (out->ambiguous_count == WL_DEVICE_MAX_AMBIGUOUS) {
                    out->truncated = true;
                    break;
                }
                out->ambiguous[out->ambiguous_count++] =
                    (ambiguous_match_t){code->code, code->skus[j]};
            }
        }
    }
    return 0;
}

/* The repeated fields are written straight from the core's reply, one entry at a time. */
static bool encode_stops(pb_ostream_t *stream, const pb_field_iter_t *field, void *const *arg)
{
    const load_sections_t *sections = *arg;
    walklist_scanner_v1_Stop stop;
    for (size_t i = 0; i < sections->stop_count; i++) {
        const Walklist__V1__WalkStop *from = sections->walk->stops[i];
        COPY_TEXT(stop.bin, from->bin_code);
        COPY_TEXT(stop.warehouse, from->warehouse);
        COPY_TEXT(stop.sku, from->sku);
        COPY_TEXT(stop.name, from->product_name);
        stop.quantity = from->quantity < 0            ? 0
                        : from->quantity > UINT32_MAX ? UINT32_MAX
                                                      : (uint32_t)from->quantity;
        if (!pb_encode_tag_for_field(stream, field) ||
            !pb_encode_submessage(stream, walklist_scanner_v1_Stop_fields, &stop))
            return false;
    }
    return true;
}

static bool encode_ambiguous(pb_ostream_t *stream, const pb_field_iter_t *field, void *const *arg)
{
    const load_sections_t *sections = *arg;
    walklist_scanner_v1_AmbiguousMatch match;
    for (size_t i = 0; i < sections->ambiguous_count; i++) {
        COPY_TEXT(match.code, sections->ambiguous[i].code);
        COPY_TEXT(match.sku, sections->ambiguous[i].sku);
        if (!pb_encode_tag_for_field(stream, field) ||
            !pb_encode_submessage(stream, walklist_scanner_v1_AmbiguousMatch_fields, &match))
            return false;
    }
    return true;
}

static bool encode_not_found(pb_ostream_t *stream, const pb_field_iter_t *field, void *const *arg)
{
    const load_sections_t *sections = *arg;
    char code[pb_membersize(walklist_scanner_v1_AmbiguousMatch, code)]; /* any list code */
    for (size_t i = 0; i < sections->not_found_count; i++) {
        COPY_TEXT(code, sections->not_found[i]);
        if (!pb_encode_tag_for_field(stream, field) ||
            !pb_encode_string(stream, (const pb_byte_t *)code, strlen(code)))
            return false;
    }
    return true;
}

static bool encode_unlocated(pb_ostream_t *stream, const pb_field_iter_t *field, void *const *arg)
{
    const load_sections_t *sections = *arg;
    walklist_scanner_v1_Unlocated product;
    for (size_t i = 0; i < sections->unlocated_count; i++) {
        const Walklist__V1__UnlocatedProduct *from = sections->walk->unlocated[i];
        COPY_TEXT(product.sku, from->sku);
        COPY_TEXT(product.name, from->product_name);
        if (!pb_encode_tag_for_field(stream, field) ||
            !pb_encode_submessage(stream, walklist_scanner_v1_Unlocated_fields, &product))
            return false;
    }
    return true;
}

static int encode_load_list(const ProtobufCMessage *reply, wl_exchange_t *ex, wl_error_t *err)
{
    load_sections_t *sections = wl_arena_alloc(&ex->arena, sizeof(*sections));
    if (sections == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    int rc = collect_sections((const Walklist__V1__LoadLocateListResponse *)reply, &ex->arena,
                              sections, err);
    if (rc != 0)
        return rc;
    walklist_scanner_v1_LoadListResponse response = walklist_scanner_v1_LoadListResponse_init_zero;
    COPY_TEXT(response.name, sections->walk->name);
    response.stops = (pb_callback_t){.funcs.encode = encode_stops, .arg = sections};
    response.ambiguous = (pb_callback_t){.funcs.encode = encode_ambiguous, .arg = sections};
    response.not_found = (pb_callback_t){.funcs.encode = encode_not_found, .arg = sections};
    response.unlocated = (pb_callback_t){.funcs.encode = encode_unlocated, .arg = sections};
    response.truncated = sections->truncated;
    return respond(ex, walklist_scanner_v1_LoadListResponse_fields, &response, err);
}

const wl_device_codec_t wl_device_list_pending = {decode_list_pending, encode_list_pending};
const wl_device_codec_t wl_device_load_list = {decode_load_list, encode_load_list};
