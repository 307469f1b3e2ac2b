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

void wl_unary_call(const wl_unary_transport_t *transport, wl_core_t *core, wl_exchange_t *ex,
                   const wl_service_entry_t *service, unsigned method_index)
{
    /* Where no request may wait (libmicrohttpd's thread), a method that waits for nothing but
     * its admission runs up to it, and runs again once its group has committed. */
    if (!ex->may_wait && !wl_core_method_policy(service, method_index)->admits_with_work) {
        ex->stop = WL_EXCHANGE_NEEDS_DATABASE;
        return;
    }
    const wl_access_t *access = transport->access;
    bool (*expired)(void *) = transport->expired != NULL ? transport->expired : never_expired;
    wl_error_t err;
    wl_error_init(&err);

    ProtobufCMessage *input = NULL;
    int rc = transport->decode(ex, service->descriptor->methods[method_index].input, &input, &err,
                               transport->data);
    if (rc == 0 && expired(transport->data)) {
        if (wl_access_admitted(access, ex))
            transport->answer_expired(ex, transport->data);
        return;
    }
    wl_call_t call = {.core = core,
                      .arena = &ex->arena,
                      .admission = ex->admission,
                      .err = &err,
                      .gave_up = transport->expired,
                      .gave_up_data = transport->data,
                      .defer_admission = !ex->may_wait,
                      .idempotency_key = wl_exchange_header(ex, "Idempotency-Key")};
    if (rc == 0)
        rc = wl_core_invoke(&call, service, method_index, input);
    if (rc == WL_EWOULDWAIT) {
        wl_exchange_stopped(ex); /* it runs again, from the start */
        return;
    }
    /* A refused admission answers first (also when the body could not be decoded). */
    if (!wl_access_admitted(access, ex))
        return;
    bool answered = false;
    if (rc == 0 && !expired(transport->data)) {
        if (transport->reply_limit > 0 &&
            protobuf_c_message_get_packed_size(call.reply) > transport->reply_limit) {
            char message[256];
            snprintf(message, sizeof(message),
                     "the reply is larger than %zu bytes, the most a unary call returns (GET "
                     "/api/v1/stock-export streams the stock export at any size)",
                     transport->reply_limit);
            access->answer(ex, 429, WL_GRPC_RESOURCE_EXHAUSTED, WL_REASON_REPLY_TOO_LARGE, message,
                           NULL);
            answered = true;
        } else {
            answered = transport->reply(ex, call.reply, transport->data);
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
        if (call.replayed && ex->status >= 200 && ex->status < 300)
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
        wl_error_set(&err, WL_ENOMEM, NULL);
    answer_core_error(transport, ex, &err);
}
