/*
 * Query strings (gateway/http/query.c): the input is the raw query of a request, parsed and bound
 * as the URL form of a walk list (codes split on ',' and '|') and as a stock page request; what
 * binds is a valid message whose codes the walk-list service then normalises.
 */
#include <string.h>

#include "fuzz.h"
#include "http/query.h"
#include "walklist/codes.h"
#include "walklist/utf8.h"
#include "walklist/v1/locate_list.pb-c.h"
#include "walklist/v1/stock.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wl_arena_t arena;
    wl_arena_init(&arena, 16u << 20);
    wl_error_t err;
    wl_error_init(&err);
    wl_query_t query;
    if (wl_query_parse(wl_span((const char *)data, size), &arena, &query, &err) == 0) {
        for (size_t i = 0; i < query.count; i++)
            FUZZ_CHECK(query.params[i].value.base[query.params[i].value.len] == '\0');
        Walklist__V1__CreateLocateListRequest *list = wl_arena_alloc(&arena, sizeof(*list));
        Walklist__V1__ListStockRequest *page = wl_arena_alloc(&arena, sizeof(*page));
        FUZZ_CHECK(list != NULL && page != NULL);
        walklist__v1__create_locate_list_request__init(list);
        walklist__v1__list_stock_request__init(page);
        if (wl_query_bind(&query, &list->base, WL_QUERY_SPLIT_LISTS, &arena, &err) == 0) {
            FUZZ_CHECK(protobuf_c_message_check(&list->base));
            wl_span_t *codes = wl_arena_alloc(&arena, (list->n_codes + 1) * 2 * sizeof(*codes));
            FUZZ_CHECK(codes != NULL);
            for (size_t i = 0; i < list->n_codes; i++) {
                codes[i] = wl_span_str(list->codes[i]);
                FUZZ_CHECK(codes[i].len > 0 && strpbrk(list->codes[i], ",|") == NULL);
                FUZZ_CHECK(wl_span_eq(wl_utf8_trim(codes[i]), codes[i]));
            }
            size_t unique = 0;
            (void)!wl_codes_normalize(codes, list->n_codes, codes + list->n_codes + 1, &unique,
                                      &err);
            (void)!wl_name_validate(wl_span_str(list->name), "name", &err);
        }
        wl_error_init(&err);
        if (wl_query_bind(&query, &page->base, WL_QUERY_PLAIN, &arena, &err) == 0)
            FUZZ_CHECK(protobuf_c_message_check(&page->base));
    }
    wl_arena_dispose(&arena);
    return 0;
}
