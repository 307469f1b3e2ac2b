/* The pieces generators append a streamed body to are grown and freed here. */
#include "http/generator.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

char *wl_piece_reserve(wl_piece_t *piece, size_t extra)
{
    if (piece->failed)
        return NULL;
    if (piece->base != NULL && piece->cap - piece->len >= extra)
        return piece->base + piece->len;
    if (piece->fixed || extra > SIZE_MAX / 2 - piece->len) {
        piece->failed = true;
        return NULL;
    }
    size_t cap = piece->cap ? piece->cap : 4096;
    while (cap - piece->len < extra)
        cap *= 2;
    char *grown = realloc(piece->base, cap);
    if (grown == NULL) {
        piece->failed = true;
        return NULL;
    }
    piece->base = grown;
    piece->cap = cap;
    return piece->base + piece->len;
}

void wl_piece_append(wl_piece_t *piece, const void *data, size_t len)
{
    char *room = wl_piece_reserve(piece, len);
    if (room == NULL)
        return;
    memcpy(room, data, len);
    piece->len += len;
}

void wl_piece_dispose(wl_piece_t *piece)
{
    if (!piece->fixed)
        free(piece->base);
    *piece = (wl_piece_t){0};
}
