/*
 * stock_availability stays right when two writers of one organization overlap, and when a
 * batch large enough to rebuild the organization's rows (wl_refresh_availability_from) or a
 * small one into the same organization writes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "test.h"
#include "testdb.h"

/* Rows the stock export's rules give, written independently of the refresh, that
 * stock_availability lacks or has otherwise; 0 when the two agree. */
static long long mismatches(PGconn *conn, int64_t org)
{
    char sql[2048];
    snprintf(sql, sizeof(sql),
             "WITH own AS (SELECT code FROM warehouses WHERE org_id = %1$lld AND kind = 'own'),"
             " expected AS ("
             "  SELECT p.sku,"
             "   greatest(0, coalesce((SELECT sum(on_hand) FROM stock s WHERE s.org_id = %1$lld"
             "     AND s.sku = p.sku AND s.warehouse IN (SELECT code FROM own)), 0)"
             "    - coalesce((SELECT sum(quantity) FROM reservations r WHERE r.org_id = %1$lld"
             "     AND r.sku = p.sku AND r.status = 'active'"
             "     AND r.warehouse IN (SELECT code FROM own)), 0)) AS qty,"
             "   (SELECT ls.location FROM location_stock ls JOIN locations l"
             "     ON l.org_id = ls.org_id AND l.warehouse = ls.warehouse AND l.code = ls.location"
             "    WHERE ls.org_id = %1$lld AND ls.sku = p.sku AND NOT l.staging"
             "     AND ls.warehouse IN (SELECT code FROM own)"
             "    ORDER BY ls.quantity DESC, l.sort_key, ls.location, ls.warehouse LIMIT 1)"
             "    AS location"
             "  FROM products p WHERE p.org_id = %1$lld AND ("
             "   EXISTS (SELECT 1 FROM stock s WHERE s.org_id = %1$lld AND s.sku = p.sku"
             "    AND s.warehouse IN (SELECT code FROM own))"
             "   OR EXISTS (SELECT 1 FROM location_stock ls JOIN locations l ON l.org_id ="
             "    ls.org_id AND l.warehouse = ls.warehouse AND l.code = ls.location"
             "    WHERE ls.org_id = %1$lld AND ls.sku = p.sku AND NOT l.staging"
             "    AND ls.warehouse IN (SELECT code FROM own)))),"
             " actual AS (SELECT sku, qty, location FROM stock_availability"
             "  WHERE org_id = %1$lld)"
             " SELECT (SELECT count(*) FROM (SELECT * FROM expected EXCEPT"
             "  SELECT * FROM actual) a) + (SELECT count(*) FROM (SELECT * FROM actual EXCEPT"
             "  SELECT * FROM expected) b)",
             (long long)org);
    return testdb_count(conn, sql);
}

/* Export rows of the organization stored out of SKU order (0 after a rebuild in SKU order,
 * which is what the export's scan reads best). */
static long long rows_out_of_sku_order(PGconn *conn, int64_t org)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM (SELECT sku, lag(sku) OVER (ORDER BY ctid) AS before"
             " FROM stock_availability WHERE org_id = %lld) o WHERE before > sku",
             (long long)org);
    return testdb_count(conn, sql);
}

static long long export_version(PGconn *conn, int64_t org)
{
    char sql[128];
    snprintf(sql, sizeof(sql),
             "SELECT coalesce(max(version), 0) FROM export_versions"
             " WHERE org_id = %lld",
             (long long)org);
    return testdb_count(conn, sql);
}

typedef struct {
    char *text;
    size_t len, cap;
} csv_t;

static void csv_add(csv_t *csv, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void csv_add(csv_t *csv, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    char row[256];
    int n = vsnprintf(row, sizeof(row), format, args);
    va_end(args);
    if (csv->len + (size_t)n + 1 > csv->cap) {
        csv->cap = (csv->len + (size_t)n + 1) * 2;
        csv->text = realloc(csv->text, csv->cap);
        if (csv->text == NULL)
            exit(1);
    }
    memcpy(csv->text + csv->len, row, (size_t)n + 1);
    csv->len += (size_t)n;
}

/*
 * A new organization with the warehouses and locations of the two CSV files and products
 * SKU-00000 .. SKU-<n - 1> without EANs, then the product rows of more, written in csv.
 */
static int64_t catalogue_org(PGconn *conn, const char *slug, const char *warehouses,
                             const char *locations, csv_t *csv, int n, const char *more)
{
    int64_t org = fixture_org(conn, slug);
    fixture_import(conn, org, "warehouses", warehouses);
    fixture_import(conn, org, "locations", locations);
    csv->len = 0;
    csv_add(csv, "sku,name,eans\n");
    for (int i = 0; i < n; i++)
        csv_add(csv, "SKU-%05d,Product %d,\n", i, i);
    csv_add(csv, "%s", more);
    fixture_import(conn, org, "products", csv->text);
    return org;
}

/*
 * A catalogue past the refresh's bulk threshold (5,000 rows), imported kind by kind: each
 * large file takes the whole-organization path and replaces the rows, and must leave what the
 * rules give; small later batches take the row-by-row path. Supplier stock, staging bins,
 * ties in natural bin order, SKUs with only reservations or only a rack, clamping at 0.
 */
static void test_bulk_paths(PGconn *conn)
{
    enum { N = 12000 };
    int64_t org = fixture_org(conn, "bulk");
    fixture_import(conn, org, "warehouses",
                   "code,name,kind\nW1,One,own\nW2,Two,own\nSUP,Supplier,supplier\n");
    fixture_import(conn, org, "locations",
                   "warehouse,code,staging\nW1,A-2,false\nW1,A-10,false\nW1,DOCK,true\n"
                   "W2,B-1,false\nSUP,S-1,false\n");
    csv_t csv = {0};
    csv_add(&csv, "sku,name,eans\n");
    for (int i = 0; i < N; i++)
        csv_add(&csv, "SKU-%05d,Product %d,%013d|%013d|%013d\n", i, i, i, i + N, i);
    fixture_import(conn, org, "products", csv.text);
    CHECK_INT(testdb_count(conn, "SELECT count(*) FROM product_eans"), 2 * N);

    long long version = export_version(conn, org);
    csv.len = 0;
    csv_add(&csv, "sku,warehouse,on_hand\n");
    for (int i = 0; i < N; i++) {
        if (i % 5 == 4)
            continue; /* no stock record at all */
        csv_add(&csv, "SKU-%05d,%s,%d\n", i, i % 5 == 3 ? "SUP" : "W1", i % 17);
        if (i % 3 == 0)
            csv_add(&csv, "SKU-%05d,W2,%d\n", i, i % 11);
    }
    fixture_import(conn, org, "stock", csv.text);
    CHECK_INT(mismatches(conn, org), 0);
    CHECK(export_version(conn, org) > version);
    /* Written by the rebuild, in SKU order (what the export's scan reads best). */
    CHECK_INT(rows_out_of_sku_order(conn, org), 0);

    csv.len = 0;
    csv_add(&csv, "sku,warehouse,location,quantity\n");
    for (int i = 0; i < N; i++) {
        if (i % 7 == 6)
            continue;
        csv_add(&csv, "SKU-%05d,W1,A-10,%d\n", i, i % 4);
        csv_add(&csv, "SKU-%05d,W1,A-2,%d\n", i, i % 3);
        if (i % 2 == 0)
            csv_add(&csv, "SKU-%05d,W1,DOCK,%d\n", i, 50);
        if (i % 9 == 0)
            csv_add(&csv, "SKU-%05d,SUP,S-1,%d\n", i, 99);
        if (i % 13 == 0)
            csv_add(&csv, "SKU-%05d,W2,B-1,%d\n", i, i % 5);
    }
    version = export_version(conn, org);
    fixture_import(conn, org, "location-stock", csv.text);
    CHECK_INT(mismatches(conn, org), 0);
    CHECK(export_version(conn, org) > version);

    csv.len = 0;
    csv_add(&csv, "ref,sku,warehouse,quantity,status\n");
    for (int i = 0; i < N; i += 2)
        csv_add(&csv, "R-%05d,SKU-%05d,%s,%d,%s\n", i, i, i % 6 == 0 ? "SUP" : "W1", i % 19,
                i % 10 == 0 ? "released" : "active");
    fixture_import(conn, org, "reservations", csv.text);
    CHECK_INT(mismatches(conn, org), 0);

    /* The same large file again changes nothing: the version stays. */
    version = export_version(conn, org);
    fixture_import(conn, org, "reservations", csv.text);
    CHECK_INT(export_version(conn, org), version);
    CHECK_INT(mismatches(conn, org), 0);

    /* Small batches into the organization: the row-by-row path. */
    fixture_import(conn, org, "stock", "sku,warehouse,on_hand\nSKU-00004,W2,8\nSKU-00001,W1,0\n");
    fixture_import(conn, org, "location-stock",
                   "sku,warehouse,location,quantity\nSKU-00006,W2,B-1,1\nSKU-00000,W1,A-2,9\n");
    fixture_import(conn, org, "reservations",
                   "ref,sku,warehouse,quantity,status\nR-00002,SKU-00002,W1,1,consumed\n");
    fixture_import(conn, org, "locations", "warehouse,code,staging\nW1,A-2,true\n");
    CHECK_INT(mismatches(conn, org), 0);
    fixture_import(conn, org, "warehouses", "code,name,kind\nW2,Two,supplier\n");
    CHECK_INT(mismatches(conn, org), 0);
    CHECK_INT(testdb_count(conn, "SELECT count(*) FROM stock_availability"
                                 " WHERE sku = 'SKU-00006' AND location IS NULL"),
              1);
    /* A large file into the organization that now has rows: the rebuild again. */
    csv.len = 0;
    csv_add(&csv, "sku,warehouse,on_hand\n");
    for (int i = 0; i < N; i++)
        csv_add(&csv, "SKU-%05d,W1,%d\n", i, i % 23);
    version = export_version(conn, org);
    fixture_import(conn, org, "stock", csv.text);
    CHECK_INT(mismatches(conn, org), 0);
    CHECK(export_version(conn, org) > version);
    free(csv.text);
}

/*
 * An organization's first export rows made by a large file of rack assignments, then of
 * reservations, then of stock (the direct import and the first-rows path of the refresh, with
 * each part alone): what the rules give after each, the rows in SKU order.
 */
static void test_first_rows_each_part(PGconn *conn)
{
    enum { N = 9000 };
    csv_t csv = {0};
    int64_t org = catalogue_org(
        conn, "racks-first", "code,name,kind\nW1,One,own\nW2,Two,own\nSUP,Supplier,supplier\n",
        "warehouse,code,staging\nW1,A-2,false\nW1,A-10,false\nW1,DOCK,true\n"
        "W2,B-1,false\nSUP,S-1,false\n",
        &csv, N, "");

    csv.len = 0;
    csv_add(&csv, "sku,warehouse,location,quantity\n");
    for (int i = 0; i < N; i++) {
        if (i % 7 == 6)
            continue;
        csv_add(&csv, "SKU-%05d,W1,A-10,%d\n", i, i % 4);
        csv_add(&csv, "SKU-%05d,W1,A-2,%d\n", i, i % 3);
        if (i % 2 == 0)
            csv_add(&csv, "SKU-%05d,W1,DOCK,%d\n", i, 50);
        if (i % 9 == 0)
            csv_add(&csv, "SKU-%05d,SUP,S-1,%d\n", i, 99);
    }
    long long version = export_version(conn, org);
    fixture_import(conn, org, "location-stock", csv.text);
    CHECK_INT(mismatches(conn, org), 0);
    CHECK(export_version(conn, org) > version);
    CHECK_INT(rows_out_of_sku_order(conn, org), 0);

    csv.len = 0;
    csv_add(&csv, "ref,sku,warehouse,quantity,status\n");
    for (int i = 0; i < N; i += 2)
        csv_add(&csv, "R-%05d,SKU-%05d,W1,%d,active\n", i, i, i % 19);
    fixture_import(conn, org, "reservations", csv.text);
    CHECK_INT(mismatches(conn, org), 0);

    csv.len = 0;
    csv_add(&csv, "sku,warehouse,on_hand\n");
    for (int i = 0; i < N; i++)
        if (i % 5 != 4)
            csv_add(&csv, "SKU-%05d,%s,%d\n", i, i % 5 == 3 ? "SUP" : "W1", i % 17);
    fixture_import(conn, org, "stock", csv.text);
    CHECK_INT(mismatches(conn, org), 0);
    free(csv.text);
}

/*
 * A warehouse holding nearly every SKU's stock and racks becomes a supplier: every SKU is
 * affected, so the refresh covers the whole organization (wl_refresh_availability_from, all
 * parts), and the SKUs that nothing includes any more must leave the export though no part
 * names them (only their export rows do); then it is own again and they come back.
 */
static void test_whole_export_leaves(PGconn *conn)
{
    enum { N = 6000 };
    csv_t csv = {0};
    int64_t org = catalogue_org(conn, "whole-leaves", "code,name,kind\nW1,One,own\nW2,Two,own\n",
                                "warehouse,code,staging\nW1,A-1,false\nW1,A-2,false\n"
                                "W2,B-1,false\n",
                                &csv, N, "");
    csv.len = 0;
    csv_add(&csv, "sku,warehouse,on_hand\n");
    for (int i = 0; i < N; i++) {
        csv_add(&csv, "SKU-%05d,W1,%d\n", i, 1 + i % 9);
        if (i % 1000 == 0)
            csv_add(&csv, "SKU-%05d,W2,%d\n", i, 7);
    }
    fixture_import(conn, org, "stock", csv.text);
    csv.len = 0;
    csv_add(&csv, "sku,warehouse,location,quantity\n");
    for (int i = 0; i < N; i++)
        csv_add(&csv, "SKU-%05d,W1,%s,%d\n", i, i % 2 ? "A-1" : "A-2", 1 + i % 4);
    fixture_import(conn, org, "location-stock", csv.text);
    free(csv.text);
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM stock_availability WHERE org_id = %lld",
             (long long)org);
    CHECK_INT(mismatches(conn, org), 0);
    CHECK_INT(testdb_count(conn, sql), N);

    long long version = export_version(conn, org);
    fixture_import(conn, org, "warehouses", "code,name,kind\nW1,One,supplier\n");
    CHECK_INT(mismatches(conn, org), 0);
    CHECK_INT(testdb_count(conn, sql), N / 1000); /* those with stock in W2, and no rack */
    CHECK(export_version(conn, org) > version);

    fixture_import(conn, org, "warehouses", "code,name,kind\nW1,One,own\n");
    CHECK_INT(mismatches(conn, org), 0);
    CHECK_INT(testdb_count(conn, sql), N);
}

/*
 * Imports csv as kind into org and checks what the refresh by key
 * (wl__refresh_availability_skus) left: the export equals the rules' recomputation, and the
 * write recorded one export_changes row for each export row it changed, none for the others,
 * all under one version. Returns the number of export rows the write changed.
 */
static long long checked_write(PGconn *conn, int64_t org, const char *kind, const char *csv)
{
    char sql[1024];
    long long version = export_version(conn, org);
    testdb_exec(conn, "DROP TABLE IF EXISTS export_before");
    snprintf(sql, sizeof(sql),
             "CREATE TEMP TABLE export_before AS SELECT sku, qty, location"
             " FROM stock_availability WHERE org_id = %lld",
             (long long)org);
    testdb_exec(conn, sql);
    fixture_import(conn, org, kind, csv);
    CHECK_INT(mismatches(conn, org), 0);
    snprintf(sql, sizeof(sql),
             "WITH after AS (SELECT sku, qty, location FROM stock_availability"
             "  WHERE org_id = %1$lld),"
             " changed AS (SELECT sku FROM (SELECT * FROM export_before EXCEPT"
             "  SELECT * FROM after) a UNION SELECT sku FROM (SELECT * FROM after EXCEPT"
             "  SELECT * FROM export_before) b),"
             " recorded AS (SELECT sku FROM export_changes WHERE org_id = %1$lld"
             "  AND version > %2$lld)"
             " SELECT (SELECT count(*) FROM (SELECT sku FROM changed EXCEPT"
             "  SELECT sku FROM recorded) m) + (SELECT count(*) FROM (SELECT sku FROM recorded"
             "  EXCEPT SELECT sku FROM changed) e)"
             " + (SELECT count(*) - count(DISTINCT sku) FROM recorded)"
             " + (SELECT count(DISTINCT version) FILTER (WHERE version > %2$lld) > 1"
             "  FROM export_changes WHERE org_id = %1$lld)::int",
             (long long)org, version);
    CHECK_INT(testdb_count(conn, sql), 0);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM export_changes WHERE org_id = %lld AND version > %lld",
             (long long)org, version);
    long long changed = testdb_count(conn, sql);
    /* The version moves exactly when an export row changed. */
    CHECK(changed > 0 ? export_version(conn, org) > version : export_version(conn, org) == version);
    return changed;
}

static const char *location_of(PGconn *conn, int64_t org, const char *sku, char *buf, size_t size)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT coalesce(location, '(null)') FROM stock_availability"
             " WHERE org_id = %lld AND sku = '%s'",
             (long long)org, sku);
    return testdb_value(conn, sql, buf, size);
}

/*
 * Small writes into an organization with more export rows than the refresh's bulk threshold:
 * each recomputes only the SKUs its bins, warehouses or rows hold (wl__refresh_availability_skus)
 * and must leave what a recomputation from scratch gives, with the change log naming exactly
 * the rows that changed. A bin's staging flag (a SKU's primary rack moves to its next bin, and
 * back), a warehouse own <-> supplier, and writes that change no export row (a new bin, a
 * renamed warehouse, a new one, a flag set to what it was): no refresh, no version.
 */
static void test_small_writes(PGconn *conn)
{
    enum { N = 7000 };
    csv_t csv = {0};
    int64_t org = catalogue_org(conn, "small-writes",
                                "code,name,kind\nW1,One,own\nW2,Two,own\nW3,Three,own\n"
                                "SUP,Supplier,supplier\n",
                                "warehouse,code,staging\nW1,A-2,false\nW1,A-10,false\n"
                                "W1,DOCK,true\nW2,B-1,false\nW3,C-1,false\nSUP,S-1,false\n"
                                "W1,\"Q,\"\"{\\} 1\",false\n",
                                &csv, N, "SKU-X,Racked only,\n");
    csv.len = 0;
    csv_add(&csv, "sku,warehouse,on_hand\n");
    for (int i = 0; i < N; i++)
        csv_add(&csv, "SKU-%05d,%s,%d\n", i, i % 4 == 3 ? "SUP" : "W1", 1 + i % 17);
    /* W3 holds a few SKUs only: its kind flips them alone. */
    for (int i = 0; i < N; i += 1000)
        csv_add(&csv, "SKU-%05d,W3,%d\n", i, 5);
    fixture_import(conn, org, "stock", csv.text);
    csv.len = 0;
    csv_add(&csv, "sku,warehouse,location,quantity\n");
    for (int i = 0; i < N; i++) {
        csv_add(&csv, "SKU-%05d,W1,A-2,%d\n", i, i % 3);
        if (i % 50 == 0)
            csv_add(&csv, "SKU-%05d,W1,A-10,%d\n", i, 3);
    }
    csv_add(&csv, "SKU-00007,W2,B-1,1\nSKU-00007,W1,DOCK,90\nSKU-01000,W3,C-1,9\n"
                  "SKU-X,W3,C-1,0\nSKU-00009,W1,\"Q,\"\"{\\} 1\",40\n");
    fixture_import(conn, org, "location-stock", csv.text);
    csv.len = 0;
    csv_add(&csv, "ref,sku,warehouse,quantity,status\n");
    for (int i = 0; i < N; i += 500)
        csv_add(&csv, "R-%05d,SKU-%05d,%s,%d,active\n", i, i, i % 1000 ? "W1" : "W3", 2);
    fixture_import(conn, org, "reservations", csv.text);
    free(csv.text);
    CHECK_INT(mismatches(conn, org), 0);

    char location[64];
    CHECK_STR(location_of(conn, org, "SKU-00050", location, sizeof(location)), "A-10");
    /* A-10 becomes staging: the primary rack of its SKUs but SKU-01000 (C-1 holds more)
     * moves to A-2; and back. */
    CHECK_INT(checked_write(conn, org, "locations", "warehouse,code,staging\nW1,A-10,true\n"),
              N / 50 - 1);
    CHECK_STR(location_of(conn, org, "SKU-00050", location, sizeof(location)), "A-2");
    CHECK_INT(checked_write(conn, org, "locations", "warehouse,code,staging\nW1,A-10,false\n"),
              N / 50 - 1);
    CHECK_STR(location_of(conn, org, "SKU-00050", location, sizeof(location)), "A-10");
    /* SKU-00007: A-2 (1) beats B-1 (1) in natural bin order; DOCK (90) once it is a rack. */
    CHECK_STR(location_of(conn, org, "SKU-00007", location, sizeof(location)), "A-2");
    CHECK_INT(checked_write(conn, org, "locations", "warehouse,code,staging\nW1,DOCK,false\n"), 1);
    CHECK_STR(location_of(conn, org, "SKU-00007", location, sizeof(location)), "DOCK");
    CHECK_INT(checked_write(conn, org, "locations", "warehouse,code,staging\nW1,DOCK,true\n"), 1);
    CHECK_STR(location_of(conn, org, "SKU-00007", location, sizeof(location)), "A-2");
    /* C-1 staging: SKU-X, racked there only, leaves the export; SKU-01000 moves to A-10. */
    CHECK_INT(checked_write(conn, org, "locations", "warehouse,code,staging\nW3,C-1,true\n"), 2);
    CHECK_STR(location_of(conn, org, "SKU-01000", location, sizeof(location)), "A-10");
    CHECK_STR(location_of(conn, org, "SKU-X", location, sizeof(location)), "");
    CHECK_INT(checked_write(conn, org, "locations", "warehouse,code,staging\nW3,C-1,false\n"), 2);
    CHECK_STR(location_of(conn, org, "SKU-X", location, sizeof(location)), "C-1");
    /* A bin code that array literals quote (the changed bins reach the SKU query as arrays). */
    CHECK_STR(location_of(conn, org, "SKU-00009", location, sizeof(location)), "Q,\"{\\} 1");
    CHECK_INT(
        checked_write(conn, org, "locations", "warehouse,code,staging\nW1,\"Q,\"\"{\\} 1\",true\n"),
        1);
    CHECK_STR(location_of(conn, org, "SKU-00009", location, sizeof(location)), "A-2");
    /* Nothing an export row shows: a new bin, a bin's flag as it was. */
    CHECK_INT(checked_write(conn, org, "locations",
                            "warehouse,code,staging\nW1,A-3,false\nW1,A-10,false\n"),
              0);

    /* W3 becomes a supplier: its 7 stocked SKUs lose its stock and reservations, SKU-01000
     * its rack C-1, SKU-X its only rack. */
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT qty FROM stock_availability WHERE org_id = %lld AND sku = 'SKU-01000'",
             (long long)org);
    CHECK_INT(testdb_count(conn, sql), 15 + 5 - 2);
    CHECK_STR(location_of(conn, org, "SKU-01000", location, sizeof(location)), "C-1");
    CHECK_INT(checked_write(conn, org, "warehouses", "code,name,kind\nW3,Three,supplier\n"), 8);
    CHECK_INT(testdb_count(conn, sql), 15);
    CHECK_STR(location_of(conn, org, "SKU-01000", location, sizeof(location)), "A-10");
    CHECK_STR(location_of(conn, org, "SKU-X", location, sizeof(location)), "");
    CHECK_INT(checked_write(conn, org, "warehouses", "code,name,kind\nW3,Three,own\n"), 8);
    CHECK_INT(testdb_count(conn, sql), 15 + 5 - 2);
    CHECK_STR(location_of(conn, org, "SKU-X", location, sizeof(location)), "C-1");
    /* Renamed, and a new warehouse: no export row changes. */
    CHECK_INT(checked_write(conn, org, "warehouses",
                            "code,name,kind\nW1,First,own\nW2,Second,own\nW9,New,own\n"),
              0);
    /* The small writes of the other kinds. */
    CHECK_INT(checked_write(conn, org, "stock", "sku,warehouse,on_hand\nSKU-00002,W1,40\n"), 1);
    CHECK_INT(checked_write(conn, org, "location-stock",
                            "sku,warehouse,location,quantity\nSKU-00003,W2,B-1,5\n"),
              1);
    CHECK_INT(checked_write(conn, org, "reservations",
                            "ref,sku,warehouse,quantity,status\nR-00500,SKU-00500,W1,2,released\n"),
              1);
}

int main(void)
{
    const char *conninfo = testdb_create("integration_availability");
    PGconn *a = testdb_connect(conninfo);
    PGconn *b = testdb_connect(conninfo);
    int64_t org = fixture_org(a, "avail");
    fixture_import(a, org, "warehouses", "code,name,kind\nW,Main,own\n");
    fixture_import(a, org, "products", "sku,name,eans\nP,Product,\n");
    fixture_import(a, org, "stock", "sku,warehouse,on_hand\nP,W,10\n");
    char sql[512];

    /* A raises stock and refreshes, but has not committed yet. */
    testdb_exec(a, "BEGIN");
    snprintf(sql, sizeof(sql),
             "UPDATE stock SET on_hand = 100 WHERE org_id = %lld AND sku = 'P';"
             "SELECT wl_refresh_availability(%lld, ARRAY['P'])",
             (long long)org, (long long)org);
    testdb_exec(a, sql);

    /* B reserves 5 and refreshes concurrently: it must wait for A and then see A's stock. */
    snprintf(sql, sizeof(sql),
             "BEGIN;"
             "INSERT INTO reservations (org_id, ref, sku, warehouse, quantity, status)"
             " VALUES (%lld, 'R1', 'P', 'W', 5, 'active');"
             "SELECT wl_refresh_availability(%lld, ARRAY['P']);"
             "COMMIT",
             (long long)org, (long long)org);
    CHECK(PQsendQuery(b, sql) == 1);
    /* A commits only once B waits for its lock, however long B takes to get there. */
    char waiting[160];
    snprintf(waiting, sizeof(waiting),
             "SELECT count(*) FROM pg_stat_activity WHERE pid = %d AND wait_event_type = 'Lock'",
             PQbackendPID(b));
    PGconn *watcher = testdb_connect(conninfo);
    int polls = 0;
    while (testdb_count(watcher, waiting) != 1 && polls++ < 6000)
        usleep(10 * 1000);
    CHECK(polls <= 6000);
    PQfinish(watcher);
    testdb_exec(a, "COMMIT");
    PGresult *res;
    while ((res = PQgetResult(b)) != NULL) {
        ExecStatusType status = PQresultStatus(res);
        CHECK(status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK);
        PQclear(res);
    }
    snprintf(sql, sizeof(sql),
             "SELECT qty FROM stock_availability WHERE org_id = %lld AND sku = 'P'",
             (long long)org);
    CHECK_INT(testdb_count(a, sql), 95);
    test_bulk_paths(a);
    test_first_rows_each_part(a);
    test_whole_export_leaves(a);
    test_small_writes(a);
    PQfinish(a);
    PQfinish(b);
    return test_exit();
}
