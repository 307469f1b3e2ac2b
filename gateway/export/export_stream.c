/* Streaming the stock export as JSON, gzip-coded on request, happens here. */
#include "export/export_stream.h"

#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "export/export_cache.h"
#include "export/export_json.h"
#include "walklist/log.h"
#include "http/negotiate.h"
#include "http/query.h"

/* JSON text is made in pieces of about this size, then sent or compressed. */
#define TEXT_PIECE (32u * 1024)
/* What a request thread makes at a time once the body flows (each piece costs the connection a
 * suspension and a resumption, so pieces are larger than the first). */
#define FILL_PIECE (256u * 1024)
/* Room kept free for deflate's output on each call. */
#define WIRE_ROOM (16u * 1024)
/* On this repetitive text zlib's default level 6 takes 2.5 times as long as level 1 for
 * a fifth less output (200,000 SKUs: 0.31 s and 1.44 MB against 0.12 s and 1.76 MB);
 * an export polled every minute is better off with the cheap level. */
#define GZIP_LEVEL 1

/* Bytes waiting to move on; sent counts those already taken from the front. */
typedef struct {
    char *data;
    size_t len;
    size_t sent;
    size_t cap;
} buffer_t;

typedef struct {
    wl_export_cursor_t *cursor;             /* NULL once every row is read (or on failure) */
    char closing[WL_EXPORT_JSON_CLOSE_MAX]; /* the body's last bytes: generatedAt, cursor */
    size_t items;                           /* written so far */
    bool ended;                             /* the closing text is written */
    bool finished;                          /* nothing is left to produce */
    bool failed;                            /* production failed: the connection is cut */
    bool gzip;
    bool deflating; /* z needs deflateEnd */
    z_stream z;
    buffer_t text;               /* JSON: sent as is, or compressed into wire */
    buffer_t wire;               /* gzip bytes */
    wl_export_body_t *recording; /* a copy for the cache, NULL when not kept */
    char request_id[65];
} export_stream_t;

static bool reserve(buffer_t *b, size_t extra)
{
    if (b->cap - b->len >= extra)
        return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < extra) {
        if (cap > SIZE_MAX / 2)
            return false;
        cap *= 2;
    }
    char *grown = realloc(b->data, cap);
    if (grown == NULL)
        return false;
    b->data = grown;
    b->cap = cap;
    return true;
}

static bool put(buffer_t *b, const char *s, size_t len)
{
    if (!reserve(b, len))
        return false;
    memcpy(b->data + b->len, s, len);
    b->len += len;
    return true;
}

static bool put_item(export_stream_t *stream, const wl_export_item_t *item)
{
    buffer_t *t = &stream->text;
    size_t bound = wl_export_json_item_bound(item);
    if (bound == SIZE_MAX || !reserve(t, bound + 1))
        return false;
    char *out = t->data + t->len;
    if (stream->items++ > 0)
        *out++ = ',';
    out = wl_export_json_item(out, item);
    t->len = (size_t)(out - t->data);
    return true;
}

/* Compresses all of text into wire; with finish, also ends the gzip stream. */
static int compress_text(export_stream_t *stream, bool finish, wl_error_t *err)
{
    z_stream *z = &stream->z;
    z->next_in = (Bytef *)stream->text.data + stream->text.sent;
    z->avail_in = (uInt)(stream->text.len - stream->text.sent);
    for (;;) {
        if (!reserve(&stream->wire, WIRE_ROOM))
            return wl_error_set(err, WL_ENOMEM, NULL);
        size_t room = stream->wire.cap - stream->wire.len;
        z->next_out = (Bytef *)stream->wire.data + stream->wire.len;
        z->avail_out = (uInt)room;
        int zrc = deflate(z, finish ? Z_FINISH : Z_NO_FLUSH);
        stream->wire.len += room - z->avail_out;
        if (zrc == Z_STREAM_END)
            break;
        if (zrc != Z_OK && zrc != Z_BUF_ERROR)
            return wl_error_set(err, WL_EINTERNAL, "gzip failed");
        /* Without finish, deflate may keep output back; all input taken is enough. */
        if (!finish && z->avail_in == 0 && z->avail_out > 0)
            break;
    }
    stream->text.len = stream->text.sent = 0;
    return 0;
}

/*
 * Makes the next piece of the body: JSON text for about piece bytes (or
 * up to the end), compressed when gzip is on. The cursor, and with it the
 * database connection, is given back as soon as the last row is read.
 */
static int produce(export_stream_t *stream, size_t piece, wl_error_t *err)
{
    buffer_t *t = &stream->text;
    while (t->len - t->sent < piece && stream->cursor != NULL) {
        wl_export_item_t item;
        int rc = wl_export_cursor_next(stream->cursor, &item, err);
        if (rc < 0)
            return rc;
        if (rc == 0) {
            wl_export_cursor_close(stream->cursor);
            stream->cursor = NULL;
            break;
        }
        if (!put_item(stream, &item))
            return wl_error_set(err, WL_ENOMEM, NULL);
    }
    if (stream->cursor == NULL && !stream->ended) {
        if (!put(t, stream->closing, strlen(stream->closing)))
            return wl_error_set(err, WL_ENOMEM, NULL);
        stream->ended = true;
    }
    if (stream->gzip) {
        int rc = compress_text(stream, stream->ended, err);
        if (rc != 0)
            return rc;
    }
    stream->finished = stream->ended;
    return 0;
}

static void free_stream(void *state)
{
    export_stream_t *stream = state;
    if (stream == NULL)
        return;
    /* Closing the cursor rolls back and frees the connection, also when the client
     * left half way. */
    wl_export_cursor_close(stream->cursor);
    wl_export_body_finish(stream->recording, false); /* a no-op after the last byte */
    if (stream->deflating)
        deflateEnd(&stream->z);
    free(stream->text.data);
    free(stream->wire.data);
    free(stream);
}

static ssize_t read_stream(void *state, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    export_stream_t *stream = state;
    buffer_t *out = stream->gzip ? &stream->wire : &stream->text;
    if (out->sent < out->len) {
        size_t n = out->len - out->sent < max ? out->len - out->sent : max;
        memcpy(buf, out->data + out->sent, n);
        wl_export_body_write(stream->recording, out->data + out->sent, n);
        out->sent += n;
        if (out->sent == out->len)
            out->len = out->sent = 0;
        return (ssize_t)n;
    }
    if (stream->failed)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    if (stream->finished) {
        wl_export_body_finish(stream->recording, true);
        stream->recording = NULL;
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    return WL_EXCHANGE_STREAM_EMPTY;
}

/* Reads rows until there is something to send (the compressor may keep a piece to itself). */
static void fill_stream(void *state)
{
    export_stream_t *stream = state;
    const buffer_t *out = stream->gzip ? &stream->wire : &stream->text;
    while (out->sent == out->len && !stream->finished) {
        wl_error_t err;
        wl_error_init(&err);
        if (produce(stream, FILL_PIECE, &err) != 0) {
            const char *reason = wl_grpc_code_name(wl_error_grpc_code(err.code));
            wl_log_line_t line;
            wl_log_line_begin(&line, "error", "stock export cut off");
            wl_log_line_str(&line, "requestId", stream->request_id, strlen(stream->request_id));
            wl_log_line_int(&line, "items", (long long)stream->items);
            wl_log_line_str(&line, "reason", reason, strlen(reason));
            wl_log_line_end(&line);
            wl_export_cursor_close(stream->cursor);
            stream->cursor = NULL;
            stream->failed = true;
            return;
        }
    }
}

static export_stream_t *create_stream(wl_export_cursor_t *cursor, bool gzip, const char *request_id)
{
    export_stream_t *stream = calloc(1, sizeof(*stream));
    if (stream == NULL)
        return NULL;
    stream->cursor = cursor;
    stream->gzip = gzip;
    snprintf(stream->request_id, sizeof(stream->request_id), "%s", request_id);
    /* generatedAt comes last, as in the codec's form, though it is known first. */
    wl_export_json_close(wl_export_cursor_generated_ms(cursor), wl_export_cursor_token(cursor),
                         stream->closing, sizeof(stream->closing));
    /* windowBits 15 + 16: a gzip wrapper rather than zlib's own. */
    if (gzip) {
        if (deflateInit2(&stream->z, GZIP_LEVEL, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
            Z_OK) {
            stream->cursor = NULL;
            free(stream);
            return NULL;
        }
        stream->deflating = true;
    }
    if (!put(&stream->text, WL_EXPORT_JSON_OPEN, strlen(WL_EXPORT_JSON_OPEN))) {
        stream->cursor = NULL;
        free_stream(stream);
        return NULL;
    }
    return stream;
}

/* A cached body, read from its file as the client takes it. */
typedef struct {
    int fd;
    uint64_t size;
} cached_body_t;

static ssize_t read_cached(void *state, uint64_t pos, char *buf, size_t max)
{
    cached_body_t *body = state;
    if (pos >= body->size)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t want = body->size - pos < max ? (size_t)(body->size - pos) : max;
    ssize_t n = pread(body->fd, buf, want, (off_t)pos);
    return n > 0 ? n : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void free_cached(void *state)
{
    cached_body_t *body = state;
    close(body->fd);
    free(body);
}

static void set_headers(wl_exchange_t *ex, const char *etag, bool gzip)
{
    wl_exchange_add_header(ex, "ETag", etag);
    wl_exchange_add_header(ex, "Vary", "Accept-Encoding");
    if (gzip)
        wl_exchange_add_header(ex, "Content-Encoding", "gzip");
    ex->cache_control = "no-cache";
}

/* since < 0: the full export's; a delta's names its starting version too. */
static void make_etag(char *etag, size_t size, int64_t org_id, int64_t version, int64_t since,
                      bool gzip)
{
    char delta[32] = "";
    if (since >= 0)
        snprintf(delta, sizeof(delta), "-since-%" PRId64, since);
    snprintf(etag, size, "\"%" PRId64 "-%" PRId64 "%s%s\"", org_id, version, delta,
             gzip ? "-gzip" : "");
}

/* 304 when the client has this version; the cached body when there is one. */
static bool answer_known(wl_exchange_t *ex, wl_export_cache_t *cache, int64_t version, bool gzip)
{
    char etag[80];
    make_etag(etag, sizeof(etag), ex->principal.org_id, version, -1, gzip);
    if (wl_negotiate_none_match(wl_exchange_header_list(ex, "If-None-Match"), etag)) {
        set_headers(ex, etag, false);
        wl_exchange_empty(ex, 304);
        ex->content_length_known =
            cache != NULL && wl_export_cache_body_size(cache, ex->principal.org_id, version, gzip,
                                                       &ex->content_length);
        return true;
    }
    cached_body_t *body = cache ? malloc(sizeof(*body)) : NULL;
    if (body == NULL)
        return false;
    body->fd = wl_export_cache_open_body(cache, ex->principal.org_id, version, gzip, &body->size);
    if (body->fd < 0) {
        free(body);
        return false;
    }
    set_headers(ex, etag, gzip);
    wl_exchange_stream(ex, 200, "application/json", read_cached, NULL, free_cached, body);
    ex->content_length_known = true; /* for HEAD */
    ex->content_length = body->size;
    return true;
}

/*
 * Streams the cursor's rows as the body (recorded into cache when not NULL). The first piece
 * is made now: a database failing at the start still gets an honest error status rather than
 * a 200 cut off after its headers.
 */
static void stream_cursor(wl_exchange_t *ex, wl_export_cursor_t *cursor, const char *etag,
                          bool gzip, wl_export_cache_t *cache, wl_export_ticket_t ticket)
{
    wl_error_t err;
    wl_error_init(&err);
    /* Read now: the first piece closes a cursor that has no more rows. */
    int64_t version = wl_export_cursor_version(cursor);
    export_stream_t *stream = create_stream(cursor, gzip, ex->request_id);
    if (stream == NULL) {
        wl_export_cursor_close(cursor);
        wl_error_set(&err, WL_ENOMEM, NULL);
        wl_exchange_core_error(ex, &err);
        return;
    }
    if (produce(stream, TEXT_PIECE, &err) != 0) {
        free_stream(stream);
        wl_exchange_core_error(ex, &err);
        return;
    }
    if (cache != NULL)
        stream->recording =
            wl_export_cache_body_begin(cache, ex->principal.org_id, version, gzip, ticket);
    set_headers(ex, etag, gzip);
    wl_exchange_stream(ex, 200, "application/json", read_stream, fill_stream, free_stream, stream);
}

static void respond_full(wl_core_t *core, wl_export_cache_t *cache, wl_exchange_t *ex)
{
    wl_error_t err;
    wl_error_init(&err);
    bool gzip = wl_negotiate_gzip(wl_exchange_header_list(ex, "Accept-Encoding"));
    int64_t org_id = ex->principal.org_id, version = 0;
    /* An unchanged export costs no query: the version (and maybe the body) is known. */
    if (cache != NULL) {
        bool known = wl_export_cache_version(cache, org_id, &version);
        if (known && answer_known(ex, cache, version, gzip))
            return;
        if (!wl_exchange_may_wait(ex))
            return;
        /* The version alone (one statement) answers only a conditional request or one whose
         * body may be cached; anything else goes straight to the snapshot, which reads the
         * version too: a cold export borrows one connection. */
        if (!known && (wl_exchange_header(ex, "If-None-Match") != NULL ||
                       wl_export_cache_has_body(cache, org_id))) {
            wl_export_ticket_t ticket = wl_export_cache_ticket(cache, org_id);
            if (wl_core_export_version(core, &ex->principal, &version, &err) != 0) {
                wl_exchange_core_error(ex, &err);
                return;
            }
            wl_export_cache_remember(cache, org_id, ticket, version);
            if (answer_known(ex, cache, version, gzip))
                return;
        }
    } else if (!wl_exchange_may_wait(ex)) {
        return;
    }

    wl_export_ticket_t ticket = {0};
    if (cache != NULL)
        ticket = wl_export_cache_ticket(cache, org_id); /* before the snapshot */
    wl_export_cursor_t *cursor = NULL;
    if (wl_core_export_open(core, &ex->principal, &cursor, &err) != 0) {
        wl_exchange_core_error(ex, &err);
        return;
    }
    version = wl_export_cursor_version(cursor);
    if (cache != NULL)
        wl_export_cache_remember(cache, org_id, ticket, version);
    if (answer_known(ex, cache, version, gzip)) {
        wl_export_cursor_close(cursor);
        return;
    }

    char etag[80];
    make_etag(etag, sizeof(etag), org_id, version, -1, gzip);
    stream_cursor(ex, cursor, etag, gzip, cache, ticket);
}

/*
 * The delta (since=<cursor>): its ETag names both versions, so a client polling with
 * If-None-Match gets 304 while nothing changed, from the cache's version without a query, or
 * from the one statement that opens the snapshot; neither reads the change history, which only
 * the 200's rows do. Delta bodies are not cached: each cursor has its own.
 */
static void respond_delta(wl_core_t *core, wl_export_cache_t *cache, wl_exchange_t *ex,
                          const char *since_text)
{
    wl_error_t err;
    wl_error_init(&err);
    bool gzip = wl_negotiate_gzip(wl_exchange_header_list(ex, "Accept-Encoding"));
    int64_t org_id = ex->principal.org_id, since = 0, version = 0;
    /* A process's first cursor reads the secret: only where the request may wait. */
    if (wl_core_export_since_waits(core) && !wl_exchange_may_wait(ex))
        return;
    if (wl_core_export_since(core, &ex->principal, since_text, "since", &since, &err) != 0) {
        wl_exchange_core_error(ex, &err);
        return;
    }
    char etag[96];
    if (cache != NULL && wl_export_cache_version(cache, org_id, &version)) {
        make_etag(etag, sizeof(etag), org_id, version, since, gzip);
        if (wl_negotiate_none_match(wl_exchange_header_list(ex, "If-None-Match"), etag)) {
            set_headers(ex, etag, false);
            wl_exchange_empty(ex, 304);
            return;
        }
    }
    if (!wl_exchange_may_wait(ex))
        return;
    wl_export_cursor_t *cursor = NULL;
    if (wl_core_export_open_since(core, &ex->principal, since, &cursor, &err) != 0) {
        wl_exchange_core_error(ex, &err);
        return;
    }
    make_etag(etag, sizeof(etag), org_id, wl_export_cursor_version(cursor), since, gzip);
    if (wl_negotiate_none_match(wl_exchange_header_list(ex, "If-None-Match"), etag)) {
        wl_export_cursor_close(cursor);
        set_headers(ex, etag, false);
        wl_exchange_empty(ex, 304);
        return;
    }
    stream_cursor(ex, cursor, etag, gzip, NULL, (wl_export_ticket_t){0});
}

void wl_export_stream_respond(wl_core_t *core, wl_export_cache_t *cache, wl_exchange_t *ex)
{
    wl_error_t err;
    wl_error_init(&err);
    wl_query_t query;
    if (wl_query_parse(ex->query, &ex->arena, &query, &err) != 0) {
        wl_exchange_core_error(ex, &err);
        return;
    }
    const wl_span_t *since = wl_query_get(&query, "since");
    if (wl_query_count(&query, "since") > 1 ||
        (since != NULL && memchr(since->base, '\0', since->len) != NULL)) {
        wl_error_add_violation(&err, "since", "must be given once, as the cursor's text");
        wl_exchange_core_error(ex, &err);
        return;
    }
    if (since != NULL && since->len > 0)
        respond_delta(core, cache, ex, since->base);
    else
        respond_full(core, cache, ex);
}
