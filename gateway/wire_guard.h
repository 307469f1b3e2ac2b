/*
 * Checking what libmicrohttpd cannot be told to check happens here: the framing of request
 * bodies and a Content-Length it cannot parse. libmicrohttpd 0.9.75 decodes chunked bodies and
 * parses Content-Length before walklistd sees any of it (a bare LF ending a chunk-size line is
 * taken; a Content-Length past 2^64-1 gets libmicrohttpd's own 413 with its status line written
 * twice), so the check sits in front of it, on the wire: walklistd defines recv(2), which the
 * dynamic linker then gives libmicrohttpd instead of libc's, and the bytes of every registered
 * plain-HTTP connection pass through a small framing tracker (heads, Content-Length bodies,
 * chunked bodies and trailers, RFC 9112) on their way to libmicrohttpd. On a shape it refuses,
 * the connection gets a 400 (Google error JSON, Connection: close) written here, and
 * libmicrohttpd sees a reset: it never reads the request. Descriptors that are not registered
 * (PostgreSQL's, TLS connections') pass untouched for the cost of one array read.
 */
#ifndef WALKLIST_GATEWAY_WIRE_GUARD_H
#define WALKLIST_GATEWAY_WIRE_GUARD_H

#include <stdbool.h>

/** Starts tracking the plain-HTTP connection on fd (before libmicrohttpd reads from it). */
bool wl_wire_guard_register(int fd);

/** Stops tracking fd (before the descriptor is closed, so that its number is free again). */
void wl_wire_guard_unregister(int fd);

#endif
