/* gRPC server reflection: the descriptor index's lookups and the answers to each request. */
#include "test.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "google/protobuf/descriptor.pb-c.h"
#include "grpc/reflection/v1/reflection.pb-c.h"
#include "reflection/descriptor_index.h"
#include "reflection/reflection.h"

extern const char wl_descriptor_set[];
extern const size_t wl_descriptor_set_len;

typedef Grpc__Reflection__V1__ServerReflectionRequest request_t;
typedef Grpc__Reflection__V1__ServerReflectionResponse response_t;

static const char *file_of(const wl_descriptor_index_t *index, const char *symbol)
{
    size_t file = wl_descriptor_index_find_symbol(index, wl_span_str(symbol));
    return file == WL_DESCRIPTOR_NONE ? NULL : wl_descriptor_index_file_name(index, file);
}

static void test_embedded_set(void)
{
    wl_descriptor_index_t *index = NULL;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_descriptor_index_create((const uint8_t *)wl_descriptor_set, wl_descriptor_set_len,
                                         &index, &err),
              0);
    if (index == NULL)
        return;
    static const struct {
        const char *symbol;
        const char *file; /* NULL: no file declares it */
    } cases[] = {
        {"walklist.v1.LocateListService", "walklist/v1/locate_list.proto"},
        {"walklist.v1.LocateListService.GetLocateList", "walklist/v1/locate_list.proto"},
        {"walklist.v1.LocateList", "walklist/v1/locate_list.proto"},
        {"walklist.v1.LocateList.created_at", "walklist/v1/locate_list.proto"},
        {"walklist.v1.StockService.WatchStock", "walklist/v1/stock.proto"},
        {"grpc.health.v1.HealthCheckResponse.ServingStatus", "grpc/health/v1/health.proto"},
        /* An enum value is its enum's sibling, as in C++. */
        {"grpc.health.v1.HealthCheckResponse.SERVING", "grpc/health/v1/health.proto"},
        {"grpc.health.v1.HealthCheckResponse.ServingStatus.SERVING", NULL},
        {"grpc.reflection.v1.ServerReflectionRequest.message_request",
         "grpc/reflection/v1/reflection.proto"},
        {"grpc.reflection.v1alpha.ServerReflection", "grpc/reflection/v1alpha/reflection.proto"},
        {"google.protobuf.Timestamp", "google/protobuf/timestamp.proto"},
        {"google.rpc.Status", "google/rpc/status.proto"},
        {"walklist.v1", NULL}, /* a package */
        {"walklist.v1.Locate", NULL},
        {"walklist.v1.LocateListServices", NULL},
        {".walklist.v1.LocateList", NULL},
        {"walklist.v1.LocateList.", NULL},
        {"", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        CHECK_STR(file_of(index, cases[i].symbol), cases[i].file);
    /* A span is not NUL-terminated: only its bytes count. */
    CHECK_STR(wl_descriptor_index_file_name(
                  index,
                  wl_descriptor_index_find_symbol(index, wl_span("walklist.v1.LocateListXYZ", 22))),
              "walklist/v1/locate_list.proto");

    size_t stock = wl_descriptor_index_find_file(index, wl_span_str("walklist/v1/stock.proto"));
    CHECK(stock != WL_DESCRIPTOR_NONE);
    CHECK(wl_descriptor_index_find_file(index, wl_span_str("walklist/v1/stock")) ==
          WL_DESCRIPTOR_NONE);
    if (stock != WL_DESCRIPTOR_NONE) {
        const size_t *imports;
        CHECK_INT(wl_descriptor_index_imports(index, stock, &imports), 2);
        CHECK_STR(wl_descriptor_index_file_name(index, imports[0]),
                  "google/protobuf/timestamp.proto");
        CHECK_STR(wl_descriptor_index_file_name(index, imports[1]),
                  "google/protobuf/wrappers.proto");
        /* The bytes are the file's FileDescriptorProto. */
        wl_span_t bytes = wl_descriptor_index_file_bytes(index, stock);
        Google__Protobuf__FileDescriptorProto *file =
            google__protobuf__file_descriptor_proto__unpack(NULL, bytes.len,
                                                            (const uint8_t *)bytes.base);
        CHECK(file != NULL && strcmp(file->name, "walklist/v1/stock.proto") == 0 &&
              strcmp(file->package, "walklist.v1") == 0);
        if (file != NULL)
            google__protobuf__file_descriptor_proto__free_unpacked(file, NULL);
    }
    const char *const *services;
    size_t count = wl_descriptor_index_services(index, &services);
    CHECK_INT(count, 7);
    for (size_t i = 0; i < count; i++)
        CHECK(file_of(index, services[i]) != NULL);
    wl_descriptor_index_destroy(index);
}

/* --- Hand-made sets: extensions, and sets that do not index --------------------------------- */

typedef struct {
    Google__Protobuf__FileDescriptorProto file;
    Google__Protobuf__DescriptorProto message, nested;
    Google__Protobuf__DescriptorProto *messages[1], *nested_messages[1];
    Google__Protobuf__FieldDescriptorProto extensions[2];
    Google__Protobuf__FieldDescriptorProto *extension_pointers[2];
    char *dependencies[1];
} test_file_t;

/* "name" in package test, declaring message Box with Box.Inner, and extensions of Box numbered
 * first_number and first_number + 1 (scoped in Box.Inner when nested). */
static void make_file(test_file_t *f, char *name, char *box, int32_t first_number, bool nested,
                      char *dependency)
{
    google__protobuf__file_descriptor_proto__init(&f->file);
    google__protobuf__descriptor_proto__init(&f->message);
    google__protobuf__descriptor_proto__init(&f->nested);
    f->file.name = name;
    f->file.package = "test";
    f->message.name = box;
    f->nested.name = "Inner";
    f->nested_messages[0] = &f->nested;
    f->message.n_nested_type = 1;
    f->message.nested_type = f->nested_messages;
    f->messages[0] = &f->message;
    f->file.n_message_type = 1;
    f->file.message_type = f->messages;
    static char *extension_names[2][2] = {{"first", "second"}, {"third", "fourth"}};
    for (int i = 0; i < 2; i++) {
        google__protobuf__field_descriptor_proto__init(&f->extensions[i]);
        f->extensions[i].name = extension_names[first_number > 100][i];
        f->extensions[i].extendee = ".test.Box";
        f->extensions[i].has_number = 1;
        f->extensions[i].number = first_number + i;
        f->extension_pointers[i] = &f->extensions[i];
    }
    if (nested) {
        f->nested.n_extension = 2;
        f->nested.extension = f->extension_pointers;
    } else {
        f->file.n_extension = 2;
        f->file.extension = f->extension_pointers;
    }
    if (dependency != NULL) {
        f->dependencies[0] = dependency;
        f->file.n_dependency = 1;
        f->file.dependency = f->dependencies;
    }
}

static int index_files(test_file_t *files, size_t count, wl_descriptor_index_t **index,
                       wl_error_t *err)
{
    Google__Protobuf__FileDescriptorProto *pointers[4];
    for (size_t i = 0; i < count; i++)
        pointers[i] = &files[i].file;
    Google__Protobuf__FileDescriptorSet set = GOOGLE__PROTOBUF__FILE_DESCRIPTOR_SET__INIT;
    set.n_file = count;
    set.file = pointers;
    uint8_t bytes[1024];
    size_t len = google__protobuf__file_descriptor_set__get_packed_size(&set);
    if (len > sizeof(bytes))
        return -1;
    google__protobuf__file_descriptor_set__pack(&set, bytes);
    wl_error_init(err);
    return wl_descriptor_index_create(bytes, len, index, err);
}

static void test_extensions_and_bad_sets(void)
{
    test_file_t files[2];
    wl_descriptor_index_t *index = NULL;
    wl_error_t err;
    make_file(&files[0], "box.proto", "Box", 100, false, NULL);
    make_file(&files[1], "more.proto", "Crate", 200, true, "box.proto");
    CHECK_INT(index_files(files, 2, &index, &err), 0);
    if (index != NULL) {
        CHECK_STR(file_of(index, "test.first"), "box.proto");
        CHECK_STR(file_of(index, "test.Crate.Inner.third"), "more.proto");
        CHECK_STR(file_of(index, "test.Box.Inner"), "box.proto");
        size_t more = wl_descriptor_index_find_extension(index, wl_span_str("test.Box"), 201);
        CHECK_STR(more == WL_DESCRIPTOR_NONE ? NULL : wl_descriptor_index_file_name(index, more),
                  "more.proto");
        CHECK(wl_descriptor_index_find_extension(index, wl_span_str("test.Box"), 102) ==
              WL_DESCRIPTOR_NONE);
        CHECK(wl_descriptor_index_find_extension(index, wl_span_str("test.Crate"), 100) ==
              WL_DESCRIPTOR_NONE);
        int32_t numbers[3];
        CHECK_INT(wl_descriptor_index_extension_numbers(index, wl_span_str("test.Box"), numbers, 3),
                  4);
        CHECK_INT(numbers[0] + numbers[1] + numbers[2], 100 + 101 + 200);
        CHECK_INT(
            wl_descriptor_index_extension_numbers(index, wl_span_str("test.Crate"), numbers, 3), 0);
        wl_descriptor_index_destroy(index);
        index = NULL;
    }

    /* Two files declaring test.Box. */
    make_file(&files[1], "more.proto", "Box", 200, true, NULL);
    CHECK_INT(index_files(files, 2, &index, &err), WL_EINVAL);
    CHECK(strstr(err.message, "test.Box") != NULL);
    CHECK(index == NULL);
    /* An import the set lacks. */
    make_file(&files[1], "more.proto", "Crate", 200, true, "missing.proto");
    CHECK_INT(index_files(files, 2, &index, &err), WL_EINVAL);
    CHECK(strstr(err.message, "missing.proto") != NULL);
    /* Bytes that are no FileDescriptorSet. */
    wl_error_init(&err);
    CHECK_INT(wl_descriptor_index_create((const uint8_t *)"\xff\xff", 2, &index, &err), WL_EINVAL);
    CHECK(index == NULL);
}

/* --- Answers --------------------------------------------------------------------------------- */

static bool serves_stock_only(const char *service, void *data)
{
    (void)data;
    return strcmp(service, "walklist.v1.StockService") == 0;
}

/* Packs request, answers it on stream; the unpacked answer (arena memory), NULL on failure. */
static response_t *ask(const wl_reflection_t *reflection, wl_reflection_stream_t *stream,
                       const request_t *request, wl_arena_t *arena, int *rc)
{
    uint8_t bytes[512];
    size_t len = grpc__reflection__v1__server_reflection_request__pack(request, bytes);
    wl_error_t err;
    wl_error_init(&err);
    wl_span_t reply;
    *rc = wl_reflection_answer(reflection, stream, wl_span((const char *)bytes, len), arena, &reply,
                               &err);
    if (*rc != 0)
        return NULL;
    return grpc__reflection__v1__server_reflection_response__unpack(&arena->allocator, reply.len,
                                                                    (const uint8_t *)reply.base);
}

static size_t files_answered(const response_t *response)
{
    if (response == NULL ||
        response->message_response_case !=
            GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_FILE_DESCRIPTOR_RESPONSE)
        return 0;
    return response->file_descriptor_response->n_file_descriptor_proto;
}

static void test_answers(void)
{
    CHECK_STR(wl_reflection_method(wl_span_str("/grpc.reflection.v1.ServerReflection/"
                                               "ServerReflectionInfo")),
              "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo");
    CHECK(wl_reflection_method(wl_span_str("/grpc.reflection.v1alpha.ServerReflection/"
                                           "ServerReflectionInfo")) != NULL);
    CHECK(wl_reflection_method(wl_span_str("/grpc.reflection.v1.ServerReflection/Info")) == NULL);

    wl_reflection_t *reflection = NULL;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_reflection_create(serves_stock_only, NULL, &reflection, &err), 0);
    if (reflection == NULL)
        return;
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    wl_reflection_stream_t *stream = wl_reflection_stream_new(reflection, &arena);
    CHECK(stream != NULL);
    int rc;

    /* list_services: what the listener serves (here StockService) and reflection itself. */
    request_t request = GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__INIT;
    request.host = "example.org";
    request.message_request_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_LIST_SERVICES;
    request.list_services = "";
    response_t *response = ask(reflection, stream, &request, &arena, &rc);
    CHECK_INT(rc, 0);
    CHECK(response != NULL && response->list_services_response != NULL);
    if (response != NULL && response->list_services_response != NULL) {
        CHECK_STR(response->valid_host, "example.org");
        CHECK(response->original_request != NULL &&
              response->original_request->message_request_case == request.message_request_case);
        const Grpc__Reflection__V1__ListServiceResponse *list = response->list_services_response;
        CHECK_INT(list->n_service, 3);
        for (size_t i = 0; i < list->n_service; i++)
            CHECK(strcmp(list->service[i]->name, "walklist.v1.StockService") == 0 ||
                  strncmp(list->service[i]->name, "grpc.reflection.", 16) == 0);
    }

    /* A file with its imports, then its imports only once per stream. */
    request.message_request_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_SYMBOL;
    request.file_containing_symbol = "walklist.v1.StockService.ListStock";
    CHECK_INT(files_answered(ask(reflection, stream, &request, &arena, &rc)), 3);
    request.file_containing_symbol = "walklist.v1.LocateList";
    CHECK_INT(files_answered(ask(reflection, stream, &request, &arena, &rc)), 1);
    request.message_request_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_BY_FILENAME;
    request.file_by_filename = "walklist/v1/stock.proto";
    CHECK_INT(files_answered(ask(reflection, stream, &request, &arena, &rc)), 1);

    /* What nobody declares: NOT_FOUND in the answer, the stream goes on. */
    request.file_by_filename = "walklist/v1/none.proto";
    response = ask(reflection, stream, &request, &arena, &rc);
    CHECK_INT(rc, 0);
    CHECK(response != NULL && response->error_response != NULL &&
          response->error_response->error_code == WL_GRPC_NOT_FOUND &&
          strstr(response->error_response->error_message, "walklist/v1/none.proto") != NULL);

    /* A request of a kind this server does not know. */
    request.message_request_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST__NOT_SET;
    response = ask(reflection, stream, &request, &arena, &rc);
    CHECK(response != NULL && response->error_response != NULL &&
          response->error_response->error_code == WL_GRPC_UNIMPLEMENTED);

    /* Bytes that are no request end the stream. */
    wl_span_t reply;
    wl_error_init(&err);
    CHECK_INT(
        wl_reflection_answer(reflection, stream, wl_span("\xff\xff", 2), &arena, &reply, &err),
        WL_EINVAL);

    wl_arena_dispose(&arena);
    wl_reflection_destroy(reflection);
}

int main(void)
{
    test_embedded_set();
    test_extensions_and_bad_sets();
    test_answers();
    return test_exit();
}
