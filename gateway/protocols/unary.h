/*
 * One call of a core method, the same for every transport (REST and device routes, Connect,
 * gRPC): decode -> admit -> invoke -> encode, answered in one order (a refused admission first,
 * then the request's own problems, the deadline, the reply's size, the core's error). Each
 * transport brings its codec and writes its own answers through the hooks below.
 */
#ifndef WALKLIST_GATEWAY_UNARY_H
#define WALKLIST_GATEWAY_UNARY_H

#include <stdbool.h>
#include <stddef.h>

#include "http/exchange.h"
#include "protocols/access.h"
#include "walklist/core.h"

/** How a transport takes part in wl_unary_call; every function gets data. */
typedef struct {
    const wl_access_t *access; /* the admission's refusals; its answer writes RPC errors */
    /* The request message (arena memory): decoded from ex->body, or kept from an earlier run
     * of the same request; a WL_E* code with err filled otherwise. */
    int (*decode)(wl_exchange_t *ex, const ProtobufCMessageDescriptor *desc,
                  ProtobufCMessage **input, wl_error_t *err, void *data);
    /* Sets the successful answer for reply; false when out of memory. */
    bool (*reply)(wl_exchange_t *ex, const ProtobufCMessage *reply, void *data);
    /* The core's error err as the transport answers it; NULL: access->answer with the gRPC
     * code of the error, its HTTP status and its reason (Retry-After on UNAVAILABLE). */
    void (*answer_error)(wl_exchange_t *ex, const wl_error_t *err, void *data);
    /* True once the call's deadline has passed (the client has given up); NULL: none. */
    bool (*expired)(void *data);
    /* Answers DEADLINE_EXCEEDED with the transport's message. */
    void (*answer_expired)(wl_exchange_t *ex, void *data);
    /* The reply's binary encoding at most (RESOURCE_EXHAUSTED past it); 0: no limit. */
    size_t reply_limit;
    void *data;
} wl_unary_transport_t;

/**
 * Runs one call of method method_index of service whose admission started (ex->admission;
 * wl_access_begin): decodes the request, invokes the method (with the Idempotency-Key
 * header), and sets the answer. Where the request may not wait (ex->may_wait false), the call
 * runs asynchronously (wl_core_invoke_async with ex->completion): when it waits, the request
 * stops unanswered (ex->stop WL_EXCHANGE_AWAITS_CORE), and its next run, once the call
 * finished, answers it from ex->unary.
 */
void wl_unary_call(const wl_unary_transport_t *transport, wl_core_t *core, wl_exchange_t *ex,
                   const wl_service_entry_t *service, unsigned method_index);

#endif
