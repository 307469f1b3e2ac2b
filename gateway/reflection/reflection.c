/* Answering gRPC server reflection requests from the embedded descriptor set happens here. */
#include "reflection/reflection.h"

#include <stdlib.h>
#include <string.h>

#include "grpc/reflection/v1/reflection.pb-c.h"
#include "protocols/rpc.h"
#include "reflection/descriptor_index.h"

/* A name quoted in an ErrorResponse is cut here: the request may carry megabytes of it. */
#define QUOTED_NAME_MAX 200
/* An all_extension_numbers_response lists at most this many numbers. */
#define EXTENSION_NUMBERS_MAX 1024

static const char *const reflection_methods[] = {
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
};

struct wl_reflection {
    wl_descriptor_index_t *index;
    const char **served; /* the index's service names that the listener serves */
    size_t served_count;
};

struct wl_reflection_stream {
    bool *file_sent; /* one per file of the index */
};

typedef Grpc__Reflection__V1__ServerReflectionRequest request_t;
typedef Grpc__Reflection__V1__ServerReflectionResponse response_t;

const char *wl_reflection_method(wl_span_t path)
{
    for (size_t i = 0; i < sizeof(reflection_methods) / sizeof(reflection_methods[0]); i++) {
        if (wl_span_eq(path, wl_span_str(reflection_methods[i])))
            return reflection_methods[i];
    }
    return NULL;
}

/* Whether service is one of reflection's own ("grpc.reflection.v1.ServerReflection"). */
static bool serves_itself(const char *service)
{
    size_t len = strlen(service);
    for (size_t i = 0; i < sizeof(reflection_methods) / sizeof(reflection_methods[0]); i++) {
        const char *path = reflection_methods[i];
        if (strncmp(path + 1, service, len) == 0 && path[1 + len] == '/')
            return true;
    }
    return false;
}

int wl_reflection_create(wl_reflection_serves_t serves, void *data, wl_reflection_t **out,
                         wl_error_t *err)
{
    *out = NULL;
    wl_reflection_t *reflection = calloc(1, sizeof(*reflection));
    if (reflection == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    wl_error_t index_err;
    wl_error_init(&index_err);
    int rc = wl_descriptor_index_create((const uint8_t *)wl_descriptor_set, wl_descriptor_set_len,
                                        &reflection->index, &index_err);
    if (rc != 0) {
        wl_reflection_destroy(reflection);
        return rc == WL_ENOMEM ? wl_error_set(err, rc, NULL)
                               : wl_error_set(err, WL_EINTERNAL,
                                              "the embedded descriptor set does not index: %s",
                                              index_err.message);
    }
    const char *const *services;
    size_t count = wl_descriptor_index_services(reflection->index, &services);
    reflection->served = calloc(count + 1, sizeof(*reflection->served));
    if (reflection->served == NULL) {
        wl_reflection_destroy(reflection);
        return wl_error_set(err, WL_ENOMEM, NULL);
    }
    for (size_t i = 0; i < count; i++) {
        if (serves_itself(services[i]) || serves(services[i], data))
            reflection->served[reflection->served_count++] = services[i];
    }
    *out = reflection;
    return 0;
}

void wl_reflection_destroy(wl_reflection_t *reflection)
{
    if (reflection == NULL)
        return;
    free(reflection->served);
    wl_descriptor_index_destroy(reflection->index);
    free(reflection);
}

wl_reflection_stream_t *wl_reflection_stream_new(const wl_reflection_t *reflection,
                                                 wl_arena_t *arena)
{
    wl_reflection_stream_t *stream = wl_arena_alloc(arena, sizeof(*stream));
    if (stream == NULL)
        return NULL;
    stream->file_sent = wl_arena_alloc(
        arena, (wl_descriptor_index_file_count(reflection->index) + 1) * sizeof(bool));
    return stream->file_sent ? stream : NULL;
}

static int answer_not_found(response_t *response, wl_arena_t *arena, const char *what,
                            const char *name)
{
    Grpc__Reflection__V1__ErrorResponse *error = wl_arena_alloc(arena, sizeof(*error));
    if (error == NULL)
        return WL_ENOMEM;
    grpc__reflection__v1__error_response__init(error);
    error->error_code = WL_GRPC_NOT_FOUND;
    size_t len = strlen(name);
    error->error_message = wl_arena_printf(arena, "%s not found: %.*s%s", what,
                                           (int)(len > QUOTED_NAME_MAX ? QUOTED_NAME_MAX : len),
                                           name, len > QUOTED_NAME_MAX ? "..." : "");
    if (error->error_message == NULL)
        return WL_ENOMEM;
    response->message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ERROR_RESPONSE;
    response->error_response = error;
    return 0;
}

/* The file, then those of its imports (transitively) not sent on this stream yet: a client
 * builds its pool from what the stream brought, as grpc-go answers. */
static int answer_file(const wl_reflection_t *reflection, wl_reflection_stream_t *stream,
                       size_t file, response_t *response, wl_arena_t *arena)
{
    const wl_descriptor_index_t *index = reflection->index;
    size_t count = wl_descriptor_index_file_count(index);
    size_t *queue = wl_arena_alloc(arena, count * sizeof(size_t));
    bool *queued = wl_arena_alloc(arena, count * sizeof(bool));
    ProtobufCBinaryData *protos = wl_arena_alloc(arena, count * sizeof(ProtobufCBinaryData));
    Grpc__Reflection__V1__FileDescriptorResponse *files = wl_arena_alloc(arena, sizeof(*files));
    if (queue == NULL || queued == NULL || protos == NULL || files == NULL)
        return WL_ENOMEM;
    grpc__reflection__v1__file_descriptor_response__init(files);
    size_t head = 0, tail = 0, sent = 0;
    queue[tail++] = file;
    queued[file] = true;
    while (head < tail) {
        size_t next = queue[head++];
        if (next == file || !stream->file_sent[next]) {
            wl_span_t bytes = wl_descriptor_index_file_bytes(index, next);
            protos[sent++] = (ProtobufCBinaryData){bytes.len, (uint8_t *)bytes.base};
            stream->file_sent[next] = true;
        }
        const size_t *imports;
        size_t import_count = wl_descriptor_index_imports(index, next, &imports);
        for (size_t i = 0; i < import_count; i++) {
            if (!queued[imports[i]]) {
                queued[imports[i]] = true;
                queue[tail++] = imports[i];
            }
        }
    }
    files->n_file_descriptor_proto = sent;
    files->file_descriptor_proto = protos;
    response->message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_FILE_DESCRIPTOR_RESPONSE;
    response->file_descriptor_response = files;
    return 0;
}

static int answer_services(const wl_reflection_t *reflection, response_t *response,
                           wl_arena_t *arena)
{
    size_t count = reflection->served_count;
    Grpc__Reflection__V1__ListServiceResponse *list = wl_arena_alloc(arena, sizeof(*list));
    Grpc__Reflection__V1__ServiceResponse *services =
        wl_arena_alloc(arena, (count + 1) * sizeof(*services));
    Grpc__Reflection__V1__ServiceResponse **pointers =
        wl_arena_alloc(arena, (count + 1) * sizeof(*pointers));
    if (list == NULL || services == NULL || pointers == NULL)
        return WL_ENOMEM;
    grpc__reflection__v1__list_service_response__init(list);
    for (size_t i = 0; i < count; i++) {
        grpc__reflection__v1__service_response__init(&services[i]);
        services[i].name = (char *)reflection->served[i];
        pointers[i] = &services[i];
    }
    list->n_service = count;
    list->service = pointers;
    response->message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_LIST_SERVICES_RESPONSE;
    response->list_services_response = list;
    return 0;
}

static int answer_extension_numbers(const wl_reflection_t *reflection, const char *type,
                                    response_t *response, wl_arena_t *arena)
{
    const wl_descriptor_index_t *index = reflection->index;
    if (wl_descriptor_index_find_symbol(index, wl_span_str(type)) == WL_DESCRIPTOR_NONE)
        return answer_not_found(response, arena, "type", type);
    Grpc__Reflection__V1__ExtensionNumberResponse *numbers =
        wl_arena_alloc(arena, sizeof(*numbers));
    int32_t *found = wl_arena_alloc(arena, EXTENSION_NUMBERS_MAX * sizeof(int32_t));
    if (numbers == NULL || found == NULL)
        return WL_ENOMEM;
    grpc__reflection__v1__extension_number_response__init(numbers);
    size_t count = wl_descriptor_index_extension_numbers(index, wl_span_str(type), found,
                                                         EXTENSION_NUMBERS_MAX);
    numbers->base_type_name = (char *)type;
    numbers->n_extension_number = count < EXTENSION_NUMBERS_MAX ? count : EXTENSION_NUMBERS_MAX;
    numbers->extension_number = found;
    response->message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ALL_EXTENSION_NUMBERS_RESPONSE;
    response->all_extension_numbers_response = numbers;
    return 0;
}

/* A request of a kind this server does not know (a newer protocol's): an ErrorResponse, and the
 * stream goes on, as gRPC's C++ reflection answers. */
static int answer_unimplemented(response_t *response, wl_arena_t *arena)
{
    Grpc__Reflection__V1__ErrorResponse *error = wl_arena_alloc(arena, sizeof(*error));
    if (error == NULL)
        return WL_ENOMEM;
    grpc__reflection__v1__error_response__init(error);
    error->error_code = WL_GRPC_UNIMPLEMENTED;
    error->error_message = "the request asks for nothing this server knows";
    response->message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ERROR_RESPONSE;
    response->error_response = error;
    return 0;
}

static int answer_request(const wl_reflection_t *reflection, wl_reflection_stream_t *stream,
                          const request_t *request, response_t *response, wl_arena_t *arena)
{
    const wl_descriptor_index_t *index = reflection->index;
    size_t file;
    switch (request->message_request_case) {
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_BY_FILENAME:
        file = wl_descriptor_index_find_file(index, wl_span_str(request->file_by_filename));
        if (file == WL_DESCRIPTOR_NONE)
            return answer_not_found(response, arena, "file", request->file_by_filename);
        return answer_file(reflection, stream, file, response, arena);
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_SYMBOL:
        file = wl_descriptor_index_find_symbol(index, wl_span_str(request->file_containing_symbol));
        if (file == WL_DESCRIPTOR_NONE)
            return answer_not_found(response, arena, "symbol", request->file_containing_symbol);
        return answer_file(reflection, stream, file, response, arena);
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_EXTENSION: {
        const Grpc__Reflection__V1__ExtensionRequest *extension =
            request->file_containing_extension;
        file = wl_descriptor_index_find_extension(index, wl_span_str(extension->containing_type),
                                                  extension->extension_number);
        if (file == WL_DESCRIPTOR_NONE)
            return answer_not_found(response, arena, "extension of", extension->containing_type);
        return answer_file(reflection, stream, file, response, arena);
    }
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_ALL_EXTENSION_NUMBERS_OF_TYPE:
        return answer_extension_numbers(reflection, request->all_extension_numbers_of_type,
                                        response, arena);
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_LIST_SERVICES:
        return answer_services(reflection, response, arena);
    default:
        return answer_unimplemented(response, arena);
    }
}

/* The request as it is echoed, without the fields this server does not know: protobuf-c keeps
 * whatever it skipped, malformed ones too, and packing them back would make an answer no
 * client can read. */
static void forget_unknown_fields(request_t *request)
{
    request->base.n_unknown_fields = 0;
    request->base.unknown_fields = NULL;
    if (request->message_request_case ==
        GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_EXTENSION) {
        request->file_containing_extension->base.n_unknown_fields = 0;
        request->file_containing_extension->base.unknown_fields = NULL;
    }
}

int wl_reflection_answer(const wl_reflection_t *reflection, wl_reflection_stream_t *stream,
                         wl_span_t request_bytes, wl_arena_t *arena, wl_span_t *reply,
                         wl_error_t *err)
{
    ProtobufCMessage *decoded = NULL;
    int rc = wl_rpc_decode_binary(&grpc__reflection__v1__server_reflection_request__descriptor,
                                  request_bytes.base, request_bytes.len, arena, &decoded, err);
    if (rc != 0)
        return rc;
    request_t *request = (request_t *)decoded;
    response_t response = GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__INIT;
    /* Every host is valid here: walklistd serves the same services whatever it is called. */
    response.valid_host = request->host;
    forget_unknown_fields(request);
    response.original_request = request;
    rc = answer_request(reflection, stream, request, &response, arena);
    if (rc != 0)
        return wl_error_set(err, rc, NULL);
    size_t len = grpc__reflection__v1__server_reflection_response__get_packed_size(&response);
    uint8_t *packed = wl_arena_alloc(arena, len ? len : 1);
    if (packed == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    grpc__reflection__v1__server_reflection_response__pack(&response, packed);
    *reply = wl_span((const char *)packed, len);
    return 0;
}
