/*
 * What other processes announce, heard on one connection: the core LISTENs on every channel
 * it cares for (wl_keys_changed: a key was revoked; wl_export_changed: an organization's export
 * changed) on one database connection of its own, and one thread waits on it and hands each
 * announcement on: revocations to the key cache, export changes to the subscribers the gateway
 * registers (wl_core_export_changes_subscribe, core.h). When the connection is lost, both are
 * told that announcements may have been missed (the key cache forgets every key and keeps none,
 * the subscribers are called lost), and told again once a new connection listens; it
 * reconnects at once after a loss, then every second while it cannot connect.
 *
 * The thread and its connection exist from the first user on: a key cache at creation, else
 * the first subscriber.
 */
#ifndef WALKLIST_SERVICES_ANNOUNCEMENTS_H
#define WALKLIST_SERVICES_ANNOUNCEMENTS_H

#include "services/key_cache.h"
#include "walklist/core.h"

typedef struct wl_announcements wl_announcements_t;

/**
 * Hears announcements on conninfo (copied) for keys (NULL: none; it must outlive the
 * listener). Starts the thread when there is a key cache.
 */
int wl_announcements_create(const char *conninfo, wl_key_cache_t *keys, wl_announcements_t **out,
                            wl_error_t *err) WL_CHECK_RESULT;

/** Stops the thread (the key cache is told it no longer hears) and frees everything; every
 * subscription must have ended. NULL is fine. */
void wl_announcements_destroy(wl_announcements_t *announcements);

#endif
