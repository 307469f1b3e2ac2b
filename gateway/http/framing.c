/* Checking a request head against RFC 9112 happens here. */
#include "http/framing.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "walklist/log.h"

static bool layout_known;
static pthread_once_t layout_once = PTHREAD_ONCE_INIT;

/* The read-buffer layout described in framing.h, checked against libmicrohttpd's source of
 * these versions (connection.c: get_next_header_line, parse_initial_message_line,
 * process_header_line). */
static void check_layout_version(void)
{
    const char *version = MHD_get_version();
    layout_known = strcmp(version, "0.9.75") == 0 || strcmp(version, "0.9.76") == 0;
    if (!layout_known)
        wl_log("warn", "request head checks",
               "libmicrohttpd %s: bare LF, obs-fold and NUL in the request line are not "
               "checked (the checks know 0.9.75-0.9.76)",
               version);
}

/* RFC 9110 5.6.2 tchar: what a field name is made of. */
static bool is_token(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (!alnum && strchr("!#$%&'*+-.^_`|~", c) == NULL)
            return false;
    }
    return true;
}

/* A field value: visible bytes, spaces and tabs, and obs-text (RFC 9110 5.5); no CR, LF, NUL
 * or other control. */
static bool is_field_value(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return false;
    }
    return true;
}

/* A line ended by CRLF leaves two NULs where libmicrohttpd ended it; a bare LF leaves one. */
static bool crlf_at(const char *end, const char *head_end, const char **next)
{
    if (end + 2 > head_end || end[0] != '\0' || end[1] != '\0')
        return false;
    *next = end + 2;
    return true;
}

typedef struct {
    int hosts, lengths, codings;
    bool chunked_only;    /* Transfer-Encoding is exactly "chunked" */
    bool bad_field;       /* a name or value made of what fields are not */
    bool check_lines;     /* the layout is known: follow the lines */
    bool bad_line;        /* a line not where the previous one ended, or not ended by CRLF */
    const char *line;     /* where the next field line must begin */
    const char *head_end; /* just past the head's blank line */
} fields_t;

static enum MHD_Result read_field(void *cls, enum MHD_ValueKind kind, const char *name,
                                  size_t name_size, const char *value, size_t value_size)
{
    (void)kind;
    fields_t *f = cls;
    if (value == NULL)
        value = "";
    if (!is_token(name, name_size) || strlen(name) != name_size || strlen(value) != value_size ||
        !is_field_value(value, value_size))
        f->bad_field = true;
    if (f->check_lines && !f->bad_line) {
        /* name at the line's start, NUL where its colon was, then only spaces or tabs before
         * the value, and CRLF after it. A folded line (obs-fold) is joined elsewhere in
         * libmicrohttpd's memory: its field no longer starts where its line did. */
        const char *p = name + name_size + 1;
        if (name != f->line || name[name_size] != '\0' || value < p || value > f->head_end)
            f->bad_line = true;
        while (!f->bad_line && p < value && (*p == ' ' || *p == '\t'))
            p++;
        if (!f->bad_line && (p != value || !crlf_at(value + value_size, f->head_end, &f->line)))
            f->bad_line = true;
    }
    if (strcasecmp(name, "Host") == 0) {
        f->hosts++;
    } else if (strcasecmp(name, "Content-Length") == 0) {
        f->lengths++;
    } else if (strcasecmp(name, "Transfer-Encoding") == 0) {
        f->codings++;
        f->chunked_only = f->codings == 1 && strcasecmp(value, "chunked") == 0;
    }
    return MHD_YES;
}

/* The request line: "method SP target SP version" with single spaces, a target of visible
 * bytes only (a NUL would cut it short of where the version starts), ended by CRLF. */
static bool request_line_ok(const char *method, const wl_framing_target_t *target,
                            const char *version, const char *head_end, fields_t *f)
{
    if (target->at == NULL || target->copy == NULL)
        return false;
    for (size_t i = 0; i < target->len; i++) {
        unsigned char c = (unsigned char)target->copy[i];
        if (c <= 0x20 || c == 0x7f)
            return false;
    }
    if (!f->check_lines)
        return true;
    return target->at == method + strlen(method) + 1 && version == target->at + target->len + 1 &&
           crlf_at(version + strlen(version), head_end, &f->line);
}

void wl_framing_check(struct MHD_Connection *connection, const char *method,
                      const wl_framing_target_t *target, const char *version,
                      wl_framing_verdict_t *out)
{
    pthread_once(&layout_once, check_layout_version);
    *out = (wl_framing_verdict_t){0, NULL, false};
    const union MHD_ConnectionInfo *size =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    fields_t f = {.check_lines = layout_known && size != NULL};
    f.head_end = f.check_lines ? method + size->header_size : NULL;
    bool line_ok = request_line_ok(method, target, version, f.head_end, &f);
    f.bad_line = !line_ok;
    MHD_get_connection_values_n(connection, MHD_HEADER_KIND, read_field, &f);
    /* After the last field: the blank line, and the head ends right after it. */
    const char *after = NULL;
    if (f.check_lines && !f.bad_line &&
        (!crlf_at(f.line, f.head_end, &after) || after != f.head_end))
        f.bad_line = true;

    if (!line_ok) {
        out->status = 400, out->message = "malformed request line (one space between method, "
                                          "target and version; no control bytes in the target)";
    } else if (f.bad_field) {
        out->status = 400, out->message = "malformed header field (a name that is not a token, "
                                          "or a control byte in a value)";
    } else if (f.bad_line) {
        out->status = 400, out->message = "malformed header (every line ends with CRLF; no "
                                          "obs-fold)";
    } else if (f.lengths > 1) {
        out->status = 400, out->message = "more than one Content-Length header field";
    } else if (strcmp(version, "HTTP/1.1") == 0 && f.hosts != 1) {
        out->status = 400, out->message = "an HTTP/1.1 request needs exactly one Host header field";
    } else if (f.codings > 0 && !f.chunked_only) {
        out->status = 501, out->message = "unsupported transfer coding: only chunked is";
    }
    out->close = out->status != 0 || (f.codings > 0 && f.lengths > 0);
}
