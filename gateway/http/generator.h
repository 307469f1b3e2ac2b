/*
 * One interface for every streamed body (h2o's h2o_generator_t): the REST export, a cached export
 * body, WatchStock's and StreamExportStock's messages over Connect and gRPC. A generator makes the
 * next piece of a body when asked (proceed), says what follows it, and is stopped exactly once on
 * every path (stop). Whoever sends the body owns the buffering and the threads: over HTTP/1.1 the
 * server (server.c) asks for the next piece on a request thread while the I/O thread sends the
 * current one, and suspends the connection only when the next is not ready; gRPC asks for one
 * message per proceed. Filters (gzip_filter.h) are generators that wrap another.
 */
#ifndef WALKLIST_GATEWAY_GENERATOR_H
#define WALKLIST_GATEWAY_GENERATOR_H

#include <stdbool.h>
#include <stddef.h>

#include "walklist/error.h"

/*
 * Bytes of a body waiting to go: what proceed appends to. A piece grows as it is appended to,
 * unless it is fixed (memory the sender lends: cap bytes, never more). Appends that do not fit
 * set failed, which stays set (checked once after proceed).
 */
typedef struct {
    char *base;
    size_t len;
    size_t cap;
    bool fixed;  /* base is lent, cap is all there is */
    bool failed; /* an append did not fit: out of memory, or past a fixed piece's cap */
} wl_piece_t;

/** Room for extra more bytes at base + len, or NULL (failed is set). */
char *wl_piece_reserve(wl_piece_t *piece, size_t extra);

/** Appends len bytes (failed is set when they do not fit). */
void wl_piece_append(wl_piece_t *piece, const void *data, size_t len);

/** Frees a piece that is not fixed; leaves it empty. */
void wl_piece_dispose(wl_piece_t *piece);

/* What follows the piece proceed has just made. */
typedef enum {
    WL_GENERATOR_MORE,   /* proceed again for the next piece (it may be made while this one goes) */
    WL_GENERATOR_IDLE,   /* nothing until woken: park once this piece has gone (park below) */
    WL_GENERATOR_DONE,   /* the body ends with this piece */
    WL_GENERATOR_FAILED, /* the body cannot go on (err says why): cut off after this piece */
} wl_generator_next_t;

typedef struct wl_generator wl_generator_t;

/* A generator's owner embeds this as the first member of its state. */
struct wl_generator {
    /**
     * Appends the next piece to out, about want bytes (a message-sized generator appends one
     * message whatever want is), and says what follows. An empty piece with MORE is allowed (a
     * filter keeping its output back). Never called again after DONE or FAILED, nor while a call
     * runs. When waits is set it runs on a thread that may wait for the database; when it is not,
     * out may be fixed (the sender's own buffer of want bytes) and proceed appends at most want.
     */
    wl_generator_next_t (*proceed)(wl_generator_t *gen, wl_piece_t *out, size_t want,
                                   wl_error_t *err);
    /** Frees the generator and all it holds: called exactly once, whenever the body ends. */
    void (*stop)(wl_generator_t *gen);
    /**
     * After IDLE, once its piece has gone: calls wake(ctx) once, from any thread (at once when
     * there is something to do already); proceed is asked again after that. NULL: never idles.
     */
    void (*park)(wl_generator_t *gen, void (*wake)(void *ctx), void *ctx);
    bool waits; /* proceed may wait for the database */
};

#endif
