/*
 * Server-wide secrets kept in the database (server_secrets), so that every
 * walklistd process serving one database agrees on them: the page-token key.
 */
#ifndef WALKLIST_STORE_SECRETS_H
#define WALKLIST_STORE_SECRETS_H

#include <libpq-fe.h>

#include "walklist/error.h"

#define WL_SECRET_SIZE 32

/**
 * Reads the secret called name into out. On the first use anywhere it is
 * drawn from the OS CSPRNG and inserted; when processes race, one insert wins
 * and all of them read the winner's bytes. WL_EINTERNAL when the stored
 * secret is shorter than WL_SECRET_SIZE.
 */
int wl_secrets_get(PGconn *conn, const char *name, unsigned char out[WL_SECRET_SIZE],
                   wl_error_t *err) WL_CHECK_RESULT;

#endif
