/* Running one call of a core method for any transport happens here. */
#include "protocols/unary.h"

#include <stdio.h>

#include "errors/status_map.h"

static bool never_expired(void *data)
{
    (void)data;
    return false;
}

static void answer_core_error(const wl_unary_transport_t *transport, wl_exchange_t *ex,
                              const wl_error_t *err)
{
    if (transport->answer_error != NULL) {
        transport->answer_error(ex, err, transport->data);
        return;
    }
    wl_grpc_code_t code = wl_error_grpc_code(err->code);
    if (code == WL_GRPC_UNAVAILABLE)
        wl_exchange_add_header(ex, "Retry-After", "1");
    transport->access->answer(ex, wl_http_status_of(code), code, wl_reason_of_error(err->code),
                              NULL, err);
}

/* A call started where the request may not wait: kept (arena memory) while the core runs it,
 * for the run of the request that answers it. */
struct wl_unary_pending {
    wl_call_t call;
    wl_error_t err;
    bool expired_first; /* the deadline passed before the call could start: it never ran */
};

void wl_unary_call(const wl_unary_transport_t *transport, wl_core_t *core, wl_exchange_t *ex,
                   const wl_service_entry_t *service, unsigned method_index)
{
    const wl_access_t *access = transport->access;
    bool (*expired)(void *) = transport->expired != NULL ? transport->expired : never_expired;
    wl_unary_pending_t *pending = ex->unary;
    if (pending == NULL) {
        /* Each member is set below (the error record's head only: wl_error_init). */
        pending = wl_arena_alloc_unzeroed(&ex->arena, sizeof(*pending));
        if (pending == NULL) {
            access->answer(ex, 500, WL_GRPC_INTERNAL, WL_REASON_INTERNAL, NULL, NULL);
            return;
        }
        ex->unary = pending;
        wl_error_init(&pending->err);
        ProtobufCMessage *input = NULL;
        int rc = transport->decode(ex, service->descriptor->methods[method_index].input, &input,
                                   &pending->err, transport->data);
        pending->expired_first = rc == 0 && expired(transport->data);
        pending->call = (wl_call_t){.core = core,
                                    .arena = &ex->arena,
                                    .admission = ex->admission,
                                    .err = &pending->err,
                                    .gave_up = transport->expired,
                                    .gave_up_data = transport->data,
                                    .idempotency_key = wl_exchange_header(ex, "Idempotency-Key")};
        if (rc != 0 || pending->expired_first) {
            /* Answered below, without the core. */
        } else if (ex->may_wait) {
            rc = wl_core_invoke(&pending->call, service, method_index, input); /* err says */
        } else if (!wl_core_invoke_async(&pending->call, service, method_index, input,
                                         &ex->completion)) {
            /* The core goes on where it may wait; the request runs again once it finished. */
            ex->stop = WL_EXCHANGE_AWAITS_CORE;
            return;
        }
    }
    if (pending->expired_first) {
        if (wl_access_admitted(access, ex))
            transport->answer_expired(ex, transport->data);
        return;
    }
    const wl_call_t *call = &pending->call;
    wl_error_t *err = &pending->err;
    int rc = err->code;
    /* A refused admission answers first (also when the body could not be decoded). */
    if (!wl_access_admitted(access, ex))
        return;
    bool answered = false;
    if (rc == 0 && !expired(transport->data)) {
        if (transport->reply_limit > 0 &&
            protobuf_c_message_get_packed_size(call->reply) > transport->reply_limit) {
            char message[256];
            snprintf(message, sizeof(message),
                     "the reply is larger than %zu bytes, the most a unary call returns "
                     "(StreamExportStock and GET /api/v1/stock-export stream the stock export "
                     "at any size)",
                     transport->reply_limit);
            access->answer(ex, 429, WL_GRPC_RESOURCE_EXHAUSTED, WL_REASON_REPLY_TOO_LARGE, message,
                           NULL);
            answered = true;
        } else {
            answered = transport->reply(ex, call->reply, transport->data);
        }
    }
    size_t arena_limit = ex->arena.limit;
    bool arena_full = ex->arena.limit_reached;
    if (arena_full) {
        /* The reply is dropped; the few bytes of the error answer may still come from the arena. */
        ex->arena.limit += 64 * 1024;
        answered = false;
    }
    if (answered) {
        if (call->replayed && ex->status >= 200 && ex->status < 300)
            wl_exchange_add_header(ex, "Idempotent-Replayed", "true");
        return;
    }
    if (expired(transport->data)) {
        /* The client has given up by now, whatever the method did. */
        transport->answer_expired(ex, transport->data);
        return;
    }
    if (arena_full) {
        char message[128];
        snprintf(message, sizeof(message),
                 "the reply needs more than the %zu MiB a unary call may use",
                 arena_limit / (1024 * 1024));
        access->answer(ex, 429, WL_GRPC_RESOURCE_EXHAUSTED, WL_REASON_REPLY_TOO_LARGE, message,
                       NULL);
        return;
    }
    if (rc == 0)
        wl_error_set(err, WL_ENOMEM, NULL);
    answer_core_error(transport, ex, err);
}
