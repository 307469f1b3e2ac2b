/* Decimal text of integers without snprintf, whose format parsing costs about a thousand
 * instructions a number: hot paths (every answer's rate-limit headers, every group's
 * statement) write several per request. */
#ifndef WALKLIST_DECIMAL_H
#define WALKLIST_DECIMAL_H

#include <stddef.h>
#include <stdint.h>

/** Room for the longest value, "-9223372036854775808", and its NUL. */
#define WL_DECIMAL_SIZE 21

/** Writes value's digits (a '-' first when negative) and a NUL into out; returns how many
 * characters came before the NUL. */
size_t wl_decimal(int64_t value, char out[WL_DECIMAL_SIZE]);

#endif
