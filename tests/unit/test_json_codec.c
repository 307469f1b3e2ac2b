/*
 * The JSON codec: round trips of every field type, lowerCamelCase names,
 * violations with exact field paths, the well-known types and EmitUnpopulated
 * output as exact text.
 */
#include "codec/json_codec.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "codec_test.pb-c.h"
#include "google/protobuf/timestamp.pb-c.h"
#include "google/protobuf/wrappers.pb-c.h"
#include "test.h"
#include "walklist/v1/locate_list.pb-c.h"
#include "walklist/v1/stock.pb-c.h"

typedef Walklist__Test__Scalars Scalars;
typedef Walklist__Test__Repeateds Repeateds;
typedef Walklist__Test__WellKnown WellKnown;
typedef Walklist__Test__Choice Choice;
typedef Walklist__Test__Maps Maps;
typedef Walklist__Test__Small Small;
typedef Walklist__Test__Inner Inner;

#define SCALARS    (&walklist__test__scalars__descriptor)
#define REPEATEDS  (&walklist__test__repeateds__descriptor)
#define WELL_KNOWN (&walklist__test__well_known__descriptor)
#define CHOICE     (&walklist__test__choice__descriptor)
#define MAPS       (&walklist__test__maps__descriptor)
#define SMALL      (&walklist__test__small__descriptor)
#define INNER      (&walklist__test__inner__descriptor)
#define NAMES      (&walklist__test__names__descriptor)

static wl_arena_t arena;

/* Decodes text that must be valid; NULL (and a failure) otherwise. */
static void *decode_ok_at(const ProtobufCMessageDescriptor *desc, const char *text, int line)
{
    wl_error_t err;
    wl_error_init(&err);
    ProtobufCMessage *msg = NULL;
    int rc = wl_json_decode(desc, text, strlen(text), &arena, &msg, &err);
    test_checks++;
    if (rc != 0 || msg == NULL) {
        test_failures++;
        fprintf(stderr, "%s:%d: decoding %s failed: %d %s", __FILE__, line, text, rc, err.message);
        for (size_t i = 0; i < err.violation_count; i++)
            fprintf(stderr, " [%s: %s]", err.violations[i].field, err.violations[i].description);
        fputc('\n', stderr);
        return NULL;
    }
    return msg;
}
#define decode_ok(desc, text) decode_ok_at(desc, text, __LINE__)

/* Decodes text that must fail; the error is left in *err. */
static int decode_err(const ProtobufCMessageDescriptor *desc, const char *text, wl_error_t *err)
{
    wl_error_init(err);
    ProtobufCMessage *msg = (ProtobufCMessage *)&arena; /* must be reset to NULL */
    int rc = wl_json_decode(desc, text, strlen(text), &arena, &msg, err);
    CHECK(msg == NULL);
    return rc;
}

/* Checks that text gives exactly one violation, with this field and description. */
static void expect_violation_at(const ProtobufCMessageDescriptor *desc, const char *text,
                                const char *field, const char *description, int line)
{
    wl_error_t err;
    int rc = decode_err(desc, text, &err);
    test_checks++;
    if (rc != WL_EINVAL || err.code != WL_EINVAL || err.violation_count != 1 ||
        strcmp(err.violations[0].field, field) != 0 ||
        strcmp(err.violations[0].description, description) != 0) {
        test_failures++;
        fprintf(stderr, "%s:%d: %s: rc %d, code %d, %zu violations", __FILE__, line, text, rc,
                err.code, err.violation_count);
        for (size_t i = 0; i < err.violation_count; i++)
            fprintf(stderr, " [%s: %s]", err.violations[i].field, err.violations[i].description);
        fprintf(stderr, "; expected [%s: %s]\n", field, description);
    }
}
#define expect_violation(desc, text, field, description)                                           \
    expect_violation_at(desc, text, field, description, __LINE__)

/* Checks that text is rejected before decoding, with this error message. */
static void expect_error_at(const ProtobufCMessageDescriptor *desc, const char *text, size_t len,
                            const char *message, int line)
{
    wl_error_t err;
    wl_error_init(&err);
    ProtobufCMessage *msg = NULL;
    int rc = wl_json_decode(desc, text, len, &arena, &msg, &err);
    test_checks++;
    if (rc != WL_EINVAL || err.code != WL_EINVAL || err.violation_count != 0 || msg != NULL ||
        strcmp(err.message, message) != 0) {
        test_failures++;
        fprintf(stderr, "%s:%d: rc %d, %zu violations, message \"%s\", expected \"%s\"\n", __FILE__,
                line, rc, err.violation_count, err.message, message);
    }
}
#define expect_error(desc, text, message)                                                          \
    expect_error_at(desc, text, strlen(text), message, __LINE__)

static const char *encode(const void *msg)
{
    size_t len = 0;
    const char *text = wl_json_encode_text(msg, &arena, &len);
    CHECK(text != NULL);
    if (text != NULL)
        CHECK_INT(len, strlen(text));
    return text;
}

/* Decodes text and checks that encoding gives expected back (text itself when NULL). */
static void round_trip_at(const ProtobufCMessageDescriptor *desc, const char *text,
                          const char *expected, int line)
{
    const void *msg = decode_ok_at(desc, text, line);
    if (msg == NULL)
        return;
    const char *out = encode(msg);
    const char *want = expected != NULL ? expected : text;
    test_checks++;
    if (out == NULL || strcmp(out, want) != 0) {
        test_failures++;
        fprintf(stderr, "%s:%d: encoded\n  %s\nexpected\n  %s\n", __FILE__, line,
                out ? out : "(null)", want);
    }
}
#define round_trip(desc, text, expected) round_trip_at(desc, text, expected, __LINE__)

static void test_field_names(void)
{
    static const struct {
        const char *proto, *json;
    } cases[] = {
        {"name", "name"},
        {"codes_count", "codesCount"},
        {"page_token", "pageToken"},
        {"next_page_token", "nextPageToken"},
        {"x_2y", "x2y"},
        {"already_camel_Case", "alreadyCamelCase"},
        {"trailing_", "trailing"},
        {"_leading", "Leading"},
        {"a__b", "aB"},
        {"f_int32", "fInt32"},
    };
    char buf[64];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        wl_json_field_name(cases[i].proto, buf, sizeof(buf));
        CHECK_STR(buf, cases[i].json);
    }
    wl_json_field_name("codes_count", buf, 5);
    CHECK_STR(buf, "code");
    buf[0] = 'x';
    wl_json_field_name("codes_count", buf, 0);
    CHECK(buf[0] == 'x');

    /* The decoder takes JSON names and proto names; the encoder writes JSON names. */
    round_trip(NAMES,
               "{\"codesCount\":1,\"pageToken\":\"t\",\"x2y\":2,\"alreadyCamelCase\":\"c\","
               "\"trailing\":\"z\"}",
               NULL);
    round_trip(NAMES,
               "{\"codes_count\":1,\"page_token\":\"t\",\"x_2y\":2,"
               "\"already_camel_Case\":\"c\",\"trailing_\":\"z\"}",
               "{\"codesCount\":1,\"pageToken\":\"t\",\"x2y\":2,\"alreadyCamelCase\":\"c\","
               "\"trailing\":\"z\"}");
    expect_violation(&walklist__v1__list_stock_request__descriptor,
                     "{\"pageSize\":5,\"page_size\":6}", "page_size", "duplicate field");
    expect_violation(NAMES, "{\"CodesCount\":1}", "CodesCount", "unknown field");
    expect_violation(NAMES, "{\"x2Y\":1}", "x2Y", "unknown field");
}

static void test_scalars(void)
{
    const char *text =
        "{\"fInt32\":-2147483648,\"fSint32\":-5,\"fSfixed32\":2147483647,\"fUint32\":4294967295,"
        "\"fFixed32\":7,\"fInt64\":-9223372036854775808,\"fSint64\":9223372036854775807,"
        "\"fSfixed64\":-1,\"fUint64\":\"18446744073709551615\",\"fFixed64\":9223372036854775807,"
        "\"fFloat\":0.5,\"fDouble\":2.25,\"fBool\":true,\"fString\":\"h\xc3\xa9llo \\\"q\\\"\","
        "\"fBytes\":\"AAEC/w==\",\"fColor\":\"COLOR_GREEN\","
        "\"fInner\":{\"code\":\"A-1\",\"quantity\":3,\"child\":null}}";
    const Scalars *m = decode_ok(SCALARS, text);
    if (m != NULL) {
        CHECK_INT(m->f_int32, INT32_MIN);
        CHECK_INT(m->f_sint32, -5);
        CHECK_INT(m->f_sfixed32, INT32_MAX);
        CHECK(m->f_uint32 == UINT32_MAX);
        CHECK_INT(m->f_fixed32, 7);
        CHECK(m->f_int64 == INT64_MIN);
        CHECK(m->f_sint64 == INT64_MAX);
        CHECK_INT(m->f_sfixed64, -1);
        CHECK(m->f_uint64 == UINT64_MAX);
        CHECK(m->f_fixed64 == (uint64_t)INT64_MAX);
        CHECK(m->f_float == 0.5f);
        CHECK(m->f_double == 2.25);
        CHECK_INT(m->f_bool, 1);
        CHECK_STR(m->f_string, "h\xc3\xa9llo \"q\"");
        CHECK_INT(m->f_bytes.len, 4);
        CHECK(m->f_bytes.len == 4 && memcmp(m->f_bytes.data, "\x00\x01\x02\xff", 4) == 0);
        CHECK_INT(m->f_color, WALKLIST__TEST__COLOR__COLOR_GREEN);
        CHECK(m->f_inner != NULL && m->f_inner->child == NULL);
        if (m->f_inner != NULL) {
            CHECK_STR(m->f_inner->code, "A-1");
            CHECK_INT(m->f_inner->quantity, 3);
        }
    }
    round_trip(SCALARS, text, NULL);

    /* Defaults: every field appears. */
    round_trip(SCALARS, "{}",
               "{\"fInt32\":0,\"fSint32\":0,\"fSfixed32\":0,\"fUint32\":0,\"fFixed32\":0,"
               "\"fInt64\":0,\"fSint64\":0,\"fSfixed64\":0,\"fUint64\":0,\"fFixed64\":0,"
               "\"fFloat\":0.0,\"fDouble\":0.0,\"fBool\":false,\"fString\":\"\",\"fBytes\":\"\","
               "\"fColor\":\"COLOR_UNSPECIFIED\",\"fInner\":null}");

    /* Every field null is every field at its default; strings keep protobuf-c's empty string. */
    m = decode_ok(SCALARS, "{\"fInt32\":null,\"fSint32\":null,\"fSfixed32\":null,\"fUint32\":null,"
                           "\"fFixed32\":null,\"fInt64\":null,\"fSint64\":null,\"fSfixed64\":null,"
                           "\"fUint64\":null,\"fFixed64\":null,\"fFloat\":null,\"fDouble\":null,"
                           "\"fBool\":null,\"fString\":null,\"fBytes\":null,\"fColor\":null,"
                           "\"fInner\":null}");
    if (m != NULL) {
        CHECK_INT(m->f_int32, 0);
        CHECK(m->f_uint64 == 0);
        CHECK(m->f_double == 0);
        CHECK(m->f_string == protobuf_c_empty_string);
        CHECK(m->f_bytes.len == 0);
        CHECK(m->f_inner == NULL);
    }
}

static void test_repeated(void)
{
    const char *text =
        "{\"rInt32\":[1,-2],\"rSint32\":[-3],\"rSfixed32\":[4],\"rUint32\":[4294967295],"
        "\"rFixed32\":[6],\"rInt64\":[-7,9007199254740993],\"rSint64\":[8],\"rSfixed64\":[9],"
        "\"rUint64\":[10,\"9223372036854775808\"],\"rFixed64\":[11],\"rFloat\":[1.5,\"NaN\"],"
        "\"rDouble\":[\"Infinity\",\"-Infinity\",-0.25],\"rBool\":[true,false],"
        "\"rString\":[\"a\",\"\",\"c\"],\"rBytes\":[\"\",\"YQ==\"],"
        "\"rColor\":[\"COLOR_RED\",7],\"rInner\":[{\"code\":\"x\",\"quantity\":0,\"child\":null}],"
        "\"rTimestamp\":[\"2026-11-21T10:15:30.000Z\"]}";
    const Repeateds *m = decode_ok(REPEATEDS, text);
    if (m != NULL) {
        CHECK_INT(m->n_r_int32, 2);
        CHECK(m->n_r_int32 == 2 && m->r_int32[1] == -2);
        CHECK(m->n_r_int64 == 2 && m->r_int64[1] == INT64_C(9007199254740993));
        CHECK(m->n_r_uint64 == 2 && m->r_uint64[1] == UINT64_C(9223372036854775808));
        CHECK(m->n_r_float == 2 && isnan(m->r_float[1]));
        CHECK(m->n_r_double == 3 && isinf(m->r_double[0]) && m->r_double[1] < 0);
        CHECK(m->n_r_string == 3 && strcmp(m->r_string[2], "c") == 0);
        CHECK(m->n_r_bytes == 2 && m->r_bytes[1].len == 1 && m->r_bytes[1].data[0] == 'a');
        CHECK(m->n_r_color == 2 && m->r_color[1] == 7);
        CHECK(m->n_r_timestamp == 1 && m->r_timestamp[0]->seconds == 1795256130);
    }
    round_trip(REPEATEDS, text, NULL);
    round_trip(REPEATEDS, "{\"rString\":null,\"rInner\":[]}",
               "{\"rInt32\":[],\"rSint32\":[],\"rSfixed32\":[],\"rUint32\":[],\"rFixed32\":[],"
               "\"rInt64\":[],\"rSint64\":[],\"rSfixed64\":[],\"rUint64\":[],\"rFixed64\":[],"
               "\"rFloat\":[],\"rDouble\":[],\"rBool\":[],\"rString\":[],\"rBytes\":[],"
               "\"rColor\":[],\"rInner\":[],\"rTimestamp\":[]}");
}

static void test_violations(void)
{
    static const struct {
        const char *json, *field, *description;
    } scalars[] = {
        {"{\"foo\":1}", "foo", "unknown field"},
        {"{\"fInner\":{\"child\":{\"foo\":1}}}", "fInner.child.foo", "unknown field"},
        {"{\"fInner\":{\"child\":{\"quantity\":\"x\"}}}", "fInner.child.quantity",
         "must be an integer"},
        {"{\"fInner\":5}", "fInner", "must be an object"},
        {"{\"fInner\":[]}", "fInner", "must be an object"},
        {"{\"fString\":5}", "fString", "must be a string"},
        {"{\"fString\":{}}", "fString", "must be a string"},
        {"{\"fBool\":1}", "fBool", "must be a boolean"},
        {"{\"fBool\":\"true\"}", "fBool", "must be a boolean"},
        {"{\"fBytes\":5}", "fBytes", "must be a base64 string"},
        {"{\"fBytes\":\"A\"}", "fBytes", "must be a base64 string"},
        {"{\"fBytes\":\"AAE=C\"}", "fBytes", "must be a base64 string"},
        {"{\"fBytes\":\"AAEC/w=\"}", "fBytes", "must be a base64 string"},
        {"{\"fBytes\":\"AA-/\"}", "fBytes", "must be a base64 string"},
        {"{\"fBytes\":\"====\"}", "fBytes", "must be a base64 string"},
        {"{\"fBytes\":\"AA AA\"}", "fBytes", "must be a base64 string"},
        {"{\"fColor\":\"BLUE\"}", "fColor",
         "must be one of COLOR_UNSPECIFIED, COLOR_RED, COLOR_GREEN"},
        {"{\"fColor\":\"1\"}", "fColor",
         "must be one of COLOR_UNSPECIFIED, COLOR_RED, COLOR_GREEN"},
        {"{\"fColor\":true}", "fColor", "must be an enum value name or an integer"},
        {"{\"fColor\":1.5}", "fColor", "must be an integer"},
        {"{\"fColor\":2147483648}", "fColor",
         "must be an integer between -2147483648 and 2147483647"},
        {"{\"fFloat\":\"abc\"}", "fFloat", "must be a number"},
        {"{\"fFloat\":\"nan\"}", "fFloat", "must be a number"},
        {"{\"fFloat\":true}", "fFloat", "must be a number"},
        {"{\"fFloat\":1e39}", "fFloat", "must be a number within float range"},
        {"{\"fDouble\":\"1e999\"}", "fDouble", "must be a number within double range"},
        {"{\"fDouble\":\" 1\"}", "fDouble", "must be a number"},
        {"{\"fDouble\":\"0x10\"}", "fDouble", "must be a number"},
    };
    for (size_t i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++)
        expect_violation(SCALARS, scalars[i].json, scalars[i].field, scalars[i].description);

    static const struct {
        const char *json, *field, *description;
    } repeateds[] = {
        {"{\"rInner\":[{},{},{\"foo\":1}]}", "rInner[2].foo", "unknown field"},
        {"{\"rInner\":[{},{\"quantity\":true}]}", "rInner[1].quantity", "must be an integer"},
        {"{\"rInner\":[{\"child\":{\"child\":{\"code\":[]}}}]}", "rInner[0].child.child.code",
         "must be a string"},
        {"{\"rInt32\":[1,null]}", "rInt32[1]", "must not be null"},
        {"{\"rInner\":[null]}", "rInner[0]", "must not be null"},
        {"{\"rInt32\":5}", "rInt32", "must be an array"},
        {"{\"rString\":\"abc\"}", "rString", "must be an array"},
        {"{\"rString\":{}}", "rString", "must be an array"},
        {"{\"rTimestamp\":[\"2026-11-21T10:15:30Z\",\"yesterday\"]}", "rTimestamp[1]",
         "must be an RFC 3339 timestamp, e.g. \"2026-11-21T10:15:30Z\""},
    };
    for (size_t i = 0; i < sizeof(repeateds) / sizeof(repeateds[0]); i++)
        expect_violation(REPEATEDS, repeateds[i].json, repeateds[i].field,
                         repeateds[i].description);

    expect_violation(&walklist__v1__list_stock_request__descriptor, "{\"pageSize\":\"ten\"}",
                     "pageSize", "must be an integer");

    /* Decoding goes on after a violation, so all of them are reported in input order. */
    wl_error_t err;
    CHECK_INT(decode_err(&walklist__v1__create_locate_list_request__descriptor,
                         "{\"name\":5,\"codes\":[\"a\",null,\"b\",7],\"extra\":true}", &err),
              WL_EINVAL);
    CHECK_INT(err.code, WL_EINVAL);
    CHECK_STR(err.message, "invalid request");
    CHECK_INT(err.violation_count, 4);
    if (err.violation_count == 4) {
        CHECK_STR(err.violations[0].field, "name");
        CHECK_STR(err.violations[0].description, "must be a string");
        CHECK_STR(err.violations[1].field, "codes[1]");
        CHECK_STR(err.violations[1].description, "must not be null");
        CHECK_STR(err.violations[2].field, "codes[3]");
        CHECK_STR(err.violations[2].description, "must be a string");
        CHECK_STR(err.violations[3].field, "extra");
        CHECK_STR(err.violations[3].description, "unknown field");
    }

    /* More violations than wl_error_t holds. */
    char text[1024];
    size_t n = (size_t)snprintf(text, sizeof(text), "{");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "%s\"u%d\":1", i ? "," : "", i);
    snprintf(text + n, sizeof(text) - n, "}");
    CHECK_INT(decode_err(SCALARS, text, &err), WL_EINVAL);
    CHECK_INT(err.violation_count, WL_MAX_VIOLATIONS);
    CHECK_INT(err.violations_dropped, 40 - WL_MAX_VIOLATIONS);

    /* A long path is cut where a UTF-8 character starts, so the field stays valid UTF-8. */
    n = (size_t)snprintf(text, sizeof(text), "{\"fInner\":{\"x");
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(text + n, sizeof(text) - n, "\xc3\xa9");
    snprintf(text + n, sizeof(text) - n, "\":1}}");
    CHECK_INT(decode_err(SCALARS, text, &err), WL_EINVAL);
    CHECK_INT(err.violation_count, 1);
    CHECK_INT(strlen(err.violations[0].field), 62); /* "fInner.x" + 27 two-byte characters */
    json_t *field = json_string(err.violations[0].field);
    CHECK(field != NULL);
    json_decref(field);
}

static void test_integers(void)
{
    static const struct {
        const char *field;
        const char *json;
        const char *description; /* NULL: accepted */
        long long value;         /* for int32 and int64 fields */
    } cases[] = {
        {"fInt32", "2147483647", NULL, 2147483647},
        {"fInt32", "-2147483648", NULL, -2147483647LL - 1},
        {"fInt32", "2147483648", "must be an integer between -2147483648 and 2147483647", 0},
        {"fInt32", "-2147483649", "must be an integer between -2147483648 and 2147483647", 0},
        {"fInt32", "\"-5\"", NULL, -5},
        {"fInt32", "\"2147483647\"", NULL, 2147483647},
        {"fInt32", "\"2147483648\"", "must be an integer between -2147483648 and 2147483647", 0},
        {"fInt32", "1.0", NULL, 1},
        {"fInt32", "-3.0", NULL, -3},
        {"fInt32", "1e2", NULL, 100},
        {"fInt32", "-0", NULL, 0},
        {"fInt32", "\"-0\"", NULL, 0},
        {"fInt32", "1.5", "must be an integer", 0},
        {"fInt32", "\"1.0\"", "must be an integer", 0},
        {"fInt32", "\"05\"", "must be an integer", 0},
        {"fInt32", "\"+5\"", "must be an integer", 0},
        {"fInt32", "\" 5\"", "must be an integer", 0},
        {"fInt32", "\"\"", "must be an integer", 0},
        {"fInt32", "\"-\"", "must be an integer", 0},
        {"fInt32", "true", "must be an integer", 0},
        {"fInt32", "[]", "must be an integer", 0},
        {"fSint32", "-2147483649", "must be an integer between -2147483648 and 2147483647", 0},
        {"fSfixed32", "2147483648", "must be an integer between -2147483648 and 2147483647", 0},
        {"fUint32", "4294967295", NULL, 4294967295LL},
        {"fUint32", "4294967296", "must be an integer between 0 and 4294967295", 0},
        {"fUint32", "-1", "must be an integer between 0 and 4294967295", 0},
        {"fFixed32", "\"4294967296\"", "must be an integer between 0 and 4294967295", 0},
        {"fInt64", "9223372036854775807", NULL, 9223372036854775807LL},
        {"fInt64", "-9223372036854775808", NULL, -9223372036854775807LL - 1},
        {"fInt64", "\"-9223372036854775808\"", NULL, -9223372036854775807LL - 1},
        {"fInt64", "\"9223372036854775808\"",
         "must be an integer between -9223372036854775808 and 9223372036854775807", 0},
        {"fInt64", "9.3e18",
         "must be an integer between -9223372036854775808 and 9223372036854775807", 0},
        {"fInt64", "\"99999999999999999999999\"",
         "must be an integer between -9223372036854775808 and 9223372036854775807", 0},
        {"fSint64", "\"-9223372036854775809\"",
         "must be an integer between -9223372036854775808 and 9223372036854775807", 0},
        {"fSfixed64", "4.0e3", NULL, 4000},
        {"fUint64", "-1", "must be an integer between 0 and 18446744073709551615", 0},
        {"fUint64", "\"18446744073709551616\"",
         "must be an integer between 0 and 18446744073709551615", 0},
        {"fUint64", "1.8446744073709552e19",
         "must be an integer between 0 and 18446744073709551615", 0},
        {"fFixed64", "\"-1\"", "must be an integer between 0 and 18446744073709551615", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[128];
        snprintf(text, sizeof(text), "{\"%s\":%s}", cases[i].field, cases[i].json);
        if (cases[i].description != NULL) {
            expect_violation(SCALARS, text, cases[i].field, cases[i].description);
            continue;
        }
        const Scalars *m = decode_ok(SCALARS, text);
        if (m == NULL)
            continue;
        long long got = 0;
        if (strcmp(cases[i].field, "fInt32") == 0)
            got = m->f_int32;
        else if (strcmp(cases[i].field, "fUint32") == 0)
            got = m->f_uint32;
        else if (strcmp(cases[i].field, "fInt64") == 0)
            got = m->f_int64;
        else if (strcmp(cases[i].field, "fSfixed64") == 0)
            got = m->f_sfixed64;
        if (got != cases[i].value)
            FAIL("%s: got %lld, expected %lld", text, got, cases[i].value);
    }

    /* uint64 above INT64_MAX goes out as a string; as a JSON number it does not parse. */
    const Scalars *m = decode_ok(SCALARS, "{\"fUint64\":\"18446744073709551615\","
                                          "\"fFixed64\":\"9223372036854775808\"}");
    if (m != NULL) {
        CHECK(m->f_uint64 == UINT64_MAX);
        CHECK(m->f_fixed64 == UINT64_C(9223372036854775808));
        const char *text = encode(m);
        CHECK(text != NULL && strstr(text, "\"fUint64\":\"18446744073709551615\","
                                           "\"fFixed64\":\"9223372036854775808\"") != NULL);
    }
    expect_error(SCALARS, "{\"fUint64\":18446744073709551615}",
                 "malformed JSON: too big integer near '18446744073709551615' "
                 "(line 1, column 31)");
}

static void test_floats(void)
{
    const Scalars *m = decode_ok(SCALARS, "{\"fFloat\":\"NaN\",\"fDouble\":\"-Infinity\"}");
    if (m != NULL) {
        CHECK(isnan(m->f_float));
        CHECK(isinf(m->f_double) && m->f_double < 0);
        const char *text = encode(m);
        CHECK(text != NULL && strstr(text, "\"fFloat\":\"NaN\",\"fDouble\":\"-Infinity\"") != NULL);
    }
    m = decode_ok(SCALARS, "{\"fFloat\":\"1.5\",\"fDouble\":\"-2e-3\"}");
    if (m != NULL) {
        CHECK(m->f_float == 1.5f);
        CHECK(m->f_double == -2e-3);
    }
    m = decode_ok(SCALARS, "{\"fFloat\":3,\"fDouble\":\"Infinity\"}");
    if (m != NULL) {
        CHECK(m->f_float == 3.0f);
        CHECK(isinf(m->f_double) && m->f_double > 0);
    }
    /* A float goes out as its shortest decimal, read back as the same float. */
    m = decode_ok(SCALARS, "{\"fFloat\":0.1,\"fDouble\":0.1}");
    if (m != NULL) {
        CHECK(m->f_float == 0.1f);
        const char *text = encode(m);
        CHECK(text != NULL && strstr(text, "\"fFloat\":0.10000000000000001,"
                                           "\"fDouble\":0.10000000000000001") != NULL);
        const Scalars *back = decode_ok(SCALARS, text);
        CHECK(back != NULL && back->f_float == 0.1f && back->f_double == 0.1);
    }
    /* FLT_MAX goes out as the double nearest its shortest decimal, 3.4028235e38, which is just
     * above FLT_MAX, and reads back (found by tests/fuzz/fuzz_json.c): what rounds to a finite
     * float is in range, up to the midpoint between FLT_MAX and 2^128, which rounds to
     * infinity. */
    m = decode_ok(SCALARS, "{\"fFloat\":3.4028234663852886e38}");
    if (m != NULL) {
        CHECK(m->f_float == FLT_MAX);
        const char *text = encode(m);
        CHECK(text != NULL && strstr(text, "\"fFloat\":3.4028234999999999e38") != NULL);
        const Scalars *back = text ? decode_ok(SCALARS, text) : NULL;
        CHECK(back != NULL && back->f_float == FLT_MAX);
    }
    m = decode_ok(SCALARS, "{\"fFloat\":\"-3.40282356e38\"}");
    CHECK(m != NULL && m->f_float == -FLT_MAX);
    expect_violation(SCALARS, "{\"fFloat\":3.40282357e38}", "fFloat",
                     "must be a number within float range");
    expect_violation(SCALARS, "{\"fFloat\":\"-3.4028236e38\"}", "fFloat",
                     "must be a number within float range");
}

static void test_enums(void)
{
    const Scalars *m = decode_ok(SCALARS, "{\"fColor\":2}");
    CHECK(m != NULL && m->f_color == WALKLIST__TEST__COLOR__COLOR_GREEN);
    m = decode_ok(SCALARS, "{\"fColor\":\"COLOR_RED\"}");
    CHECK(m != NULL && m->f_color == WALKLIST__TEST__COLOR__COLOR_RED);
    m = decode_ok(SCALARS, "{\"fColor\":2.0}");
    CHECK(m != NULL && m->f_color == WALKLIST__TEST__COLOR__COLOR_GREEN);
    /* proto3 enums are open: an unknown number is kept and goes out as a number. */
    m = decode_ok(SCALARS, "{\"fColor\":-7}");
    if (m != NULL) {
        CHECK_INT((int32_t)m->f_color, -7);
        const char *text = encode(m);
        CHECK(text != NULL && strstr(text, "\"fColor\":-7,") != NULL);
    }
}

static void test_bytes(void)
{
    static const struct {
        const char *base64;
        const char *bytes;
        size_t len;
    } cases[] = {
        {"", "", 0},
        {"AAEC/w==", "\x00\x01\x02\xff", 4},
        {"AAEC/w", "\x00\x01\x02\xff", 4},
        {"AAEC_w", "\x00\x01\x02\xff", 4},
        {"AAEC-w==", "\x00\x01\x02\xfb", 4},
        {"+/+/", "\xfb\xff\xbf", 3},
        {"-_-_", "\xfb\xff\xbf", 3},
        {"YWI=", "ab", 2},
        {"YWI", "ab", 2},
        {"YWJj", "abc", 3},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[64];
        snprintf(text, sizeof(text), "{\"fBytes\":\"%s\"}", cases[i].base64);
        const Scalars *m = decode_ok(SCALARS, text);
        if (m == NULL)
            continue;
        CHECK_INT(m->f_bytes.len, cases[i].len);
        CHECK(m->f_bytes.len == cases[i].len &&
              (cases[i].len == 0 || memcmp(m->f_bytes.data, cases[i].bytes, cases[i].len) == 0));
    }
    /* Encoding is standard base64 with padding. */
    Scalars m = WALKLIST__TEST__SCALARS__INIT;
    m.f_bytes.data = (uint8_t *)"\xfb\xff\xbf\x01";
    m.f_bytes.len = 4;
    const char *text = encode(&m);
    CHECK(text != NULL && strstr(text, "\"fBytes\":\"+/+/AQ==\"") != NULL);
    m.f_bytes.len = 5;
    m.f_bytes.data = (uint8_t *)"hello";
    text = encode(&m);
    CHECK(text != NULL && strstr(text, "\"fBytes\":\"aGVsbG8=\"") != NULL);
}

static void test_well_known(void)
{
    const char *text = "{\"stringValue\":\"s\",\"bytesValue\":\"YQ==\",\"boolValue\":false,"
                       "\"int32Value\":-3,\"int64Value\":-9223372036854775808,"
                       "\"uint32Value\":4294967295,\"uint64Value\":\"18446744073709551615\","
                       "\"floatValue\":1.5,\"doubleValue\":\"NaN\","
                       "\"timestamp\":\"2026-11-21T10:15:30.123Z\"}";
    const WellKnown *m = decode_ok(WELL_KNOWN, text);
    if (m != NULL) {
        CHECK(m->string_value != NULL && strcmp(m->string_value->value, "s") == 0);
        CHECK(m->bytes_value != NULL && m->bytes_value->value.len == 1);
        CHECK(m->bool_value != NULL && m->bool_value->value == 0);
        CHECK(m->int32_value != NULL && m->int32_value->value == -3);
        CHECK(m->int64_value != NULL && m->int64_value->value == INT64_MIN);
        CHECK(m->uint32_value != NULL && m->uint32_value->value == UINT32_MAX);
        CHECK(m->uint64_value != NULL && m->uint64_value->value == UINT64_MAX);
        CHECK(m->float_value != NULL && m->float_value->value == 1.5f);
        CHECK(m->double_value != NULL && isnan(m->double_value->value));
        CHECK(m->timestamp != NULL && m->timestamp->seconds == 1795256130 &&
              m->timestamp->nanos == 123000000);
    }
    round_trip(WELL_KNOWN, text, NULL);
    const char *nulls = "{\"stringValue\":null,\"bytesValue\":null,\"boolValue\":null,"
                        "\"int32Value\":null,\"int64Value\":null,\"uint32Value\":null,"
                        "\"uint64Value\":null,\"floatValue\":null,\"doubleValue\":null,"
                        "\"timestamp\":null}";
    round_trip(WELL_KNOWN, nulls, NULL);
    round_trip(WELL_KNOWN, "{}", nulls);

    /* StringValue: null and absent are unset, "" is set and empty. */
    m = decode_ok(WELL_KNOWN, "{\"stringValue\":\"\"}");
    CHECK(m != NULL && m->string_value != NULL && strcmp(m->string_value->value, "") == 0);
    if (m != NULL) {
        const char *out = encode(m);
        CHECK(out != NULL && strncmp(out, "{\"stringValue\":\"\",\"bytesValue\":null", 34) == 0);
    }
    m = decode_ok(WELL_KNOWN, "{\"stringValue\":null}");
    CHECK(m != NULL && m->string_value == NULL);
    m = decode_ok(WELL_KNOWN, "{}");
    CHECK(m != NULL && m->string_value == NULL);

    expect_violation(WELL_KNOWN, "{\"stringValue\":5}", "stringValue", "must be a string");
    expect_violation(WELL_KNOWN, "{\"stringValue\":{\"value\":\"x\"}}", "stringValue",
                     "must be a string");
    expect_violation(WELL_KNOWN, "{\"int32Value\":2147483648}", "int32Value",
                     "must be an integer between -2147483648 and 2147483647");
    expect_violation(WELL_KNOWN, "{\"boolValue\":\"yes\"}", "boolValue", "must be a boolean");
    expect_violation(WELL_KNOWN, "{\"timestamp\":1795256130}", "timestamp",
                     "must be an RFC 3339 timestamp string");
    expect_violation(WELL_KNOWN, "{\"timestamp\":{\"seconds\":1}}", "timestamp",
                     "must be an RFC 3339 timestamp string");
}

static void test_timestamp_encode(void)
{
    static const struct {
        int64_t seconds;
        int32_t nanos;
        const char *json;
    } cases[] = {
        {0, 0, "\"1970-01-01T00:00:00.000Z\""},
        {1795256130, 0, "\"2026-11-21T10:15:30.000Z\""},
        {1795256130, 123000000, "\"2026-11-21T10:15:30.123Z\""},
        {1795256130, 1000000, "\"2026-11-21T10:15:30.001Z\""},
        {1795256130, 123456000, "\"2026-11-21T10:15:30.123456Z\""},
        {1795256130, 1000, "\"2026-11-21T10:15:30.000001Z\""},
        {1795256130, 123456789, "\"2026-11-21T10:15:30.123456789Z\""},
        {1795256130, 1, "\"2026-11-21T10:15:30.000000001Z\""},
        {1709251199, 999000000, "\"2024-02-29T23:59:59.999Z\""},
        {-1, 500000000, "\"1969-12-31T23:59:59.500Z\""},
        {-62135596800, 0, "\"0001-01-01T00:00:00.000Z\""},
        {253402300799, 999999999, "\"9999-12-31T23:59:59.999999999Z\""},
        {253402300800, 0, "null"},
        {-62135596801, 0, "null"},
        {0, -1, "null"},
        {0, 1000000000, "null"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
        ts.seconds = cases[i].seconds;
        ts.nanos = cases[i].nanos;
        WellKnown m = WALKLIST__TEST__WELL_KNOWN__INIT;
        m.timestamp = &ts;
        json_t *json = wl_json_encode(&m.base);
        CHECK(json != NULL);
        char *text = json_dumps(json_object_get(json, "timestamp"), JSON_ENCODE_ANY);
        CHECK_STR(text, cases[i].json);
        free(text);
        json_decref(json);
    }
}

static void test_timestamp_decode(void)
{
    static const struct {
        const char *text;
        int64_t seconds;
        int32_t nanos;
        const char *description; /* NULL: accepted */
    } cases[] = {
        {"2026-11-21T10:15:30.123Z", 1795256130, 123000000, NULL},
        {"2026-11-21T10:15:30Z", 1795256130, 0, NULL},
        {"2026-11-21t10:15:30z", 1795256130, 0, NULL},
        {"2026-11-21T10:15:30.5Z", 1795256130, 500000000, NULL},
        {"2026-11-21T10:15:30.123456789Z", 1795256130, 123456789, NULL},
        {"2026-11-21T12:15:30.123+02:00", 1795256130, 123000000, NULL},
        {"2026-11-21T04:45:30-05:30", 1795256130, 0, NULL},
        {"2026-11-22T00:15:30+14:00", 1795256130, 0, NULL},
        {"2026-11-21T10:15:30+00:00", 1795256130, 0, NULL},
        {"2024-02-29T23:59:59Z", 1709251199, 0, NULL},
        {"0001-01-01T00:00:00Z", -62135596800, 0, NULL},
        {"9999-12-31T23:59:59.999999999Z", 253402300799, 999999999, NULL},
        {"0000-12-31T23:00:00-01:00", -62135596800, 0, NULL},
        {"0001-01-01T00:00:00+00:01", 0, 0,
         "must be a timestamp between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999999Z"},
        {"9999-12-31T23:59:59-00:01", 0, 0,
         "must be a timestamp between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999999999Z"},
        {"2026-02-29T00:00:00Z", 0, 0,
         "must be an RFC 3339 timestamp, e.g. \"2026-11-21T10:15:30Z\""},
        {"2026-13-01T00:00:00Z", 0, 0,
         "must be an RFC 3339 timestamp, e.g. \"2026-11-21T10:15:30Z\""},
        {"2026-11-21 10:15:30Z", 0, 0,
         "must be an RFC 3339 timestamp, e.g. \"2026-11-21T10:15:30Z\""},
        {"2026-11-21T10:15:30", 0, 0,
         "must be an RFC 3339 timestamp, e.g. \"2026-11-21T10:15:30Z\""},
        {"2026-11-21T10:15:30.Z", 0, 0,
         "must be an RFC 3339 timestamp, e.g. \"2026-11-21T10:15:30Z\""},
        {"2026-11-21T10:15:30.1234567890Z", 0, 0,
         "must be an RFC 3339 timestamp, e.g. \"2026-11-21T10:15:30Z\""},
        {"2026-11-21T24:00:00Z", 0, 0,
         "must be an RFC 3339 timestamp, e.g. \"2026-11-21T10:15:30Z\""},
        {"2026-11-21T10:15:60Z", 0, 0,
         "must be an RFC 3339 timestamp, e.g. \"2026-11-21T10:15:30Z\""},
        {"2026-11-21T10:15:30+2:00", 0, 0,
         "must be an RFC 3339 timestamp, e.g. \"2026-11-21T10:15:30Z\""},
        {"2026-11-21T10:15:30+24:00", 0, 0,
         "must be an RFC 3339 timestamp, e.g. \"2026-11-21T10:15:30Z\""},
        {"2026-11-21T10:15:30Zjunk", 0, 0,
         "must be an RFC 3339 timestamp, e.g. \"2026-11-21T10:15:30Z\""},
        {"+2026-11-21T10:15:30Z", 0, 0,
         "must be an RFC 3339 timestamp, e.g. \"2026-11-21T10:15:30Z\""},
        {"", 0, 0, "must be an RFC 3339 timestamp, e.g. \"2026-11-21T10:15:30Z\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[128];
        snprintf(text, sizeof(text), "{\"timestamp\":\"%s\"}", cases[i].text);
        if (cases[i].description != NULL) {
            expect_violation(WELL_KNOWN, text, "timestamp", cases[i].description);
            continue;
        }
        const WellKnown *m = decode_ok(WELL_KNOWN, text);
        if (m == NULL)
            continue;
        CHECK(m->timestamp != NULL);
        if (m->timestamp == NULL)
            continue;
        if (m->timestamp->seconds != cases[i].seconds || m->timestamp->nanos != cases[i].nanos)
            FAIL("%s: got %" PRId64 ".%09" PRId32, cases[i].text, m->timestamp->seconds,
                 m->timestamp->nanos);
    }
}

static void test_oneof(void)
{
    const Choice *m = decode_ok(CHOICE, "{\"text\":\"a\"}");
    CHECK(m != NULL && m->pick_case == WALKLIST__TEST__CHOICE__PICK_TEXT &&
          strcmp(m->text, "a") == 0);
    m = decode_ok(CHOICE, "{\"number\":0}");
    CHECK(m != NULL && m->pick_case == WALKLIST__TEST__CHOICE__PICK_NUMBER && m->number == 0);
    m = decode_ok(CHOICE, "{\"inner\":{\"code\":\"x\"}}");
    CHECK(m != NULL && m->pick_case == WALKLIST__TEST__CHOICE__PICK_INNER &&
          strcmp(m->inner->code, "x") == 0);
    m = decode_ok(CHOICE, "{\"wrapped\":\"w\"}");
    CHECK(m != NULL && m->pick_case == WALKLIST__TEST__CHOICE__PICK_WRAPPED &&
          strcmp(m->wrapped->value, "w") == 0);
    /* A null member is not set, so it does not count against another member. */
    m = decode_ok(CHOICE, "{\"text\":null,\"number\":5}");
    CHECK(m != NULL && m->pick_case == WALKLIST__TEST__CHOICE__PICK_NUMBER && m->number == 5);
    m = decode_ok(CHOICE, "{\"note\":\"n\"}");
    CHECK(m != NULL && m->pick_case == WALKLIST__TEST__CHOICE__PICK__NOT_SET);

    expect_violation(CHOICE, "{\"text\":\"a\",\"number\":5}", "number",
                     "only one of text, number, inner, wrapped may be set");
    /* An invalid member still takes the oneof, so a second member is reported as well. */
    wl_error_t err;
    CHECK_INT(decode_err(CHOICE, "{\"text\":5,\"inner\":{}}", &err), WL_EINVAL);
    CHECK_INT(err.violation_count, 2);
    if (err.violation_count == 2) {
        CHECK_STR(err.violations[0].field, "text");
        CHECK_STR(err.violations[0].description, "must be a string");
        CHECK_STR(err.violations[1].field, "inner");
        CHECK_STR(err.violations[1].description,
                  "only one of text, number, inner, wrapped may be set");
    }

    /* Only the set member appears. */
    round_trip(CHOICE, "{\"note\":\"n\",\"number\":5}", "{\"number\":5,\"note\":\"n\"}");
    round_trip(CHOICE, "{\"text\":\"\"}", "{\"text\":\"\",\"note\":\"\"}");
    round_trip(CHOICE, "{\"inner\":{}}",
               "{\"inner\":{\"code\":\"\",\"quantity\":0,\"child\":null},\"note\":\"\"}");
    round_trip(CHOICE, "{}", "{\"note\":\"\"}");
}

static void test_maps(void)
{
    const char *text =
        "{\"counts\":{\"a\":1,\"\":-2},\"innerById\":{\"-5\":{\"code\":\"x\","
        "\"quantity\":0,\"child\":null},\"9223372036854775807\":{\"code\":\"\","
        "\"quantity\":1,\"child\":null}},\"flags\":{\"true\":\"yes\",\"false\":\"\"},"
        "\"colors\":{\"18446744073709551615\":\"COLOR_RED\",\"0\":\"COLOR_GREEN\"}}";
    const Maps *m = decode_ok(MAPS, text);
    if (m != NULL) {
        CHECK_INT(m->n_counts, 2);
        CHECK(m->n_counts == 2 && strcmp(m->counts[1]->key, "") == 0 && m->counts[1]->value == -2);
        CHECK(m->n_inner_by_id == 2 && m->inner_by_id[0]->key == -5 &&
              strcmp(m->inner_by_id[0]->value->code, "x") == 0);
        CHECK(m->n_flags == 2 && m->flags[0]->key == 1 && m->flags[1]->key == 0);
        CHECK(m->n_colors == 2 && m->colors[0]->key == UINT64_MAX &&
              m->colors[0]->value == WALKLIST__TEST__COLOR__COLOR_RED);
    }
    round_trip(MAPS, text, NULL);
    round_trip(MAPS, "{\"counts\":null}",
               "{\"counts\":{},\"innerById\":{},\"flags\":{},\"colors\":{}}");

    expect_violation(MAPS, "{\"innerById\":{\"05\":{}}}", "innerById[\"05\"]",
                     "map key must be a canonical decimal integer between "
                     "-9223372036854775808 and 9223372036854775807");
    expect_violation(MAPS, "{\"innerById\":{\"-0\":{}}}", "innerById[\"-0\"]",
                     "map key must be a canonical decimal integer between "
                     "-9223372036854775808 and 9223372036854775807");
    expect_violation(MAPS, "{\"colors\":{\"-1\":\"COLOR_RED\"}}", "colors[\"-1\"]",
                     "map key must be a canonical decimal integer between 0 and "
                     "18446744073709551615");
    expect_violation(MAPS, "{\"flags\":{\"1\":\"x\"}}", "flags[\"1\"]",
                     "map key must be true or false");
    expect_violation(MAPS, "{\"counts\":{\"a\":null}}", "counts[\"a\"]", "must not be null");
    expect_violation(MAPS, "{\"counts\":{\"a\":\"x\"}}", "counts[\"a\"]", "must be an integer");
    expect_violation(MAPS, "{\"innerById\":{\"1\":{\"foo\":1}}}", "innerById[\"1\"].foo",
                     "unknown field");
    expect_violation(MAPS, "{\"counts\":[]}", "counts", "must be an object");

    /* Encoding: a key repeated among the entries keeps the last value. */
    Walklist__Test__Maps__CountsEntry e1 = WALKLIST__TEST__MAPS__COUNTS_ENTRY__INIT;
    Walklist__Test__Maps__CountsEntry e2 = WALKLIST__TEST__MAPS__COUNTS_ENTRY__INIT;
    e1.key = "k";
    e1.value = 1;
    e2.key = "k";
    e2.value = 2;
    Walklist__Test__Maps__CountsEntry *entries[] = {&e1, &e2};
    Maps maps = WALKLIST__TEST__MAPS__INIT;
    maps.n_counts = 2;
    maps.counts = entries;
    CHECK_STR(encode(&maps), "{\"counts\":{\"k\":2},\"innerById\":{},\"flags\":{},\"colors\":{}}");
}

static void test_null_and_depth(void)
{
    /* A JSON null for any field leaves it at its default. */
    const Inner *inner = decode_ok(INNER, "{\"code\":null,\"quantity\":null,\"child\":null}");
    CHECK(inner != NULL && inner->code == protobuf_c_empty_string && inner->quantity == 0 &&
          inner->child == NULL);

    /* The top-level message is level 0; level WL_JSON_MAX_DEPTH is the deepest accepted. */
    char text[1024];
    for (int levels = WL_JSON_MAX_DEPTH; levels <= WL_JSON_MAX_DEPTH + 1; levels++) {
        size_t n = 0;
        for (int i = 0; i < levels; i++)
            n += (size_t)snprintf(text + n, sizeof(text) - n, "{\"child\":");
        n += (size_t)snprintf(text + n, sizeof(text) - n, "{\"quantity\":1}");
        for (int i = 0; i < levels; i++)
            n += (size_t)snprintf(text + n, sizeof(text) - n, "}");
        if (levels == WL_JSON_MAX_DEPTH) {
            inner = decode_ok(INNER, text);
            for (int i = 0; inner != NULL && i < levels; i++)
                inner = inner->child;
            CHECK(inner != NULL && inner->quantity == 1);
        } else {
            wl_error_t err;
            CHECK_INT(decode_err(INNER, text, &err), WL_EINVAL);
            CHECK_INT(err.violation_count, 1);
            CHECK_STR(err.violations[0].description, "nesting too deep");
            CHECK(strncmp(err.violations[0].field, "child.child.child.", 18) == 0);
        }
    }
}

static void test_malformed(void)
{
    const ProtobufCMessageDescriptor *desc = &walklist__v1__create_locate_list_request__descriptor;
    expect_error(desc, "{\"name\":\"a\",\"name\":\"b\"}",
                 "malformed JSON: duplicate object key near '\"name\"' (line 1, column 18)");
    expect_error(desc, "{\"name\":\"a\"} x",
                 "malformed JSON: end of file expected near 'x' (line 1, column 14)");
    expect_error(desc, "{\"name\":\"a\"}{}",
                 "malformed JSON: end of file expected near '{' (line 1, column 13)");
    expect_error(desc, "{\"name\":",
                 "malformed JSON: unexpected token near end of file (line 1, "
                 "column 8)");
    expect_error(desc, "", "malformed JSON: unexpected token near end of file (line 1, column 0)");
    expect_error(desc, "{'name':'a'}",
                 "malformed JSON: string or '}' expected near ''' (line 1, column 2)");
    expect_error(desc, "{\"name\":\"\xff\"}",
                 "malformed JSON: unable to decode byte 0xff near '\"' (line 1, column 9)");
    expect_error(desc, "{\"name\":\"\xc0\xaf\"}",
                 "malformed JSON: unable to decode byte 0xc0 near '\"' (line 1, column 9)");
    expect_error(desc, "{\"name\":\"\xed\xa0\x80\"}",
                 "malformed JSON: unable to decode byte 0xed near '\"' (line 1, column 9)");
    expect_error(desc, "{\"na\xffme\":1}",
                 "malformed JSON: unable to decode byte 0xff near '\"na' (line 1, column 4)");
    expect_error(desc, "{\"name\":\"a\\u0000b\"}",
                 "malformed JSON: \\u0000 (NUL) is not allowed in a string (line 1, column 18)");
    expect_error_at(desc, "{\"name\":\"a\0\"}", 13,
                    "malformed JSON: control character 0x0 near '\"a' (line 1, column 10)",
                    __LINE__);
    expect_error(desc, "[]", "the JSON value must be an object");
    expect_error(desc, "5", "the JSON value must be an object");
    expect_error(desc, "null", "the JSON value must be an object");
    expect_error(desc, "\"x\"", "the JSON value must be an object");

    /* The length is honoured: the text need not be NUL-terminated. */
    const char *text = "{\"name\":\"a\"}garbage";
    wl_error_t err;
    wl_error_init(&err);
    ProtobufCMessage *msg = NULL;
    CHECK_INT(wl_json_decode(desc, text, 12, &arena, &msg, &err), 0);
    CHECK(msg != NULL && strcmp(((Walklist__V1__CreateLocateListRequest *)msg)->name, "a") == 0);
}

static void test_decode_value(void)
{
    json_t *value = json_pack("{s:s,s:[s,s]}", "name", "Aisle 4", "codes", "A-1", "B-2");
    wl_error_t err;
    wl_error_init(&err);
    ProtobufCMessage *msg = NULL;
    CHECK_INT(wl_json_decode_value(&walklist__v1__create_locate_list_request__descriptor, value,
                                   &arena, &msg, &err),
              0);
    json_decref(value); /* the message must not point into the JSON value */
    const Walklist__V1__CreateLocateListRequest *req = (const void *)msg;
    CHECK(req != NULL && strcmp(req->name, "Aisle 4") == 0 && req->n_codes == 2 &&
          strcmp(req->codes[1], "B-2") == 0);

    value = json_pack("[i]", 1);
    wl_error_init(&err);
    CHECK_INT(wl_json_decode_value(&walklist__v1__create_locate_list_request__descriptor, value,
                                   &arena, &msg, &err),
              WL_EINVAL);
    CHECK(msg == NULL);
    CHECK_STR(err.message, "the JSON value must be an object");
    json_decref(value);
}

static void test_encode(void)
{
    /* EmitUnpopulated, exactly, in field-number order. */
    Small small = WALKLIST__TEST__SMALL__INIT;
    CHECK_STR(encode(&small), "{\"name\":\"\",\"pageSize\":0,\"codes\":[],\"inner\":null,"
                              "\"done\":false,\"color\":\"COLOR_UNSPECIFIED\",\"location\":null,"
                              "\"ratio\":0.0}");
    Inner inner = WALKLIST__TEST__INNER__INIT;
    inner.code = "A-1";
    Google__Protobuf__StringValue location = GOOGLE__PROTOBUF__STRING_VALUE__INIT;
    location.value = "R-01";
    char *codes[] = {"x", "y"};
    small.name = "List";
    small.page_size = 9007199254740993;
    small.n_codes = 2;
    small.codes = codes;
    small.inner = &inner;
    small.done = 1;
    small.color = WALKLIST__TEST__COLOR__COLOR_RED;
    small.location = &location;
    small.ratio = 2.5;
    CHECK_STR(encode(&small), "{\"name\":\"List\",\"pageSize\":9007199254740993,"
                              "\"codes\":[\"x\",\"y\"],\"inner\":{\"code\":\"A-1\",\"quantity\":0,"
                              "\"child\":null},\"done\":true,\"color\":\"COLOR_RED\","
                              "\"location\":\"R-01\",\"ratio\":2.5}");

    /* Key order survives jansson's own dump too. */
    json_t *json = wl_json_encode(&small.base);
    CHECK(json != NULL);
    char *dumped = json_dumps(json, JSON_COMPACT | JSON_PRESERVE_ORDER);
    CHECK(dumped != NULL && strncmp(dumped, "{\"name\":\"List\",\"pageSize\":", 26) == 0);
    free(dumped);
    json_decref(json);

    /* Invalid UTF-8 from a service goes out with U+FFFD for each invalid byte. */
    Small bad = WALKLIST__TEST__SMALL__INIT;
    bad.name = "a\xff\xc3"
               "b\xc3\xa9";
    const char *text = encode(&bad);
    CHECK(text != NULL && strncmp(text,
                                  "{\"name\":\"a\xef\xbf\xbd\xef\xbf\xbd"
                                  "b\xc3\xa9\",",
                                  20) == 0);

    /* NULL len is allowed. */
    CHECK(wl_json_encode_text(&small.base, &arena, NULL) != NULL);
}

/* The text is what jansson's compact dump writes for the same values: reals and strings of
 * every awkward kind, compared with json_dumps of json_real and json_string. */
static void test_encode_as_jansson(void)
{
    static const double reals[] = {0.0,  -0.0,    1.0,     100.0, 2.5,     0.1,     1e20,
                                   1e21, 1e-7,    -1e-300, 1e300, DBL_MAX, DBL_MIN, 123456789.0,
                                   0.3,  1.0 / 3, -2.75,   4e16,  5e-324};
    for (size_t i = 0; i < sizeof(reals) / sizeof(reals[0]); i++) {
        Small small = WALKLIST__TEST__SMALL__INIT;
        small.ratio = reals[i];
        const char *text = encode(&small);
        json_t *real = json_real(reals[i]);
        char *want = json_dumps(real, JSON_ENCODE_ANY | JSON_COMPACT);
        const char *got = text != NULL ? strstr(text, "\"ratio\":") : NULL;
        CHECK(got != NULL && want != NULL);
        if (got != NULL && want != NULL) {
            char expected[64];
            snprintf(expected, sizeof(expected), "\"ratio\":%s}", want);
            CHECK_STR(got, expected);
        }
        free(want);
        json_decref(real);
    }
    static const char *const strings[] = {"",
                                          "plain",
                                          "quote \" and \\ back",
                                          "\b\f\n\r\t",
                                          "\x01\x1f\x7f",
                                          "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\xa6",
                                          "/slash/",
                                          "\xe2\x80\xa8 line sep"};
    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
        Inner inner = WALKLIST__TEST__INNER__INIT;
        inner.code = (char *)strings[i];
        const char *text = encode(&inner);
        json_t *value = json_pack("{s:s, s:i, s:n}", "code", strings[i], "quantity", 0, "child");
        char *want = json_dumps(value, JSON_COMPACT | JSON_PRESERVE_ORDER);
        CHECK(want != NULL);
        if (want != NULL)
            CHECK_STR(text, want);
        free(want);
        json_decref(value);
    }

    /* A message larger than the first buffer is written whole. */
    enum { many = 3000 };
    static char *codes[many];
    for (size_t i = 0; i < many; i++)
        codes[i] = "SKU-0000037";
    Small big = WALKLIST__TEST__SMALL__INIT;
    big.n_codes = many;
    big.codes = codes;
    size_t len = 0;
    const char *text = wl_json_encode_text(&big.base, &arena, &len);
    CHECK(text != NULL && len == strlen(text));
    json_t *parsed = text != NULL ? json_loads(text, 0, NULL) : NULL;
    CHECK(parsed != NULL && json_array_size(json_object_get(parsed, "codes")) == many);
    json_decref(parsed);
}

static void test_walklist_messages(void)
{
    /* ExportStockResponse: an item without a location has "location":null. */
    Google__Protobuf__Timestamp generated_at = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
    generated_at.seconds = 1795256130;
    generated_at.nanos = 120000000;
    Google__Protobuf__StringValue location = GOOGLE__PROTOBUF__STRING_VALUE__INIT;
    location.value = "R-01-02";
    Walklist__V1__StockExportItem a = WALKLIST__V1__STOCK_EXPORT_ITEM__INIT;
    Walklist__V1__StockExportItem b = WALKLIST__V1__STOCK_EXPORT_ITEM__INIT;
    a.sku = "SKU-1";
    a.qty = 12;
    a.location = &location;
    b.sku = "SKU-2";
    Walklist__V1__StockExportItem *items[] = {&a, &b};
    Walklist__V1__ExportStockResponse response = WALKLIST__V1__EXPORT_STOCK_RESPONSE__INIT;
    response.n_items = 2;
    response.items = items;
    response.generated_at = &generated_at;
    response.cursor = "C";
    CHECK_STR(encode(&response),
              "{\"items\":[{\"sku\":\"SKU-1\",\"qty\":12,\"location\":\"R-01-02\"},"
              "{\"sku\":\"SKU-2\",\"qty\":0,\"location\":null}],"
              "\"generatedAt\":\"2026-11-21T10:15:30.120Z\",\"cursor\":\"C\"}");
    /* A delta's removed item carries "removed":true; the oneof leaves it out elsewhere. */
    b.change_case = WALKLIST__V1__STOCK_EXPORT_ITEM__CHANGE_REMOVED;
    b.removed = 1;
    CHECK_STR(encode(&response),
              "{\"items\":[{\"sku\":\"SKU-1\",\"qty\":12,\"location\":\"R-01-02\"},"
              "{\"sku\":\"SKU-2\",\"qty\":0,\"location\":null,\"removed\":true}],"
              "\"generatedAt\":\"2026-11-21T10:15:30.120Z\",\"cursor\":\"C\"}");
    Walklist__V1__ExportStockResponse empty = WALKLIST__V1__EXPORT_STOCK_RESPONSE__INIT;
    CHECK_STR(encode(&empty), "{\"items\":[],\"generatedAt\":null,\"cursor\":\"\"}");

    /* LocateList: a pending list has "loadedAt":null. */
    Walklist__V1__LocateList list = WALKLIST__V1__LOCATE_LIST__INIT;
    char *codes[] = {"A-1"};
    list.id = "ll_1";
    list.name = "Aisle 4";
    list.n_codes = 1;
    list.codes = codes;
    list.codes_count = 1;
    list.state = "pending";
    Google__Protobuf__Timestamp created_at = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
    created_at.seconds = 1795256130;
    list.created_at = &created_at;
    CHECK_STR(encode(&list), "{\"id\":\"ll_1\",\"name\":\"Aisle 4\",\"codes\":[\"A-1\"],"
                             "\"codesCount\":1,\"state\":\"pending\","
                             "\"createdAt\":\"2026-11-21T10:15:30.000Z\",\"loadedAt\":null}");
    round_trip(&walklist__v1__locate_list__descriptor,
               "{\"id\":\"ll_1\",\"name\":\"Aisle 4\",\"codes\":[\"A-1\"],\"codes_count\":1,"
               "\"state\":\"pending\",\"createdAt\":\"2026-11-21T12:15:30+02:00\","
               "\"loaded_at\":null}",
               "{\"id\":\"ll_1\",\"name\":\"Aisle 4\",\"codes\":[\"A-1\"],\"codesCount\":1,"
               "\"state\":\"pending\",\"createdAt\":\"2026-11-21T10:15:30.000Z\","
               "\"loadedAt\":null}");
}

static void test_out_of_memory(void)
{
    const char *text = "{\"name\":\"a\",\"codes\":[\"b\",\"c\"]}";
    const ProtobufCMessageDescriptor *desc = &walklist__v1__create_locate_list_request__descriptor;
    /* An arena that can give nothing, then one that runs out half-way through a large body. */
    wl_arena_t tiny;
    wl_arena_init(&tiny, 1);
    wl_error_t err;
    wl_error_init(&err);
    ProtobufCMessage *msg = NULL;
    CHECK_INT(wl_json_decode(desc, text, strlen(text), &tiny, &msg, &err), WL_ENOMEM);
    CHECK_INT(err.code, WL_ENOMEM);
    CHECK(msg == NULL);
    wl_arena_dispose(&tiny);

    size_t size = 64 * 1024;
    char *big = malloc(size);
    CHECK(big != NULL);
    if (big == NULL)
        return;
    size_t n = (size_t)snprintf(big, size, "{\"codes\":[");
    for (int i = 0; n + 40 < size; i++)
        n +=
            (size_t)snprintf(big + n, size - n, "%s\"code-%06d-xxxxxxxxxxxxxxx\"", i ? "," : "", i);
    n += (size_t)snprintf(big + n, size - n, "]}");
    wl_arena_t limited;
    wl_arena_init(&limited, 32 * 1024);
    wl_error_init(&err);
    CHECK_INT(wl_json_decode(desc, big, n, &limited, &msg, &err), WL_ENOMEM);
    CHECK_INT(err.code, WL_ENOMEM);
    CHECK_STR(err.message, "out of memory");
    CHECK(msg == NULL);
    wl_arena_dispose(&limited);

    /* The same body with enough memory. */
    wl_arena_init(&limited, 0);
    wl_error_init(&err);
    CHECK_INT(wl_json_decode(desc, big, n, &limited, &msg, &err), 0);
    CHECK(msg != NULL && ((Walklist__V1__CreateLocateListRequest *)msg)->n_codes > 1000);
    CHECK(wl_json_encode_text(msg, &limited, NULL) != NULL);
    /* Encoding into an arena that is full returns NULL. */
    wl_arena_t full;
    wl_arena_init(&full, 1);
    CHECK(wl_json_encode_text(msg, &full, NULL) == NULL);
    wl_arena_dispose(&full);
    wl_arena_dispose(&limited);
    free(big);
}

int main(void)
{
    wl_arena_init(&arena, 0);
    test_field_names();
    test_scalars();
    test_repeated();
    test_violations();
    test_integers();
    test_floats();
    test_enums();
    test_bytes();
    test_well_known();
    test_timestamp_encode();
    test_timestamp_decode();
    test_oneof();
    test_maps();
    test_null_and_depth();
    test_malformed();
    test_decode_value();
    test_encode();
    test_encode_as_jansson();
    test_walklist_messages();
    test_out_of_memory();
    wl_arena_dispose(&arena);
    return test_exit();
}
