/*
 * The database URL pointed at another node of the same cluster (a Citus worker): the same
 * user, password, database, TLS and other settings, another host and port. Read by libpq
 * (URI or key=value), written as key=value.
 */
#ifndef WALKLIST_STORE_NODE_CONNINFO_H
#define WALKLIST_STORE_NODE_CONNINFO_H

#include "walklist/error.h"

/**
 * conninfo with its host (hostaddr too) and port replaced by host and port, into *out
 * (malloc'd; the caller frees it). WL_EINVAL when libpq cannot read conninfo, host is empty
 * or port is not one (1..65535).
 */
int wl_node_conninfo(const char *conninfo, const char *host, int port, char **out,
                     wl_error_t *err) WL_CHECK_RESULT;

#endif
