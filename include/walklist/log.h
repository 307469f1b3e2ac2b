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

/** JSON lines from now on (call once, before threads start). */
void wl_log_use_json(bool json);

/**
 * Logs msg (a fixed text, e.g. "database error") at level ("error", "warn",
 * "info") with a formatted detail; trailing line breaks of the detail are dropped.
 */
void wl_log(const char *level, const char *msg, const char *fmt, ...) WL_PRINTF(3, 4);
void wl_logv(const char *level, const char *msg, const char *fmt, va_list ap);

/**
 * Writes a line made elsewhere (the request log; ending in '\n', at most 4 KiB) the same way:
 * one write(2), no stdio lock held across it, so that request threads never queue for stderr.
 */
void wl_log_write_line(const char *line, size_t len);

#endif
