/* Per-request bump allocation happens here: chunks are freed together, never one by one. */
#include "walklist/arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_ALIGN      16
#define ARENA_CHUNK_SIZE 8192

struct wl_arena_chunk {
    wl_arena_chunk_t *next;
    size_t size; /* usable bytes after the header */
    size_t used;
    _Alignas(ARENA_ALIGN) unsigned char bytes[];
};

static void *protobuf_alloc(void *data, size_t size)
{
    return wl_arena_alloc(data, size);
}

static void protobuf_free(void *data, void *ptr)
{
    /* Arena memory is released with the whole arena. */
    (void)data;
    (void)ptr;
}

void wl_arena_init(wl_arena_t *arena, size_t limit)
{
    memset(arena, 0, sizeof(*arena));
    arena->limit = limit;
    arena->allocator.alloc = protobuf_alloc;
    arena->allocator.free = protobuf_free;
    arena->allocator.allocator_data = arena;
}

void wl_arena_dispose(wl_arena_t *arena)
{
    wl_arena_chunk_t *chunk = arena->chunks;
    while (chunk != NULL) {
        wl_arena_chunk_t *next = chunk->next;
        free(chunk);
        chunk = next;
    }
    arena->chunks = NULL;
    arena->bytes_allocated = 0;
}

/* What an allocation of size takes of its chunk: aligned, never nothing. */
static size_t rounded_size(size_t size)
{
    size_t rounded = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    return rounded == 0 ? ARENA_ALIGN : rounded;
}

void *wl_arena_alloc_unzeroed(wl_arena_t *arena, size_t size)
{
    if (size > SIZE_MAX - ARENA_ALIGN)
        return NULL;
    size_t rounded = rounded_size(size);
    wl_arena_chunk_t *chunk = arena->chunks;
    if (chunk == NULL || chunk->size - chunk->used < rounded) {
        size_t chunk_size = rounded > ARENA_CHUNK_SIZE / 2 ? rounded : ARENA_CHUNK_SIZE;
        if (chunk_size > SIZE_MAX - sizeof(wl_arena_chunk_t))
            return NULL;
        if (arena->limit != 0 && (arena->bytes_allocated > arena->limit ||
                                  chunk_size > arena->limit - arena->bytes_allocated)) {
            arena->limit_reached = true;
            return NULL;
        }
        wl_arena_chunk_t *fresh = malloc(sizeof(*fresh) + chunk_size);
        if (fresh == NULL)
            return NULL;
        fresh->size = chunk_size;
        fresh->used = 0;
        arena->bytes_allocated += chunk_size;
        if (chunk != NULL && chunk_size != ARENA_CHUNK_SIZE) {
            /* A large block gets its own chunk behind the current one, so the
             * current chunk's free space stays in use. */
            fresh->next = chunk->next;
            chunk->next = fresh;
        } else {
            fresh->next = chunk;
            arena->chunks = fresh;
        }
        chunk = fresh;
    }
    void *p = chunk->bytes + chunk->used;
    chunk->used += rounded;
    return p;
}

void *wl_arena_alloc(wl_arena_t *arena, size_t size)
{
    void *p = wl_arena_alloc_unzeroed(arena, size);
    /* The padding too, as always: a caller may have come to count on it. */
    if (p != NULL)
        memset(p, 0, rounded_size(size));
    return p;
}

char *wl_arena_strndup(wl_arena_t *arena, const char *s, size_t len)
{
    if (len == SIZE_MAX)
        return NULL;
    char *copy = wl_arena_alloc(arena, len + 1);
    if (copy == NULL)
        return NULL;
    if (len > 0)
        memcpy(copy, s, len);
    copy[len] = '\0';
    return copy;
}

char *wl_arena_strdup(wl_arena_t *arena, const char *s)
{
    return wl_arena_strndup(arena, s, strlen(s));
}

char *wl_arena_printf(wl_arena_t *arena, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *out = wl_arena_alloc(arena, (size_t)n + 1);
    if (out == NULL)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(out, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return out;
}
