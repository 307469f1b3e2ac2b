/*
 * The index of a FileDescriptorSet (protoc --include_imports --descriptor_set_out): each file's
 * serialized FileDescriptorProto, its imports, and every fully-qualified name it declares
 * (packages' messages, enums and their values, fields, oneofs, extensions, services, methods),
 * looked up by name. Pure logic over bytes: no I/O, read-only once built, so any thread may
 * look things up.
 */
#ifndef WALKLIST_GATEWAY_DESCRIPTOR_INDEX_H
#define WALKLIST_GATEWAY_DESCRIPTOR_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "walklist/error.h"
#include "walklist/span.h"

typedef struct wl_descriptor_index wl_descriptor_index_t;

/* gen/descriptor_set.c (CMakeLists.txt): protoc's FileDescriptorSet of the files walklistd
 * serves, embedded into the gateway. */
extern const char wl_descriptor_set[];
extern const size_t wl_descriptor_set_len;

/** What wl_descriptor_index_find answers for a name it does not know. */
#define WL_DESCRIPTOR_NONE ((size_t)-1)

/**
 * Indexes the set's files (set need not outlive the index: what is kept is copied).
 * WL_EINVAL when set is not a FileDescriptorSet, a file or a declaration has no name, a file
 * imports one the set lacks, or two files declare the same name; WL_ENOMEM.
 */
int wl_descriptor_index_create(const uint8_t *set, size_t len, wl_descriptor_index_t **out,
                               wl_error_t *err) WL_CHECK_RESULT;

/** NULL is fine. */
void wl_descriptor_index_destroy(wl_descriptor_index_t *index);

/** Files are numbered 0 .. count - 1, in the set's order (imports before their importers). */
size_t wl_descriptor_index_file_count(const wl_descriptor_index_t *index);

/** File's name as imported ("walklist/v1/stock.proto"); valid while the index lives. */
const char *wl_descriptor_index_file_name(const wl_descriptor_index_t *index, size_t file);

/** File's serialized FileDescriptorProto; valid while the index lives. */
wl_span_t wl_descriptor_index_file_bytes(const wl_descriptor_index_t *index, size_t file);

/** File's direct imports (file numbers, in the file's order) in *imports; their count. */
size_t wl_descriptor_index_imports(const wl_descriptor_index_t *index, size_t file,
                                   const size_t **imports);

/** The file of that name, WL_DESCRIPTOR_NONE when none. */
size_t wl_descriptor_index_find_file(const wl_descriptor_index_t *index, wl_span_t name);

/**
 * The file declaring a fully-qualified name without the leading dot ("walklist.v1.StockItem",
 * "walklist.v1.StockService.ExportStock", "walklist.v1.StockItem.sku"), WL_DESCRIPTOR_NONE when
 * none. A package name alone is no symbol.
 */
size_t wl_descriptor_index_find_symbol(const wl_descriptor_index_t *index, wl_span_t symbol);

/** The file declaring extension number of message (fully-qualified, no leading dot),
 * WL_DESCRIPTOR_NONE when none does. */
size_t wl_descriptor_index_find_extension(const wl_descriptor_index_t *index, wl_span_t message,
                                          int32_t number);

/**
 * The field numbers of message's extensions: up to max of them in numbers, and their count
 * whatever max is.
 */
size_t wl_descriptor_index_extension_numbers(const wl_descriptor_index_t *index, wl_span_t message,
                                             int32_t *numbers, size_t max);

/** Every service of every file (fully-qualified), in the set's order; their count. Valid while
 * the index lives. */
size_t wl_descriptor_index_services(const wl_descriptor_index_t *index,
                                    const char *const **services);

/**
 * The idempotency_level option of method (its name, "ExportStock") of service (fully-qualified,
 * "walklist.v1.StockService") as its file declares it: a google.protobuf.MethodOptions
 * IdempotencyLevel (0 when not set); -1 when the index has no such method.
 */
int wl_descriptor_index_idempotency(const wl_descriptor_index_t *index, const char *service,
                                    const char *method);

#endif
