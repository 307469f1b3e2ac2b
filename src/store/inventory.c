/* Writing inventory in checked, all-or-nothing batches happens here. */
#include "store/inventory.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/bin_order.h"
#include "store/db.h"
#include "walklist/codes.h"
#include "walklist/utf8.h"

typedef enum {
    COL_CODE, /* SKU, EAN, bin, warehouse code, reservation ref */
    COL_NAME, /* display name, up to 200 characters, required */
    COL_WAREHOUSE_KIND,
    COL_BOOL,     /* true / false */
    COL_QUANTITY, /* integer >= 0 */
    COL_EANS,     /* EANs separated by '|', may be empty */
    COL_RESERVATION_STATUS,
} column_type_t;

typedef struct {
    const char *name;
    column_type_t type;
} column_t;

#define MAX_CHECKS  3
#define MAX_UPSERTS 4

/*
 * One kind of batch. SQL runs against the staging table import_rows, which has
 * a column "label" (the caller's name for the row) and one column per value
 * (plus sort_key for locations). $1 is always the organization.
 */
typedef struct {
    column_t columns[WL_INVENTORY_MAX_COLUMNS];
    size_t column_count;
    const char *staging_columns; /* column definitions after "label bigint" */
    const char *key_columns;     /* natural key, for the duplicate check */
    const char *sort_key_of;     /* bin code column whose natural order key is staged too */
    /* Reference checks: each returns (label, column, description) for bad rows. */
    const char *checks[MAX_CHECKS];
    /* Locks the existing rows the batch changes, in key order, before refusals are read. */
    const char *lock;
    /* Rows the current state refuses, read before and after the upsert: (label, code,
     * description), code one of not_found, failed_precondition, already_exists. */
    const char *refusals_before;
    const char *refusals_after;
    /* SKUs whose export rows the batch changes, computed before the upsert; or, when
     * affected_are_staged, the staged rows' own SKUs, which the refresh reads from import_rows
     * itself (the upsert does not change it), without copying them into a table first. */
    const char *affected_skus;
    bool affected_are_staged;
    /* When set, runs first ($1: organization) and gives one row whose values affected_skus
     * reads as $2, $3, ...: the keys (warehouse codes, bins) whose change changes export rows,
     * as arrays, so that affected_skus is planned on their number. A NULL first value: the
     * batch changes no export row, and neither affected_skus nor the refresh runs. */
    const char *affected_keys;
    /* What of those rows the batch can change (wl_refresh_availability_from):
     * "qty", "location" or "all". */
    const char *refresh_parts;
    /*
     * The writes, in order. Each batch holds its organization's inventory lock from the start
     * of its checks (see lock_organization), so "UPDATE what differs, then INSERT what is
     * missing" cannot race another batch, and costs less than INSERT .. ON CONFLICT, which
     * inserts speculatively and rewrites unchanged rows.
     */
    const char *upsert[MAX_UPSERTS];
    /* After a bulk batch (BULK_ROWS), fresh statistics of what it wrote, so that the
     * availability refresh is planned on the tables as they are now. */
    const char *analyze;
    /*
     * The table an organization's first rows of the kind may be COPYed straight into
     * (wl_inventory_batch_begin_first), its columns named as the kind's (org_id first, then
     * each column but the EANs, then sort_key); the EANs of products go to product_eans.
     */
    const char *table;
    /* On such a first import, the refresh, when not the kind's usual one ($1: organization). */
    const char *first_refresh;
    /* When the refresh finds a SKU's available quantity past bigint: the batch's rows of such
     * SKUs, (label, column, description). NULL: the batch is refused without naming rows. */
    const char *overflow_check;
} kind_t;

#define CHECK_PRODUCT                                                                              \
    "SELECT i.label, 'sku', 'unknown product ' || i.sku FROM import_rows i"                        \
    " LEFT JOIN (SELECT sku FROM products WHERE org_id = $1) p ON p.sku = i.sku"                   \
    " WHERE p.sku IS NULL"
#define CHECK_WAREHOUSE                                                                            \
    "SELECT i.label, 'warehouse', 'unknown warehouse ' || i.warehouse FROM import_rows i"          \
    " LEFT JOIN (SELECT code FROM warehouses WHERE org_id = $1) w ON w.code = i.warehouse"         \
    " WHERE w.code IS NULL"
/* The available quantity (on_hand over own warehouses minus their active reservations) of the
 * organization's SKUs with stock, computed in numeric, as rows (sku, qty): AVAILABLE_FROM, then
 * a condition on s.sku or nothing, then AVAILABLE_TO. */
#define AVAILABLE_FROM                                                                             \
    "(SELECT o.sku, o.n - coalesce(r.n, 0) AS qty FROM (SELECT s.sku, sum(s.on_hand) AS n"         \
    " FROM stock s JOIN warehouses w ON w.org_id = s.org_id AND w.code = s.warehouse"              \
    " AND w.kind = 'own' WHERE s.org_id = $1"
#define AVAILABLE_TO                                                                               \
    " GROUP BY s.sku) o LEFT JOIN (SELECT r.sku, sum(r.quantity) AS n FROM reservations r"         \
    " JOIN warehouses w ON w.org_id = r.org_id AND w.code = r.warehouse AND w.kind = 'own'"        \
    " WHERE r.org_id = $1 AND r.status = 'active' GROUP BY r.sku) r ON r.sku = o.sku)"
/* The rows of SKUs whose available quantity would pass bigint once the batch is written. */
#define OVERFLOW_CHECK(column)                                                                     \
    "SELECT i.label, '" column "', 'SKU ' || i.sku || ' would have ' || t.qty || ' available over" \
    " own warehouses, more than 9223372036854775807' FROM import_rows i"                           \
    " JOIN " AVAILABLE_FROM " AND s.sku IN (SELECT sku FROM import_rows)" AVAILABLE_TO " t"        \
    " ON t.sku = i.sku WHERE t.qty > 9223372036854775807"
/* The organization's first SKU whose available quantity passes bigint, and that quantity. */
#define FIRST_OVERFLOW                                                                             \
    "SELECT t.sku, t.qty FROM " AVAILABLE_FROM AVAILABLE_TO " t"                                   \
    " WHERE t.qty > 9223372036854775807 ORDER BY t.sku LIMIT 1"
#define RESERVATION_STAGING                                                                        \
    "ref text COLLATE \"C\", sku text COLLATE \"C\", warehouse text COLLATE \"C\","                \
    " quantity bigint"

/*
 * Release and consume: status changes of existing active reservations, the same checks with
 * another status. The rows are locked first, so that of two concurrent changes of one
 * reservation the second sees the first's status.
 */
#define STATUS_CHANGE(new_status)                                                                  \
    {                                                                                              \
        .columns = {{"ref", COL_CODE}}, .column_count = 1,                                         \
        .staging_columns = "ref text COLLATE \"C\"", .key_columns = "ref",                         \
        .lock = "SELECT 1 FROM reservations WHERE org_id = $1"                                     \
                " AND ref IN (SELECT ref FROM import_rows) ORDER BY ref FOR UPDATE",               \
        .refusals_before =                                                                         \
            "SELECT i.label,"                                                                      \
            " CASE WHEN r.ref IS NULL THEN 'not_found' ELSE 'failed_precondition' END AS code,"    \
            " CASE WHEN r.ref IS NULL THEN 'no reservation ' || i.ref"                             \
            " ELSE 'reservation ' || i.ref || ' is ' || r.status || ', not active' END"            \
            " AS description"                                                                      \
            " FROM import_rows i LEFT JOIN (SELECT ref, status FROM reservations"                  \
            " WHERE org_id = $1) r ON r.ref = i.ref"                                               \
            " WHERE r.ref IS NULL OR r.status <> 'active'",                                        \
        .affected_skus = "SELECT r.sku FROM reservations r"                                        \
                         " JOIN (SELECT ref FROM import_rows) i ON i.ref = r.ref"                  \
                         " WHERE r.org_id = $1",                                                   \
        .refresh_parts = "qty",                                                                    \
        .upsert = {"UPDATE reservations r SET status = '" new_status "'"                           \
                   " FROM (SELECT ref FROM import_rows) i"                                         \
                   " WHERE r.org_id = $1 AND r.ref = i.ref"},                                      \
    }

/*
 * The key of the hash index location_stock_bin (migration 0006) of a bin: its organization,
 * warehouse and code in one text, spelled exactly as the index spells it, so that a query
 * probing it names it the same way (of location_stock's own columns on one side).
 */
#define BIN_KEY(org, warehouse, code)                                                              \
    "((" org "::text || ' ' || " warehouse " || ' ' || " code ") COLLATE \"C\")"
#define RACKS_OF_BINS(org, warehouse, code)                                                        \
    " location_stock ls ON " BIN_KEY("ls.org_id", "ls.warehouse", "ls.location") " = " BIN_KEY(    \
        org, warehouse, code) " AND ls.warehouse = " warehouse " AND ls.location = " code
/* The SKUs racked in the warehouses $2 of organization $1, through their bins. */
#define WAREHOUSE_RACK_SKUS                                                                        \
    "SELECT ls.sku FROM locations l JOIN" RACKS_OF_BINS(                                           \
        "$1::bigint", "l.warehouse",                                                               \
        "l.code") " WHERE l.org_id = $1 AND l.warehouse = ANY ($2::text[]) AND ls.org_id = $1"

static const kind_t kinds[] = {
    [WL_INVENTORY_WAREHOUSES] =
        {
            .columns = {{"code", COL_CODE}, {"name", COL_NAME}, {"kind", COL_WAREHOUSE_KIND}},
            .column_count = 3,
            .staging_columns = "code text COLLATE \"C\", name text, kind text",
            .key_columns = "code",
            /* Only a warehouse whose kind changes changes export rows (a new one has no
             * stock yet), and only its SKUs, found by the warehouse's indexes (0005) and, for
             * its rack assignments, by each of its bins (0006). */
            .affected_keys = "SELECT array_agg(w.code) FROM warehouses w"
                             " JOIN (SELECT code, kind FROM import_rows) i ON i.code = w.code"
                             " WHERE w.org_id = $1 AND w.kind <> i.kind",
            .affected_skus = "SELECT sku FROM stock WHERE org_id = $1"
                             " AND warehouse = ANY ($2::text[])"
                             " UNION " WAREHOUSE_RACK_SKUS
                             " UNION SELECT sku FROM reservations WHERE org_id = $1"
                             " AND status = 'active' AND warehouse = ANY ($2::text[])",
            .refresh_parts = "all",
            .upsert = {"INSERT INTO warehouses (org_id, code, name, kind)"
                       " SELECT $1, code, name, kind FROM import_rows"
                       " ON CONFLICT (org_id, code) DO UPDATE SET name = excluded.name,"
                       " kind = excluded.kind"},
        },
    [WL_INVENTORY_LOCATIONS] =
        {
            .columns = {{"warehouse", COL_CODE}, {"code", COL_CODE}, {"staging", COL_BOOL}},
            .column_count = 3,
            .staging_columns = "warehouse text COLLATE \"C\", code text COLLATE \"C\","
                               " staging boolean, sort_key bytea",
            .key_columns = "warehouse, code",
            .sort_key_of = "code",
            .checks = {CHECK_WAREHOUSE},
            /* Only a bin whose staging flag changes changes export rows (a new one holds
             * nothing yet), and only its SKUs, found by location_stock_bin (0006). */
            .affected_keys = "SELECT array_agg(l.warehouse), array_agg(l.code) FROM locations l"
                             " JOIN (SELECT warehouse, code, staging FROM import_rows) i"
                             " ON l.warehouse = i.warehouse AND l.code = i.code"
                             " WHERE l.org_id = $1 AND l.staging <> i.staging",
            .affected_skus = "SELECT ls.sku FROM unnest($2::text[], $3::text[])"
                             " AS b(warehouse, code) JOIN" RACKS_OF_BINS(
                                 "$1::bigint", "b.warehouse", "b.code") " WHERE ls.org_id = $1",
            .refresh_parts = "all",
            .upsert = {"UPDATE locations l SET staging = i.staging"
                       " FROM (SELECT warehouse, code, staging FROM import_rows) i"
                       " WHERE l.org_id = $1::bigint AND l.warehouse = i.warehouse"
                       " AND l.code = i.code AND l.staging <> i.staging",
                       "INSERT INTO locations (org_id, warehouse, code, staging, sort_key)"
                       " SELECT $1::bigint, i.warehouse, i.code, i.staging, i.sort_key"
                       " FROM import_rows i LEFT JOIN (SELECT warehouse, code FROM locations"
                       " WHERE org_id = $1::bigint) l ON l.warehouse = i.warehouse"
                       " AND l.code = i.code WHERE l.code IS NULL"},
            .analyze = "ANALYZE locations",
            .table = "locations",
        },
    [WL_INVENTORY_PRODUCTS] =
        {
            .columns = {{"sku", COL_CODE}, {"name", COL_NAME}, {"eans", COL_EANS}},
            .column_count = 3,
            .staging_columns = "sku text COLLATE \"C\", name text, eans text COLLATE \"C\"",
            .key_columns = "sku",
            /* A product's EANs are replaced by the batch's list: those it no longer has are
             * deleted, new ones inserted, kept ones left alone. Separate statements, not one
             * with data-modifying CTEs, whose parts would not see each other's rows. */
            .upsert = {"UPDATE products p SET name = i.name"
                       " FROM (SELECT sku, name FROM import_rows) i"
                       " WHERE p.org_id = $1::bigint AND p.sku = i.sku AND p.name <> i.name",
                       "INSERT INTO products (org_id, sku, name)"
                       " SELECT $1::bigint, i.sku, i.name FROM import_rows i"
                       " LEFT JOIN (SELECT sku FROM products WHERE org_id = $1::bigint) p"
                       " ON p.sku = i.sku WHERE p.sku IS NULL",
                       "DELETE FROM product_eans e USING (SELECT sku, eans FROM import_rows) i"
                       " WHERE e.org_id = $1::bigint AND e.sku = i.sku"
                       " AND e.ean <> ALL (coalesce(string_to_array(i.eans, '|'), '{}'))",
                       /* import_rows holds each product's EANs once (copy_append_eans). */
                       "INSERT INTO product_eans (org_id, ean, sku)"
                       " SELECT $1::bigint, n.ean, i.sku FROM import_rows i"
                       " CROSS JOIN LATERAL unnest(string_to_array(i.eans, '|')) AS n(ean)"
                       " LEFT JOIN (SELECT ean, sku FROM product_eans WHERE org_id = $1::bigint) e"
                       " ON e.ean = n.ean AND e.sku = i.sku WHERE n.ean <> '' AND e.ean IS NULL"},
            .analyze = "ANALYZE products, product_eans",
            .table = "products",
        },
    [WL_INVENTORY_STOCK] =
        {
            .columns = {{"sku", COL_CODE}, {"warehouse", COL_CODE}, {"on_hand", COL_QUANTITY}},
            .column_count = 3,
            .staging_columns = "sku text COLLATE \"C\", warehouse text COLLATE \"C\","
                               " on_hand bigint",
            .key_columns = "sku, warehouse",
            .checks = {CHECK_PRODUCT, CHECK_WAREHOUSE},
            .affected_are_staged = true,
            .refresh_parts = "qty",
            .upsert = {"UPDATE stock s SET on_hand = i.on_hand"
                       " FROM (SELECT sku, warehouse, on_hand FROM import_rows) i"
                       " WHERE s.org_id = $1::bigint AND s.sku = i.sku"
                       " AND s.warehouse = i.warehouse AND s.on_hand <> i.on_hand",
                       "INSERT INTO stock (org_id, sku, warehouse, on_hand)"
                       " SELECT $1::bigint, i.sku, i.warehouse, i.on_hand FROM import_rows i"
                       " LEFT JOIN (SELECT sku, warehouse FROM stock WHERE org_id = $1::bigint) s"
                       " ON s.sku = i.sku AND s.warehouse = i.warehouse WHERE s.sku IS NULL"},
            .analyze = "ANALYZE stock",
            .table = "stock",
            .overflow_check = OVERFLOW_CHECK("on_hand"),
        },
    [WL_INVENTORY_LOCATION_STOCK] =
        {
            .columns = {{"sku", COL_CODE},
                        {"warehouse", COL_CODE},
                        {"location", COL_CODE},
                        {"quantity", COL_QUANTITY}},
            .column_count = 4,
            .staging_columns = "sku text COLLATE \"C\", warehouse text COLLATE \"C\","
                               " location text COLLATE \"C\", quantity bigint",
            .key_columns = "sku, warehouse, location",
            .checks =
                {CHECK_PRODUCT,
                 "SELECT i.label, 'location', 'unknown location ' || i.location"
                 " || ' in warehouse ' || i.warehouse FROM import_rows i"
                 " LEFT JOIN (SELECT warehouse, code FROM locations WHERE org_id = $1) l"
                 " ON l.warehouse = i.warehouse AND l.code = i.location WHERE l.code IS NULL"},
            .affected_are_staged = true,
            .refresh_parts = "location",
            .upsert = {"UPDATE location_stock s SET quantity = i.quantity"
                       " FROM (SELECT sku, warehouse, location, quantity FROM import_rows) i"
                       " WHERE s.org_id = $1::bigint AND s.sku = i.sku AND s.warehouse ="
                       " i.warehouse AND s.location = i.location AND s.quantity <> i.quantity",
                       "INSERT INTO location_stock (org_id, sku, warehouse, location, quantity)"
                       " SELECT $1::bigint, i.sku, i.warehouse, i.location, i.quantity"
                       " FROM import_rows i LEFT JOIN (SELECT sku, warehouse, location"
                       " FROM location_stock WHERE org_id = $1::bigint) s ON s.sku = i.sku"
                       " AND s.warehouse = i.warehouse AND s.location = i.location"
                       " WHERE s.sku IS NULL"},
            .analyze = "ANALYZE location_stock",
            .table = "location_stock",
        },
    [WL_INVENTORY_RESERVATIONS] =
        {
            .columns = {{"ref", COL_CODE},
                        {"sku", COL_CODE},
                        {"warehouse", COL_CODE},
                        {"quantity", COL_QUANTITY},
                        {"status", COL_RESERVATION_STATUS}},
            .column_count = 5,
            .staging_columns = RESERVATION_STAGING ", status text",
            .key_columns = "ref",
            .checks = {CHECK_PRODUCT, CHECK_WAREHOUSE},
            /* An updated reservation may move to another SKU: both change. */
            .affected_skus =
                "SELECT sku FROM import_rows UNION ALL SELECT r.sku FROM reservations r"
                " JOIN (SELECT ref FROM import_rows) i ON i.ref = r.ref WHERE r.org_id = $1",
            .refresh_parts = "qty",
            .upsert = {"UPDATE reservations r SET sku = i.sku, warehouse = i.warehouse,"
                       " quantity = i.quantity, status = i.status"
                       " FROM (SELECT ref, sku, warehouse, quantity, status FROM import_rows) i"
                       " WHERE r.org_id = $1::bigint AND r.ref = i.ref"
                       " AND (r.sku, r.warehouse, r.quantity, r.status)"
                       " IS DISTINCT FROM (i.sku, i.warehouse, i.quantity, i.status)",
                       "INSERT INTO reservations (org_id, ref, sku, warehouse, quantity, status)"
                       " SELECT $1::bigint, i.ref, i.sku, i.warehouse, i.quantity, i.status"
                       " FROM import_rows i LEFT JOIN (SELECT ref FROM reservations"
                       " WHERE org_id = $1::bigint) r ON r.ref = i.ref WHERE r.ref IS NULL"},
            .analyze = "ANALYZE reservations",
            .table = "reservations",
            .first_refresh = "SELECT wl_refresh_availability_first_reservations($1)",
            .overflow_check = OVERFLOW_CHECK("quantity"),
        },
    [WL_INVENTORY_RESERVATIONS_CREATE] =
        {
            .columns = {{"ref", COL_CODE},
                        {"sku", COL_CODE},
                        {"warehouse", COL_CODE},
                        {"quantity", COL_QUANTITY}},
            .column_count = 4,
            .staging_columns = RESERVATION_STAGING,
            .key_columns = "ref",
            .checks = {CHECK_PRODUCT, CHECK_WAREHOUSE},
            .affected_are_staged = true,
            .refresh_parts = "qty",
            .upsert = {"INSERT INTO reservations (org_id, ref, sku, warehouse, quantity, status)"
                       " SELECT $1, ref, sku, warehouse, quantity, 'active' FROM import_rows"
                       " ON CONFLICT (org_id, ref) DO NOTHING"},
            /* Read after the insert, which waits for a concurrent creator of the same ref: of
             * two such batches, the second compares what the first wrote with what it asked. */
            .refusals_after = "SELECT i.label, 'already_exists' AS code, 'reservation ' || i.ref"
                              " || ' already exists: ' || r.quantity || ' of ' || r.sku"
                              " || ' in ' || r.warehouse || ', ' || r.status AS description"
                              " FROM import_rows i JOIN (SELECT ref, sku, warehouse, quantity,"
                              " status FROM reservations WHERE org_id = $1) r ON r.ref = i.ref"
                              " WHERE (r.sku, r.warehouse, r.quantity, r.status)"
                              " IS DISTINCT FROM (i.sku, i.warehouse, i.quantity, 'active')",
        },
    [WL_INVENTORY_RESERVATIONS_RELEASE] = STATUS_CHANGE("released"),
    [WL_INVENTORY_RESERVATIONS_CONSUME] = STATUS_CHANGE("consumed"),
};

#define KIND(batch) ((const kind_t *)(batch)->kind)

size_t wl_inventory_column_count(wl_inventory_kind_t kind)
{
    return kinds[kind].column_count;
}

const char *wl_inventory_column(wl_inventory_kind_t kind, size_t index)
{
    return index < kinds[kind].column_count ? kinds[kind].columns[index].name : "";
}

void wl_inventory_batch_problem(wl_inventory_batch_t *batch, size_t label, const char *column,
                                const char *description)
{
    if (batch->direct) {
        /* Reported by the staged batch the caller runs instead. */
        batch->direct_refused = true;
        return;
    }
    batch->problems++;
    batch->reporter.problem(label, column, description, batch->reporter.data);
}

/*
 * Reports the violations a validator recorded, then forgets them. The batch's one wl_error_t
 * is cleared only then: clearing its 8 KiB for every value of a good row cost more than
 * everything else walklistctl does with a row (2 s of the 2,000,000 rack assignments).
 */
static void report_violations(wl_inventory_batch_t *batch, size_t label)
{
    wl_error_t *check = &batch->check;
    if (check->code == 0 && check->violation_count == 0 && check->violations_dropped == 0)
        return;
    for (size_t i = 0; i < check->violation_count; i++)
        wl_inventory_batch_problem(batch, label, check->violations[i].field,
                                   check->violations[i].description);
    wl_error_init(check);
}

static bool span_is(wl_span_t s, const char *text)
{
    return wl_span_eq(s, wl_span_str(text));
}

/*
 * Names may hold line breaks, which RFC 4180 quoting exists to carry (a product name on two
 * lines); every other control character is refused. CR and LF are ASCII, so the pieces between
 * them are whole UTF-8 and each is checked on its own.
 */
static int validate_name(wl_span_t name, const char *field, wl_error_t *check)
{
    long chars = 0;
    size_t start = 0;
    for (size_t i = 0; i <= name.len; i++) {
        if (i < name.len && name.base[i] != '\n' && name.base[i] != '\r')
            continue;
        wl_span_t piece = wl_span(name.base + start, i - start);
        if (wl_text_validate(piece, WL_TEXT_MAX_CHARS, false, field, check) != 0)
            return WL_EINVAL;
        chars += wl_utf8_count(piece) + (i < name.len ? 1 : 0);
        start = i + 1;
    }
    if (chars == 0)
        return wl_error_add_violation(check, field, "must not be empty");
    if (chars > WL_TEXT_MAX_CHARS)
        return wl_error_add_violation(check, field, "must be at most %d characters",
                                      WL_TEXT_MAX_CHARS);
    return 0;
}

static bool validate_value(wl_inventory_batch_t *batch, const column_t *column, wl_span_t value,
                           size_t label)
{
    wl_error_t *check = &batch->check;
    int rc = 0;
    switch (column->type) {
    case COL_CODE:
        rc = wl_code_validate(value, column->name, check);
        break;
    case COL_NAME:
        rc = validate_name(value, column->name, check);
        break;
    case COL_WAREHOUSE_KIND:
        if (!span_is(value, "own") && !span_is(value, "supplier"))
            wl_error_add_violation(check, column->name, "must be own or supplier");
        break;
    case COL_BOOL:
        if (!span_is(value, "true") && !span_is(value, "false"))
            wl_error_add_violation(check, column->name, "must be true or false");
        break;
    case COL_QUANTITY: {
        bool ok = value.len > 0 && value.len <= 18;
        for (size_t i = 0; ok && i < value.len; i++)
            ok = value.base[i] >= '0' && value.base[i] <= '9';
        if (!ok)
            wl_error_add_violation(check, column->name,
                                   "must be a whole number from 0 to 999999999999999999");
        break;
    }
    case COL_EANS: {
        size_t start = 0;
        for (size_t i = 0; value.len > 0 && i <= value.len; i++) {
            if (i < value.len && value.base[i] != '|')
                continue;
            if (wl_code_validate(wl_span(value.base + start, i - start), column->name, check))
                rc = WL_EINVAL;
            start = i + 1;
        }
        break;
    }
    case COL_RESERVATION_STATUS:
        if (!span_is(value, "active") && !span_is(value, "released") && !span_is(value, "consumed"))
            wl_error_add_violation(check, column->name, "must be active, released or consumed");
        break;
    }
    bool ok = rc == 0 && check->violation_count == 0;
    report_violations(batch, label);
    return ok;
}

/* Checks every value of a row, reporting each bad one; true when all are good. */
static bool check_row(wl_inventory_batch_t *batch, size_t label, const wl_span_t *values)
{
    bool ok = true;
    for (size_t i = 0; i < KIND(batch)->column_count; i++)
        ok &= validate_value(batch, &KIND(batch)->columns[i], values[i], label);
    return ok;
}

bool wl_inventory_row_valid(wl_inventory_kind_t kind, size_t label, const wl_span_t *values,
                            const wl_inventory_reporter_t *reporter)
{
    wl_inventory_batch_t batch = {.kind = &kinds[kind], .reporter = *reporter};
    return check_row(&batch, label, values);
}

/* Appends a value in COPY text format: backslash, tab, newline and CR escaped. */
static bool copy_append(wl_inventory_batch_t *batch, const char *s, size_t n)
{
    if (batch->len + 2 * n + 2 > batch->cap) {
        size_t grown = batch->cap ? batch->cap : 4096;
        while (batch->len + 2 * n + 2 > grown)
            grown *= 2;
        char *p = realloc(batch->buf, grown);
        if (p == NULL)
            return false;
        batch->buf = p;
        batch->cap = grown;
    }
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\\' || c == '\t' || c == '\n' || c == '\r') {
            batch->buf[batch->len++] = '\\';
            c = c == '\t' ? 't' : c == '\n' ? 'n' : c == '\r' ? 'r' : c;
        }
        batch->buf[batch->len++] = c;
    }
    return true;
}

/*
 * Appends a valid EAN list without repeats, keeping the first of each: the product's EANs are
 * then distinct (ean, sku) pairs as staged, and the bulk insert of product_eans needs no
 * DISTINCT over every EAN of the catalogue (a sort of 1.5 million pairs at 1,000,000 SKUs).
 * Lists are short, so each EAN is compared with those before it.
 */
/* Whether the EAN at eans[start, ..) is empty or one of the list before it. */
static bool ean_skipped(wl_span_t eans, size_t start, wl_span_t ean)
{
    bool repeated = ean.len == 0;
    for (size_t before = 0, from = 0; !repeated && before < start; before++) {
        if (eans.base[before] != '|')
            continue;
        repeated = wl_span_eq(wl_span(eans.base + from, before - from), ean);
        from = before + 1;
    }
    return repeated;
}

/* The next EAN of the list from eans[*start] on that is not skipped; false after the last. */
static bool next_ean(wl_span_t eans, size_t *start, wl_span_t *ean)
{
    while (*start <= eans.len) {
        size_t end = *start;
        while (end < eans.len && eans.base[end] != '|')
            end++;
        wl_span_t candidate = wl_span(eans.base + *start, end - *start);
        bool skipped = ean_skipped(eans, *start, candidate);
        *start = end + 1;
        if (!skipped) {
            *ean = candidate;
            return true;
        }
    }
    return false;
}

static bool copy_append_eans(wl_inventory_batch_t *batch, wl_span_t eans)
{
    /* Reserves the room for the separator or line end that follows, as every append does. */
    bool first = true;
    if (!copy_append(batch, "", 0))
        return false;
    size_t start = 0;
    wl_span_t ean;
    while (next_ean(eans, &start, &ean)) {
        if (!first && !copy_append(batch, "|", 1))
            return false;
        if (!copy_append(batch, ean.base, ean.len))
            return false;
        first = false;
    }
    return true;
}

/*
 * A direct batch's product_eans rows for one product: (org_id, ean, sku) lines in COPY text
 * format, each EAN of the list once, kept in a temporary file until the products are written.
 */
static bool write_direct_eans(wl_inventory_batch_t *batch, wl_span_t eans, wl_span_t sku)
{
    size_t start = 0;
    wl_span_t ean;
    while (next_ean(eans, &start, &ean)) {
        batch->len = 0;
        if (!copy_append(batch, batch->org, strlen(batch->org)))
            return false;
        batch->buf[batch->len++] = '\t';
        if (!copy_append(batch, ean.base, ean.len))
            return false;
        batch->buf[batch->len++] = '\t';
        if (!copy_append(batch, sku.base, sku.len))
            return false;
        batch->buf[batch->len++] = '\n';
        if (fwrite(batch->buf, 1, batch->len, batch->eans) != batch->len)
            return false;
    }
    return true;
}

/*
 * Most files come ordered by their natural key's first column (a catalogue export lists each
 * SKU's rows together), and then a repeated key can only be within one group of rows sharing
 * that column, so a batch can know it has no duplicate without asking PostgreSQL to hash every
 * key (3.5 s for 2,000,000 rack assignments). Rows out of that order, a large group or a
 * repeat found here send the batch to the SQL check, which also reports the lines.
 */
#define KEY_GROUP_MAX 64

static bool key_buf_append(wl_inventory_batch_t *batch, const void *bytes, size_t n)
{
    if (batch->key_len + n > batch->key_cap) {
        size_t grown = batch->key_cap ? batch->key_cap : 1024;
        while (batch->key_len + n > grown)
            grown *= 2;
        char *p = realloc(batch->key_buf, grown);
        if (p == NULL)
            return false;
        batch->key_buf = p;
        batch->key_cap = grown;
    }
    memcpy(batch->key_buf + batch->key_len, bytes, n);
    batch->key_len += n;
    return true;
}

/* Byte order, as COLLATE "C" compares. */
static int compare_bytes(wl_span_t a, wl_span_t b)
{
    int c = memcmp(a.base, b.base, a.len < b.len ? a.len : b.len);
    return c != 0 ? c : (a.len > b.len) - (a.len < b.len);
}

/* Index of each natural key column of the kind, in key order; returns how many. */
static size_t key_column_indexes(const kind_t *kind, size_t indexes[WL_INVENTORY_MAX_COLUMNS])
{
    size_t count = 0;
    const char *name = kind->key_columns;
    while (*name != '\0' && count < WL_INVENTORY_MAX_COLUMNS) {
        size_t len = strcspn(name, ",");
        for (size_t i = 0; i < kind->column_count; i++)
            if (strlen(kind->columns[i].name) == len &&
                strncmp(kind->columns[i].name, name, len) == 0)
                indexes[count++] = i;
        name += len;
        name += strspn(name, ", ");
    }
    return count;
}

/* Records a staged row's key; false only when out of memory. */
static bool note_key(wl_inventory_batch_t *batch, const wl_span_t *values)
{
    if (!batch->keys_distinct)
        return true;
    size_t key[WL_INVENTORY_MAX_COLUMNS];
    size_t key_count = key_column_indexes(KIND(batch), key);
    wl_span_t first = values[key[0]];
    int order =
        batch->rows == 0 ? 1 : compare_bytes(first, wl_span(batch->key_buf, batch->key_first_len));
    if (order < 0 || (order == 0 && (key_count == 1 || batch->key_group_rows >= KEY_GROUP_MAX))) {
        batch->keys_distinct = false;
        return true;
    }
    if (order > 0) {
        batch->key_len = 0;
        batch->key_group_rows = 0;
        batch->key_first_len = first.len;
        if (!key_buf_append(batch, first.base, first.len))
            return false;
    }
    /* The rest of the key, each column as its length then its bytes. */
    size_t rest_start = batch->key_len;
    for (size_t k = 1; k < key_count; k++) {
        size_t len = values[key[k]].len;
        if (!key_buf_append(batch, &len, sizeof(len)) ||
            !key_buf_append(batch, values[key[k]].base, len))
            return false;
    }
    size_t rest_len = batch->key_len - rest_start;
    for (size_t at = batch->key_first_len; at < rest_start;) {
        size_t entry_len = 0;
        for (size_t k = 1; k < key_count; k++) {
            size_t len;
            memcpy(&len, batch->key_buf + at + entry_len, sizeof(len));
            entry_len += sizeof(len) + len;
        }
        if (entry_len == rest_len &&
            memcmp(batch->key_buf + at, batch->key_buf + rest_start, rest_len) == 0) {
            batch->keys_distinct = false;
            return true;
        }
        at += entry_len;
    }
    batch->key_group_rows++;
    return true;
}

static void init_batch(wl_inventory_batch_t *batch, PGconn *conn, int64_t org_id,
                       wl_inventory_kind_t kind, const wl_inventory_reporter_t *reporter,
                       wl_inventory_catalogue_t *catalogue)
{
    memset(batch, 0, sizeof(*batch));
    batch->conn = conn;
    batch->catalogue = catalogue;
    batch->kind = &kinds[kind];
    batch->reporter = *reporter;
    batch->keys_distinct = true;
    snprintf(batch->org, sizeof(batch->org), "%" PRId64, org_id);
}

static int start_copy(wl_inventory_batch_t *batch, const char *sql, wl_error_t *err)
{
    PGresult *res = PQexec(batch->conn, sql);
    int rc = 0;
    if (PQresultStatus(res) == PGRES_COPY_IN)
        batch->copying = true;
    else
        rc = wl_db_fail(batch->conn, res, err);
    PQclear(res);
    return rc;
}

/* In the batch's open transaction: the staging table, and COPY into it. */
static int start_staging(wl_inventory_batch_t *batch, wl_error_t *err)
{
    char ddl[512];
    snprintf(ddl, sizeof(ddl),
             "CREATE TEMP TABLE import_rows (label bigint NOT NULL, %s) ON COMMIT DROP",
             KIND(batch)->staging_columns);
    int rc = wl_db_exec(batch->conn, ddl, 0, NULL, NULL, err);
    return rc == 0 ? start_copy(batch, "COPY import_rows FROM STDIN", err) : rc;
}

/* Undoes the batch: its transaction rolled back, or its catalogue as it was before it. */
static void undo_batch(wl_inventory_batch_t *batch)
{
    if (batch->catalogue == NULL) {
        wl_db_rollback(batch->conn);
        return;
    }
    wl_error_t ignored;
    wl_error_init(&ignored);
    int rc = wl_db_exec(batch->conn, "ROLLBACK TO SAVEPOINT wl_batch", 0, NULL, NULL, &ignored);
    if (rc == 0)
        rc = wl_db_exec(batch->conn, "RELEASE SAVEPOINT wl_batch", 0, NULL, NULL, &ignored);
    (void)rc; /* a failure leaves the transaction failed, and the catalogue's commit fails */
}

/*
 * A batch's transaction (in a catalogue: a savepoint of the catalogue's). Its statements read
 * the organization's rows through the keys that lead with it (index probes for a few rows, a
 * bitmap scan of the key for many), never by a sequential scan of a table that every
 * organization shares, whatever the session says (wl_db_connect_t.plan_by_key) and whatever
 * the statistics say: such a scan reads every organization's rows, so a batch would cost what
 * the database holds, not what it writes, whether or not the statistics know the organization
 * (its first rows were just written). A new organization's first 2,000-SKU catalogue beside
 * one of 1,000,000 SKUs took 1.15 s, mostly reading the other's rows, and takes 0.2 s (with
 * plan_direct_checks and the first files' affected keys below). The staged rows, a temporary
 * table without indexes, are read by a sequential scan, the one way there is. The functions
 * the batch calls keep their own setting.
 */
static int begin_batch(wl_inventory_batch_t *batch, wl_error_t *err)
{
    int rc = batch->catalogue != NULL
                 ? wl_db_exec(batch->conn, "SAVEPOINT wl_batch", 0, NULL, NULL, err)
                 : wl_db_begin(batch->conn, err);
    /* JIT off too: sequential scans off add a fixed cost to a plan that still has one (the
     * staged rows), which passes JIT's thresholds, and compiling costs tens of milliseconds for
     * statements that run once (60 ms for the duplicate check of a 4-row file). One round trip
     * for both: a small InventoryService write is a batch too. */
    if (rc == 0)
        rc = wl_db_exec(batch->conn,
                        "SELECT set_config('enable_seqscan', 'off', true),"
                        " set_config('jit', 'off', true)",
                        0, NULL, NULL, err);
    if (rc != 0)
        undo_batch(batch);
    return rc;
}

/*
 * Commits the written batch; in a catalogue, releases it into the catalogue's transaction
 * instead, with its temporary tables dropped and the planner settings it made (begin_batch,
 * plan_for_bulk) back to the session's, so that the next batch starts as if alone.
 */
static int commit_batch(wl_inventory_batch_t *batch, wl_error_t *err)
{
    int rc = 0;
    if (batch->catalogue == NULL) {
        rc = wl_db_commit(batch->conn, err);
    } else {
        rc = wl_db_exec(batch->conn,
                        "DROP TABLE IF EXISTS pg_temp.import_rows, pg_temp.import_affected", 0,
                        NULL, NULL, err);
        if (rc == 0)
            rc = wl_db_exec(batch->conn,
                            "SELECT set_config(name, reset_val, true) FROM pg_settings"
                            " WHERE name IN ('enable_seqscan', 'enable_nestloop',"
                            " 'enable_mergejoin', 'jit', 'enable_indexscan',"
                            " 'enable_indexonlyscan')",
                            0, NULL, NULL, err);
        if (rc == 0)
            rc = wl_db_exec(batch->conn, "RELEASE SAVEPOINT wl_batch", 0, NULL, NULL, err);
    }
    if (rc == 0)
        batch->done = true;
    return rc;
}

static int begin_staged(wl_inventory_batch_t *batch, wl_error_t *err)
{
    int rc = begin_batch(batch, err);
    if (rc != 0)
        return rc;
    rc = start_staging(batch, err);
    if (rc != 0)
        undo_batch(batch);
    return rc;
}

int wl_inventory_batch_begin(wl_inventory_batch_t *batch, PGconn *conn, int64_t org_id,
                             wl_inventory_kind_t kind, const wl_inventory_reporter_t *reporter,
                             wl_error_t *err)
{
    init_batch(batch, conn, org_id, kind, reporter, NULL);
    return begin_staged(batch, err);
}

int wl_inventory_batch_begin_in(wl_inventory_batch_t *batch, wl_inventory_catalogue_t *catalogue,
                                wl_inventory_kind_t kind, const wl_inventory_reporter_t *reporter,
                                wl_error_t *err)
{
    init_batch(batch, catalogue->conn, catalogue->org_id, kind, reporter, catalogue);
    return begin_staged(batch, err);
}

static int lock_organization(wl_inventory_batch_t *batch, wl_error_t *err);

/* Whether the organization has rows in table; -1 on failure. */
static int organization_has_rows(wl_inventory_batch_t *batch, const char *table, wl_error_t *err)
{
    char sql[160];
    snprintf(sql, sizeof(sql), "SELECT EXISTS (SELECT 1 FROM %s WHERE org_id = $1)", table);
    const char *params[] = {batch->org};
    PGresult *res = NULL;
    if (wl_db_exec(batch->conn, sql, 1, params, &res, err) != 0)
        return -1;
    int has = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
    PQclear(res);
    return has;
}

static int begin_first(wl_inventory_batch_t *batch, wl_error_t *err);

int wl_inventory_batch_begin_first(wl_inventory_batch_t *batch, PGconn *conn, int64_t org_id,
                                   wl_inventory_kind_t kind,
                                   const wl_inventory_reporter_t *reporter, wl_error_t *err)
{
    init_batch(batch, conn, org_id, kind, reporter, NULL);
    return begin_first(batch, err);
}

int wl_inventory_batch_begin_first_in(wl_inventory_batch_t *batch,
                                      wl_inventory_catalogue_t *catalogue, wl_inventory_kind_t kind,
                                      const wl_inventory_reporter_t *reporter, wl_error_t *err)
{
    init_batch(batch, catalogue->conn, catalogue->org_id, kind, reporter, catalogue);
    return begin_first(batch, err);
}

static int begin_first(wl_inventory_batch_t *batch, wl_error_t *err)
{
    const kind_t *k = KIND(batch);
    if (k->table == NULL)
        return begin_staged(batch, err);
    int rc = begin_batch(batch, err);
    if (rc != 0)
        return rc;
    /* Looked for once without the organization's inventory lock, so that a re-import does not
     * hold it while its file is read, then again under it, so that none of the organization's
     * rows can come between the look and the commit. Each look probes the table's index,
     * whatever the planner would estimate (begin_batch): it expects a scan to meet one of an
     * organization's rows at once, as if they were spread over the table, but an
     * organization's rows lie together, and a scan first reads every row stored before them
     * (15-30 ms per table of a 5-row file at 1,000,000 SKUs behind two other such catalogues,
     * more with every organization in the database). */
    bool products = strcmp(k->table, "products") == 0;
    int has = 0;
    for (int pass = 0; rc == 0 && has == 0 && pass < 2; pass++) {
        if (pass == 1)
            rc = lock_organization(batch, err);
        has = rc == 0 ? organization_has_rows(batch, k->table, err) : -1;
        if (has == 0 && products)
            has = organization_has_rows(batch, "product_eans", err);
    }
    if (rc == 0 && has < 0)
        rc = err->code != 0 ? err->code : WL_EINTERNAL;
    else if (rc == 0 && has == 1)
        rc = start_staging(batch, err);
    else if (rc == 0) {
        char sql[256] = "";
        size_t used = (size_t)snprintf(sql, sizeof(sql), "COPY %s (org_id", k->table);
        for (size_t i = 0; i < k->column_count; i++)
            if (k->columns[i].type != COL_EANS)
                used +=
                    (size_t)snprintf(sql + used, sizeof(sql) - used, ", %s", k->columns[i].name);
        snprintf(sql + used, sizeof(sql) - used, "%s) FROM STDIN",
                 k->sort_key_of != NULL ? ", sort_key" : "");
        batch->direct = true;
        if (products && (batch->eans = tmpfile()) == NULL)
            rc = wl_error_set(err, WL_EINTERNAL, "no temporary file for the EANs");
        if (rc == 0)
            rc = start_copy(batch, sql, err);
    }
    if (rc != 0) {
        if (batch->eans != NULL)
            fclose(batch->eans);
        batch->eans = NULL;
        undo_batch(batch);
    }
    return rc;
}

int wl_inventory_batch_add(wl_inventory_batch_t *batch, size_t label, const wl_span_t *values,
                           wl_error_t *err)
{
    const kind_t *kind = KIND(batch);
    if (batch->direct_refused)
        return 0; /* the caller starts again with a staged batch */
    bool ok = check_row(batch, label, values);
    /* Valid rows are staged even after a bad one, so that the SQL checks (references,
     * duplicate keys) can report every bad row; nothing is written unless all are good. */
    if (!ok)
        return 0;
    /* A staged row starts with its label, a direct one with its organization. */
    char text[24];
    if (batch->direct)
        memcpy(text, batch->org, sizeof(text));
    else
        snprintf(text, sizeof(text), "%zu", label);
    batch->len = 0;
    bool appended = copy_append(batch, text, strlen(text));
    for (size_t i = 0; appended && i < kind->column_count; i++) {
        if (batch->direct && kind->columns[i].type == COL_EANS)
            continue; /* to product_eans, after the row is sent */
        batch->buf[batch->len++] = '\t';
        appended = kind->columns[i].type == COL_EANS
                       ? copy_append_eans(batch, values[i])
                       : copy_append(batch, values[i].base, values[i].len);
    }
    if (appended && kind->sort_key_of != NULL) {
        /* The natural bin order key, so SQL sorts bins as the scanner does. */
        size_t code = 0;
        while (strcmp(kind->columns[code].name, kind->sort_key_of) != 0)
            code++;
        uint8_t key[WL_BIN_SORT_KEY_MAX(256)];
        size_t key_len = wl_bin_sort_key(values[code], key, sizeof(key));
        char hex[2 * sizeof(key) + 3] = "\\x"; /* bytea hex input; COPY escaping doubles the \\ */
        static const char digits[] = "0123456789abcdef";
        size_t k = 0;
        for (; k < key_len && k < sizeof(key); k++) {
            hex[2 + 2 * k] = digits[key[k] >> 4];
            hex[3 + 2 * k] = digits[key[k] & 15];
        }
        hex[2 + 2 * k] = '\0';
        batch->buf[batch->len++] = '\t';
        appended = copy_append(batch, hex, strlen(hex)) && key_len <= sizeof(key);
    }
    /* A direct batch's duplicate keys are its table's key violations. */
    if (!appended || (!batch->direct && !note_key(batch, values)))
        return wl_error_set(err, WL_ENOMEM, NULL);
    batch->buf[batch->len++] = '\n';
    if (PQputCopyData(batch->conn, batch->buf, (int)batch->len) != 1)
        return wl_db_fail(batch->conn, NULL, err);
    for (size_t i = 0; batch->direct && i < kind->column_count; i++)
        if (kind->columns[i].type == COL_EANS && !write_direct_eans(batch, values[i], values[0]))
            return wl_error_set(err, WL_EINTERNAL, "cannot keep the EANs: %s", strerror(errno));
    batch->rows++;
    return 0;
}

/* Ends COPY, committing the staged rows (or throwing them away when abort_copy). */
static int end_copy(wl_inventory_batch_t *batch, bool abort_copy, wl_error_t *err)
{
    int rc = 0;
    if (!batch->copying)
        return 0;
    batch->copying = false;
    if (PQputCopyEnd(batch->conn, abort_copy ? "batch aborted" : NULL) != 1)
        rc = wl_db_fail(batch->conn, NULL, err);
    PGresult *res;
    while ((res = PQgetResult(batch->conn)) != NULL) {
        /* A direct batch's refused rows (a duplicate key) are no failure: the staged batch
         * that follows reports them with their lines, so nothing is logged. */
        if (PQresultStatus(res) != PGRES_COMMAND_OK && rc == 0 && !abort_copy)
            rc = batch->direct ? wl_error_set(err, WL_EINVAL, "the rows were refused")
                               : wl_db_fail(batch->conn, res, err);
        PQclear(res);
    }
    return rc;
}

static void release(wl_inventory_batch_t *batch)
{
    if (!batch->done)
        undo_batch(batch);
    free(batch->buf);
    batch->buf = NULL;
    batch->len = batch->cap = 0;
    free(batch->key_buf);
    batch->key_buf = NULL;
    batch->key_len = batch->key_cap = 0;
    if (batch->eans != NULL)
        fclose(batch->eans);
    batch->eans = NULL;
}

void wl_inventory_batch_abort(wl_inventory_batch_t *batch)
{
    wl_error_t ignored;
    wl_error_init(&ignored);
    (void)end_copy(batch, true, &ignored);
    release(batch);
}

/* Reports the rows that fail a SQL check, in label order. */
static int run_check(wl_inventory_batch_t *batch, const char *sql, wl_error_t *err)
{
    PGresult *res = NULL;
    const char *params[] = {batch->org};
    char ordered[2048];
    if ((size_t)snprintf(ordered, sizeof(ordered), "SELECT * FROM (%s) c ORDER BY 1", sql) >=
        sizeof(ordered))
        return wl_error_set(err, WL_EINTERNAL, "inventory check too long");
    int rc = wl_db_exec(batch->conn, ordered, 1, params, &res, err);
    if (rc != 0)
        return rc;
    for (int i = 0; i < PQntuples(res); i++)
        wl_inventory_batch_problem(batch, (size_t)strtoull(PQgetvalue(res, i, 0), NULL, 10),
                                   PQgetvalue(res, i, 1), PQgetvalue(res, i, 2));
    PQclear(res);
    return 0;
}

static int check_duplicates(wl_inventory_batch_t *batch, wl_error_t *err)
{
    const kind_t *kind = KIND(batch);
    if (batch->keys_distinct)
        return 0;
    char sql[512];
    /* The usual answer is "none", found by one hash aggregate; the ordered report below sorts
     * every row, so it runs only when there is something to report. */
    snprintf(sql, sizeof(sql), "SELECT 1 FROM import_rows GROUP BY %s HAVING count(*) > 1 LIMIT 1",
             kind->key_columns);
    PGresult *probe = NULL;
    int found = wl_db_exec(batch->conn, sql, 0, NULL, &probe, err);
    if (found != 0)
        return found;
    bool any = PQntuples(probe) > 0;
    PQclear(probe);
    if (!any)
        return 0;
    /* Every row after the first with the same key is reported, naming the first. */
    snprintf(sql, sizeof(sql),
             "SELECT label, first_label FROM (SELECT label, min(label) OVER (PARTITION BY %s)"
             " AS first_label FROM import_rows) d WHERE label <> first_label ORDER BY label",
             kind->key_columns);
    PGresult *res = NULL;
    int rc = wl_db_exec(batch->conn, sql, 0, NULL, &res, err);
    if (rc != 0)
        return rc;
    for (int i = 0; i < PQntuples(res); i++) {
        char first[64], description[160];
        batch->reporter.row_name((size_t)strtoull(PQgetvalue(res, i, 1), NULL, 10), first,
                                 sizeof(first), batch->reporter.data);
        snprintf(description, sizeof(description), "duplicate key (%s): first on %s",
                 kind->key_columns, first);
        wl_inventory_batch_problem(batch, (size_t)strtoull(PQgetvalue(res, i, 0), NULL, 10), "",
                                   description);
    }
    PQclear(res);
    return 0;
}

/* Refuses the batch when the current state does not allow one of its rows. */
static int check_refusals(wl_inventory_batch_t *batch, const char *sql, wl_error_t *err)
{
    if (sql == NULL)
        return 0;
    char ordered[1024];
    if ((size_t)snprintf(ordered, sizeof(ordered),
                         "SELECT label, code, description FROM (%s) c"
                         " ORDER BY code = 'not_found' DESC, label",
                         sql) >= sizeof(ordered))
        return wl_error_set(err, WL_EINTERNAL, "inventory check too long");
    const char *params[] = {batch->org};
    PGresult *res = NULL;
    int rc = wl_db_exec(batch->conn, ordered, 1, params, &res, err);
    if (rc != 0)
        return rc;
    int refused = PQntuples(res);
    if (refused > 0) {
        const char *code = PQgetvalue(res, 0, 1);
        rc = strcmp(code, "not_found") == 0             ? WL_ENOTFOUND
             : strcmp(code, "failed_precondition") == 0 ? WL_EPRECONDITION
                                                        : WL_EEXISTS;
        char row[64], more[48] = "", message[1024];
        batch->reporter.row_name((size_t)strtoull(PQgetvalue(res, 0, 0), NULL, 10), row,
                                 sizeof(row), batch->reporter.data);
        if (refused > 1)
            snprintf(more, sizeof(more), " (and %d more)", refused - 1);
        snprintf(message, sizeof(message), "%s: %s%s; nothing was written", row,
                 PQgetvalue(res, 0, 2), more);
        /* The description quotes codes of up to 256 bytes: a cut message stays valid UTF-8. */
        size_t keep = wl_utf8_truncate(wl_span_str(message), sizeof(err->message) - 1);
        wl_error_set(err, rc, "%.*s", (int)keep, message);
    }
    PQclear(res);
    return rc;
}

/*
 * Above this many rows a batch is planned for bulk: the tables it wrote get fresh statistics,
 * and joins are hash joins. Inside the batch's transaction the tables' statistics describe them
 * before the batch (often empty, after a first import of a big file), and nested loops planned on
 * such estimates go quadratic.
 */
#define BULK_ROWS 5000

/*
 * Batches of one organization run one at a time, from their checks to their commit: the
 * transaction-scoped advisory lock that the availability refresh takes too,
 * so a batch's checks and writes see every batch that committed before it.
 */
static int lock_org(PGconn *conn, const char *org, wl_error_t *err)
{
    const char *params[] = {org};
    return wl_db_exec(conn,
                      "SELECT pg_advisory_xact_lock(2002872684,"
                      " ($1::bigint % 2147483647)::integer)",
                      1, params, NULL, err);
}

static int lock_organization(wl_inventory_batch_t *batch, wl_error_t *err)
{
    return lock_org(batch->conn, batch->org, err);
}

static int plan_for_bulk(wl_inventory_batch_t *batch, wl_error_t *err)
{
    /* A small batch's staged rows get statistics too, for what they cost (under a
     * millisecond): a table never analyzed is estimated from its pages, 610 rows for the one
     * page of 5 rows, and joins planned for that many hashed the organization's products or
     * rack assignments, a scan that grows with the catalogue (27 ms for 5 products of
     * 100,000), where one index probe per staged row finds them. */
    if (batch->rows <= BULK_ROWS)
        return batch->direct ? 0
                             : wl_db_exec(batch->conn, "ANALYZE import_rows", 0, NULL, NULL, err);
    /* A direct batch's rows are in its table, whose statistics the kind's ANALYZE makes. */
    const char *analyze = batch->direct ? KIND(batch)->analyze : "ANALYZE import_rows";
    int rc = analyze != NULL ? wl_db_exec(batch->conn, analyze, 0, NULL, NULL, err) : 0;
    if (rc == 0)
        rc = wl_db_exec(batch->conn, "SET LOCAL enable_nestloop = off", 0, NULL, NULL, err);
    /* Nor merge joins: the staged rows come in file order, and the reference check of 2,000,000
     * rack assignments sorted them all by bin (9 s) to join 200,000 locations, which one hash
     * table of the locations answers in about 1.5 s. */
    if (rc == 0)
        rc = wl_db_exec(batch->conn, "SET LOCAL enable_mergejoin = off", 0, NULL, NULL, err);
    /* With nested loops off, the costs of a lateral unnest (the EANs) pass JIT's thresholds,
     * and compiling with inlining and optimization costs seconds for statements that run
     * once. */
    if (rc == 0)
        rc = wl_db_exec(batch->conn, "SET LOCAL jit = off", 0, NULL, NULL, err);
    return rc;
}

/* A direct batch's EANs, from their temporary file into product_eans. */
static int copy_direct_eans(wl_inventory_batch_t *batch, wl_error_t *err)
{
    if (batch->eans == NULL)
        return 0;
    int rc =
        fflush(batch->eans) == 0 && fseek(batch->eans, 0, SEEK_SET) == 0
            ? start_copy(batch, "COPY product_eans (org_id, ean, sku) FROM STDIN", err)
            : wl_error_set(err, WL_EINTERNAL, "cannot read the EANs back: %s", strerror(errno));
    char chunk[65536];
    size_t n;
    while (rc == 0 && (n = fread(chunk, 1, sizeof(chunk), batch->eans)) > 0)
        if (PQputCopyData(batch->conn, chunk, (int)n) != 1)
            rc = wl_db_fail(batch->conn, NULL, err);
    if (rc == 0 && ferror(batch->eans))
        rc = wl_error_set(err, WL_EINTERNAL, "cannot read the EANs back");
    int end_rc = end_copy(batch, rc != 0, err);
    return rc != 0 ? rc : end_rc;
}

/*
 * The checks of a direct batch join the organization's first rows of the kind with the rows
 * they name (its products, warehouses or bins), both read whole: in heap order and joined by
 * hashing, whatever the statistics say, so that they cost what the organization holds.
 * - No index scans: the batch's rows were written by its own transaction, so the visibility map
 *   covers none of them: an index-only scan visits the heap for every row, in the index's order
 *   (the bin index's is about random), and the planner, which costs such a scan on the map of
 *   the table before the batch, still prefers it. A bitmap scan reads them in heap order (the
 *   unknown-location check of 2,000,000 rack assignments: 0.61 s instead of 1.24 s,
 *   BENCHMARKS.md "The import and its floor").
 * - No nested loops, for a batch of any size (a bulk one has none already): the statistics
 *   need not know the rows named either, when a batch of 5,000 rows or fewer wrote them (no
 *   ANALYZE follows such a batch), and a nested loop planned on an estimate of one row compared
 *   each of 3,292 stock rows with each of 985 products (0.4 s, beside a catalogue of 1,000,000
 *   SKUs).
 * restore_planner puts the settings back.
 */
typedef struct {
    char indexscan[8], indexonlyscan[8], nestloop[8];
} planner_settings_t;

static int plan_direct_checks(wl_inventory_batch_t *batch, planner_settings_t *saved,
                              wl_error_t *err)
{
    PGresult *res = NULL;
    int rc = wl_db_exec(batch->conn,
                        "SELECT current_setting('enable_indexscan'),"
                        " current_setting('enable_indexonlyscan'),"
                        " current_setting('enable_nestloop')",
                        0, NULL, &res, err);
    if (rc == 0) {
        snprintf(saved->indexscan, sizeof(saved->indexscan), "%s", PQgetvalue(res, 0, 0));
        snprintf(saved->indexonlyscan, sizeof(saved->indexonlyscan), "%s", PQgetvalue(res, 0, 1));
        snprintf(saved->nestloop, sizeof(saved->nestloop), "%s", PQgetvalue(res, 0, 2));
        rc = wl_db_exec(batch->conn,
                        "SELECT set_config('enable_indexscan', 'off', true),"
                        " set_config('enable_indexonlyscan', 'off', true),"
                        " set_config('enable_nestloop', 'off', true)",
                        0, NULL, NULL, err);
    }
    PQclear(res);
    return rc;
}

static int restore_planner(wl_inventory_batch_t *batch, const planner_settings_t *saved,
                           wl_error_t *err)
{
    const char *params[] = {saved->indexscan, saved->indexonlyscan, saved->nestloop};
    return wl_db_exec(batch->conn,
                      "SELECT set_config('enable_indexscan', $1, true),"
                      " set_config('enable_indexonlyscan', $2, true),"
                      " set_config('enable_nestloop', $3, true)",
                      3, params, NULL, err);
}

/* Runs a check on a direct batch's written rows; sets *failed when a row fails it. */
static int direct_check(wl_inventory_batch_t *batch, const char *sql, bool *failed, wl_error_t *err)
{
    char exists[1024];
    if ((size_t)snprintf(exists, sizeof(exists), "SELECT EXISTS (%s)", sql) >= sizeof(exists))
        return wl_error_set(err, WL_EINTERNAL, "inventory check too long");
    const char *params[] = {batch->org};
    PGresult *res = NULL;
    int rc = wl_db_exec(batch->conn, exists, 1, params, &res, err);
    if (rc == 0) {
        *failed = strcmp(PQgetvalue(res, 0, 0), "t") == 0;
        PQclear(res);
    }
    return rc;
}

#define MAX_AFFECTED_KEYS 2

/*
 * Stages the SKUs whose export rows the batch changes (the kind's affected_skus, read before
 * the upsert) in import_affected; *refresh is false when the batch changes none.
 */
static int stage_affected(wl_inventory_batch_t *batch, bool *refresh, wl_error_t *err)
{
    const kind_t *kind = KIND(batch);
    const char *params[1 + MAX_AFFECTED_KEYS] = {batch->org};
    int nparams = strstr(kind->affected_skus, "$1") ? 1 : 0;
    PGresult *keys = NULL;
    int rc = 0;
    *refresh = true;
    if (kind->affected_keys != NULL) {
        rc = wl_db_exec(batch->conn, kind->affected_keys, 1, params, &keys, err);
        if (rc != 0)
            return rc;
        *refresh = PQntuples(keys) == 1 && !PQgetisnull(keys, 0, 0);
        nparams = 1 + PQnfields(keys);
        if (nparams > 1 + MAX_AFFECTED_KEYS)
            rc = wl_error_set(err, WL_EINTERNAL, "too many affected keys");
        for (int i = 0; rc == 0 && *refresh && i < PQnfields(keys); i++)
            params[1 + i] = PQgetvalue(keys, 0, i);
    }
    if (rc == 0 && *refresh) {
        char sql[1024];
        snprintf(sql, sizeof(sql), "CREATE TEMP TABLE import_affected ON COMMIT DROP AS %s",
                 kind->affected_skus);
        rc = wl_db_exec(batch->conn, sql, nparams, params, NULL, err);
    }
    PQclear(keys);
    return rc;
}

/*
 * Runs the refresh of the export rows under a savepoint. A SKU whose available quantity would
 * pass bigint fails it (WL_EINVAL from wl_db_fail's 22003): then the transaction goes back to
 * before the refresh, with the batch's rows written, and *overflow is set.
 */
static int refresh_export(wl_inventory_batch_t *batch, const char *sql, int nparams,
                          const char *const *params, bool *overflow, wl_error_t *err)
{
    *overflow = false;
    int rc = wl_db_exec(batch->conn, "SAVEPOINT wl_refresh", 0, NULL, NULL, err);
    if (rc == 0)
        rc = wl_db_exec(batch->conn, sql, nparams, params, NULL, err);
    if (rc == WL_EINVAL) {
        wl_error_init(err);
        *overflow = true;
        rc = wl_db_exec(batch->conn, "ROLLBACK TO SAVEPOINT wl_refresh", 0, NULL, NULL, err);
    }
    return rc;
}

/* A staged batch whose refresh overflowed: its rows of those SKUs are reported, by line. */
static int report_overflow(wl_inventory_batch_t *batch, wl_error_t *err)
{
    size_t before = batch->problems;
    int rc = KIND(batch)->overflow_check != NULL
                 ? run_check(batch, KIND(batch)->overflow_check, err)
                 : 0;
    if (rc == 0 && batch->problems == before)
        return wl_error_set(err, WL_EINVAL,
                            "the batch would make a SKU's available quantity larger than "
                            "9223372036854775807; nothing was written");
    return rc != 0 ? rc : WL_EINVAL;
}

/*
 * A batch of a catalogue leaves its refresh to the catalogue's commit: the parts it can change,
 * and which SKUs (source: a table or view with a column sku). A bulk batch has the commit
 * recompute the whole organization, as its own refresh would have (wl_refresh_availability_from
 * does at half of the export rows); a smaller one's SKUs are kept in pg_temp.catalogue_skus.
 */
static int defer_refresh(wl_inventory_batch_t *batch, const char *parts, const char *source,
                         wl_error_t *err)
{
    wl_inventory_catalogue_t *catalogue = batch->catalogue;
    bool all = strcmp(parts, "all") == 0;
    catalogue->qty = catalogue->qty || all || strcmp(parts, "qty") == 0;
    catalogue->location = catalogue->location || all || strcmp(parts, "location") == 0;
    if (batch->rows > BULK_ROWS || catalogue->whole) {
        catalogue->whole = true;
        return 0;
    }
    char sql[160];
    snprintf(sql, sizeof(sql), "INSERT INTO pg_temp.catalogue_skus SELECT sku FROM %s", source);
    int rc = wl_db_exec(batch->conn, sql, 0, NULL, NULL, err);
    if (rc == 0)
        catalogue->skus_staged = true;
    return rc;
}

/*
 * The export rows of the SKUs in source (a table or view with a column sku): refreshed now, by
 * the kind's first refresh when first (the organization's first rows of the kind) or else by
 * wl_refresh_availability_from; in a catalogue, left to its commit.
 */
static int refresh_affected(wl_inventory_batch_t *batch, const char *source, bool first,
                            bool *overflow, wl_error_t *err)
{
    const kind_t *kind = KIND(batch);
    *overflow = false;
    if (batch->catalogue != NULL)
        return defer_refresh(batch, kind->refresh_parts, source, err);
    if (first) {
        const char *params[] = {batch->org};
        return refresh_export(batch, kind->first_refresh, 1, params, overflow, err);
    }
    const char *params[] = {batch->org, kind->refresh_parts, source};
    return refresh_export(batch, "SELECT wl_refresh_availability_from($1, $3::regclass, $2)", 3,
                          params, overflow, err);
}

/*
 * A direct batch (wl_inventory_batch_begin_first) ends here: its rows are written, and the
 * kind's checks, refresh and commit run on them through a view named like the staging table
 * (the organization had none of the kind's rows, so its rows are the batch's). Any problem,
 * a key violation while writing included, and the batch is refused; err then stays as it was.
 */
static int finish_direct(wl_inventory_batch_t *batch, size_t *rows, wl_error_t *err)
{
    const kind_t *kind = KIND(batch);
    wl_error_t write_err;
    wl_error_init(&write_err);
    bool refused = batch->direct_refused;
    int rc = end_copy(batch, refused, &write_err);
    if (rc == 0 && !refused)
        rc = copy_direct_eans(batch, &write_err);
    /* Every failure so far, duplicate keys first among them, goes to the staged batch, which
     * reports it with its row, or fails the same way. */
    refused = refused || rc != 0;
    rc = 0;
    if (!refused) {
        char view[256];
        snprintf(view, sizeof(view),
                 "CREATE TEMP VIEW import_rows AS SELECT 0::bigint AS label, * FROM %s"
                 " WHERE org_id = %s",
                 kind->table, batch->org);
        rc = wl_db_exec(batch->conn, view, 0, NULL, NULL, err);
    }
    if (!refused && rc == 0)
        rc = plan_for_bulk(batch, err);
    planner_settings_t saved;
    if (!refused && rc == 0)
        rc = plan_direct_checks(batch, &saved, err);
    for (size_t i = 0; !refused && rc == 0 && i < MAX_CHECKS && kind->checks[i] != NULL; i++)
        rc = direct_check(batch, kind->checks[i], &refused, err);
    if (!refused && rc == 0)
        rc = restore_planner(batch, &saved, err);
    bool staged = kind->affected_are_staged, overflow = false, refresh = true;
    if (!refused && rc == 0 && kind->first_refresh != NULL)
        rc = refresh_affected(batch, "pg_temp.import_rows", true, &overflow, err);
    else if (!refused && rc == 0 && kind->affected_keys != NULL)
        /* The keys whose change moves export rows (a warehouse's kind, a bin's staging flag)
         * did not exist before this batch: a new warehouse or bin holds nothing yet. */
        refresh = false;
    else if (!refused && rc == 0 && kind->affected_skus != NULL && !staged)
        rc = stage_affected(batch, &refresh, err);
    if (!refused && rc == 0 && kind->first_refresh == NULL && refresh &&
        (kind->affected_skus != NULL || staged))
        rc = refresh_affected(batch, staged ? "pg_temp.import_rows" : "pg_temp.import_affected",
                              false, &overflow, err);
    /* The staged batch that follows names the rows. */
    refused = refused || overflow;
    if (!refused && rc == 0)
        rc = wl_db_exec(batch->conn, "DROP VIEW import_rows", 0, NULL, NULL, err);
    if (!refused && rc == 0)
        rc = commit_batch(batch, err);
    if (refused) {
        batch->direct_refused = true;
        rc = WL_EINVAL;
    } else if (rc == 0) {
        *rows = batch->rows;
    }
    release(batch);
    return rc;
}

int wl_inventory_batch_finish(wl_inventory_batch_t *batch, size_t *rows, wl_error_t *err)
{
    const kind_t *kind = KIND(batch);
    const char *params[] = {batch->org};
    *rows = 0;
    if (batch->direct)
        return finish_direct(batch, rows, err);
    int rc = end_copy(batch, false, err);
    if (rc == 0)
        rc = lock_organization(batch, err);
    if (rc == 0)
        rc = plan_for_bulk(batch, err);
    if (rc == 0)
        rc = check_duplicates(batch, err);
    for (size_t i = 0; rc == 0 && i < MAX_CHECKS && kind->checks[i] != NULL; i++)
        rc = run_check(batch, kind->checks[i], err);
    if (rc == 0 && batch->problems > 0)
        rc = WL_EINVAL;
    if (rc == 0 && kind->lock != NULL)
        rc = wl_db_exec(batch->conn, kind->lock, 1, params, NULL, err);
    if (rc == 0)
        rc = check_refusals(batch, kind->refusals_before, err);
    bool refresh = true;
    if (rc == 0 && kind->affected_skus != NULL && !kind->affected_are_staged)
        rc = stage_affected(batch, &refresh, err);
    for (size_t i = 0; rc == 0 && i < MAX_UPSERTS && kind->upsert[i] != NULL; i++)
        rc = wl_db_exec(batch->conn, kind->upsert[i], 1, params, NULL, err);
    if (rc == 0)
        rc = check_refusals(batch, kind->refusals_after, err);
    if (rc == 0 && kind->analyze != NULL && batch->rows > BULK_ROWS)
        rc = wl_db_exec(batch->conn, kind->analyze, 0, NULL, NULL, err);
    if (rc == 0 && refresh && (kind->affected_skus != NULL || kind->affected_are_staged)) {
        bool overflow = false;
        rc = refresh_affected(
            batch, kind->affected_are_staged ? "pg_temp.import_rows" : "pg_temp.import_affected",
            false, &overflow, err);
        if (rc == 0 && overflow)
            rc = report_overflow(batch, err);
    }
    if (rc == 0)
        rc = commit_batch(batch, err);
    if (rc == 0)
        *rows = batch->rows;
    release(batch);
    return rc;
}

int wl_inventory_catalogue_begin(wl_inventory_catalogue_t *catalogue, PGconn *conn, int64_t org_id,
                                 wl_error_t *err)
{
    memset(catalogue, 0, sizeof(*catalogue));
    catalogue->conn = conn;
    catalogue->org_id = org_id;
    snprintf(catalogue->org, sizeof(catalogue->org), "%" PRId64, org_id);
    int rc = wl_db_begin(conn, err);
    if (rc == 0)
        rc = lock_org(conn, catalogue->org, err);
    if (rc == 0)
        rc = wl_db_exec(conn,
                        "CREATE TEMP TABLE catalogue_skus (sku text COLLATE \"C\") ON COMMIT DROP",
                        0, NULL, NULL, err);
    if (rc != 0)
        wl_db_rollback(conn);
    return rc;
}

/* The first SKU of the organization whose available quantity passes bigint, into err. */
static int name_overflow(wl_inventory_catalogue_t *catalogue, wl_error_t *err)
{
    const char *params[] = {catalogue->org};
    PGresult *res = NULL;
    int rc = wl_db_exec(catalogue->conn, FIRST_OVERFLOW, 1, params, &res, err);
    if (rc != 0)
        return rc;
    if (PQntuples(res) == 1)
        rc = wl_error_set(err, WL_EINVAL,
                          "SKU %s would have %s available over own warehouses, more than "
                          "9223372036854775807; nothing was imported",
                          PQgetvalue(res, 0, 0), PQgetvalue(res, 0, 1));
    else
        rc = wl_error_set(err, WL_EINVAL,
                          "a SKU's available quantity would pass 9223372036854775807; nothing "
                          "was imported");
    PQclear(res);
    return rc;
}

int wl_inventory_catalogue_commit(wl_inventory_catalogue_t *catalogue, wl_error_t *err)
{
    PGconn *conn = catalogue->conn;
    const char *parts = catalogue->qty && catalogue->location ? "all"
                        : catalogue->location                 ? "location"
                                                              : "qty";
    const char *source = NULL;
    int rc = 0;
    if (catalogue->whole) {
        /* Every product: as many SKUs as the organization's export rows or more, which is what
         * has the refresh compute the whole organization. */
        char view[160];
        snprintf(view, sizeof(view),
                 "CREATE TEMP VIEW catalogue_products AS SELECT sku FROM products"
                 " WHERE org_id = %s",
                 catalogue->org);
        rc = wl_db_exec(conn, view, 0, NULL, NULL, err);
        source = "pg_temp.catalogue_products";
    } else if (catalogue->skus_staged) {
        source = "pg_temp.catalogue_skus";
    }
    if (rc == 0 && source != NULL) {
        const char *params[] = {catalogue->org, parts, source};
        rc = wl_db_exec(conn, "SAVEPOINT wl_refresh", 0, NULL, NULL, err);
        if (rc == 0)
            rc = wl_db_exec(conn, "SELECT wl_refresh_availability_from($1, $3::regclass, $2)", 3,
                            params, NULL, err);
        if (rc == WL_EINVAL) {
            /* 22003: a quantity past bigint (see refresh_export). */
            wl_error_init(err);
            rc = wl_db_exec(conn, "ROLLBACK TO SAVEPOINT wl_refresh", 0, NULL, NULL, err);
            if (rc == 0)
                rc = name_overflow(catalogue, err);
        }
    }
    /* Unqualified: Citus's hook for DROP VIEW takes pg_temp for a schema of that name. */
    if (rc == 0 && catalogue->whole)
        rc = wl_db_exec(conn, "DROP VIEW catalogue_products", 0, NULL, NULL, err);
    if (rc == 0)
        rc = wl_db_commit(conn, err);
    if (rc != 0)
        wl_db_rollback(conn);
    return rc;
}

void wl_inventory_catalogue_abort(wl_inventory_catalogue_t *catalogue)
{
    wl_db_rollback(catalogue->conn);
}
