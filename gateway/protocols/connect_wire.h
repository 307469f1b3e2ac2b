/*
 * Connect's framing on the wire, shared by the unary calls (connect.h) and the server streams
 * (watch_stream.h): the enveloped message of a stream, Connect's error JSON and the end-stream
 * message that closes a stream, with or without an error, and a stream's wire (rpc.h) made of them.
 */
#ifndef WALKLIST_GATEWAY_CONNECT_WIRE_H
#define WALKLIST_GATEWAY_CONNECT_WIRE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "errors/error_info.h"
#include "protocols/rpc.h"
#include "walklist/arena.h"
#include "walklist/core.h"

/* A stream's enveloped message: 1 flag byte, then the length as 4 bytes, big-endian. */
#define WL_CONNECT_ENVELOPE        5
#define WL_CONNECT_FLAG_COMPRESSED 0x01 /* in the stream's Connect-Content-Encoding */
#define WL_CONNECT_FLAG_END_STREAM 0x02

/** Writes an enveloped message (flags, len, data) at out, which has len + 5 bytes. */
void wl_connect_envelope(char *out, uint8_t flags, const void *data, size_t len);

/**
 * Connect's error JSON {"code","message","details"}: details hold the google.rpc.BadRequest of
 * err's violations (err may be NULL), then the ErrorInfo of info. NULL when out of memory.
 */
json_t *wl_connect_error_json(wl_arena_t *arena, wl_grpc_code_t code, const char *message,
                              const wl_error_t *err, const wl_error_info_t *info);

/**
 * The end-stream message {"error":..,"metadata":{}} (no "error" when error is NULL: a clean
 * end), enveloped with flag 0x02, in arena memory (*len bytes); takes the reference to error.
 * NULL when out of memory.
 */
char *wl_connect_end_stream(wl_arena_t *arena, json_t *error, size_t *len);

/** How a Connect server stream frames its messages and its end (rpc.h), in the JSON or the
 * binary codec; with gzip, each message of 1 KiB and more gzip-coded and flagged compressed (the
 * end-stream message never is). */
wl_rpc_stream_wire_t wl_connect_stream_wire(bool json, bool gzip);

/**
 * Connect's error JSON with only an ErrorInfo of reason, written without allocating (the JSON
 * writer, into buf of size bytes, NUL-terminated): for the answer that must go out when nothing
 * can be allocated. Its length; 0 when it does not fit.
 */
size_t wl_connect_error_plain(char *buf, size_t size, wl_grpc_code_t code, wl_reason_t reason,
                              const char *message);

#endif
