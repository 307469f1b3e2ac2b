/* Writing diagnostic lines, plain or as JSON, happens here. */
#include "walklist/log.h"

#include "walklist/redact.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define LINE_MAX_BYTES 2048

static bool use_json;

void wl_log_use_json(bool json)
{
    use_json = json;
}

/* Appends text to out (size limited), JSON-escaped when json is set. */
static size_t append(char *out, size_t used, size_t size, const char *text, bool json)
{
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0'; p++) {
        char escaped[8];
        const char *piece = escaped;
        if (!json || (*p >= 0x20 && *p != '"' && *p != '\\')) {
            escaped[0] = (char)*p;
            escaped[1] = '\0';
        } else if (*p == '\n') {
            piece = "\\n";
        } else if (*p == '"' || *p == '\\') {
            escaped[0] = '\\';
            escaped[1] = (char)*p;
            escaped[2] = '\0';
        } else {
            snprintf(escaped, sizeof(escaped), "\\u%04x", *p);
        }
        size_t len = strlen(piece);
        if (used + len >= size)
            break;
        memcpy(out + used, piece, len);
        used += len;
    }
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
    /* Room for the escapes of the detail (worst case six bytes per byte is cut short). */
    char line[LINE_MAX_BYTES + 64];
    size_t size = sizeof(line) - 3, used = 0;
    if (use_json) {
        used = append(line, used, size, "{\"level\":\"", false);
        used = append(line, used, size, level, true);
        used = append(line, used, size, "\",\"msg\":\"", false);
        used = append(line, used, size, msg, true);
        used = append(line, used, size, "\",\"detail\":\"", false);
        used = append(line, used, size, detail, true);
        used = append(line, used, sizeof(line) - 1, "\"}", false);
    } else {
        used = append(line, used, size, "walklist: ", false);
        used = append(line, used, size, msg, false);
        used = append(line, used, size, ": ", false);
        used = append(line, used, sizeof(line) - 1, detail, false);
    }
    line[used++] = '\n';
    wl_log_write_line(line, used);
}

void wl_log_write_line(const char *line, size_t len)
{
    while (write(STDERR_FILENO, line, len) < 0 && errno == EINTR)
        ; /* anything else: nowhere left to report it */
}

void wl_log(const char *level, const char *msg, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wl_logv(level, msg, fmt, ap);
    va_end(ap);
}
