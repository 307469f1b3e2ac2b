/*
 * URL query strings (RFC 3986 percent-decoding, '+' as space, as HTML forms
 * send them) and their binding onto request messages the way grpc-gateway
 * binds query parameters: a parameter named like a field (JSON or proto name)
 * sets that field; parameters naming no field are ignored.
 */
#ifndef WALKLIST_GATEWAY_QUERY_H
#define WALKLIST_GATEWAY_QUERY_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>

#include "walklist/arena.h"
#include "walklist/error.h"
#include "walklist/span.h"

typedef struct {
    wl_span_t name;  /* decoded, arena memory */
    wl_span_t value; /* decoded, arena memory, may contain NUL bytes */
} wl_query_param_t;

typedef struct {
    wl_query_param_t *params;
    size_t count;
} wl_query_t;

/** Splits and decodes a raw query (the part after '?'). WL_EINVAL for bad percent escapes. */
int wl_query_parse(wl_span_t raw, wl_arena_t *arena, wl_query_t *out,
                   wl_error_t *err) WL_CHECK_RESULT;

/** Decodes one percent-encoded component into arena memory (NUL-terminated). */
int wl_query_unescape(wl_span_t in, bool plus_is_space, wl_arena_t *arena,
                      wl_span_t *out) WL_CHECK_RESULT;

/** Number of parameters called name. */
size_t wl_query_count(const wl_query_t *query, const char *name);

/** First value of name, or NULL. */
const wl_span_t *wl_query_get(const wl_query_t *query, const char *name);

typedef enum {
    WL_QUERY_PLAIN = 0,
    /* Repeated string fields: each value is split on ',' and '|', pieces
     * trimmed, empty pieces dropped (the URL form of a code list). */
    WL_QUERY_SPLIT_LISTS = 1,
} wl_query_mode_t;

/**
 * Sets fields of msg from the query: strings, integers and bools; repeated
 * fields append every value in order; a singular field given twice is a
 * violation. Values with NUL bytes are violations.
 */
int wl_query_bind(const wl_query_t *query, ProtobufCMessage *msg, wl_query_mode_t mode,
                  wl_arena_t *arena, wl_error_t *err) WL_CHECK_RESULT;

#endif
