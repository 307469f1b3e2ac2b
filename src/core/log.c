/* Writing diagnostic lines, plain or as JSON, happens here. */
#include "walklist/log.h"

#include "walklist/redact.h"
#include "walklist/utf8.h"

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

/* Room kept for closing a line: a string's quote, then "}\n". */
#define LINE_CLOSE 3

/* Appends bytes as they are; false (the line left as it was) when they do not fit. */
static bool put(wl_log_line_t *line, const char *bytes, size_t len)
{
    if (line->len + len > sizeof(line->text) - LINE_CLOSE)
        return false;
    memcpy(line->text + line->len, bytes, len);
    line->len += len;
    return true;
}

/* Appends value as the inside of a JSON string (see wl_log_line_t for the escaping), as much
 * of it as fits, never part of a character or an escape; false when it was cut. */
static bool put_escaped(wl_log_line_t *line, const char *value, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)value[i];
        if (c >= 0x80) {
            uint32_t cp;
            int n = wl_utf8_decode(value + i, len - i, &cp);
            if (n > 1 && !wl_utf8_is_control(cp)) {
                if (!put(line, value + i, (size_t)n))
                    return false;
                i += (size_t)n;
                continue;
            }
        }
        bool ok;
        if (c == '"' || c == '\\') {
            char escaped[2] = {'\\', (char)c};
            ok = put(line, escaped, 2);
        } else if (c < 0x20 || c >= 0x7f) {
            char escaped[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            ok = put(line, escaped, 6);
        } else {
            ok = put(line, (const char *)&c, 1);
        }
        if (!ok)
            return false;
        i++;
    }
    return true;
}

/* Appends ,"key":value ({"key":value first). A string value is cut to what fits (and the
 * fields after it dropped); a field that cannot start is dropped whole. */
static void field(wl_log_line_t *line, const char *key, const char *value, size_t len, bool quoted)
{
    if (line->full)
        return;
    size_t before = line->len;
    bool started = put(line, line->len == 0 ? "{\"" : ",\"", 2) && put(line, key, strlen(key)) &&
                   put(line, quoted ? "\":\"" : "\":", quoted ? 3 : 2);
    if (!started || (!quoted && !put(line, value, len))) {
        line->len = before;
        line->full = true;
        return;
    }
    if (quoted) {
        line->full = !put_escaped(line, value, len);
        line->text[line->len++] = '"'; /* LINE_CLOSE kept room for it */
    }
}

/* RFC 3339, UTC, milliseconds: "2024-06-10T08:15:30.123Z" (what log pipelines parse). */
static size_t format_now(char out[32])
{
    struct timespec now;
    struct tm utc;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &utc);
    size_t len = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &utc);
    return len + (size_t)snprintf(out + len, 32 - len, ".%03ldZ", now.tv_nsec / 1000000);
}

void wl_log_line_begin(wl_log_line_t *line, const char *level, const char *msg)
{
    line->len = 0;
    line->full = false;
    char time_text[32];
    field(line, "time", time_text, format_now(time_text), true);
    field(line, "level", level, strlen(level), true);
    field(line, "msg", msg, strlen(msg), true);
}

void wl_log_line_str(wl_log_line_t *line, const char *key, const char *value, size_t len)
{
    field(line, key, value != NULL ? value : "", value != NULL ? len : 0, true);
}

void wl_log_line_int(wl_log_line_t *line, const char *key, long long value)
{
    char text[24];
    int n = snprintf(text, sizeof(text), "%lld", value);
    field(line, key, text, (size_t)n, false);
}

void wl_log_line_ms(wl_log_line_t *line, const char *key, double value)
{
    char text[32];
    int n = snprintf(text, sizeof(text), "%.3f", value);
    field(line, key, text, (size_t)n, false);
}

void wl_log_line_bool(wl_log_line_t *line, const char *key, bool value)
{
    field(line, key, value ? "true" : "false", value ? 4 : 5, false);
}

void wl_log_line_end(wl_log_line_t *line)
{
    if (line->len == 0)
        line->text[line->len++] = '{';
    line->text[line->len++] = '}';
    line->text[line->len++] = '\n';
    write_line(line->text, line->len);
}

void wl_log(const char *level, const char *msg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wl_logv(level, msg, fmt, ap);
    va_end(ap);
}
