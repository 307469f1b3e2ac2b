/*
 * The W3C Trace Context traceparent header (https://www.w3.org/TR/trace-context/, section 3.2):
 * "00-<trace-id>-<parent-id>-<trace-flags>", lower-case hex. walklistd does not trace; it
 * echoes a caller's valid trace-id and parent-id into the request's log line so that its lines
 * can be found from the caller's trace. Pure: no I/O.
 */
#ifndef WALKLIST_GATEWAY_TRACE_CONTEXT_H
#define WALKLIST_GATEWAY_TRACE_CONTEXT_H

#include <stdbool.h>

typedef struct {
    char trace_id[33];  /* 32 lower-case hex digits, not all zero */
    char parent_id[17]; /* 16 lower-case hex digits, not all zero */
    char flags[3];
} wl_trace_context_t;

/**
 * Parses a traceparent value as the specification says a receiver must: version 00 is exactly
 * 55 characters; a later version (not ff) is read as 00 from its first 55, which must be
 * followed by the end or a '-'; upper-case hex, all-zero ids and any other shape are invalid.
 * False (out untouched) when header is NULL or invalid: the caller then ignores it, as if it
 * had not been sent (several field lines joined with commas are invalid too).
 */
bool wl_trace_context_parse(const char *header, wl_trace_context_t *out);

#endif
