#include "codec/json_plain.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Deeper texts are left to jansson (its own limit is 2048). */
#define PLAIN_MAX_DEPTH 32
/* 18 digits always fit in json_int_t (int64); longer integers are left to jansson. */
#define PLAIN_MAX_DIGITS 18

typedef struct {
    const char *at;
    const char *end;
    int depth;
} reader_t;

static json_t *read_value(reader_t *r);

static void skip_whitespace(reader_t *r)
{
    while (r->at < r->end && (*r->at == ' ' || *r->at == '\n' || *r->at == '\r' || *r->at == '\t'))
        r->at++;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* A string at r->at (its opening quote) without escapes or control characters: its bytes, not
 * yet checked as UTF-8. */
static bool read_string_bytes(reader_t *r, const char **start, size_t *len)
{
    const char *p = r->at + 1;
    while (p < r->end) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            *start = r->at + 1;
            *len = (size_t)(p - *start);
            r->at = p + 1;
            return true;
        }
        if (c == '\\' || c < 0x20)
            return false;
        p++;
    }
    return false;
}

static json_t *read_integer(reader_t *r)
{
    const char *p = r->at;
    bool negative = false;
    if (*p == '-') {
        negative = true;
        p++;
    }
    const char *digits = p;
    while (p < r->end && is_digit(*p))
        p++;
    size_t count = (size_t)(p - digits);
    /* Leading zeros are jansson's error to word; fractions and exponents its reals to make. */
    if (count == 0 || count > PLAIN_MAX_DIGITS || (count > 1 && digits[0] == '0'))
        return NULL;
    if (p < r->end && (*p == '.' || *p == 'e' || *p == 'E'))
        return NULL;
    json_int_t value = 0;
    for (const char *d = digits; d < p; d++)
        value = value * 10 + (*d - '0');
    r->at = p;
    return json_integer(negative ? -value : value);
}

static json_t *read_literal(reader_t *r, const char *word, size_t len, json_t *value)
{
    if ((size_t)(r->end - r->at) < len || memcmp(r->at, word, len) != 0)
        return NULL;
    r->at += len;
    return value;
}

/* Whitespace, then c taken with the whitespace after it; false (c not taken) when c is not next. */
static bool take(reader_t *r, char c)
{
    skip_whitespace(r);
    if (r->at >= r->end || *r->at != c)
        return false;
    r->at++;
    skip_whitespace(r);
    return true;
}

static bool read_element(reader_t *r, json_t *array)
{
    json_t *item = read_value(r);
    return item != NULL && json_array_append_new(array, item) == 0;
}

static bool read_member(reader_t *r, json_t *object)
{
    const char *key;
    size_t key_len;
    if (r->at >= r->end || *r->at != '"' || !read_string_bytes(r, &key, &key_len))
        return false;
    /* A repeated key is jansson's error to word (JSON_REJECT_DUPLICATES). */
    if (json_object_getn(object, key, key_len) != NULL || !take(r, ':'))
        return false;
    json_t *item = read_value(r);
    /* json_object_setn_new checks the key as UTF-8 (and takes the item in any case). */
    return item != NULL && json_object_setn_new(object, key, key_len, item) == 0;
}

/* An array or object (its opening bracket at r->at) whose items read_item reads into it. */
static json_t *read_container(reader_t *r, json_t *container, char close,
                              bool (*read_item)(reader_t *, json_t *))
{
    if (container == NULL)
        return NULL;
    r->at++;
    if (take(r, close))
        return container;
    do {
        if (!read_item(r, container))
            break;
        if (take(r, close))
            return container;
    } while (take(r, ','));
    json_decref(container);
    return NULL;
}

static json_t *read_value(reader_t *r)
{
    if (r->at >= r->end)
        return NULL;
    switch (*r->at) {
    case '"': {
        const char *start;
        size_t len;
        if (!read_string_bytes(r, &start, &len))
            return NULL;
        return json_stringn(start, len); /* NULL when not UTF-8 */
    }
    case '{':
    case '[': {
        if (r->depth >= PLAIN_MAX_DEPTH)
            return NULL;
        r->depth++;
        json_t *value = *r->at == '{' ? read_container(r, json_object(), '}', read_member)
                                      : read_container(r, json_array(), ']', read_element);
        r->depth--;
        return value;
    }
    case 't':
        return read_literal(r, "true", 4, json_true());
    case 'f':
        return read_literal(r, "false", 5, json_false());
    case 'n':
        return read_literal(r, "null", 4, json_null());
    default:
        if (*r->at == '-' || is_digit(*r->at))
            return read_integer(r);
        return NULL;
    }
}

json_t *wl_json_read_plain(const char *text, size_t len)
{
    reader_t r = {.at = text, .end = text + len, .depth = 0};
    skip_whitespace(&r);
    json_t *value = read_value(&r);
    if (value == NULL)
        return NULL;
    skip_whitespace(&r);
    if (r.at != r.end) {
        json_decref(value);
        return NULL;
    }
    return value;
}
