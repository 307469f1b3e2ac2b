/* Choosing the generator of each streaming method's messages happens here. */
#include "protocols/rpc_streams.h"

#include <string.h>

#include "protocols/export_rpc.h"
#include "protocols/watch_stream.h"
#include "walklist/v1/stock.pb-c.h"

typedef wl_generator_t *(*stream_create_t)(wl_core_t *core, wl_stock_watch_t *watch,
                                           const wl_principal_t *principal,
                                           const ProtobufCMessage *start,
                                           const wl_rpc_stream_wire_t *wire);

static wl_generator_t *watch_stock(wl_core_t *core, wl_stock_watch_t *watch,
                                   const wl_principal_t *principal, const ProtobufCMessage *start,
                                   const wl_rpc_stream_wire_t *wire)
{
    const char *cursor = ((const Walklist__V1__WatchStockResponse *)start)->cursor;
    return wl_watch_stream_create(core, watch, principal, cursor, wire);
}

static wl_generator_t *stream_export_stock(wl_core_t *core, wl_stock_watch_t *watch,
                                           const wl_principal_t *principal,
                                           const ProtobufCMessage *start,
                                           const wl_rpc_stream_wire_t *wire)
{
    (void)watch;
    const char *since = ((const Walklist__V1__StreamExportStockResponse *)start)->cursor;
    return wl_export_rpc_create(core, principal, since, wire);
}

static const struct {
    const char *path;
    const ProtobufCMessageDescriptor *start; /* the run's reply */
    stream_create_t create;
} streams[] = {
    {.path = "/walklist.v1.StockService/WatchStock",
     .start = &walklist__v1__watch_stock_response__descriptor,
     .create = watch_stock},
    {.path = "/walklist.v1.StockService/StreamExportStock",
     .start = &walklist__v1__stream_export_stock_response__descriptor,
     .create = stream_export_stock},
};

wl_generator_t *wl_rpc_stream_create(const wl_rpc_procedure_t *procedure, wl_core_t *core,
                                     wl_stock_watch_t *watch, const wl_principal_t *principal,
                                     const ProtobufCMessage *start,
                                     const wl_rpc_stream_wire_t *wire)
{
    for (size_t i = 0; i < sizeof(streams) / sizeof(streams[0]); i++)
        if (strcmp(procedure->path, streams[i].path) == 0)
            return start->descriptor == streams[i].start
                       ? streams[i].create(core, watch, principal, start, wire)
                       : NULL;
    return NULL;
}
