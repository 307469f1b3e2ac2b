/*
 * A database connection of its own that LISTENs on some channels: a process
 * learns of other processes' writes from it (changed exports, revoked keys).
 * Whoever holds the connection must assume announcements were missed whenever
 * a call fails, and forget what they kept.
 */
#ifndef WALKLIST_STORE_LISTEN_H
#define WALKLIST_STORE_LISTEN_H

#include <libpq-fe.h>

#include "walklist/error.h"

/**
 * Connects and LISTENs on every channel of channels (a NULL-terminated list), in one
 * statement; WL_EUNAVAILABLE with *out NULL when that fails.
 */
int wl_listen_open(const char *conninfo, const char *const *channels, const char *application,
                   PGconn **out, wl_error_t *err) WL_CHECK_RESULT;

/**
 * Waits up to timeout_ms for notifications (or for wake_fd to be readable, when
 * it is not -1) and calls each with the channel and payload of every one that
 * arrived. After a quiet wait it checks that the connection is still there,
 * since a connection lost without a word would otherwise be trusted for ever.
 * WL_EUNAVAILABLE when the connection broke: close it and open another.
 */
int wl_listen_wait(PGconn *conn, int wake_fd, int timeout_ms,
                   void (*each)(const char *channel, const char *payload, void *data), void *data,
                   wl_error_t *err) WL_CHECK_RESULT;

#endif
