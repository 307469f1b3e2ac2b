/*
 * StockService.StreamExportStock's messages, as a generator (generator.h) for either RPC
 * transport: the export (or the delta since a cursor) read from the core's export cursor, one
 * snapshot, written as StreamExportStockResponse messages of about WL_RPC_STREAM_MESSAGE bytes
 * each (export/export_message.h), framed by the transport's stream wire (rpc.h). The first
 * proceed opens the snapshot on a request thread (the admitted call's since was checked by the
 * method); each proceed appends one message; the last carries generatedAt and the cursor, and
 * is followed by the stream's good end. The snapshot, and with it the pooled connection, is
 * held from the first message to the last or to stop, as for GET /api/v1/stock-export, so
 * memory stays at about two messages whatever the catalogue.
 *
 * An error ends the stream with it (Connect's end-stream message, gRPC's status): before the
 * first message (an expired cursor: out_of_range, CURSOR_EXPIRED; the database unavailable),
 * or half way (the database failed): the client then has an incomplete export and exports again.
 */
#ifndef WALKLIST_GATEWAY_EXPORT_RPC_H
#define WALKLIST_GATEWAY_EXPORT_RPC_H

#include "http/generator.h"
#include "protocols/rpc.h"
#include "walklist/core.h"

/**
 * The generator of the export for principal's organization, since the cursor since ("" for
 * the full export; the method checked it), framed by wire. NULL when out of memory.
 */
wl_generator_t *wl_export_rpc_create(wl_core_t *core, const wl_principal_t *principal,
                                     const char *since, const wl_rpc_stream_wire_t *wire);

#endif
