/*
 * Closing a connection that was answered before its request body was read happens here, the
 * way nginx's lingering close does it. libmicrohttpd closes such a connection right after the
 * answer; if the client is still sending its body, the kernel then answers the unread bytes
 * with a reset, and a reset makes the client's kernel drop what it had not yet read: the
 * answer (a 413, say) is lost. So the socket is kept open by a duplicate descriptor after
 * libmicrohttpd closes its own, and what the client still sends is read and dropped until it
 * stops (end of stream), 1 MiB has been dropped, 2 s pass without data or 5 s in all; only
 * then is it closed. The process's upkeep loop (process/upkeep.h) serves every lingering
 * connection, 256 at most (beyond that a connection closes as before).
 */
#ifndef WALKLIST_GATEWAY_LINGER_H
#define WALKLIST_GATEWAY_LINGER_H

#include "walklist/error.h"

typedef struct wl_linger wl_linger_t;

int wl_linger_create(wl_linger_t **out, wl_error_t *err) WL_CHECK_RESULT;

/** Leaves the upkeep loop and closes every lingering connection. */
void wl_linger_destroy(wl_linger_t *linger);

/** Lingers on the connection of socket fd once its owner closes it (fd itself stays the
 * owner's: a duplicate is taken). */
void wl_linger_add(wl_linger_t *linger, int fd);

#endif
