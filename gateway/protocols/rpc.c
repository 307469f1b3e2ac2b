/* Running a unary call of a core method for the RPC transports (Connect, gRPC) happens here. */
#include "protocols/rpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "google/rpc/error_details.pb-c.h"
#include "codec/proto_strings.h"

int wl_rpc_procedures_init(wl_rpc_procedures_t *procedures, wl_core_t *core, wl_error_t *err)
{
    *procedures = (wl_rpc_procedures_t){NULL, 0};
    const wl_service_entry_t *services;
    size_t service_count = wl_core_services(core, &services);
    size_t total = 0;
    for (size_t i = 0; i < service_count; i++)
        total += services[i].descriptor->n_methods;
    procedures->items = calloc(total ? total : 1, sizeof(*procedures->items));
    if (procedures->items == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    for (size_t i = 0; i < service_count; i++) {
        const ProtobufCServiceDescriptor *desc = services[i].descriptor;
        for (unsigned m = 0; m < desc->n_methods; m++) {
            wl_rpc_procedure_t *procedure = &procedures->items[procedures->count];
            size_t len = 1 + strlen(desc->name) + 1 + strlen(desc->methods[m].name);
            procedure->path = malloc(len + 1);
            if (procedure->path == NULL) {
                wl_rpc_procedures_dispose(procedures);
                return wl_error_set(err, WL_ENOMEM, NULL);
            }
            snprintf(procedure->path, len + 1, "/%s/%s", desc->name, desc->methods[m].name);
            procedure->path_len = len;
            procedure->service = &services[i];
            procedure->method_index = m;
            procedures->count++;
        }
    }
    return 0;
}

void wl_rpc_procedures_dispose(wl_rpc_procedures_t *procedures)
{
    for (size_t i = 0; i < procedures->count; i++)
        free(procedures->items[i].path);
    free(procedures->items);
    *procedures = (wl_rpc_procedures_t){NULL, 0};
}

const wl_rpc_procedure_t *wl_rpc_procedures_find(const wl_rpc_procedures_t *procedures,
                                                 wl_span_t path)
{
    for (size_t i = 0; i < procedures->count; i++) {
        const wl_rpc_procedure_t *procedure = &procedures->items[i];
        if (wl_span_eq(path, wl_span(procedure->path, procedure->path_len)))
            return procedure;
    }
    return NULL;
}

int wl_rpc_decode_binary(const ProtobufCMessageDescriptor *desc, const void *body, size_t len,
                         wl_arena_t *arena, ProtobufCMessage **input, wl_error_t *err)
{
    if (body == NULL)
        body = "";
    /* protobuf-c would cut a string at a NUL byte and pass invalid UTF-8 on. */
    if (wl_proto_check_strings(desc, body, len, err) != 0)
        return WL_EINVAL;
    *input = protobuf_c_message_unpack(desc, &arena->allocator, len, body);
    if (*input == NULL)
        return wl_error_set(err, WL_EINVAL, "the body is not a valid %s message", desc->name);
    return 0;
}

const char *wl_rpc_public_message(wl_grpc_code_t code, const char *message, const wl_error_t *err)
{
    if (code == WL_GRPC_INTERNAL || code == WL_GRPC_UNKNOWN || code == WL_GRPC_DATA_LOSS)
        return "internal error";
    if (message == NULL && err != NULL && err->message[0] != '\0')
        message = err->message;
    return message;
}

uint8_t *wl_rpc_bad_request(wl_arena_t *arena, const wl_error_t *err, size_t *len)
{
    Google__Rpc__BadRequest request = GOOGLE__RPC__BAD_REQUEST__INIT;
    Google__Rpc__BadRequest__FieldViolation violations[WL_MAX_VIOLATIONS];
    Google__Rpc__BadRequest__FieldViolation *pointers[WL_MAX_VIOLATIONS];
    size_t count =
        err->violation_count < WL_MAX_VIOLATIONS ? err->violation_count : WL_MAX_VIOLATIONS;
    for (size_t i = 0; i < count; i++) {
        google__rpc__bad_request__field_violation__init(&violations[i]);
        violations[i].field = (char *)err->violations[i].field;
        violations[i].description = (char *)err->violations[i].description;
        pointers[i] = &violations[i];
    }
    request.n_field_violations = count;
    request.field_violations = pointers;
    *len = google__rpc__bad_request__get_packed_size(&request);
    uint8_t *packed = wl_arena_alloc(arena, *len ? *len : 1);
    if (packed != NULL)
        google__rpc__bad_request__pack(&request, packed);
    return packed;
}

static void answer(const wl_rpc_transport_t *transport, wl_exchange_t *ex, wl_grpc_code_t code,
                   wl_reason_t reason, const char *message, const wl_error_t *err)
{
    transport->access->answer(ex, wl_http_status_of(code), code, reason, message, err);
}

void wl_rpc_finish(const wl_rpc_transport_t *transport, wl_core_t *core, wl_exchange_t *ex,
                   const wl_rpc_procedure_t *procedure)
{
    const wl_service_entry_t *service = procedure->service;
    unsigned method_index = procedure->method_index;
    const wl_access_t *access = transport->access;
    wl_error_t err;
    wl_error_init(&err);

    ProtobufCMessage *input = NULL;
    int rc = transport->decode(ex, service->descriptor->methods[method_index].input, &input, &err,
                               transport->data);
    if (rc == 0 && transport->expired(transport->data)) {
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
    if (rc == 0 && !transport->expired(transport->data)) {
        if (protobuf_c_message_get_packed_size(call.reply) > WL_RPC_REPLY_LIMIT) {
            char message[256];
            snprintf(message, sizeof(message),
                     "the reply is larger than %u bytes, the most a unary call returns (GET "
                     "/api/v1/stock-export streams the stock export at any size)",
                     WL_RPC_REPLY_LIMIT);
            access->answer(ex, 429, WL_GRPC_RESOURCE_EXHAUSTED, WL_REASON_REPLY_TOO_LARGE, message,
                           NULL);
            answered = true;
        } else {
            answered = transport->reply(ex, call.reply, transport->data);
        }
    }
    if (ex->arena.limit_reached) {
        /* The reply is dropped; the few bytes of the error answer may still come from the arena. */
        ex->arena.limit += 64 * 1024;
        answered = false;
    }
    if (answered) {
        if (call.replayed && ex->status == 200)
            wl_exchange_add_header(ex, "Idempotent-Replayed", "true");
        return;
    }
    if (transport->expired(transport->data)) {
        /* The client has given up by now, whatever the method did. */
        transport->answer_expired(ex, transport->data);
        return;
    }
    if (ex->arena.limit_reached) {
        char message[128];
        snprintf(message, sizeof(message),
                 "the reply needs more than the %u MiB a unary call may use",
                 WL_RPC_ARENA_LIMIT / (1024 * 1024));
        answer(transport, ex, WL_GRPC_RESOURCE_EXHAUSTED, WL_REASON_REPLY_TOO_LARGE, message, NULL);
        return;
    }
    if (rc == 0)
        wl_error_set(&err, WL_ENOMEM, NULL);
    wl_grpc_code_t code = wl_error_grpc_code(err.code);
    if (code == WL_GRPC_UNAVAILABLE)
        wl_exchange_add_header(ex, "Retry-After", "1");
    answer(transport, ex, code, wl_reason_of_error(err.code), NULL, &err);
}
