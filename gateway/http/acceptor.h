/*
 * Accepts TCP connections for libmicrohttpd on a thread of its own and hands
 * each to the daemon, which spreads added connections over its I/O threads by
 * descriptor. Left to themselves, the threads race for the listening socket
 * and one may win most connections while others have few.
 *
 * The acceptor also keeps the total connection limit: at the limit it stops
 * accepting, so that further clients wait in the kernel's accept queue until
 * a connection closes (wl_acceptor_closed, from libmicrohttpd's notification).
 */
#ifndef WALKLIST_GATEWAY_ACCEPTOR_H
#define WALKLIST_GATEWAY_ACCEPTOR_H

#include <microhttpd.h>

#include "walklist/error.h"

typedef struct wl_acceptor wl_acceptor_t;

/**
 * Starts accepting on listen_fd (which the acceptor then owns) for daemon,
 * keeping at most limit connections open.
 */
int wl_acceptor_start(int listen_fd, struct MHD_Daemon *daemon, unsigned limit, wl_acceptor_t **out,
                      wl_error_t *err) WL_CHECK_RESULT;

/** A connection of the daemon closed (call from MHD_CONNECTION_NOTIFY_CLOSED). */
void wl_acceptor_closed(wl_acceptor_t *acceptor);

/** Stops accepting and closes the listening socket; connections already handed over stay. */
void wl_acceptor_stop(wl_acceptor_t *acceptor);

/** Frees the acceptor once the daemon is stopped (no more wl_acceptor_closed calls). */
void wl_acceptor_destroy(wl_acceptor_t *acceptor);

#endif
