/* Code resolution, product dedupe and the order of the walk are checked here, table-driven. */
#include "test.h"

#include <stdio.h>
#include <stdlib.h>

#include "domain/resolve.h"

#define MAX_ITEMS 12

static const char *outcome_name(wl_code_outcome_t outcome)
{
    switch (outcome) {
    case WL_CODE_SKU:
        return "SKU";
    case WL_CODE_EAN:
        return "EAN";
    case WL_CODE_AMBIGUOUS:
        return "AMBIGUOUS";
    case WL_CODE_NOT_FOUND:
        return "NOT_FOUND";
    }
    return "?";
}

/* "code=OUTCOME:sku,sku" per code, joined by " | ". */
static void describe_codes(const wl_resolution_t *res, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < res->code_count && used < size; i++) {
        const wl_code_resolution_t *c = &res->codes[i];
        used += (size_t)snprintf(buf + used, size - used, "%s%s=%s:", i ? " | " : "", c->code,
                                 outcome_name(c->outcome));
        for (size_t j = 0; j < c->sku_count && used < size; j++)
            used += (size_t)snprintf(buf + used, size - used, "%s%s", j ? "," : "", c->skus[j]);
    }
}

/* "sku<code" per walked product ('*' after an ambiguous one), joined by " ". */
static void describe_products(const wl_walk_product_t *const *products, size_t count, char *buf,
                              size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < count && used < size; i++)
        used +=
            (size_t)snprintf(buf + used, size - used, "%s%s<%s%s", i ? " " : "", products[i]->sku,
                             products[i]->code, products[i]->ambiguous ? "*" : "");
}

static void describe_resolution_products(const wl_resolution_t *res, char *buf, size_t size)
{
    const wl_walk_product_t *list[64];
    size_t n = res->product_count < 64 ? res->product_count : 64;
    for (size_t i = 0; i < n; i++)
        list[i] = &res->products[i];
    describe_products(list, n, buf, size);
}

#define S 0 /* WL_MATCH_SKU, short for the tables */
#define E 1 /* WL_MATCH_EAN */

static void test_resolution(void)
{
    static const struct {
        const char *what;
        const char *codes[MAX_ITEMS];
        struct {
            size_t code_index;
            int kind;
            const char *sku;
        } matches[MAX_ITEMS];
        const char *expect_codes;
        const char *expect_products;
    } cases[] = {
        {"nothing matches", {"X", "Y"}, {{0}}, "X=NOT_FOUND: | Y=NOT_FOUND:", ""},
        {"exact SKU", {"P-1"}, {{0, S, "P-1"}, {0}}, "P-1=SKU:P-1", "P-1<P-1"},
        {"SKU before EAN: the code is one product's SKU and another's EAN",
         {"P-1"},
         {{0, E, "Q-2"}, {0, S, "P-1"}, {0, E, "R-3"}, {0}},
         "P-1=SKU:P-1",
         "P-1<P-1"},
        {"EAN of one product", {"400"}, {{0, E, "P-1"}, {0}}, "400=EAN:P-1", "P-1<400"},
        {"EAN of several products: all walked, in SKU byte order, flagged",
         {"500"},
         {{0, E, "b-1"}, {0, E, "B-2"}, {0, E, "B-10"}, {0}},
         "500=AMBIGUOUS:B-10,B-2,b-1",
         "B-10<500* B-2<500* b-1<500*"},
        {"every code once, in list order, whatever the match order",
         {"NOPE", "400", "P-1", "500"},
         {{3, E, "A-2"}, {2, S, "P-1"}, {1, E, "P-4"}, {3, E, "A-1"}, {0}},
         "NOPE=NOT_FOUND: | 400=EAN:P-4 | P-1=SKU:P-1 | 500=AMBIGUOUS:A-1,A-2",
         "P-4<400 P-1<P-1 A-1<500* A-2<500*"},
        {"a product matched by its EAN first and its SKU later is walked once, first code wins",
         {"400", "P-1"},
         {{1, S, "P-1"}, {0, E, "P-1"}, {0}},
         "400=EAN:P-1 | P-1=SKU:P-1",
         "P-1<400"},
        {"matched by its SKU first and its EAN later",
         {"P-1", "400"},
         {{1, E, "P-1"}, {0, S, "P-1"}, {0}},
         "P-1=SKU:P-1 | 400=EAN:P-1",
         "P-1<P-1"},
        {"a product behind two ambiguous EANs keeps the first",
         {"500", "600"},
         {{0, E, "A"}, {0, E, "B"}, {1, E, "B"}, {1, E, "C"}, {0}},
         "500=AMBIGUOUS:A,B | 600=AMBIGUOUS:B,C",
         "A<500* B<500* C<600*"},
        {"an ambiguous product matched by its SKU earlier is not flagged",
         {"B", "500"},
         {{0, S, "B"}, {1, E, "A"}, {1, E, "B"}, {0}},
         "B=SKU:B | 500=AMBIGUOUS:A,B",
         "B<B A<500*"},
        {"the same match twice counts once",
         {"400"},
         {{0, E, "P-1"}, {0, E, "P-1"}, {0}},
         "400=EAN:P-1",
         "P-1<400"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t code_count = 0, match_count = 0;
        wl_code_match_t matches[MAX_ITEMS];
        while (code_count < MAX_ITEMS && cases[i].codes[code_count] != NULL)
            code_count++;
        while (match_count < MAX_ITEMS && cases[i].matches[match_count].sku != NULL) {
            matches[match_count] = (wl_code_match_t){
                cases[i].matches[match_count].code_index,
                cases[i].matches[match_count].kind == S ? WL_MATCH_SKU : WL_MATCH_EAN,
                cases[i].matches[match_count].sku, "name"};
            match_count++;
        }
        wl_arena_t arena;
        wl_arena_init(&arena, 0);
        wl_resolution_t res;
        int rc = wl_resolve_codes(cases[i].codes, code_count, matches, match_count, &arena, &res);
        char codes[512], products[512];
        if (rc != 0) {
            FAIL("%s: rc %d", cases[i].what, rc);
        } else {
            describe_codes(&res, codes, sizeof(codes));
            describe_resolution_products(&res, products, sizeof(products));
            if (strcmp(codes, cases[i].expect_codes) != 0)
                FAIL("%s: codes\n  got      %s\n  expected %s", cases[i].what, codes,
                     cases[i].expect_codes);
            else if (strcmp(products, cases[i].expect_products) != 0)
                FAIL("%s: products\n  got      %s\n  expected %s", cases[i].what, products,
                     cases[i].expect_products);
            else
                CHECK(1);
        }
        wl_arena_dispose(&arena);
    }
}

static void test_resolution_errors(void)
{
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    const char *codes[] = {"A"};
    wl_code_match_t beyond = {1, WL_MATCH_SKU, "A", "a"};
    wl_resolution_t res;
    CHECK_INT(wl_resolve_codes(codes, 1, &beyond, 1, &arena, &res), WL_EINVAL);
    CHECK_INT(wl_resolve_codes(codes, 0, NULL, 0, &arena, &res), 0);
    CHECK_INT(res.code_count, 0);
    CHECK_INT(res.product_count, 0);
    wl_arena_dispose(&arena);

    /* An arena too small for the answer is ENOMEM, not a crash. */
    wl_arena_init(&arena, 1);
    wl_code_match_t match = {0, WL_MATCH_SKU, "A", "a"};
    CHECK_INT(wl_resolve_codes(codes, 1, &match, 1, &arena, &res), WL_ENOMEM);
    wl_arena_dispose(&arena);
}

/* "bin/warehouse/sku" per stop, joined by " ". */
static void describe_stops(const wl_walk_stop_t *stops, size_t count, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < count && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s/%s/%s", i ? " " : "",
                                 stops[i].bin_code, stops[i].warehouse, stops[i].sku);
}

static void test_walk_order(void)
{
    static const struct {
        const char *what;
        const char *stops[MAX_ITEMS][3]; /* bin, warehouse, sku */
        const char *expected;
    } cases[] = {
        {"digit runs compare by value, then the shorter run first",
         {{"A-10", "W", "P"},
          {"A-02", "W", "P"},
          {"A-2", "W", "P"},
          {"A-002", "W", "P"},
          {"A-9", "W", "P"}},
         "A-2/W/P A-02/W/P A-002/W/P A-9/W/P A-10/W/P"},
        {"leading zeros only decide between equal values",
         {{"R01-10", "W", "P"}, {"R1-9", "W", "P"}, {"R01-9", "W", "P"}, {"R1-10", "W", "P"}},
         "R1-9/W/P R1-10/W/P R01-9/W/P R01-10/W/P"},
        {"mixed case is byte order: upper case first",
         {{"a-1", "W", "P"}, {"B-1", "W", "P"}, {"A-1", "W", "P"}, {"b-1", "W", "P"}},
         "A-1/W/P B-1/W/P a-1/W/P b-1/W/P"},
        {"identical bin codes: warehouse, then SKU",
         {{"A-1", "W2", "P-1"}, {"A-1", "W1", "P-2"}, {"A-1", "W1", "P-1"}, {"A-1", "W10", "P-0"}},
         "A-1/W1/P-1 A-1/W1/P-2 A-1/W10/P-0 A-1/W2/P-1"},
        {"warehouse and SKU ties are byte order, not natural order",
         {{"A", "w", "P-10"}, {"A", "W", "P-9"}, {"A", "W", "P-10"}, {"A", "W", "p-1"}},
         "A/W/P-10 A/W/P-9 A/W/p-1 A/w/P-10"},
        {"the bin decides before warehouse and SKU",
         {{"B-1", "A", "A"}, {"A-10", "Z", "Z"}, {"A-2", "Z", "Z"}},
         "A-2/Z/Z A-10/Z/Z B-1/A/A"},
        {"no stops", {{NULL}}, ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        wl_walk_stop_t stops[MAX_ITEMS];
        size_t n = 0;
        while (n < MAX_ITEMS && cases[i].stops[n][0] != NULL) {
            stops[n] = (wl_walk_stop_t){cases[i].stops[n][0], cases[i].stops[n][1],
                                        cases[i].stops[n][2], 1, NULL};
            n++;
        }
        /* Every product of the stops is walked, so wl_walk_build links them all. */
        wl_walk_product_t products[MAX_ITEMS];
        size_t product_count = 0;
        for (size_t s = 0; s < n; s++) {
            bool seen = false;
            for (size_t p = 0; p < product_count; p++)
                seen = seen || strcmp(products[p].sku, stops[s].sku) == 0;
            if (!seen)
                products[product_count++] = (wl_walk_product_t){stops[s].sku, "n", "c", false};
        }
        wl_resolution_t res = {NULL, 0, products, product_count};
        wl_arena_t arena;
        wl_arena_init(&arena, 0);
        wl_walk_t walk;
        int rc = wl_walk_build(&res, stops, n, &arena, &walk);
        char got[512];
        describe_stops(walk.stops, walk.stop_count, got, sizeof(got));
        if (rc != 0)
            FAIL("%s: rc %d", cases[i].what, rc);
        else if (strcmp(got, cases[i].expected) != 0)
            FAIL("%s\n  got      %s\n  expected %s", cases[i].what, got, cases[i].expected);
        else
            CHECK(walk.unlocated_count == 0);
        /* The comparison agrees with itself both ways round. */
        for (size_t a = 0; a < n; a++) {
            for (size_t b = 0; b < n; b++) {
                int ab = wl_walk_stop_compare(&walk.stops[a], &walk.stops[b]);
                int ba = wl_walk_stop_compare(&walk.stops[b], &walk.stops[a]);
                if ((a < b && !(ab < 0 && ba > 0)) || (a == b && ab != 0))
                    FAIL("%s: stops %zu and %zu compare %d / %d", cases[i].what, a, b, ab, ba);
            }
        }
        wl_arena_dispose(&arena);
    }
}

static void test_walk_build(void)
{
    /* Resolve first, then build: stops link to their product; the rest are unlocated. */
    const char *codes[] = {"Z-9", "NOPE", "500", "M-1", "A-1"};
    wl_code_match_t matches[] = {
        {0, WL_MATCH_SKU, "Z-9", "Zed"},   {2, WL_MATCH_EAN, "AMB-2", "Two"},
        {2, WL_MATCH_EAN, "AMB-1", "One"}, {3, WL_MATCH_SKU, "M-1", "Em"},
        {4, WL_MATCH_SKU, "A-1", "Ay"},
    };
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    wl_resolution_t res;
    CHECK_INT(wl_resolve_codes(codes, 5, matches, 5, &arena, &res), 0);
    wl_walk_stop_t stops[] = {
        {"B-1", "W", "AMB-2", 3, NULL},
        {"B-1", "W", "AMB-1", 0, NULL},
        {"A-10", "W", "M-1", 7, NULL},
    };
    wl_walk_t walk;
    CHECK_INT(wl_walk_build(&res, stops, 3, &arena, &walk), 0);
    char got[512];
    describe_stops(walk.stops, walk.stop_count, got, sizeof(got));
    CHECK_STR(got, "A-10/W/M-1 B-1/W/AMB-1 B-1/W/AMB-2");
    CHECK_STR(walk.stops[0].product->code, "M-1");
    CHECK(!walk.stops[0].product->ambiguous);
    CHECK_STR(walk.stops[1].product->product_name, "One");
    CHECK_STR(walk.stops[1].product->code, "500");
    CHECK(walk.stops[1].product->ambiguous);
    CHECK_INT(walk.stops[1].quantity, 0);
    describe_products(walk.unlocated, walk.unlocated_count, got, sizeof(got));
    CHECK_STR(got, "Z-9<Z-9 A-1<A-1"); /* list order, not SKU order */

    /* A stop of a product that is not walked is a bug of the caller. */
    wl_walk_stop_t stray = {"A-1", "W", "OTHER", 1, NULL};
    CHECK_INT(wl_walk_build(&res, &stray, 1, &arena, &walk), WL_EINVAL);
    wl_resolution_t empty = {NULL, 0, NULL, 0};
    CHECK_INT(wl_walk_build(&empty, &stray, 1, &arena, &walk), WL_EINVAL);
    CHECK_INT(wl_walk_build(&empty, NULL, 0, &arena, &walk), 0);
    CHECK_INT(walk.stop_count + walk.unlocated_count, 0);
    wl_arena_dispose(&arena);
}

/* Many products behind one EAN and many repeats: dedupe keeps first appearances, in order. */
static void test_many(void)
{
    enum { N = 3000 };
    static char skus[N][16];
    static wl_code_match_t matches[2 * N];
    static const char *codes[2];
    codes[0] = "EAN";
    codes[1] = "EAN2";
    for (size_t i = 0; i < N; i++) {
        snprintf(skus[i], sizeof(skus[i]), "S%05zu", N - i);
        matches[i] = (wl_code_match_t){0, WL_MATCH_EAN, skus[i], "n"};
        matches[N + i] = (wl_code_match_t){1, WL_MATCH_EAN, skus[i], "n"};
    }
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    wl_resolution_t res;
    CHECK_INT(wl_resolve_codes(codes, 2, matches, 2 * N, &arena, &res), 0);
    CHECK_INT(res.product_count, N);
    CHECK_INT(res.codes[0].sku_count, N);
    CHECK_INT(res.codes[1].outcome, WL_CODE_AMBIGUOUS);
    bool ordered = true;
    for (size_t i = 1; i < res.product_count; i++)
        ordered = ordered && strcmp(res.products[i - 1].sku, res.products[i].sku) < 0 &&
                  strcmp(res.products[i].code, "EAN") == 0;
    CHECK(ordered);
    wl_arena_dispose(&arena);
}

int main(void)
{
    test_resolution();
    test_resolution_errors();
    test_walk_order();
    test_walk_build();
    test_many();
    return test_exit();
}
