/*
 * StockService.WatchStock's messages after the first, as a generator (generator.h) for either RPC
 * transport: over Connect on HTTP/1.1 a chunked 200 whose body is enveloped WatchStockResponse
 * messages, then the end-stream message; over gRPC one message per proceed, then the status.
 *
 * Pull, one message at a time: the next delta is read from PostgreSQL (wl_core_watch_stock, on
 * a request thread) only once the previous message has gone to the socket, so a slow client gets
 * fewer, larger (coalesced) deltas and the stream holds one message at most. With nothing to
 * send the generator idles and parks (stock_watch.h): no thread is held until a change of its
 * organization, its heartbeat, or the server's stop wakes it.
 *
 * The stream ends with the error that ended it (Connect's end-stream message, gRPC's status):
 * unavailable at shutdown, resource_exhausted when the client did not take a whole message
 * within the stall limit, out_of_range (CURSOR_EXPIRED) or another core error when a delta could
 * not be read. Each says to resume from the last cursor received.
 */
#ifndef WALKLIST_GATEWAY_WATCH_STREAM_H
#define WALKLIST_GATEWAY_WATCH_STREAM_H

#include <stdbool.h>

#include "http/exchange.h"
#include "http/generator.h"
#include "export/stock_watch.h"
#include "protocols/rpc.h"
#include "walklist/core.h"

/**
 * The generator of the messages that follow first (a WatchStockResponse, sent by the caller) for
 * principal's organization, framed by wire. Each proceed reads at most one delta and appends at
 * most one message, then idles (or ends: DONE). NULL when out of memory.
 */
wl_generator_t *wl_watch_stream_create(wl_core_t *core, wl_stock_watch_t *watch,
                                       const wl_principal_t *principal,
                                       const ProtobufCMessage *first,
                                       const wl_rpc_stream_wire_t *wire);

/**
 * Answers ex (admitted: ex->principal is set) with the Connect stream that starts with first in
 * the JSON or the binary codec, its messages gzip-coded (Connect-Content-Encoding) when gzip.
 * false when out of memory (nothing set).
 */
bool wl_watch_stream_start(wl_exchange_t *ex, wl_core_t *core, wl_stock_watch_t *watch, bool json,
                           bool gzip, const ProtobufCMessage *first);

#endif
