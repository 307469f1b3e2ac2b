/* Decimal text of integers (walklist/decimal.h): the digits snprintf's "%lld" would write. */
#include "test.h"

#include <inttypes.h>
#include <stdio.h>

#include "walklist/decimal.h"

int main(void)
{
    static const int64_t values[] = {0,         7,         -7,        10,           -10,
                                     99,        100,       123456789, -987654321,   INT32_MAX,
                                     INT32_MIN, INT64_MAX, INT64_MIN, INT64_MIN + 1};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char expected[32], text[WL_DECIMAL_SIZE];
        int expected_len = snprintf(expected, sizeof(expected), "%" PRId64, values[i]);
        size_t len = wl_decimal(values[i], text);
        CHECK_STR(text, expected);
        CHECK_INT((long long)len, expected_len);
    }
    return test_exit();
}
