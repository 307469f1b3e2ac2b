/* Running a unary call of a core method for the RPC transports (Connect, gRPC) happens here. */
#include "protocols/rpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "google/rpc/error_details.pb-c.h"
#include "codec/proto_strings.h"
#include "google/protobuf/descriptor.pb-c.h"
#include "reflection/descriptor_index.h"

int wl_rpc_procedures_init(wl_rpc_procedures_t *procedures, wl_core_t *core, wl_error_t *err)
{
    *procedures = (wl_rpc_procedures_t){NULL, 0};
    const wl_service_entry_t *services;
    size_t service_count = wl_core_services(core, &services);
    size_t total = 0;
    for (size_t i = 0; i < service_count; i++)
        total += services[i].descriptor->n_methods;
    /* The methods' options, which protobuf-c's descriptors leave out, from the descriptor set
     * that gRPC reflection serves: the proto files as the build compiled them. */
    wl_descriptor_index_t *index = NULL;
    wl_error_t index_err;
    wl_error_init(&index_err);
    int rc = wl_descriptor_index_create((const uint8_t *)wl_descriptor_set, wl_descriptor_set_len,
                                        &index, &index_err);
    if (rc != 0)
        return rc == WL_ENOMEM ? wl_error_set(err, rc, NULL)
                               : wl_error_set(err, WL_EINTERNAL,
                                              "the embedded descriptor set does not index: %s",
                                              index_err.message);
    procedures->items = calloc(total ? total : 1, sizeof(*procedures->items));
    if (procedures->items == NULL) {
        wl_descriptor_index_destroy(index);
        return wl_error_set(err, WL_ENOMEM, NULL);
    }
    for (size_t i = 0; i < service_count; i++) {
        const ProtobufCServiceDescriptor *desc = services[i].descriptor;
        for (unsigned m = 0; m < desc->n_methods; m++) {
            wl_rpc_procedure_t *procedure = &procedures->items[procedures->count];
            size_t len = 1 + strlen(desc->name) + 1 + strlen(desc->methods[m].name);
            procedure->path = malloc(len + 1);
            if (procedure->path == NULL) {
                wl_descriptor_index_destroy(index);
                wl_rpc_procedures_dispose(procedures);
                return wl_error_set(err, WL_ENOMEM, NULL);
            }
            snprintf(procedure->path, len + 1, "/%s/%s", desc->name, desc->methods[m].name);
            procedure->path_len = len;
            procedure->service = &services[i];
            procedure->method_index = m;
            procedure->no_side_effects =
                wl_descriptor_index_idempotency(index, desc->name, desc->methods[m].name) ==
                GOOGLE__PROTOBUF__METHOD_OPTIONS__IDEMPOTENCY_LEVEL__NO_SIDE_EFFECTS;
            procedures->count++;
        }
    }
    wl_descriptor_index_destroy(index);
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

bool wl_rpc_append_binary(const ProtobufCMessage *message, wl_piece_t *out)
{
    size_t len = protobuf_c_message_get_packed_size(message);
    char *room = wl_piece_reserve(out, len);
    if (room == NULL)
        return false;
    out->len += protobuf_c_message_pack(message, (uint8_t *)room);
    return true;
}
