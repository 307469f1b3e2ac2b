/*
 * Per-request memory: every allocation of one request (decoded messages,
 * replies, scratch strings) comes from one arena released once when the
 * request ends. Nothing allocated here is freed on its own.
 */
#ifndef WALKLIST_ARENA_H
#define WALKLIST_ARENA_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>

#include "walklist/span.h"

typedef struct wl_arena_chunk wl_arena_chunk_t;

/** Caller-allocated; wl_arena_init() before use, wl_arena_dispose() once. */
typedef struct {
    wl_arena_chunk_t *chunks;
    size_t bytes_allocated;       /* total chunk bytes, for limits and metrics */
    size_t limit;                 /* 0: unlimited; otherwise allocation fails past it */
    bool limit_reached;           /* an allocation failed because of limit (not malloc) */
    ProtobufCAllocator allocator; /* protobuf-c view of this arena */
} wl_arena_t;

void wl_arena_init(wl_arena_t *arena, size_t limit);

/** Releases every allocation of the arena; the arena may be reused after init. */
void wl_arena_dispose(wl_arena_t *arena);

/** Zeroed, 16-byte aligned memory valid until wl_arena_dispose; NULL when out of memory. */
void *wl_arena_alloc(wl_arena_t *arena, size_t size);

/** As wl_arena_alloc, not zeroed: for a block its caller fills at once (one holding a
 * wl_error_t, whose several KiB of violations wl_error_init leaves alone). */
void *wl_arena_alloc_unzeroed(wl_arena_t *arena, size_t size);

/** NUL-terminated copy of a span; NULL when out of memory. */
char *wl_arena_strndup(wl_arena_t *arena, const char *s, size_t len);

char *wl_arena_strdup(wl_arena_t *arena, const char *s);

/** printf into the arena; NULL when out of memory. */
char *wl_arena_printf(wl_arena_t *arena, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
