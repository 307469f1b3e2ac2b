/* Following the framing of requests on a connection's bytes (RFC 9112) happens here. */
#include "http/wire_framing.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

/* The line's kept text without its CR; its length in *len. */
static const char *line_text(const wl_wire_framing_t *w, bool bare, size_t *len)
{
    size_t n = w->line_len < WL_FRAMING_LINE_KEPT ? w->line_len : WL_FRAMING_LINE_KEPT;
    if (!bare && n > 0 && n == w->line_len)
        n--; /* the CR */
    *len = n;
    return w->line;
}

static bool name_is(const char *line, size_t len, const char *name, const char **value,
                    size_t *value_len)
{
    size_t n = strlen(name);
    if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
        return false;
    const char *v = line + n + 1;
    const char *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *value = v;
    *value_len = (size_t)(end - v);
    return true;
}

/* A Content-Length value: 1*DIGIT (RFC 9110 8.6) that fits in 64 bits. */
static bool parse_length(const char *v, size_t len, uint64_t *out)
{
    if (len == 0)
        return false;
    uint64_t value = 0;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9' || value > (UINT64_MAX - (uint64_t)(v[i] - '0')) / 10)
            return false;
        value = value * 10 + (uint64_t)(v[i] - '0');
    }
    *out = value;
    return true;
}

/* The head ended (its blank line): how its body is framed. NULL, or why it is refused. */
static const char *head_done(wl_wire_framing_t *w)
{
    if (w->codings > 0) {
        /* libmicrohttpd lets a coding win over a length; walklistd refuses other codings. */
        w->phase = w->codings == 1 && w->chunked ? WL_FRAMING_CHUNK_SIZE : WL_FRAMING_UNTRACKED;
    } else if (w->lengths > 1) {
        w->phase = WL_FRAMING_UNTRACKED; /* walklistd refuses two lengths (framing.c) */
    } else if (w->lengths == 1 && w->length_bad) {
        return "Content-Length must be a number of bytes (digits only, at most 2^64-1)";
    } else if (w->lengths == 1 && w->length > 0) {
        w->phase = WL_FRAMING_LENGTH_BODY;
        w->remaining = w->length;
    } else {
        w->phase = WL_FRAMING_HEAD;
    }
    w->started = false;
    w->lengths = w->codings = 0;
    w->length_bad = w->chunked = false;
    return NULL;
}

static const char *head_line(wl_wire_framing_t *w, bool bare)
{
    size_t len;
    const char *text = line_text(w, bare, &len);
    if (len == 0 && w->line_len <= 1)
        return w->started ? head_done(w) : NULL; /* blank lines before a request are skipped */
    if (!w->started) {
        w->started = true; /* the request line */
        return NULL;
    }
    const char *value;
    size_t value_len;
    if (name_is(text, len, "Content-Length", &value, &value_len)) {
        w->lengths++;
        w->length_bad =
            w->line_len > WL_FRAMING_LINE_KEPT || !parse_length(value, value_len, &w->length);
    } else if (name_is(text, len, "Transfer-Encoding", &value, &value_len)) {
        w->codings++;
        w->chunked = value_len == 7 && strncasecmp(value, "chunked", 7) == 0;
    }
    return NULL;
}

/* chunk-size [ chunk-ext ] CRLF (RFC 9112 7.1): hex digits, then nothing or extensions. */
static const char *chunk_size_line(wl_wire_framing_t *w, bool bare)
{
    if (bare || w->lone_cr)
        return "a chunk-size line must end with CRLF";
    size_t len;
    const char *text = line_text(w, bare, &len);
    uint64_t size = 0;
    size_t i = 0;
    for (; i < len; i++) {
        char c = text[i];
        int digit = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
        if (digit < 0)
            break;
        if (i >= 15)
            return "a chunk size must be at most 15 hexadecimal digits";
        size = size * 16 + (uint64_t)digit;
    }
    size_t rest = i;
    while (rest < len && (text[rest] == ' ' || text[rest] == '\t'))
        rest++;
    if (i == 0 || (rest < len && text[rest] != ';'))
        return "malformed chunk size";
    w->phase = size > 0 ? WL_FRAMING_CHUNK_DATA : WL_FRAMING_TRAILER;
    w->remaining = size;
    return NULL;
}

static const char *trailer_line(wl_wire_framing_t *w, bool bare)
{
    if (bare)
        return "a trailer line must end with CRLF";
    if (w->line_len <= 1)
        w->phase = WL_FRAMING_HEAD; /* the blank line ends the message */
    return NULL;
}

/* The bytes of a line up to its LF (or the end of what was read), at least one, taken at once
 * rather than a byte at a time: kept while the line has room, and a CR with anything after it
 * remembered as a lone CR. Returns how many were taken. */
static size_t line_run(wl_wire_framing_t *w, const unsigned char *p, size_t n)
{
    const unsigned char *lf = memchr(p, '\n', n);
    size_t len = lf != NULL ? (size_t)(lf - p) : n;
    if (w->cr || memchr(p, '\r', len - 1) != NULL)
        w->lone_cr = true;
    if (w->line_len < WL_FRAMING_LINE_KEPT) {
        size_t room = WL_FRAMING_LINE_KEPT - w->line_len;
        memcpy(w->line + w->line_len, p, len < room ? len : room);
    }
    w->line_len += len;
    w->cr = p[len - 1] == '\r';
    return len;
}

const char *wl_wire_framing_feed(wl_wire_framing_t *w, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        if (w->phase == WL_FRAMING_UNTRACKED)
            return NULL;
        if (w->phase == WL_FRAMING_LENGTH_BODY || w->phase == WL_FRAMING_CHUNK_DATA) {
            size_t take = n - i < w->remaining ? n - i : (size_t)w->remaining;
            i += take;
            w->remaining -= take;
            if (w->remaining == 0)
                w->phase =
                    w->phase == WL_FRAMING_LENGTH_BODY ? WL_FRAMING_HEAD : WL_FRAMING_CHUNK_END;
            continue;
        }
        if (w->phase != WL_FRAMING_CHUNK_END && p[i] != '\n') {
            i += line_run(w, p + i, n - i);
            continue;
        }
        unsigned char c = p[i++];
        if (w->phase == WL_FRAMING_CHUNK_END) {
            if (c != (w->crlf_seen == 0 ? '\r' : '\n'))
                return c == '\n' ? "chunk data must be followed by CRLF"
                                 : "chunk data longer than its chunk size";
            if (++w->crlf_seen == 2) {
                w->crlf_seen = 0;
                w->phase = WL_FRAMING_CHUNK_SIZE;
            }
            continue;
        }
        bool bare = !w->cr;
        const char *refused = w->phase == WL_FRAMING_HEAD         ? head_line(w, bare)
                              : w->phase == WL_FRAMING_CHUNK_SIZE ? chunk_size_line(w, bare)
                                                                  : trailer_line(w, bare);
        w->line_len = 0;
        w->cr = w->lone_cr = false;
        if (refused != NULL)
            return refused;
    }
    return NULL;
}
