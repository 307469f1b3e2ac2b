/* Writing diagnostic lines, plain or as JSON, happens here. */
#include "walklist/log.h"

#include "walklist/decimal.h"
#include "walklist/redact.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LINE_MAX_BYTES 2048

static bool use_json;

void wl_log_use_json(bool json)
{
    use_json = json;
}

/* One write(2) a line, no stdio lock held across it: lines from different threads never
 * interleave, and request threads never queue for stderr. */
static void write_line(const char *line, size_t len)
{
    while (write(STDERR_FILENO, line, len) < 0 && errno == EINTR)
        ; /* anything else: nowhere left to report it */
}

/* Appends len bytes of text to out (size limited; plain text, no escapes). */
static size_t append_plain(char *out, size_t used, size_t size, const char *text)
{
    size_t len = strlen(text);
    if (used + len >= size)
        len = size - 1 - used;
    memcpy(out + used, text, len);
    used += len;
    out[used] = '\0';
    return used;
}

void wl_logv(const char *level, const char *msg, const char *fmt, va_list ap)
{
    char raw[LINE_MAX_BYTES / 2], detail[LINE_MAX_BYTES / 2];
    vsnprintf(raw, sizeof(raw), fmt, ap);
    /* A detail may quote what a client sent (libmicrohttpd's messages quote request lines). */
    size_t n = wl_redact_keys(raw, strlen(raw), detail, sizeof(detail));
    while (n > 0 && (detail[n - 1] == '\n' || detail[n - 1] == '\r'))
        detail[--n] = '\0';
    if (use_json) {
        wl_log_line_t line;
        wl_log_line_begin(&line, level, msg);
        wl_log_line_str(&line, "detail", detail, n);
        wl_log_line_end(&line);
        return;
    }
    char line[LINE_MAX_BYTES + 64];
    size_t used = append_plain(line, 0, sizeof(line) - 1, "walklist: ");
    used = append_plain(line, used, sizeof(line) - 1, msg);
    used = append_plain(line, used, sizeof(line) - 1, ": ");
    used = append_plain(line, used, sizeof(line) - 1, detail);
    line[used++] = '\n';
    write_line(line, used);
}

/* A field whose value is JSON text already (a number, true, false): key and value go whole or
 * not at all. */
static void raw_field(wl_log_line_t *line, const char *key, const char *value, size_t len)
{
    wl_json_mark_t mark = wl_json_mark(&line->json);
    wl_json_key(&line->json, key);
    wl_json_raw(&line->json, value, len);
    if (!wl_json_ok(&line->json))
        wl_json_rewind(&line->json, mark);
}

/* RFC 3339, UTC, milliseconds: "2024-06-10T08:15:30.123Z" (what log pipelines parse). A thread
 * formats each second's date and time once: every request writes a line. */
static size_t format_now(char out[32])
{
    static _Thread_local time_t second = -1;
    static _Thread_local char second_text[32];
    static _Thread_local size_t second_len;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (now.tv_sec != second) {
        struct tm utc;
        gmtime_r(&now.tv_sec, &utc);
        second_len = strftime(second_text, sizeof(second_text), "%Y-%m-%dT%H:%M:%S", &utc);
        second = now.tv_sec;
    }
    memcpy(out, second_text, second_len);
    long ms = now.tv_nsec / 1000000;
    char *tail = out + second_len;
    tail[0] = '.';
    tail[1] = (char)('0' + ms / 100);
    tail[2] = (char)('0' + ms / 10 % 10);
    tail[3] = (char)('0' + ms % 10);
    tail[4] = 'Z';
    return second_len + 5;
}

void wl_log_line_begin(wl_log_line_t *line, const char *level, const char *msg)
{
    wl_json_writer_init(&line->json, line->text, sizeof(line->text) - 2, WL_JSON_ESCAPE_CONTROLS);
    wl_json_open_object(&line->json);
    char time_text[32];
    wl_log_line_str(line, "time", time_text, format_now(time_text));
    wl_log_line_str(line, "level", level, strlen(level));
    wl_log_line_str(line, "msg", msg, strlen(msg));
}

/* A string value is cut to what fits (the fields after it dropped); a field whose key does not
 * fit is dropped whole. */
void wl_log_line_str(wl_log_line_t *line, const char *key, const char *value, size_t len)
{
    wl_json_mark_t mark = wl_json_mark(&line->json);
    wl_json_key(&line->json, key);
    if (!wl_json_ok(&line->json)) {
        wl_json_rewind(&line->json, mark);
        return;
    }
    wl_json_string_cut(&line->json, value != NULL ? value : "", value != NULL ? len : 0, 0);
}

void wl_log_line_int(wl_log_line_t *line, const char *key, long long value)
{
    char text[WL_DECIMAL_SIZE];
    raw_field(line, key, text, wl_decimal(value, text));
}

/* Written by hand for a duration (every request's line has one; snprintf costs about two
 * thousand instructions): rounded to the nearest thousandth, where snprintf rounds the exact
 * binary value, which can differ by one in the last digit at a tie. Anything outside a
 * duration's range goes through snprintf. */
void wl_log_line_ms(wl_log_line_t *line, const char *key, double value)
{
    char text[WL_DECIMAL_SIZE + 8];
    size_t n;
    if (value >= 0 && value < 1e12) {
        long long thousandths = (long long)(value * 1000.0 + 0.5);
        n = wl_decimal(thousandths / 1000, text);
        int fraction = (int)(thousandths % 1000);
        text[n++] = '.';
        text[n++] = (char)('0' + fraction / 100);
        text[n++] = (char)('0' + fraction / 10 % 10);
        text[n++] = (char)('0' + fraction % 10);
    } else {
        n = (size_t)snprintf(text, sizeof(text), "%.3f", value);
        n = n < sizeof(text) ? n : sizeof(text) - 1;
    }
    raw_field(line, key, text, n);
}

void wl_log_line_bool(wl_log_line_t *line, const char *key, bool value)
{
    raw_field(line, key, value ? "true" : "false", value ? 4 : 5);
}

void wl_log_line_end(wl_log_line_t *line)
{
    /* The writer kept these two bytes free. */
    size_t len = line->json.len;
    line->text[len++] = '}';
    line->text[len++] = '\n';
    write_line(line->text, len);
}

void wl_log(const char *level, const char *msg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wl_logv(level, msg, fmt, ap);
    va_end(ap);
}
