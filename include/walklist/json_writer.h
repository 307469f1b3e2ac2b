/*
 * Writing JSON text value by value into a buffer the caller owns: the one writer of the JSON
 * the project makes by hand (log lines, the stock export's streamed items, webhook bodies, the
 * answers that must go out when nothing can be allocated, and the proto3 JSON codec's text of
 * every message).
 *
 * The error is sticky: once a value does not fit, the writer has failed, writes nothing more,
 * and wl_json_ok says so; the text written up to the failed value stays valid to that point.
 * Commas are the writer's: a value, a key or a container is written after whatever came before
 * it in the same container.
 *
 * One escaper for every string (wl_json_escape): '"' and '\\' escaped, the C0 controls in
 * JSON's short forms where there is one and as \u00XX (upper-case hex) otherwise, a byte that
 * is not UTF-8 as U+FFFD, every other character as it is: the text jansson writes, so that the
 * streamed export and the codec's agree byte for byte. WL_JSON_ESCAPE_CONTROLS (log lines, which
 * terminals and log viewers show) escapes DEL and the C1 controls as \u00XX too, and writes a
 * byte that is not UTF-8 as \u00XX of its value, so that nothing of it is lost.
 *
 *     char text[256];
 *     wl_json_writer_t w;
 *     wl_json_writer_init(&w, text, sizeof(text), 0);
 *     wl_json_open_object(&w);
 *     wl_json_key(&w, "sku");
 *     wl_json_cstring(&w, sku);
 *     wl_json_close_object(&w);
 *     if (!wl_json_ok(&w))
 *         return too_long();
 */
#ifndef WALKLIST_JSON_WRITER_H
#define WALKLIST_JSON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The most bytes one byte of a string can take once escaped ("\u001F"). */
#define WL_JSON_ESCAPE_GROWTH 6

/* wl_json_escape's and the writer's flags. */
#define WL_JSON_ESCAPE_CONTROLS 1u

typedef struct {
    char *buf;
    size_t cap; /* bytes buf holds */
    size_t len; /* bytes written */
    unsigned flags;
    bool failed; /* a value did not fit: nothing is written any more */
    bool comma;  /* the next value or key follows another in its container */
} wl_json_writer_t;

/** Where a writer stood, to go back to it (wl_json_rewind): a field that must go whole. */
typedef struct {
    size_t len;
    bool comma;
} wl_json_mark_t;

/**
 * Escapes len bytes of s into out (no quotes added), which has room for
 * len * WL_JSON_ESCAPE_GROWTH bytes; returns the end of what it wrote. Pure.
 */
char *wl_json_escape(char *out, const char *s, size_t len, unsigned flags);

/** Writes into buf (cap bytes; nothing is NUL-terminated). flags: WL_JSON_ESCAPE_CONTROLS. */
void wl_json_writer_init(wl_json_writer_t *w, char *buf, size_t cap, unsigned flags);

/** An object's key (NUL-terminated, escaped like any string); its value comes next. */
void wl_json_key(wl_json_writer_t *w, const char *key);

/** A key the code spells, a string literal of letters, digits and '_' (nothing to escape):
 * written as it is, without scanning it. */
#define WL_JSON_KEY(w, literal) wl_json_key_verbatim((w), "\"" literal "\":", sizeof(literal) + 2)

/** A string of len bytes (NUL bytes included, escaped). */
void wl_json_string(wl_json_writer_t *w, const char *s, size_t len);
void wl_json_cstring(wl_json_writer_t *w, const char *s);

/**
 * A string cut to what fits with keep bytes still free after it: as much of s as fits, never
 * part of a character or an escape, and its closing quote. When it was cut the writer has
 * failed (the fields after it are dropped); the text is still valid JSON up to the string.
 */
void wl_json_string_cut(wl_json_writer_t *w, const char *s, size_t len, size_t keep);

void wl_json_int(wl_json_writer_t *w, int64_t value);

/** True while every value fitted. */
static inline bool wl_json_ok(const wl_json_writer_t *w)
{
    return !w->failed;
}

static inline wl_json_mark_t wl_json_mark(const wl_json_writer_t *w)
{
    return (wl_json_mark_t){w->len, w->comma};
}

/** Back to mark, dropping what came after it; a failure stays. */
static inline void wl_json_rewind(wl_json_writer_t *w, wl_json_mark_t mark)
{
    w->len = mark.len;
    w->comma = mark.comma;
}

/*
 * What takes no escaping is written here, inline: the stock export writes a million items in a
 * row, and a call per bracket and key would cost it more than the text itself.
 */

/* Starts a value (or a key) of n bytes after its comma; false (failed) when it does not fit. */
static inline bool wl__json_begin(wl_json_writer_t *w, size_t n)
{
    if (w->failed || n + w->comma > w->cap - w->len) {
        w->failed = true;
        return false;
    }
    if (w->comma)
        w->buf[w->len++] = ',';
    w->comma = true;
    return true;
}

static inline void wl_json_open_object(wl_json_writer_t *w)
{
    if (wl__json_begin(w, 1)) {
        w->buf[w->len++] = '{';
        w->comma = false;
    }
}

static inline void wl_json_open_array(wl_json_writer_t *w)
{
    if (wl__json_begin(w, 1)) {
        w->buf[w->len++] = '[';
        w->comma = false;
    }
}

static inline void wl__json_close(wl_json_writer_t *w, char bracket)
{
    if (w->failed || w->len == w->cap) {
        w->failed = true;
        return;
    }
    w->buf[w->len++] = bracket;
    w->comma = true;
}

static inline void wl_json_close_object(wl_json_writer_t *w)
{
    wl__json_close(w, '}');
}

static inline void wl_json_close_array(wl_json_writer_t *w)
{
    wl__json_close(w, ']');
}

/** A value that is JSON text already (a number formatted elsewhere, jsonb from PostgreSQL),
 * written as it is. */
static inline void wl_json_raw(wl_json_writer_t *w, const char *json, size_t len)
{
    if (wl__json_begin(w, len)) {
        memcpy(w->buf + w->len, json, len);
        w->len += len;
    }
}

/** Room for a value of exactly n bytes of JSON text the caller writes there itself (after its
 * comma): where to write them, or NULL when they do not fit (the writer has failed). */
static inline char *wl_json_value_space(wl_json_writer_t *w, size_t n)
{
    if (!wl__json_begin(w, n))
        return NULL;
    char *at = w->buf + w->len;
    w->len += n;
    return at;
}

/** key_text is a key already quoted and followed by ':' (what WL_JSON_KEY makes). */
static inline void wl_json_key_verbatim(wl_json_writer_t *w, const char *key_text, size_t len)
{
    wl_json_raw(w, key_text, len);
    w->comma = false;
}

static inline void wl_json_bool(wl_json_writer_t *w, bool value)
{
    wl_json_raw(w, value ? "true" : "false", value ? 4 : 5);
}

static inline void wl_json_null(wl_json_writer_t *w)
{
    wl_json_raw(w, "null", 4);
}

#endif
