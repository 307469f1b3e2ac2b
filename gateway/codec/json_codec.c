/* Messages become proto3 JSON and JSON becomes messages here, led by protobuf-c descriptors. */
#include "codec/json_codec.h"
#include "codec/json_plain.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "walklist/base64.h"
#include "walklist/json_writer.h"
#include "walklist/utf8.h"

#define TIMESTAMP_MIN_SECONDS INT64_C(-62135596800) /* 0001-01-01T00:00:00Z */
#define TIMESTAMP_MAX_SECONDS INT64_C(253402300799) /* 9999-12-31T23:59:59Z */
#define SECONDS_PER_DAY       86400

/* Longer paths are cut; a violation's field holds 63 bytes anyway. */
#define PATH_CAPACITY 160

/* ---- Names ------------------------------------------------------------------------------- */

void wl_json_field_name(const char *proto_name, char *buf, size_t size)
{
    if (size == 0)
        return;
    size_t n = 0;
    bool upper_next = false;
    for (const char *p = proto_name; *p != '\0' && n + 1 < size; p++) {
        if (*p == '_') {
            upper_next = true;
        } else {
            /* ASCII only, as protoc; no locale may change it. */
            buf[n++] = upper_next && *p >= 'a' && *p <= 'z' ? (char)(*p - 'a' + 'A') : *p;
            upper_next = false;
        }
    }
    buf[n] = '\0';
}

/* Compares a key with the JSON name of proto_name without building the name. */
static bool json_name_equals(const char *proto_name, const char *key)
{
    bool upper_next = false;
    for (const char *p = proto_name; *p != '\0'; p++) {
        if (*p == '_') {
            upper_next = true;
            continue;
        }
        char c = upper_next && *p >= 'a' && *p <= 'z' ? (char)(*p - 'a' + 'A') : *p;
        upper_next = false;
        if (*key++ != c)
            return false;
    }
    return *key == '\0';
}

/* protoc names the entry message of map field "inner_by_id" "InnerByIdEntry". */
static bool map_entry_name_equals(const char *field_name, const char *entry_name)
{
    bool upper_next = true;
    for (const char *p = field_name; *p != '\0'; p++) {
        if (*p == '_') {
            upper_next = true;
            continue;
        }
        char c = upper_next && *p >= 'a' && *p <= 'z' ? (char)(*p - 'a' + 'A') : *p;
        upper_next = false;
        if (*entry_name++ != c)
            return false;
    }
    return strcmp(entry_name, "Entry") == 0;
}

static const ProtobufCFieldDescriptor *find_field(const ProtobufCMessageDescriptor *desc,
                                                  const char *key)
{
    for (unsigned i = 0; i < desc->n_fields; i++) {
        if (json_name_equals(desc->fields[i].name, key))
            return &desc->fields[i];
    }
    return protobuf_c_message_descriptor_get_field_by_name(desc, key);
}

/*
 * protobuf-c 1.4 keeps no map_entry option, so a map field is recognised by
 * the shape protoc gives it: a repeated nested "<Field>Entry" message with
 * exactly key = 1 and value = 2.
 */
static bool is_map_field(const ProtobufCMessageDescriptor *parent,
                         const ProtobufCFieldDescriptor *field)
{
    if (field->label != PROTOBUF_C_LABEL_REPEATED || field->type != PROTOBUF_C_TYPE_MESSAGE)
        return false;
    const ProtobufCMessageDescriptor *entry = field->descriptor;
    if (entry->n_fields != 2 || entry->fields[0].id != 1 || entry->fields[1].id != 2 ||
        strcmp(entry->fields[0].name, "key") != 0 || strcmp(entry->fields[1].name, "value") != 0)
        return false;
    size_t parent_len = strlen(parent->name);
    return strncmp(entry->name, parent->name, parent_len) == 0 && entry->name[parent_len] == '.' &&
           map_entry_name_equals(field->name, entry->name + parent_len + 1);
}

/* ---- Well-known types -------------------------------------------------------------------- */

typedef enum { WKT_NONE, WKT_WRAPPER, WKT_TIMESTAMP } wkt_kind_t;

static wkt_kind_t wkt_kind(const ProtobufCMessageDescriptor *desc)
{
    static const char *const wrappers[] = {
        "google.protobuf.StringValue", "google.protobuf.BytesValue", "google.protobuf.BoolValue",
        "google.protobuf.Int32Value",  "google.protobuf.Int64Value", "google.protobuf.UInt32Value",
        "google.protobuf.UInt64Value", "google.protobuf.FloatValue", "google.protobuf.DoubleValue",
    };
    if (strncmp(desc->name, "google.protobuf.", 16) != 0)
        return WKT_NONE;
    if (strcmp(desc->name, "google.protobuf.Timestamp") == 0)
        return WKT_TIMESTAMP;
    for (size_t i = 0; i < sizeof(wrappers) / sizeof(wrappers[0]); i++) {
        if (strcmp(desc->name, wrappers[i]) == 0)
            return WKT_WRAPPER;
    }
    return WKT_NONE;
}

/* Howard Hinnant's days_from_civil: days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static unsigned days_in_month(int64_t y, unsigned m)
{
    static const unsigned days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : days[m - 1];
}

/* Value of n decimal digits at s, or -1. */
static int read_digits(const char *s, int n)
{
    int value = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        value = value * 10 + (s[i] - '0');
    }
    return value;
}

typedef enum { TIMESTAMP_OK, TIMESTAMP_SYNTAX, TIMESTAMP_RANGE } timestamp_result_t;

/* RFC 3339 date-time ("2026-11-21T10:15:30.123+02:00"), converted to UTC. */
static timestamp_result_t parse_timestamp(const char *s, size_t len, int64_t *seconds,
                                          int32_t *nanos)
{
    if (len < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' ||
        s[16] != ':')
        return TIMESTAMP_SYNTAX;
    int year = read_digits(s, 4), month = read_digits(s + 5, 2), day = read_digits(s + 8, 2);
    int hour = read_digits(s + 11, 2), minute = read_digits(s + 14, 2);
    int second = read_digits(s + 17, 2);
    if (year < 0 || month < 1 || month > 12 || day < 1 ||
        day > (int)days_in_month(year, (unsigned)month) || hour < 0 || hour > 23 || minute < 0 ||
        minute > 59 || second < 0 || second > 59)
        return TIMESTAMP_SYNTAX;
    size_t i = 19;
    int32_t fraction = 0;
    if (s[i] == '.') {
        int digits = 0;
        for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
            if (++digits > 9)
                return TIMESTAMP_SYNTAX;
            fraction = fraction * 10 + (s[i] - '0');
        }
        if (digits == 0)
            return TIMESTAMP_SYNTAX;
        for (; digits < 9; digits++)
            fraction *= 10;
    }
    int offset = 0;
    if (i + 1 == len && (s[i] == 'Z' || s[i] == 'z')) {
        offset = 0;
    } else if (i + 6 == len && (s[i] == '+' || s[i] == '-') && s[i + 3] == ':') {
        int offset_hours = read_digits(s + i + 1, 2), offset_minutes = read_digits(s + i + 4, 2);
        if (offset_hours < 0 || offset_hours > 23 || offset_minutes < 0 || offset_minutes > 59)
            return TIMESTAMP_SYNTAX;
        offset = (offset_hours * 60 + offset_minutes) * 60 * (s[i] == '-' ? -1 : 1);
    } else {
        return TIMESTAMP_SYNTAX;
    }
    int64_t utc = days_from_civil(year, (unsigned)month, (unsigned)day) * SECONDS_PER_DAY +
                  hour * 3600 + minute * 60 + second - offset;
    if (utc < TIMESTAMP_MIN_SECONDS || utc > TIMESTAMP_MAX_SECONDS)
        return TIMESTAMP_RANGE;
    *seconds = utc;
    *nanos = fraction;
    return TIMESTAMP_OK;
}

/* ---- Byte helpers ------------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s (len >= 1), or 0 when there is none. */
static size_t utf8_sequence_length(const unsigned char *s, size_t len)
{
    uint32_t cp;
    int n = wl_utf8_decode((const char *)s, len, &cp);
    return n > 0 ? (size_t)n : 0;
}

static size_t element_size(ProtobufCType type)
{
    switch (type) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return sizeof(int64_t);
    case PROTOBUF_C_TYPE_DOUBLE:
        return sizeof(double);
    case PROTOBUF_C_TYPE_FLOAT:
        return sizeof(float);
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
        return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(ProtobufCMessage *);
    default: /* 32-bit integers and enums */
        return sizeof(int32_t);
    }
}

/* ---- Decoding ---------------------------------------------------------------------------- */

typedef struct {
    wl_arena_t *arena;
    wl_error_t *err;
    bool out_of_memory; /* sticky; stops the decode */
    bool invalid;       /* at least one violation; the decode goes on to find the others */
    size_t path_len;
    char path[PATH_CAPACITY]; /* field path of the value being decoded, e.g. "items[2].sku" */
} decoder_t;

/* Appends len bytes of s to the path, cut where the path is full. Every field and element of a
 * body passes here, so it copies instead of formatting. */
static void path_write(decoder_t *d, const char *s, size_t len)
{
    size_t room = sizeof(d->path) - 1 - d->path_len;
    if (len > room)
        len = room;
    memcpy(d->path + d->path_len, s, len);
    d->path_len += len;
    d->path[d->path_len] = '\0';
}

static size_t path_push_key(decoder_t *d, const char *key)
{
    size_t mark = d->path_len;
    if (mark != 0)
        path_write(d, ".", 1);
    path_write(d, key, strlen(key));
    return mark;
}

static size_t path_push_index(decoder_t *d, size_t index)
{
    size_t mark = d->path_len;
    char digits[24];
    size_t at = sizeof(digits);
    digits[--at] = ']';
    do {
        digits[--at] = (char)('0' + index % 10);
        index /= 10;
    } while (index != 0);
    digits[--at] = '[';
    path_write(d, digits + at, sizeof(digits) - at);
    return mark;
}

static size_t path_push_map_key(decoder_t *d, const char *key)
{
    size_t mark = d->path_len;
    path_write(d, "[\"", 2);
    path_write(d, key, strlen(key));
    path_write(d, "\"]", 2);
    return mark;
}

static void path_pop(decoder_t *d, size_t mark)
{
    d->path_len = mark;
    d->path[mark] = '\0';
}

static void violation(decoder_t *d, const char *fmt, ...) WL_PRINTF(2, 3);

static void violation(decoder_t *d, const char *fmt, ...)
{
    char description[sizeof(d->err->violations[0].description)];
    char field[sizeof(d->err->violations[0].field)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(description, sizeof(description), fmt, ap);
    va_end(ap);
    /* Cut the path where a UTF-8 sequence starts, so the field stays valid UTF-8 in the
     * error body. */
    size_t len = d->path_len;
    if (len >= sizeof(field)) {
        len = sizeof(field) - 1;
        while (len > 0 && ((unsigned char)d->path[len] & 0xC0) == 0x80)
            len--;
    }
    memcpy(field, d->path, len);
    field[len] = '\0';
    (void)wl_error_add_violation(d->err, field, "%s", description);
    d->invalid = true;
}

static void out_of_memory(decoder_t *d)
{
    if (!d->out_of_memory) {
        d->out_of_memory = true;
        (void)wl_error_set(d->err, WL_ENOMEM, NULL);
    }
}

static void *decoder_alloc(decoder_t *d, size_t size)
{
    void *p = wl_arena_alloc(d->arena, size);
    if (p == NULL)
        out_of_memory(d);
    return p;
}

static void decode_string(decoder_t *d, const char *s, size_t len, char **slot)
{
    char *copy = wl_arena_strndup(d->arena, s, len);
    if (copy == NULL)
        out_of_memory(d);
    else
        *slot = copy;
}

static ProtobufCMessage *new_message(decoder_t *d, const ProtobufCMessageDescriptor *desc)
{
    ProtobufCMessage *msg = decoder_alloc(d, desc->sizeof_message);
    if (msg != NULL)
        protobuf_c_message_init(desc, msg);
    return msg;
}

/* An integer as sign and magnitude, so that every 64-bit type can be range-checked. */
typedef struct {
    bool negative;
    uint64_t magnitude;
} integer_t;

typedef enum { INTEGER_OK, INTEGER_SYNTAX, INTEGER_RANGE } integer_result_t;

/* A decimal integer in JSON number syntax: -?(0|[1-9][0-9]*). */
static integer_result_t parse_decimal(const char *s, size_t len, integer_t *out)
{
    size_t i = 0;
    out->negative = len > 0 && s[0] == '-';
    i = out->negative ? 1 : 0;
    if (i == len || (s[i] == '0' && len - i > 1))
        return INTEGER_SYNTAX;
    bool overflow = false;
    uint64_t magnitude = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return INTEGER_SYNTAX;
        unsigned digit = (unsigned)(s[i] - '0');
        if (magnitude > (UINT64_MAX - digit) / 10)
            overflow = true;
        else
            magnitude = magnitude * 10 + digit;
    }
    out->magnitude = magnitude;
    return overflow ? INTEGER_RANGE : INTEGER_OK;
}

static integer_result_t read_integer(const json_t *value, integer_t *out)
{
    if (json_is_integer(value)) {
        json_int_t x = json_integer_value(value);
        out->negative = x < 0;
        out->magnitude = x < 0 ? (uint64_t)(-(x + 1)) + 1 : (uint64_t)x;
        return INTEGER_OK;
    }
    if (json_is_real(value)) {
        double x = json_real_value(value);
        if (!isfinite(x) || x != trunc(x))
            return INTEGER_SYNTAX;
        if (fabs(x) >= 18446744073709551616.0)
            return INTEGER_RANGE;
        out->negative = x < 0;
        out->magnitude = (uint64_t)fabs(x);
        return INTEGER_OK;
    }
    if (json_is_string(value))
        return parse_decimal(json_string_value(value), json_string_length(value), out);
    return INTEGER_SYNTAX;
}

static bool integer_to_signed(integer_t x, int64_t min, int64_t max, int64_t *out)
{
    if (x.negative) {
        uint64_t limit = (uint64_t)(-(min + 1)) + 1;
        if (x.magnitude > limit)
            return false;
        *out = x.magnitude == 0 ? 0 : -(int64_t)(x.magnitude - 1) - 1;
        return true;
    }
    if (x.magnitude > (uint64_t)max)
        return false;
    *out = (int64_t)x.magnitude;
    return true;
}

static bool integer_to_unsigned(integer_t x, uint64_t max, uint64_t *out)
{
    if ((x.negative && x.magnitude != 0) || x.magnitude > max)
        return false;
    *out = x.magnitude;
    return true;
}

static bool decode_signed(decoder_t *d, const json_t *value, int64_t min, int64_t max, int64_t *out)
{
    integer_t x;
    integer_result_t result = read_integer(value, &x);
    if (result == INTEGER_SYNTAX) {
        violation(d, "must be an integer");
        return false;
    }
    if (result == INTEGER_RANGE || !integer_to_signed(x, min, max, out)) {
        violation(d, "must be an integer between %" PRId64 " and %" PRId64, min, max);
        return false;
    }
    return true;
}

static bool decode_unsigned(decoder_t *d, const json_t *value, uint64_t max, uint64_t *out)
{
    integer_t x;
    integer_result_t result = read_integer(value, &x);
    if (result == INTEGER_SYNTAX) {
        violation(d, "must be an integer");
        return false;
    }
    if (result == INTEGER_RANGE || !integer_to_unsigned(x, max, out)) {
        violation(d, "must be an integer between 0 and %" PRIu64, max);
        return false;
    }
    return true;
}

/* JSON number syntax: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static bool is_json_number(const char *s, size_t len)
{
    size_t i = 0;
    if (i < len && s[i] == '-')
        i++;
    if (i < len && s[i] == '0') {
        i++;
    } else if (i < len && s[i] >= '1' && s[i] <= '9') {
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++;
    } else {
        return false;
    }
    if (i < len && s[i] == '.') {
        size_t start = ++i;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == start)
            return false;
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t start = i;
        while (i < len && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == start)
            return false;
    }
    return i == len;
}

/* A number, or a string holding "NaN", "Infinity", "-Infinity" or a JSON number. */
static bool decode_floating(decoder_t *d, const json_t *value, bool is_float, double *out)
{
    double x;
    if (json_is_number(value)) {
        x = json_number_value(value);
    } else if (json_is_string(value)) {
        const char *s = json_string_value(value);
        size_t len = json_string_length(value);
        if (strcmp(s, "NaN") == 0) {
            x = NAN;
        } else if (strcmp(s, "Infinity") == 0) {
            x = INFINITY;
        } else if (strcmp(s, "-Infinity") == 0) {
            x = -INFINITY;
        } else if (is_json_number(s, len)) {
            errno = 0;
            x = strtod(s, NULL);
            if (errno == ERANGE && isinf(x)) {
                violation(d, "must be a number within double range");
                return false;
            }
        } else {
            violation(d, "must be a number");
            return false;
        }
    } else {
        violation(d, "must be a number");
        return false;
    }
    /* Within float range is what rounds to a finite float: below the midpoint between FLT_MAX
     * and 2^128 (where ties-to-even goes up). So the decimal a float is encoded as, such as
     * 3.4028235e38 for FLT_MAX, is read back, although as a double it is just above FLT_MAX. */
    if (is_float && isfinite(x) && fabs(x) >= 0x1.ffffffp127) {
        violation(d, "must be a number within float range");
        return false;
    }
    if (is_float && isfinite(x) && fabs(x) > FLT_MAX)
        x = copysign(FLT_MAX, x);
    *out = x;
    return true;
}

/* "A, B, C" of an enum's names, cut at a name that does not fit. */
static void enum_names(const ProtobufCEnumDescriptor *desc, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < desc->n_values; i++) {
        const char *name = desc->values[i].name;
        size_t need = strlen(name) + (i > 0 ? 2 : 0);
        if (n + need + 5 >= size) {
            snprintf(buf + n, size - n, ", ...");
            return;
        }
        n += (size_t)snprintf(buf + n, size - n, "%s%s", i > 0 ? ", " : "", name);
    }
}

static void decode_enum(decoder_t *d, const ProtobufCEnumDescriptor *desc, const json_t *value,
                        int32_t *out)
{
    if (json_is_string(value)) {
        const ProtobufCEnumValue *ev =
            protobuf_c_enum_descriptor_get_value_by_name(desc, json_string_value(value));
        if (ev == NULL) {
            char names[160];
            enum_names(desc, names, sizeof(names));
            violation(d, "must be one of %s", names);
            return;
        }
        *out = ev->value;
    } else if (json_is_number(value)) {
        /* proto3 enums are open: any int32 number is kept. */
        int64_t x;
        if (decode_signed(d, value, INT32_MIN, INT32_MAX, &x))
            *out = (int32_t)x;
    } else {
        violation(d, "must be an enum value name or an integer");
    }
}

static void decode_bytes(decoder_t *d, const json_t *value, ProtobufCBinaryData *out)
{
    if (!json_is_string(value)) {
        violation(d, "must be a base64 string");
        return;
    }
    size_t len = json_string_length(value);
    unsigned char *data = decoder_alloc(d, len / 4 * 3 + 3);
    if (data == NULL)
        return;
    size_t n;
    if (!wl_base64_decode(json_string_value(value), len, WL_BASE64_DECODE_LENIENT, data, &n)) {
        violation(d, "must be a base64 string");
        return;
    }
    out->data = data;
    out->len = n;
}

static void decode_timestamp(decoder_t *d, const json_t *value, ProtobufCMessage *msg)
{
    if (!json_is_string(value)) {
        violation(d, "must be an RFC 3339 timestamp string");
        return;
    }
    int64_t seconds;
    int32_t nanos;
    switch (
        parse_timestamp(json_string_value(value), json_string_length(value), &seconds, &nanos)) {
    case TIMESTAMP_OK:
        break;
    case TIMESTAMP_SYNTAX:
        violation(d, "must be an RFC 3339 timestamp, e.g. \"2026-11-21T10:15:30Z\"");
        return;
    case TIMESTAMP_RANGE:
        violation(d, "must be a timestamp between 0001-01-01T00:00:00Z and "
                     "9999-12-31T23:59:59.999999999Z");
        return;
    }
    const ProtobufCMessageDescriptor *desc = msg->descriptor;
    *(int64_t *)((char *)msg + desc->fields[0].offset) = seconds;
    *(int32_t *)((char *)msg + desc->fields[1].offset) = nanos;
}

static void decode_value(decoder_t *d, const ProtobufCFieldDescriptor *field, const json_t *value,
                         void *slot, int depth);

static void decode_fields(decoder_t *d, const ProtobufCMessageDescriptor *desc,
                          const json_t *object, ProtobufCMessage *msg, int depth);

/* A message-typed value at the given nesting level into *slot. */
static void decode_message(decoder_t *d, const ProtobufCMessageDescriptor *desc,
                           const json_t *value, ProtobufCMessage **slot, int depth)
{
    if (depth > WL_JSON_MAX_DEPTH) {
        violation(d, "nesting too deep");
        return;
    }
    wkt_kind_t kind = wkt_kind(desc);
    if (kind == WKT_NONE && !json_is_object(value)) {
        violation(d, "must be an object");
        return;
    }
    ProtobufCMessage *msg = new_message(d, desc);
    if (msg == NULL)
        return;
    if (kind == WKT_WRAPPER)
        decode_value(d, &desc->fields[0], value, (char *)msg + desc->fields[0].offset, depth);
    else if (kind == WKT_TIMESTAMP)
        decode_timestamp(d, value, msg);
    else
        decode_fields(d, desc, value, msg, depth);
    *slot = msg;
}

/* One value (not null) of a field's type into slot, which is the field or an array element. */
static void decode_value(decoder_t *d, const ProtobufCFieldDescriptor *field, const json_t *value,
                         void *slot, int depth)
{
    int64_t s;
    uint64_t u;
    double x;
    switch (field->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        if (decode_signed(d, value, INT32_MIN, INT32_MAX, &s))
            *(int32_t *)slot = (int32_t)s;
        break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        if (decode_signed(d, value, INT64_MIN, INT64_MAX, &s))
            *(int64_t *)slot = s;
        break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        if (decode_unsigned(d, value, UINT32_MAX, &u))
            *(uint32_t *)slot = (uint32_t)u;
        break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        if (decode_unsigned(d, value, UINT64_MAX, &u))
            *(uint64_t *)slot = u;
        break;
    case PROTOBUF_C_TYPE_FLOAT:
        if (decode_floating(d, value, true, &x))
            *(float *)slot = (float)x;
        break;
    case PROTOBUF_C_TYPE_DOUBLE:
        if (decode_floating(d, value, false, &x))
            *(double *)slot = x;
        break;
    case PROTOBUF_C_TYPE_BOOL:
        if (json_is_boolean(value))
            *(protobuf_c_boolean *)slot = json_is_true(value);
        else
            violation(d, "must be a boolean");
        break;
    case PROTOBUF_C_TYPE_ENUM:
        decode_enum(d, field->descriptor, value, slot);
        break;
    case PROTOBUF_C_TYPE_STRING:
        if (json_is_string(value))
            decode_string(d, json_string_value(value), json_string_length(value), slot);
        else
            violation(d, "must be a string");
        break;
    case PROTOBUF_C_TYPE_BYTES:
        decode_bytes(d, value, slot);
        break;
    case PROTOBUF_C_TYPE_MESSAGE:
        decode_message(d, field->descriptor, value, slot, depth + 1);
        break;
    }
}

/* Map keys are JSON strings; integer and bool keys must be canonical so distinct keys differ. */
static void decode_map_key(decoder_t *d, const ProtobufCFieldDescriptor *field, const char *key,
                           void *slot)
{
    integer_t x;
    int64_t s;
    uint64_t u;
    size_t len = strlen(key);
    bool canonical = parse_decimal(key, len, &x) == INTEGER_OK && strcmp(key, "-0") != 0;
    switch (field->type) {
    case PROTOBUF_C_TYPE_STRING:
        decode_string(d, key, len, slot);
        break;
    case PROTOBUF_C_TYPE_BOOL:
        if (strcmp(key, "true") == 0 || strcmp(key, "false") == 0)
            *(protobuf_c_boolean *)slot = key[0] == 't';
        else
            violation(d, "map key must be true or false");
        break;
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        if (canonical && integer_to_signed(x, INT32_MIN, INT32_MAX, &s))
            *(int32_t *)slot = (int32_t)s;
        else
            violation(
                d, "map key must be a canonical decimal integer between %" PRId32 " and %" PRId32,
                INT32_MIN, INT32_MAX);
        break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        if (canonical && integer_to_signed(x, INT64_MIN, INT64_MAX, &s))
            *(int64_t *)slot = s;
        else
            violation(
                d, "map key must be a canonical decimal integer between %" PRId64 " and %" PRId64,
                INT64_MIN, INT64_MAX);
        break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        if (canonical && integer_to_unsigned(x, UINT32_MAX, &u))
            *(uint32_t *)slot = (uint32_t)u;
        else
            violation(d, "map key must be a canonical decimal integer between 0 and %" PRIu32,
                      UINT32_MAX);
        break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        if (canonical && integer_to_unsigned(x, UINT64_MAX, &u))
            *(uint64_t *)slot = u;
        else
            violation(d, "map key must be a canonical decimal integer between 0 and %" PRIu64,
                      UINT64_MAX);
        break;
    default: /* protoc allows no other key types */
        violation(d, "unsupported map key type");
        break;
    }
}

static void decode_map(decoder_t *d, const ProtobufCFieldDescriptor *field, const json_t *value,
                       ProtobufCMessage *msg, int depth)
{
    if (!json_is_object(value)) {
        violation(d, "must be an object");
        return;
    }
    const ProtobufCMessageDescriptor *entry_desc = field->descriptor;
    const ProtobufCFieldDescriptor *key_field = &entry_desc->fields[0];
    const ProtobufCFieldDescriptor *value_field = &entry_desc->fields[1];
    size_t count = json_object_size(value);
    ProtobufCMessage **entries = NULL;
    if (count > 0) {
        entries = decoder_alloc(d, count * sizeof(*entries));
        if (entries == NULL)
            return;
    }
    size_t n = 0;
    const char *key;
    json_t *item;
    json_object_foreach((json_t *)value, key, item)
    {
        size_t mark = path_push_map_key(d, key);
        ProtobufCMessage *entry = new_message(d, entry_desc);
        if (entry == NULL)
            return;
        decode_map_key(d, key_field, key, (char *)entry + key_field->offset);
        if (json_is_null(item))
            violation(d, "must not be null");
        else
            decode_value(d, value_field, item, (char *)entry + value_field->offset, depth);
        entries[n++] = entry;
        path_pop(d, mark);
    }
    *(size_t *)((char *)msg + field->quantifier_offset) = n;
    *(ProtobufCMessage ***)((char *)msg + field->offset) = entries;
}

static void decode_repeated(decoder_t *d, const ProtobufCFieldDescriptor *field,
                            const json_t *value, ProtobufCMessage *msg, int depth)
{
    if (!json_is_array(value)) {
        violation(d, "must be an array");
        return;
    }
    size_t count = json_array_size(value);
    size_t size = element_size(field->type);
    char *elements = NULL;
    if (count > 0) {
        if (count > SIZE_MAX / size) {
            out_of_memory(d);
            return;
        }
        elements = decoder_alloc(d, count * size);
        if (elements == NULL)
            return;
    }
    for (size_t i = 0; i < count && !d->out_of_memory; i++) {
        size_t mark = path_push_index(d, i);
        const json_t *item = json_array_get(value, i);
        if (json_is_null(item))
            violation(d, "must not be null");
        else
            decode_value(d, field, item, elements + i * size, depth);
        path_pop(d, mark);
    }
    *(size_t *)((char *)msg + field->quantifier_offset) = count;
    *(void **)((char *)msg + field->offset) = elements;
}

/* "a, b, c": the JSON names of the oneof that field belongs to. */
static void oneof_members(const ProtobufCMessageDescriptor *desc,
                          const ProtobufCFieldDescriptor *field, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (unsigned i = 0; i < desc->n_fields && n + 1 < size; i++) {
        const ProtobufCFieldDescriptor *f = &desc->fields[i];
        if (!(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) ||
            f->quantifier_offset != field->quantifier_offset)
            continue;
        if (n > 0)
            n += (size_t)snprintf(buf + n, size - n, ", ");
        if (n + 1 < size) {
            wl_json_field_name(f->name, buf + n, size - n);
            n += strlen(buf + n);
        }
    }
}

static void decode_field(decoder_t *d, const ProtobufCMessageDescriptor *desc,
                         const ProtobufCFieldDescriptor *field, const json_t *value,
                         ProtobufCMessage *msg, int depth)
{
    char *base = (char *)msg;
    if (field->label == PROTOBUF_C_LABEL_REPEATED) {
        if (is_map_field(desc, field))
            decode_map(d, field, value, msg, depth);
        else
            decode_repeated(d, field, value, msg, depth);
        return;
    }
    if (field->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
        /* The case is set before the value is decoded, so that a second member is reported
         * even when the first one was invalid. */
        uint32_t *oneof_case = (uint32_t *)(base + field->quantifier_offset);
        if (*oneof_case != 0) {
            char members[160];
            oneof_members(desc, field, members, sizeof(members));
            violation(d, "only one of %s may be set", members);
            return;
        }
        *oneof_case = field->id;
    } else if (field->label == PROTOBUF_C_LABEL_OPTIONAL && field->type != PROTOBUF_C_TYPE_STRING &&
               field->type != PROTOBUF_C_TYPE_MESSAGE) {
        /* proto2 optional scalars carry a has_ flag. */
        *(protobuf_c_boolean *)(base + field->quantifier_offset) = 1;
    }
    decode_value(d, field, value, base + field->offset, depth);
}

static void decode_fields(decoder_t *d, const ProtobufCMessageDescriptor *desc,
                          const json_t *object, ProtobufCMessage *msg, int depth)
{
    /* One bit per field: the same field sent under its JSON and its proto name. */
    unsigned char seen_small[64];
    unsigned char *seen = seen_small;
    size_t seen_size = (desc->n_fields + 7) / 8;
    if (seen_size > sizeof(seen_small)) {
        seen = decoder_alloc(d, seen_size);
        if (seen == NULL)
            return;
    } else {
        memset(seen, 0, seen_size);
    }
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)object, key, value)
    {
        if (d->out_of_memory)
            return;
        size_t mark = path_push_key(d, key);
        const ProtobufCFieldDescriptor *field = find_field(desc, key);
        if (field == NULL) {
            violation(d, "unknown field");
        } else {
            size_t index = (size_t)(field - desc->fields);
            if (seen[index / 8] & (1u << (index % 8))) {
                violation(d, "duplicate field");
            } else {
                seen[index / 8] |= (unsigned char)(1u << (index % 8));
                if (!json_is_null(value))
                    decode_field(d, desc, field, value, msg, depth);
            }
        }
        path_pop(d, mark);
    }
}

int wl_json_decode_value(const ProtobufCMessageDescriptor *desc, const json_t *value,
                         wl_arena_t *arena, ProtobufCMessage **out, wl_error_t *err)
{
    *out = NULL;
    if (!json_is_object(value))
        return wl_error_set(err, WL_EINVAL, "the JSON value must be an object");
    decoder_t d = {.arena = arena, .err = err};
    ProtobufCMessage *msg = new_message(&d, desc);
    if (msg != NULL)
        decode_fields(&d, desc, value, msg, 0);
    if (d.out_of_memory)
        return WL_ENOMEM;
    if (d.invalid)
        return WL_EINVAL;
    *out = msg;
    return 0;
}

static int decode_text(const ProtobufCMessageDescriptor *desc, const char *text, size_t len,
                       wl_arena_t *arena, ProtobufCMessage **out, wl_error_t *err)
{
    *out = NULL;
    json_error_t jerr;
    json_t *root = wl_json_read_plain(text, len);
    if (root == NULL)
        root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (root == NULL) {
        if (json_error_code(&jerr) == json_error_out_of_memory)
            return wl_error_set(err, WL_ENOMEM, NULL);
        /* jansson's own wording names its decoding flag; say the rule instead. */
        if (json_error_code(&jerr) == json_error_null_character)
            return wl_error_set(err, WL_EINVAL,
                                "malformed JSON: \\u0000 (NUL) is not allowed in a string "
                                "(line %d, column %d)",
                                jerr.line, jerr.column);
        /* jansson may quote input near the error; keep the message printable ASCII or
         * valid UTF-8, as it goes into a JSON error body. */
        char reason[sizeof(jerr.text)];
        size_t n = 0;
        const unsigned char *p = (const unsigned char *)jerr.text;
        size_t text_len = strnlen(jerr.text, sizeof(jerr.text));
        for (size_t i = 0; i < text_len;) {
            size_t seq = utf8_sequence_length(p + i, text_len - i);
            if (seq <= 1) {
                reason[n++] = seq == 1 && p[i] >= 0x20 && p[i] != 0x7f ? (char)p[i] : '?';
                i++;
            } else {
                memcpy(reason + n, p + i, seq);
                n += seq;
                i += seq;
            }
        }
        reason[n] = '\0';
        return wl_error_set(err, WL_EINVAL, "malformed JSON: %s (line %d, column %d)", reason,
                            jerr.line, jerr.column);
    }
    int rc = wl_json_decode_value(desc, root, arena, out, err);
    json_decref(root);
    return rc;
}

/* jansson allocates each node, key and string of a value on its own (about 70 allocations for
 * a walk list of 20 codes, each freed again right after): while a thread decodes a text they
 * come from a scratch arena instead, released in one go. Outside a decode jansson allocates as
 * usual; no value made during one outlives it, and none made before one is freed in it. */
static _Thread_local wl_arena_t *jansson_scratch;
static pthread_once_t jansson_allocation_set = PTHREAD_ONCE_INIT;

static void *jansson_malloc(size_t size)
{
    return jansson_scratch != NULL ? wl_arena_alloc_unzeroed(jansson_scratch, size) : malloc(size);
}

static void jansson_free(void *ptr)
{
    if (jansson_scratch == NULL)
        free(ptr);
}

static void set_jansson_allocation(void)
{
    json_set_alloc_funcs(jansson_malloc, jansson_free);
}

int wl_json_decode(const ProtobufCMessageDescriptor *desc, const char *text, size_t len,
                   wl_arena_t *arena, ProtobufCMessage **out, wl_error_t *err)
{
    pthread_once(&jansson_allocation_set, set_jansson_allocation);
    wl_arena_t scratch;
    wl_arena_init(&scratch, 0);
    jansson_scratch = &scratch;
    int rc = decode_text(desc, text, len, arena, out, err);
    jansson_scratch = NULL;
    wl_arena_dispose(&scratch);
    return rc;
}

/* ---- Encoding ---------------------------------------------------------------------------- */

/*
 * Messages are written as text straight into a buffer, value by value, the text jansson's
 * compact dump of the same object made (strings escaped alike, reals as jansson writes them),
 * without a tree of allocated values in between (one allocated and freed for every code of
 * a walk list read back).
 */

static void encode_fields(wl_json_writer_t *w, const ProtobufCMessage *msg);
static void encode_value(wl_json_writer_t *w, const ProtobufCFieldDescriptor *field,
                         const void *slot);

static void encode_uint64(wl_json_writer_t *w, uint64_t x)
{
    if (x <= INT64_MAX) {
        wl_json_int(w, (int64_t)x);
        return;
    }
    char text[24];
    int n = snprintf(text, sizeof(text), "\"%" PRIu64 "\"", x);
    wl_json_raw(w, text, (size_t)n);
}

/* A finite double as jansson writes a real: "%.17g", ".0" added when that reads as an
 * integer, the exponent without '+' or leading zeros. */
static void encode_real(wl_json_writer_t *w, double x)
{
    char text[40];
    int n = snprintf(text, sizeof(text), "%.17g", x);
    if (n <= 0 || (size_t)n + 3 > sizeof(text)) {
        wl_json_null(w);
        return;
    }
    size_t len = (size_t)n;
    if (strchr(text, '.') == NULL && strchr(text, 'e') == NULL) {
        memcpy(text + len, ".0", 3);
        len += 2;
    }
    char *exponent = strchr(text, 'e');
    if (exponent != NULL) {
        char *start = exponent + 1;
        char *end = start + 1;
        if (*start == '-')
            start++;
        while (*end == '0')
            end++;
        if (end != start) {
            memmove(start, end, len - (size_t)(end - text) + 1);
            len -= (size_t)(end - start);
        }
    }
    wl_json_raw(w, text, len);
}

static void encode_floating(wl_json_writer_t *w, double x, bool is_float)
{
    if (isnan(x)) {
        wl_json_raw(w, "\"NaN\"", 5);
        return;
    }
    if (isinf(x)) {
        if (x > 0)
            wl_json_raw(w, "\"Infinity\"", 10);
        else
            wl_json_raw(w, "\"-Infinity\"", 11);
        return;
    }
    if (is_float) {
        /* The shortest decimal that reads back as the same float, so that 0.1f is 0.1
         * rather than 0.10000000149011612. */
        char text[32];
        for (int precision = 1; precision <= 9; precision++) {
            snprintf(text, sizeof(text), "%.*g", precision, x);
            if (strtof(text, NULL) == (float)x)
                break;
        }
        x = strtod(text, NULL);
    }
    encode_real(w, x);
}

static void encode_timestamp(wl_json_writer_t *w, const ProtobufCMessage *msg)
{
    const ProtobufCMessageDescriptor *desc = msg->descriptor;
    int64_t seconds = *(const int64_t *)((const char *)msg + desc->fields[0].offset);
    int32_t nanos = *(const int32_t *)((const char *)msg + desc->fields[1].offset);
    if (seconds < TIMESTAMP_MIN_SECONDS || seconds > TIMESTAMP_MAX_SECONDS || nanos < 0 ||
        nanos > 999999999) {
        wl_json_null(w);
        return;
    }
    int64_t days = seconds / SECONDS_PER_DAY;
    int64_t second_of_day = seconds % SECONDS_PER_DAY;
    if (second_of_day < 0) {
        second_of_day += SECONDS_PER_DAY;
        days--;
    }
    int64_t year;
    unsigned month, day;
    civil_from_days(days, &year, &month, &day);
    char text[48];
    int n = snprintf(text, sizeof(text), "\"%04" PRId64 "-%02u-%02uT%02d:%02d:%02d", year, month,
                     day, (int)(second_of_day / 3600), (int)(second_of_day / 60 % 60),
                     (int)(second_of_day % 60));
    if (nanos % 1000000 == 0)
        n += snprintf(text + n, sizeof(text) - (size_t)n, ".%03dZ\"", (int)(nanos / 1000000));
    else if (nanos % 1000 == 0)
        n += snprintf(text + n, sizeof(text) - (size_t)n, ".%06dZ\"", (int)(nanos / 1000));
    else
        n += snprintf(text + n, sizeof(text) - (size_t)n, ".%09dZ\"", (int)nanos);
    wl_json_raw(w, text, (size_t)n);
}

static void encode_bytes(wl_json_writer_t *w, const ProtobufCBinaryData *bytes)
{
    if (bytes->len > SIZE_MAX / 4 - 3) {
        w->failed = true;
        return;
    }
    size_t n = wl_base64_encoded_len(bytes->len, true);
    char *at = wl_json_value_space(w, n + 2);
    if (at == NULL)
        return;
    at[0] = '"';
    wl_base64_encode(bytes->data, bytes->len, WL_BASE64_STANDARD, true, at + 1);
    at[n + 1] = '"';
}

static void encode_message(wl_json_writer_t *w, const ProtobufCMessage *msg)
{
    if (msg == NULL) {
        wl_json_null(w);
        return;
    }
    const ProtobufCMessageDescriptor *desc = msg->descriptor;
    switch (wkt_kind(desc)) {
    case WKT_WRAPPER:
        encode_value(w, &desc->fields[0], (const char *)msg + desc->fields[0].offset);
        return;
    case WKT_TIMESTAMP:
        encode_timestamp(w, msg);
        return;
    case WKT_NONE:
        break;
    }
    encode_fields(w, msg);
}

static void encode_value(wl_json_writer_t *w, const ProtobufCFieldDescriptor *field,
                         const void *slot)
{
    switch (field->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        wl_json_int(w, *(const int32_t *)slot);
        return;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        wl_json_int(w, *(const uint32_t *)slot);
        return;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        wl_json_int(w, *(const int64_t *)slot);
        return;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        encode_uint64(w, *(const uint64_t *)slot);
        return;
    case PROTOBUF_C_TYPE_FLOAT:
        encode_floating(w, *(const float *)slot, true);
        return;
    case PROTOBUF_C_TYPE_DOUBLE:
        encode_floating(w, *(const double *)slot, false);
        return;
    case PROTOBUF_C_TYPE_BOOL:
        wl_json_bool(w, *(const protobuf_c_boolean *)slot);
        return;
    case PROTOBUF_C_TYPE_ENUM: {
        int32_t number = *(const int32_t *)slot;
        const ProtobufCEnumValue *ev =
            protobuf_c_enum_descriptor_get_value(field->descriptor, number);
        if (ev != NULL)
            wl_json_cstring(w, ev->name);
        else
            wl_json_int(w, number);
        return;
    }
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(char *const *)slot;
        wl_json_cstring(w, s != NULL ? s : "");
        return;
    }
    case PROTOBUF_C_TYPE_BYTES:
        encode_bytes(w, slot);
        return;
    case PROTOBUF_C_TYPE_MESSAGE:
        encode_message(w, *(ProtobufCMessage *const *)slot);
        return;
    }
    wl_json_null(w);
}

/* The JSON object key of a map entry's key field. */
static void encode_map_key(wl_json_writer_t *w, const ProtobufCFieldDescriptor *field,
                           const void *slot)
{
    char text[24];
    switch (field->type) {
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(char *const *)slot;
        wl_json_key(w, s != NULL ? s : "");
        return;
    }
    case PROTOBUF_C_TYPE_BOOL:
        wl_json_key(w, *(const protobuf_c_boolean *)slot ? "true" : "false");
        return;
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        snprintf(text, sizeof(text), "%" PRId32, *(const int32_t *)slot);
        break;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        snprintf(text, sizeof(text), "%" PRIu32, *(const uint32_t *)slot);
        break;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        snprintf(text, sizeof(text), "%" PRId64, *(const int64_t *)slot);
        break;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        snprintf(text, sizeof(text), "%" PRIu64, *(const uint64_t *)slot);
        break;
    default:
        snprintf(text, sizeof(text), "?");
        break;
    }
    wl_json_key(w, text);
}

/* Whether two map entries have the same key (strings compared as they are: two keys that
 * differ only in bytes that are not UTF-8 are two keys here). */
static bool same_map_key(const ProtobufCFieldDescriptor *field, const char *a, const char *b)
{
    const void *x = a + field->offset, *y = b + field->offset;
    switch (field->type) {
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(char *const *)x, *t = *(char *const *)y;
        return strcmp(s != NULL ? s : "", t != NULL ? t : "") == 0;
    }
    case PROTOBUF_C_TYPE_BOOL:
        return (*(const protobuf_c_boolean *)x != 0) == (*(const protobuf_c_boolean *)y != 0);
    default:
        return memcmp(x, y, element_size(field->type)) == 0;
    }
}

/* A key repeated among the entries keeps its first place and its last value, as when a map's
 * binary form is read. */
static void encode_map(wl_json_writer_t *w, const ProtobufCFieldDescriptor *field,
                       const ProtobufCMessage *msg)
{
    const ProtobufCMessageDescriptor *entry_desc = field->descriptor;
    const ProtobufCFieldDescriptor *key_field = &entry_desc->fields[0];
    const ProtobufCFieldDescriptor *value_field = &entry_desc->fields[1];
    size_t count = *(const size_t *)((const char *)msg + field->quantifier_offset);
    const char *const *entries = *(const char *const *const *)((const char *)msg + field->offset);
    wl_json_open_object(w);
    for (size_t i = 0; i < count; i++) {
        if (entries[i] == NULL)
            continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = entries[j] != NULL && same_map_key(key_field, entries[j], entries[i]);
        if (seen)
            continue;
        size_t last = i;
        for (size_t j = i + 1; j < count; j++)
            if (entries[j] != NULL && same_map_key(key_field, entries[j], entries[i]))
                last = j;
        encode_map_key(w, key_field, entries[i] + key_field->offset);
        encode_value(w, value_field, entries[last] + value_field->offset);
    }
    wl_json_close_object(w);
}

static void encode_repeated(wl_json_writer_t *w, const ProtobufCFieldDescriptor *field,
                            const ProtobufCMessage *msg)
{
    size_t count = *(const size_t *)((const char *)msg + field->quantifier_offset);
    const char *elements = *(const char *const *)((const char *)msg + field->offset);
    size_t size = element_size(field->type);
    wl_json_open_array(w);
    for (size_t i = 0; i < count && wl_json_ok(w); i++)
        encode_value(w, field, elements + i * size);
    wl_json_close_array(w);
}

static bool field_present(const ProtobufCFieldDescriptor *field, const ProtobufCMessage *msg)
{
    const char *base = (const char *)msg;
    if (field->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
        return *(const uint32_t *)(base + field->quantifier_offset) == field->id;
    if (field->label != PROTOBUF_C_LABEL_OPTIONAL || field->type == PROTOBUF_C_TYPE_STRING ||
        field->type == PROTOBUF_C_TYPE_MESSAGE)
        return true;
    return *(const protobuf_c_boolean *)(base + field->quantifier_offset) != 0;
}

/* A field's JSON name as an object key: protoc's names take no escaping. */
static void encode_field_name(wl_json_writer_t *w, const char *proto_name)
{
    size_t n = strlen(proto_name);
    char *at = wl_json_value_space(w, n + 3);
    if (at == NULL)
        return;
    at[0] = '"';
    wl_json_field_name(proto_name, at + 1, n + 1);
    size_t k = strlen(at + 1);
    at[k + 1] = '"';
    at[k + 2] = ':';
    w->len -= n - k; /* the underscores dropped */
    w->comma = false;
}

/* Fields in number order (protobuf-c lists them so). */
static void encode_fields(wl_json_writer_t *w, const ProtobufCMessage *msg)
{
    const ProtobufCMessageDescriptor *desc = msg->descriptor;
    wl_json_open_object(w);
    for (unsigned i = 0; i < desc->n_fields && wl_json_ok(w); i++) {
        const ProtobufCFieldDescriptor *field = &desc->fields[i];
        bool repeated = field->label == PROTOBUF_C_LABEL_REPEATED;
        bool present = repeated || field_present(field, msg);
        if (!present && (field->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
            continue;
        encode_field_name(w, field->name);
        if (repeated && is_map_field(desc, field))
            encode_map(w, field, msg);
        else if (repeated)
            encode_repeated(w, field, msg);
        else if (!present)
            wl_json_null(w);
        else
            encode_value(w, field, (const char *)msg + field->offset);
    }
    wl_json_close_object(w);
}

json_t *wl_json_encode(const ProtobufCMessage *msg)
{
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    size_t len = 0;
    const char *text = wl_json_encode_text(msg, &arena, &len);
    json_t *value = text != NULL ? json_loadb(text, len, JSON_DECODE_ANY, NULL) : NULL;
    wl_arena_dispose(&arena);
    return value;
}

/* The most a message's text may take (a stock export goes out streamed, not through here). */
#define ENCODE_TEXT_MAX ((size_t)256 * 1024 * 1024)

char *wl_json_encode_text(const ProtobufCMessage *msg, wl_arena_t *arena, size_t *len)
{
    /* Most answers fit the first buffer; a larger one is written again into one four times
     * the size, until it fits. */
    char first[4096];
    char *buf = first;
    size_t cap = sizeof(first);
    wl_json_writer_t w;
    for (;;) {
        wl_json_writer_init(&w, buf, cap, 0);
        encode_fields(&w, msg);
        if (wl_json_ok(&w) || cap >= ENCODE_TEXT_MAX)
            break;
        if (buf != first)
            free(buf);
        cap *= 4;
        buf = malloc(cap);
        if (buf == NULL)
            return NULL;
    }
    char *copy = wl_json_ok(&w) ? wl_arena_strndup(arena, buf, w.len) : NULL;
    if (buf != first)
        free(buf);
    if (copy != NULL && len != NULL)
        *len = w.len;
    return copy;
}
