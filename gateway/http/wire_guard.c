/* Checking request framing on the wire, in front of libmicrohttpd, happens here. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include "http/wire_guard.h"

#include <dlfcn.h>
#include <link.h>
#include <microhttpd.h>
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
#include "errors/status_map.h"
#include "http/wire_framing.h"
#include "walklist/log.h"
#include "walklist/random.h"

#define GUARDED_MAX 65536 /* descriptors tracked at most; higher ones pass unchecked */

typedef struct {
    wl_wire_framing_t framing;
    bool refused;      /* answered here: every later read fails */
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

/* Answers 400 and closes the writing side; what libmicrohttpd reads from here on fails. */
static void refuse(int fd, const char *why)
{
    /* Every answer carries an X-Request-Id, this one too: a new one (the request's own, if it
     * sent one, is in the headers libmicrohttpd has not handed over), logged with the refusal. */
    char request_id[21];
    if (wl_random_base62(request_id, 20) != 0)
        snprintf(request_id, sizeof(request_id), "unknown");
    char body[512], head[320];
    int body_len = (int)wl_error_body_plain(body, sizeof(body), 400, WL_GRPC_INVALID_ARGUMENT,
                                            WL_REASON_MALFORMED_REQUEST, why);
    int head_len = snprintf(head, sizeof(head),
                            "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n"
                            "Content-Type: application/json\r\nCache-Control: no-store\r\n"
                            "X-Request-Id: %s\r\nContent-Length: %d\r\n\r\n",
                            request_id, body_len);
    (void)!send(fd, head, (size_t)head_len, MSG_NOSIGNAL | MSG_DONTWAIT | MSG_MORE);
    (void)!send(fd, body, (size_t)body_len, MSG_NOSIGNAL | MSG_DONTWAIT);
    shutdown(fd, SHUT_WR);
    wl_log("warn", "request refused on the wire", "400 (request %s): %s", request_id, why);
}

/*
 * recv and send are defined here for the whole process, because the dynamic linker binds a
 * name, not a caller: libpq's, libcurl's and gRPC's calls reach these definitions too. Only
 * libmicrohttpd's are meant, so a call is first told apart by where it comes from: one that does
 * not return into libmicrohttpd's code goes straight to libc, before any descriptor is looked
 * at. The code's place is found once, from the library's own MHD_get_version; where it cannot
 * be (a static libmicrohttpd), every call is told apart by its descriptor alone, as the
 * registered ones are exactly the plain-HTTP connections libmicrohttpd owns.
 */
typedef struct {
    uintptr_t probe, start, end;
} text_range_t;

static text_range_t mhd_text;
static pthread_once_t mhd_text_once = PTHREAD_ONCE_INIT;

static int find_text(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    text_range_t *range = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        if (segment->p_type != PT_LOAD || !(segment->p_flags & PF_X))
            continue;
        uintptr_t start = info->dlpi_addr + segment->p_vaddr;
        if (range->probe >= start && range->probe < start + segment->p_memsz) {
            range->start = start;
            range->end = start + segment->p_memsz;
            return 1;
        }
    }
    return 0;
}

static void find_mhd_text(void)
{
    /* Through the library's handle: the address of MHD_get_version taken here could be the
     * executable's PLT stub rather than the library's code. */
    Dl_info info;
    void *library = NULL;
    if (dladdr((void *)MHD_start_daemon, &info) != 0 && info.dli_fname != NULL)
        library = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    void *probe = library != NULL ? dlsym(library, "MHD_get_version") : NULL;
    text_range_t range = {.probe = (uintptr_t)probe};
    if (probe != NULL && dl_iterate_phdr(find_text, &range) != 0)
        mhd_text = range;
    if (library != NULL)
        dlclose(library);
}

/* Whether a call returning to caller is libmicrohttpd's (true as well when that is unknown). */
static bool from_libmicrohttpd(const void *caller)
{
    pthread_once(&mhd_text_once, find_mhd_text);
    uintptr_t at = (uintptr_t)caller;
    return mhd_text.end == 0 || (at >= mhd_text.start && at < mhd_text.end);
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
    if (!from_libmicrohttpd(__builtin_return_address(0)))
        return libc_recv(fd, buf, len, flags);
    wire_t *w = fd >= 0 && fd < GUARDED_MAX ? atomic_load(&guarded[fd]) : NULL;
    if (w != NULL && w->refused) {
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
    const char *why = wl_wire_framing_feed(&w->framing, buf, (size_t)n);
    if (why == NULL)
        return n;
    w->refused = true;
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
    if (!from_libmicrohttpd(__builtin_return_address(0)))
        return libc_send(fd, buf, len, flags);
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
