/* End to end over HTTP: the stock export's rules, shape, updates, access and errors. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"

static service_t service;
static PGconn *db;
static uint16_t port;
/* The millisecond part of the first generatedAt, and whether a later one differed. */
static long long first_ms_part = -1;
static int ms_parts_differ;

/* Each scenario has its own organization, so its expected items are the whole export. */
static int64_t org_with_key(const char *slug, char key[WL_KEY_TOKEN_SIZE])
{
    int64_t org_id = fixture_org(db, slug);
    fixture_key(db, org_id, "stock:read", key);
    return org_id;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Epoch milliseconds of exactly "YYYY-MM-DDTHH:MM:SS.mmmZ", else -1. */
static long long parse_generated_at(const char *text)
{
    const char *pattern = "dddd-dd-ddTdd:dd:dd.dddZ";
    if (text == NULL || strlen(text) != strlen(pattern))
        return -1;
    for (size_t i = 0; pattern[i] != '\0'; i++) {
        if (pattern[i] == 'd' ? text[i] < '0' || text[i] > '9' : text[i] != pattern[i])
            return -1;
    }
    struct tm tm = {0};
    int ms = 0;
    if (sscanf(text, "%4d-%2d-%2dT%2d:%2d:%2d.%3d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
               &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7)
        return -1;
    if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
        tm.tm_min > 59 || tm.tm_sec > 59)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (long long)timegm(&tm) * 1000 + ms;
}

/*
 * Expected items from rows written compactly as [sku, qty, location] with ' for ",
 * e.g. "[['A-1',5,'R-2'],['B',0,null]]". Returns a new reference, NULL on a typo.
 */
static json_t *expected_items(const char *rows)
{
    char *text = strdup(rows);
    for (char *p = text; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_error_t error;
    json_t *tuples = json_loads(text, 0, &error);
    free(text);
    if (!json_is_array(tuples)) {
        FAIL("bad expected rows %s: %s", rows, error.text);
        json_decref(tuples);
        return NULL;
    }
    json_t *items = json_array();
    size_t i;
    json_t *tuple;
    json_array_foreach(tuples, i, tuple)
    {
        json_array_append_new(items, json_pack("{s:O,s:O,s:O}", "sku", json_array_get(tuple, 0),
                                               "qty", json_array_get(tuple, 1), "location",
                                               json_array_get(tuple, 2)));
    }
    json_decref(tuples);
    return items;
}

/* Checks the body's shape: exactly items, generatedAt and cursor; each item exactly sku, qty,
 * location. */
static void check_shape(const http_response_t *res, long long before_ms, long long after_ms)
{
    char content_type[128];
    const char *type = http_header(res, "Content-Type", content_type, sizeof(content_type));
    CHECK(type != NULL && strncmp(type, "application/json", 16) == 0);
    CHECK(json_is_object(res->json));
    CHECK_INT(json_object_size(res->json), 3);
    CHECK(json_is_string(json_object_get(res->json, "cursor")));
    json_t *items = json_object_get(res->json, "items");
    CHECK(json_is_array(items));
    const char *generated_at = e2e_str(res->json, "generatedAt", NULL);
    long long generated_ms = parse_generated_at(generated_at);
    if (generated_ms < 0)
        FAIL("generatedAt \"%s\" is not YYYY-MM-DDTHH:MM:SS.mmmZ",
             generated_at ? generated_at : "(missing)");
    else if (generated_ms < before_ms - 2000 || generated_ms > after_ms + 2000)
        FAIL("generatedAt %s is %lld ms away from the request", generated_at,
             generated_ms < before_ms ? before_ms - generated_ms : generated_ms - after_ms);
    if (generated_ms >= 0 && first_ms_part < 0)
        first_ms_part = generated_ms % 1000;
    else if (generated_ms >= 0 && generated_ms % 1000 != first_ms_part)
        ms_parts_differ = 1;
    size_t i;
    json_t *item;
    json_array_foreach(items, i, item)
    {
        json_t *location = json_object_get(item, "location");
        CHECK(json_is_object(item) && json_object_size(item) == 3);
        CHECK(json_is_string(json_object_get(item, "sku")));
        CHECK(json_is_integer(json_object_get(item, "qty")));
        CHECK(json_integer_value(json_object_get(item, "qty")) >= 0);
        CHECK(location != NULL && (json_is_string(location) || json_is_null(location)));
    }
}

/* GETs the export with key and compares the whole item array, in order, with rows. */
static void check_export(const char *key, const char *rows, int line)
{
    int failures_before = test_failures;
    json_t *expected = expected_items(rows);
    long long before_ms = now_ms();
    http_response_t res = e2e_request(port, "GET", "/api/v1/stock-export", key, NULL, NULL);
    long long after_ms = now_ms();
    CHECK_INT(res.status, 200);
    if (res.status == 200) {
        check_shape(&res, before_ms, after_ms);
        json_t *items = json_object_get(res.json, "items");
        if (expected != NULL && !json_equal(items, expected)) {
            char *want = json_dumps(expected, JSON_COMPACT | JSON_ENSURE_ASCII);
            char *got = json_dumps(items, JSON_COMPACT | JSON_ENSURE_ASCII);
            FAIL("items differ\n  expected %s\n  actual   %s", want, got ? got : "(none)");
            free(want);
            free(got);
        }
    }
    if (test_failures != failures_before)
        fprintf(stderr, "  ^ in the export checked at line %d (body %s)\n", line,
                res.body ? res.body : "");
    json_decref(expected);
    http_response_free(&res);
}

#define CHECK_EXPORT(key, rows) check_export(key, rows, __LINE__)

/* Rule 1: qty over own warehouses minus active reservations there, clamped at 0. */
static void test_quantity(void)
{
    char key[WL_KEY_TOKEN_SIZE];
    int64_t org = org_with_key("qty", key);
    fixture_import(db, org, "warehouses",
                   "code,name,kind\nW1,Main,own\nW2,Annex,own\nSUP,Supplier,supplier\n");
    fixture_import(db, org, "products",
                   "sku,name,eans\nQ-SUM,a,\nQ-SUP,b,\nQ-SUPRES,c,\nQ-STATUS,d,\nQ-CLAMP,e,\n"
                   "Q-BIG,f,\nQ-EXACT,g,\n");
    fixture_import(db, org, "stock",
                   "sku,warehouse,on_hand\n"
                   "Q-SUM,W1,7\nQ-SUM,W2,5\n"
                   "Q-SUP,W1,3\nQ-SUP,SUP,100\n"
                   "Q-SUPRES,W1,10\nQ-SUPRES,SUP,50\n"
                   "Q-STATUS,W1,20\n"
                   "Q-CLAMP,W1,4\n"
                   "Q-BIG,W1,3000000000\nQ-BIG,W2,3000000001\n"
                   "Q-EXACT,W1,6\n");
    fixture_import(db, org, "reservations",
                   "ref,sku,warehouse,quantity,status\n"
                   "R1,Q-SUPRES,SUP,4,active\n"   /* supplier: ignored */
                   "R2,Q-SUPRES,W1,1,active\n"    /* 10 - 1 */
                   "R3,Q-STATUS,W1,3,active\n"    /* counted */
                   "R4,Q-STATUS,W1,5,released\n"  /* ignored */
                   "R5,Q-STATUS,W1,7,consumed\n"  /* ignored */
                   "R6,Q-STATUS,W2,2,active\n"    /* own warehouse without stock: counted */
                   "R7,Q-CLAMP,W1,10,active\n"    /* 4 - 10 clamps to 0 */
                   "R8,Q-EXACT,W1,4,active\n"     /* two active reservations in two */
                   "R9,Q-EXACT,W2,2,active\n"     /* own warehouses: 6 - 6 = 0 */
                   "R10,Q-SUP,SUP,100,active\n"); /* supplier reservation over supplier stock */
    CHECK_EXPORT(key, "[['Q-BIG',6000000001,null],['Q-CLAMP',0,null],['Q-EXACT',0,null],"
                      "['Q-STATUS',15,null],['Q-SUM',12,null],['Q-SUP',3,null],"
                      "['Q-SUPRES',9,null]]");
}

/* Rule 2: the primary location. */
static void test_location(void)
{
    char key[WL_KEY_TOKEN_SIZE];
    int64_t org = org_with_key("loc", key);
    fixture_import(db, org, "warehouses",
                   "code,name,kind\nW1,Main,own\nW2,Annex,own\nSUP,Supplier,supplier\n");
    fixture_import(db, org, "locations",
                   "warehouse,code,staging\n"
                   "W1,A-1,false\nW1,A-2,false\nW1,A-02,false\nW1,A-10,false\n"
                   "W1,B1,false\nW1,a1,false\nW1,STG,true\n"
                   "W2,C-1,false\nSUP,S-1,false\nSUP,A-1,false\n");
    fixture_import(db, org, "products",
                   "sku,name,eans\nL-MAX,a,\nL-STAGING,b,\nL-SUP,c,\nL-W2,d,\nL-TIE-NUM,e,\n"
                   "L-TIE-ZEROS,f,\nL-TIE-CASE,g,\nL-ZERO,h,\nL-ZERO-ONLY,i,\nL-ZERO-TIE,j,\n"
                   "L-NONE,k,\nL-STAGING-ONLY,l,\nL-SUP-ONLY,m,\n");
    fixture_import(db, org, "stock",
                   "sku,warehouse,on_hand\n"
                   "L-MAX,W1,1\nL-STAGING,W1,1\nL-SUP,W1,1\nL-W2,W1,1\nL-TIE-NUM,W1,1\n"
                   "L-TIE-ZEROS,W1,1\nL-TIE-CASE,W1,1\nL-ZERO,W1,5\nL-ZERO-TIE,W1,1\n"
                   "L-NONE,W1,5\nL-STAGING-ONLY,W1,5\nL-SUP-ONLY,W1,5\n");
    fixture_import(db, org, "location-stock",
                   "sku,warehouse,location,quantity\n"
                   "L-MAX,W1,A-1,5\nL-MAX,W1,A-10,9\nL-MAX,W1,A-2,8\n"
                   "L-STAGING,W1,STG,100\nL-STAGING,W1,A-10,3\n"
                   "L-SUP,SUP,S-1,100\nL-SUP,SUP,A-1,100\nL-SUP,W1,A-10,2\n"
                   "L-W2,W1,A-1,2\nL-W2,W2,C-1,6\n"
                   "L-TIE-NUM,W1,A-10,4\nL-TIE-NUM,W1,A-2,4\n"
                   "L-TIE-ZEROS,W1,A-02,4\nL-TIE-ZEROS,W1,A-2,4\n"
                   "L-TIE-CASE,W1,a1,4\nL-TIE-CASE,W1,B1,4\n"
                   "L-ZERO,W1,A-1,0\n"
                   "L-ZERO-ONLY,W1,A-2,0\n"
                   "L-ZERO-TIE,W1,A-10,0\nL-ZERO-TIE,W1,A-2,0\n"
                   "L-STAGING-ONLY,W1,STG,7\n"
                   "L-SUP-ONLY,SUP,S-1,7\n");
    CHECK_EXPORT(key, "[['L-MAX',1,'A-10'],['L-NONE',5,null],['L-STAGING',1,'A-10'],"
                      "['L-STAGING-ONLY',5,null],['L-SUP',1,'A-10'],['L-SUP-ONLY',5,null],"
                      "['L-TIE-CASE',1,'B1'],['L-TIE-NUM',1,'A-2'],['L-TIE-ZEROS',1,'A-2'],"
                      "['L-W2',1,'C-1'],['L-ZERO',5,'A-1'],['L-ZERO-ONLY',0,'A-2'],"
                      "['L-ZERO-TIE',1,'A-2']]");
}

/* Rule 3: which SKUs are exported at all. */
static void test_inclusion(void)
{
    char key[WL_KEY_TOKEN_SIZE];
    int64_t org = org_with_key("incl", key);
    fixture_import(db, org, "warehouses", "code,name,kind\nW1,Main,own\nSUP,Supplier,supplier\n");
    fixture_import(db, org, "locations",
                   "warehouse,code,staging\nW1,A-1,false\nW1,STG,true\nSUP,S-1,false\n");
    fixture_import(db, org, "products",
                   "sku,name,eans\nI-STOCK-0,a,\nI-LOC-ONLY,b,4006381333931\nI-NOTHING,c,\n"
                   "I-SUP-STOCK,d,\nI-SUP-LOC,e,\nI-STAGING-ONLY,f,\nI-RESERVED-ONLY,g,\n"
                   "I-SUP-BOTH,h,\n");
    fixture_import(db, org, "stock",
                   "sku,warehouse,on_hand\nI-STOCK-0,W1,0\nI-SUP-STOCK,SUP,10\nI-SUP-BOTH,SUP,3\n");
    fixture_import(db, org, "location-stock",
                   "sku,warehouse,location,quantity\nI-LOC-ONLY,W1,A-1,3\nI-SUP-LOC,SUP,S-1,5\n"
                   "I-STAGING-ONLY,W1,STG,5\nI-SUP-BOTH,SUP,S-1,3\n");
    fixture_import(db, org, "reservations",
                   "ref,sku,warehouse,quantity,status\nR1,I-RESERVED-ONLY,W1,2,active\n");
    CHECK_EXPORT(key, "[['I-LOC-ONLY',0,'A-1'],['I-STOCK-0',0,null]]");

    /* An organization with products only, and one with nothing at all. */
    char key_products[WL_KEY_TOKEN_SIZE], key_empty[WL_KEY_TOKEN_SIZE];
    int64_t products_only = org_with_key("products-only", key_products);
    org_with_key("empty", key_empty);
    fixture_import(db, products_only, "products", "sku,name,eans\nP-1,a,\nP-2,b,123\n");
    CHECK_EXPORT(key_products, "[]");
    CHECK_EXPORT(key_empty, "[]");
}

/* Rule 4: byte order of SKUs, not natural, case-insensitive or locale order. */
static void test_order(void)
{
    char key[WL_KEY_TOKEN_SIZE];
    int64_t org = org_with_key("order", key);
    fixture_import(db, org, "warehouses", "code,name,kind\nW1,Main,own\n");
    fixture_import(db, org, "products",
                   "sku,name,eans\na-10,a,\n\xc3\xa4,b,\nB-1,c,\na-2,d,\na-1,e,\nZ,f,\n9,g,\n"
                   "10,h,\na,i,\n");
    fixture_import(db, org, "stock",
                   "sku,warehouse,on_hand\nZ,W1,1\na-1,W1,2\n10,W1,3\n\xc3\xa4,W1,4\n9,W1,5\n"
                   "a-10,W1,6\nB-1,W1,7\na,W1,8\na-2,W1,9\n");
    CHECK_EXPORT(key, "[['10',3,null],['9',5,null],['B-1',7,null],['Z',1,null],['a',8,null],"
                      "['a-1',2,null],['a-10',6,null],['a-2',9,null],['\xc3\xa4',4,null]]");
}

/* Rule 6: every kind of write shows up in the next export. */
static void test_updates(void)
{
    char key[WL_KEY_TOKEN_SIZE];
    int64_t org = org_with_key("updates", key);
    fixture_import(db, org, "warehouses", "code,name,kind\nW1,Main,own\nW2,Annex,own\n");
    fixture_import(db, org, "locations",
                   "warehouse,code,staging\nW1,A-1,false\nW1,A-2,false\nW2,B-1,false\n");
    fixture_import(db, org, "products",
                   "sku,name,eans\nU-1,a,\nU-2,b,\nU-3,c,\nU-4,d,\nU-5,e,\nU-6,f,\n");
    /* Tied to W2 by one kind of row only: U-4 stock, U-5 a rack, U-6 a reservation. */
    fixture_import(db, org, "stock",
                   "sku,warehouse,on_hand\nU-1,W1,10\nU-1,W2,5\nU-2,W2,7\nU-3,W1,4\nU-4,W2,8\n"
                   "U-6,W1,10\n");
    fixture_import(db, org, "location-stock",
                   "sku,warehouse,location,quantity\nU-1,W1,A-1,2\nU-1,W2,B-1,9\nU-2,W2,B-1,1\n"
                   "U-3,W1,A-1,5\nU-3,W1,A-2,3\nU-5,W2,B-1,2\n");
    fixture_import(db, org, "reservations",
                   "ref,sku,warehouse,quantity,status\nR1,U-3,W1,3,active\nR3,U-6,W2,4,active\n");
    CHECK_EXPORT(key, "[['U-1',15,'B-1'],['U-2',7,'B-1'],['U-3',1,'A-1'],['U-4',8,null],"
                      "['U-5',0,'B-1'],['U-6',6,null]]");

    /* New on_hand. */
    fixture_import(db, org, "stock", "sku,warehouse,on_hand\nU-1,W1,20\n");
    CHECK_EXPORT(key, "[['U-1',25,'B-1'],['U-2',7,'B-1'],['U-3',1,'A-1'],['U-4',8,null],"
                      "['U-5',0,'B-1'],['U-6',6,null]]");

    /* W2 becomes a supplier: its stock, racks and reservations drop out, and the SKUs
     * that were there only disappear. */
    fixture_import(db, org, "warehouses", "code,name,kind\nW2,Annex,supplier\n");
    CHECK_EXPORT(key, "[['U-1',20,'A-1'],['U-3',1,'A-1'],['U-6',10,null]]");

    /* A-1 becomes staging: U-1 has no rack left, U-3 moves to A-2. */
    fixture_import(db, org, "locations", "warehouse,code,staging\nW1,A-1,true\n");
    CHECK_EXPORT(key, "[['U-1',20,null],['U-3',1,'A-2'],['U-6',10,null]]");

    /* The reservation is released. */
    fixture_import(db, org, "reservations",
                   "ref,sku,warehouse,quantity,status\nR1,U-3,W1,3,released\n");
    CHECK_EXPORT(key, "[['U-1',20,null],['U-3',4,'A-2'],['U-6',10,null]]");

    /* A reservation that moves to another SKU changes both. */
    fixture_import(db, org, "reservations",
                   "ref,sku,warehouse,quantity,status\nR2,U-1,W1,6,active\n");
    CHECK_EXPORT(key, "[['U-1',14,null],['U-3',4,'A-2'],['U-6',10,null]]");
    fixture_import(db, org, "reservations",
                   "ref,sku,warehouse,quantity,status\nR2,U-3,W1,6,active\n");
    CHECK_EXPORT(key, "[['U-1',20,null],['U-3',0,'A-2'],['U-6',10,null]]");

    /* And back: W2 own again, A-1 not staging, a rack quantity change moves U-3 to A-2... */
    fixture_import(db, org, "warehouses", "code,name,kind\nW2,Annex,own\n");
    fixture_import(db, org, "locations", "warehouse,code,staging\nW1,A-1,false\n");
    fixture_import(db, org, "location-stock", "sku,warehouse,location,quantity\nU-3,W1,A-2,6\n");
    CHECK_EXPORT(key, "[['U-1',25,'B-1'],['U-2',7,'B-1'],['U-3',0,'A-2'],['U-4',8,null],"
                      "['U-5',0,'B-1'],['U-6',6,null]]");
    /* ...and back to A-1. */
    fixture_import(db, org, "location-stock", "sku,warehouse,location,quantity\nU-3,W1,A-2,1\n");
    CHECK_EXPORT(key, "[['U-1',25,'B-1'],['U-2',7,'B-1'],['U-3',0,'A-1'],['U-4',8,null],"
                      "['U-5',0,'B-1'],['U-6',6,null]]");
}

/* Rule 7: keys, scopes and tenants. */
static void test_access(void)
{
    char key_a[WL_KEY_TOKEN_SIZE], key_b[WL_KEY_TOKEN_SIZE], key_lists[WL_KEY_TOKEN_SIZE];
    int64_t org_a = org_with_key("tenant-a", key_a);
    int64_t org_b = org_with_key("tenant-b", key_b);
    fixture_key(db, org_a, "lists:write", key_lists);
    /* Same codes in both organizations; W1 is own in A and a supplier in B. */
    fixture_import(db, org_a, "warehouses", "code,name,kind\nW1,Main,own\n");
    fixture_import(db, org_b, "warehouses", "code,name,kind\nW1,Main,supplier\nW2,Other,own\n");
    fixture_import(db, org_a, "locations", "warehouse,code,staging\nW1,A-1,false\n");
    fixture_import(db, org_b, "locations", "warehouse,code,staging\nW1,A-1,false\nW2,B-7,false\n");
    fixture_import(db, org_a, "products", "sku,name,eans\nSHARED,a,\nONLY-A,b,\n");
    fixture_import(db, org_b, "products", "sku,name,eans\nSHARED,a,\nONLY-B,b,\n");
    fixture_import(db, org_a, "stock", "sku,warehouse,on_hand\nSHARED,W1,5\nONLY-A,W1,1\n");
    fixture_import(db, org_b, "stock",
                   "sku,warehouse,on_hand\nSHARED,W1,90\nSHARED,W2,2\nONLY-B,W2,3\n");
    fixture_import(db, org_a, "location-stock",
                   "sku,warehouse,location,quantity\nSHARED,W1,A-1,5\n");
    fixture_import(db, org_b, "location-stock",
                   "sku,warehouse,location,quantity\nSHARED,W1,A-1,90\nONLY-B,W2,B-7,3\n");
    fixture_import(db, org_b, "reservations",
                   "ref,sku,warehouse,quantity,status\nR1,SHARED,W2,1,active\n");
    CHECK_EXPORT(key_a, "[['ONLY-A',1,null],['SHARED',5,'A-1']]");
    CHECK_EXPORT(key_b, "[['ONLY-B',3,'B-7'],['SHARED',1,null]]");
    /* B's writes leave A's export alone. */
    fixture_import(db, org_b, "warehouses", "code,name,kind\nW1,Main,own\n");
    CHECK_EXPORT(key_b, "[['ONLY-B',3,'B-7'],['SHARED',91,'A-1']]");
    CHECK_EXPORT(key_a, "[['ONLY-A',1,null],['SHARED',5,'A-1']]");

    char www[128];
    http_response_t res = e2e_request(port, "GET", "/api/v1/stock-export", NULL, NULL, NULL);
    CHECK_ERROR(res, 401, "UNAUTHENTICATED", NULL);
    CHECK_STR(http_header(&res, "WWW-Authenticate", www, sizeof(www)), "Bearer realm=\"walklist\"");
    CHECK(json_object_get(res.json, "items") == NULL);
    http_response_free(&res);

    res = e2e_request(port, "GET", "/api/v1/stock-export",
                      "wlk_AAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", NULL, NULL);
    CHECK_ERROR(res, 401, "UNAUTHENTICATED", NULL);
    http_response_free(&res);

    res = e2e_request(port, "GET", "/api/v1/stock-export", key_lists, NULL, NULL);
    CHECK_ERROR(res, 403, "PERMISSION_DENIED", NULL);
    CHECK(json_object_get(res.json, "items") == NULL);
    http_response_free(&res);

    /* api_key in the query does not authenticate here, whether the key is valid or not... */
    char target[256];
    snprintf(target, sizeof(target), "/api/v1/stock-export?api_key=%s", key_a);
    res = e2e_request(port, "GET", target, NULL, NULL, NULL);
    CHECK_ERROR(res, 401, "UNAUTHENTICATED", NULL);
    CHECK(http_header(&res, "WWW-Authenticate", www, sizeof(www)) != NULL &&
          strncmp(www, "Bearer realm=\"walklist\"", 23) == 0);
    CHECK(json_object_get(res.json, "items") == NULL);
    http_response_free(&res);

    /* ...and is ignored next to a valid header: neither a 400 (as on the walk-list GET
     * form) nor a switch to the query key's organization. */
    snprintf(target, sizeof(target), "/api/v1/stock-export?api_key=%s", key_b);
    res = e2e_request(port, "GET", target, key_a, NULL, NULL);
    CHECK_INT(res.status, 200);
    json_t *expected = expected_items("[['ONLY-A',1,null],['SHARED',5,'A-1']]");
    CHECK(json_equal(json_object_get(res.json, "items"), expected));
    json_decref(expected);
    http_response_free(&res);
}

int main(void)
{
    const char *conninfo = testdb_create("e2e_stock_export");
    db = testdb_connect(conninfo);
    service_start(&service, conninfo, NULL);
    port = service.port;

    test_quantity();
    test_location();
    test_inclusion();
    test_order();
    test_updates();
    test_access();
    /* Over some twenty exports a real millisecond clock cannot give one and the same
     * millisecond part every time; a clock cut to whole seconds (".000") does. */
    CHECK(ms_parts_differ);

    CHECK_INT(service_stop(&service), 0);
    PQfinish(db);
    return test_exit();
}
