/* Checking request framing on the wire, in front of libmicrohttpd, happens here. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include "http/wire_guard.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "errors/error_info.h"
#include "walklist/log.h"

#define GUARDED_MAX 65536 /* descriptors tracked at most; higher ones pass unchecked */
#define LINE_KEPT   128   /* of each line: enough for the fields that frame a body */

typedef enum {
    HEAD,        /* the request line and header fields */
    LENGTH_BODY, /* remaining bytes of a Content-Length body */
    CHUNK_SIZE,  /* a chunk-size line */
    CHUNK_DATA,  /* remaining bytes of a chunk */
    CHUNK_END,   /* the CRLF after a chunk's data */
    TRAILER,     /* trailer fields, up to the blank line */
    UNTRACKED,   /* a head libmicrohttpd or walklistd refuses anyway: nothing more is checked */
    REFUSED,     /* answered here: every later read fails */
} phase_t;

typedef struct {
    phase_t phase;
    char line[LINE_KEPT];
    size_t line_len; /* bytes of the current line so far (only LINE_KEPT of them kept) */
    bool cr;         /* the byte before was CR */
    bool lone_cr;    /* a CR not followed by LF in the current line */
    bool started;    /* the head's request line was seen */
    int lengths;
    bool length_bad; /* a Content-Length that is no number of bytes */
    uint64_t length;
    int codings;
    bool chunked; /* Transfer-Encoding is exactly chunked */
    uint64_t remaining;
    int crlf_seen;     /* CHUNK_END */
    bool hold_eof;     /* the request is answered elsewhere: an end of stream waits */
    bool eof_hidden;   /* one came meanwhile */
    bool strip_length; /* the header block being sent is a 304's: drop "Content-Length: 0" */
} wire_t;

static _Atomic(wire_t *) guarded[GUARDED_MAX];

bool wl_wire_guard_register(int fd)
{
    if (fd < 0 || fd >= GUARDED_MAX)
        return false;
    wire_t *wire = calloc(1, sizeof(*wire));
    if (wire == NULL)
        return false;
    free(atomic_exchange(&guarded[fd], wire));
    return true;
}

void wl_wire_guard_hold_eof(int fd)
{
    wire_t *w = fd >= 0 && fd < GUARDED_MAX ? atomic_load(&guarded[fd]) : NULL;
    if (w != NULL)
        w->hold_eof = true;
}

bool wl_wire_guard_release_eof(int fd)
{
    wire_t *w = fd >= 0 && fd < GUARDED_MAX ? atomic_load(&guarded[fd]) : NULL;
    if (w == NULL)
        return false;
    bool hidden = w->eof_hidden;
    w->hold_eof = w->eof_hidden = false;
    return hidden;
}

bool wl_wire_guard_strip_empty_length(int fd)
{
    wire_t *w = fd >= 0 && fd < GUARDED_MAX ? atomic_load(&guarded[fd]) : NULL;
    if (w != NULL)
        w->strip_length = true;
    return w != NULL;
}

void wl_wire_guard_unregister(int fd)
{
    if (fd >= 0 && fd < GUARDED_MAX)
        free(atomic_exchange(&guarded[fd], NULL));
}

/* The line's kept text without its CR; its length in *len. */
static const char *line_text(const wire_t *w, bool bare, size_t *len)
{
    size_t n = w->line_len < LINE_KEPT ? w->line_len : LINE_KEPT;
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
static const char *head_done(wire_t *w)
{
    if (w->codings > 0) {
        /* libmicrohttpd lets a coding win over a length; walklistd refuses other codings. */
        w->phase = w->codings == 1 && w->chunked ? CHUNK_SIZE : UNTRACKED;
    } else if (w->lengths > 1) {
        w->phase = UNTRACKED; /* walklistd refuses two lengths (framing.c) */
    } else if (w->lengths == 1 && w->length_bad) {
        return "Content-Length must be a number of bytes (digits only, at most 2^64-1)";
    } else if (w->lengths == 1 && w->length > 0) {
        w->phase = LENGTH_BODY;
        w->remaining = w->length;
    } else {
        w->phase = HEAD;
    }
    w->started = false;
    w->lengths = w->codings = 0;
    w->length_bad = w->chunked = false;
    return NULL;
}

static const char *head_line(wire_t *w, bool bare)
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
        w->length_bad = w->line_len > LINE_KEPT || !parse_length(value, value_len, &w->length);
    } else if (name_is(text, len, "Transfer-Encoding", &value, &value_len)) {
        w->codings++;
        w->chunked = value_len == 7 && strncasecmp(value, "chunked", 7) == 0;
    }
    return NULL;
}

/* chunk-size [ chunk-ext ] CRLF (RFC 9112 7.1): hex digits, then nothing or extensions. */
static const char *chunk_size_line(wire_t *w, bool bare)
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
    w->phase = size > 0 ? CHUNK_DATA : TRAILER;
    w->remaining = size;
    return NULL;
}

static const char *trailer_line(wire_t *w, bool bare)
{
    if (bare)
        return "a trailer line must end with CRLF";
    if (w->line_len <= 1)
        w->phase = HEAD; /* the blank line ends the message */
    return NULL;
}

/* Feeds the bytes read on the connection; NULL, or why the request is refused. */
static const char *feed(wire_t *w, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        if (w->phase == UNTRACKED)
            return NULL;
        if (w->phase == LENGTH_BODY || w->phase == CHUNK_DATA) {
            size_t take = n - i < w->remaining ? n - i : (size_t)w->remaining;
            i += take;
            w->remaining -= take;
            if (w->remaining == 0)
                w->phase = w->phase == LENGTH_BODY ? HEAD : CHUNK_END;
            continue;
        }
        unsigned char c = p[i++];
        if (w->phase == CHUNK_END) {
            if (c != (w->crlf_seen == 0 ? '\r' : '\n'))
                return c == '\n' ? "chunk data must be followed by CRLF"
                                 : "chunk data longer than its chunk size";
            if (++w->crlf_seen == 2) {
                w->crlf_seen = 0;
                w->phase = CHUNK_SIZE;
            }
            continue;
        }
        if (c != '\n') {
            if (w->cr)
                w->lone_cr = true;
            if (w->line_len < LINE_KEPT)
                w->line[w->line_len] = (char)c;
            w->line_len++;
            w->cr = c == '\r';
            continue;
        }
        bool bare = !w->cr;
        const char *refused = w->phase == HEAD         ? head_line(w, bare)
                              : w->phase == CHUNK_SIZE ? chunk_size_line(w, bare)
                                                       : trailer_line(w, bare);
        w->line_len = 0;
        w->cr = w->lone_cr = false;
        if (refused != NULL)
            return refused;
    }
    return NULL;
}

/* Answers 400 and closes the writing side; what libmicrohttpd reads from here on fails. */
static void refuse(int fd, const char *why)
{
    char body[512], head[256];
    int body_len = snprintf(body, sizeof(body),
                            "{\"error\":{\"code\":400,\"status\":\"INVALID_ARGUMENT\","
                            "\"message\":\"%s\",\"details\":[{\"@type\":"
                            "\"type.googleapis.com/google.rpc.ErrorInfo\",\"reason\":\"%s\","
                            "\"domain\":\"%s\",\"metadata\":{}}]}}",
                            why, wl_reason_name(WL_REASON_MALFORMED_REQUEST), WL_ERROR_DOMAIN);
    int head_len = snprintf(head, sizeof(head),
                            "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n"
                            "Content-Type: application/json\r\nCache-Control: no-store\r\n"
                            "Content-Length: %d\r\n\r\n",
                            body_len);
    (void)!send(fd, head, (size_t)head_len, MSG_NOSIGNAL | MSG_DONTWAIT | MSG_MORE);
    (void)!send(fd, body, (size_t)body_len, MSG_NOSIGNAL | MSG_DONTWAIT);
    shutdown(fd, SHUT_WR);
    wl_log("warn", "request refused on the wire", "400: %s", why);
}

typedef ssize_t (*recv_fn)(int, void *, size_t, int);
static recv_fn libc_recv;
static pthread_once_t libc_recv_once = PTHREAD_ONCE_INIT;

static void find_libc_recv(void)
{
    libc_recv = (recv_fn)dlsym(RTLD_NEXT, "recv");
}

/* libmicrohttpd reads every plain-HTTP connection with recv(2); this definition is the one
 * the dynamic linker binds its calls to. */
ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    pthread_once(&libc_recv_once, find_libc_recv);
    wire_t *w = fd >= 0 && fd < GUARDED_MAX ? atomic_load(&guarded[fd]) : NULL;
    if (w != NULL && w->phase == REFUSED) {
        errno = ECONNRESET;
        return -1;
    }
    ssize_t n = libc_recv(fd, buf, len, flags);
    if (n == 0 && len > 0 && w != NULL && w->hold_eof) {
        w->eof_hidden = true;
        errno = EAGAIN;
        return -1;
    }
    if (w == NULL || n <= 0 || (flags & MSG_PEEK))
        return n;
    const char *why = feed(w, buf, (size_t)n);
    if (why == NULL)
        return n;
    w->phase = REFUSED;
    refuse(fd, why);
    errno = ECONNRESET;
    return -1;
}

typedef ssize_t (*send_fn)(int, const void *, size_t, int);
static send_fn libc_send;
static pthread_once_t libc_send_once = PTHREAD_ONCE_INIT;

static void find_libc_send(void)
{
    libc_send = (send_fn)dlsym(RTLD_NEXT, "send");
}

#define EMPTY_LENGTH_LINE "Content-Length: 0\r\n"

/* Where the line "Content-Length: 0" starts in the header block that buf begins or continues
 * (before its blank line), or -1. */
static ssize_t empty_length_line(const char *buf, size_t len)
{
    size_t line = sizeof(EMPTY_LENGTH_LINE) - 1;
    for (size_t i = 0; i + line <= len; i++) {
        if (i >= 2 && buf[i - 2] == '\r' && buf[i - 1] == '\n' && buf[i] == '\r')
            return -1; /* the blank line: the block ended first */
        if ((i == 0 || buf[i - 1] == '\n') && memcmp(buf + i, EMPTY_LENGTH_LINE, line) == 0)
            return (ssize_t)i;
    }
    return -1;
}

/* libmicrohttpd sends every plain-HTTP header block with send(2); this definition is the one the
 * dynamic linker binds its calls to. A partial send is reported in the caller's offsets, so that
 * libmicrohttpd's next call starts where the bytes on the wire stopped. */
ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    pthread_once(&libc_send_once, find_libc_send);
    wire_t *w = fd >= 0 && fd < GUARDED_MAX ? atomic_load(&guarded[fd]) : NULL;
    if (w == NULL || !w->strip_length)
        return libc_send(fd, buf, len, flags);
    size_t line = sizeof(EMPTY_LENGTH_LINE) - 1;
    ssize_t at = empty_length_line(buf, len);
    char shorter[4096];
    if (at < 0 || len - line > sizeof(shorter)) {
        /* Without that line (or not a 304's small head): sent as it is. */
        ssize_t n = libc_send(fd, buf, len, flags);
        if (n > 0 && memmem(buf, (size_t)n, "\r\n\r\n", 4) != NULL)
            w->strip_length = false;
        return n;
    }
    memcpy(shorter, buf, (size_t)at);
    memcpy(shorter + at, (const char *)buf + at + line, len - (size_t)at - line);
    ssize_t n = libc_send(fd, shorter, len - line, flags);
    if (n <= at)
        return n; /* the line is still ahead: left out again on the next call */
    w->strip_length = false;
    return n + (ssize_t)line;
}
