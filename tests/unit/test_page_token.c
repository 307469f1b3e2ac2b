/* Page tokens: round trips, and every way a token can be altered, cut, forged or replayed. */
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "domain/page_token.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static unsigned char secret[WL_PAGE_SECRET_SIZE];
static wl_arena_t arena;

static const wl_span_t scope[] = {{"ListStock", 9}, {"42", 2}, {"SKU-1", 5}, {"", 0}};
#define SCOPE_COUNT (sizeof(scope) / sizeof(scope[0]))

static char *encode(const wl_span_t *keys, size_t key_count)
{
    char *token = NULL;
    CHECK_INT(wl_page_token_encode(secret, scope, SCOPE_COUNT, keys, key_count, &arena, &token), 0);
    return token;
}

/* Decodes with the test scope and two keys. */
static int decode(const char *token, size_t len, wl_span_t keys[2])
{
    return wl_page_token_decode(secret, scope, SCOPE_COUNT, wl_span(token, len), 2, &arena, keys);
}

static void test_round_trip(void)
{
    char long_key[WL_PAGE_KEY_MAX + 1];
    memset(long_key, 'x', WL_PAGE_KEY_MAX);
    long_key[WL_PAGE_KEY_MAX] = '\0';
    const struct {
        const char *sku, *warehouse;
    } cases[] = {
        {"SKU-1", "W1"},
        {"", ""},
        {"a", ""},
        {"\xc3\xa4\xe2\x82\xac", "Lager \xc3\x96st"},
        {long_key, "W"},
        {long_key, long_key},
        {"with,comma|and \"quotes\"", "%2F=&"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        wl_span_t keys[] = {wl_span_str(cases[i].sku), wl_span_str(cases[i].warehouse)};
        char *token = encode(keys, 2);
        if (token == NULL)
            continue;
        CHECK(strspn(token, alphabet) == strlen(token));
        CHECK(strlen(token) <= WL_PAGE_TOKEN_MAX);
        /* Deterministic: the same page ends in the same token. */
        char *again = encode(keys, 2);
        CHECK_STR(again, token);
        wl_span_t out[2] = {{0}};
        CHECK_INT(decode(token, strlen(token), out), 0);
        CHECK(wl_span_eq(out[0], keys[0]));
        CHECK(wl_span_eq(out[1], keys[1]));
        CHECK(out[0].base != NULL && out[0].base[out[0].len] == '\0');
        CHECK(out[1].base != NULL && out[1].base[out[1].len] == '\0');
    }

    /* Other key counts round-trip too. */
    wl_span_t none[1];
    char *token = NULL;
    CHECK_INT(wl_page_token_encode(secret, scope, SCOPE_COUNT, NULL, 0, &arena, &token), 0);
    CHECK_INT(wl_page_token_decode(secret, scope, SCOPE_COUNT, wl_span_str(token), 0, &arena, none),
              0);
    wl_span_t four[] = {wl_span_str("a"), wl_span_str("bb"), wl_span_str(""), wl_span_str("d")};
    wl_span_t four_out[4];
    CHECK_INT(wl_page_token_encode(secret, scope, SCOPE_COUNT, four, 4, &arena, &token), 0);
    CHECK_INT(
        wl_page_token_decode(secret, scope, SCOPE_COUNT, wl_span_str(token), 4, &arena, four_out),
        0);
    for (size_t i = 0; i < 4; i++)
        CHECK(wl_span_eq(four_out[i], four[i]));
}

static void test_encode_limits(void)
{
    char too_long[WL_PAGE_KEY_MAX + 2];
    memset(too_long, 'x', WL_PAGE_KEY_MAX + 1);
    too_long[WL_PAGE_KEY_MAX + 1] = '\0';
    wl_span_t keys[] = {wl_span_str(too_long), wl_span_str("W")};
    char *token = NULL;
    CHECK_INT(wl_page_token_encode(secret, scope, SCOPE_COUNT, keys, 2, &arena, &token), WL_EINVAL);
    wl_span_t five[5] = {{"a", 1}, {"a", 1}, {"a", 1}, {"a", 1}, {"a", 1}};
    CHECK_INT(wl_page_token_encode(secret, scope, SCOPE_COUNT, five, 5, &arena, &token), WL_EINVAL);

    wl_arena_t tiny;
    wl_arena_init(&tiny, 1);
    wl_span_t ok[] = {wl_span_str("S"), wl_span_str("W")};
    CHECK_INT(wl_page_token_encode(secret, scope, SCOPE_COUNT, ok, 2, &tiny, &token), WL_ENOMEM);
    wl_arena_dispose(&tiny);
}

/* Every single-character change, every cut and every extension is refused. */
static void test_tampering(void)
{
    wl_span_t keys[] = {wl_span_str("SKU-17"), wl_span_str("W2")};
    char *token = encode(keys, 2);
    if (token == NULL)
        return;
    size_t len = strlen(token);
    char *copy = malloc(len + 2);
    wl_span_t out[2];
    int accepted = 0;
    for (size_t pos = 0; pos < len; pos++) {
        for (const char *c = alphabet; *c; c++) {
            if (*c == token[pos])
                continue;
            memcpy(copy, token, len + 1);
            copy[pos] = *c;
            accepted += decode(copy, len, out) != WL_EINVAL;
        }
        /* Characters outside the alphabet, padding included. */
        const char others[] = "=+/.~ %\x80";
        for (const char *c = others; *c; c++) {
            memcpy(copy, token, len + 1);
            copy[pos] = *c;
            accepted += decode(copy, len, out) != WL_EINVAL;
        }
    }
    CHECK_INT(accepted, 0);

    for (size_t cut = 0; cut < len; cut++)
        CHECK_INT(decode(token, cut, out), WL_EINVAL);
    for (const char *c = alphabet; *c; c++) {
        memcpy(copy, token, len);
        copy[len] = *c;
        copy[len + 1] = '\0';
        CHECK_INT(decode(copy, len + 1, out), WL_EINVAL);
    }
    memcpy(copy, token, len);
    copy[len] = '=';
    CHECK_INT(decode(copy, len + 1, out), WL_EINVAL);
    free(copy);
}

/* A genuine token is refused under another secret, scope or key count. */
static void test_binding(void)
{
    wl_span_t keys[] = {wl_span_str("SKU-17"), wl_span_str("W2")};
    char *token = encode(keys, 2);
    if (token == NULL)
        return;
    wl_span_t out[4];
    wl_span_t token_span = wl_span_str(token);

    unsigned char other_secret[WL_PAGE_SECRET_SIZE];
    memcpy(other_secret, secret, sizeof(other_secret));
    other_secret[31] ^= 1;
    CHECK_INT(wl_page_token_decode(other_secret, scope, SCOPE_COUNT, token_span, 2, &arena, out),
              WL_EINVAL);

    /* Each scope element changed alone: organization, filters, method. */
    for (size_t i = 0; i < SCOPE_COUNT; i++) {
        wl_span_t other[SCOPE_COUNT];
        memcpy(other, scope, sizeof(other));
        other[i] = wl_span_str(scope[i].len == 0 ? "W1" : "43");
        CHECK_INT(wl_page_token_decode(secret, other, SCOPE_COUNT, token_span, 2, &arena, out),
                  WL_EINVAL);
    }
    /* The same bytes split differently are another scope. */
    const wl_span_t shifted[] = {{"ListStock", 9}, {"42S", 3}, {"KU-1", 4}, {"", 0}};
    CHECK_INT(wl_page_token_decode(secret, shifted, SCOPE_COUNT, token_span, 2, &arena, out),
              WL_EINVAL);
    CHECK_INT(wl_page_token_decode(secret, scope, SCOPE_COUNT - 1, token_span, 2, &arena, out),
              WL_EINVAL);

    CHECK_INT(wl_page_token_decode(secret, scope, SCOPE_COUNT, token_span, 1, &arena, out),
              WL_EINVAL);
    CHECK_INT(wl_page_token_decode(secret, scope, SCOPE_COUNT, token_span, 3, &arena, out),
              WL_EINVAL);
}

static void test_garbage(void)
{
    const char *cases[] = {
        "",
        "A",
        "AA",
        "AAAA",
        "not a token",
        "eyJza3UiOiJTS1UtMSJ9",
        "AQAFU0tVLTEAAlcx",
        "AQAFU0tVLTEAAlcxAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "AQAFU0tVLTEAAlcx+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/+/",
        "____________________________________________________________==",
    };
    wl_span_t out[2];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        CHECK_INT(decode(cases[i], strlen(cases[i]), out), WL_EINVAL);

    /* Random strings of the token alphabet and of token length: never accepted. */
    srand(7);
    char random_token[120];
    int accepted = 0;
    for (int round = 0; round < 20000; round++) {
        size_t len = 44 + (size_t)(rand() % 70);
        for (size_t i = 0; i < len; i++)
            random_token[i] = alphabet[rand() % 64];
        accepted += decode(random_token, len, out) != WL_EINVAL;
    }
    CHECK_INT(accepted, 0);

    /* Longer than any token: refused unread. */
    size_t huge_len = WL_PAGE_TOKEN_MAX + 1;
    char *huge = malloc(huge_len);
    memset(huge, 'A', huge_len);
    CHECK_INT(decode(huge, huge_len, out), WL_EINVAL);
    free(huge);
}

int main(void)
{
    for (size_t i = 0; i < sizeof(secret); i++)
        secret[i] = (unsigned char)(i * 37 + 11);
    wl_arena_init(&arena, 0);
    test_round_trip();
    test_encode_limits();
    test_tampering();
    test_binding();
    test_garbage();
    wl_arena_dispose(&arena);
    return test_exit();
}
