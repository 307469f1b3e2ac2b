/* The per-warehouse stock breakdown is read a keyset page at a time here. */
#include "store/breakdown.h"

#include <stdio.h>
#include <string.h>

#include "store/db.h"

/* The cursor and the filters, on the (org_id, sku, warehouse) key of stock and location_stock. */
#define PAIR_CONDITIONS                                                                            \
    " org_id = $1"                                                                                 \
    " AND ($2::text IS NULL"                                                                       \
    "      OR (sku, warehouse) > ($2::text COLLATE \"C\", $3::text COLLATE \"C\"))"                \
    " AND ($4::text IS NULL OR sku = $4::text)"                                                    \
    " AND ($5::text IS NULL OR warehouse = $5::text)"

/*
 * One statement, so one snapshot. The pairs of the page come from the primary
 * keys of stock and location_stock: each side reads at most $6 keys after the
 * cursor in index order, and their union is cut to $6 again. Then one row per
 * (pair, location), or one row for a pair without locations, in page order.
 * PQexecParams plans with the parameter values, so the "$n IS NULL OR" arms
 * fold away and the cursor and filters become plain index conditions.
 */
static const char list_sql[] =
    "WITH pairs AS ("
    " SELECT sku, warehouse FROM ("
    "  (SELECT sku, warehouse FROM stock WHERE" PAIR_CONDITIONS
    "   ORDER BY sku, warehouse LIMIT $6)"
    "  UNION"
    "  (SELECT DISTINCT sku, warehouse FROM location_stock WHERE" PAIR_CONDITIONS
    "   ORDER BY sku, warehouse LIMIT $6)"
    " ) AS candidates"
    " ORDER BY sku, warehouse LIMIT $6"
    ")"
    " SELECT p.sku, p.warehouse, w.kind, coalesce(st.on_hand, 0), res.reserved,"
    "        greatest(0, coalesce(st.on_hand, 0) - res.reserved),"
    "        ls.location, ls.quantity, l.staging"
    " FROM pairs p"
    " JOIN warehouses w ON w.org_id = $1 AND w.code = p.warehouse"
    " LEFT JOIN stock st ON st.org_id = $1 AND st.sku = p.sku AND st.warehouse = p.warehouse"
    " CROSS JOIN LATERAL ("
    "  SELECT coalesce(sum(r.quantity), 0)::bigint AS reserved FROM reservations r"
    "  WHERE r.org_id = $1 AND r.sku = p.sku AND r.warehouse = p.warehouse"
    "    AND r.status = 'active') AS res"
    " LEFT JOIN location_stock ls"
    "   ON ls.org_id = $1 AND ls.sku = p.sku AND ls.warehouse = p.warehouse"
    " LEFT JOIN locations l"
    "   ON l.org_id = $1 AND l.warehouse = ls.warehouse AND l.code = ls.location"
    " ORDER BY p.sku, p.warehouse, l.sort_key, ls.location";

enum {
    COL_SKU,
    COL_WAREHOUSE,
    COL_KIND,
    COL_ON_HAND,
    COL_RESERVED,
    COL_AVAILABLE,
    COL_LOCATION,
    COL_QUANTITY,
    COL_STAGING
};

/* Rows of one pair are adjacent; a row starts a new item when its pair differs. */
static int starts_item(const PGresult *res, int row)
{
    return row == 0 ||
           strcmp(PQgetvalue(res, row, COL_SKU), PQgetvalue(res, row - 1, COL_SKU)) != 0 ||
           strcmp(PQgetvalue(res, row, COL_WAREHOUSE), PQgetvalue(res, row - 1, COL_WAREHOUSE)) !=
               0;
}

static int build_items(const PGresult *res, wl_arena_t *arena, wl_breakdown_item_t **items,
                       size_t *count)
{
    int rows = PQntuples(res);
    size_t item_count = 0, location_count = 0;
    for (int r = 0; r < rows; r++) {
        item_count += (size_t)starts_item(res, r);
        location_count += !PQgetisnull(res, r, COL_LOCATION);
    }
    wl_breakdown_item_t *out = wl_arena_alloc(arena, (item_count ? item_count : 1) * sizeof(*out));
    wl_breakdown_location_t *locations =
        wl_arena_alloc(arena, (location_count ? location_count : 1) * sizeof(*locations));
    if (out == NULL || locations == NULL)
        return WL_ENOMEM;
    wl_breakdown_item_t *item = NULL;
    size_t n = 0;
    for (int r = 0; r < rows; r++) {
        if (starts_item(res, r)) {
            item = &out[n++];
            item->sku = wl_arena_strdup(arena, PQgetvalue(res, r, COL_SKU));
            item->warehouse = wl_arena_strdup(arena, PQgetvalue(res, r, COL_WAREHOUSE));
            item->warehouse_kind = wl_arena_strdup(arena, PQgetvalue(res, r, COL_KIND));
            item->on_hand = wl_db_int64(res, r, COL_ON_HAND);
            item->reserved = wl_db_int64(res, r, COL_RESERVED);
            item->available = wl_db_int64(res, r, COL_AVAILABLE);
            item->locations = locations;
            item->location_count = 0;
            if (item->sku == NULL || item->warehouse == NULL || item->warehouse_kind == NULL)
                return WL_ENOMEM;
        }
        if (PQgetisnull(res, r, COL_LOCATION))
            continue;
        wl_breakdown_location_t *location = &item->locations[item->location_count++];
        location->code = wl_arena_strdup(arena, PQgetvalue(res, r, COL_LOCATION));
        location->quantity = wl_db_int64(res, r, COL_QUANTITY);
        location->staging = PQgetvalue(res, r, COL_STAGING)[0] == 't';
        locations++;
        if (location->code == NULL)
            return WL_ENOMEM;
    }
    *items = out;
    *count = n;
    return 0;
}

int wl_breakdown_list(PGconn *conn, int64_t org_id, const wl_breakdown_query_t *query,
                      wl_arena_t *arena, wl_breakdown_item_t **items, size_t *count,
                      wl_error_t *err)
{
    char org[24], limit[16];
    snprintf(org, sizeof(org), "%lld", (long long)org_id);
    snprintf(limit, sizeof(limit), "%d", query->limit);
    const char *params[] = {org,        query->after_sku, query->after_warehouse,
                            query->sku, query->warehouse, limit};
    PGresult *res = NULL;
    int rc = wl_db_exec_hot(conn, list_sql, 6, params, &res, err);
    if (rc != 0)
        return rc;
    rc = build_items(res, arena, items, count);
    PQclear(res);
    return rc == 0 ? 0 : wl_error_set(err, rc, NULL);
}
