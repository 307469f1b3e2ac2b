/* End to end over HTTP: the per-warehouse breakdown, its pages, tokens, access and errors. */
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"

static service_t service;
static PGconn *db;
static uint16_t port;

/* Each scenario has its own organization, so its expected items are the whole breakdown. */
static int64_t org_with_key(const char *slug, char key[WL_KEY_TOKEN_SIZE])
{
    int64_t org_id = fixture_org(db, slug);
    fixture_key(db, org_id, "stock:read", key);
    return org_id;
}

/* GET /api/v1/stock with the query (may be NULL or "") on the service at port_. */
static http_response_t get_stock_at(uint16_t port_, const char *key, const char *query)
{
    char target[8192];
    snprintf(target, sizeof(target), "/api/v1/stock%s%s", query && *query ? "?" : "",
             query ? query : "");
    return e2e_request(port_, "GET", target, key, NULL, NULL);
}

static http_response_t get_stock(const char *key, const char *query)
{
    return get_stock_at(port, key, query);
}

/*
 * Expected items from rows written compactly as
 * [sku, warehouse, kind, onHand, reserved, available, [[code, quantity, staging], ...]]
 * with ' for ". Returns a new reference, NULL on a typo.
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
    size_t i, j;
    json_t *tuple, *loc;
    json_array_foreach(tuples, i, tuple)
    {
        json_t *locations = json_array();
        json_array_foreach(json_array_get(tuple, 6), j, loc)
        {
            json_array_append_new(
                locations, json_pack("{s:O,s:O,s:O}", "code", json_array_get(loc, 0), "quantity",
                                     json_array_get(loc, 1), "staging", json_array_get(loc, 2)));
        }
        json_array_append_new(
            items,
            json_pack("{s:O,s:O,s:O,s:O,s:O,s:O,s:o}", "sku", json_array_get(tuple, 0), "warehouse",
                      json_array_get(tuple, 1), "warehouseKind", json_array_get(tuple, 2), "onHand",
                      json_array_get(tuple, 3), "reserved", json_array_get(tuple, 4), "available",
                      json_array_get(tuple, 5), "locations", locations));
    }
    json_decref(tuples);
    return items;
}

/* Checks a 200 body's shape: exactly items and nextPageToken, every item and location complete. */
static void check_shape(const http_response_t *res)
{
    char content_type[128];
    const char *type = http_header(res, "Content-Type", content_type, sizeof(content_type));
    CHECK(type != NULL && strncmp(type, "application/json", 16) == 0);
    CHECK(json_is_object(res->json));
    CHECK_INT(json_object_size(res->json), 2);
    CHECK(json_is_array(json_object_get(res->json, "items")));
    CHECK(json_is_string(json_object_get(res->json, "nextPageToken")));
    size_t i, j;
    json_t *item, *location;
    json_array_foreach(json_object_get(res->json, "items"), i, item)
    {
        CHECK(json_is_object(item) && json_object_size(item) == 7);
        CHECK(json_is_string(json_object_get(item, "sku")));
        CHECK(json_is_string(json_object_get(item, "warehouse")));
        const char *kind = e2e_str(item, "warehouseKind", NULL);
        CHECK(kind != NULL && (strcmp(kind, "own") == 0 || strcmp(kind, "supplier") == 0));
        CHECK(json_is_integer(json_object_get(item, "onHand")));
        CHECK(json_is_integer(json_object_get(item, "reserved")));
        CHECK(json_is_integer(json_object_get(item, "available")));
        CHECK(json_integer_value(json_object_get(item, "available")) >= 0);
        CHECK(json_is_array(json_object_get(item, "locations")));
        json_array_foreach(json_object_get(item, "locations"), j, location)
        {
            CHECK(json_is_object(location) && json_object_size(location) == 3);
            CHECK(json_is_string(json_object_get(location, "code")));
            CHECK(json_is_integer(json_object_get(location, "quantity")));
            CHECK(json_is_boolean(json_object_get(location, "staging")));
        }
    }
}

static void check_items_equal(json_t *actual, const char *rows, int line)
{
    json_t *expected = expected_items(rows);
    if (expected != NULL && !json_equal(actual, expected)) {
        char *want = json_dumps(expected, JSON_COMPACT | JSON_ENSURE_ASCII);
        char *got = actual ? json_dumps(actual, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
        FAIL("items differ (checked at line %d)\n  expected %s\n  actual   %s", line, want,
             got ? got : "(none)");
        free(want);
        free(got);
    }
    json_decref(expected);
}

#define CHECK_ITEMS(actual, rows) check_items_equal(actual, rows, __LINE__)

/* "sku/warehouse,sku/warehouse,..." of items, into buf. */
static const char *pairs_of(json_t *items, char *buf, size_t size)
{
    size_t used = 0, i;
    json_t *item;
    buf[0] = '\0';
    json_array_foreach(items, i, item)
    {
        used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%s/%s", i ? "," : "",
                                 e2e_str(item, "sku", NULL), e2e_str(item, "warehouse", NULL));
    }
    return buf;
}

/*
 * Reads every page with pageSize page_size and the (escaped) filters, checking each
 * page's shape, that every page but the last is full, and that the last ends with
 * nextPageToken "". Returns all items in order (new reference); *pages counts requests.
 */
static json_t *collect(const char *key, const char *filters, int page_size, int *pages)
{
    json_t *all = json_array();
    char token[2048] = "";
    int count = 0;
    for (;;) {
        char query[3072];
        snprintf(query, sizeof(query), "pageSize=%d%s%s%s%s", page_size,
                 filters && *filters ? "&" : "", filters ? filters : "",
                 token[0] ? "&pageToken=" : "", token);
        http_response_t res = get_stock(key, query);
        count++;
        CHECK_INT(res.status, 200);
        if (res.status != 200) {
            fprintf(stderr, "  ^ page %d of %s: %s\n", count, query, res.body ? res.body : "");
            http_response_free(&res);
            break;
        }
        check_shape(&res);
        json_t *items = json_object_get(res.json, "items");
        const char *next = e2e_str(res.json, "nextPageToken", NULL);
        CHECK(json_array_size(items) <= (size_t)page_size);
        if (next != NULL && next[0] != '\0')
            CHECK_INT(json_array_size(items), page_size);
        json_array_extend(all, items);
        if (next != NULL && next[0] != '\0' && strcmp(next, token) == 0) {
            FAIL("page %d of %s ends where the previous one did", count, query);
            http_response_free(&res);
            break;
        }
        snprintf(token, sizeof(token), "%s", next ? next : "");
        http_response_free(&res);
        if (token[0] == '\0' || count > 1000)
            break;
    }
    if (pages != NULL)
        *pages = count;
    return all;
}

/* One page: its items (new reference) and its nextPageToken copied into next. */
static json_t *one_page(const char *key, const char *query, char *next, size_t next_size)
{
    http_response_t res = get_stock(key, query);
    CHECK_INT(res.status, 200);
    json_t *items = NULL;
    if (res.status == 200) {
        check_shape(&res);
        items = json_incref(json_object_get(res.json, "items"));
        snprintf(next, next_size, "%s", e2e_str(res.json, "nextPageToken", NULL));
    } else {
        fprintf(stderr, "  ^ %s: %s\n", query, res.body ? res.body : "");
        next[0] = '\0';
    }
    http_response_free(&res);
    return items;
}

/* A 400 naming field in its only violation, with no items in the body. */
static void check_rejected(const char *key, const char *query, const char *field, int line)
{
    http_response_t res = get_stock(key, query);
    int failures = test_failures;
    CHECK_ERROR(res, 400, "INVALID_ARGUMENT", field);
    CHECK(json_object_get(res.json, "items") == NULL);
    json_t *details = json_object_get(json_object_get(res.json, "error"), "details");
    size_t violations = 0, i;
    json_t *detail;
    json_array_foreach(details, i, detail) violations +=
        json_array_size(json_object_get(detail, "fieldViolations"));
    CHECK_INT(violations, 1);
    if (test_failures != failures)
        fprintf(stderr, "  ^ for %s (line %d): %d %s\n", query, line, res.status,
                res.body ? res.body : "");
    http_response_free(&res);
}

#define CHECK_REJECTED(key, query, field) check_rejected(key, query, field, __LINE__)

/* Item contents: quantities, kinds, pairs with a rack only, locations in natural bin order. */
static void test_contents(void)
{
    char key[WL_KEY_TOKEN_SIZE];
    int64_t org = org_with_key("contents", key);
    fixture_import(db, org, "warehouses",
                   "code,name,kind\nW1,Main,own\nW2,Annex,own\nSUP,Supplier,supplier\n");
    /* A-1 exists in W1 and W2 with different staging flags: a location is its warehouse's. */
    fixture_import(db, org, "locations",
                   "warehouse,code,staging\n"
                   "W1,A-10,false\nW1,A-2,false\nW1,A-02,false\nW1,A-1,false\nW1,STG,true\n"
                   "W1,B1,false\nW2,A-1,true\nSUP,S-1,false\nSUP,S-9,true\n");
    fixture_import(db, org, "products",
                   "sku,name,eans\nP-1,a,\nP-2,b,\nP-3,c,\nP-4,d,\nP-5,e,\nP-6,f,\nP-7,g,\n");
    fixture_import(db, org, "stock",
                   "sku,warehouse,on_hand\n"
                   "P-1,W1,10\nP-1,W2,0\nP-1,SUP,100\n"
                   "P-3,W1,2\n"
                   "P-6,SUP,3000000000\n");
    fixture_import(db, org, "location-stock",
                   "sku,warehouse,location,quantity\n"
                   "P-1,W1,A-10,4\nP-1,W1,STG,0\nP-1,W1,A-2,3\nP-1,W1,B1,2\nP-1,W1,A-02,1\n"
                   "P-1,W1,A-1,0\nP-1,SUP,S-9,40\nP-1,SUP,S-1,60\n"
                   "P-2,W1,A-1,5\nP-2,W2,A-1,1\n"
                   "P-5,SUP,S-1,0\n"
                   "P-6,SUP,S-9,7\n");
    fixture_import(db, org, "reservations",
                   "ref,sku,warehouse,quantity,status\n"
                   "R1,P-1,W1,3,active\n"
                   "R2,P-1,W1,2,active\n"
                   "R3,P-1,W1,4,released\n"  /* ignored */
                   "R4,P-1,W1,5,consumed\n"  /* ignored */
                   "R5,P-1,SUP,7,active\n"   /* supplier reservations count in their warehouse */
                   "R6,P-2,W1,4,active\n"    /* rack only: 0 - 4 clamps to 0 */
                   "R7,P-3,W1,9,active\n"    /* 2 - 9 clamps to 0 */
                   "R8,P-4,W2,1,active\n"    /* a reservation alone makes no item */
                   "R9,P-1,W2,6,released\n"  /* released only: reserved 0 */
                   "R10,P-3,W2,1,active\n"); /* P-3 has nothing else in W2: no item */
    /* P-7 has no row anywhere: no item. */
    const char *all = "["
                      "['P-1','SUP','supplier',100,7,93,[['S-1',60,false],['S-9',40,true]]],"
                      "['P-1','W1','own',10,5,5,[['A-1',0,false],['A-2',3,false],"
                      "['A-02',1,false],['A-10',4,false],['B1',2,false],['STG',0,true]]],"
                      "['P-1','W2','own',0,0,0,[]],"
                      "['P-2','W1','own',0,4,0,[['A-1',5,false]]],"
                      "['P-2','W2','own',0,0,0,[['A-1',1,true]]],"
                      "['P-3','W1','own',2,9,0,[]],"
                      "['P-5','SUP','supplier',0,0,0,[['S-1',0,false]]],"
                      "['P-6','SUP','supplier',3000000000,0,3000000000,[['S-9',7,true]]]"
                      "]";
    http_response_t res = get_stock(key, NULL);
    CHECK_INT(res.status, 200);
    if (res.status == 200) {
        check_shape(&res);
        CHECK_ITEMS(json_object_get(res.json, "items"), all);
        CHECK_STR(e2e_str(res.json, "nextPageToken", NULL), "");
    }
    http_response_free(&res);

    /* The same items a page at a time. */
    int pages = 0;
    json_t *paged = collect(key, NULL, 3, &pages);
    CHECK_ITEMS(paged, all);
    CHECK_INT(pages, 3);
    json_decref(paged);

    /* An organization with products only, and one with nothing at all. */
    char key_products[WL_KEY_TOKEN_SIZE], key_empty[WL_KEY_TOKEN_SIZE];
    int64_t products_only = org_with_key("products-only", key_products);
    org_with_key("empty", key_empty);
    fixture_import(db, products_only, "products", "sku,name,eans\nP-1,a,\n");
    paged = collect(key_products, NULL, 100, &pages);
    CHECK_ITEMS(paged, "[]");
    CHECK_INT(pages, 1);
    json_decref(paged);
    paged = collect(key_empty, NULL, 1, &pages);
    CHECK_ITEMS(paged, "[]");
    CHECK_INT(pages, 1);
    json_decref(paged);
}

/* Ordering: (sku, warehouse) in byte order, page by page as in one piece. */
static void test_order(void)
{
    char key[WL_KEY_TOKEN_SIZE];
    int64_t org = org_with_key("order", key);
    /* The longest codes there are, 64 characters of 4 bytes, must fit in a page token. */
    char longest[257] = "", csv[1024];
    for (int i = 0; i < 64; i++)
        strcat(longest, "\xf0\x9f\x98\x80");
    snprintf(csv, sizeof(csv),
             "code,name,kind\nW2,a,own\nw1,b,own\nW10,c,supplier\nW1,d,own\n\xc3\x96,e,own\n"
             "%s,f,own\n",
             longest);
    fixture_import(db, org, "warehouses", csv);
    snprintf(csv, sizeof(csv), "sku,name,eans\n%s,x,\n", longest);
    fixture_import(db, org, "products", csv);
    snprintf(csv, sizeof(csv), "sku,warehouse,on_hand\n%s,%s,1\n%s,W1,1\n", longest, longest,
             longest);
    fixture_import(db, org, "stock", csv);
    fixture_import(db, org, "locations", "warehouse,code,staging\nW10,X,false\n");
    fixture_import(db, org, "products",
                   "sku,name,eans\na-10,a,\n\xc3\xa4,b,\nB-1,c,\na-2,d,\na-1,e,\nZ,f,\n9,g,\n"
                   "10,h,\na,i,\n");
    fixture_import(db, org, "stock",
                   "sku,warehouse,on_hand\nZ,W1,1\na-1,W1,2\n10,W1,3\n\xc3\xa4,W1,4\n9,W1,5\n"
                   "a-10,W1,6\nB-1,W1,7\na,w1,8\na-2,W1,9\na,\xc3\x96,1\na,W2,1\n");
    /* One pair from a rack alone, in between the others. */
    fixture_import(db, org, "location-stock", "sku,warehouse,location,quantity\na,W10,X,1\n");
    char order[2048], got[2048];
    snprintf(order, sizeof(order),
             "10/W1,9/W1,B-1/W1,Z/W1,a/W10,a/W2,a/w1,a/\xc3\x96,a-1/W1,a-10/W1,a-2/W1,"
             "\xc3\xa4/W1,%s/W1,%s/%s",
             longest, longest, longest);
    for (int page_size = 1; page_size <= 15; page_size++) {
        int pages = 0;
        json_t *items = collect(key, NULL, page_size, &pages);
        CHECK_STR(pairs_of(items, got, sizeof(got)), order);
        /* A full last page already knows it is the last: no empty page after it. */
        CHECK_INT(pages, (14 + page_size - 1) / page_size);
        json_decref(items);
    }
}

/* Pages: sizes, the default, the last page's empty token, a size that changes midway. */
static void test_pages(void)
{
    char key[WL_KEY_TOKEN_SIZE];
    int64_t org = org_with_key("pages", key);
    fixture_import(db, org, "warehouses", "code,name,kind\nW1,Main,own\nW2,Annex,supplier\n");
    /* 150 pairs: 100 SKUs in W1, every other one also in W2. */
    char products[8192] = "sku,name,eans\n", stock[8192] = "sku,warehouse,on_hand\n";
    size_t pu = strlen(products), su = strlen(stock);
    for (int i = 0; i < 100; i++) {
        pu += (size_t)snprintf(products + pu, sizeof(products) - pu, "S-%03d,n,\n", i);
        su += (size_t)snprintf(stock + su, sizeof(stock) - su, "S-%03d,W1,%d\n", i, i);
        if (i % 2 == 0)
            su += (size_t)snprintf(stock + su, sizeof(stock) - su, "S-%03d,W2,1\n", i);
    }
    fixture_import(db, org, "products", products);
    fixture_import(db, org, "stock", stock);

    int pages = 0;
    json_t *whole = collect(key, NULL, 1000, &pages);
    CHECK_INT(json_array_size(whole), 150);
    CHECK_INT(pages, 1);
    char next[2048];
    const struct {
        const char *query;
        size_t items;
        int more;
    } cases[] = {
        {NULL, 100, 1},
        {"pageSize=0", 100, 1},
        {"pageSize=1", 1, 1},
        {"pageSize=149", 149, 1},
        {"pageSize=150", 150, 0},
        {"pageSize=151", 150, 0},
        {"pageSize=1000", 150, 0},
        {"pageSize=00150", 150, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *items = one_page(key, cases[i].query, next, sizeof(next));
        CHECK_INT(json_array_size(items), cases[i].items);
        CHECK_INT(next[0] != '\0', cases[i].more);
        /* Every page is the start of the whole. */
        for (size_t j = 0; j < json_array_size(items); j++)
            CHECK(json_equal(json_array_get(items, j), json_array_get(whole, j)));
        json_decref(items);
    }

    /* Exactly divisible: the last full page already says there is no more. */
    json_t *paged = collect(key, NULL, 50, &pages);
    CHECK(json_equal(paged, whole));
    CHECK_INT(pages, 3);
    json_decref(paged);
    paged = collect(key, NULL, 7, &pages);
    CHECK(json_equal(paged, whole));
    CHECK_INT(pages, 22);
    json_decref(paged);

    /* The default page, then the rest with another size: a token does not fix the size. */
    json_t *first = one_page(key, NULL, next, sizeof(next));
    char query[2200];
    snprintf(query, sizeof(query), "pageSize=1000&pageToken=%s", next);
    json_t *rest = one_page(key, query, next, sizeof(next));
    CHECK_INT(json_array_size(rest), 50);
    CHECK_STR(next, "");
    json_array_extend(first, rest);
    CHECK(json_equal(first, whole));
    json_decref(first);
    json_decref(rest);

    /* An empty pageToken is the first page. */
    json_t *again = one_page(key, "pageSize=2&pageToken=", next, sizeof(next));
    CHECK(json_equal(json_array_get(again, 0), json_array_get(whole, 0)));
    json_decref(again);

    const char *bad[] = {
        "pageSize=-1",          "pageSize=1001", "pageSize=abc",          "pageSize=2147483648",
        "pageSize=-2147483648", "pageSize=1.5",  "pageSize=1&pageSize=2", "pageSize=",
        "pageSize=100000"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK_REJECTED(key, bad[i], "pageSize");
    json_decref(whole);
}

/* Filters: exact, case-sensitive, combined, with pagination, and checked. */
static void test_filters(void)
{
    char key[WL_KEY_TOKEN_SIZE];
    int64_t org = org_with_key("filters", key);
    fixture_import(db, org, "warehouses",
                   "code,name,kind\nW1,Main,own\nW2,Annex,own\nSUP,Supplier,supplier\n"
                   "W 3,Spaced,own\n");
    fixture_import(db, org, "locations", "warehouse,code,staging\nW2,R-1,false\n");
    fixture_import(db, org, "products",
                   "sku,name,eans\nF-1,a,\nF-10,b,\nF-2,c,\nf-1,d,\nA B+C,e,\nF-3,f,\n");
    fixture_import(db, org, "stock",
                   "sku,warehouse,on_hand\nF-1,W1,1\nF-1,SUP,2\nF-10,W1,3\nF-2,W1,4\nF-2,W2,5\n"
                   "f-1,W1,6\nA B+C,W 3,7\nF-3,SUP,8\n");
    fixture_import(db, org, "location-stock", "sku,warehouse,location,quantity\nF-1,W2,R-1,9\n");
    char got[1024];
    const struct {
        const char *filters;
        const char *pairs;
    } cases[] = {
        {"sku=F-1", "F-1/SUP,F-1/W1,F-1/W2"},
        {"sku=f-1", "f-1/W1"},
        {"sku=F", ""},
        {"sku=F-1%20", ""},
        {"warehouse=W1", "F-1/W1,F-10/W1,F-2/W1,f-1/W1"},
        {"warehouse=SUP", "F-1/SUP,F-3/SUP"},
        {"warehouse=w1", ""},
        {"sku=F-1&warehouse=W2", "F-1/W2"},
        {"warehouse=W2&sku=F-1", "F-1/W2"},
        {"sku=F-3&warehouse=W1", ""},
        {"sku=A%20B%2BC", "A B+C/W 3"},
        {"sku=A+B%2BC&warehouse=W+3", "A B+C/W 3"},
        {"sku=&warehouse=", "A B+C/W 3,F-1/SUP,F-1/W1,F-1/W2,F-10/W1,F-2/W1,F-2/W2,F-3/SUP,"
                            "f-1/W1"},
        {"sku=NOPE", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (int page_size = 1; page_size <= 3; page_size += 2) {
            json_t *items = collect(key, cases[i].filters, page_size, NULL);
            CHECK_STR(pairs_of(items, got, sizeof(got)), cases[i].pairs);
            json_decref(items);
        }
    }
    /* A filtered item is the same item as unfiltered. */
    json_t *items = collect(key, "sku=F-1&warehouse=W2", 10, NULL);
    CHECK_ITEMS(items, "[['F-1','W2','own',0,0,0,[['R-1',9,false]]]]");
    json_decref(items);

    CHECK_REJECTED(key, "sku=%FF", "sku");
    CHECK_REJECTED(key, "warehouse=W%C3", "warehouse");
    CHECK_REJECTED(key, "sku=F-1&sku=F-2", "sku");
    CHECK_REJECTED(key, "sku=F%00", "sku");
}

/* Replaces the character at pos with another of the token alphabet. */
static void flip(char *token, size_t pos)
{
    token[pos] = token[pos] == 'A' ? 'B' : 'A';
}

/* Page tokens: tampered, cut, invented or borrowed ones get 400 and change nothing. */
static void test_tokens(void)
{
    char key[WL_KEY_TOKEN_SIZE];
    int64_t org = org_with_key("tokens", key);
    fixture_import(db, org, "warehouses", "code,name,kind\nW1,Main,own\nW2,Annex,own\n");
    fixture_import(db, org, "products", "sku,name,eans\nT-1,a,\nT-2,b,\nT-3,c,\nT-4,d,\n");
    fixture_import(db, org, "stock",
                   "sku,warehouse,on_hand\nT-1,W1,1\nT-1,W2,2\nT-2,W1,3\nT-2,W2,4\nT-3,W1,5\n"
                   "T-3,W2,6\nT-4,W1,7\n");
    char token[2048], got[1024];
    json_t *first = one_page(key, "pageSize=2", token, sizeof(token));
    CHECK_STR(pairs_of(first, got, sizeof(got)), "T-1/W1,T-1/W2");
    json_decref(first);
    size_t len = strlen(token);
    CHECK(len > 0);
    if (len == 0)
        return;
    CHECK(strspn(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == len);
    /* Opaque: the token does not show the cursor in clear text. (Names long enough that a
     * random token cannot contain them by chance: "W2" could, about once in 70 runs.) */
    char opaque_key[WL_KEY_TOKEN_SIZE], opaque_token[2048], opaque_got[256];
    int64_t opaque_org = org_with_key("tokens-opaque", opaque_key);
    fixture_import(db, opaque_org, "warehouses", "code,name,kind\nOPAQUE-WAREHOUSE,Main,own\n");
    fixture_import(db, opaque_org, "products",
                   "sku,name,eans\nOPAQUE-CURSOR-SKU-1,a,\nOPAQUE-CURSOR-SKU-2,b,\n");
    fixture_import(db, opaque_org, "stock",
                   "sku,warehouse,on_hand\nOPAQUE-CURSOR-SKU-1,OPAQUE-WAREHOUSE,1\n"
                   "OPAQUE-CURSOR-SKU-2,OPAQUE-WAREHOUSE,2\n");
    json_t *opaque_page = one_page(opaque_key, "pageSize=1", opaque_token, sizeof(opaque_token));
    CHECK_STR(pairs_of(opaque_page, opaque_got, sizeof(opaque_got)),
              "OPAQUE-CURSOR-SKU-1/OPAQUE-WAREHOUSE");
    json_decref(opaque_page);
    CHECK(opaque_token[0] != '\0');
    CHECK(strstr(opaque_token, "OPAQUE") == NULL && strstr(opaque_token, "CURSOR") == NULL);

    char query[8192], bad[2048];
    size_t positions[] = {0, 1, len / 2, len - 2, len - 1};
    for (size_t i = 0; i < sizeof(positions) / sizeof(positions[0]); i++) {
        snprintf(bad, sizeof(bad), "%s", token);
        flip(bad, positions[i]);
        snprintf(query, sizeof(query), "pageSize=2&pageToken=%s", bad);
        CHECK_REJECTED(key, query, "pageToken");
    }
    size_t cuts[] = {len - 1, len - 2, len / 2, 1};
    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        snprintf(query, sizeof(query), "pageSize=2&pageToken=%.*s", (int)cuts[i], token);
        CHECK_REJECTED(key, query, "pageToken");
    }
    const char *invented[] = {"x",
                              "hello",
                              "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                              "eyJza3UiOiJULTMiLCJ3YXJlaG91c2UiOiJXMSJ9",
                              "%FF%FE",
                              "%00",
                              "T-1%2FW2",
                              "null",
                              "0"};
    for (size_t i = 0; i < sizeof(invented) / sizeof(invented[0]); i++) {
        snprintf(query, sizeof(query), "pageSize=2&pageToken=%s", invented[i]);
        CHECK_REJECTED(key, query, "pageToken");
    }
    snprintf(query, sizeof(query), "pageSize=2&pageToken=%sA", token);
    CHECK_REJECTED(key, query, "pageToken");
    snprintf(query, sizeof(query), "pageSize=2&pageToken=%s%%3D", token);
    CHECK_REJECTED(key, query, "pageToken");
    snprintf(query, sizeof(query), "pageSize=2&pageToken=%s&pageToken=%s", token, token);
    CHECK_REJECTED(key, query, "pageToken");
    char long_token[3000];
    memset(long_token, 'A', sizeof(long_token) - 1);
    long_token[sizeof(long_token) - 1] = '\0';
    snprintf(query, sizeof(query), "pageToken=%s", long_token);
    CHECK_REJECTED(key, query, "pageToken");

    /* A token is good for the filters it was issued with only. */
    char token_w1[2048], token_sku[2048];
    json_decref(one_page(key, "pageSize=1&warehouse=W1", token_w1, sizeof(token_w1)));
    json_decref(one_page(key, "pageSize=1&sku=T-2", token_sku, sizeof(token_sku)));
    const struct {
        const char *filters;
        const char *token;
    } borrowed[] = {
        {"", token_w1},
        {"warehouse=W2", token_w1},
        {"warehouse=W1&sku=T-1", token_w1},
        {"sku=T-3", token_sku},
        {"", token_sku},
        {"sku=T-2&warehouse=W1", token_sku},
        {"warehouse=W1", token},
        {"sku=T-1", token},
    };
    for (size_t i = 0; i < sizeof(borrowed) / sizeof(borrowed[0]); i++) {
        snprintf(query, sizeof(query), "pageSize=2%s%s&pageToken=%s",
                 borrowed[i].filters[0] ? "&" : "", borrowed[i].filters, borrowed[i].token);
        CHECK_REJECTED(key, query, "pageToken");
    }

    /* After all that, the genuine tokens continue where they left off. */
    char next[2048];
    snprintf(query, sizeof(query), "pageSize=2&pageToken=%s", token);
    json_t *second = one_page(key, query, next, sizeof(next));
    CHECK_ITEMS(second, "[['T-2','W1','own',3,0,3,[]],['T-2','W2','own',4,0,4,[]]]");
    json_decref(second);
    snprintf(query, sizeof(query), "pageSize=5&warehouse=W1&pageToken=%s", token_w1);
    json_t *rest = one_page(key, query, next, sizeof(next));
    CHECK_STR(pairs_of(rest, got, sizeof(got)), "T-2/W1,T-3/W1,T-4/W1");
    CHECK_STR(next, "");
    json_decref(rest);
    snprintf(query, sizeof(query), "sku=T-2&pageToken=%s", token_sku);
    rest = one_page(key, query, next, sizeof(next));
    CHECK_STR(pairs_of(rest, got, sizeof(got)), "T-2/W2");
    json_decref(rest);
    /* The same position always gives the same token. */
    char again[2048];
    json_decref(one_page(key, "pageSize=2", again, sizeof(again)));
    CHECK_STR(again, token);
}

/* Writes between page calls: no pair that existed throughout is skipped or repeated. */
static void test_writes_between_pages(void)
{
    char key[WL_KEY_TOKEN_SIZE], sql[512], got[1024];
    int64_t org = org_with_key("moving", key);
    fixture_import(db, org, "warehouses",
                   "code,name,kind\nW0,Zero,own\nW1,Main,own\nW2,Annex,own\n");
    fixture_import(db, org, "locations", "warehouse,code,staging\nW1,R-1,false\n");
    fixture_import(db, org, "products",
                   "sku,name,eans\nK-01,a,\nK-02,a,\nK-03,a,\nK-04,a,\nK-05,a,\nK-06,a,\n"
                   "K-07,a,\nK-08,a,\nK-10,a,\nK-12,a,\n");
    fixture_import(db, org, "stock",
                   "sku,warehouse,on_hand\nK-02,W1,2\nK-04,W1,4\nK-06,W1,6\nK-08,W1,8\n"
                   "K-10,W1,10\nK-12,W1,12\n");
    char token[2048], query[2200];
    json_t *page = one_page(key, "pageSize=2", token, sizeof(token));
    CHECK_STR(pairs_of(page, got, sizeof(got)), "K-02/W1,K-04/W1");
    json_decref(page);

    /* Before the cursor: a new SKU, and a new warehouse of the cursor's SKU. After it: the
     * same, a pair from a rack alone, a changed row, a deleted row; and the cursor's own row
     * is deleted. */
    fixture_import(db, org, "stock",
                   "sku,warehouse,on_hand\nK-01,W1,1\nK-03,W1,3\nK-04,W0,40\nK-04,W2,42\n"
                   "K-05,W1,5\nK-06,W1,66\n");
    fixture_import(db, org, "location-stock", "sku,warehouse,location,quantity\nK-07,W1,R-1,7\n");
    snprintf(sql, sizeof(sql),
             "DELETE FROM stock WHERE org_id = %lld AND (sku, warehouse) IN "
             "(('K-08', 'W1'), ('K-04', 'W1'))",
             (long long)org);
    testdb_exec(db, sql);

    snprintf(query, sizeof(query), "pageSize=2&pageToken=%s", token);
    page = one_page(key, query, token, sizeof(token));
    CHECK_STR(pairs_of(page, got, sizeof(got)), "K-04/W2,K-05/W1");
    json_decref(page);
    snprintf(query, sizeof(query), "pageSize=2&pageToken=%s", token);
    page = one_page(key, query, token, sizeof(token));
    CHECK_ITEMS(page,
                "[['K-06','W1','own',66,0,66,[]],['K-07','W1','own',0,0,0,[['R-1',7,false]]]]");
    json_decref(page);
    snprintf(query, sizeof(query), "pageSize=2&pageToken=%s", token);
    page = one_page(key, query, token, sizeof(token));
    CHECK_STR(pairs_of(page, got, sizeof(got)), "K-10/W1,K-12/W1");
    CHECK_STR(token, "");
    json_decref(page);

    /* Churn on every page: before each call a SKU appears just before the cursor, one a
     * little after it, and one after it disappears. */
    char key_churn[WL_KEY_TOKEN_SIZE];
    int64_t churn = org_with_key("churn", key_churn);
    fixture_import(db, churn, "warehouses", "code,name,kind\nW1,Main,own\n");
    char products[4096] = "sku,name,eans\n", stock[4096] = "sku,warehouse,on_hand\n";
    size_t pu = strlen(products), su = strlen(stock);
    for (int i = 0; i < 80; i++) {
        pu += (size_t)snprintf(products + pu, sizeof(products) - pu, "C-%02d,n,\n", i);
        if (i % 2 == 0 && i < 60)
            su += (size_t)snprintf(stock + su, sizeof(stock) - su, "C-%02d,W1,%d\n", i, i);
    }
    fixture_import(db, churn, "products", products);
    fixture_import(db, churn, "stock", stock);
    int seen[80] = {0}, deleted[80] = {0}, inserted[80] = {0};
    int last = -1, pages = 0;
    token[0] = '\0';
    do {
        snprintf(query, sizeof(query), "pageSize=3%s%s", token[0] ? "&pageToken=" : "", token);
        page = one_page(key_churn, query, token, sizeof(token));
        if (page == NULL)
            break;
        pages++;
        size_t i;
        json_t *item;
        json_array_foreach(page, i, item)
        {
            int n = atoi(e2e_str(item, "sku", NULL) + 2);
            CHECK(n > last); /* strictly ascending across pages: nothing repeated */
            last = n;
            seen[n]++;
        }
        json_decref(page);
        if (token[0] == '\0')
            break;
        char csv[256];
        int before = last - 1, after = last + 3, gone = last + 4;
        snprintf(csv, sizeof(csv), "sku,warehouse,on_hand\n");
        if (before >= 0 && before % 2 == 1 && !inserted[before]) {
            inserted[before] = 1;
            snprintf(csv + strlen(csv), sizeof(csv) - strlen(csv), "C-%02d,W1,1\n", before);
        }
        if (after < 80 && after % 2 == 1 && !inserted[after]) {
            inserted[after] = 1;
            snprintf(csv + strlen(csv), sizeof(csv) - strlen(csv), "C-%02d,W1,1\n", after);
        }
        if (strchr(csv + 22, '\n') != NULL)
            fixture_import(db, churn, "stock", csv);
        if (gone < 60 && gone % 2 == 0 && !deleted[gone]) {
            deleted[gone] = 1;
            snprintf(sql, sizeof(sql), "DELETE FROM stock WHERE org_id = %lld AND sku = 'C-%02d'",
                     (long long)churn, gone);
            testdb_exec(db, sql);
        }
    } while (pages < 100);
    int throughout = 0;
    for (int n = 0; n < 60; n += 2) {
        if (deleted[n])
            continue;
        throughout++;
        if (seen[n] != 1)
            FAIL("C-%02d existed throughout and was seen %d times", n, seen[n]);
    }
    CHECK(throughout > 10);
    for (int n = 0; n < 80; n++)
        CHECK(seen[n] <= 1);
}

/* Tenants, keys and scopes; and a token honoured by every process of the database. */
static void test_access(const char *conninfo)
{
    char key_a[WL_KEY_TOKEN_SIZE], key_b[WL_KEY_TOKEN_SIZE], key_lists[WL_KEY_TOKEN_SIZE];
    int64_t org_a = org_with_key("tenant-a", key_a);
    int64_t org_b = org_with_key("tenant-b", key_b);
    fixture_key(db, org_a, "lists:write", key_lists);
    fixture_import(db, org_a, "warehouses", "code,name,kind\nW1,Main,own\n");
    fixture_import(db, org_b, "warehouses", "code,name,kind\nW1,Main,supplier\n");
    fixture_import(db, org_a, "products", "sku,name,eans\nSHARED,a,\nONLY-A,b,\nX-A,c,\n");
    fixture_import(db, org_b, "products", "sku,name,eans\nSHARED,a,\nONLY-B,b,\nX-B,c,\n");
    fixture_import(db, org_a, "stock",
                   "sku,warehouse,on_hand\nSHARED,W1,5\nONLY-A,W1,1\nX-A,W1,1\n");
    fixture_import(db, org_b, "stock",
                   "sku,warehouse,on_hand\nSHARED,W1,90\nONLY-B,W1,3\nX-B,W1,1\n");
    json_t *items = collect(key_a, NULL, 100, NULL);
    CHECK_ITEMS(items, "[['ONLY-A','W1','own',1,0,1,[]],['SHARED','W1','own',5,0,5,[]],"
                       "['X-A','W1','own',1,0,1,[]]]");
    json_decref(items);
    items = collect(key_b, NULL, 1, NULL);
    CHECK_ITEMS(items, "[['ONLY-B','W1','supplier',3,0,3,[]],"
                       "['SHARED','W1','supplier',90,0,90,[]],['X-B','W1','supplier',1,0,1,[]]]");
    json_decref(items);
    items = collect(key_b, "sku=ONLY-A", 1, NULL);
    CHECK_ITEMS(items, "[]");
    json_decref(items);

    /* A's token in B's hands continues nothing (it would sit after ONLY-A). */
    char token_a[2048], query[2200], next[2048];
    json_decref(one_page(key_a, "pageSize=1", token_a, sizeof(token_a)));
    snprintf(query, sizeof(query), "pageSize=1&pageToken=%s", token_a);
    CHECK_REJECTED(key_b, query, "pageToken");
    items = one_page(key_a, query, next, sizeof(next));
    CHECK_ITEMS(items, "[['SHARED','W1','own',5,0,5,[]]]");
    json_decref(items);

    /* Another walklistd on the same database honours the token: the secret is shared. */
    service_t second;
    service_start(&second, conninfo, NULL);
    http_response_t res = get_stock_at(second.port, key_a, query);
    CHECK_INT(res.status, 200);
    if (res.status == 200)
        CHECK_ITEMS(json_object_get(res.json, "items"), "[['SHARED','W1','own',5,0,5,[]]]");
    CHECK_STR(e2e_str(res.json, "nextPageToken", NULL), next);
    http_response_free(&res);
    CHECK_INT(service_stop(&second), 0);
    CHECK_INT(testdb_count(db, "SELECT count(*) FROM server_secrets"), 1);

    char www[128];
    res = get_stock(NULL, "pageSize=1");
    CHECK_ERROR(res, 401, "UNAUTHENTICATED", NULL);
    CHECK_STR(http_header(&res, "WWW-Authenticate", www, sizeof(www)), "Bearer realm=\"walklist\"");
    CHECK(json_object_get(res.json, "items") == NULL);
    http_response_free(&res);

    res = get_stock("wlk_AAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", NULL);
    CHECK_ERROR(res, 401, "UNAUTHENTICATED", NULL);
    http_response_free(&res);

    res = get_stock(key_lists, NULL);
    CHECK_ERROR(res, 403, "PERMISSION_DENIED", NULL);
    CHECK(json_object_get(res.json, "items") == NULL);
    http_response_free(&res);

    /* api_key in the query does not authenticate here... */
    snprintf(query, sizeof(query), "api_key=%s", key_a);
    res = get_stock(NULL, query);
    CHECK_ERROR(res, 401, "UNAUTHENTICATED", NULL);
    CHECK(json_object_get(res.json, "items") == NULL);
    http_response_free(&res);
    /* ...and is ignored next to a valid header. */
    snprintf(query, sizeof(query), "api_key=%s", key_b);
    res = get_stock(key_a, query);
    CHECK_INT(res.status, 200);
    CHECK_INT(json_array_size(json_object_get(res.json, "items")), 3);
    CHECK_STR(e2e_str(json_array_get(json_object_get(res.json, "items"), 0), "sku", NULL),
              "ONLY-A");
    http_response_free(&res);

    /* Only GET. */
    res = e2e_request(port, "POST", "/api/v1/stock", key_a, "application/json", "{}");
    CHECK_ERROR(res, 405, "UNIMPLEMENTED", NULL);
    http_response_free(&res);
}

int main(void)
{
    const char *conninfo = testdb_create("e2e_stock_breakdown");
    db = testdb_connect(conninfo);
    service_start(&service, conninfo, NULL);
    port = service.port;

    test_contents();
    test_order();
    test_pages();
    test_filters();
    test_tokens();
    test_writes_between_pages();
    test_access(conninfo);

    CHECK_INT(service_stop(&service), 0);
    PQfinish(db);
    return test_exit();
}
