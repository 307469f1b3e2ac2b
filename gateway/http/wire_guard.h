/*
 * Checking what libmicrohttpd cannot be told to check happens here: the framing of request
 * bodies and a Content-Length it cannot parse. libmicrohttpd 0.9.75 decodes chunked bodies and
 * parses Content-Length before walklistd sees any of it (a bare LF ending a chunk-size line is
 * taken; a Content-Length past 2^64-1 gets libmicrohttpd's own 413 with its status line written
 * twice), so the check sits in front of it, on the wire: walklistd defines recv(2), which the
 * dynamic linker then gives libmicrohttpd instead of libc's, and the bytes of every registered
 * plain-HTTP connection pass through a small framing tracker (wire_framing.h: heads,
 * Content-Length bodies, chunked bodies and trailers, RFC 9112) on their way to libmicrohttpd. On a
 * shape it refuses, the connection gets a 400 (Google error JSON, Connection: close) written here,
 * and libmicrohttpd sees a reset: it never reads the request. Only libmicrohttpd's calls are looked
 * at: a call that does not come from libmicrohttpd's code (libpq's, libcurl's, gRPC's) goes
 * straight to libc, and of libmicrohttpd's calls those on descriptors that are not registered (TLS
 * connections') pass untouched for the cost of one array read. This lasts as long as walklistd is
 * built on libmicrohttpd 0.9.75 (Debian 12): later versions refuse these shapes themselves
 * (MHD_OPTION_CLIENT_DISCIPLINE_LVL), and the guard can go.
 *
 * The same place keeps a client's end of stream from libmicrohttpd while its request is
 * answered on a request thread (offload.h): a connection resumed after suspension is read at
 * once, and libmicrohttpd 0.9.75 drops a request whose client has half-closed (sent its request,
 * then shut its side) without its answer. Held, the end of stream reads as "no data yet"; when
 * the answer is queued the server learns that it came and closes after the answer.
 *
 * And it takes "Content-Length: 0" out of a 304's header block on its way out (walklistd also
 * defines send(2)): libmicrohttpd 0.9.75 writes that line with every empty 304, RFC 9110 8.6
 * allows only the 200's length there, and its only way to omit it is to close the connection
 * after the 304 (server.c).
 */
#ifndef WALKLIST_GATEWAY_WIRE_GUARD_H
#define WALKLIST_GATEWAY_WIRE_GUARD_H

#include <stdbool.h>

/** Starts tracking the plain-HTTP connection on fd (before libmicrohttpd reads from it). */
bool wl_wire_guard_register(int fd);

/** While held, an end of stream on fd reads as no data yet (EAGAIN). Call from the thread that
 * serves the connection. */
void wl_wire_guard_hold_eof(int fd);

/** Ends the hold; true when an end of stream was kept back meanwhile. */
bool wl_wire_guard_release_eof(int fd);

/** The next header block sent on fd is a 304's: its "Content-Length: 0" line is left out. Call
 * from the thread that serves the connection, before the answer is queued; false when fd is
 * not guarded (TLS), where nothing is left out. */
bool wl_wire_guard_strip_empty_length(int fd); /* false: fd is not guarded (TLS) */

/** Stops tracking fd (before the descriptor is closed, so that its number is free again). */
void wl_wire_guard_unregister(int fd);

#endif
