/*
 * grpc.health.v1.Health/Watch's messages, as a generator (generator.h): the serving status of
 * the server ("") or of one of its services, sent first at once and then each time it changes,
 * until the server stops. The status is Check's (grpc_server.c): SERVING while the database is
 * reachable (/readyz, one check a second shared by every caller; a stream takes the last answer
 * rather than wait for a check in flight), NOT_SERVING otherwise and from
 * the start of a shutdown; SERVICE_UNKNOWN for a service the server does not have (the gRPC
 * health protocol keeps that stream open: the service may appear).
 *
 * Between messages the stream idles as a poller of the stock watch registry
 * (export/stock_watch.h): parked, woken about every second to look at the status again, and at
 * the stop. At the stop it sends NOT_SERVING (when it said otherwise last) and ends with
 * UNAVAILABLE, as WatchStock does.
 */
#ifndef WALKLIST_GATEWAY_HEALTH_STREAM_H
#define WALKLIST_GATEWAY_HEALTH_STREAM_H

#include <stdbool.h>

#include "export/stock_watch.h"
#include "http/generator.h"
#include "protocols/rpc.h"
#include "walklist/core.h"

/**
 * The generator of a Watch call's messages, framed by wire; known says whether the service
 * asked for exists ("" always does). NULL when out of memory.
 */
wl_generator_t *wl_health_stream_create(wl_core_t *core, wl_stock_watch_t *watch, bool known,
                                        const wl_rpc_stream_wire_t *wire);

#endif
