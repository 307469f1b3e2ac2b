/*
 * Server reflection requests (gateway/reflection/reflection.c): the input is one
 * ServerReflectionRequest of a stream, as a client sends it. Every answer is a
 * ServerReflectionResponse that echoes the request and answers exactly one thing; a file answer
 * starts with a file of the embedded set.
 */
#include "fuzz.h"
#include "grpc/reflection/v1/reflection.pb-c.h"
#include "reflection/reflection.h"

static bool serves_all(const char *service, void *data)
{
    (void)service;
    (void)data;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static wl_reflection_t *reflection; /* built once, as walklistd does */
    wl_error_t err;
    wl_error_init(&err);
    if (reflection == NULL)
        FUZZ_CHECK(wl_reflection_create(serves_all, NULL, &reflection, &err) == 0);
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    wl_reflection_stream_t *stream = wl_reflection_stream_new(reflection, &arena);
    FUZZ_CHECK(stream != NULL);
    wl_span_t reply;
    int rc = wl_reflection_answer(reflection, stream, wl_span((const char *)data, size), &arena,
                                  &reply, &err);
    FUZZ_CHECK(rc == 0 || rc == WL_EINVAL);
    if (rc == 0) {
        Grpc__Reflection__V1__ServerReflectionResponse *response =
            grpc__reflection__v1__server_reflection_response__unpack(&arena.allocator, reply.len,
                                                                     (const uint8_t *)reply.base);
        FUZZ_CHECK(response != NULL && response->original_request != NULL);
        FUZZ_CHECK(response->message_response_case !=
                   GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE__NOT_SET);
        if (response->file_descriptor_response != NULL)
            FUZZ_CHECK(response->file_descriptor_response->n_file_descriptor_proto > 0);
    }
    wl_arena_dispose(&arena);
    return 0;
}
