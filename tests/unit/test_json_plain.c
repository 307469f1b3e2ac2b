/*
 * The plain JSON reader (gateway/codec/json_plain.h): a plain text is read to what jansson
 * makes of it (the same value, keys in the same order); every other text, valid or not, is
 * left to jansson; and a request body read either way decodes to the same message.
 */
#include "codec/json_plain.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "codec/json_codec.h"
#include "test.h"
#include "walklist/v1/locate_list.pb-c.h"

/* jansson's reading of text, as the codec asks for it. */
static json_t *jansson_read(const char *text, size_t len)
{
    json_error_t jerr;
    return json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
}

/* Both readings written out in order (NULL when either is missing). */
static char *dump(const json_t *value)
{
    return value == NULL ? NULL
                         : json_dumps(value, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
}

static void check_plain(const char *text, size_t len)
{
    json_t *plain = wl_json_read_plain(text, len);
    json_t *jansson = jansson_read(text, len);
    CHECK(plain != NULL);
    CHECK(jansson != NULL);
    char *a = dump(plain), *b = dump(jansson);
    if (a == NULL || b == NULL || strcmp(a, b) != 0) {
        CHECK(false);
        fprintf(stderr, "  text %.*s: plain %s, jansson %s\n", (int)len, text, a ? a : "-",
                b ? b : "-");
    }
    CHECK(plain == NULL || jansson == NULL || json_equal(plain, jansson));
    free(a);
    free(b);
    json_decref(plain);
    json_decref(jansson);
}

static void check_left_to_jansson(const char *text, size_t len)
{
    json_t *plain = wl_json_read_plain(text, len);
    if (plain != NULL)
        fprintf(stderr, "  read as plain: %.*s\n", (int)len, text);
    CHECK(plain == NULL);
    json_decref(plain);
}

#define PLAIN(text)     check_plain(text, sizeof(text) - 1)
#define NOT_PLAIN(text) check_left_to_jansson(text, sizeof(text) - 1)

static void test_plain_texts(void)
{
    PLAIN(
        "{\"name\":\"Bench walk\",\"codes\":[\"SKU-0000037\",\"SKU-0000074\",\"4006381333931\"]}");
    PLAIN(" \t\r\n{ \"b\" : 1 , \"a\" : [ ] , \"c\" : { } } \n");
    PLAIN("{\"z\":1,\"a\":2,\"m\":3}"); /* keys keep their order */
    PLAIN("[true,false,null,0,-0,7,-42,123456789012345678,-123456789012345678]");
    PLAIN("{\"\":\"\"}");
    PLAIN("\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x93\xA6\"");
    PLAIN("{\"a\":{\"b\":{\"c\":[[[\"deep\"]]]}}}");
    PLAIN("{\"slash/and'quote\":\"del\x7F ok\"}");
    PLAIN("17");
    PLAIN("null");
}

static void test_other_texts(void)
{
    /* Valid JSON that is not plain: jansson reads it. */
    NOT_PLAIN("{\"name\":\"a\\\"b\"}");
    NOT_PLAIN("{\"name\":\"\\u00e9\"}");
    NOT_PLAIN("[1.5]");
    NOT_PLAIN("[1e3]");
    NOT_PLAIN("[-2E-1]");
    NOT_PLAIN("[1234567890123456789]"); /* 19 digits */
    NOT_PLAIN("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"); /* 33 deep */
    /* Not JSON, or not what the codec accepts: jansson words the error. */
    NOT_PLAIN("");
    NOT_PLAIN("   ");
    NOT_PLAIN("{\"a\":1,\"a\":2}");
    NOT_PLAIN("{\"a\":1,}");
    NOT_PLAIN("[1,]");
    NOT_PLAIN("[01]");
    NOT_PLAIN("[-]");
    NOT_PLAIN("[+1]");
    NOT_PLAIN("{\"a\" 1}");
    NOT_PLAIN("{a:1}");
    NOT_PLAIN("{\"a\":1} x");
    NOT_PLAIN("{\"a\":1}{}");
    NOT_PLAIN("[truex]");
    NOT_PLAIN("[nul]");
    NOT_PLAIN("\"tab\there\"");
    NOT_PLAIN("\"unterminated");
    NOT_PLAIN("{\"a\":\"\xC3\"}");                 /* cut UTF-8 sequence */
    NOT_PLAIN("{\"\xED\xA0\x80\":1}");             /* a surrogate in UTF-8 as a key */
    NOT_PLAIN("[\"\xC0\xAF\"]");                   /* overlong */
    NOT_PLAIN("\xEF\xBB\xBF{}");                   /* byte order mark */
    check_left_to_jansson("{\"a\":\"x\0y\"}", 11); /* a NUL byte */
    check_left_to_jansson("{\"a\":1}\0", 8);
}

/* A creation body decodes to the same message through either reader: the codec's answer for
 * a plain text is what it was with jansson alone (same fields, same errors). */
static void test_codec_answers(void)
{
    static const char *const bodies[] = {
        "{\"name\":\"Aisle 4\",\"codes\":[\"A\",\"B\"]}",
        "{\"name\":\"Aisle 4\",\"codes\":[\"A\",\"B\"],\"surplus\":1}",
        "{\"name\":5,\"codes\":[]}",
        "{\"name\":\"x\",\"name\":\"y\"}",
        "[\"not an object\"]",
    };
    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        wl_arena_t arena;
        wl_arena_init(&arena, 1u << 20);
        wl_error_t err;
        wl_error_init(&err);
        ProtobufCMessage *msg = NULL;
        int rc = wl_json_decode(&walklist__v1__create_locate_list_request__descriptor, bodies[i],
                                strlen(bodies[i]), &arena, &msg, &err);
        /* The same through jansson's value, as the codec was before the plain reader. */
        json_t *value = jansson_read(bodies[i], strlen(bodies[i]));
        wl_error_t err2;
        wl_error_init(&err2);
        ProtobufCMessage *msg2 = NULL;
        int rc2 = value == NULL
                      ? -1
                      : wl_json_decode_value(&walklist__v1__create_locate_list_request__descriptor,
                                             value, &arena, &msg2, &err2);
        if (value != NULL) {
            CHECK_INT(rc, rc2);
            CHECK_STR(err.message, err2.message);
            if (rc == 0) {
                size_t len = 0, len2 = 0;
                char *a = wl_json_encode_text(msg, &arena, &len);
                char *b = wl_json_encode_text(msg2, &arena, &len2);
                CHECK(a != NULL && b != NULL && len == len2 && memcmp(a, b, len) == 0);
            }
        } else {
            CHECK(rc != 0);
            CHECK(strstr(err.message, "malformed JSON") != NULL ||
                  strstr(err.message, "duplicate") != NULL);
        }
        json_decref(value);
        wl_arena_dispose(&arena);
    }
}

int main(void)
{
    test_plain_texts();
    test_other_texts();
    test_codec_answers();
    return test_exit();
}
