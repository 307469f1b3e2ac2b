/*
 * Validation of walk-list names, product and location codes and import texts,
 * and the splitting, trimming and dedupe of the codes of a walk list
 * (1-64 characters, exact, never trimmed in imports; trimmed and deduped in
 * walk lists). Pure: no I/O, no allocation.
 *
 * Lengths count Unicode code points ("characters"), not bytes. Control
 * characters are C0, DEL and C1 (wl_utf8_is_control); U+0085 NEL is a C1
 * control even though it is also White_Space, so it is rejected inside names
 * and codes but removed by trimming at the edges of walk-list codes.
 *
 * Validators add at most one violation for their field to err (which may be
 * NULL) and return 0 or WL_EINVAL. The return value reflects this call only,
 * so one wl_error_t can collect the violations of a whole request.
 */
#ifndef WALKLIST_CODES_H
#define WALKLIST_CODES_H

#include <stdbool.h>
#include <stddef.h>

#include "walklist/error.h"
#include "walklist/span.h"

#define WL_NAME_MAX_CHARS 120 /* walk-list name */
#define WL_CODES_MAX      200 /* codes of one walk list, counted as sent */
#define WL_CODE_MAX_CHARS 64  /* one SKU, EAN, bin code, warehouse code or list code */
#define WL_TEXT_MAX_CHARS 200 /* names in imports */

/**
 * Checks a walk-list name, which is never trimmed: valid UTF-8, 1 to 120 code
 * points, no control characters, at least one character that is not
 * White_Space. The violation for field is one of "must be valid UTF-8",
 * "must be 1 to 120 characters", "must not contain control characters",
 * "must not be blank" (checked in that order).
 */
int wl_name_validate(wl_span_t name, const char *field, wl_error_t *err) WL_CHECK_RESULT;

/**
 * Splits a GET-form `codes` value on ',' and '|' (both may appear in one
 * value), trims each piece (wl_utf8_trim) and skips pieces left empty. Stores
 * the first cap pieces in out (spans into value, valid as long as value is)
 * and returns the total number of non-empty pieces, which exceeds cap when
 * out was too small. out may be NULL when cap is 0, to count only.
 *
 *     wl_codes_split(wl_span_str(" A-1, ,B|C "), out, 8)  ->  3: "A-1", "B", "C"
 */
size_t wl_codes_split(wl_span_t value, wl_span_t *out, size_t cap);

/**
 * Normalises the codes of a walk list, as sent (count is before dedupe):
 *  - count 0: violation "codes": "must have 1 to 200 entries";
 *  - count > 200: violation "codes": "must have at most 200 entries, got N",
 *    and no entry is checked;
 *  - otherwise each entry is trimmed (wl_utf8_trim) and must be valid UTF-8,
 *    1 to 64 code points, without control characters; each failing entry adds
 *    a violation for "codes[i]" (i as sent, from 0): "must be valid UTF-8",
 *    "must be 1 to 64 characters" (also for entries blank before trimming),
 *    or "must not contain control characters".
 * Then the trimmed entries are deduplicated byte for byte, keeping the first
 * appearance, in order. unique must have room for count spans; they point
 * into the caller's code bytes. Returns 0 with *unique_count set, or
 * WL_EINVAL with *unique_count 0.
 *
 *     {" A ", "B", "A", "\xC2\xA0" "B"}  ->  {"A", "B"}, *unique_count 2
 */
int wl_codes_normalize(const wl_span_t *codes, size_t count, wl_span_t *unique,
                       size_t *unique_count, wl_error_t *err) WL_CHECK_RESULT;

/**
 * Checks a SKU, EAN, bin code or warehouse code from an import. These are
 * compared exactly and never trimmed: valid UTF-8, 1 to 64 code points, no
 * control characters, and no White_Space as first or last character
 * ("must not start or end with whitespace (codes are never trimmed)").
 */
/**
 * Whether id could be a walk-list id: 1 to 40 characters of the URL-safe
 * alphabet (A-Z, a-z, 0-9, '-', '_'). Anything else cannot exist, so callers
 * answer NOT_FOUND without asking the database.
 */
bool wl_list_id_plausible(const char *id);

int wl_code_validate(wl_span_t code, const char *field, wl_error_t *err) WL_CHECK_RESULT;

/**
 * Checks a name from an import (never trimmed): valid UTF-8, at most
 * max_chars code points ("must be at most N characters"), no control
 * characters, and not empty when required ("must not be empty"). A name of
 * only spaces is accepted; it is not empty.
 */
int wl_text_validate(wl_span_t text, size_t max_chars, bool required, const char *field,
                     wl_error_t *err) WL_CHECK_RESULT;

#endif
