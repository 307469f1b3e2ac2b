/*
 * The shard-direct form of an SQL function, for a distributed PostgreSQL (Citus): its marked
 * statements, which name tenant tables, also name each shard of those tables directly, so that
 * where the node running the function holds an organization's shard alone the statement reaches
 * it as a plain table's statement, with its plan kept for the session, instead of through
 * Citus's executor (docs/scaling-out.md, "Statements on the node's own shards"). A pure text
 * transformation of the function file; store/shard_direct.h reads the shards and installs it.
 *
 * Markers, in a function file:
 *   a line ending with "-- shard-direct: true"   its last "false" becomes "true" (the switch
 *                                                 the function tests before it asks where its
 *                                                 organizations' shards are);
 *   a line ending with "-- shard-direct: shards" its last '{}' becomes the list of the groups'
 *                                                 anchor shards, in hash-range order;
 *   a line ending with "-- shard-direct: mins"   its last '{}' becomes the list of the groups'
 *                                                 least hash values, in the same order (so that
 *                                                 shards[width_bucket(hash, mins)] is a hash's
 *                                                 shard, as Citus places it);
 *   a line "-- shard-direct: statement"          the statement after it (to the first line whose
 *                                                 code ends with ";") becomes
 *       IF v_direct THEN <IF v_shard < <anchor shard> THEN ... ELSE ... END IF, halving the
 *       groups, ordered by anchor shard, down to one group's statement on its shards>
 *       ELSE <statement> END IF;
 * where the function sets v_shard to the anchor table's shard of the row's organization and
 * v_direct to whether it may name it, which it may only for a shard of the shards list. In the
 * statement on a shard group's shards, each table of the layout is renamed <table>_<shard>, and
 * its primary key <table>_pkey_<shard>, as Citus names a shard and its constraints.
 */
#ifndef WALKLIST_DOMAIN_SHARD_DIRECT_H
#define WALKLIST_DOMAIN_SHARD_DIRECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "walklist/error.h"
#include "walklist/span.h"

/* The colocated shards of the tables the marked statements name, one shard group per hash
 * range, in range order: shards[g * table_count + t] is table t's shard in group g, mins[g] the
 * least hash value of g's range. tables[0] is the anchor, whose shard the function puts in
 * v_shard. */
typedef struct {
    const char *const *tables;
    size_t table_count;
    const int64_t *shards;
    const int32_t *mins;
    size_t group_count;
} wl_shard_layout_t;

/** Whether sql holds a shard-direct marker. */
bool wl_shard_direct_marked(wl_span_t sql);

/**
 * The shard-direct form of sql into *out (NUL-terminated, freed by the caller). WL_EINVAL when a
 * marker is malformed: a switch line with no "false", a list line with no '{}', a statement marker
 * with no statement after it, or a marked statement that names none of the layout's tables.
 */
int wl_shard_direct_expand(wl_span_t sql, const wl_shard_layout_t *layout, char **out,
                           wl_error_t *err) WL_CHECK_RESULT;

#endif
