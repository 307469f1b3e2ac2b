/* Query strings: percent-decoding, '+' as space, and binding onto request messages. */
#include <string.h>

#include "http/query.h"
#include "test.h"
#include "walklist/v1/locate_list.pb-c.h"
#include "walklist/v1/stock.pb-c.h"

static void test_unescape(void)
{
    const struct {
        const char *in;
        bool plus_is_space;
        int rc;
        const char *out;
        size_t out_len;
    } cases[] = {
        {"a+b", true, 0, "a b", 3},        {"a+b", false, 0, "a+b", 3},
        {"%41%7c%7C", true, 0, "A||", 3},  {"%e4%C3%a4", true, 0, "\xe4\xc3\xa4", 3},
        {"a%00b", true, 0, "a\0b", 3},     {"", true, 0, "", 0},
        {"%", true, WL_EINVAL, NULL, 0},   {"%4", true, WL_EINVAL, NULL, 0},
        {"%zz", true, WL_EINVAL, NULL, 0}, {"ok%g1", true, WL_EINVAL, NULL, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        wl_arena_t arena;
        wl_arena_init(&arena, 0);
        wl_span_t out = {0};
        int rc = wl_query_unescape(wl_span_str(cases[i].in), cases[i].plus_is_space, &arena, &out);
        CHECK_INT(rc, cases[i].rc);
        if (rc == 0) {
            CHECK_INT(out.len, cases[i].out_len);
            CHECK(memcmp(out.base, cases[i].out, out.len) == 0);
            CHECK(out.base[out.len] == '\0');
        }
        wl_arena_dispose(&arena);
    }
}

static void test_parse(void)
{
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    wl_error_t err;
    wl_error_init(&err);
    wl_query_t q;
    const char *raw = "name=A+b&&codes=1,2&flag&codes=3&empty=&%6Eame2=x%20y";
    CHECK_INT(wl_query_parse(wl_span_str(raw), &arena, &q, &err), 0);
    CHECK_INT(q.count, 6);
    CHECK_INT(wl_query_count(&q, "codes"), 2);
    CHECK_INT(wl_query_count(&q, "flag"), 1);
    CHECK_INT(wl_query_count(&q, "missing"), 0);
    CHECK(wl_query_get(&q, "name") != NULL &&
          wl_span_eq(*wl_query_get(&q, "name"), wl_span_str("A b")));
    CHECK(wl_span_eq(*wl_query_get(&q, "name2"), wl_span_str("x y")));
    CHECK(wl_query_get(&q, "empty") != NULL && wl_query_get(&q, "empty")->len == 0);
    CHECK(wl_query_get(&q, "flag")->len == 0);

    CHECK_INT(wl_query_parse(wl_span_str(""), &arena, &q, &err), 0);
    CHECK_INT(q.count, 0);
    CHECK_INT(wl_query_parse(wl_span_str("a=%%"), &arena, &q, &err), WL_EINVAL);
    wl_arena_dispose(&arena);
}

static void test_bind_split_lists(void)
{
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    wl_error_t err;
    wl_error_init(&err);
    wl_query_t q;
    CHECK_INT(wl_query_parse(wl_span_str("codes=A,B|C&name=Walk+1&codes=+D+,,|E&api_key=k&x=1"),
                             &arena, &q, &err),
              0);
    Walklist__V1__CreateLocateListRequest msg = WALKLIST__V1__CREATE_LOCATE_LIST_REQUEST__INIT;
    CHECK_INT(wl_query_bind(&q, &msg.base, WL_QUERY_SPLIT_LISTS, &arena, &err), 0);
    CHECK_STR(msg.name, "Walk 1");
    CHECK_INT(msg.n_codes, 5);
    const char *expected[] = {"A", "B", "C", "D", "E"};
    for (size_t i = 0; i < 5 && i < msg.n_codes; i++)
        CHECK_STR(msg.codes[i], expected[i]);
    wl_arena_dispose(&arena);
}

static void test_bind_errors(void)
{
    const struct {
        const char *query;
        const char *field;
    } cases[] = {
        {"name=a&name=b", "name"},
        {"name=a%00b", "name"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        wl_arena_t arena;
        wl_arena_init(&arena, 0);
        wl_error_t err;
        wl_error_init(&err);
        wl_query_t q;
        CHECK_INT(wl_query_parse(wl_span_str(cases[i].query), &arena, &q, &err), 0);
        Walklist__V1__CreateLocateListRequest msg = WALKLIST__V1__CREATE_LOCATE_LIST_REQUEST__INIT;
        CHECK_INT(wl_query_bind(&q, &msg.base, WL_QUERY_SPLIT_LISTS, &arena, &err), WL_EINVAL);
        CHECK_INT(err.violation_count, 1);
        CHECK_STR(err.violations[0].field, cases[i].field);
        wl_arena_dispose(&arena);
    }
}

static void test_bind_integers(void)
{
    const struct {
        const char *query;
        int rc;
        int32_t page_size;
    } cases[] = {
        {"pageSize=25", 0, 25},         {"page_size=7", 0, 7},
        {"pageSize=-3", 0, -3},         {"pageSize=abc", WL_EINVAL, 0},
        {"pageSize=", WL_EINVAL, 0},    {"pageSize=2147483648", WL_EINVAL, 0},
        {"pageSize=1.5", WL_EINVAL, 0}, {"pageSize=%201", WL_EINVAL, 0},
        {"pageSize=+1", WL_EINVAL, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        wl_arena_t arena;
        wl_arena_init(&arena, 0);
        wl_error_t err;
        wl_error_init(&err);
        wl_query_t q;
        CHECK_INT(wl_query_parse(wl_span_str(cases[i].query), &arena, &q, &err), 0);
        Walklist__V1__ListStockRequest msg = WALKLIST__V1__LIST_STOCK_REQUEST__INIT;
        CHECK_INT(wl_query_bind(&q, &msg.base, WL_QUERY_PLAIN, &arena, &err), cases[i].rc);
        if (cases[i].rc == 0)
            CHECK_INT(msg.page_size, cases[i].page_size);
        else
            CHECK_STR(err.violations[0].field, "pageSize");
        wl_arena_dispose(&arena);
    }
}

int main(void)
{
    test_unescape();
    test_parse();
    test_bind_split_lists();
    test_bind_errors();
    test_bind_integers();
    return test_exit();
}
