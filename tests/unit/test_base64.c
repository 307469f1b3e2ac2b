/* Base64: both alphabets, padded or not, and the two ways of reading it. */
#include "test.h"

#include <string.h>

#include "walklist/base64.h"

static void check_encode(const char *bytes, wl_base64_alphabet_t alphabet, bool padded,
                         const char *expected)
{
    char out[64];
    size_t len = strlen(bytes);
    size_t n = wl_base64_encode((const unsigned char *)bytes, len, alphabet, padded, out);
    CHECK_STR(out, expected);
    CHECK_INT(n, strlen(expected));
    CHECK_INT(wl_base64_encoded_len(len, padded), strlen(expected));
}

static bool decodes(const char *text, wl_base64_decoding_t kind, const char *expected)
{
    unsigned char out[64];
    size_t n = 0;
    if (!wl_base64_decode(text, strlen(text), kind, out, &n))
        return false;
    return expected != NULL && n == strlen(expected) && memcmp(out, expected, n) == 0;
}

int main(void)
{
    /* RFC 4648 section 10. */
    check_encode("", WL_BASE64_STANDARD, true, "");
    check_encode("f", WL_BASE64_STANDARD, true, "Zg==");
    check_encode("fo", WL_BASE64_STANDARD, true, "Zm8=");
    check_encode("foo", WL_BASE64_STANDARD, true, "Zm9v");
    check_encode("foobar", WL_BASE64_STANDARD, true, "Zm9vYmFy");
    check_encode("fo", WL_BASE64_STANDARD, false, "Zm8");
    check_encode("\xfb\xff", WL_BASE64_STANDARD, true, "+/8=");
    check_encode("\xfb\xff", WL_BASE64_URL, false, "-_8");

    CHECK(decodes("Zm9vYmFy", WL_BASE64_DECODE_LENIENT, "foobar"));
    CHECK(decodes("Zg==", WL_BASE64_DECODE_LENIENT, "f"));
    CHECK(decodes("Zg", WL_BASE64_DECODE_LENIENT, "f"));
    CHECK(decodes("+/8=", WL_BASE64_DECODE_LENIENT, "\xfb\xff"));
    CHECK(decodes("-_8", WL_BASE64_DECODE_LENIENT, "\xfb\xff"));
    CHECK(!decodes("+_8=", WL_BASE64_DECODE_LENIENT, NULL)); /* both alphabets */
    CHECK(!decodes("Zg=", WL_BASE64_DECODE_LENIENT, NULL));  /* padding to no multiple of 4 */
    CHECK(!decodes("Z", WL_BASE64_DECODE_LENIENT, NULL));    /* a length no encoding has */
    CHECK(!decodes("Zm9v!", WL_BASE64_DECODE_LENIENT, NULL));

    CHECK(decodes("-_8", WL_BASE64_DECODE_URL_CANONICAL, "\xfb\xff"));
    CHECK(decodes("Zm8", WL_BASE64_DECODE_URL_CANONICAL, "fo"));
    CHECK(!decodes("Zm9", WL_BASE64_DECODE_URL_CANONICAL, NULL));  /* unused bits set */
    CHECK(!decodes("Zm8=", WL_BASE64_DECODE_URL_CANONICAL, NULL)); /* no padding */
    CHECK(!decodes("+/8", WL_BASE64_DECODE_URL_CANONICAL, NULL));  /* standard alphabet */
    return test_exit();
}
