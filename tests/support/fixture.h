/* Test data through the core's own store code: organizations, keys and CSV imports. */
#ifndef WALKLIST_FIXTURE_H
#define WALKLIST_FIXTURE_H

#include <libpq-fe.h>
#include <stdint.h>

#include "store/keys.h"
#include "walklist/core.h"

/** Creates a core (a walklistd process's, without its HTTP); exits on failure. */
wl_core_t *fixture_core(const wl_core_config_t *config);

/** Creates an organization; exits on failure. */
int64_t fixture_org(PGconn *conn, const char *slug);

/*
 * Every key a test issues is recorded, one a line, in this file of the build directory (next to
 * the walklistd logs, wherever the test is started from), or in $WALKLIST_TEST_TOKENS.
 * The last test of the suite (tests/token_scan.sh) fails when any of them appears in a log.
 */
#define FIXTURE_TOKENS_FILE WL_TEST_OUTPUT_DIR "/issued-tokens.txt"

/** Creates a key with the scopes ("a,b") into token and records it; exits on failure. */
void fixture_key(PGconn *conn, int64_t org_id, const char *scopes, char token[WL_KEY_TOKEN_SIZE]);

/** Revokes a key through the store, as walklistctl key revoke does; exits on failure. */
void fixture_revoke(PGconn *conn, const char *token);

/** Requests counted in the organization's bucket (every permit still recorded in its row). */
long long fixture_counted(PGconn *conn, int64_t org_id, const char *bucket);

/** Records a token issued some other way (e.g. by walklistctl) for the log scan; exits on failure.
 */
void fixture_record_token(const char *token);

/** Imports CSV text of a kind; exits (printing every problem) on failure. */
void fixture_import(PGconn *conn, int64_t org_id, const char *kind, const char *csv);

/* A walk inventory: warehouse WH1 and `products` products SKU-0000.. named with name_format (one
 * %d: the product), each in `bins` bins named with bin_format (%d bin, %d product, %d bin)
 * holding base + per_product * p + per_bin * b; the SKUs as a JSON array into codes_json. */
typedef struct {
    int products, bins;
    const char *name_format, *bin_format;
    int base, per_product, per_bin;
} fixture_walk_t;
void fixture_walk_inventory(PGconn *conn, int64_t org_id, const fixture_walk_t *walk,
                            char *codes_json, size_t size);

#endif
