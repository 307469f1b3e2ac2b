/*
 * The framing of the requests on one HTTP/1.1 connection, followed byte by byte as they arrive
 * (RFC 9112): each head, then its body as the head frames it (Content-Length bytes, or chunks
 * with their sizes, the CRLF after each, the trailer), then the next head. It reports the
 * shapes that libmicrohttpd 0.9.75 would take in a way another reader of the same bytes might
 * not: a chunk-size line not ended by CRLF, a malformed or oversized chunk size, chunk data
 * longer than its size, a trailer line ended by a bare LF, a Content-Length that is no number
 * of bytes. A head walklistd refuses anyway (two lengths, another coding) ends the tracking.
 * Pure: no I/O, no allocation (wire_guard.h feeds it; tests/fuzz fuzzes it).
 */
#ifndef WALKLIST_GATEWAY_WIRE_FRAMING_H
#define WALKLIST_GATEWAY_WIRE_FRAMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WL_FRAMING_LINE_KEPT 128 /* of each line: enough for the fields that frame a body */

typedef enum {
    WL_FRAMING_HEAD,        /* the request line and header fields */
    WL_FRAMING_LENGTH_BODY, /* remaining bytes of a Content-Length body */
    WL_FRAMING_CHUNK_SIZE,  /* a chunk-size line */
    WL_FRAMING_CHUNK_DATA,  /* remaining bytes of a chunk */
    WL_FRAMING_CHUNK_END,   /* the CRLF after a chunk's data */
    WL_FRAMING_TRAILER,     /* trailer fields, up to the blank line */
    /* A head libmicrohttpd or walklistd refuses anyway: nothing more is checked. */
    WL_FRAMING_UNTRACKED,
} wl_framing_phase_t;

/* One connection's state; zeroed (= {0}) it expects the first request's head. */
typedef struct {
    wl_framing_phase_t phase;
    char line[WL_FRAMING_LINE_KEPT];
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
    int crlf_seen; /* WL_FRAMING_CHUNK_END */
} wl_wire_framing_t;

/**
 * Feeds the next n bytes read on the connection. NULL, or why the request is refused (a
 * sentence for the 400's message, static storage); after a refusal the state is not to be fed
 * again.
 */
const char *wl_wire_framing_feed(wl_wire_framing_t *w, const unsigned char *p, size_t n);

#endif
