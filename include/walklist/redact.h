/*
 * The one redaction rule for what a client controls and a log line shows (a path, a request
 * id, a message quoting either): every API key in it is replaced by "REDACTED", however it was
 * encoded. A key is "wlk_", 8 base62 characters (its public prefix), "_" and base62
 * characters (its secret), each of them possibly percent-encoded (%77lk%5F...); a key cut short
 * still counts from its first secret character on. Pure: no I/O, no allocation.
 */
#ifndef WALKLIST_REDACT_H
#define WALKLIST_REDACT_H

#include <stddef.h>

/**
 * Copies text (len bytes, any bytes) into out, which receives at most size - 1 bytes and a
 * NUL, with every key replaced. Returns the length written.
 */
size_t wl_redact_keys(const char *text, size_t len, char *out, size_t size);

/**
 * Copies a database connection string, or a message quoting one (libpq's), into out (at most
 * size - 1 bytes and a NUL) with its secrets replaced by "REDACTED": the value of every
 * "password=" and "sslpassword=" (conninfo keywords or URI query parameters, quoted or not)
 * and the password of a URI's user information ("postgresql://user:secret@host").
 * Returns the length written.
 *
 *     wl_redact_conninfo("postgresql://app:s3cret@db/wl", out, sizeof(out));
 *     // "postgresql://app:REDACTED@db/wl"
 */
size_t wl_redact_conninfo(const char *text, char *out, size_t size);

#endif
