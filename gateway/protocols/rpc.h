/*
 * What the RPC transports (Connect on HTTP/1.1, gRPC on HTTP/2) share, so that each method
 * behaves the same on both: the procedures ("/<package>.<Service>/<Method>") built from the
 * core registry's service descriptors and their limits, the binary decoding of a request
 * message, and the google.rpc.BadRequest detail of field violations (the ErrorInfo detail is
 * error_info.h's). Their calls run through unary.h, as REST's do.
 */
#ifndef WALKLIST_GATEWAY_RPC_H
#define WALKLIST_GATEWAY_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocols/access.h"
#include "http/exchange.h"
#include "walklist/core.h"

/* Request messages, either transport and codec: gRPC's default message limit. A full batch
 * of an InventoryService method at its character limits (1,000 products, 64-character SKUs
 * and 200-character names in 4-byte UTF-8) is about 1.1 MB in either codec; the largest walk
 * list sent as JSON with every character \u-escaped (as Python's json.dumps does by default)
 * is about 155 KB, already over the 64 KiB of the REST routes. */
#define WL_RPC_REQUEST_LIMIT (4u * 1024 * 1024)
/* The reply's binary encoding, whichever codec is sent: gRPC's default message limit. A stock
 * export item takes about 41 bytes with a 20-character SKU and a 10-character rack, so this
 * is about 100,000 SKUs; answering that takes about 100 MB at its peak as JSON (25 MB as
 * binary), measured. A larger reply is refused; GET /api/v1/stock-export streams any size
 * with flat memory. */
#define WL_RPC_REPLY_LIMIT (4u * 1024 * 1024)
/* What a message of a server stream of stock items (StreamExportStock, a WatchStock delta) holds
 * before the next one starts: its encoding passes this by one item at most, far below the 4 MiB a
 * gRPC client takes by default, and large enough that framing costs nothing (about 25,000 SKUs
 * of 20 characters in binary). */
#define WL_RPC_STREAM_MESSAGE (1024u * 1024)
/* Everything one call allocates: the decoded request, the reply message and its encoding. A
 * reply of WL_RPC_REPLY_LIMIT takes about 20 MiB of it; a reply that would need more is
 * refused as RESOURCE_EXHAUSTED while it is being built. */
#define WL_RPC_ARENA_LIMIT (64u * 1024 * 1024)

/*
 * How a transport frames the messages of a server stream and its end, so that one generator
 * (generator.h) makes a stream's messages for either transport: Connect appends each message
 * enveloped in its codec and ends with its end-stream message; gRPC appends the binary message
 * alone (its core frames it) and keeps the end's error as the call's status.
 */
typedef struct wl_rpc_stream_wire {
    /** Appends message framed for the transport onto out; false when it cannot be made. */
    bool (*message)(const struct wl_rpc_stream_wire *wire, const ProtobufCMessage *message,
                    wl_arena_t *arena, wl_piece_t *out);
    /** Appends a message already encoded in the wire's codec (json below), len bytes at bytes,
     * framed for the transport onto out (arena: scratch memory, e.g. for gzip); false when it
     * cannot be made. */
    bool (*encoded)(const struct wl_rpc_stream_wire *wire, const char *bytes, size_t len,
                    wl_arena_t *arena, wl_piece_t *out);
    /** Ends the stream: with an error (code other than WL_GRPC_OK; message: what the client is
     * told), or well (WL_GRPC_OK: Connect's end-stream message without error, gRPC's OK). */
    void (*end)(const struct wl_rpc_stream_wire *wire, wl_grpc_code_t code, wl_reason_t reason,
                const char *message, wl_piece_t *out);
    bool json;  /* Connect: the JSON codec rather than the binary one */
    bool gzip;  /* Connect: messages worth it gzip-coded (Connect-Content-Encoding) */
    void *call; /* gRPC: the call whose status the end sets */
} wl_rpc_stream_wire_t;

/** The binary encoding of message appended onto out (gRPC's frame of a stream's message). */
bool wl_rpc_append_binary(const ProtobufCMessage *message, wl_piece_t *out);

/** One method of a core service as a procedure. */
typedef struct {
    char *path; /* "/walklist.v1.StockService/ExportStock" */
    size_t path_len;
    const wl_service_entry_t *service;
    unsigned method_index;
    /* Its proto declares option idempotency_level = NO_SIDE_EFFECTS (read from the embedded
     * descriptor set, as protobuf-c's descriptors carry no options). */
    bool no_side_effects;
} wl_rpc_procedure_t;

typedef struct {
    wl_rpc_procedure_t *items;
    size_t count;
} wl_rpc_procedures_t;

/** One procedure for every method of every core service (valid while the core lives);
 * WL_EINTERNAL when the embedded descriptor set cannot be read. */
int wl_rpc_procedures_init(wl_rpc_procedures_t *procedures, wl_core_t *core,
                           wl_error_t *err) WL_CHECK_RESULT;
void wl_rpc_procedures_dispose(wl_rpc_procedures_t *procedures);

/** The procedure of a path, NULL when none. */
const wl_rpc_procedure_t *wl_rpc_procedures_find(const wl_rpc_procedures_t *procedures,
                                                 wl_span_t path);

/** Decodes a binary request message, refusing strings that protobuf-c would pass on
 * damaged (a NUL byte, invalid UTF-8) with a field violation. */
int wl_rpc_decode_binary(const ProtobufCMessageDescriptor *desc, const void *body, size_t len,
                         wl_arena_t *arena, ProtobufCMessage **input,
                         wl_error_t *err) WL_CHECK_RESULT;

/** The message an error answer shows: never internals (INTERNAL, UNKNOWN, DATA_LOSS say
 * "internal error"); else message, else err's; NULL when neither says anything. */
const char *wl_rpc_public_message(wl_grpc_code_t code, const char *message, const wl_error_t *err);

/** err's field violations as a binary google.rpc.BadRequest in arena memory (*len bytes);
 * NULL when out of memory. */
uint8_t *wl_rpc_bad_request(wl_arena_t *arena, const wl_error_t *err, size_t *len);

#endif
