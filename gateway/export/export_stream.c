/* Generating the stock export as JSON, from its cursor or its cached body, happens here. */
#include "export/export_stream.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/export_cache.h"
#include "export/export_json.h"
#include "walklist/log.h"
#include "http/gzip_filter.h"
#include "http/negotiate.h"
#include "http/query.h"

/* The first piece of the body, made by the request's own step (later pieces are the size the
 * server asks for). */
#define FIRST_PIECE (32u * 1024)

/* The export's rows as JSON text: a generator (generator.h) over the core's export cursor. */
typedef struct {
    wl_generator_t base;
    wl_export_cursor_t *cursor;             /* NULL once every row is read (or on failure) */
    char closing[WL_EXPORT_JSON_CLOSE_MAX]; /* the body's last bytes: generatedAt, cursor */
    bool opened;                            /* the opening text is written */
    size_t items;                           /* written so far */
    bool streaming; /* the first piece went into the answer: a failure now cuts the body off */
    char request_id[65];
} export_rows_t;

static bool put_item(export_rows_t *rows, wl_piece_t *out, const wl_export_item_t *item)
{
    size_t bound = wl_export_json_item_bound(item);
    char *start = bound == SIZE_MAX ? NULL : wl_piece_reserve(out, bound + 1);
    if (start == NULL)
        return false;
    char *end = start;
    if (rows->items++ > 0)
        *end++ = ',';
    end = wl_export_json_item(end, item);
    out->len += (size_t)(end - start);
    return true;
}

static void log_cut_off(const export_rows_t *rows, const wl_error_t *err)
{
    const char *reason = wl_grpc_code_name(wl_error_grpc_code(err->code));
    wl_log_line_t line;
    wl_log_line_begin(&line, "error", "stock export cut off");
    wl_log_line_str(&line, "requestId", rows->request_id, strlen(rows->request_id));
    wl_log_line_int(&line, "items", (long long)rows->items);
    wl_log_line_str(&line, "reason", reason, strlen(reason));
    wl_log_line_end(&line);
}

/*
 * The next rows as JSON, about want bytes of them (or up to the end). The cursor, and with it
 * the database connection, is given back as soon as the last row is read, or on failure.
 */
static wl_generator_next_t rows_proceed(wl_generator_t *gen, wl_piece_t *out, size_t want,
                                        wl_error_t *err)
{
    export_rows_t *rows = (export_rows_t *)gen;
    size_t start = out->len;
    if (!rows->opened) {
        wl_piece_append(out, WL_EXPORT_JSON_OPEN, strlen(WL_EXPORT_JSON_OPEN));
        rows->opened = true;
    }
    int rc = 1;
    while (rc > 0 && out->len - start < want && rows->cursor != NULL) {
        wl_export_item_t item;
        rc = wl_export_cursor_next(rows->cursor, &item, err);
        if (rc > 0 && !put_item(rows, out, &item))
            rc = wl_error_set(err, WL_ENOMEM, NULL);
    }
    if (rc == 0) {
        wl_export_cursor_close(rows->cursor);
        rows->cursor = NULL;
        wl_piece_append(out, rows->closing, strlen(rows->closing));
    }
    if (rc >= 0 && out->failed)
        rc = wl_error_set(err, WL_ENOMEM, NULL);
    if (rc < 0) {
        if (rows->streaming)
            log_cut_off(rows, err);
        wl_export_cursor_close(rows->cursor);
        rows->cursor = NULL;
        return WL_GENERATOR_FAILED;
    }
    return rc == 0 ? WL_GENERATOR_DONE : WL_GENERATOR_MORE;
}

static void rows_stop(wl_generator_t *gen)
{
    export_rows_t *rows = (export_rows_t *)gen;
    /* Closing the cursor rolls back and frees the connection, also when the client left half
     * way. */
    wl_export_cursor_close(rows->cursor);
    free(rows);
}

static export_rows_t *create_rows(wl_export_cursor_t *cursor, const char *request_id)
{
    export_rows_t *rows = calloc(1, sizeof(*rows));
    if (rows == NULL)
        return NULL;
    rows->base = (wl_generator_t){.proceed = rows_proceed, .stop = rows_stop, .waits = true};
    rows->cursor = cursor;
    snprintf(rows->request_id, sizeof(rows->request_id), "%s", request_id);
    /* generatedAt comes last, as in the codec's form, though it is known first. */
    wl_export_json_close(wl_export_cursor_generated_ms(cursor), wl_export_cursor_token(cursor),
                         rows->closing, sizeof(rows->closing));
    return rows;
}

/* A filter that records the body it passes into the snapshot cache, as it is made. */
typedef struct {
    wl_generator_t base;
    wl_generator_t *inner;
    wl_export_body_t *recording; /* NULL once finished */
} recorder_t;

static wl_generator_next_t record_proceed(wl_generator_t *gen, wl_piece_t *out, size_t want,
                                          wl_error_t *err)
{
    recorder_t *recorder = (recorder_t *)gen;
    size_t start = out->len;
    wl_generator_next_t next = recorder->inner->proceed(recorder->inner, out, want, err);
    if (!out->failed)
        wl_export_body_write(recorder->recording, out->base + start, out->len - start);
    if (next == WL_GENERATOR_DONE && !out->failed) {
        wl_export_body_finish(recorder->recording, true);
        recorder->recording = NULL;
    }
    return next;
}

static void record_stop(wl_generator_t *gen)
{
    recorder_t *recorder = (recorder_t *)gen;
    wl_export_body_finish(recorder->recording, false); /* NULL after the last byte */
    recorder->inner->stop(recorder->inner);
    free(recorder);
}

/* inner, recorded when the cache takes the body (inner itself otherwise); NULL when out of
 * memory (inner stopped). */
static wl_generator_t *record(wl_generator_t *inner, wl_export_body_t *recording)
{
    if (recording == NULL)
        return inner;
    recorder_t *recorder = malloc(sizeof(*recorder));
    if (recorder == NULL) {
        wl_export_body_finish(recording, false);
        inner->stop(inner);
        return NULL;
    }
    *recorder = (recorder_t){
        .base = {.proceed = record_proceed, .stop = record_stop, .waits = inner->waits},
        .inner = inner,
        .recording = recording};
    return &recorder->base;
}

/* A cached body, read from its file as the client takes it (on the I/O thread: the page
 * cache's bytes). */
typedef struct {
    wl_generator_t base;
    int fd;
    uint64_t size;
    uint64_t pos;
} cached_body_t;

static wl_generator_next_t cached_proceed(wl_generator_t *gen, wl_piece_t *out, size_t want,
                                          wl_error_t *err)
{
    cached_body_t *body = (cached_body_t *)gen;
    size_t left = body->size - body->pos < want ? (size_t)(body->size - body->pos) : want;
    char *room = left > 0 ? wl_piece_reserve(out, left) : out->base;
    if (left > 0 && room == NULL)
        return WL_GENERATOR_FAILED;
    ssize_t n = left > 0 ? pread(body->fd, room, left, (off_t)body->pos) : 0;
    if (n < 0 || (n == 0 && left > 0)) {
        wl_error_set(err, WL_EINTERNAL, "the cached export body could not be read");
        return WL_GENERATOR_FAILED;
    }
    out->len += (size_t)n;
    body->pos += (uint64_t)n;
    return body->pos < body->size ? WL_GENERATOR_MORE : WL_GENERATOR_DONE;
}

static void cached_stop(wl_generator_t *gen)
{
    cached_body_t *body = (cached_body_t *)gen;
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
    cached_body_t *body = cache ? calloc(1, sizeof(*body)) : NULL;
    if (body == NULL)
        return false;
    body->fd = wl_export_cache_open_body(cache, ex->principal.org_id, version, gzip, &body->size);
    if (body->fd < 0) {
        free(body);
        return false;
    }
    body->base = (wl_generator_t){.proceed = cached_proceed, .stop = cached_stop};
    set_headers(ex, etag, gzip);
    wl_exchange_generate(ex, 200, "application/json", &body->base, NULL, WL_GENERATOR_MORE);
    ex->content_length_known = true; /* for HEAD */
    ex->content_length = body->size;
    return true;
}

/*
 * Streams the cursor's rows as the body: JSON text, through gzip when the client takes it, and
 * recorded into cache when not NULL. The first piece is made now: a database failing at the
 * start still gets an honest error status rather than a 200 cut off after its headers.
 */
static void stream_cursor(wl_exchange_t *ex, wl_export_cursor_t *cursor, const char *etag,
                          bool gzip, wl_export_cache_t *cache, wl_export_ticket_t ticket)
{
    wl_error_t err;
    wl_error_init(&err);
    /* Read now: the first piece closes a cursor that has no more rows. */
    int64_t version = wl_export_cursor_version(cursor);
    export_rows_t *rows = create_rows(cursor, ex->request_id);
    wl_generator_t *gen = rows ? &rows->base : NULL;
    if (rows == NULL)
        wl_export_cursor_close(cursor);
    if (gen != NULL && gzip)
        gen = wl_gzip_filter(gen);
    if (gen != NULL && cache != NULL)
        gen = record(
            gen, wl_export_cache_body_begin(cache, ex->principal.org_id, version, gzip, ticket));
    if (gen == NULL) {
        wl_error_set(&err, WL_ENOMEM, NULL);
        wl_exchange_core_error(ex, &err);
        return;
    }
    wl_piece_t first = {0};
    wl_generator_next_t next = gen->proceed(gen, &first, FIRST_PIECE, &err);
    if (first.failed && next != WL_GENERATOR_FAILED) {
        wl_error_set(&err, WL_ENOMEM, NULL);
        next = WL_GENERATOR_FAILED;
    }
    if (next == WL_GENERATOR_FAILED) {
        wl_piece_dispose(&first);
        gen->stop(gen);
        wl_exchange_core_error(ex, &err);
        return;
    }
    rows->streaming = true;
    set_headers(ex, etag, gzip);
    wl_exchange_generate(ex, 200, "application/json", gen, &first, next);
}

/* What wl_export_stream_admit asked the admission for: the version, read in its group. */
typedef struct {
    wl_export_ticket_t ticket; /* taken before the group */
} version_asked_t;

void *wl_export_stream_admit(wl_core_t *core, wl_export_cache_t *cache, wl_exchange_t *ex)
{
    /* What respond_full would read in a statement of its own: the version of a full export
     * that is conditional, or whose body may be cached, when memory holds none. A key this
     * process does not know has no organization yet: only its conditional requests ask. */
    if (cache == NULL || ex->query.len != 0)
        return NULL;
    int64_t org_id = wl_admission_principal(ex->admission)->org_id, version = 0;
    bool conditional = wl_exchange_header(ex, "If-None-Match") != NULL;
    if (org_id != 0 && (wl_export_cache_version(cache, org_id, &version) ||
                        (!conditional && !wl_export_cache_has_body(cache, org_id))))
        return NULL;
    if (org_id == 0 && !conditional)
        return NULL;
    version_asked_t *asked = wl_arena_alloc(&ex->arena, sizeof(*asked));
    if (asked == NULL)
        return NULL;
    asked->ticket = wl_export_cache_ticket(cache, org_id);
    wl_admission_read_export_version(core, ex->admission);
    return asked;
}

static void respond_full(wl_core_t *core, wl_export_cache_t *cache, wl_exchange_t *ex,
                         const version_asked_t *asked)
{
    wl_error_t err;
    wl_error_init(&err);
    bool gzip = wl_negotiate_gzip(wl_exchange_header_list(ex, "Accept-Encoding"));
    int64_t org_id = ex->principal.org_id, version = 0;
    /* An unchanged export costs no query: the version (and maybe the body) is known, from
     * memory or from the admission's group. */
    if (cache != NULL) {
        bool known = wl_export_cache_version(cache, org_id, &version);
        if (!known && asked != NULL && wl_admission_export_version(ex->admission, &version)) {
            wl_export_cache_remember(cache, org_id, asked->ticket, version);
            known = true;
        }
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

void wl_export_stream_respond(wl_core_t *core, wl_export_cache_t *cache, wl_exchange_t *ex,
                              void *admitted)
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
        respond_full(core, cache, ex, admitted);
}
