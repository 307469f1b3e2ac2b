/* Names and codes are validated, and walk-list codes split, trimmed and deduplicated, here. */
#include "walklist/codes.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "walklist/utf8.h"

/* What one pass over a text finds out; chars is -1 when it is not valid UTF-8. */
typedef struct {
    long chars;
    bool has_control;
    bool all_space;
} text_scan_t;

static text_scan_t scan_text(wl_span_t s)
{
    text_scan_t scan = {0, false, true};
    size_t i = 0;
    while (i < s.len) {
        uint32_t cp = (unsigned char)s.base[i];
        if (cp < 0x80) { /* ASCII needs no decoding, and is almost every code's every byte */
            if (cp < 0x20 || cp == 0x7F)
                scan.has_control = true;
            if (cp != ' ' && (cp < 0x09 || cp > 0x0D))
                scan.all_space = false;
            i++;
            scan.chars++;
            continue;
        }
        int n = wl_utf8_decode(s.base + i, s.len - i, &cp);
        if (n < 0) {
            scan.chars = -1;
            return scan;
        }
        if (wl_utf8_is_control(cp))
            scan.has_control = true;
        if (!wl_utf8_is_space(cp))
            scan.all_space = false;
        i += (size_t)n;
        scan.chars++;
    }
    return scan;
}

#define STRINGIFY(x) #x
#define STRING_OF(x) STRINGIFY(x)

/* What is wrong with a code (walk-list codes after trimming, import codes), or NULL. */
static const char *code_problem(wl_span_t code)
{
    text_scan_t scan = scan_text(code);
    if (scan.chars < 0)
        return "must be valid UTF-8";
    if (scan.chars < 1 || scan.chars > WL_CODE_MAX_CHARS)
        return "must be 1 to " STRING_OF(WL_CODE_MAX_CHARS) " characters";
    if (scan.has_control)
        return "must not contain control characters";
    return NULL;
}

static int check_code(wl_span_t code, const char *field, wl_error_t *err)
{
    const char *problem = code_problem(code);
    return problem == NULL ? 0 : wl_error_add_violation(err, field, "%s", problem);
}

int wl_name_validate(wl_span_t name, const char *field, wl_error_t *err)
{
    text_scan_t scan = scan_text(name);
    if (scan.chars < 0)
        return wl_error_add_violation(err, field, "must be valid UTF-8");
    if (scan.chars < 1 || scan.chars > WL_NAME_MAX_CHARS)
        return wl_error_add_violation(err, field, "must be 1 to %d characters", WL_NAME_MAX_CHARS);
    if (scan.has_control)
        return wl_error_add_violation(err, field, "must not contain control characters");
    if (scan.all_space)
        return wl_error_add_violation(err, field, "must not be blank");
    return 0;
}

size_t wl_codes_split(wl_span_t value, wl_span_t *out, size_t cap)
{
    size_t total = 0;
    size_t start = 0;
    /* ',' and '|' are ASCII, so they never occur inside a multi-byte character. */
    for (size_t i = 0; i <= value.len; i++) {
        if (i < value.len && value.base[i] != ',' && value.base[i] != '|')
            continue;
        wl_span_t piece = wl_utf8_trim(wl_span(value.base + start, i - start));
        if (piece.len > 0) {
            if (total < cap)
                out[total] = piece;
            total++;
        }
        start = i + 1;
    }
    return total;
}

/* The dedup table's slots: a power of two at least twice WL_CODES_MAX, and the fewest used. */
#define DEDUPE_SLOTS_MAX 512
#define DEDUPE_SLOTS_MIN 16
_Static_assert(DEDUPE_SLOTS_MAX >= 2 * WL_CODES_MAX, "the dedup table holds every code");

/* FNV-1a over the code's bytes. */
static uint32_t hash_of(wl_span_t code)
{
    uint32_t hash = 2166136261u;
    for (size_t i = 0; i < code.len; i++)
        hash = (hash ^ (unsigned char)code.base[i]) * 16777619u;
    return hash;
}

int wl_codes_normalize(const wl_span_t *codes, size_t count, wl_span_t *unique,
                       size_t *unique_count, wl_error_t *err)
{
    *unique_count = 0;
    if (count == 0)
        return wl_error_add_violation(err, "codes", "must have 1 to %d entries", WL_CODES_MAX);
    if (count > WL_CODES_MAX)
        return wl_error_add_violation(err, "codes", "must have at most %d entries, got %zu",
                                      WL_CODES_MAX, count);
    /* The kept codes by hash (open addressing, at least twice as many slots as codes, 0 for
     * an empty slot, else the code's index + 1): each code is compared with the few of its
     * hash, not with every code before it (19,900 comparisons for 200 codes). */
    uint16_t slots[DEDUPE_SLOTS_MAX];
    uint32_t hashes[WL_CODES_MAX];
    size_t mask = DEDUPE_SLOTS_MIN - 1;
    while (mask + 1 < 2 * count)
        mask = mask * 2 + 1;
    memset(slots, 0, (mask + 1) * sizeof(slots[0]));
    bool failed = false;
    size_t kept = 0;
    for (size_t i = 0; i < count; i++) {
        wl_span_t code = wl_utf8_trim(codes[i]);
        const char *problem = code_problem(code);
        if (problem != NULL) {
            char field[32];
            snprintf(field, sizeof(field), "codes[%zu]", i);
            wl_error_add_violation(err, field, "%s", problem);
            failed = true;
            continue;
        }
        uint32_t hash = hash_of(code);
        size_t slot = hash & mask;
        bool seen = false;
        for (; slots[slot] != 0 && !seen; slot = (slot + 1) & mask) {
            size_t j = slots[slot] - 1u;
            seen = hashes[j] == hash && wl_span_eq(unique[j], code);
        }
        if (seen)
            continue;
        slots[slot] = (uint16_t)(kept + 1);
        hashes[kept] = hash;
        unique[kept++] = code;
    }
    if (failed)
        return WL_EINVAL;
    *unique_count = kept;
    return 0;
}

int wl_code_validate(wl_span_t code, const char *field, wl_error_t *err)
{
    int rc = check_code(code, field, err);
    if (rc != 0)
        return rc;
    if (!wl_span_eq(wl_utf8_trim(code), code))
        return wl_error_add_violation(err, field,
                                      "must not start or end with whitespace (codes are never "
                                      "trimmed)");
    return 0;
}

int wl_text_validate(wl_span_t text, size_t max_chars, bool required, const char *field,
                     wl_error_t *err)
{
    text_scan_t scan = scan_text(text);
    if (scan.chars < 0)
        return wl_error_add_violation(err, field, "must be valid UTF-8");
    if (required && scan.chars == 0)
        return wl_error_add_violation(err, field, "must not be empty");
    if ((size_t)scan.chars > max_chars)
        return wl_error_add_violation(err, field, "must be at most %zu characters", max_chars);
    if (scan.has_control)
        return wl_error_add_violation(err, field, "must not contain control characters");
    return 0;
}

bool wl_list_id_plausible(const char *id)
{
    size_t len = strlen(id);
    if (len == 0 || len > 40)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = id[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return false;
    }
    return true;
}
