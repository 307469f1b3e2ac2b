/* Reading the scanner's queue and loading a walk list with its walk happens here. */
#include "store/scanner.h"

#include <stdio.h>
#include <string.h>

#include "store/db.h"
#include "store/lists.h"
#include "store/webhooks.h"

#define MS_OF(column) "floor(extract(epoch FROM " column ") * 1000)::bigint"

int wl_scanner_pending(PGconn *conn, int64_t org_id, int limit, wl_arena_t *arena,
                       wl_pending_list_t **out, size_t *count, wl_error_t *err)
{
    char org[24], max_rows[16];
    snprintf(org, sizeof(org), "%lld", (long long)org_id);
    snprintf(max_rows, sizeof(max_rows), "%d", limit);
    const char *params[] = {org, max_rows};
    PGresult *res = NULL;
    /* The WHERE and ORDER BY are those of the partial index locate_lists_queue. */
    int rc = wl_db_exec_hot(
        conn,
        "SELECT id, name, cardinality(codes), " MS_OF(
            "created_at") " FROM locate_lists WHERE org_id = $1 AND state = 'pending'"
                          " ORDER BY created_at, id LIMIT $2",
        2, params, &res, err);
    if (rc != 0)
        return rc;
    int rows = PQntuples(res);
    *out = wl_arena_alloc(arena, sizeof(**out) * (size_t)(rows ? rows : 1));
    *count = 0;
    bool ok = *out != NULL;
    for (int i = 0; ok && i < rows; i++) {
        wl_pending_list_t *list = &(*out)[i];
        list->id = wl_arena_strdup(arena, PQgetvalue(res, i, 0));
        list->name = wl_arena_strdup(arena, PQgetvalue(res, i, 1));
        list->codes_count = (int32_t)wl_db_int64(res, i, 2);
        list->created_ms = wl_db_int64(res, i, 3);
        ok = list->id != NULL && list->name != NULL;
        *count += ok;
    }
    PQclear(res);
    return ok ? 0 : wl_error_set(err, WL_ENOMEM, NULL);
}

/*
 * pending -> loaded, or why not. Under READ COMMITTED a concurrent caller's
 * UPDATE waits for the winner's row lock, then sees the row loaded and
 * matches nothing: exactly one caller wins. Lists are never deleted, so a
 * list that exists now existed when the UPDATE ran.
 */
static int claim(PGconn *conn, const char *const params[2], wl_arena_t *arena,
                 wl_loaded_list_t *out, wl_error_t *err)
{
    PGresult *res = NULL;
    int rc = wl_db_exec_hot(conn,
                            "UPDATE locate_lists"
                            " SET state = 'loaded',"
                            " loaded_at = date_trunc('milliseconds', now())"
                            " WHERE org_id = $1 AND id = $2 AND state = 'pending'"
                            " RETURNING name, loaded_at",
                            2, params, &res, err);
    if (rc != 0)
        return rc;
    if (PQntuples(res) == 1) {
        out->name = wl_arena_strdup(arena, PQgetvalue(res, 0, 0));
        out->loaded_ms = wl_db_timestamp_ms(res, 0, 1);
        PQclear(res);
        return out->name != NULL ? 0 : wl_error_set(err, WL_ENOMEM, NULL);
    }
    PQclear(res);
    rc = wl_db_exec_hot(conn, "SELECT 1 FROM locate_lists WHERE org_id = $1 AND id = $2", 2, params,
                        &res, err);
    if (rc != 0)
        return rc;
    bool exists = PQntuples(res) == 1;
    PQclear(res);
    return exists ? wl_error_set(err, WL_EPRECONDITION, "the walk list is already loaded")
                  : wl_error_set(err, WL_ENOTFOUND, "no walk list with that id");
}

/*
 * Every code of the list with every product it could stand for: the product
 * whose SKU it is and the products carrying it as an EAN, one row each, and
 * one row with no product for a code that matches nothing. Choosing among
 * them is wl_resolve_codes' job.
 */
static int resolve(PGconn *conn, const char *const params[2], wl_arena_t *arena,
                   wl_resolution_t *out, wl_error_t *err)
{
    PGresult *res = NULL;
    int rc = wl_db_exec_hot(conn,
                            "WITH code AS ("
                            "  SELECT c.code, c.n"
                            "  FROM locate_lists l, unnest(l.codes) WITH ORDINALITY AS c(code, n)"
                            "  WHERE l.org_id = $1 AND l.id = $2"
                            "), candidate AS ("
                            "  SELECT c.n, 's' AS kind, p.sku, p.name"
                            "  FROM code c JOIN products p ON p.org_id = $1 AND p.sku = c.code"
                            "  UNION ALL"
                            "  SELECT c.n, 'e', p.sku, p.name"
                            "  FROM code c"
                            "  JOIN product_eans e ON e.org_id = $1 AND e.ean = c.code"
                            "  JOIN products p ON p.org_id = e.org_id AND p.sku = e.sku"
                            ")"
                            " SELECT c.n, c.code, m.kind, m.sku, m.name"
                            " FROM code c LEFT JOIN candidate m ON m.n = c.n"
                            " ORDER BY c.n",
                            2, params, &res, err);
    if (rc != 0)
        return rc;
    int rows = PQntuples(res);
    size_t code_count = rows > 0 ? (size_t)wl_db_int64(res, rows - 1, 0) : 0;
    const char **codes = wl_arena_alloc(arena, sizeof(*codes) * (code_count ? code_count : 1));
    wl_code_match_t *matches = wl_arena_alloc(arena, sizeof(*matches) * (size_t)(rows ? rows : 1));
    size_t match_count = 0;
    rc = codes != NULL && matches != NULL ? 0 : WL_ENOMEM;
    for (int i = 0; rc == 0 && i < rows; i++) {
        int64_t n = wl_db_int64(res, i, 0);
        if (n < 1 || (size_t)n > code_count) {
            rc = WL_EINTERNAL;
            break;
        }
        size_t index = (size_t)n - 1;
        if (codes[index] == NULL)
            codes[index] = wl_arena_strdup(arena, PQgetvalue(res, i, 1));
        if (codes[index] == NULL)
            rc = WL_ENOMEM;
        if (rc != 0 || PQgetisnull(res, i, 3))
            continue;
        wl_code_match_t *match = &matches[match_count++];
        match->code_index = index;
        match->kind = PQgetvalue(res, i, 2)[0] == 's' ? WL_MATCH_SKU : WL_MATCH_EAN;
        match->sku = wl_arena_strdup(arena, PQgetvalue(res, i, 3));
        match->product_name = wl_arena_strdup(arena, PQgetvalue(res, i, 4));
        if (match->sku == NULL || match->product_name == NULL)
            rc = WL_ENOMEM;
    }
    PQclear(res);
    for (size_t i = 0; rc == 0 && i < code_count; i++) {
        if (codes[i] == NULL)
            rc = WL_EINTERNAL; /* a gap in the ordinality cannot happen */
    }
    if (rc == 0)
        rc = wl_resolve_codes(codes, code_count, matches, match_count, arena, out);
    if (rc == WL_ENOMEM)
        return wl_error_set(err, WL_ENOMEM, NULL);
    if (rc != 0)
        return wl_error_set(err, WL_EINTERNAL, "walk list codes did not resolve");
    return 0;
}

/* Every non-staging location in an own warehouse that holds a walked product (0 included). */
static int find_stops(PGconn *conn, const char *org, const wl_resolution_t *resolution,
                      wl_arena_t *arena, wl_walk_stop_t **out, size_t *count, wl_error_t *err)
{
    *out = NULL;
    *count = 0;
    size_t n = resolution->product_count;
    if (n == 0)
        return 0;
    wl_span_t *skus = wl_arena_alloc(arena, sizeof(*skus) * n);
    if (skus == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    for (size_t i = 0; i < n; i++)
        skus[i] = wl_span_str(resolution->products[i].sku);
    char *sku_array = wl_db_text_array(arena, skus, n);
    if (sku_array == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    const char *params[] = {org, sku_array};
    PGresult *res = NULL;
    int rc =
        wl_db_exec_hot(conn,
                       "SELECT ls.location, ls.warehouse, ls.sku, ls.quantity"
                       " FROM location_stock ls"
                       " JOIN warehouses w ON w.org_id = ls.org_id AND w.code = ls.warehouse"
                       "  AND w.kind = 'own'"
                       " JOIN locations l ON l.org_id = ls.org_id AND l.warehouse = ls.warehouse"
                       "  AND l.code = ls.location AND NOT l.staging"
                       " WHERE ls.org_id = $1 AND ls.sku = ANY ($2::text[])",
                       2, params, &res, err);
    if (rc != 0)
        return rc;
    int rows = PQntuples(res);
    *out = wl_arena_alloc(arena, sizeof(**out) * (size_t)(rows ? rows : 1));
    bool ok = *out != NULL;
    for (int i = 0; ok && i < rows; i++) {
        wl_walk_stop_t *stop = &(*out)[i];
        stop->bin_code = wl_arena_strdup(arena, PQgetvalue(res, i, 0));
        stop->warehouse = wl_arena_strdup(arena, PQgetvalue(res, i, 1));
        stop->sku = wl_arena_strdup(arena, PQgetvalue(res, i, 2));
        stop->quantity = wl_db_int64(res, i, 3);
        ok = stop->bin_code != NULL && stop->warehouse != NULL && stop->sku != NULL;
    }
    PQclear(res);
    if (!ok)
        return wl_error_set(err, WL_ENOMEM, NULL);
    *count = (size_t)rows;
    return 0;
}

/* The load's locate_list.loaded webhook event, in its transaction: it exists exactly when the
 * load commits. */
static int announce(PGconn *conn, int64_t org_id, const char *id, const wl_loaded_list_t *loaded,
                    wl_error_t *err)
{
    int64_t counts[5] = {0};
    for (size_t i = 0; i < loaded->resolution.code_count; i++) {
        unsigned outcome = (unsigned)loaded->resolution.codes[i].outcome;
        counts[outcome < 5 ? outcome : 0]++;
    }
    return wl_webhooks_enqueue_list_loaded(conn, org_id, id, loaded->name, loaded->loaded_ms,
                                           counts[WL_CODE_SKU] + counts[WL_CODE_EAN],
                                           counts[WL_CODE_AMBIGUOUS], counts[WL_CODE_NOT_FOUND],
                                           err);
}

int wl_scanner_load_begin(PGconn *conn, int64_t org_id, const char *id, wl_arena_t *arena,
                          wl_loaded_list_t *out, wl_error_t *err)
{
    char org[24];
    snprintf(org, sizeof(org), "%lld", (long long)org_id);
    const char *params[] = {org, id};
    memset(out, 0, sizeof(*out));
    wl_walk_stop_t *stops = NULL;
    size_t stop_count = 0;
    int rc = wl_db_begin(conn, err);
    if (rc != 0)
        return rc;
    rc = claim(conn, params, arena, out, err);
    if (rc == 0)
        rc = resolve(conn, params, arena, &out->resolution, err);
    if (rc == 0)
        rc = find_stops(conn, org, &out->resolution, arena, &stops, &stop_count, err);
    if (rc == 0) {
        rc = wl_walk_build(&out->resolution, stops, stop_count, arena, &out->walk);
        if (rc == WL_ENOMEM)
            wl_error_set(err, WL_ENOMEM, NULL);
        else if (rc != 0)
            rc = wl_error_set(err, WL_EINTERNAL, "a stop of a product not in the walk");
    }
    if (rc == 0)
        rc = announce(conn, org_id, id, out, err);
    if (rc != 0)
        wl_db_rollback(conn);
    return rc;
}

int wl_scanner_load_commit(PGconn *conn, wl_error_t *err)
{
    int rc = wl_db_commit(conn, err);
    if (rc != 0)
        wl_db_rollback(conn);
    return rc;
}

void wl_scanner_load_abandon(PGconn *conn)
{
    wl_db_rollback(conn);
}
