/* Name and code validation, and the split, trim and dedupe of walk-list codes, are checked here. */
#include "test.h"

#include <stdio.h>
#include <stdlib.h>

#include "walklist/codes.h"
#include "walklist/utf8.h"

#define S(lit) wl_span(lit, sizeof(lit) - 1)

/* Backing store for long test strings; they live until the program ends. */
static char pool[1 << 16];
static size_t pool_used;

/* prefix, then unit n times, then suffix. */
static wl_span_t build(const char *prefix, const char *unit, size_t n, const char *suffix)
{
    char *start = pool + pool_used;
    size_t len = 0;
    size_t unit_len = strlen(unit);
    size_t need = strlen(prefix) + unit_len * n + strlen(suffix);
    if (pool_used + need > sizeof(pool))
        abort();
    memcpy(start, prefix, strlen(prefix));
    len += strlen(prefix);
    for (size_t i = 0; i < n; i++, len += unit_len)
        memcpy(start + len, unit, unit_len);
    memcpy(start + len, suffix, strlen(suffix));
    len += strlen(suffix);
    pool_used += len;
    return wl_span(start, len);
}

static wl_span_t rep(const char *unit, size_t n)
{
    return build("", unit, n, "");
}

/* One validation outcome: description NULL means success with no violation. */
typedef struct {
    const char *what;
    wl_span_t input;
    const char *description;
} validation_case_t;

static void expect_outcome(const char *what, int rc, const wl_error_t *err, const char *field,
                           const char *description)
{
    if (description == NULL) {
        if (rc != 0 || err->violation_count != 0)
            FAIL("%s: rc %d, %zu violations (first: %s), expected success", what, rc,
                 err->violation_count, err->violation_count ? err->violations[0].description : "-");
        else
            CHECK(1);
        return;
    }
    if (rc != WL_EINVAL || err->code != WL_EINVAL || err->violation_count != 1)
        FAIL("%s: rc %d, code %d, %zu violations, expected one violation", what, rc, err->code,
             err->violation_count);
    else if (strcmp(err->violations[0].field, field) != 0 ||
             strcmp(err->violations[0].description, description) != 0)
        FAIL("%s: violation %s: \"%s\", expected %s: \"%s\"", what, err->violations[0].field,
             err->violations[0].description, field, description);
    else
        CHECK(1);
}

static const char *const NAME_LENGTH = "must be 1 to 120 characters";
static const char *const CODE_LENGTH = "must be 1 to 64 characters";
static const char *const CONTROL = "must not contain control characters";
static const char *const BAD_UTF8 = "must be valid UTF-8";

static void test_name_validate(void)
{
    const validation_case_t cases[] = {
        {"plain", S("Morning walk"), NULL},
        {"one char", S("x"), NULL},
        {"120 ASCII", rep("a", 120), NULL},
        {"121 ASCII", rep("a", 121), NAME_LENGTH},
        {"120 two-byte", rep("\xC3\xA9", 120), NULL},
        {"121 two-byte", rep("\xC3\xA9", 121), NAME_LENGTH},
        {"120 four-byte", rep("\xF0\x9F\x98\x80", 120), NULL},
        {"121 four-byte", rep("\xF0\x9F\x98\x80", 121), NAME_LENGTH},
        {"119 and surrounding spaces, not trimmed", build(" ", "a", 119, " "), NAME_LENGTH},
        {"surrounding spaces kept", S("  walk  "), NULL},
        {"empty", S(""), NAME_LENGTH},
        {"spaces", S("   "), "must not be blank"},
        {"NBSP and U+3000", S("\xC2\xA0\xE3\x80\x80"), "must not be blank"},
        {"U+2000-200A", S("\xE2\x80\x80\xE2\x80\x8A"), "must not be blank"},
        {"ZWSP is not White_Space", S("\xE2\x80\x8B"), NULL},
        {"tab", S("a\tb"), CONTROL},
        {"newline", S("a\nb"), CONTROL},
        {"tab only: control before blank", S("\t"), CONTROL},
        {"NUL", S("a\0b"), CONTROL},
        {"DEL", S("a\x7F"), CONTROL},
        {"C1 U+0080", S("a\xC2\x80"), CONTROL},
        {"C1 U+0085 NEL", S("a\xC2\x85"), CONTROL},
        {"NEL only", S("\xC2\x85"), CONTROL},
        {"C1 U+009F",
         S("\xC2\x9F"
           "a"),
         CONTROL},
        {"U+00A0 is fine inside",
         S("a\xC2\xA0"
           "b"),
         NULL},
        {"invalid byte", S("a\xFF"), BAD_UTF8},
        {"surrogate", S("\xED\xA0\x80"), BAD_UTF8},
        {"overlong", S("\xC0\xAF"), BAD_UTF8},
        {"truncated", S("abc\xE2\x82"), BAD_UTF8},
        {"too long and control: length first", build("\t", "a", 121, ""), NAME_LENGTH},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        wl_error_t err;
        wl_error_init(&err);
        int rc = wl_name_validate(cases[i].input, "name", &err);
        expect_outcome(cases[i].what, rc, &err, "name", cases[i].description);
    }
    CHECK_INT(wl_name_validate(S(""), "name", NULL), WL_EINVAL);
}

static void test_codes_split(void)
{
    static const struct {
        const char *value;
        size_t total;
        const char *pieces[6];
    } cases[] = {
        {"A,B,C", 3, {"A", "B", "C"}},
        {"A|B|C", 3, {"A", "B", "C"}},
        {"A,B|C", 3, {"A", "B", "C"}},
        {" A , B ", 2, {"A", "B"}},
        {"A,,B", 2, {"A", "B"}},
        {",|,A|,|", 1, {"A"}},
        {"", 0, {NULL}},
        {"   ", 0, {NULL}},
        {", ,|\xC2\xA0|\t", 0, {NULL}},
        {"\xC2\xA0"
         "A-1\xC2\xA0,B",
         2,
         {"A-1", "B"}},
        {"\xE2\x80\x83"
         "A|B\t",
         2,
         {"A", "B"}},
        {"A, A", 2, {"A", "A"}},
        {"x y,z", 2, {"x y", "z"}},
        {"A;B", 1, {"A;B"}},
        {"\xC3\xA9,\xE2\x82\xAC|\xF0\x9F\x98\x80",
         3,
         {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        wl_span_t value = wl_span_str(cases[i].value);
        wl_span_t out[6];
        size_t total = wl_codes_split(value, out, 6);
        if (total != cases[i].total) {
            FAIL("split \"%s\": %zu pieces, expected %zu", cases[i].value, total, cases[i].total);
            continue;
        }
        for (size_t k = 0; k < total; k++) {
            if (!wl_span_eq(out[k], wl_span_str(cases[i].pieces[k])))
                FAIL("split \"%s\": piece %zu is \"%.*s\", expected \"%s\"", cases[i].value, k,
                     (int)out[k].len, out[k].base, cases[i].pieces[k]);
            else if (out[k].base < value.base || out[k].base + out[k].len > value.base + value.len)
                FAIL("split \"%s\": piece %zu does not point into the value", cases[i].value, k);
            else
                CHECK(1);
        }
    }

    /* More pieces than room: the total still counts them all, out is not overrun. */
    wl_span_t out[3] = {{NULL, 0}, {NULL, 0}, {"sentinel", 8}};
    CHECK_INT(wl_codes_split(S("A,B|C,D"), out, 2), 4);
    CHECK(wl_span_eq(out[0], S("A")));
    CHECK(wl_span_eq(out[1], S("B")));
    CHECK(wl_span_eq(out[2], S("sentinel")));
    CHECK_INT(wl_codes_split(S("A,B|C,D"), NULL, 0), 4);
    CHECK_INT(wl_codes_split(rep("x,", 300), NULL, 0), 300);
}

/* Codes given as a '\n'-separated string keep the table readable; "\n" never occurs in them. */
static size_t codes_of(const char *lines, wl_span_t *codes, size_t cap)
{
    size_t n = 0;
    const char *start = lines;
    for (const char *p = lines;; p++) {
        if (*p != '\n' && *p != '\0')
            continue;
        if (n < cap)
            codes[n] = wl_span(start, (size_t)(p - start));
        n++;
        if (*p == '\0')
            break;
        start = p + 1;
    }
    return n;
}

static void test_codes_normalize_dedupe(void)
{
    static const struct {
        const char *codes;
        const char *unique;
    } cases[] = {
        {"A", "A"},
        {"B\nA\nB\nC\nA", "B\nA\nC"},
        {" A\nA \n\xC2\xA0"
         "A\nA\n\tA\r",
         "A"},
        {"a\nA", "a\nA"},                               /* case-sensitive */
        {"\xC3\xA9\ne\xCC\x81", "\xC3\xA9\ne\xCC\x81"}, /* no Unicode normalisation */
        {"A-1\nA-01\nA-1 ", "A-1\nA-01"},
        {"x y\nx  y", "x y\nx  y"}, /* inner spaces are kept */
        {"\xC2\x85"
         "A\xC2\x85",
         "A"}, /* NEL trimmed at the edges */
        {"A\nB\nC", "A\nB\nC"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        wl_span_t codes[8], expected[8], unique[8];
        size_t count = codes_of(cases[i].codes, codes, 8);
        size_t expected_count = codes_of(cases[i].unique, expected, 8);
        size_t unique_count = 99;
        wl_error_t err;
        wl_error_init(&err);
        int rc = wl_codes_normalize(codes, count, unique, &unique_count, &err);
        if (rc != 0 || err.violation_count != 0) {
            FAIL("normalize case %zu: rc %d, %zu violations", i, rc, err.violation_count);
            continue;
        }
        if (unique_count != expected_count) {
            FAIL("normalize case %zu: %zu unique, expected %zu", i, unique_count, expected_count);
            continue;
        }
        for (size_t k = 0; k < unique_count; k++) {
            if (!wl_span_eq(unique[k], expected[k]))
                FAIL("normalize case %zu: unique[%zu] is \"%.*s\"", i, k, (int)unique[k].len,
                     unique[k].base);
            else
                CHECK(1);
        }
    }

    /* Spans point into the caller's bytes, at the first appearance. */
    wl_span_t codes[3] = {S("  X "), S("X"), S("Y")};
    wl_span_t unique[3];
    size_t unique_count = 0;
    CHECK_INT(wl_codes_normalize(codes, 3, unique, &unique_count, NULL), 0);
    CHECK_INT(unique_count, 2);
    CHECK(unique[0].base == codes[0].base + 2 && unique[0].len == 1);
    CHECK(unique[1].base == codes[2].base);
}

/* A full list (200 codes, many repeated, some with spaces at the edges) against a plain
 * comparison with every code kept before it: the same codes, in the same order. */
static void test_codes_normalize_dedupe_many(void)
{
    enum { COUNT = 200 };
    static char text[COUNT][24];
    wl_span_t codes[COUNT], unique[COUNT], expected[COUNT];
    unsigned seed = 12345;
    for (size_t i = 0; i < COUNT; i++) {
        seed = seed * 1103515245u + 12345u;
        unsigned value = (seed >> 16) % 120;
        const char *edge = value % 7 == 0 ? " " : "";
        int len = snprintf(text[i], sizeof(text[i]), "%sSKU-%u%s", edge, value, edge);
        codes[i] = wl_span(text[i], (size_t)len);
    }
    size_t expected_count = 0;
    for (size_t i = 0; i < COUNT; i++) {
        wl_span_t code = wl_utf8_trim(codes[i]);
        bool seen = false;
        for (size_t j = 0; j < expected_count && !seen; j++)
            seen = wl_span_eq(expected[j], code);
        if (!seen)
            expected[expected_count++] = code;
    }
    size_t unique_count = 0;
    CHECK_INT(wl_codes_normalize(codes, COUNT, unique, &unique_count, NULL), 0);
    CHECK_INT(unique_count, expected_count);
    CHECK(expected_count > 60 && expected_count < COUNT);
    for (size_t k = 0; k < unique_count && k < expected_count; k++)
        CHECK(unique[k].base == expected[k].base && unique[k].len == expected[k].len);
}

typedef struct {
    const char *what;
    size_t count;
    wl_span_t entry; /* every entry, unless distinct */
    bool distinct;   /* entries "C0" .. "C<count-1>" */
    size_t unique_count;
    const char *field;
    const char *description;
} count_case_t;

static void test_codes_normalize_counts(void)
{
    static wl_span_t codes[WL_CODES_MAX + 1];
    static char names[WL_CODES_MAX + 1][24];
    static wl_span_t unique[WL_CODES_MAX + 1];
    const count_case_t cases[] = {
        {"no entries", 0, S("A"), false, 0, "codes", "must have 1 to 200 entries"},
        {"one entry", 1, S("A"), false, 1, NULL, NULL},
        {"200 distinct", 200, S(""), true, 200, NULL, NULL},
        {"200 equal: the limit counts entries as sent", 200, S("A"), false, 1, NULL, NULL},
        {"201 distinct", 201, S(""), true, 0, "codes", "must have at most 200 entries, got 201"},
        {"201 equal", 201, S("A"), false, 0, "codes", "must have at most 200 entries, got 201"},
        {"201 invalid: entries not checked", 201, S("\x01"), false, 0, "codes",
         "must have at most 200 entries, got 201"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (size_t k = 0; k < cases[i].count; k++) {
            if (cases[i].distinct) {
                snprintf(names[k], sizeof(names[k]), "C%zu", k);
                codes[k] = wl_span_str(names[k]);
            } else {
                codes[k] = cases[i].entry;
            }
        }
        size_t unique_count = 99;
        wl_error_t err;
        wl_error_init(&err);
        int rc = wl_codes_normalize(codes, cases[i].count, unique, &unique_count, &err);
        expect_outcome(cases[i].what, rc, &err, cases[i].field, cases[i].description);
        CHECK_INT(unique_count, cases[i].unique_count);
    }
}

static void test_codes_normalize_entries(void)
{
    const validation_case_t cases[] = {
        {"64 ASCII", rep("a", 64), NULL},
        {"65 ASCII", rep("a", 65), CODE_LENGTH},
        {"64 two-byte", rep("\xC3\xA9", 64), NULL},
        {"65 two-byte", rep("\xC3\xA9", 65), CODE_LENGTH},
        {"64 four-byte", rep("\xF0\x9F\x98\x80", 64), NULL},
        {"64 after trimming", build(" \xC2\xA0", "a", 64, "\xE3\x80\x80\t"), NULL},
        {"empty", S(""), CODE_LENGTH},
        {"blank", S(" \xC2\xA0 "), CODE_LENGTH},
        {"inner tab", S("A\tB"), CONTROL},
        {"inner NEL",
         S("A\xC2\x85"
           "B"),
         CONTROL},
        {"edge NEL is trimmed",
         S("\xC2\x85"
           "A\xC2\x85"),
         NULL},
        {"trailing DEL is not whitespace", S("A\x7F"), CONTROL},
        {"C1 U+0090",
         S("\xC2\x90"
           "A"),
         CONTROL},
        {"NUL", S("A\0"), CONTROL},
        {"invalid", S("A\xFF"), BAD_UTF8},
        {"surrogate", S("\xED\xB0\x80"), BAD_UTF8},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        /* The entry under test goes second, so the field path must say codes[1]. */
        wl_span_t codes[2] = {S("FIRST"), cases[i].input};
        wl_span_t unique[2];
        size_t unique_count = 99;
        wl_error_t err;
        wl_error_init(&err);
        int rc = wl_codes_normalize(codes, 2, unique, &unique_count, &err);
        expect_outcome(cases[i].what, rc, &err, "codes[1]", cases[i].description);
        CHECK_INT(unique_count, cases[i].description == NULL ? 2 : 0);
    }

    /* Every bad entry is reported, by its index as sent. */
    wl_span_t codes[5] = {S(""), S("ok"), S("\x01"), rep("x", 65), S("ok")};
    wl_span_t unique[5];
    size_t unique_count = 99;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_codes_normalize(codes, 5, unique, &unique_count, &err), WL_EINVAL);
    CHECK_INT(unique_count, 0);
    CHECK_INT(err.violation_count, 3);
    CHECK_STR(err.violations[0].field, "codes[0]");
    CHECK_STR(err.violations[1].field, "codes[2]");
    CHECK_STR(err.violations[1].description, CONTROL);
    CHECK_STR(err.violations[2].field, "codes[3]");

    /* The result reflects this call, not violations already collected in err. */
    wl_error_init(&err);
    CHECK_INT(wl_name_validate(S(""), "name", &err), WL_EINVAL);
    wl_span_t good[1] = {S("A")};
    CHECK_INT(wl_codes_normalize(good, 1, unique, &unique_count, &err), 0);
    CHECK_INT(unique_count, 1);
    CHECK_INT(err.violation_count, 1);
}

static void test_code_validate(void)
{
    static const char *const EDGE_SPACE =
        "must not start or end with whitespace (codes are never trimmed)";
    const validation_case_t cases[] = {
        {"SKU", S("SKU-1"), NULL},
        {"EAN", S("4006381333931"), NULL},
        {"inner space", S("A 1"), NULL},
        {"64", rep("Z", 64), NULL},
        {"65", rep("Z", 65), CODE_LENGTH},
        {"64 multibyte", rep("\xE2\x82\xAC", 64), NULL},
        {"65 multibyte", rep("\xE2\x82\xAC", 65), CODE_LENGTH},
        {"empty", S(""), CODE_LENGTH},
        {"leading space", S(" SKU"), EDGE_SPACE},
        {"trailing space", S("SKU "), EDGE_SPACE},
        {"space only", S(" "), EDGE_SPACE},
        {"leading NBSP", S("\xC2\xA0SKU"), EDGE_SPACE},
        {"trailing U+3000", S("SKU\xE3\x80\x80"), EDGE_SPACE},
        {"trailing tab is a control", S("SKU\t"), CONTROL},
        {"leading NEL is a control", S("\xC2\x85SKU"), CONTROL},
        {"DEL", S("S\x7FU"), CONTROL},
        {"invalid", S("\xFF"), BAD_UTF8},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        wl_error_t err;
        wl_error_init(&err);
        int rc = wl_code_validate(cases[i].input, "sku", &err);
        expect_outcome(cases[i].what, rc, &err, "sku", cases[i].description);
    }
}

static void test_text_validate(void)
{
    const struct {
        const char *what;
        wl_span_t input;
        bool required;
        const char *description;
    } cases[] = {
        {"name", S("Widget, blue"), true, NULL},
        {"200", rep("\xC3\xA9", 200), true, NULL},
        {"201", rep("\xC3\xA9", 201), true, "must be at most 200 characters"},
        {"201 optional", rep("a", 201), false, "must be at most 200 characters"},
        {"empty required", S(""), true, "must not be empty"},
        {"empty optional", S(""), false, NULL},
        {"spaces are not empty", S("   "), true, NULL},
        {"surrounding spaces kept", S(" Widget "), true, NULL},
        {"newline", S("Wid\nget"), false, CONTROL},
        {"C1", S("Wid\xC2\x9Bget"), false, CONTROL},
        {"invalid", S("Wid\xC3get"), false, BAD_UTF8},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        wl_error_t err;
        wl_error_init(&err);
        int rc =
            wl_text_validate(cases[i].input, WL_TEXT_MAX_CHARS, cases[i].required, "name", &err);
        expect_outcome(cases[i].what, rc, &err, "name", cases[i].description);
    }
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_text_validate(S("abcd"), 3, false, "label", &err), WL_EINVAL);
    CHECK_STR(err.violations[0].description, "must be at most 3 characters");
}

static void test_list_id_plausible(void)
{
    const struct {
        const char *id;
        bool plausible;
    } cases[] = {
        {"x7_Ml6u6b9bWS8GMWjiujQ", true},
        {"a", true},
        {"0123456789012345678901234567890123456789", true},   /* 40 */
        {"01234567890123456789012345678901234567890", false}, /* 41 */
        {"", false},
        {"has space", false},
        {"quote'", false},
        {"slash/", false},
        {"dot.", false},
        {"\xc3\xa4", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        CHECK_INT(wl_list_id_plausible(cases[i].id), cases[i].plausible);
}

int main(void)
{
    test_list_id_plausible();
    test_name_validate();
    test_codes_split();
    test_codes_normalize_dedupe();
    test_codes_normalize_dedupe_many();
    test_codes_normalize_counts();
    test_codes_normalize_entries();
    test_code_validate();
    test_text_validate();
    return test_exit();
}
