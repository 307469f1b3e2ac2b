/*
 * Checking a request head against RFC 9112 before anything of it is used happens here. The
 * shapes that let one request hide another, or let a proxy in front read it differently, are
 * refused and the connection closed: two Content-Length fields, a transfer coding other than
 * chunked, HTTP/1.1 without exactly one Host, a line not ended by CRLF (bare LF), obs-fold,
 * NUL or other control bytes in the request line or a field, whitespace in a field name, more
 * than one space between the parts of the request line. Content-Length beside
 * Transfer-Encoding is read as chunked and the connection closed after the answer.
 *
 * libmicrohttpd 0.9.75 (Debian 12) accepts most of these: its MHD_OPTION_STRICT_FOR_CLIENT
 * covers only Host and spaces in the target, and MHD_OPTION_CLIENT_DISCIPLINE_LVL came later.
 * So the line-level checks read the head where libmicrohttpd left it: in its read buffer,
 * every line end overwritten with NULs (two for CRLF, one for a bare LF), the method, target
 * and version NUL-separated in place, each field's name and value pointing into its line, and
 * the head's exact size known (MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE). That layout is
 * libmicrohttpd 0.9.75-0.9.76's; with another version the layout checks are skipped (the log
 * says so once) and only the checks of each field's bytes remain.
 */
#ifndef WALKLIST_GATEWAY_FRAMING_H
#define WALKLIST_GATEWAY_FRAMING_H

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

/** The request target as libmicrohttpd's URI log callback saw it: where it begins in the read
 * buffer (NULL when the request line had none), a copy taken then (libmicrohttpd decodes the
 * query in place afterwards), and its length then (a NUL cuts it short). */
typedef struct {
    const char *at;
    const char *copy;
    size_t len;
} wl_framing_target_t;

typedef struct {
    unsigned status;     /* 0: the head can be read; 400 or 501 */
    const char *message; /* why, for the error body */
    bool close;          /* close the connection after the answer (always when status != 0) */
} wl_framing_verdict_t;

/** Checks the head of the request on connection (call on the first access-handler call). */
void wl_framing_check(struct MHD_Connection *connection, const char *method,
                      const wl_framing_target_t *target, const char *version,
                      wl_framing_verdict_t *out);

#endif
