/* Decoding query strings and binding them onto request messages happens here. */
#include "http/query.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/json_codec.h"
#include "walklist/codes.h"
#include "walklist/hex.h"

int wl_query_unescape(wl_span_t in, bool plus_is_space, wl_arena_t *arena, wl_span_t *out)
{
    char *buf = wl_arena_alloc(arena, in.len + 1);
    if (buf == NULL)
        return WL_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < in.len; i++) {
        char c = in.base[i];
        if (c == '%') {
            int hi = i + 1 < in.len ? wl_hex_value(in.base[i + 1]) : -1;
            int lo = i + 2 < in.len ? wl_hex_value(in.base[i + 2]) : -1;
            if (hi < 0 || lo < 0)
                return WL_EINVAL;
            buf[n++] = (char)(hi * 16 + lo);
            i += 2;
        } else if (c == '+' && plus_is_space) {
            buf[n++] = ' ';
        } else {
            buf[n++] = c;
        }
    }
    buf[n] = '\0';
    *out = wl_span(buf, n);
    return 0;
}

int wl_query_parse(wl_span_t raw, wl_arena_t *arena, wl_query_t *out, wl_error_t *err)
{
    size_t pieces = 1;
    for (size_t i = 0; i < raw.len; i++)
        pieces += raw.base[i] == '&';
    out->params = wl_arena_alloc(arena, pieces * sizeof(*out->params));
    out->count = 0;
    if (out->params == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    size_t start = 0;
    while (start <= raw.len) {
        const char *amp = memchr(raw.base + start, '&', raw.len - start);
        size_t end = amp ? (size_t)(amp - raw.base) : raw.len;
        wl_span_t piece = wl_span(raw.base + start, end - start);
        if (piece.len > 0) {
            const char *eq = memchr(piece.base, '=', piece.len);
            wl_span_t name = wl_span(piece.base, eq ? (size_t)(eq - piece.base) : piece.len);
            wl_span_t value = eq ? wl_span(eq + 1, piece.len - name.len - 1) : wl_span("", 0);
            wl_query_param_t *param = &out->params[out->count];
            int rc = wl_query_unescape(name, true, arena, &param->name);
            if (rc == 0)
                rc = wl_query_unescape(value, true, arena, &param->value);
            if (rc == WL_ENOMEM)
                return wl_error_set(err, WL_ENOMEM, NULL);
            if (rc != 0)
                return wl_error_set(err, WL_EINVAL, "malformed query string: bad percent-encoding");
            out->count++;
        }
        if (amp == NULL)
            break;
        start = end + 1;
    }
    return 0;
}

size_t wl_query_count(const wl_query_t *query, const char *name)
{
    size_t count = 0;
    wl_span_t wanted = wl_span_str(name);
    for (size_t i = 0; i < query->count; i++)
        count += wl_span_eq(query->params[i].name, wanted);
    return count;
}

const wl_span_t *wl_query_get(const wl_query_t *query, const char *name)
{
    wl_span_t wanted = wl_span_str(name);
    for (size_t i = 0; i < query->count; i++) {
        if (wl_span_eq(query->params[i].name, wanted))
            return &query->params[i].value;
    }
    return NULL;
}

static bool names_field(const ProtobufCFieldDescriptor *field, wl_span_t name)
{
    char json_name[128];
    wl_json_field_name(field->name, json_name, sizeof(json_name));
    return wl_span_eq(name, wl_span_str(json_name)) || wl_span_eq(name, wl_span_str(field->name));
}

static int parse_integer(wl_span_t value, const ProtobufCFieldDescriptor *field, void *member)
{
    char text[32];
    /* strtoll would skip leading whitespace and a '+'; a query value gets neither. */
    if (value.len == 0 || value.len >= sizeof(text) ||
        !(value.base[0] == '-' || (value.base[0] >= '0' && value.base[0] <= '9')))
        return -1;
    memcpy(text, value.base, value.len);
    text[value.len] = '\0';
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    switch (field->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        if (v < INT32_MIN || v > INT32_MAX)
            return -1;
        *(int32_t *)member = (int32_t)v;
        return 0;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        *(int64_t *)member = v;
        return 0;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        if (v < 0 || v > UINT32_MAX)
            return -1;
        *(uint32_t *)member = (uint32_t)v;
        return 0;
    default:
        return -1;
    }
}

static int bind_scalar(wl_span_t value, const ProtobufCFieldDescriptor *field, void *member,
                       wl_arena_t *arena)
{
    switch (field->type) {
    case PROTOBUF_C_TYPE_STRING: {
        char *copy = wl_arena_strndup(arena, value.base, value.len);
        if (copy == NULL)
            return WL_ENOMEM;
        *(char **)member = copy;
        return 0;
    }
    case PROTOBUF_C_TYPE_BOOL:
        if (wl_span_eq(value, wl_span_str("true")) || wl_span_eq(value, wl_span_str("1")))
            *(protobuf_c_boolean *)member = 1;
        else if (wl_span_eq(value, wl_span_str("false")) || wl_span_eq(value, wl_span_str("0")))
            *(protobuf_c_boolean *)member = 0;
        else
            return WL_EINVAL;
        return 0;
    default:
        return parse_integer(value, field, member) == 0 ? 0 : WL_EINVAL;
    }
}

static size_t scalar_size(const ProtobufCFieldDescriptor *field)
{
    switch (field->type) {
    case PROTOBUF_C_TYPE_STRING:
        return sizeof(char *);
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return 8;
    default:
        return 4;
    }
}

static bool bindable(const ProtobufCFieldDescriptor *field)
{
    switch (field->type) {
    case PROTOBUF_C_TYPE_MESSAGE:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_ENUM:
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return false;
    default:
        return true;
    }
}

/* Appends values (one per query value, or split pieces) to a repeated field. */
static int bind_repeated(const wl_query_t *query, const ProtobufCFieldDescriptor *field,
                         ProtobufCMessage *msg, wl_query_mode_t mode, wl_arena_t *arena,
                         wl_error_t *err)
{
    bool split = mode == WL_QUERY_SPLIT_LISTS && field->type == PROTOBUF_C_TYPE_STRING;
    size_t total = 0;
    for (size_t i = 0; i < query->count; i++) {
        if (names_field(field, query->params[i].name))
            total += split ? wl_codes_split(query->params[i].value, NULL, 0) : 1;
    }
    size_t size = scalar_size(field);
    unsigned char *items = wl_arena_alloc(arena, size * (total ? total : 1));
    if (items == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    size_t n = 0;
    char json_name[128];
    wl_json_field_name(field->name, json_name, sizeof(json_name));
    for (size_t i = 0; i < query->count; i++) {
        if (!names_field(field, query->params[i].name))
            continue;
        wl_span_t value = query->params[i].value;
        size_t pieces_count = split ? wl_codes_split(value, NULL, 0) : 1;
        wl_span_t *pieces = wl_arena_alloc(arena, sizeof(*pieces) * (pieces_count + 1));
        if (pieces == NULL)
            return wl_error_set(err, WL_ENOMEM, NULL);
        if (split)
            wl_codes_split(value, pieces, pieces_count);
        else
            pieces[0] = value;
        for (size_t p = 0; p < pieces_count; p++, n++) {
            if (memchr(pieces[p].base, '\0', pieces[p].len) != NULL) {
                wl_error_add_violation(err, json_name, "must not contain NUL bytes");
                continue;
            }
            int rc = bind_scalar(pieces[p], field, items + n * size, arena);
            if (rc == WL_ENOMEM)
                return wl_error_set(err, WL_ENOMEM, NULL);
            if (rc != 0)
                wl_error_add_violation(err, json_name, "has an invalid value");
        }
    }
    *(size_t *)((char *)msg + field->quantifier_offset) = n;
    *(void **)((char *)msg + field->offset) = items;
    return err->code;
}

int wl_query_bind(const wl_query_t *query, ProtobufCMessage *msg, wl_query_mode_t mode,
                  wl_arena_t *arena, wl_error_t *err)
{
    const ProtobufCMessageDescriptor *desc = msg->descriptor;
    for (unsigned f = 0; f < desc->n_fields; f++) {
        const ProtobufCFieldDescriptor *field = &desc->fields[f];
        if (!bindable(field))
            continue;
        size_t given = 0;
        const wl_span_t *value = NULL;
        for (size_t i = 0; i < query->count; i++) {
            if (names_field(field, query->params[i].name)) {
                given++;
                if (value == NULL)
                    value = &query->params[i].value;
            }
        }
        if (given == 0)
            continue;
        char json_name[128];
        wl_json_field_name(field->name, json_name, sizeof(json_name));
        if (field->label == PROTOBUF_C_LABEL_REPEATED) {
            int rc = bind_repeated(query, field, msg, mode, arena, err);
            if (rc == WL_ENOMEM)
                return rc;
            continue;
        }
        if (given > 1) {
            wl_error_add_violation(err, json_name, "must be given once");
            continue;
        }
        if (memchr(value->base, '\0', value->len) != NULL) {
            wl_error_add_violation(err, json_name, "must not contain NUL bytes");
            continue;
        }
        int rc = bind_scalar(*value, field, (char *)msg + field->offset, arena);
        if (rc == WL_ENOMEM)
            return wl_error_set(err, WL_ENOMEM, NULL);
        if (rc != 0)
            wl_error_add_violation(err, json_name, "has an invalid value");
    }
    return err->code;
}
