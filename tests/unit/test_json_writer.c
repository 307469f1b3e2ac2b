/*
 * The JSON writer (walklist/json_writer.h): commas and nesting, the one escaper in both its
 * modes, the sticky error, cutting a string to fit, rewinding a field, and text that jansson
 * reads back as what was written.
 */
#include "walklist/json_writer.h"

#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "test.h"

/* The writer's text, NUL-terminated (buf has a byte kept for it). */
static const char *text_of(wl_json_writer_t *w)
{
    w->buf[w->len] = '\0';
    return w->buf;
}

static void test_nesting_and_commas(void)
{
    char buf[256];
    wl_json_writer_t w;
    wl_json_writer_init(&w, buf, sizeof(buf) - 1, 0);
    wl_json_open_object(&w);
    wl_json_key(&w, "a");
    wl_json_int(&w, 1);
    wl_json_key(&w, "b");
    wl_json_open_array(&w);
    wl_json_bool(&w, true);
    wl_json_null(&w);
    wl_json_cstring(&w, "x");
    wl_json_open_object(&w);
    wl_json_close_object(&w);
    wl_json_close_array(&w);
    wl_json_key(&w, "c");
    wl_json_raw(&w, "{\"d\":[]}", 8);
    wl_json_key(&w, "min");
    wl_json_int(&w, INT64_MIN);
    wl_json_close_object(&w);
    CHECK(wl_json_ok(&w));
    CHECK_STR(text_of(&w),
              "{\"a\":1,\"b\":[true,null,\"x\",{}],\"c\":{\"d\":[]},\"min\":-9223372036854775808}");
}

static const char *escaped(const char *s, size_t len, unsigned flags)
{
    static char out[1024];
    char *end = wl_json_escape(out, s, len, flags);
    *end = '\0';
    return out;
}

static void test_escaping(void)
{
    /* As jansson writes strings: short forms, other C0 controls as upper-case \u00XX, '/' and
     * DEL and valid UTF-8 as they are, a byte that is not UTF-8 as U+FFFD. */
    const char plain[] = "a\"b\\c/\b\f\n\r\t\x01\x1F\x7F\xC3\xA9\xC2\x85\xFF";
    CHECK_STR(escaped(plain, sizeof(plain) - 1, 0),
              "a\\\"b\\\\c/\\b\\f\\n\\r\\t\\u0001\\u001F\x7F\xC3\xA9\xC2\x85\xEF\xBF\xBD");
    /* With the controls escaped: DEL and C1 by their code point, a stray byte by its value;
     * a NUL is a control too. */
    const char controls[] = "\x7F\xC2\x85\xFF\0z\xE2\x82\xAC";
    CHECK_STR(escaped(controls, sizeof(controls) - 1, WL_JSON_ESCAPE_CONTROLS),
              "\\u007F\\u0085\\u00FF\\u0000z\xE2\x82\xAC");
    /* A truncated sequence at the end is not UTF-8. */
    CHECK_STR(escaped("\xE2\x82", 2, 0), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

/* Every single byte, and every valid one-character string, read back by jansson as itself (or
 * as U+FFFD where it was not UTF-8). */
static void test_read_back(void)
{
    for (unsigned c = 0; c < 256; c++) {
        char in[1] = {(char)c}, buf[64];
        wl_json_writer_t w;
        wl_json_writer_init(&w, buf, sizeof(buf) - 1, 0);
        wl_json_string(&w, in, 1);
        json_error_t error;
        json_t *value = json_loadb(buf, w.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &error);
        CHECK(value != NULL && json_is_string(value));
        if (value != NULL && c < 0x80) {
            CHECK_INT(json_string_length(value), 1);
            CHECK_INT((unsigned char)json_string_value(value)[0], c);
        } else if (value != NULL) {
            CHECK_STR(json_string_value(value), "\xEF\xBF\xBD");
        }
        json_decref(value);
    }
}

static void test_sticky_error(void)
{
    char buf[16];
    wl_json_writer_t w;
    wl_json_writer_init(&w, buf, sizeof(buf), 0);
    wl_json_open_array(&w);
    wl_json_cstring(&w, "0123456789"); /* 12 bytes, with "[": fits */
    CHECK(wl_json_ok(&w));
    size_t len = w.len;
    wl_json_cstring(&w, "abc"); /* ,"abc" does not fit */
    CHECK(!wl_json_ok(&w));
    CHECK_INT(w.len, len);
    wl_json_int(&w, 1); /* would fit, but the writer has failed */
    wl_json_close_array(&w);
    CHECK(!wl_json_ok(&w));
    CHECK_INT(w.len, len);
}

static void test_string_cut(void)
{
    char buf[24];
    wl_json_writer_t w;
    wl_json_writer_init(&w, buf, sizeof(buf) - 1, WL_JSON_ESCAPE_CONTROLS);
    wl_json_open_object(&w);
    wl_json_key(&w, "p");
    /* Six bytes an escape: cut at a whole one, with two bytes kept free after the string. */
    const char controls[] = "\x01\x01\x01\x01\x01";
    wl_json_string_cut(&w, controls, sizeof(controls) - 1, 2);
    CHECK(!wl_json_ok(&w));
    CHECK_STR(text_of(&w), "{\"p\":\"\\u0001\\u0001\"");
    CHECK(w.len <= sizeof(buf) - 1 - 2);

    /* What fits is not cut, and the writer goes on. */
    wl_json_writer_init(&w, buf, sizeof(buf) - 1, WL_JSON_ESCAPE_CONTROLS);
    wl_json_open_array(&w);
    wl_json_string_cut(&w, "\xC3\xA9t\xC3\xA9", 5, 1);
    wl_json_close_array(&w);
    CHECK(wl_json_ok(&w));
    CHECK_STR(text_of(&w), "[\"\xC3\xA9t\xC3\xA9\"]");
}

/* A string that fits whatever its escaping is written whole; one near the end of the buffer a
 * character at a time: the same text either way, for every kind of character. */
static void test_string_cut_same_either_way(void)
{
    static const char *const texts[] = {
        "plain text",
        "quote \" and \\ backslash",
        "tab\tnew\nline\x01\x7f",
        "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x93\xA6",
        "bad \xC3 \xFF \xE2\x82 end",
        "",
    };
    for (size_t t = 0; t < sizeof(texts) / sizeof(texts[0]); t++) {
        size_t len = strlen(texts[t]);
        char whole[256], tight[256];
        wl_json_writer_t w;
        wl_json_writer_init(&w, whole, sizeof(whole) - 1, WL_JSON_ESCAPE_CONTROLS);
        wl_json_string_cut(&w, texts[t], len, 0);
        CHECK(wl_json_ok(&w));
        size_t written = w.len;
        /* Room for exactly what it escapes to: less than the most it could escape to. */
        wl_json_writer_init(&w, tight, written, WL_JSON_ESCAPE_CONTROLS);
        wl_json_string_cut(&w, texts[t], len, 0);
        CHECK(wl_json_ok(&w));
        CHECK_INT(w.len, written);
        CHECK(memcmp(whole, tight, written) == 0);
    }
}

static void test_rewind(void)
{
    char buf[32];
    wl_json_writer_t w;
    wl_json_writer_init(&w, buf, sizeof(buf) - 1, 0);
    wl_json_open_object(&w);
    wl_json_key(&w, "a");
    wl_json_int(&w, 1);
    wl_json_mark_t mark = wl_json_mark(&w);
    wl_json_key(&w, "long");
    wl_json_cstring(&w, "this does not fit at all");
    CHECK(!wl_json_ok(&w));
    wl_json_rewind(&w, mark);
    CHECK_STR(text_of(&w), "{\"a\":1");
}

int main(void)
{
    test_nesting_and_commas();
    test_escaping();
    test_read_back();
    test_sticky_error();
    test_string_cut();
    test_string_cut_same_either_way();
    test_rewind();
    return test_exit();
}
