/*
 * The server streams of the core's methods, one row per streaming method: which generator
 * (generator.h) makes its messages, on either RPC transport, from where the method's run said
 * the stream starts (a message that is never sent itself: core.h, server_streaming). Connect
 * (connect.c) and gRPC (grpc_server.c) both start every stream here.
 */
#ifndef WALKLIST_GATEWAY_RPC_STREAMS_H
#define WALKLIST_GATEWAY_RPC_STREAMS_H

#include "export/stock_watch.h"
#include "http/generator.h"
#include "protocols/rpc.h"
#include "walklist/core.h"

/**
 * The generator of procedure's stream for principal, starting where start (the run's reply)
 * says, framed by wire; NULL when the procedure has no row or out of memory.
 */
wl_generator_t *wl_rpc_stream_create(const wl_rpc_procedure_t *procedure, wl_core_t *core,
                                     wl_stock_watch_t *watch, const wl_principal_t *principal,
                                     const ProtobufCMessage *start,
                                     const wl_rpc_stream_wire_t *wire);

#endif
