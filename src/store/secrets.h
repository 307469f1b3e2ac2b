/*
 * Server-wide secrets kept in the database (server_secrets), so that every
 * walklistd process serving one database agrees on them: the page-token key.
 */
#ifndef WALKLIST_STORE_SECRETS_H
#define WALKLIST_STORE_SECRETS_H

#include <libpq-fe.h>

#include "walklist/error.h"

#define WL_SECRET_SIZE 32

/* The key that seals page tokens and export cursors. */
#define WL_SECRET_PAGE_TOKEN "page_token"

/**
 * Reads the secret called name into out. Secrets are made by walklistctl migrate
 * (wl_secrets_make), never on a request's path: no request writes server_secrets, a reference
 * table on a distributed database, which needs every node. WL_EUNAVAILABLE when the database
 * has none (not migrated by this version); WL_EINTERNAL when the stored secret is shorter than
 * WL_SECRET_SIZE.
 */
int wl_secrets_get(PGconn *conn, const char *name, unsigned char out[WL_SECRET_SIZE],
                   wl_error_t *err) WL_CHECK_RESULT;

/**
 * Makes the secret called name, drawn from the OS CSPRNG, unless the database has it: when
 * processes race, one insert wins. Each database gets its own.
 */
int wl_secrets_make(PGconn *conn, const char *name, wl_error_t *err) WL_CHECK_RESULT;

#endif
