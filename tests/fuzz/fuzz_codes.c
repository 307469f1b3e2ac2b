/*
 * Walk-list codes and names (src/domain/codes.c): the input is a GET-form `codes` value, split,
 * normalised as the list's codes, and checked as a name, an import code and an import text.
 */
#include <string.h>

#include "fuzz.h"
#include "walklist/codes.h"
#include "walklist/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wl_span_t value = wl_span((const char *)data, size);
    size_t total = wl_codes_split(value, NULL, 0);
    wl_span_t *pieces = malloc((total + 1) * sizeof(*pieces));
    wl_span_t *unique = malloc((total + 1) * sizeof(*unique));
    FUZZ_CHECK(pieces != NULL && unique != NULL);
    FUZZ_CHECK(wl_codes_split(value, pieces, total) == total);
    for (size_t i = 0; i < total; i++) {
        FUZZ_CHECK(pieces[i].len > 0 && pieces[i].base >= value.base &&
                   pieces[i].base + pieces[i].len <= value.base + value.len);
        FUZZ_CHECK(memchr(pieces[i].base, ',', pieces[i].len) == NULL &&
                   memchr(pieces[i].base, '|', pieces[i].len) == NULL);
        FUZZ_CHECK(wl_span_eq(wl_utf8_trim(pieces[i]), pieces[i]));
    }
    wl_error_t err;
    wl_error_init(&err);
    size_t unique_count = 0;
    if (wl_codes_normalize(pieces, total, unique, &unique_count, &err) == 0) {
        FUZZ_CHECK(unique_count >= 1 && unique_count <= total && err.code == 0);
        for (size_t i = 0; i < unique_count; i++)
            for (size_t j = 0; j < i; j++)
                FUZZ_CHECK(!wl_span_eq(unique[i], unique[j]));
    } else {
        FUZZ_CHECK(unique_count == 0 && err.code == WL_EINVAL && err.violation_count > 0);
    }
    (void)!wl_name_validate(value, "name", NULL);
    (void)!wl_code_validate(value, "sku", NULL);
    (void)!wl_text_validate(value, WL_TEXT_MAX_CHARS, true, "name", NULL);
    free(pieces);
    free(unique);
    return 0;
}
