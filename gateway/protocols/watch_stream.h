/*
 * StockService.WatchStock's messages, as a generator (generator.h) for either RPC transport: over
 * Connect on HTTP/1.1 a chunked 200 whose body is enveloped WatchStockResponse messages, then the
 * end-stream message; over gRPC one message per proceed, then the status.
 *
 * The first message comes at once: the delta since the stream's start (maybe no items), or,
 * from no cursor, no items and the current cursor. Later ones come on changes and heartbeats.
 * Each delta is read from its own snapshot and written in messages of about
 * WL_RPC_STREAM_MESSAGE bytes (export/export_message.h): a delta larger than that (a catch-up
 * from an old cursor) goes as several, each but the last with an empty cursor, one per proceed,
 * the snapshot held until its last; so a stream holds about two messages whatever the delta.
 *
 * Pull: the next delta is read from PostgreSQL (on a request thread) only once the previous
 * message has gone to the socket, so a slow client gets fewer, larger (coalesced) deltas. With
 * nothing to send the generator idles and parks (stock_watch.h): no thread is held until a change
 * of its organization, its heartbeat, or the server's stop wakes it.
 *
 * The stream ends with the error that ended it (Connect's end-stream message, gRPC's status):
 * unavailable at shutdown, resource_exhausted when the client did not take a whole message
 * within the stall limit, out_of_range (CURSOR_EXPIRED) or another core error when a delta could
 * not be read. Each says to resume from the last cursor received.
 */
#ifndef WALKLIST_GATEWAY_WATCH_STREAM_H
#define WALKLIST_GATEWAY_WATCH_STREAM_H

#include "http/generator.h"
#include "export/stock_watch.h"
#include "protocols/rpc.h"
#include "walklist/core.h"

/**
 * The generator of every message of a watch for principal's organization from the cursor start
 * ("" for the current version; the method checked it), framed by wire. Each proceed appends at
 * most one message. NULL when out of memory.
 */
wl_generator_t *wl_watch_stream_create(wl_core_t *core, wl_stock_watch_t *watch,
                                       const wl_principal_t *principal, const char *start,
                                       const wl_rpc_stream_wire_t *wire);

#endif
