/*
 * Where a distributed PostgreSQL (Citus) puts an organization's rows: tables distributed by
 * org_id (bigint) place a row by PostgreSQL's own hash of the value, hashint8, read as a signed
 * 32-bit number and matched against each shard's range. Computed here, in memory, so that a
 * request can be placed without asking the database (admission groups of one node).
 */
#ifndef WALKLIST_DOMAIN_SHARD_HASH_H
#define WALKLIST_DOMAIN_SHARD_HASH_H

#include <stdint.h>

/** PostgreSQL's hashint8(value), as `SELECT hashint8(value)` returns it. */
int32_t wl_shard_hash_int8(int64_t value);

#endif
