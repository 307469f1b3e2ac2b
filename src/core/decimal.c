/* Integers become decimal text here: digits written backwards, then moved to the front. */
#include "walklist/decimal.h"

#include <string.h>

size_t wl_decimal(int64_t value, char out[WL_DECIMAL_SIZE])
{
    char digits[WL_DECIMAL_SIZE];
    char *end = digits + sizeof(digits), *p = end;
    uint64_t magnitude = value < 0 ? 0 - (uint64_t)value : (uint64_t)value;
    do {
        *--p = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude > 0);
    if (value < 0)
        *--p = '-';
    size_t len = (size_t)(end - p);
    memcpy(out, p, len);
    out[len] = '\0';
    return len;
}
