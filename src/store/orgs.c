/* Creating and finding organizations happens here. */
#include "store/orgs.h"

#include <string.h>

#include "store/db.h"
#include "walklist/codes.h"
#include "walklist/span.h"

int wl_orgs_validate_slug(const char *slug, wl_error_t *err)
{
    size_t len = strlen(slug);
    bool ok = len >= 1 && len <= 63 && slug[0] != '-';
    for (size_t i = 0; ok && i < len; i++) {
        char c = slug[i];
        ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    }
    if (!ok)
        return wl_error_add_violation(err, "slug",
                                      "must be 1 to 63 characters of a-z, 0-9 and '-', "
                                      "not starting with '-'");
    return 0;
}

int wl_orgs_create(PGconn *conn, const char *slug, const char *name, int64_t *org_id,
                   wl_error_t *err)
{
    int rc = wl_orgs_validate_slug(slug, err);
    if (rc == 0)
        rc = wl_text_validate(wl_span_str(name), WL_TEXT_MAX_CHARS, true, "name", err);
    if (rc != 0)
        return rc;
    const char *params[] = {slug, name};
    PGresult *res = PQexecParams(conn,
                                 "INSERT INTO organizations (slug, name) VALUES ($1, $2)"
                                 " ON CONFLICT (slug) DO NOTHING RETURNING org_id",
                                 2, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        rc = wl_db_fail(conn, res, err);
    } else if (PQntuples(res) == 0) {
        rc = wl_error_set(err, WL_EEXISTS, "organization '%s' exists already", slug);
    } else if (org_id != NULL) {
        *org_id = wl_db_int64(res, 0, 0);
    }
    PQclear(res);
    return rc;
}

int wl_orgs_find(PGconn *conn, const char *slug, int64_t *org_id, wl_error_t *err)
{
    PGresult *res = NULL;
    const char *params[] = {slug};
    int rc =
        wl_db_exec(conn, "SELECT org_id FROM organizations WHERE slug = $1", 1, params, &res, err);
    if (rc != 0)
        return rc;
    if (PQntuples(res) == 0)
        rc = wl_error_set(err, WL_ENOTFOUND, "no organization '%s'", slug);
    else
        *org_id = wl_db_int64(res, 0, 0);
    PQclear(res);
    return rc;
}

int wl_orgs_list(PGconn *conn, void (*each)(const wl_org_info_t *org, void *data), void *data,
                 wl_error_t *err)
{
    PGresult *res = NULL;
    int rc =
        wl_db_exec(conn,
                   "SELECT o.slug, o.name,"
                   " to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
                   " (SELECT count(*) FROM api_keys k WHERE k.org_id = o.org_id"
                   " AND k.revoked_at IS NULL)"
                   " FROM organizations o ORDER BY o.slug",
                   0, NULL, &res, err);
    if (rc != 0)
        return rc;
    for (int i = 0; i < PQntuples(res); i++) {
        wl_org_info_t org = {
            .slug = PQgetvalue(res, i, 0),
            .name = PQgetvalue(res, i, 1),
            .created_at = PQgetvalue(res, i, 2),
            .active_keys = wl_db_int64(res, i, 3),
        };
        each(&org, data);
    }
    PQclear(res);
    return 0;
}
