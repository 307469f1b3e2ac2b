/*
 * StockService.WatchStock as a Connect server stream on HTTP/1.1: a chunked 200 whose body is
 * enveloped WatchStockResponse messages, then the end-stream message.
 *
 * Pull, one message at a time: the next delta is read from PostgreSQL (wl_core_watch_stock, on
 * a request thread) only once the previous message has been handed to the socket, so a slow
 * client gets fewer, larger (coalesced) deltas and the stream holds one message at most. With
 * nothing to send the stream parks (stock_watch.h): its connection is suspended and no thread
 * is held until a change of its organization, its heartbeat, or the server's stop wakes it.
 *
 * The end-stream message carries the error that ended the stream: unavailable at shutdown,
 * resource_exhausted when the client did not take a whole message within the stall limit,
 * out_of_range (CURSOR_EXPIRED) or another core error when a delta could not be read. Each
 * message says to resume from the last cursor received.
 */
#ifndef WALKLIST_GATEWAY_WATCH_STREAM_H
#define WALKLIST_GATEWAY_WATCH_STREAM_H

#include <stdbool.h>

#include "http/exchange.h"
#include "export/stock_watch.h"
#include "walklist/core.h"

/**
 * Answers ex (admitted: ex->principal is set) with the stream that starts with first (a
 * WatchStockResponse) in the JSON or the binary codec. false when out of memory (nothing set).
 */
bool wl_watch_stream_start(wl_exchange_t *ex, wl_core_t *core, wl_stock_watch_t *watch, bool json,
                           const ProtobufCMessage *first);

#endif
