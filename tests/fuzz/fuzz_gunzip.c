/*
 * gzip request bodies (gateway/http/gzip_filter.c, wl_gunzip_body: Connect's and gRPC's gzip
 * requests). The first byte picks the limit (up to 255 KiB), the rest is the body. Whatever it
 * inflates to stays within the limit and is NUL-terminated; coded again and inflated again, it
 * comes back the same.
 */
#include <string.h>

#include "fuzz.h"
#include "http/gzip_filter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t limit = (size_t)data[0] * 1024;
    wl_arena_t arena;
    wl_arena_init(&arena, 8u << 20);
    wl_error_t err;
    wl_error_init(&err);
    char *text = NULL, *coded = NULL, *again = NULL;
    size_t text_len = 0, coded_len = 0, again_len = 0;
    int rc =
        wl_gunzip_body((const char *)data + 1, size - 1, limit, &arena, &text, &text_len, &err);
    FUZZ_CHECK(rc == 0 || rc == WL_EINVAL || rc == WL_EEXHAUSTED);
    if (rc == 0) {
        FUZZ_CHECK(text_len <= limit && text[text_len] == '\0');
        FUZZ_CHECK(wl_gzip_body(text, text_len, &arena, &coded, &coded_len, &err) == 0);
        FUZZ_CHECK(wl_gunzip_body(coded, coded_len, limit, &arena, &again, &again_len, &err) == 0);
        FUZZ_CHECK(again_len == text_len && memcmp(again, text, text_len) == 0);
    }
    wl_arena_dispose(&arena);
    return 0;
}
