/*
 * Byte spans: a pointer and a length travelling by value. Wire data is never
 * assumed to be NUL-terminated.
 */
#ifndef WALKLIST_SPAN_H
#define WALKLIST_SPAN_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

typedef struct {
    const char *base;
    size_t len;
} wl_span_t;

static inline wl_span_t wl_span(const char *base, size_t len)
{
    wl_span_t s = {base, len};
    return s;
}

/** Span over a NUL-terminated string (NULL gives the empty span). */
static inline wl_span_t wl_span_str(const char *s)
{
    return wl_span(s, s ? strlen(s) : 0);
}

static inline bool wl_span_eq(wl_span_t a, wl_span_t b)
{
    return a.len == b.len && (a.len == 0 || memcmp(a.base, b.base, a.len) == 0);
}

#endif
