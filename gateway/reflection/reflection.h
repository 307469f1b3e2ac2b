/*
 * gRPC server reflection (grpc.reflection.v1.ServerReflection/ServerReflectionInfo, and
 * v1alpha's, whose messages are v1's field for field): one ServerReflectionRequest in, its
 * ServerReflectionResponse out, from the descriptor set the build embeds (every file of the
 * services the gRPC listener serves, with their imports). Names nobody declares are answered
 * with an ErrorResponse NOT_FOUND, as gRPC's own reflection does. A stream remembers which
 * files it was sent, so that a file's imports go out once per stream (as grpc-go does). The
 * stream itself (a bidirectional call) is the gRPC transport's (protocols/grpc_server.c).
 */
#ifndef WALKLIST_GATEWAY_REFLECTION_H
#define WALKLIST_GATEWAY_REFLECTION_H

#include <stdbool.h>

#include "walklist/arena.h"
#include "walklist/error.h"
#include "walklist/span.h"

typedef struct wl_reflection wl_reflection_t;

/** What one stream was sent; arena memory of its call. */
typedef struct wl_reflection_stream wl_reflection_stream_t;

/** Whether the gRPC listener serves service ("walklist.v1.StockService"). */
typedef bool (*wl_reflection_serves_t)(const char *service, void *data);

/** The path of ServerReflectionInfo (v1 or v1alpha) that path is, static storage; NULL when
 * path is another method's. */
const char *wl_reflection_method(wl_span_t path);

/**
 * Indexes the embedded descriptor set; list_services will name reflection's own services and
 * those of the set for which serves (called here only) says true. WL_ENOMEM, or WL_EINTERNAL if the
 * build embedded a set that does not index.
 */
int wl_reflection_create(wl_reflection_serves_t serves, void *data, wl_reflection_t **out,
                         wl_error_t *err) WL_CHECK_RESULT;

/** NULL is fine. */
void wl_reflection_destroy(wl_reflection_t *reflection);

/** A new stream's memory, from arena (valid until it is disposed); NULL when out of memory. */
wl_reflection_stream_t *wl_reflection_stream_new(const wl_reflection_t *reflection,
                                                 wl_arena_t *arena);

/**
 * Answers request, a packed ServerReflectionRequest, on stream: the packed
 * ServerReflectionResponse in *reply (arena memory). WL_EINVAL (err says why) when request is
 * no ServerReflectionRequest: the stream ends there with INVALID_ARGUMENT. WL_ENOMEM.
 */
int wl_reflection_answer(const wl_reflection_t *reflection, wl_reflection_stream_t *stream,
                         wl_span_t request, wl_arena_t *arena, wl_span_t *reply,
                         wl_error_t *err) WL_CHECK_RESULT;

#endif
