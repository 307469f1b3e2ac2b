/*
 * The device transport: POST /walklist.scanner.v1.DeviceService/<Method>
 * with nanopb-encoded walklist.scanner.v1 payloads (proto/walklist/scanner/v1/device.proto)
 * in both directions. Each device method is a codec between its compact device messages and
 * the core ScannerService's protobuf-c messages; api.c's route table names the codec of each
 * device route and does everything else (authentication, scope, invoke, errors) the way it
 * does for the REST routes. Errors are the same Google API error JSON as on /api/v1.
 */
#ifndef WALKLIST_GATEWAY_DEVICE_H
#define WALKLIST_GATEWAY_DEVICE_H

#include <protobuf-c/protobuf-c.h>

#include "http/exchange.h"
#include "walklist/arena.h"
#include "walklist/error.h"
#include "walklist/span.h"

/* Device requests are a few dozen bytes; anything larger is refused with 413. */
#define WL_DEVICE_BODY_LIMIT 1024u

typedef struct {
    /**
     * Decodes a device request body (nanopb, bounded by body.len) into the core
     * method's request message, allocated from arena. WL_EINVAL for a body that
     * is not a valid device message (truncated, garbage, over a bound).
     */
    int (*decode)(wl_span_t body, wl_arena_t *arena, ProtobufCMessage **input, wl_error_t *err);
    /**
     * Encodes the core's reply as the device response and sets it on ex:
     * 200, application/proto, body in ex's arena.
     */
    int (*encode)(const ProtobufCMessage *reply, wl_exchange_t *ex, wl_error_t *err);
} wl_device_codec_t;

/* ListPending -> walklist.v1.ScannerService/ListPendingLists */
extern const wl_device_codec_t wl_device_list_pending;
/* LoadList -> walklist.v1.ScannerService/LoadLocateList */
extern const wl_device_codec_t wl_device_load_list;

/**
 * Checks a device request once its headers are in: Content-Type must be
 * application/proto (else 415) and an announced body at most
 * WL_DEVICE_BODY_LIMIT (else 413). Returns true with ex->body_limit set,
 * or false with the error response set.
 */
bool wl_device_accept(wl_exchange_t *ex);

#endif
