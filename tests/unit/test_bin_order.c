/* Natural bin order and its sort key are checked here, against examples and random codes. */
#include "test.h"

#include <stdlib.h>

#include "domain/bin_order.h"

#define S(lit) wl_span(lit, sizeof(lit) - 1)

static int sign(int v)
{
    return (v > 0) - (v < 0);
}

/* bytea order: memcmp over the common length, a proper prefix first. */
static int key_compare(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len)
{
    size_t common = a_len < b_len ? a_len : b_len;
    int c = common ? memcmp(a, b, common) : 0;
    if (c != 0)
        return sign(c);
    return (a_len > b_len) - (a_len < b_len);
}

/* Key of a code in a heap buffer of exactly WL_BIN_SORT_KEY_MAX, so ASan sees any overrun. */
static uint8_t *key_of(wl_span_t code, size_t *len)
{
    size_t cap = WL_BIN_SORT_KEY_MAX(code.len);
    uint8_t *key = malloc(cap);
    if (key == NULL)
        abort();
    *len = wl_bin_sort_key(code, key, cap);
    if (*len > cap)
        abort();
    return key;
}

/* Checks compare, its antisymmetry, equality and the key order for one pair. */
static bool check_pair(wl_span_t a, wl_span_t b, int expected)
{
    int ab = sign(wl_bin_compare(a, b));
    int ba = sign(wl_bin_compare(b, a));
    size_t a_len, b_len;
    uint8_t *a_key = key_of(a, &a_len);
    uint8_t *b_key = key_of(b, &b_len);
    int keys = key_compare(a_key, a_len, b_key, b_len);
    free(a_key);
    free(b_key);
    bool ok = ab == expected && ba == -expected && keys == expected &&
              (expected == 0) == wl_span_eq(a, b);
    if (!ok)
        FAIL("\"%.*s\" vs \"%.*s\": compare %d, reverse %d, keys %d, expected %d", (int)a.len,
             a.base, (int)b.len, b.base, ab, ba, keys, expected);
    else
        CHECK(1);
    return ok;
}

static void test_examples(void)
{
    static const struct {
        const char *a;
        const char *b;
        int order;
    } cases[] = {
        {"A-2", "A-10", -1},
        {"A-2", "A-02", -1},
        {"A-02", "A-10", -1},
        {"A-9", "A-10-1", -1},
        {"B1", "A99", 1},
        {"a1", "A1", 1},
        {"A", "A1", -1},
        {"A1", "A1B", -1},
        {"1", "01", -1},
        {"0", "00", -1},
        {"00", "1", -1},
        {"0", "1", -1},
        {"9", "10", -1},
        {"9A", "10", -1},
        {"A1C", "A01B", -1}, /* the shorter run decides before the next run is looked at */
        {"A1B", "A01A", -1},
        {"A1", "A-1", -1}, /* "A" is a proper prefix of "A-" */
        {"A-", "A-1", -1}, /* fewer runs first */
        {"A-1", "A.1", -1},
        {"1", "A", -1}, /* digit run against other run: by first byte */
        {"-1", "1", -1},
        {"~", "9", 1},
        {"/", "0", -1},
        {":", "9", 1},
        {"Z1",
         "\xC3\x84"
         "1",
         -1},
        {"", "A", -1},
        {"", "0", -1},
        {"", "", 0},
        {"A-1", "A-1", 0},
        {"007", "007", 0},
        {"99999999999999999999", "100000000000000000000", -1},
        {"123456789012345678901234567890", "123456789012345678901234567891", -1},
        {"R01-S002-B0003", "R1-S2-B3", 1},
        {"R1-S2-B3", "R1-S2-B03", -1},
        {"R1-S10", "R1-S9-B1", 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_pair(wl_span_str(cases[i].a), wl_span_str(cases[i].b), cases[i].order);

    /* Bytes outside codes' alphabet still order totally. */
    check_pair(S("A"), S("A\0"), -1);
    check_pair(S("A\0"), S("A\x01"), -1);
    check_pair(S("A1"),
               S("A\0"
                 "1"),
               -1);
    check_pair(S("A\0"
                 "1"),
               S("A\0\0"), -1);
    check_pair(S("\0"), S("0"), -1);
    check_pair(S("\xFF"), S("9"), 1);
    check_pair(S("A\xFF"), S("A\0"), 1);
}

static int compare_codes(const void *a, const void *b)
{
    return wl_bin_compare(wl_span_str(*(const char *const *)a),
                          wl_span_str(*(const char *const *)b));
}

static void test_sorted_list(void)
{
    static const char *const sorted[] = {
        "0",  "00",  "1",   "01",   "2",   "10",   "A",      "A1", "A1B", "A01",
        "A2", "A-1", "A-2", "A-02", "A-9", "A-10", "A-10-1", "B1", "a1",
    };
    enum { N = sizeof(sorted) / sizeof(sorted[0]) };
    const char *shuffled[N];
    for (size_t i = 0; i < N; i++)
        shuffled[i] = sorted[(i * 7 + 3) % N]; /* 7 and 19 are coprime: a permutation */
    qsort(shuffled, N, sizeof(shuffled[0]), compare_codes);
    for (size_t i = 0; i < N; i++)
        CHECK_STR(shuffled[i], sorted[i]);
    for (size_t i = 0; i + 1 < N; i++)
        check_pair(wl_span_str(sorted[i]), wl_span_str(sorted[i + 1]), -1);
}

/* The stored encoding, pinned: keys already in the database must keep their meaning. */
static void test_key_bytes(void)
{
#define BYTES(lit) lit, sizeof(lit) - 1
    static const struct {
        const char *code;
        size_t code_len;
        const char *key;
        size_t key_len;
    } cases[] = {
        {BYTES(""), BYTES("")},
        {BYTES("A"), BYTES("A\0")},
        {BYTES("A-10"), BYTES("A-\0"
                              "0\0\x02"
                              "10\0\x02")},
        {BYTES("A-02"), BYTES("A-\0"
                              "0\0\x01"
                              "2\0\x02")},
        {BYTES("007B"), BYTES("0\0\x01"
                              "7\0\x03"
                              "B\0")},
        {BYTES("00"), BYTES("0\0\0\0\x02")},
        {BYTES("A\0"), BYTES("A\0\xFF\0")},
    };
#undef BYTES
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint8_t key[64];
        size_t len = wl_bin_sort_key(wl_span(cases[i].code, cases[i].code_len), key, sizeof(key));
        if (len != cases[i].key_len || memcmp(key, cases[i].key, len) != 0)
            FAIL("key of case %zu: length %zu, expected %zu", i, len, cases[i].key_len);
        else
            CHECK(1);
    }
}

static void test_key_capacity(void)
{
    wl_span_t code = S("AB-0012-X");
    uint8_t full[64];
    size_t needed = wl_bin_sort_key(code, full, sizeof(full));
    CHECK_INT(needed, 14); /* "AB-" 0, 0x30 count "12" length, "-X" 0 */
    CHECK(needed <= WL_BIN_SORT_KEY_MAX(code.len));
    CHECK_INT(wl_bin_sort_key(code, NULL, 0), needed);
    for (size_t cap = 0; cap <= needed; cap++) {
        uint8_t out[64];
        memset(out, 0xAB, sizeof(out));
        size_t len = wl_bin_sort_key(code, out, cap);
        bool untouched = true;
        for (size_t k = cap; k < sizeof(out); k++)
            untouched = untouched && out[k] == 0xAB;
        if (len != needed || !untouched || memcmp(out, full, cap) != 0)
            FAIL("cap %zu: length %zu, bytes past cap %s", cap, len,
                 untouched ? "untouched" : "written");
        else
            CHECK(1);
    }
    /* The bound is reached, and never passed, by one-byte runs. */
    CHECK(wl_bin_sort_key(S("1"), NULL, 0) <= WL_BIN_SORT_KEY_MAX(1));
    CHECK(wl_bin_sort_key(S("\0"), NULL, 0) <= WL_BIN_SORT_KEY_MAX(1));
    CHECK(wl_bin_sort_key(S("1\0"
                            "1\0"
                            "1"),
                          NULL, 0) <= WL_BIN_SORT_KEY_MAX(5));
}

/* Digit runs past 0xFFFF digits switch to the escaped count and must still order. */
static void test_long_digit_runs(void)
{
    static const size_t lengths[] = {1, 65534, 65535, 65536, 70000};
    enum { N = sizeof(lengths) / sizeof(lengths[0]) };
    char *ones[N], *zeros[N];
    for (size_t i = 0; i < N; i++) {
        ones[i] = malloc(lengths[i] + 2);
        zeros[i] = malloc(lengths[i] + 2);
        if (ones[i] == NULL || zeros[i] == NULL)
            abort();
        ones[i][0] = zeros[i][0] = 'A';
        memset(ones[i] + 1, '1', lengths[i]);
        memset(zeros[i] + 1, '0', lengths[i]);
    }
    for (size_t i = 0; i < N; i++) {
        for (size_t j = 0; j < N; j++) {
            int by_length = (i > j) - (i < j);
            check_pair(wl_span(ones[i], lengths[i] + 1), wl_span(ones[j], lengths[j] + 1),
                       by_length);
            check_pair(wl_span(zeros[i], lengths[i] + 1), wl_span(zeros[j], lengths[j] + 1),
                       by_length);
            check_pair(wl_span(zeros[i], lengths[i] + 1), wl_span(ones[j], lengths[j] + 1), -1);
        }
    }
    for (size_t i = 0; i < N; i++) {
        free(ones[i]);
        free(zeros[i]);
    }
}

static uint64_t rng_state = 0x5DEECE66DULL;

static uint64_t next_random(void)
{
    /* xorshift64: the same sequence on every platform, unlike rand(). */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

enum { CODE_CAP = 16 };

typedef struct {
    char bytes[CODE_CAP];
    size_t len;
} code_t;

static void random_code(code_t *c, const char *alphabet, size_t alphabet_len)
{
    c->len = 0;
    size_t target = 1 + next_random() % 12;
    while (c->len < target) {
        if (next_random() % 8 == 0) {
            size_t zeros = 1 + next_random() % 3;
            while (zeros-- > 0 && c->len < target)
                c->bytes[c->len++] = '0';
        } else {
            c->bytes[c->len++] = alphabet[next_random() % alphabet_len];
        }
    }
}

/* A nearby code, so that many pairs share their first runs and differ late. */
static void mutate(const code_t *from, code_t *to, const char *alphabet, size_t alphabet_len)
{
    *to = *from;
    size_t at = next_random() % (to->len + 1);
    char c = alphabet[next_random() % alphabet_len];
    switch (next_random() % 4) {
    case 0: /* replace */
        if (at < to->len)
            to->bytes[at] = c;
        break;
    case 1: /* insert, often a leading zero */
        if (to->len < CODE_CAP) {
            memmove(to->bytes + at + 1, to->bytes + at, to->len - at);
            to->bytes[at] = next_random() % 2 ? '0' : c;
            to->len++;
        }
        break;
    case 2: /* delete */
        if (at < to->len && to->len > 1) {
            memmove(to->bytes + at, to->bytes + at + 1, to->len - at - 1);
            to->len--;
        }
        break;
    default: /* append */
        if (to->len < CODE_CAP)
            to->bytes[to->len++] = c;
        break;
    }
}

/* Same order as wl_bin_compare, found by a second, simpler route: the keys. */
static void test_random_pairs(const char *alphabet, size_t alphabet_len, int pairs)
{
    int mismatches = 0;
    for (int i = 0; i < pairs && mismatches < 10; i++) {
        code_t a, b;
        random_code(&a, alphabet, alphabet_len);
        if (i % 2)
            mutate(&a, &b, alphabet, alphabet_len);
        else
            random_code(&b, alphabet, alphabet_len);
        wl_span_t as = wl_span(a.bytes, a.len), bs = wl_span(b.bytes, b.len);
        int expected = sign(wl_bin_compare(as, bs));
        if (!check_pair(as, bs, expected))
            mismatches++;
        if (expected == 0 && !wl_span_eq(as, bs))
            mismatches++;
    }
    CHECK_INT(mismatches, 0);
}

static int compare_code_t(const void *a, const void *b)
{
    const code_t *x = a, *y = b;
    return wl_bin_compare(wl_span(x->bytes, x->len), wl_span(y->bytes, y->len));
}

/* Sorting by compare gives a sequence whose keys never decrease: compare is a consistent order. */
static void test_random_sort(const char *alphabet, size_t alphabet_len)
{
    enum { N = 3000 };
    static code_t codes[N];
    for (size_t i = 0; i < N; i++) {
        if (i > 0 && next_random() % 2)
            mutate(&codes[next_random() % i], &codes[i], alphabet, alphabet_len);
        else
            random_code(&codes[i], alphabet, alphabet_len);
    }
    qsort(codes, N, sizeof(codes[0]), compare_code_t);
    int bad = 0;
    for (size_t i = 0; i + 1 < N; i++) {
        size_t a_len, b_len;
        wl_span_t a = wl_span(codes[i].bytes, codes[i].len);
        wl_span_t b = wl_span(codes[i + 1].bytes, codes[i + 1].len);
        uint8_t *a_key = key_of(a, &a_len);
        uint8_t *b_key = key_of(b, &b_len);
        int keys = key_compare(a_key, a_len, b_key, b_len);
        if (keys > 0 || (keys == 0) != wl_span_eq(a, b) || wl_bin_compare(a, b) > 0)
            bad++;
        free(a_key);
        free(b_key);
    }
    CHECK_INT(bad, 0);
}

int main(void)
{
    static const char codes_alphabet[] = "0123456789AaBz-.";
    static const char any_bytes[] = "01239AZaz-/:\x00\x01\xFF\xC3\x84";
    test_examples();
    test_sorted_list();
    test_key_bytes();
    test_key_capacity();
    test_long_digit_runs();
    test_random_pairs(codes_alphabet, sizeof(codes_alphabet) - 1, 50000);
    test_random_pairs(any_bytes, sizeof(any_bytes) - 1, 50000);
    test_random_sort(codes_alphabet, sizeof(codes_alphabet) - 1);
    test_random_sort(any_bytes, sizeof(any_bytes) - 1);
    return test_exit();
}
