/*
 * Spreading the schema over a Citus cluster happens here: organizations, api_keys and
 * server_secrets become reference tables (a copy on every node), every tenant table is
 * distributed by org_id into colocated shards, so that every statement of one organization runs
 * on one node. Run on the coordinator, once, after migrate; later runs change nothing. This is
 * walklistctl's (the server's core never distributes): it knows the schema's tables, not the
 * store's code.
 */
#ifndef WALKLIST_CLI_DISTRIBUTE_H
#define WALKLIST_CLI_DISTRIBUTE_H

#include <stddef.h>

#include "walklist/error.h"

/* A foreign key between two tenant tables, as distribute makes it again. */
typedef struct {
    const char *table, *name, *definition;
} wl_distribute_key_t;

/* What wl_distribute does with each table of the schema, so that the schema can be checked
 * against it (a table a later migration adds must be placed here). */
typedef struct {
    const char *const *reference; /* a copy on every node */
    size_t reference_count;
    const char *const *tenant; /* distributed by org_id, colocated with the first */
    size_t tenant_count;
    const char *const *coordinator; /* stay on the coordinator alone */
    size_t coordinator_count;
    /* Foreign keys between two tenant tables: dropped before distributing and made again after
     * (Citus refuses them while one side is still local). */
    const wl_distribute_key_t *tenant_keys;
    size_t tenant_key_count;
} wl_distribute_plan_t;

void wl_distribute_plan(wl_distribute_plan_t *out);

/* Shard groups when the caller names none. Few per worker: every shard of a worker that a
 * group's statements touch costs it that shard's own locks, index pages and plans (docs:
 * scaling-out, "How many shards"). Twelve divide evenly among 2, 3, 4 and 6 workers, and a
 * rebalance alone spreads them over up to 12; beyond, shards split online. */
#define WL_DISTRIBUTE_DEFAULT_SHARDS 12

/**
 * On the Citus coordinator at database_url (on a connection of its own): distributes what is
 * not distributed yet into shard_count colocated shards (0: WL_DISTRIBUTE_DEFAULT_SHARDS, or
 * the count of the tenant tables already distributed); *changed (may be NULL) counts the
 * tables. Without the citus extension in the database, or with a shard_count other than that
 * of tenant tables already distributed: WL_EPRECONDITION, nothing changed.
 */
int wl_distribute(const char *database_url, int shard_count, int *changed,
                  wl_error_t *err) WL_CHECK_RESULT;

#endif
