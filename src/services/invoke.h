/*
 * Invoking a service method (wl_core_invoke, core.h) and the one protobuf-c face of every
 * service (ProtobufCService, for protobuf-c RPC users such as a gRPC transport), which invokes
 * through it.
 */
#ifndef WALKLIST_SERVICES_INVOKE_H
#define WALKLIST_SERVICES_INVOKE_H

#include <protobuf-c/protobuf-c.h>

#include "walklist/core.h"

/** WL__EWOULDWAIT, for a call that may not wait (its admission defers: wl__admission_defers) at
 * a wait that is not its admission's; nothing done yet that running the call again would
 * repeat. */
int wl__would_wait(wl_call_t *call);

/*
 * A service as protobuf-c's RPC interface sees it. Its invoke takes a wl_call_t as closure
 * data, goes through wl_core_invoke (admission, scope, the method) and calls the closure once,
 * with call->reply or with NULL when the call failed (call->err says why).
 */
typedef struct {
    ProtobufCService base; /* first: invoke finds the entry from it */
    const wl_service_entry_t *entry;
} wl_protobuf_service_t;

/** Sets service up for entry, which must outlive it. */
void wl__protobuf_service_init(wl_protobuf_service_t *service, const wl_service_entry_t *entry);

#endif
