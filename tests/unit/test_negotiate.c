/* Accept-Encoding and If-None-Match as RFC 9110 reads them (sections 12.5.3, 13.1.2). */
#include "http/negotiate.h"

#include "test.h"

static void test_gzip(void)
{
    static const struct {
        const char *value;
        bool gzip;
    } cases[] = {
        {NULL, false},
        {"", false},
        {"gzip", true},
        {"GZip", true},
        {"x-gzip", true},
        {"gzip, deflate, br", true},
        {"deflate, gzip;q=1.0, *;q=0.5", true},
        {" gzip ; q=0.001 ", true},
        {"gzip;q=0", false},
        {"gzip;q=0.0", false},
        {"gzip;q=0.000", false},
        {"gzip;Q=0", false},
        {"gzip;q=0, *", false}, /* the explicit entry wins over "*" */
        {"*", true},
        {"*;q=0", false},
        {"br;q=1, *;q=0.2", true},
        {"identity", false},
        {"br, deflate", false},
        {"identity;q=1, gzip;q=0.5", false},
        {"identity;q=0.5, gzip", true},
        {"gzip;q=0.5, identity;q=0.5", true},
        {"identity;q=0, gzip;q=0.1", true},
        {"*;q=0.5, identity;q=0.8", false},
        {"gzip;q=2", false}, /* not a qvalue: the element is ignored */
        {"gzip;q=0.1234", false},
        {"gzip;q=1.001", false},
        {"gzip;q=", false},
        {"gzip;q=x, br", false},
        {"gzip;level=9", true}, /* other parameters are ignored */
        {"gzip;q=\"1\"", false},
        {",, gzip ,", true},
        {"gzipx", false},
        {"\"gzip\"", false},
        {"gzip garbage", false},
        {"garbage gzip, gzip;q=0.3", true},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bool got = wl_negotiate_gzip(cases[i].value);
        if (got != cases[i].gzip)
            FAIL("wl_negotiate_gzip(%s) is %d", cases[i].value ? cases[i].value : "NULL", got);
        else
            test_checks++;
    }
}

static void test_none_match(void)
{
    static const struct {
        const char *value;
        const char *etag;
        bool match;
    } cases[] = {
        {NULL, "\"1-2\"", false},
        {"", "\"1-2\"", false},
        {"\"1-2\"", "\"1-2\"", true},
        {"W/\"1-2\"", "\"1-2\"", true}, /* weak comparison */
        {"\"1-2\"", "W/\"1-2\"", true},
        {"\"1-3\"", "\"1-2\"", false},
        {"\"1-2-gzip\"", "\"1-2\"", false},
        {"\"1-2\"", "\"1-2-gzip\"", false},
        {"\"a\", \"1-2\"", "\"1-2\"", true},
        {"\"a\",W/\"1-2\" ,\"b\"", "\"1-2\"", true},
        {" , ,\"1-2\",", "\"1-2\"", true}, /* empty list elements */
        {"\"a\", \"b\"", "\"1-2\"", false},
        {"*", "\"1-2\"", true},
        {" * ", "\"1-2\"", true},
        {"\"\"", "\"1-2\"", false},
        {"1-2", "\"1-2\"", false},       /* not quoted: not an entity-tag */
        {"w/\"1-2\"", "\"1-2\"", false}, /* "W/" is case-sensitive */
        {"\"1-2", "\"1-2\"", false},
        {"\"1-2\" \"1-2\"", "\"1-2\"", false},  /* no comma between */
        {"\"1-2\", garbage", "\"1-2\"", false}, /* an invalid field matches nothing */
        {"\"1 2\"", "\"1 2\"", false},          /* a space is not an etagc */
        {"\"\xc3\xa4\"", "\"\xc3\xa4\"", true}, /* obs-text */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bool got = wl_negotiate_none_match(cases[i].value, cases[i].etag);
        if (got != cases[i].match)
            FAIL("wl_negotiate_none_match(%s, %s) is %d", cases[i].value ? cases[i].value : "NULL",
                 cases[i].etag, got);
        else
            test_checks++;
    }
}

static void check_media(const char *value, wl_media_t expected, bool expected_charset)
{
    bool charset = !expected_charset;
    CHECK_INT(wl_negotiate_content_type(value, &charset), expected);
    if (expected != WL_MEDIA_OTHER)
        CHECK_INT(charset, expected_charset);
}

/* One reading of Content-Type for REST (JSON), Connect (JSON or proto) and devices (proto). */
static void test_content_type(void)
{
    check_media("application/json", WL_MEDIA_JSON, false);
    check_media("Application/JSON", WL_MEDIA_JSON, false);
    check_media(" application/json ", WL_MEDIA_JSON, false);
    check_media("application/json; charset=utf-8", WL_MEDIA_JSON, true);
    check_media("application/json;charset=\"UTF-8\"", WL_MEDIA_JSON, true);
    check_media("application/json; CHARSET=Utf-8 ; v=1", WL_MEDIA_JSON, true);
    check_media("application/json; v=1", WL_MEDIA_JSON, false);
    check_media("application/json; charset=latin1", WL_MEDIA_OTHER, false);
    check_media("application/json; charset=utf-16", WL_MEDIA_OTHER, false);
    check_media("application/json; charset=\"utf-8", WL_MEDIA_OTHER, false);
    check_media("application/json;", WL_MEDIA_OTHER, false);
    check_media("application/json; charset", WL_MEDIA_OTHER, false);
    check_media("application/jsonx", WL_MEDIA_OTHER, false);
    check_media("text/json", WL_MEDIA_OTHER, false);
    check_media("application/proto", WL_MEDIA_PROTO, false);
    check_media("\tapplication/PROTO\t", WL_MEDIA_PROTO, false);
    check_media("application/proto; charset=utf-8", WL_MEDIA_OTHER, false);
    check_media("application/protobuf", WL_MEDIA_OTHER, false);
    check_media("", WL_MEDIA_OTHER, false);
    CHECK_INT(wl_negotiate_content_type(NULL, NULL), WL_MEDIA_OTHER);
}

int main(void)
{
    test_gzip();
    test_none_match();
    test_content_type();
    return test_exit();
}
