/* The redaction rule for logged client text: keys replaced however they are encoded. */
#include <string.h>

#include "test.h"
#include "walklist/redact.h"

#define KEY "wlk_AbCd1234_0123456789abcdefghijklmnopqrstuvwxyzAB"

static void check(const char *text, const char *expected)
{
    char out[512];
    size_t n = wl_redact_keys(text, strlen(text), out, sizeof(out));
    CHECK_INT(n, strlen(expected));
    CHECK_STR(out, expected);
}

/* Connection strings and libpq's messages quoting them: passwords go, the rest stays. */
static void test_conninfo(void)
{
    static const struct {
        const char *text, *expected;
    } cases[] = {
        {"host=db dbname=wl", "host=db dbname=wl"},
        {"host=db password=s3cret dbname=wl", "host=db password=REDACTED dbname=wl"},
        {"host=db password = 's3 \\'cret' user=u", "host=db password = REDACTED user=u"},
        {"sslpassword=abc", "sslpassword=REDACTED"},
        {"PASSWORD=abc", "PASSWORD=REDACTED"},
        {"postgresql://app:s3cret@db:5432/wl?sslmode=require",
         "postgresql://app:REDACTED@db:5432/wl?sslmode=require"},
        {"postgres://app@db/wl?password=x&application_name=a",
         "postgres://app@db/wl?password=REDACTED&application_name=a"},
        {"postgresql://db/wl", "postgresql://db/wl"},
        {"missing \"=\" after \"postgresql://u:pw@h\" in connection info string",
         "missing \"=\" after \"postgresql://u:REDACTED@h\" in connection info string"},
        {"FATAL:  password authentication failed for user \"app\"",
         "FATAL:  password authentication failed for user \"app\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[256];
        size_t n = wl_redact_conninfo(cases[i].text, out, sizeof(out));
        CHECK_STR(out, cases[i].expected);
        CHECK_INT(n, strlen(cases[i].expected));
    }
    char tiny[12];
    CHECK_INT(wl_redact_conninfo("password=secretsecret", tiny, sizeof(tiny)), 11);
    CHECK_STR(tiny, "password=RE");
}

int main(void)
{
    test_conninfo();
    static const struct {
        const char *text, *expected;
    } cases[] = {
        {"/api/v1/locate-lists", "/api/v1/locate-lists"},
        {"/api/v1/locate-lists/" KEY, "/api/v1/locate-lists/REDACTED"},
        {"/api/v1/locate-lists%3Fapi_key=" KEY, "/api/v1/locate-lists%3Fapi_key=REDACTED"},
        {"/api/v1/locate-lists;api_key=" KEY "#x", "/api/v1/locate-lists;api_key=REDACTED#x"},
        {"/api/v1/locate-lists#api_key=" KEY, "/api/v1/locate-lists#api_key=REDACTED"},
        /* Percent-encoded, once or twice, in part or whole. */
        {"/x/%77lk%5FAbCd1234%5F0123456789abcdefghijklmnopqrstuvwxyzAB/y", "/x/REDACTED/y"},
        {"/x/%2577lk_AbCd1234_0123456789abcdefghijklmnopqrstuvwxyzAB", "/x/REDACTED"},
        {"/x/wlk_AbCd1234_%30%31%32", "/x/REDACTED"},
        /* Two keys; a key cut short; a key glued to more text. */
        {KEY "/" KEY, "REDACTED/REDACTED"},
        {"wlk_AbCd1234_0", "REDACTED"},
        {KEY "-tail", "REDACTED-tail"},
        /* Not keys: the public prefix alone, a short prefix, another case, a bad escape. */
        {"wlk_AbCd1234_", "wlk_AbCd1234_"},
        {"wlk_AbCd123_0123456789", "wlk_AbCd123_0123456789"},
        {"WLK_AbCd1234_0123456789", "WLK_AbCd1234_0123456789"},
        {"%zz%7", "%zz%7"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check(cases[i].text, cases[i].expected);

    /* Bytes after a NUL are still read, and the output never overflows. */
    const char with_nul[] = "a\0" KEY;
    char out[64];
    size_t n = wl_redact_keys(with_nul, sizeof(with_nul) - 1, out, sizeof(out));
    CHECK_INT(n, 10);
    CHECK(memcmp(out, "a\0REDACTED", 10) == 0);
    char tiny[6];
    CHECK_INT(wl_redact_keys(KEY, strlen(KEY), tiny, sizeof(tiny)), 0);
    CHECK_STR(tiny, "");
    CHECK_INT(wl_redact_keys("abcdefgh", 8, tiny, sizeof(tiny)), 5);
    CHECK_STR(tiny, "abcde");
    return test_exit();
}
