/*
 * The JSON writer and its escaper (src/core/json_writer.c): the first byte picks the escaping
 * and the writer's room, the rest is a string. What must hold: every escaped string is a JSON
 * string that reads back as the input where the input was UTF-8 (and, escaping controls, holds
 * no control byte); a writer never writes past its room, and once failed writes nothing more; a
 * cut string is still a whole JSON string.
 */
#include <jansson.h>
#include <string.h>

#include "fuzz.h"
#include "walklist/json_writer.h"
#include "walklist/span.h"
#include "walklist/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned flags = data[0] & 1 ? WL_JSON_ESCAPE_CONTROLS : 0;
    size_t room = (size_t)(data[0] >> 1) * 2;
    const char *s = (const char *)data + 1;
    size_t len = size - 1;

    char *escaped = malloc(len * WL_JSON_ESCAPE_GROWTH + 3);
    FUZZ_CHECK(escaped != NULL);
    escaped[0] = '"';
    char *end = wl_json_escape(escaped + 1, s, len, flags);
    *end++ = '"';
    json_error_t error;
    json_t *value =
        json_loadb(escaped, (size_t)(end - escaped), JSON_DECODE_ANY | JSON_ALLOW_NUL, &error);
    FUZZ_CHECK(value != NULL && json_is_string(value));
    if (wl_utf8_count(wl_span(s, len)) >= 0)
        FUZZ_CHECK(json_string_length(value) == len &&
                   memcmp(json_string_value(value), s, len) == 0);
    if (flags) {
        for (char *p = escaped; p < end; p++)
            FUZZ_CHECK((unsigned char)*p >= 0x20 && (unsigned char)*p != 0x7F);
    }
    json_decref(value);
    free(escaped);

    /* In a room of `room` bytes: an array of the string, a number and the string cut. */
    char *buf = malloc(room + 1);
    FUZZ_CHECK(buf != NULL);
    wl_json_writer_t w;
    wl_json_writer_init(&w, buf, room, flags);
    wl_json_open_array(&w);
    wl_json_string(&w, s, len);
    size_t before = w.len;
    bool ok = wl_json_ok(&w);
    wl_json_int(&w, -42);
    FUZZ_CHECK(ok || w.len == before);
    FUZZ_CHECK(w.len <= room);
    wl_json_writer_init(&w, buf, room, flags);
    wl_json_open_array(&w);
    size_t opened = w.len;
    if (wl_json_ok(&w))
        wl_json_string_cut(&w, s, len, 1);
    if (w.len > opened) {
        FUZZ_CHECK(w.len <= room - 1);
        buf[w.len++] = ']';
        value = json_loadb(buf, w.len, JSON_ALLOW_NUL, &error);
        FUZZ_CHECK(value != NULL && json_array_size(value) == 1);
        json_decref(value);
    }
    free(buf);
    return 0;
}
