/* UTF-8 decoding, classes, trimming and truncation are checked against tables here. */
#include "test.h"

#include "walklist/utf8.h"

#define S(lit) lit, sizeof(lit) - 1

static wl_span_t span_of(const char *s, size_t len)
{
    return wl_span(s, len);
}

static void test_decode(void)
{
    static const struct {
        const char *bytes;
        size_t len;
        int consumed;
        uint32_t cp;
    } cases[] = {
        {S("A"), 1, 0x41},
        {S("\x00"), 1, 0x00},
        {S("\x7F"), 1, 0x7F},
        {S("\xC2\x80"), 2, 0x80},
        {S("\xC2\x85"), 2, 0x85},
        {S("\xC3\xA9xyz"), 2, 0xE9},
        {S("\xDF\xBF"), 2, 0x7FF},
        {S("\xE0\xA0\x80"), 3, 0x800},
        {S("\xE2\x82\xAC"), 3, 0x20AC},
        {S("\xED\x9F\xBF"), 3, 0xD7FF},
        {S("\xEE\x80\x80"), 3, 0xE000},
        {S("\xEF\xBF\xBF"), 3, 0xFFFF},
        {S("\xF0\x90\x80\x80"), 4, 0x10000},
        {S("\xF0\x9F\x98\x80"), 4, 0x1F600},
        {S("\xF4\x8F\xBF\xBF"), 4, 0x10FFFF},
        /* invalid */
        {"", 0, -1, 0},
        {S("\x80"), -1, 0},                 /* stray continuation */
        {S("\xBF"), -1, 0},                 /* stray continuation */
        {S("\xC0\x80"), -1, 0},             /* overlong NUL */
        {S("\xC1\xBF"), -1, 0},             /* overlong */
        {S("\xE0\x80\x80"), -1, 0},         /* overlong */
        {S("\xE0\x9F\xBF"), -1, 0},         /* overlong U+07FF */
        {S("\xED\xA0\x80"), -1, 0},         /* surrogate U+D800 */
        {S("\xED\xBF\xBF"), -1, 0},         /* surrogate U+DFFF */
        {S("\xF0\x80\x80\x80"), -1, 0},     /* overlong */
        {S("\xF0\x8F\xBF\xBF"), -1, 0},     /* overlong U+FFFF */
        {S("\xF4\x90\x80\x80"), -1, 0},     /* U+110000 */
        {S("\xF5\x80\x80\x80"), -1, 0},     /* above U+10FFFF */
        {S("\xF8\x88\x80\x80\x80"), -1, 0}, /* 5-byte form */
        {S("\xFE"), -1, 0},
        {S("\xFF"), -1, 0},
        {S("\xC3"), -1, 0},             /* truncated */
        {"\xC3\xA9", 1, -1, 0},         /* cut off by len */
        {S("\xE2\x82"), -1, 0},         /* truncated */
        {S("\xF0\x9F\x98"), -1, 0},     /* truncated */
        {S("\xC3\x41"), -1, 0},         /* bad continuation */
        {S("\xE2\x28\xA1"), -1, 0},     /* bad second byte */
        {S("\xE2\x82\x28"), -1, 0},     /* bad third byte */
        {S("\xF0\x9F\x98\x28"), -1, 0}, /* bad fourth byte */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint32_t cp = 0xDEADBEEF;
        int n = wl_utf8_decode(cases[i].bytes, cases[i].len, &cp);
        if (n != cases[i].consumed)
            FAIL("decode case %zu: consumed %d, expected %d", i, n, cases[i].consumed);
        else if (n > 0 && cp != cases[i].cp)
            FAIL("decode case %zu: U+%04" PRIX32 ", expected U+%04" PRIX32, i, cp, cases[i].cp);
        else if (n < 0 && cp != 0xDEADBEEF)
            FAIL("decode case %zu: cp written on failure", i);
        else
            CHECK(1);
    }
}

/* Reference encoder, independent of the decoder under test. */
static size_t encode(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static void test_decode_every_code_point(void)
{
    size_t wrong = 0, spaces = 0, controls = 0;
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        char buf[4];
        size_t len = encode(cp, buf);
        uint32_t got = 0;
        int n = wl_utf8_decode(buf, len, &got);
        bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
        if (surrogate ? n != -1 : (n != (int)len || got != cp)) {
            if (wrong++ < 5)
                FAIL("U+%04" PRIX32 ": decode gave %d, U+%04" PRIX32, cp, n, got);
        }
        spaces += wl_utf8_is_space(cp);
        controls += wl_utf8_is_control(cp);
    }
    CHECK_INT(wrong, 0);
    CHECK_INT(spaces, 25);
    CHECK_INT(controls, 65);
    CHECK(!wl_utf8_is_space(0x110000));
    CHECK(!wl_utf8_is_control(0x110000));
}

static void test_count(void)
{
    static const struct {
        const char *bytes;
        size_t len;
        long count;
    } cases[] = {
        {"", 0, 0},
        {S("abc"), 3},
        {S("h\xC3\xA9llo"), 5},
        {S("\xE2\x82\xAC"), 1},
        {S("\xF0\x9F\x98\x80"
           "a"),
         2},
        {S("a\0b"), 3},
        {S("abc\xFF"), -1},
        {S("abc\xC3"), -1},
        {S("\xED\xA0\x80"), -1},
        {S("\x80"
           "abc"),
         -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        long n = wl_utf8_count(span_of(cases[i].bytes, cases[i].len));
        if (n != cases[i].count)
            FAIL("count case %zu: %ld, expected %ld", i, n, cases[i].count);
        else
            CHECK(1);
    }
}

static void test_classes(void)
{
    static const struct {
        uint32_t cp;
        bool control;
        bool space;
    } cases[] = {
        {0x0000, true, false},  {0x0008, true, false},    {0x0009, true, true},
        {0x000A, true, true},   {0x000D, true, true},     {0x000E, true, false},
        {0x001F, true, false},  {0x0020, false, true},    {0x0021, false, false},
        {0x007E, false, false}, {0x007F, true, false},    {0x0080, true, false},
        {0x0084, true, false},  {0x0085, true, true},     {0x0086, true, false},
        {0x009F, true, false},  {0x00A0, false, true},    {0x00A1, false, false},
        {0x1680, false, true},  {0x167F, false, false},   {0x1FFF, false, false},
        {0x2000, false, true},  {0x200A, false, true},    {0x200B, false, false},
        {0x2027, false, false}, {0x2028, false, true},    {0x2029, false, true},
        {0x202A, false, false}, {0x202F, false, true},    {0x205F, false, true},
        {0x2060, false, false}, {0x3000, false, true},    {0x3001, false, false},
        {0xFEFF, false, false}, {0x10FFFF, false, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (wl_utf8_is_control(cases[i].cp) != cases[i].control)
            FAIL("U+%04" PRIX32 ": is_control wrong", cases[i].cp);
        else if (wl_utf8_is_space(cases[i].cp) != cases[i].space)
            FAIL("U+%04" PRIX32 ": is_space wrong", cases[i].cp);
        else
            CHECK(1);
    }
}

static void test_trim(void)
{
    static const struct {
        const char *bytes;
        size_t len;
        size_t skip;    /* bytes trimmed at the start */
        size_t out_len; /* bytes kept */
    } cases[] = {
        {"", 0, 0, 0},
        {S("abc"), 0, 3},
        {S("  abc  "), 2, 3},
        {S("\t\n\v\f\r abc \r\n"), 6, 3},
        {S("\xC2\xA0"
           "abc"
           "\xC2\xA0"),
         2, 3}, /* NBSP */
        {S("\xE3\x80\x80"
           "abc"
           "\xE2\x80\xAF"),
         3, 3}, /* U+3000, U+202F */
        {S("\xC2\x85"
           "abc"
           "\xC2\x85"),
         2, 3}, /* NEL is White_Space */
        {S("\xE1\x9A\x80"
           "a b"
           "\xE2\x80\x8A"),
         3, 3},                                             /* inner space kept */
        {S("\xE2\x80\xA8\xE2\x80\xA9x\xE2\x81\x9F"), 6, 1}, /* U+2028, 2029, 205F */
        {S("\xE2\x80\x8B"
           "abc"),
         0, 6}, /* ZWSP is not White_Space */
        {S("\xEF\xBB\xBF"
           "abc"),
         0, 6}, /* nor is the BOM */
        {S("   "), 3, 0},
        {S("\xC2\xA0 \xC2\xA0"), 5, 0},
        {S("\xC3\xA9"), 0, 2},
        {S("a\0 "), 0, 2}, /* NUL is not whitespace */
        /* invalid UTF-8: only ASCII whitespace goes */
        {S(" \xC2\xA0\xFF "), 1, 3},
        {S(" abc\xC3 "), 1, 4},
        {S("\xA0 x"), 0, 3},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        wl_span_t in = span_of(cases[i].bytes, cases[i].len);
        wl_span_t out = wl_utf8_trim(in);
        size_t skip = (size_t)(out.base - in.base);
        if (skip != cases[i].skip || out.len != cases[i].out_len)
            FAIL("trim case %zu: skip %zu len %zu, expected skip %zu len %zu", i, skip, out.len,
                 cases[i].skip, cases[i].out_len);
        else
            CHECK(1);
    }
}

static void test_truncate(void)
{
    static const struct {
        const char *bytes;
        size_t len;
        size_t max_bytes;
        size_t expected;
    } cases[] = {
        {"", 0, 0, 0},
        {"", 0, 5, 0},
        {S("abc"), 10, 3},
        {S("abc"), 3, 3},
        {S("abc"), 2, 2},
        {S("abc"), 0, 0},
        {S("ab\xC3\xA9"), 4, 4},
        {S("ab\xC3\xA9"), 3, 2},
        {S("ab\xC3\xA9"), 2, 2},
        {S("\xE2\x82\xAC"), 1, 0},
        {S("\xE2\x82\xAC"), 2, 0},
        {S("\xE2\x82\xAC"), 3, 3},
        {S("a\xF0\x9F\x98\x80"
           "b"),
         1, 1},
        {S("a\xF0\x9F\x98\x80"
           "b"),
         2, 1},
        {S("a\xF0\x9F\x98\x80"
           "b"),
         3, 1},
        {S("a\xF0\x9F\x98\x80"
           "b"),
         4, 1},
        {S("a\xF0\x9F\x98\x80"
           "b"),
         5, 5},
        {S("a\xF0\x9F\x98\x80"
           "b"),
         6, 6},
        {S("\xC3\xA9\xC3\xA9"), 3, 2},
        /* invalid UTF-8 */
        {S("ab\x80\x80\x80\x80"), 4, 4}, /* no lead byte within reach */
        {S("a\xC3\xC3\xA9"), 2, 2},      /* the lead byte was dangling already */
        {S("a\xE2\x82"
           "b"),
         2, 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = wl_utf8_truncate(span_of(cases[i].bytes, cases[i].len), cases[i].max_bytes);
        if (n != cases[i].expected)
            FAIL("truncate case %zu: %zu, expected %zu", i, n, cases[i].expected);
        else
            CHECK(1);
    }
}

/* On valid text, every cut is the largest code point boundary not above max_bytes. */
static void test_truncate_every_cut(void)
{
    static const char text[] = "N\xC3\xA4me \xE2\x82\xAC \xF0\x9F\x98\x80 \xE6\x97\xA5\xE6\x9C\xAC";
    wl_span_t s = wl_span(text, sizeof(text) - 1);
    for (size_t max = 0; max <= s.len + 1; max++) {
        size_t n = wl_utf8_truncate(s, max);
        size_t boundary = 0;
        for (size_t i = 0; i <= s.len && i <= max; i++) {
            if (i == s.len || (text[i] & 0xC0) != 0x80)
                boundary = i;
        }
        if (n != boundary || wl_utf8_count(wl_span(text, n)) < 0)
            FAIL("truncate at %zu: %zu, expected %zu", max, n, boundary);
        else
            CHECK(1);
    }
}

int main(void)
{
    test_decode();
    test_decode_every_code_point();
    test_count();
    test_classes();
    test_trim();
    test_truncate();
    test_truncate_every_cut();
    return test_exit();
}
