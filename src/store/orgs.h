/* Organizations: the tenants. Every other row belongs to exactly one. */
#ifndef WALKLIST_STORE_ORGS_H
#define WALKLIST_STORE_ORGS_H

#include <libpq-fe.h>
#include <stdint.h>

#include "walklist/error.h"

/** Slugs are 1-63 characters of a-z, 0-9 and '-', not starting with '-'. */
int wl_orgs_validate_slug(const char *slug, wl_error_t *err) WL_CHECK_RESULT;

/** Creates an organization; WL_EEXISTS when the slug is taken. */
int wl_orgs_create(PGconn *conn, const char *slug, const char *name, int64_t *org_id,
                   wl_error_t *err) WL_CHECK_RESULT;

/** Finds an organization by slug; WL_ENOTFOUND when there is none. */
int wl_orgs_find(PGconn *conn, const char *slug, int64_t *org_id, wl_error_t *err) WL_CHECK_RESULT;

/** One organization as listed; the strings are valid during the callback only. */
typedef struct {
    const char *slug;
    const char *name;
    const char *created_at; /* UTC, "2024-05-01T12:00:00Z" */
    int64_t active_keys;    /* keys not revoked */
} wl_org_info_t;

/** Calls each(org, data) for every organization, by slug. */
int wl_orgs_list(PGconn *conn, void (*each)(const wl_org_info_t *org, void *data), void *data,
                 wl_error_t *err) WL_CHECK_RESULT;

#endif
