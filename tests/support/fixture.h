/* Test data through the core's own store code: organizations, keys and CSV imports. */
#ifndef WALKLIST_FIXTURE_H
#define WALKLIST_FIXTURE_H

#include <libpq-fe.h>
#include <stdint.h>

#include "store/keys.h"

/** Creates an organization; exits on failure. */
int64_t fixture_org(PGconn *conn, const char *slug);

/** Creates a key with the scopes ("a,b") into token; exits on failure. */
void fixture_key(PGconn *conn, int64_t org_id, const char *scopes, char token[WL_KEY_TOKEN_SIZE]);

/** Imports CSV text of a kind; exits (printing every problem) on failure. */
void fixture_import(PGconn *conn, int64_t org_id, const char *kind, const char *csv);

#endif
