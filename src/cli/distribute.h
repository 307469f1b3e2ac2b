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

/**
 * On the Citus coordinator at database_url (on a connection of its own): distributes what is
 * not distributed yet into shard_count colocated shards; *changed (may be NULL) counts the
 * tables. Without the citus extension in the database: WL_EPRECONDITION, nothing changed.
 */
int wl_distribute(const char *database_url, int shard_count, int *changed,
                  wl_error_t *err) WL_CHECK_RESULT;

#endif
