/* gzip-coding a generator's body piece by piece or a whole body at once, and inflating a
 * gzip-coded request under a limit, happen here. */
#include "http/gzip_filter.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "http/negotiate.h"

/* On repetitive JSON zlib's default level 6 takes 2.5 times as long as level 1 for a fifth less
 * output (the export of 200,000 SKUs: 0.31 s and 1.44 MB against 0.12 s and 1.76 MB); an export
 * polled every minute is better off with the cheap level, and so is a JSON answer. */
#define GZIP_LEVEL 1
/* windowBits 15 + 16: a gzip wrapper rather than zlib's own. */
#define GZIP_WINDOW_BITS (15 + 16)
/* Room made in the output for each call of deflate. */
#define OUTPUT_ROOM (16u * 1024)
/* A whole answer from this size on is worth coding; below it gzip saves a few hundred bytes
 * at most (a walk list of a few dozen codes and up is larger). */
#define GZIP_MIN_ANSWER 1024

typedef struct {
    wl_generator_t base;
    wl_generator_t *inner;
    z_stream z;
    wl_piece_t text; /* inner's piece, compressed at once */
} gzip_filter_t;

static bool start(z_stream *z)
{
    *z = (z_stream){0};
    return deflateInit2(z, GZIP_LEVEL, Z_DEFLATED, GZIP_WINDOW_BITS, 8, Z_DEFAULT_STRATEGY) == Z_OK;
}

/* Compresses len bytes of input onto out, with flush (Z_NO_FLUSH, Z_SYNC_FLUSH, Z_FINISH). */
static int deflate_onto(z_stream *z, const char *input, size_t len, int flush, wl_piece_t *out,
                        wl_error_t *err)
{
    z->next_in = (Bytef *)input;
    z->avail_in = (uInt)len;
    for (;;) {
        /* A fixed piece has what room it has (a whole body's deflateBound). */
        if (wl_piece_reserve(out, out->fixed ? 1 : OUTPUT_ROOM) == NULL)
            return wl_error_set(err, WL_ENOMEM, NULL);
        size_t room = out->cap - out->len;
        if (room > UINT_MAX)
            room = UINT_MAX;
        z->next_out = (Bytef *)out->base + out->len;
        z->avail_out = (uInt)room;
        int zrc = deflate(z, flush);
        out->len += room - z->avail_out;
        if (zrc == Z_STREAM_END)
            return 0;
        if (zrc != Z_OK && zrc != Z_BUF_ERROR)
            return wl_error_set(err, WL_EINTERNAL, "gzip failed");
        /* Room left over means deflate took all it was given (and flushed, when asked). */
        if (flush != Z_FINISH && z->avail_in == 0 && z->avail_out > 0)
            return 0;
    }
}

/* Pulls pieces of inner until some compressed output comes (deflate keeps small ones back). */
static wl_generator_next_t filter_proceed(wl_generator_t *gen, wl_piece_t *out, size_t want,
                                          wl_error_t *err)
{
    gzip_filter_t *filter = (gzip_filter_t *)gen;
    size_t before = out->len;
    for (;;) {
        filter->text.len = 0;
        wl_generator_next_t next = filter->inner->proceed(filter->inner, &filter->text, want, err);
        if (filter->text.failed) {
            wl_error_set(err, WL_ENOMEM, NULL);
            return WL_GENERATOR_FAILED;
        }
        if (next == WL_GENERATOR_FAILED)
            return next;
        int flush = next == WL_GENERATOR_DONE   ? Z_FINISH
                    : next == WL_GENERATOR_IDLE ? Z_SYNC_FLUSH
                                                : Z_NO_FLUSH;
        if (deflate_onto(&filter->z, filter->text.base, filter->text.len, flush, out, err) != 0)
            return WL_GENERATOR_FAILED;
        if (next != WL_GENERATOR_MORE || out->len > before)
            return next;
    }
}

static void filter_park(wl_generator_t *gen, void (*wake)(void *ctx), void *ctx)
{
    gzip_filter_t *filter = (gzip_filter_t *)gen;
    filter->inner->park(filter->inner, wake, ctx);
}

static void filter_stop(wl_generator_t *gen)
{
    gzip_filter_t *filter = (gzip_filter_t *)gen;
    filter->inner->stop(filter->inner);
    deflateEnd(&filter->z);
    wl_piece_dispose(&filter->text);
    free(filter);
}

wl_generator_t *wl_gzip_filter(wl_generator_t *inner)
{
    gzip_filter_t *filter = malloc(sizeof(*filter));
    if (filter == NULL || !start(&filter->z)) {
        free(filter);
        inner->stop(inner);
        return NULL;
    }
    filter->base = (wl_generator_t){.proceed = filter_proceed,
                                    .stop = filter_stop,
                                    .park = inner->park ? filter_park : NULL,
                                    .waits = inner->waits};
    filter->inner = inner;
    filter->text = (wl_piece_t){0};
    return &filter->base;
}

/* One whole body gzip-coded in one call onto the room reserve gives for deflateBound's bytes;
 * *written is how many it took. */
static int gzip_whole(const char *body, size_t len, char *(*reserve)(void *where, size_t bound),
                      void *where, char **room, size_t *written, wl_error_t *err)
{
    z_stream z;
    if (len > UINT_MAX)
        return wl_error_set(err, WL_EINVAL, "body too large to compress");
    if (!start(&z))
        return wl_error_set(err, WL_ENOMEM, NULL);
    size_t bound = deflateBound(&z, (uLong)len);
    *room = reserve(where, bound);
    wl_piece_t piece = {.base = *room, .cap = bound, .fixed = true};
    int rc = *room != NULL ? deflate_onto(&z, body, len, Z_FINISH, &piece, err)
                           : wl_error_set(err, WL_ENOMEM, NULL);
    deflateEnd(&z);
    *written = piece.len;
    return rc;
}

static char *arena_room(void *arena, size_t bound)
{
    return wl_arena_alloc(arena, bound);
}

static char *piece_room(void *piece, size_t bound)
{
    return wl_piece_reserve(piece, bound);
}

int wl_gzip_body(const char *body, size_t len, wl_arena_t *arena, char **out, size_t *out_len,
                 wl_error_t *err)
{
    return gzip_whole(body, len, arena_room, arena, out, out_len, err);
}

int wl_gzip_append(const char *body, size_t len, wl_piece_t *out, wl_error_t *err)
{
    char *room = NULL;
    size_t written = 0;
    int rc = gzip_whole(body, len, piece_room, out, &room, &written, err);
    if (rc == 0)
        out->len += written; /* it went straight onto out's reserved room */
    return rc;
}

void wl_gzip_offer(wl_exchange_t *ex, const char *accept_field, const char *coding_field)
{
    if (ex->response_len < GZIP_MIN_ANSWER)
        return;
    wl_exchange_add_header(ex, "Vary", accept_field);
    if (!wl_negotiate_gzip(wl_exchange_header_list(ex, accept_field)))
        return;
    wl_error_t err;
    wl_error_init(&err);
    char *coded = NULL;
    size_t coded_len = 0;
    if (wl_gzip_body(ex->response, ex->response_len, &ex->arena, &coded, &coded_len, &err) != 0)
        return;
    ex->response = coded;
    ex->response_len = coded_len;
    wl_exchange_add_header(ex, coding_field, "gzip");
}

bool wl_gzip_worth(size_t len)
{
    return len >= GZIP_MIN_ANSWER;
}

int wl_gunzip_body(const char *body, size_t len, size_t limit, wl_arena_t *arena, char **out,
                   size_t *out_len, wl_error_t *err)
{
    z_stream z = {0};
    if (len > UINT_MAX)
        return wl_error_set(err, WL_EEXHAUSTED, NULL);
    if (inflateInit2(&z, GZIP_WINDOW_BITS) != Z_OK)
        return wl_error_set(err, WL_ENOMEM, NULL);
    z.next_in = (Bytef *)body;
    z.avail_in = (uInt)len;
    wl_piece_t text = {0};
    int rc = 0, zrc = Z_OK;
    /* One byte past the limit is room enough to tell a body over it: inflating stops there, so
     * a small body that would expand to gigabytes costs no more than the limit. */
    while (rc == 0 && zrc != Z_STREAM_END) {
        size_t room = text.len < limit + 1 ? limit + 1 - text.len : 0;
        if (room > OUTPUT_ROOM * 4)
            room = OUTPUT_ROOM * 4;
        if (room == 0) {
            rc = wl_error_set(err, WL_EEXHAUSTED, NULL);
            break;
        }
        if (wl_piece_reserve(&text, room) == NULL) {
            rc = wl_error_set(err, WL_ENOMEM, NULL);
            break;
        }
        z.next_out = (Bytef *)text.base + text.len;
        z.avail_out = (uInt)room;
        zrc = inflate(&z, Z_NO_FLUSH);
        text.len += room - z.avail_out;
        if (zrc == Z_STREAM_END)
            break;
        /* Z_BUF_ERROR with output room left: the input ended before the gzip member did. */
        if (zrc != Z_OK || (z.avail_in == 0 && z.avail_out > 0))
            rc = wl_error_set(err, WL_EINVAL, "the body is not valid gzip: %s",
                              zrc == Z_OK || zrc == Z_BUF_ERROR ? "it ends too early"
                              : z.msg                           ? z.msg
                                                                : "corrupt data");
    }
    if (rc == 0 && text.len > limit)
        rc = wl_error_set(err, WL_EEXHAUSTED, NULL);
    if (rc == 0 && z.avail_in > 0)
        rc = wl_error_set(err, WL_EINVAL, "the body is not valid gzip: bytes follow its end");
    inflateEnd(&z);
    char *copy = rc == 0 ? wl_arena_alloc(arena, text.len + 1) : NULL;
    if (rc == 0 && copy == NULL)
        rc = wl_error_set(err, WL_ENOMEM, NULL);
    if (rc == 0) {
        if (text.len > 0)
            memcpy(copy, text.base, text.len);
        copy[text.len] = '\0';
        *out = copy;
        *out_len = text.len;
    }
    wl_piece_dispose(&text);
    return rc;
}
