/*
 * CSV imports against a real PostgreSQL: every kind imports good data,
 * rows upsert by their natural key, a file with any bad row writes nothing and names every
 * bad line, codes are case-sensitive, and stock_availability follows each import.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "store/import.h"
#include "store/inventory.h"
#include "test.h"
#include "testdb.h"

#define MAX_PROBLEMS 64
#define MAX_LINES    16

typedef struct {
    size_t line;
    char column[64];
    char description[256];
} problem_t;

typedef struct {
    problem_t items[MAX_PROBLEMS];
    size_t count; /* may exceed MAX_PROBLEMS; only the first are kept */
} problems_t;

static PGconn *conn;

static void collect(size_t line, const char *column, const char *description, void *data)
{
    problems_t *problems = data;
    if (problems->count < MAX_PROBLEMS) {
        problem_t *p = &problems->items[problems->count];
        p->line = line;
        snprintf(p->column, sizeof(p->column), "%s", column);
        snprintf(p->description, sizeof(p->description), "%s", description);
    }
    problems->count++;
}

static void name_row(size_t label, char *buf, size_t size, void *data)
{
    (void)data;
    snprintf(buf, size, "row %zu", label);
}

/* Imports len bytes of CSV text; problems (may be NULL) receives what was reported. */
static int import_bytes(int64_t org, const char *kind, const char *csv, size_t len,
                        problems_t *problems, size_t *rows)
{
    problems_t ignored;
    if (problems == NULL)
        problems = &ignored;
    memset(problems, 0, sizeof(*problems));
    /* fmemopen refuses a zero-sized buffer on some C libraries; /dev/null is an empty file too. */
    FILE *in = len > 0 ? fmemopen((void *)csv, len, "rb") : fopen("/dev/null", "rb");
    if (in == NULL) {
        FAIL("cannot open the CSV text");
        return -1;
    }
    wl_error_t err;
    wl_error_init(&err);
    size_t imported = 0;
    int rc = wl_import_csv(conn, org, kind, in, collect, problems, &imported, &err);
    fclose(in);
    if (rows != NULL)
        *rows = imported;
    return rc;
}

static int import_text(int64_t org, const char *kind, const char *csv, problems_t *problems,
                       size_t *rows)
{
    return import_bytes(org, kind, csv, strlen(csv), problems, rows);
}

static void print_problems(const problems_t *problems)
{
    for (size_t i = 0; i < problems->count && i < MAX_PROBLEMS; i++)
        fprintf(stderr, "    line %zu: %s: %s\n", problems->items[i].line,
                problems->items[i].column, problems->items[i].description);
}

/* Imports text that must succeed with the given number of rows. */
static void import_ok(int64_t org, const char *kind, const char *csv, size_t expected_rows)
{
    problems_t problems;
    size_t rows = 0;
    int rc = import_text(org, kind, csv, &problems, &rows);
    CHECK_INT(rc, 0);
    CHECK_INT(problems.count, 0);
    CHECK_INT(rows, expected_rows);
    if (rc != 0 || problems.count != 0) {
        fprintf(stderr, "  import of %s failed:\n", kind);
        print_problems(&problems);
    }
}

/* One text value of a query with a single text parameter (the org id is $1). */
static const char *query_value(int64_t org, const char *sql, char *buf, size_t size)
{
    char org_text[24];
    snprintf(org_text, sizeof(org_text), "%" PRId64, org);
    const char *params[] = {org_text};
    PGresult *res = PQexecParams(conn, sql, 1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "SQL failed: %s\n%s", sql, PQresultErrorMessage(res));
        exit(1);
    }
    if (PQntuples(res) == 0)
        snprintf(buf, size, "(no row)");
    else if (PQgetisnull(res, 0, 0))
        snprintf(buf, size, "(null)");
    else
        snprintf(buf, size, "%s", PQgetvalue(res, 0, 0));
    PQclear(res);
    return buf;
}

static long long query_count(int64_t org, const char *sql)
{
    char buf[64];
    return strtoll(query_value(org, sql, buf, sizeof(buf)), NULL, 10);
}

/* "qty@location", "qty@(null)" or "(no row)": the export row of one SKU. */
static const char *availability(int64_t org, const char *sku, char *buf, size_t size)
{
    char org_text[24];
    snprintf(org_text, sizeof(org_text), "%" PRId64, org);
    const char *params[] = {org_text, sku};
    PGresult *res = PQexecParams(conn,
                                 "SELECT qty, location FROM stock_availability"
                                 " WHERE org_id = $1 AND sku = $2",
                                 2, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "availability: %s", PQresultErrorMessage(res));
        exit(1);
    }
    if (PQntuples(res) == 0)
        snprintf(buf, size, "(no row)");
    else
        snprintf(buf, size, "%s@%s", PQgetvalue(res, 0, 0),
                 PQgetisnull(res, 0, 1) ? "(null)" : PQgetvalue(res, 0, 1));
    PQclear(res);
    return buf;
}

#define CHECK_AVAILABILITY(org, sku, expected)                                                     \
    do {                                                                                           \
        char avail_[128];                                                                          \
        CHECK_STR(availability(org, sku, avail_, sizeof(avail_)), expected);                       \
    } while (0)

/* A digest of every inventory table of every organization: equal digests, equal data. */
static void inventory_digest(char digest[33])
{
    testdb_value(conn,
                 "SELECT md5(concat_ws('#',"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM warehouses t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM locations t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM products t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM product_eans t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM stock t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM location_stock t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM reservations t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM stock_availability t)))",
                 digest, 33);
}

static long long total_rows(void)
{
    return testdb_count(conn, "SELECT (SELECT count(*) FROM warehouses)"
                              " + (SELECT count(*) FROM locations)"
                              " + (SELECT count(*) FROM products)"
                              " + (SELECT count(*) FROM product_eans)"
                              " + (SELECT count(*) FROM stock)"
                              " + (SELECT count(*) FROM location_stock)"
                              " + (SELECT count(*) FROM reservations)"
                              " + (SELECT count(*) FROM stock_availability)");
}

/* A SKU of 64 two-byte characters (128 bytes): length counts characters. */
static char long_sku[2 * 64 + 1];
/* Exactly 200 characters, the longest name allowed. */
static char long_name[200 + 1];

static void make_long_values(void)
{
    for (size_t i = 0; i < 64; i++)
        memcpy(long_sku + 2 * i, "\xC3\xA9", 2); /* é */
    long_sku[128] = '\0';
    memset(long_name, 'n', 200);
    long_name[200] = '\0';
}

/*
 * The base inventory every section starts from. Expected export rows:
 * SKU-1 12@A-2 (W1 10 + W2 5 own, SUP ignored; active own reservation R1 3; tie
 * at 4, natural order picks A-2; DOCK is staging), SKU-2 20@(null) (its only rack is at the
 * supplier), SKU-3 0@B-1 (no stock, a rack holding 0 still counts), sku-1 7@(null), and no
 * row for the long SKU (nothing in stock, no rack).
 */
static void load_base_until(int64_t org, const char *stop)
{
    if (strcmp(stop, "warehouses") == 0)
        return;
    import_ok(org, "warehouses",
              "\xEF\xBB\xBF"
              "code,name,kind\r\n"
              "W1,\"Main, north\",own\r\n"
              "W2,\"The \"\"big\"\" one\",own\r\n"
              "SUP,Supplier,supplier\r\n",
              3);
    if (strcmp(stop, "locations") == 0)
        return;
    import_ok(org, "locations",
              "warehouse,code,staging\n"
              "W1,A-1,false\nW1,A-2,false\nW1,A-10,false\nW1,DOCK,true\nW1,a-1,false\n"
              "W2,B-1,false\nSUP,S-1,false\n",
              7);
    if (strcmp(stop, "products") == 0)
        return;
    char products[1024];
    snprintf(products, sizeof(products),
             "sku,name,eans\n"
             "SKU-1,\"Drill\n18V\",4006381333931|4006381333948\n"
             "sku-1,lower case,\n"
             "SKU-2,\"Bits, 10 pcs\",4006381333931\n"
             "SKU-3,Gloves,\"\"\n"
             "%s,%s,5901234123457\n",
             long_sku, long_name);
    import_ok(org, "products", products, 5);
    if (strcmp(stop, "stock") == 0)
        return;
    import_ok(org, "stock",
              "sku,warehouse,on_hand\n"
              "SKU-1,W1,10\nSKU-1,W2,5\nSKU-1,SUP,100\nSKU-2,W1,30\nsku-1,W1,7\n",
              5);
    if (strcmp(stop, "location-stock") == 0)
        return;
    import_ok(org, "location-stock",
              "sku,warehouse,location,quantity\n"
              "SKU-1,W1,A-10,4\nSKU-1,W1,A-2,4\nSKU-1,W1,DOCK,50\nSKU-2,SUP,S-1,9\n"
              "SKU-3,W2,B-1,0\n",
              5);
    if (strcmp(stop, "reservations") == 0)
        return;
    import_ok(org, "reservations",
              "ref,sku,warehouse,quantity,status\n"
              "R1,SKU-1,W1,3,active\nR2,SKU-1,W2,1,released\nR3,SKU-1,SUP,50,active\n"
              "R4,SKU-2,W1,10,active\n",
              4);
}

static void load_base(int64_t org)
{
    load_base_until(org, "");
}

static void test_good_data(void)
{
    int64_t org = fixture_org(conn, "good");
    load_base(org);
    char buf[512];

    /* Quoting: commas, doubled quotes, CRLF and the BOM are gone from the values. */
    CHECK_INT(query_count(org, "SELECT count(*) FROM warehouses WHERE org_id = $1"), 3);
    CHECK_STR(query_value(org, "SELECT name FROM warehouses WHERE org_id = $1 AND code = 'W1'", buf,
                          sizeof(buf)),
              "Main, north");
    CHECK_STR(query_value(org, "SELECT name FROM warehouses WHERE org_id = $1 AND code = 'W2'", buf,
                          sizeof(buf)),
              "The \"big\" one");
    CHECK_STR(query_value(org, "SELECT kind FROM warehouses WHERE org_id = $1 AND code = 'SUP'",
                          buf, sizeof(buf)),
              "supplier");
    CHECK_STR(query_value(org,
                          "SELECT string_agg(code || ':' || staging, ' ' ORDER BY code)"
                          " FROM locations WHERE org_id = $1 AND warehouse = 'W1'",
                          buf, sizeof(buf)),
              "A-1:false A-10:false A-2:false DOCK:true a-1:false");
    CHECK_INT(query_count(org, "SELECT count(*) FROM locations WHERE org_id = $1"
                               " AND length(sort_key) > 0"),
              7);
    /* The sort keys order bins naturally: A-2 before A-10. */
    CHECK_STR(query_value(org,
                          "SELECT string_agg(code, ' ' ORDER BY sort_key) FROM locations"
                          " WHERE org_id = $1 AND warehouse = 'W1' AND code LIKE 'A-%'",
                          buf, sizeof(buf)),
              "A-1 A-2 A-10");

    /* A quoted line break stays in the name; an EAN may be shared; empty EAN lists are fine. */
    CHECK_STR(query_value(org, "SELECT name FROM products WHERE org_id = $1 AND sku = 'SKU-1'", buf,
                          sizeof(buf)),
              "Drill\n18V");
    CHECK_STR(query_value(org, "SELECT name FROM products WHERE org_id = $1 AND sku = 'SKU-2'", buf,
                          sizeof(buf)),
              "Bits, 10 pcs");
    CHECK_STR(query_value(org,
                          "SELECT string_agg(sku, ' ' ORDER BY sku) FROM product_eans"
                          " WHERE org_id = $1 AND ean = '4006381333931'",
                          buf, sizeof(buf)),
              "SKU-1 SKU-2");
    CHECK_STR(query_value(org,
                          "SELECT string_agg(ean, ' ' ORDER BY ean) FROM product_eans"
                          " WHERE org_id = $1 AND sku = 'SKU-1'",
                          buf, sizeof(buf)),
              "4006381333931 4006381333948");
    CHECK_INT(query_count(org, "SELECT count(*) FROM product_eans WHERE org_id = $1"
                               " AND sku IN ('sku-1', 'SKU-3')"),
              0);
    /* Length limits count characters, not bytes. */
    CHECK_INT(query_count(org, "SELECT count(*) FROM products WHERE org_id = $1"
                               " AND length(sku) = 64 AND octet_length(sku) = 128"
                               " AND length(name) = 200"),
              1);

    /* SKUs and bin codes are case-sensitive. */
    CHECK_INT(query_count(org, "SELECT count(*) FROM products WHERE org_id = $1"
                               " AND lower(sku) = 'sku-1'"),
              2);
    CHECK_STR(query_value(org, "SELECT on_hand FROM stock WHERE org_id = $1 AND sku = 'sku-1'", buf,
                          sizeof(buf)),
              "7");
    CHECK_STR(query_value(org,
                          "SELECT on_hand FROM stock WHERE org_id = $1 AND sku = 'SKU-1'"
                          " AND warehouse = 'W2'",
                          buf, sizeof(buf)),
              "5");
    CHECK_INT(query_count(org, "SELECT count(*) FROM stock WHERE org_id = $1"), 5);
    CHECK_STR(query_value(org,
                          "SELECT quantity FROM location_stock WHERE org_id = $1"
                          " AND sku = 'SKU-1' AND location = 'DOCK'",
                          buf, sizeof(buf)),
              "50");
    CHECK_INT(query_count(org, "SELECT count(*) FROM location_stock WHERE org_id = $1"), 5);
    CHECK_STR(query_value(org,
                          "SELECT sku || ' ' || warehouse || ' ' || quantity || ' ' || status"
                          " FROM reservations WHERE org_id = $1 AND ref = 'R2'",
                          buf, sizeof(buf)),
              "SKU-1 W2 1 released");
    CHECK_INT(query_count(org, "SELECT count(*) FROM reservations WHERE org_id = $1"), 4);

    CHECK_AVAILABILITY(org, "SKU-1", "12@A-2");
    CHECK_AVAILABILITY(org, "SKU-2", "20@(null)");
    CHECK_AVAILABILITY(org, "SKU-3", "0@B-1");
    CHECK_AVAILABILITY(org, "sku-1", "7@(null)");
    CHECK_AVAILABILITY(org, long_sku, "(no row)");
    CHECK_INT(query_count(org, "SELECT count(*) FROM stock_availability WHERE org_id = $1"), 4);

    /* Another organization has its own namespace: the same codes are other rows. */
    int64_t other = fixture_org(conn, "good-other");
    import_ok(other, "warehouses", "code,name,kind\nW1,Elsewhere,supplier\n", 1);
    CHECK_STR(query_value(org, "SELECT name FROM warehouses WHERE org_id = $1 AND code = 'W1'", buf,
                          sizeof(buf)),
              "Main, north");
    CHECK_STR(query_value(other,
                          "SELECT name || ' ' || kind FROM warehouses WHERE org_id = $1"
                          " AND code = 'W1'",
                          buf, sizeof(buf)),
              "Elsewhere supplier");
    /* A header-only file imports nothing and succeeds. */
    import_ok(other, "products", "sku,name,eans\n", 0);
    /* A last line without a line end, blank lines and an EAN listed twice are fine. */
    import_ok(other, "products", "sku,name,eans\n\nP1,One,\n\nP2,Two,123|123", 2);
    CHECK_STR(query_value(other,
                          "SELECT string_agg(ean, ' ') FROM product_eans"
                          " WHERE org_id = $1 AND sku = 'P2'",
                          buf, sizeof(buf)),
              "123");
}

/* Each import changes one row of the base; the export follows in the same import. */
static void test_upserts(void)
{
    int64_t org = fixture_org(conn, "upsert");
    load_base(org);
    char buf[512];
    long long rows_before = total_rows();

    /* W2 becomes a supplier: its stock (5) no longer counts, SKU-3's only rack leaves the export.
     */
    import_ok(org, "warehouses", "code,name,kind\nW2,Second,supplier\n", 1);
    CHECK_STR(query_value(org,
                          "SELECT name || ' ' || kind FROM warehouses WHERE org_id = $1"
                          " AND code = 'W2'",
                          buf, sizeof(buf)),
              "Second supplier");
    CHECK_AVAILABILITY(org, "SKU-1", "7@A-2");
    CHECK_AVAILABILITY(org, "SKU-3", "(no row)");
    CHECK_AVAILABILITY(org, "SKU-2", "20@(null)");

    /* A-2 becomes staging: SKU-1's rack is now A-10. */
    import_ok(org, "locations", "warehouse,code,staging\nW1,A-2,true\n", 1);
    CHECK_STR(query_value(org,
                          "SELECT staging FROM locations WHERE org_id = $1 AND warehouse = 'W1'"
                          " AND code = 'A-2'",
                          buf, sizeof(buf)),
              "t");
    CHECK_AVAILABILITY(org, "SKU-1", "7@A-10");

    /* Names and EAN lists are replaced; an EAN kept across the change stays. */
    import_ok(org, "products",
              "sku,name,eans\nSKU-1,Drill 2,5000000000001\n"
              "SKU-2,Bits,4006381333931|5000000000002\nSKU-3,Gloves,\n",
              3);
    CHECK_STR(query_value(org, "SELECT name FROM products WHERE org_id = $1 AND sku = 'SKU-1'", buf,
                          sizeof(buf)),
              "Drill 2");
    CHECK_STR(query_value(org,
                          "SELECT string_agg(ean, ' ' ORDER BY ean) FROM product_eans"
                          " WHERE org_id = $1 AND sku = 'SKU-1'",
                          buf, sizeof(buf)),
              "5000000000001");
    CHECK_STR(query_value(org,
                          "SELECT string_agg(ean, ' ' ORDER BY ean) FROM product_eans"
                          " WHERE org_id = $1 AND sku = 'SKU-2'",
                          buf, sizeof(buf)),
              "4006381333931 5000000000002");
    CHECK_INT(query_count(org, "SELECT count(*) FROM products WHERE org_id = $1"), 5);
    /* A product left out of the file keeps its EANs. */
    CHECK_INT(query_count(org, "SELECT count(*) FROM product_eans WHERE org_id = $1"
                               " AND sku <> ALL (ARRAY['SKU-1', 'SKU-2'])"),
              1);

    import_ok(org, "stock", "sku,warehouse,on_hand\nSKU-1,W1,20\n", 1);
    CHECK_STR(query_value(org,
                          "SELECT on_hand FROM stock WHERE org_id = $1 AND sku = 'SKU-1'"
                          " AND warehouse = 'W1'",
                          buf, sizeof(buf)),
              "20");
    CHECK_AVAILABILITY(org, "SKU-1", "17@A-10");

    import_ok(org, "location-stock",
              "sku,warehouse,location,quantity\nSKU-1,W1,A-10,1\nSKU-1,W1,A-1,2\n", 2);
    CHECK_STR(query_value(org,
                          "SELECT string_agg(location || '=' || quantity, ' ' ORDER BY location)"
                          " FROM location_stock WHERE org_id = $1 AND sku = 'SKU-1'",
                          buf, sizeof(buf)),
              "A-1=2 A-10=1 A-2=4 DOCK=50");
    CHECK_AVAILABILITY(org, "SKU-1", "17@A-1");

    /* R1 moves from SKU-1 to SKU-2: both SKUs change. */
    import_ok(org, "reservations", "ref,sku,warehouse,quantity,status\nR1,SKU-2,W1,3,active\n", 1);
    CHECK_AVAILABILITY(org, "SKU-1", "20@A-1");
    CHECK_AVAILABILITY(org, "SKU-2", "17@(null)");
    import_ok(org, "reservations", "ref,sku,warehouse,quantity,status\nR4,SKU-2,W1,10,released\n",
              1);
    CHECK_STR(query_value(org, "SELECT status FROM reservations WHERE org_id = $1 AND ref = 'R4'",
                          buf, sizeof(buf)),
              "released");
    CHECK_AVAILABILITY(org, "SKU-2", "27@(null)");
    import_ok(org, "reservations", "ref,sku,warehouse,quantity,status\nR4,SKU-2,W1,10,consumed\n",
              1);
    CHECK_AVAILABILITY(org, "SKU-2", "27@(null)");

    /* W2 back to own: SKU-1 counts W2's 5 again and SKU-3 returns. */
    import_ok(org, "warehouses", "code,name,kind\nW2,Second,own\n", 1);
    CHECK_AVAILABILITY(org, "SKU-1", "25@A-1");
    CHECK_AVAILABILITY(org, "SKU-3", "0@B-1");

    /* Updates add no rows: one new location-stock row, SKU-3's export row came back. */
    CHECK_INT(total_rows() - rows_before, 1);
}

typedef struct {
    const char *what;
    const char *kind;
    const char *csv;
    size_t csv_len;          /* 0: strlen(csv) */
    size_t lines[MAX_LINES]; /* every bad line, ascending, 0-terminated */
    const char *description; /* a part of the first problem's description, or NULL */
} bad_case_t;

#define S65 "SSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSSS"
#define N201                                                                                       \
    "NNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN"     \
    "NNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN"     \
    "NNNNNNNNNNNNNNNNNNNNNNNNN"

#define NUL_CSV "code,name,kind\nW9,Nine,own\nW\0,Zero,own\n"

/* Each file mixes good rows (new ones and updates of the base) with the bad ones. */
static const bad_case_t bad_cases[] = {
    {"wrong header", "warehouses", "code,name\nW9,Nine,own\n", 0, {1}, "header must be"},
    {"header in wrong order", "warehouses", "name,code,kind\nNine,W9,own\n", 0, {1}, NULL},
    {"header with other case", "stock", "SKU,warehouse,on_hand\nSKU-1,W1,1\n", 0, {1}, NULL},
    {"header of another kind", "locations", "code,name,kind\nW1,Main,own\n", 0, {1}, NULL},
    {"field count",
     "warehouses",
     "code,name,kind\nW9,Nine,own\nW8,Eight\nW7,Seven,own,extra\nW1,Renamed,own\n",
     0,
     {3, 4},
     "fields"},
    {"trailing comma", "stock", "sku,warehouse,on_hand\nSKU-1,W1,1,\nSKU-2,W1,2\n", 0, {2}, NULL},
    {"empty code", "warehouses", "code,name,kind\nW9,Nine,own\n,Empty,own\n", 0, {3}, NULL},
    {"leading space",
     "warehouses",
     "code,name,kind\nW9,Nine,own\n W8,Eight,own\n",
     0,
     {3},
     "whitespace"},
    {"trailing space", "products", "sku,name,eans\nP9,Nine,\nP8 ,Eight,\n", 0, {3}, "whitespace"},
    {"no-break space at the end",
     "products",
     "sku,name,eans\nP8\xC2\xA0,Eight,\nP9,Nine,\n",
     0,
     {2},
     NULL},
    {"code of 65 characters", "products", "sku,name,eans\nP9,Nine,\n" S65 ",Long,\n", 0, {3}, "64"},
    {"control character in code",
     "warehouses",
     "code,name,kind\nW\x01,Nine,own\nW9,Nine,own\n",
     0,
     {2},
     "control"},
    {"DEL in code",
     "locations",
     "warehouse,code,staging\nW1,A\x7f,false\nW1,A-9,false\n",
     0,
     {2},
     NULL},
    {"C1 control in code",
     "locations",
     "warehouse,code,staging\nW1,A-9,false\nW1,A\xC2\x85,false\n",
     0,
     {3},
     NULL},
    {"tab in quoted code", "products", "sku,name,eans\n\"P\t9\",Nine,\nP8,Eight,\n", 0, {2}, NULL},
    {"line break in quoted code",
     "products",
     "sku,name,eans\nP8,Eight,\n\"P\n9\",Nine,\nP7,x,\n",
     0,
     {3},
     NULL},
    {"NUL in code", "warehouses", NUL_CSV, sizeof(NUL_CSV) - 1, {3}, NULL},
    {"invalid UTF-8 in code",
     "warehouses",
     "code,name,kind\nW\xff,Nine,own\nW9,Nine,own\n",
     0,
     {2},
     "UTF-8"},
    {"truncated UTF-8 in code",
     "products",
     "sku,name,eans\nP9,Nine,\nP\xC3,Eight,\n",
     0,
     {3},
     "UTF-8"},
    {"surrogate in code", "products", "sku,name,eans\nP\xED\xA0\x80,Nine,\n", 0, {2}, "UTF-8"},
    {"invalid UTF-8 in name",
     "products",
     "sku,name,eans\nP9,Bad \xC0\xAF,\nSKU-1,Renamed,\n",
     0,
     {2},
     "UTF-8"},
    {"name of 201 characters",
     "warehouses",
     "code,name,kind\nW9," N201 ",own\nW1,Renamed,own\n",
     0,
     {2},
     "200"},
    {"empty name", "products", "sku,name,eans\nP9,,\nSKU-1,Renamed,\n", 0, {2}, "empty"},
    {"control character in name",
     "products",
     "sku,name,eans\nP9,\"a\x01z\",\nP8,Eight,\n",
     0,
     {2},
     "control"},
    {"kind not own or supplier",
     "warehouses",
     "code,name,kind\nW9,Nine,Own\nW8,Eight,other\nW7,Seven,\nW6,Six,own\n",
     0,
     {2, 3, 4},
     "own or supplier"},
    {"staging not true or false",
     "locations",
     "warehouse,code,staging\nW1,A-9,yes\nW1,A-8,TRUE\nW1,A-7,\nW1,A-6,1\nW1,A-5,false\n",
     0,
     {2, 3, 4, 5},
     "true or false"},
    {"negative quantity",
     "stock",
     "sku,warehouse,on_hand\nSKU-1,W1,-1\nSKU-2,W1,3\n",
     0,
     {2},
     "whole number"},
    {"non-integer quantities",
     "stock",
     "sku,warehouse,on_hand\nSKU-1,W1,1.5\nSKU-1,W2,abc\nSKU-2,W1,\nSKU-3,W1,1e3\nSKU-3,W2,+5\n"
     "sku-1,W1, 5\nsku-1,W2,0x10\nSKU-2,W2,4\n",
     0,
     {2, 3, 4, 5, 6, 7, 8},
     "whole number"},
    {"huge quantities",
     "location-stock",
     "sku,warehouse,location,quantity\nSKU-1,W1,A-1,9999999999999999999\n"
     "SKU-1,W1,A-2,99999999999999999999999999\nSKU-1,W1,A-10,999999999999999999\n",
     0,
     {2, 3},
     "whole number"},
    {"negative reservation quantity",
     "reservations",
     "ref,sku,warehouse,quantity,status\nR9,SKU-1,W1,-2,active\nR1,SKU-1,W1,1,active\n",
     0,
     {2},
     NULL},
    {"status not active, released or consumed",
     "reservations",
     "ref,sku,warehouse,quantity,status\nR9,SKU-1,W1,1,Active\nR8,SKU-1,W1,1,cancelled\n"
     "R7,SKU-1,W1,1,\nR6,SKU-1,W1,1,consumed\n",
     0,
     {2, 3, 4},
     "active, released or consumed"},
    {"bad EAN lists",
     "products",
     "sku,name,eans\nP1,One,1||2\nP2,Two,1|\nP3,Three,|1\nP4,Four, 1\nP5,Five,1|" S65 "\n"
     "P6,Six,\"1|\x01\"\nP7,Seven,1|2\n",
     0,
     {2, 3, 4, 5, 6, 7},
     NULL},
    {"unknown warehouse",
     "locations",
     "warehouse,code,staging\nW1,A-9,false\nNOPE,A-1,false\nw1,A-1,false\n",
     0,
     {3, 4},
     "unknown warehouse"},
    {"warehouse of another organization",
     "stock",
     "sku,warehouse,on_hand\nSKU-1,ELSEWHERE,1\n",
     0,
     {2},
     "unknown warehouse"},
    {"unknown product",
     "stock",
     "sku,warehouse,on_hand\nSKU-1,W1,1\nSKU-9,W1,1\nSku-1,W1,1\nSKU-2,W9,1\n",
     0,
     {3, 4, 5},
     NULL},
    {"unknown location",
     "location-stock",
     "sku,warehouse,location,quantity\nSKU-1,W1,A-1,1\nSKU-1,W1,B-1,1\nSKU-1,W1,a-10,1\n"
     "SKU-1,W9,A-1,1\nSKU-9,W1,A-1,1\n",
     0,
     {3, 4, 5, 6},
     NULL},
    {"unknown references in reservations",
     "reservations",
     "ref,sku,warehouse,quantity,status\nR9,SKU-9,W1,1,active\nR8,SKU-1,W9,1,active\n"
     "R1,SKU-1,W1,5,active\n",
     0,
     {2, 3},
     NULL},
    {"duplicate warehouse",
     "warehouses",
     "code,name,kind\nW9,Nine,own\nW8,Eight,own\nW9,Again,own\n",
     0,
     {4},
     "first on line 2"},
    {"duplicate location",
     "locations",
     "warehouse,code,staging\nW1,A-9,false\nW2,A-9,false\nW1,A-9,true\n",
     0,
     {4},
     "first on line 2"},
    {"duplicate product",
     "products",
     "sku,name,eans\nP9,Nine,\nSKU-1,x,\nP9,Nine,\nP9,Nine,\n",
     0,
     {4, 5},
     "first on line 2"},
    {"duplicate stock",
     "stock",
     "sku,warehouse,on_hand\nSKU-1,W1,1\nSKU-1,W2,1\nSKU-1,W1,2\n",
     0,
     {4},
     "first on line 2"},
    {"duplicate stock after its group (rows out of key order)",
     "stock",
     "sku,warehouse,on_hand\nSKU-1,W1,1\nSKU-2,W1,1\nSKU-1,W1,2\n",
     0,
     {4},
     "first on line 2"},
    {"duplicate location stock within a group of one SKU",
     "location-stock",
     "sku,warehouse,location,quantity\nSKU-1,W1,A-1,1\nSKU-1,W1,A-2,1\nSKU-1,W1,A-1,2\n"
     "SKU-2,W1,A-1,1\n",
     0,
     {4},
     "first on line 2"},
    {"duplicate location stock",
     "location-stock",
     "sku,warehouse,location,quantity\nSKU-1,W1,A-1,1\nSKU-1,W1,A-1,2\n",
     0,
     {3},
     "first on line 2"},
    {"duplicate reservation",
     "reservations",
     "ref,sku,warehouse,quantity,status\nR9,SKU-1,W1,1,active\nR9,SKU-2,W1,1,active\n",
     0,
     {3},
     "first on line 2"},
    {"empty file", "warehouses", "", 0, {1}, "empty"},
    {"only a BOM", "products", "\xEF\xBB\xBF", 0, {1}, "empty"},
    {"only blank lines", "products", "\n\r\n\n", 0, {1}, "empty"},
    {"unterminated quote",
     "warehouses",
     "code,name,kind\nW9,Nine,own\nW8,\"Eight,own\nW7,x,own\n",
     0,
     {3},
     "unterminated"},
    {"quote inside an unquoted field",
     "warehouses",
     "code,name,kind\nW9,Ni\"ne,own\n",
     0,
     {2},
     "quote"},
    {"line numbers count the physical lines of quoted line breaks",
     "products",
     "sku,name,eans\nP1,\"one\r\ntwo\nthree\",\nP2,,\nP3,x,\n",
     0,
     {5},
     NULL},
    {"several kinds of problem in one file",
     "stock",
     "sku,warehouse,on_hand\nSKU-1,W1,1\nSKU-1,W2,-1\nSKU-9,W1,1\nSKU-1,W1,2\n,W1,1\nSKU-2,W1,5\n"
     "SKU-2,W9,5\n",
     0,
     {3, 4, 5, 6, 8},
     NULL},
};

static bool lines_match(const problems_t *problems, const size_t *expected, char *got, size_t size)
{
    /* The distinct lines reported, ascending. */
    size_t lines[MAX_PROBLEMS], count = 0;
    for (size_t i = 0; i < problems->count && i < MAX_PROBLEMS; i++) {
        size_t line = problems->items[i].line, at = 0;
        while (at < count && lines[at] < line)
            at++;
        if (at < count && lines[at] == line)
            continue;
        memmove(lines + at + 1, lines + at, (count - at) * sizeof(lines[0]));
        lines[at] = line;
        count++;
    }
    got[0] = '\0';
    bool match = true;
    for (size_t i = 0; i < count; i++) {
        size_t used = strlen(got);
        snprintf(got + used, size - used, "%s%zu", i ? "," : "", lines[i]);
        if (i >= MAX_LINES || expected[i] != lines[i])
            match = false;
    }
    return match && (count == MAX_LINES || expected[count] == 0);
}

static void test_bad_files(void)
{
    int64_t org = fixture_org(conn, "bad");
    load_base(org);
    int64_t elsewhere = fixture_org(conn, "bad-elsewhere");
    import_ok(elsewhere, "warehouses", "code,name,kind\nELSEWHERE,Other org,own\n", 1);

    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        const bad_case_t *c = &bad_cases[i];
        char before[33], after[33], got[256];
        inventory_digest(before);
        long long rows_before = total_rows();
        problems_t problems;
        size_t rows = 99;
        size_t len = c->csv_len ? c->csv_len : strlen(c->csv);
        int rc = import_bytes(org, c->kind, c->csv, len, &problems, &rows);
        int failures = test_failures;
        CHECK_INT(rc, WL_EINVAL);
        CHECK_INT(rows, 0);
        if (!lines_match(&problems, c->lines, got, sizeof(got)))
            FAIL("lines reported: %s", got);
        if (c->description != NULL &&
            (problems.count == 0 || strstr(problems.items[0].description, c->description) == NULL))
            FAIL("first problem does not mention \"%s\"", c->description);
        for (size_t p = 0; p < problems.count && p < MAX_PROBLEMS; p++)
            CHECK(problems.items[p].description[0] != '\0');
        inventory_digest(after);
        CHECK_STR(after, before);
        CHECK_INT(total_rows(), rows_before);
        if (test_failures != failures) {
            fprintf(stderr, "  in bad case \"%s\" (%s):\n", c->what, c->kind);
            print_problems(&problems);
        }
    }

    /* The same rows without the bad ones import: the digest check above can fail. */
    char before[33], after[33];
    inventory_digest(before);
    import_ok(org, "stock", "sku,warehouse,on_hand\nSKU-1,W1,1\nSKU-2,W1,5\n", 2);
    inventory_digest(after);
    CHECK(strcmp(before, after) != 0);
    CHECK_AVAILABILITY(org, "SKU-1", "3@A-2");

    /* Unknown kinds are refused before anything is read. */
    problems_t problems;
    size_t rows = 0;
    CHECK_INT(import_text(org, "bins", "code\nA-1\n", &problems, &rows), WL_EINVAL);
    CHECK_INT(problems.count, 0);
    CHECK(!wl_import_kind_valid("bins"));
    CHECK(!wl_import_kind_valid("Stock"));
    static const char *const kinds[] = {"warehouses", "locations",      "products",
                                        "stock",      "location-stock", "reservations"};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        CHECK(wl_import_kind_valid(kinds[i]));
}

/*
 * The same bad files as an organization's first import of their kind, which goes straight into
 * the tables (wl_inventory_batch_begin_first) until a problem sends it back to staging: the
 * same lines reported, each once, and nothing written.
 */
static void test_first_import_problems(void)
{
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        const bad_case_t *c = &bad_cases[i];
        char slug[32], before[33], after[33], got[256];
        snprintf(slug, sizeof(slug), "first-%zu", i);
        int64_t org = fixture_org(conn, slug);
        load_base_until(org, c->kind);
        inventory_digest(before);
        long long rows_before = total_rows();
        problems_t problems;
        size_t rows = 99;
        size_t len = c->csv_len ? c->csv_len : strlen(c->csv);
        int failures = test_failures;
        CHECK_INT(import_bytes(org, c->kind, c->csv, len, &problems, &rows), WL_EINVAL);
        CHECK_INT(rows, 0);
        if (!lines_match(&problems, c->lines, got, sizeof(got)))
            FAIL("lines reported: %s", got);
        inventory_digest(after);
        CHECK_STR(after, before);
        CHECK_INT(total_rows(), rows_before);
        if (test_failures != failures) {
            fprintf(stderr, "  in first-import bad case \"%s\" (%s):\n", c->what, c->kind);
            print_problems(&problems);
        }
    }

    /* Duplicate keys within a first import: each later row named, with the first. */
    int64_t org = fixture_org(conn, "first-duplicates");
    load_base_until(org, "stock");
    problems_t problems;
    size_t rows = 0;
    CHECK_INT(import_text(org, "stock",
                          "sku,warehouse,on_hand\nSKU-1,W1,1\nSKU-2,W1,2\nSKU-1,W1,3\n"
                          "SKU-1,W2,4\nSKU-2,W1,5\n",
                          &problems, &rows),
              WL_EINVAL);
    CHECK_INT(problems.count, 2);
    CHECK_INT(problems.items[0].line, 4);
    CHECK(strstr(problems.items[0].description, "first on line 2") != NULL);
    CHECK_INT(problems.items[1].line, 6);
    CHECK(strstr(problems.items[1].description, "first on line 3") != NULL);
    CHECK_INT(query_count(org, "SELECT count(*) FROM stock WHERE org_id = $1"), 0);
    CHECK_INT(query_count(org, "SELECT count(*) FROM stock_availability WHERE org_id = $1"), 0);

    /* A file read from a pipe cannot be read twice: it is staged from the start. */
    int fds[2];
    CHECK_INT(pipe(fds), 0);
    const char *csv = "sku,warehouse,on_hand\nSKU-1,W1,1\nSKU-9,W1,2\n";
    CHECK(write(fds[1], csv, strlen(csv)) == (ssize_t)strlen(csv));
    close(fds[1]);
    FILE *in = fdopen(fds[0], "rb");
    memset(&problems, 0, sizeof(problems));
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_import_csv(conn, org, "stock", in, collect, &problems, &rows, &err), WL_EINVAL);
    fclose(in);
    CHECK_INT(problems.count, 1);
    CHECK_INT(problems.items[0].line, 3);

    /* An organization's first rows of a kind go straight into the tables, later ones are
     * staged; warehouses always are. */
    wl_inventory_reporter_t reporter = {collect, name_row, &problems};
    int64_t fresh = fixture_org(conn, "first-direct");
    load_base_until(fresh, "location-stock");
    static const struct {
        wl_inventory_kind_t kind;
        bool direct;
    } paths[] = {{WL_INVENTORY_LOCATION_STOCK, true},
                 {WL_INVENTORY_RESERVATIONS, true},
                 {WL_INVENTORY_STOCK, false},
                 {WL_INVENTORY_PRODUCTS, false},
                 {WL_INVENTORY_WAREHOUSES, false}};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        wl_inventory_batch_t batch;
        CHECK_INT(
            wl_inventory_batch_begin_first(&batch, conn, fresh, paths[i].kind, &reporter, &err), 0);
        CHECK(batch.direct == paths[i].direct);
        wl_inventory_batch_abort(&batch);
    }

    /* The good rows then import, straight into the tables. */
    import_ok(org, "stock", "sku,warehouse,on_hand\nSKU-1,W1,1\nSKU-2,W1,2\n", 2);
    CHECK_AVAILABILITY(org, "SKU-1", "1@(null)");
    CHECK_AVAILABILITY(org, "SKU-2", "2@(null)");
}

/* Every problem of a large bad file is reported, not only the first few. */
static void test_many_bad_lines(void)
{
    int64_t org = fixture_org(conn, "many-bad");
    import_ok(org, "warehouses", "code,name,kind\nW1,Main,own\n", 1);
    char csv[4096] = "code,name,kind\n";
    for (int i = 0; i < 40; i++) {
        size_t used = strlen(csv);
        snprintf(csv + used, sizeof(csv) - used, "X%d,Name,%s\n", i, i % 2 ? "own" : "bad");
    }
    problems_t problems;
    size_t rows = 0;
    CHECK_INT(import_text(org, "warehouses", csv, &problems, &rows), WL_EINVAL);
    CHECK_INT(problems.count, 20);
    for (size_t i = 0; i < problems.count && i < MAX_PROBLEMS; i++)
        CHECK_INT(problems.items[i].line, 2 + 2 * i);
    CHECK_INT(query_count(org, "SELECT count(*) FROM warehouses WHERE org_id = $1"), 1);
}

static char *append_text(char *buf, size_t *len, size_t *cap, const char *text)
{
    size_t n = strlen(text);
    if (*len + n + 1 > *cap) {
        *cap = (*len + n + 1) * 2;
        buf = realloc(buf, *cap);
        if (buf == NULL) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
    }
    memcpy(buf + *len, text, n + 1);
    *len += n;
    return buf;
}

/* A generated file of n rows (malloc'd, its length in *len and its buffer's size in *cap, for
 * append_text): "products" (SKU-000000... with two EANs each) or "stock" (each SKU in W1 or W2,
 * on hand i % 100 + bump). */
static char *generated_csv(const char *kind, int n, int bump, size_t *len, size_t *cap)
{
    char *csv = NULL;
    char row[160];
    *len = *cap = 0;
    bool products = strcmp(kind, "products") == 0;
    csv = append_text(csv, len, cap, products ? "sku,name,eans\n" : "sku,warehouse,on_hand\n");
    for (int i = 0; i < n; i++) {
        if (products)
            snprintf(row, sizeof(row), "SKU-%06d,\"Product %d, size %d\",%013d|%013d\n", i, i,
                     i % 7, i, i + n);
        else
            snprintf(row, sizeof(row), "SKU-%06d,W%d,%d\n", i, 1 + i % 2, i % 100 + bump);
        csv = append_text(csv, len, cap, row);
    }
    return csv;
}

/* Imports a generated file (generated_csv) of n rows and says how long it took. */
static void import_generated(int64_t org, const char *kind, int n)
{
    size_t len = 0, cap = 0, rows = 0;
    char *csv = generated_csv(kind, n, 0, &len, &cap);
    problems_t problems;
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    CHECK_INT(import_bytes(org, kind, csv, len, &problems, &rows), 0);
    CHECK_INT(rows, n);
    clock_gettime(CLOCK_MONOTONIC, &end);
    fprintf(stderr, "  %d %s rows: %.2f s\n", n, kind,
            (double)(end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9);
    free(csv);
}

/* A new organization with warehouses W1 and W2 and a generated catalogue of n SKUs. */
static int64_t generated_organization(const char *slug, int n)
{
    int64_t org = fixture_org(conn, slug);
    import_ok(org, "warehouses", "code,name,kind\nW1,Main,own\nW2,Second,own\n", 2);
    import_generated(org, "products", n);
    import_generated(org, "stock", n);
    return org;
}

static void test_large_import(void)
{
    enum { N = 20000 };
    int64_t org = generated_organization("large", N);

    CHECK_INT(query_count(org, "SELECT count(*) FROM products WHERE org_id = $1"), N);
    CHECK_INT(query_count(org, "SELECT count(*) FROM product_eans WHERE org_id = $1"), 2 * N);
    CHECK_INT(query_count(org, "SELECT count(*) FROM stock WHERE org_id = $1"), N);
    CHECK_INT(query_count(org, "SELECT count(*) FROM stock_availability WHERE org_id = $1"), N);
    CHECK_INT(query_count(org, "SELECT sum(qty) FROM stock_availability WHERE org_id = $1"),
              (long long)(N / 100) * (99 * 100 / 2));
    CHECK_AVAILABILITY(org, "SKU-012345", "45@(null)");

    /* A bad row at the very end of a large file still writes nothing. */
    size_t len = 0, cap = 0, rows = 0;
    char *csv = generated_csv("stock", N, 1, &len, &cap);
    csv = append_text(csv, &len, &cap, "SKU-000001,W1,-5\n");
    problems_t problems;
    char before[33], after[33];
    inventory_digest(before);
    CHECK_INT(import_bytes(org, "stock", csv, len, &problems, &rows), WL_EINVAL);
    CHECK_INT(problems.count, 1);
    CHECK_INT(problems.items[0].line, N + 2);
    inventory_digest(after);
    CHECK_STR(after, before);
    free(csv);
}

/* A statistics counter (sql: one row, one column, of relation $1) so far, this session's own
 * counts included (its pending counts flushed first); -1 when it cannot be read. */
static long long stat_counter(const char *sql, const char *relation)
{
    PQclear(PQexec(conn, "SELECT pg_stat_force_next_flush()"));
    const char *params[] = {relation};
    PGresult *res = PQexecParams(conn, sql, 1, NULL, params, NULL, NULL, 0);
    long long count = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1
                          ? strtoll(PQgetvalue(res, 0, 0), NULL, 10)
                          : -1;
    PQclear(res);
    return count;
}

/* Sequential scans of table so far. */
static long long seq_scans(const char *table)
{
    return stat_counter("SELECT seq_scan FROM pg_stat_user_tables WHERE relid = $1::regclass",
                        table);
}

/* Scans through index so far. */
static long long index_scans(const char *index)
{
    return stat_counter("SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelid = $1::regclass",
                        index);
}

/*
 * A bin's staging flag, or the kind of a warehouse that has bins, changes the export rows of
 * the SKUs in those bins, found through the bin index (location_stock_bin, whose key the
 * queries must spell as the index does) without reading the organization's rack assignments.
 * 20,000 SKUs, each in one of 100 bins of W1; SKU-000001 also holds 500 in C-1 of W3. Bins
 * "X C" of W3 (SKU-000002) and "C" of "W3 X" (SKU-000003) share their index key (warehouse and
 * bin joined by a space): codes with spaces are found, and a change of one bin moves only its
 * own SKUs (the key's other bin is at most read again).
 */
static void test_bins_read_by_key(void)
{
    enum { N = 20000, BINS = 100 };
    int64_t org = generated_organization("bins", N);
    import_ok(org, "warehouses", "code,name,kind\nW3,Third,own\nW3 X,Fourth,own\n", 2);
    size_t len = 0, cap = 0;
    char row[80];
    char *csv = append_text(NULL, &len, &cap,
                            "warehouse,code,staging\nW3,C-1,false\nW3,X C,false\nW3 X,C,false\n");
    for (int b = 0; b < BINS; b++) {
        snprintf(row, sizeof(row), "W1,B-%d,false\n", b);
        csv = append_text(csv, &len, &cap, row);
    }
    import_ok(org, "locations", csv, BINS + 3);
    free(csv);
    len = cap = 0;
    csv = append_text(NULL, &len, &cap,
                      "sku,warehouse,location,quantity\nSKU-000001,W3,C-1,500\n"
                      "SKU-000002,W3,X C,600\nSKU-000003,W3 X,C,600\n");
    for (int i = 0; i < N; i++) {
        snprintf(row, sizeof(row), "SKU-%06d,W1,B-%d,1\n", i, i % BINS);
        csv = append_text(csv, &len, &cap, row);
    }
    import_ok(org, "location-stock", csv, N + 3);
    free(csv);
    PQclear(PQexec(conn, "ANALYZE location_stock"));
    CHECK_AVAILABILITY(org, "SKU-000007", "7@B-7");
    CHECK_AVAILABILITY(org, "SKU-000001", "1@C-1");

    long long scans = seq_scans("location_stock"), probes = index_scans("location_stock_bin");
    import_ok(org, "locations", "warehouse,code,staging\nW1,B-7,true\n", 1);
    CHECK_AVAILABILITY(org, "SKU-000007", "7@(null)");
    CHECK_AVAILABILITY(org, "SKU-000107", "7@(null)");
    CHECK_AVAILABILITY(org, "SKU-000008", "8@B-8");
    CHECK_AVAILABILITY(org, "SKU-000002", "2@X C");
    CHECK_AVAILABILITY(org, "SKU-000003", "3@C");
    import_ok(org, "locations", "warehouse,code,staging\nW3,X C,true\n", 1);
    CHECK_AVAILABILITY(org, "SKU-000002", "2@B-2");
    CHECK_AVAILABILITY(org, "SKU-000003", "3@C");
    import_ok(org, "warehouses", "code,name,kind\nW3,Third,supplier\n", 1);
    CHECK_AVAILABILITY(org, "SKU-000001", "1@B-1");
    CHECK_AVAILABILITY(org, "SKU-000003", "3@C");
    CHECK(scans >= 0 && probes >= 0);
    if (seq_scans("location_stock") != scans)
        FAIL("a bin's or a warehouse's change read location_stock by a sequential scan");
    if (index_scans("location_stock_bin") < probes + 3)
        FAIL("a bin's or a warehouse's change did not read location_stock by the bin index");
}

/*
 * A small file into an organization that has rows reads that organization's rows by key, also
 * when another organization's rows come first in every table (the catalogue of
 * test_large_import): the planner expects a sequential scan to meet one of a large
 * organization's rows at once, but they lie together, behind the other's.
 */
static void test_small_write_reads_by_key(void)
{
    int64_t org = generated_organization("large-after-large", 20000);
    PQclear(PQexec(conn, "ANALYZE products, product_eans, stock"));

    static const char *const tables[] = {"products", "product_eans", "stock"};
    long long before[3];
    for (int i = 0; i < 3; i++)
        before[i] = seq_scans(tables[i]);
    import_ok(org, "stock", "sku,warehouse,on_hand\nSKU-000007,W2,5\n", 1);
    import_ok(org, "products", "sku,name,eans\nSKU-000008,Renamed,4000000000008\n", 1);
    for (int i = 0; i < 3; i++) {
        CHECK(before[i] >= 0);
        if (seq_scans(tables[i]) != before[i])
            FAIL("a small import read %s by a sequential scan", tables[i]);
    }
    CHECK_AVAILABILITY(org, "SKU-000007", "5@(null)");
    CHECK_INT(query_count(org, "SELECT count(*) FROM product_eans WHERE org_id = $1"
                               " AND sku = 'SKU-000008'"),
              1);
}

/* Index tuples read through index so far (bitmap scans included). */
static long long index_tuples_read(const char *index)
{
    return stat_counter(
        "SELECT idx_tup_read FROM pg_stat_user_indexes WHERE indexrelid = $1::regclass", index);
}

/*
 * An organization's first files cost what it holds, not what the database holds: beside an
 * organization of 20,000 SKUs, no table is read by a sequential scan, which would read every
 * organization's rows, and a check of a file joins it with the rows it names once, never each
 * of its rows with all of them. Both files of 3,000 rows, written with no ANALYZE after them
 * (the statistics, which know only the other organization, estimate the new one's products at
 * one row when its stock is checked against them), and files of 6,000 (bulk batches, whose
 * export rows are computed for the whole organization). A database of its own, so that the
 * statistics know exactly the organizations made here.
 */
static void test_first_imports_read_own_rows(void)
{
    static const char *const tables[] = {"warehouses",     "products",           "product_eans",
                                         "stock",          "stock_availability", "locations",
                                         "location_stock", "reservations"};
    enum { TABLES = sizeof(tables) / sizeof(tables[0]) };
    static const int sizes[] = {3000, 6000};
    PGconn *shared = conn;
    conn = testdb_connect(testdb_create("wl_test_import_first"));
    generated_organization("first-other", 20000);
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        PQclear(PQexec(conn, "ANALYZE"));
        long long scans[TABLES];
        for (size_t i = 0; i < TABLES; i++)
            scans[i] = seq_scans(tables[i]);
        long long products_read = index_tuples_read("products_pkey");
        char slug[32];
        snprintf(slug, sizeof(slug), "first-%d", sizes[s]);
        int64_t org = generated_organization(slug, sizes[s]);
        CHECK_INT(query_count(org, "SELECT count(*) FROM stock_availability WHERE org_id = $1"),
                  sizes[s]);
        CHECK_AVAILABILITY(org, "SKU-000042", "42@(null)");
        for (size_t i = 0; i < TABLES; i++) {
            CHECK(scans[i] >= 0);
            if (seq_scans(tables[i]) != scans[i])
                FAIL("a first import of %d rows read %s by a sequential scan", sizes[s], tables[i]);
        }
        long long read = index_tuples_read("products_pkey") - products_read;
        CHECK(products_read >= 0);
        if (read > 20LL * sizes[s])
            FAIL("a first import of %d rows read %lld entries of products_pkey", sizes[s], read);
    }
    PQfinish(conn);
    conn = shared;
}

/* --- A whole catalogue in one transaction (wl_import_catalogue) ---------------------------- */

enum { KINDS = 6 };

typedef struct {
    problems_t problems;
    size_t kinds[MAX_PROBLEMS]; /* the kind of the file of each problem kept */
} catalogue_problems_t;

static void collect_in_file(size_t kind, size_t line, const char *column, const char *description,
                            void *data)
{
    catalogue_problems_t *c = data;
    if (c->problems.count < MAX_PROBLEMS)
        c->kinds[c->problems.count] = kind;
    collect(line, column, description, &c->problems);
}

/* Imports texts[i] as the file of kind i (NULL: none) in one catalogue; rows may be NULL. */
static int import_catalogue(int64_t org, const char *const texts[KINDS],
                            catalogue_problems_t *problems, size_t rows[KINDS], wl_error_t *err)
{
    FILE *files[KINDS] = {0};
    size_t ignored[KINDS];
    memset(problems, 0, sizeof(*problems));
    for (size_t i = 0; i < KINDS; i++)
        if (texts[i] != NULL &&
            (files[i] = fmemopen((void *)texts[i], strlen(texts[i]), "rb")) == NULL)
            FAIL("cannot open the CSV text of %s", wl_import_kind_name(i));
    wl_error_init(err);
    int rc = wl_import_catalogue(conn, org, files, collect_in_file, problems,
                                 rows != NULL ? rows : ignored, err);
    for (size_t i = 0; i < KINDS; i++)
        if (files[i] != NULL)
            fclose(files[i]);
    return rc;
}

/* The same texts imported file by file, each in its own transaction. */
static void import_each(int64_t org, const char *const texts[KINDS])
{
    for (size_t i = 0; i < KINDS; i++) {
        if (texts[i] == NULL)
            continue;
        size_t lines = 0;
        for (const char *c = texts[i]; *c != '\0'; c++)
            lines += *c == '\n';
        import_ok(org, wl_import_kind_name(i), texts[i], lines - 1);
    }
}

/* The organization's export rows in one text (an md5 of them when long). */
static const char *export_rows(int64_t org, char *buf, size_t size)
{
    return query_value(org,
                       "SELECT CASE WHEN count(*) > 20 THEN md5(string_agg(r, ' ' ORDER BY r))"
                       " ELSE coalesce(string_agg(r, ' ' ORDER BY r), '') END FROM"
                       " (SELECT sku || ':' || qty || '@' || coalesce(location, '-') AS r"
                       " FROM stock_availability WHERE org_id = $1) e",
                       buf, size);
}

static long long export_version(int64_t org)
{
    return query_count(org, "SELECT coalesce((SELECT version FROM export_versions"
                            " WHERE org_id = $1), 0)");
}

/* A catalogue, then a second version of some of its files: SKU-1 12@A-2 (W1 10 + W2 5 - R1 3),
 * SKU-2 20@(null) (30 - R4 10, rack at the supplier), SKU-3 0@B-1, SKU-4 2@(null). */
static const char *const catalogue_v1[KINDS] = {
    "code,name,kind\nW1,Main,own\nW2,Second,own\nSUP,Supplier,supplier\n",
    "warehouse,code,staging\nW1,A-1,false\nW1,A-2,false\nW1,A-10,false\nW1,DOCK,true\n"
    "W2,B-1,false\nSUP,S-1,false\n",
    "sku,name,eans\nSKU-1,Drill,4006381333931\nSKU-2,Bits,\nSKU-3,Gloves,5901234123457\n"
    "SKU-4,Tape,\n",
    "sku,warehouse,on_hand\nSKU-1,W1,10\nSKU-1,W2,5\nSKU-1,SUP,100\nSKU-2,W1,30\nSKU-4,W2,2\n",
    "sku,warehouse,location,quantity\nSKU-1,W1,A-10,4\nSKU-1,W1,A-2,4\nSKU-1,W1,DOCK,50\n"
    "SKU-2,SUP,S-1,9\nSKU-3,W2,B-1,0\n",
    "ref,sku,warehouse,quantity,status\nR1,SKU-1,W1,3,active\nR2,SKU-1,W2,1,released\n"
    "R4,SKU-2,W1,10,active\n",
};
/* W2 becomes a supplier (SKU-3 and SKU-4 leave the export, SKU-1 loses its 5), A-2 becomes
 * staging (SKU-1 moves to A-10), SKU-2 gets a bin and more stock and reserved. */
static const char *const catalogue_v2[KINDS] = {
    "code,name,kind\nW2,Second,supplier\n",
    "warehouse,code,staging\nW1,A-2,true\n",
    NULL,
    "sku,warehouse,on_hand\nSKU-2,W1,31\n",
    "sku,warehouse,location,quantity\nSKU-2,W1,A-1,1\n",
    "ref,sku,warehouse,quantity,status\nR4,SKU-2,W1,11,active\n",
};

static void test_catalogue(void)
{
    char a_rows[256], b_rows[256], buf[256];
    catalogue_problems_t problems;
    wl_error_t err;
    size_t rows[KINDS];

    /* The catalogue in one transaction gives what its files give one by one. */
    int64_t a = fixture_org(conn, "catalogue-a"), b = fixture_org(conn, "catalogue-b");
    CHECK_INT(import_catalogue(a, catalogue_v1, &problems, rows, &err), 0);
    CHECK_INT(problems.problems.count, 0);
    CHECK_INT(rows[0], 3);
    CHECK_INT(rows[4], 5);
    import_each(b, catalogue_v1);
    CHECK_STR(export_rows(a, a_rows, sizeof(a_rows)),
              "SKU-1:12@A-2 SKU-2:20@- SKU-3:0@B-1 SKU-4:2@-");
    CHECK_STR(export_rows(b, b_rows, sizeof(b_rows)), a_rows);
    CHECK_INT(query_count(a, "SELECT count(*) FROM product_eans WHERE org_id = $1"), 2);

    /* A second version of some files: the export changes once, to what the files give, and
     * the changed SKUs are recorded for the delta export under that one version. */
    const char *versions = "SELECT count(DISTINCT version) FROM export_changes WHERE org_id = $1";
    long long version = export_version(a), changes_versions = query_count(a, versions);
    CHECK_INT(import_catalogue(a, catalogue_v2, &problems, rows, &err), 0);
    CHECK_INT(rows[2], 0);
    CHECK(export_version(a) != version);
    CHECK_INT(query_count(a, versions), changes_versions + 1);
    import_each(b, catalogue_v2);
    CHECK_STR(export_rows(a, a_rows, sizeof(a_rows)), "SKU-1:7@A-10 SKU-2:20@A-1");
    CHECK_STR(export_rows(b, b_rows, sizeof(b_rows)), a_rows);
    /* Recorded for the delta export, as a file's refresh records them. */
    CHECK_INT(query_count(a, "SELECT count(DISTINCT sku) FROM export_changes WHERE org_id = $1"
                             " AND version = (SELECT version FROM export_versions"
                             " WHERE org_id = $1)"),
              4);

    /* A bad row in the last file: it is named with its file, and nothing of any file is
     * written. */
    char before[33], after[33];
    inventory_digest(before);
    long long rows_before = total_rows();
    const char *bad_last[KINDS] = {
        "code,name,kind\nW3,Third,own\n",
        NULL,
        "sku,name,eans\nSKU-5,Saw,\n",
        "sku,warehouse,on_hand\nSKU-5,W3,4\n",
        NULL,
        "ref,sku,warehouse,quantity,status\nR5,SKU-5,W3,1,active\nR6,SKU-9,W3,1,active\n"};
    CHECK_INT(import_catalogue(a, bad_last, &problems, rows, &err), WL_EINVAL);
    CHECK_INT(problems.problems.count, 1);
    CHECK_INT(problems.kinds[0], 5);
    CHECK_INT(problems.problems.items[0].line, 3);
    CHECK_STR(problems.problems.items[0].description, "unknown product SKU-9");
    CHECK(strstr(err.message, "reservations file has 1 problem(s); nothing was imported") != NULL);
    CHECK_INT(rows[0], 0);
    inventory_digest(after);
    CHECK_STR(after, before);
    CHECK_INT(total_rows(), rows_before);

    /* A later file may name what an earlier one of the same catalogue brings; the import stops
     * at the first file with problems (here the stock file's duplicate key, found on the
     * organization's first stock rows, which go straight into the table). */
    int64_t c = fixture_org(conn, "catalogue-c");
    const char *bad_first[KINDS] = {
        catalogue_v1[0], catalogue_v1[1],
        catalogue_v1[2], "sku,warehouse,on_hand\nSKU-1,W1,1\nSKU-1,W1,2\n",
        catalogue_v1[4], "ref,sku,warehouse,quantity,status\nR1,X,W1,1,active\n"};
    CHECK_INT(import_catalogue(c, bad_first, &problems, rows, &err), WL_EINVAL);
    CHECK_INT(problems.problems.count, 1);
    CHECK_INT(problems.kinds[0], 3);
    CHECK_INT(problems.problems.items[0].line, 3);
    CHECK(strstr(problems.problems.items[0].description, "first on line 2") != NULL);
    CHECK_INT(total_rows(), rows_before);

    /* A SKU whose available quantity the files together would pass bigint is named: ten own
     * warehouses of 18 nines each. */
    char halls[512] = "code,name,kind\n", big[1024] = "sku,warehouse,on_hand\n";
    for (int i = 1; i <= 10; i++) {
        size_t w = strlen(halls), st = strlen(big);
        snprintf(halls + w, sizeof(halls) - w, "H%d,Hall %d,own\n", i, i);
        snprintf(big + st, sizeof(big) - st, "BIG,H%d,999999999999999999\n", i);
    }
    const char *overflow[KINDS] = {halls, NULL, "sku,name,eans\nBIG,Big,\n", big, NULL, NULL};
    CHECK_INT(import_catalogue(c, overflow, &problems, rows, &err), WL_EINVAL);
    CHECK(strstr(err.message, "SKU BIG would have 9999999999999999990 available") != NULL);
    CHECK(strstr(err.message, "nothing was imported") != NULL);
    CHECK_INT(total_rows(), rows_before);

    /* No file at all is refused. */
    const char *none[KINDS] = {0};
    CHECK_INT(import_catalogue(c, none, &problems, rows, &err), WL_EINVAL);
    CHECK(strstr(err.message, "no file") != NULL);

    /* A bulk catalogue (its first files go straight into the tables) has its whole export
     * computed once, as its files one by one compute it. */
    enum { N = 6000 };
    size_t len = 0, cap = 0;
    char *products = generated_csv("products", N, 0, &len, &cap);
    char *stock = generated_csv("stock", N, 0, &len, &cap);
    char *racks = NULL;
    size_t racks_len = 0, racks_cap = 0;
    racks = append_text(racks, &racks_len, &racks_cap, "sku,warehouse,location,quantity\n");
    for (int i = 0; i < N; i += 3) {
        char row[96];
        snprintf(row, sizeof(row), "SKU-%06d,W1,A-%d,%d\n", i, 1 + i % 2 * 9, i % 13);
        racks = append_text(racks, &racks_len, &racks_cap, row);
    }
    const char *bulk[KINDS] = {
        catalogue_v1[0], catalogue_v1[1],
        products,        stock,
        racks,           "ref,sku,warehouse,quantity,status\nR1,SKU-000003,W2,1,active\n"};
    int64_t d = fixture_org(conn, "catalogue-d"), e = fixture_org(conn, "catalogue-e");
    CHECK_INT(import_catalogue(d, bulk, &problems, rows, &err), 0);
    CHECK_INT(rows[2], N);
    import_each(e, bulk);
    CHECK_STR(export_rows(d, a_rows, sizeof(a_rows)), export_rows(e, b_rows, sizeof(b_rows)));
    CHECK_INT(query_count(d, "SELECT count(*) FROM stock_availability WHERE org_id = $1"), N);
    CHECK_AVAILABILITY(d, "SKU-000003", "2@A-10");
    /* And a second bulk version of the same files, over the first. */
    free(stock);
    stock = generated_csv("stock", N, 5, &len, &cap);
    const char *bulk_again[KINDS] = {NULL, NULL, NULL, stock, NULL, NULL};
    CHECK_INT(import_catalogue(d, bulk_again, &problems, rows, &err), 0);
    import_each(e, bulk_again);
    CHECK_STR(export_rows(d, a_rows, sizeof(a_rows)), export_rows(e, b_rows, sizeof(b_rows)));
    CHECK_STR(availability(d, "SKU-000003", buf, sizeof(buf)), "7@A-10");
    free(products);
    free(stock);
    free(racks);
}

int main(void)
{
    conn = testdb_connect(testdb_create("wl_test_import"));
    make_long_values();
    test_good_data();
    test_upserts();
    test_bad_files();
    test_first_import_problems();
    test_many_bad_lines();
    test_large_import();
    test_small_write_reads_by_key();
    test_bins_read_by_key();
    test_first_imports_read_own_rows();
    test_catalogue();
    PQfinish(conn);
    return test_exit();
}
