/*
 * Diagnostics on stderr, one line each, written with a single write(2) so that
 * lines from different threads never interleave. walklistd switches to JSON
 * (one object per line, the shape of its request log, for log pipelines);
 * other programs keep plain text.
 */
#ifndef WALKLIST_LOG_H
#define WALKLIST_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include "walklist/error.h"
#include "walklist/json_writer.h"

/** JSON lines from now on (call once, before threads start). */
void wl_log_use_json(bool json);

/**
 * Logs msg (a fixed text, e.g. "database error") at level ("error", "warn",
 * "info") with a formatted detail; trailing line breaks of the detail are dropped.
 */
void wl_log(const char *level, const char *msg, const char *fmt, ...) WL_PRINTF(3, 4);
void wl_logv(const char *level, const char *msg, const char *fmt, va_list ap);

/**
 * A JSON log line built field by field, for lines with fields of their own (the request log,
 * startup): every JSON line, wl_log's included, is one. Written with the JSON writer
 * (json_writer.h) with every control escaped: valid UTF-8 passes, DEL, the C0 and C1 controls
 * and every byte that is not UTF-8 become \u00XX, so that the line is valid JSON whatever the
 * bytes and shows nothing a terminal would act on. A line longer than its buffer is cut at a
 * field, or inside a string value at a whole character, and still closed. Written with one
 * write(2) on wl_log_line_end.
 */
typedef struct {
    char text[2048];
    wl_json_writer_t json; /* into text, its closing "}\n" always kept free */
} wl_log_line_t;

void wl_log_line_begin(wl_log_line_t *line, const char *level, const char *msg);
/** A string field; len bytes of value (not NUL-terminated), at most max_len of them. */
void wl_log_line_str(wl_log_line_t *line, const char *key, const char *value, size_t len);
void wl_log_line_int(wl_log_line_t *line, const char *key, long long value);
/** A number with three decimals (durations in milliseconds). */
void wl_log_line_ms(wl_log_line_t *line, const char *key, double value);
void wl_log_line_bool(wl_log_line_t *line, const char *key, bool value);
/** Closes the object and writes the line. */
void wl_log_line_end(wl_log_line_t *line);

#endif
