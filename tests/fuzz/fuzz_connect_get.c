/*
 * The query of Connect's GET form (gateway/protocols/connect_get.c): the input is the raw query
 * of a request. Whatever it is, the answer is one of the results with a problem to tell, or a
 * message within what the query could carry (base64 decodes to at most 3/4 of its text).
 */
#include "fuzz.h"
#include "protocols/connect_get.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wl_arena_t arena;
    wl_arena_init(&arena, 16u << 20);
    wl_connect_get_t get;
    wl_connect_get_result_t result =
        wl_connect_get_read(wl_span((const char *)data, size), &arena, &get);
    if (result == WL_CONNECT_GET_READ) {
        FUZZ_CHECK(get.message.base != NULL && get.message.len <= size);
    } else if (result != WL_CONNECT_GET_NO_MEMORY) {
        FUZZ_CHECK(result <= WL_CONNECT_GET_MESSAGE && get.problem != NULL);
    }
    wl_arena_dispose(&arena);
    return 0;
}
