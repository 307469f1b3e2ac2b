/* Checking the strings of a binary protobuf message before protobuf-c unpacks it happens here. */
#include "codec/proto_strings.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "walklist/utf8.h"

/* Our messages nest two levels deep; anything far deeper is not one of them. */
#define MAX_DEPTH 32

typedef struct {
    const uint8_t *at;
    const uint8_t *end;
} reader_t;

static bool read_varint(reader_t *r, uint64_t *out)
{
    uint64_t value = 0;
    for (unsigned shift = 0; shift < 64 && r->at < r->end; shift += 7) {
        uint8_t byte = *r->at++;
        value |= (uint64_t)(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) {
            *out = value;
            return true;
        }
    }
    return false;
}

static bool skip(reader_t *r, uint64_t n)
{
    if (n > (uint64_t)(r->end - r->at))
        return false;
    r->at += n;
    return true;
}

/* The field's name as the JSON form spells it (lowerCamelCase). */
static void json_name(const char *proto_name, char *out, size_t size)
{
    size_t o = 0;
    for (const char *p = proto_name; *p != '\0' && o + 1 < size; p++) {
        if (*p == '_' && p[1] >= 'a' && p[1] <= 'z') {
            out[o++] = (char)(p[1] - 'a' + 'A');
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
}

static const char *string_problem(const uint8_t *s, size_t len)
{
    if (memchr(s, '\0', len) != NULL)
        return "must not contain NUL bytes";
    if (wl_utf8_count(wl_span((const char *)s, len)) < 0)
        return "must be valid UTF-8";
    return NULL;
}

/*
 * Walks one message's fields. Returns false when the bytes are not a well-formed message
 * (left for protobuf-c to refuse); string problems go to err as violations.
 */
static bool check_message(const ProtobufCMessageDescriptor *desc, reader_t r, const char *prefix,
                          int depth, wl_error_t *err)
{
    if (depth > MAX_DEPTH) {
        wl_error_add_violation(err, prefix, "is nested too deeply");
        return true;
    }
    unsigned *seen = calloc(desc->n_fields ? desc->n_fields : 1, sizeof(*seen));
    bool well_formed = seen != NULL;
    while (well_formed && r.at < r.end) {
        uint64_t tag, len;
        if (!read_varint(&r, &tag)) {
            well_formed = false;
            break;
        }
        switch (tag & 7) {
        case 0:
            well_formed = read_varint(&r, &len);
            continue;
        case 1:
            well_formed = skip(&r, 8);
            continue;
        case 5:
            well_formed = skip(&r, 4);
            continue;
        case 2:
            break;
        default: /* groups: no message of ours has them */
            well_formed = false;
            continue;
        }
        if (!read_varint(&r, &len) || len > (uint64_t)(r.end - r.at)) {
            well_formed = false;
            break;
        }
        const uint8_t *value = r.at;
        r.at += len;
        const ProtobufCFieldDescriptor *field =
            tag >> 3 <= UINT32_MAX
                ? protobuf_c_message_descriptor_get_field(desc, (unsigned)(tag >> 3))
                : NULL;
        if (field == NULL ||
            (field->type != PROTOBUF_C_TYPE_STRING && field->type != PROTOBUF_C_TYPE_MESSAGE))
            continue; /* unknown fields, bytes and packed numbers hold no strings */
        char name[64], path[256];
        json_name(field->name, name, sizeof(name));
        unsigned index = seen[field - desc->fields]++;
        if (field->label == PROTOBUF_C_LABEL_REPEATED)
            snprintf(path, sizeof(path), "%s%s%s[%u]", prefix, prefix[0] ? "." : "", name, index);
        else
            snprintf(path, sizeof(path), "%s%s%s", prefix, prefix[0] ? "." : "", name);
        if (field->type == PROTOBUF_C_TYPE_STRING) {
            const char *problem = string_problem(value, (size_t)len);
            if (problem != NULL)
                wl_error_add_violation(err, path, "%s", problem);
        } else {
            reader_t inner = {value, value + len};
            well_formed = check_message(field->descriptor, inner, path, depth + 1, err);
        }
    }
    free(seen);
    return well_formed;
}

int wl_proto_check_strings(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                           wl_error_t *err)
{
    wl_error_t found;
    wl_error_init(&found);
    reader_t r = {data, data + len};
    if (!check_message(desc, r, "", 0, &found) || found.code == 0)
        return 0;
    for (size_t i = 0; i < found.violation_count; i++)
        wl_error_add_violation(err, found.violations[i].field, "%s",
                               found.violations[i].description);
    return WL_EINVAL;
}
