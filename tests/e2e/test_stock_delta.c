/*
 * End to end: the delta stock export (GET /api/v1/stock-export?since=, ExportStock with since).
 * A property over a seeded random sequence of inventory changes made through walklistctl
 * imports and the InventoryService over Connect: after each step the full export equals the
 * full export at the first cursor with every delta since applied, one after the other, and
 * also with one delta from that first cursor. Cursors of another organization and garbage are
 * 400 and write nothing; a cursor whose changes were pruned is 410; deltas do gzip and 304.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"

#define SKUS  12
#define STEPS 40

static service_t service;
static PGconn *db;
static uint16_t port;
static const char *conninfo;
static char key_read[WL_KEY_TOKEN_SIZE], key_write[WL_KEY_TOKEN_SIZE];
static char key_other[WL_KEY_TOKEN_SIZE];
static unsigned seed = 19;
/* Delta items seen, and removed ones: the sequence must exercise both. */
static int items_seen, removed_seen;

/* A small LCG: the sequence is the same on every run and machine. */
static unsigned pick(unsigned n)
{
    seed = seed * 1103515245u + 12345u;
    return (seed >> 16) % n;
}

/* Runs walklistctl import KIND with csv as its file; env is "NAME=value " or "". */
static void ctl_import(const char *kind, const char *csv, const char *env)
{
    char path[] = "/tmp/wl_delta_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, csv, strlen(csv)) != (ssize_t)strlen(csv)) {
        FAIL("cannot write %s", path);
        return;
    }
    close(fd);
    char command[1024];
    snprintf(command, sizeof(command),
             "%s WALKLIST_DATABASE_URL='%s' '%s' import %s '%s' --org delta >/dev/null", env,
             conninfo, getenv("WALKLISTCTL"), kind, path);
    int status = system(command);
    if (status != 0)
        FAIL("walklistctl import %s failed (%d): %s", kind, status, csv);
    unlink(path);
}

/* A Connect JSON call of procedure with key; the caller frees. */
static http_response_t connect_post(const char *procedure, const char *key, const char *body)
{
    return e2e_connect_json(port, procedure, key, body);
}

static void connect_call(const char *method, const char *body)
{
    char procedure[128];
    snprintf(procedure, sizeof(procedure), "walklist.v1.InventoryService/%s", method);
    http_response_t res = connect_post(procedure, key_write, body);
    if (res.status != 200)
        FAIL("%s %s: %d %s", method, body, res.status, res.body ? res.body : "");
    http_response_free(&res);
}

/* GET of the export (since NULL) or a delta; the caller frees. */
static http_response_t rest_export(const char *key, const char *since, const char *extra)
{
    char target[512], headers[512];
    snprintf(target, sizeof(target), "/api/v1/stock-export%s%s", since ? "?since=" : "",
             since ? since : "");
    snprintf(headers, sizeof(headers), "Authorization: Bearer %s\r\n%s", key, extra ? extra : "");
    http_response_t res;
    if (http_request(port, "GET", target, headers, NULL, 0, &res) != 0)
        FAIL("GET %s failed", target);
    return res;
}

/* The delta through Connect (ExportStock with since), as the JSON body. */
static http_response_t connect_delta(const char *since)
{
    char body[512];
    snprintf(body, sizeof(body), "{\"since\":\"%s\"}", since);
    return connect_post("walklist.v1.StockService/ExportStock", key_read, body);
}

/* Applies a delta's items to model (an object sku -> item), checking their order and shape. */
static void apply_delta(json_t *model, json_t *delta_items)
{
    e2e_apply_delta(model, delta_items, &items_seen, &removed_seen);
}

/* The model as an export's item array, in SKU order (byte order, as strcmp). */
static json_t *model_items(json_t *model)
{
    const char *keys[256];
    size_t n = 0;
    const char *sku;
    json_t *item;
    json_object_foreach(model, sku, item)
    {
        if (n < 256)
            keys[n++] = sku;
    }
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
            const char *t = keys[j];
            keys[j] = keys[j - 1];
            keys[j - 1] = t;
        }
    json_t *items = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append(items, json_object_get(model, keys[i]));
    return items;
}

static json_t *model_of(json_t *items)
{
    json_t *model = json_object();
    apply_delta(model, items);
    return model;
}

static void check_model(json_t *model, json_t *full_items, int step, const char *what)
{
    json_t *items = model_items(model);
    if (!json_equal(items, full_items)) {
        char *want = json_dumps(full_items, JSON_COMPACT);
        char *got = json_dumps(items, JSON_COMPACT);
        FAIL("step %d (%s): full export %s, deltas applied %s", step, what, want, got);
        free(want);
        free(got);
    }
    json_decref(items);
}

/* One random inventory change, through the CLI or the InventoryService. */
static void random_change(int step)
{
    char sku[16], body[512], csv[512];
    snprintf(sku, sizeof(sku), "P%02u", pick(SKUS));
    static const char *const warehouses[] = {"W", "V", "S"};
    static const char *const bins[] = {"A-1", "A-2", "A-10", "DOCK"};
    const char *warehouse = warehouses[pick(3)];
    switch (pick(6)) {
    case 0:
        snprintf(body, sizeof(body),
                 "{\"items\":[{\"sku\":\"%s\",\"warehouse\":\"%s\",\"onHand\":%u}]}", sku,
                 warehouse, pick(20));
        connect_call("SetStock", body);
        break;
    case 1:
        snprintf(body, sizeof(body),
                 "{\"items\":[{\"sku\":\"%s\",\"warehouse\":\"W\",\"location\":\"%s\","
                 "\"quantity\":%u}]}",
                 sku, bins[pick(4)], pick(10));
        connect_call("SetLocationStock", body);
        break;
    case 2:
        snprintf(body, sizeof(body),
                 "{\"reservations\":[{\"ref\":\"R%d\",\"sku\":\"%s\",\"warehouse\":\"%s\","
                 "\"quantity\":%u}]}",
                 step, sku, warehouse, 1 + pick(5));
        connect_call("CreateReservations", body);
        break;
    case 3:
        snprintf(csv, sizeof(csv), "sku,warehouse,on_hand\n%s,%s,%u\nP%02u,W,%u\n", sku, warehouse,
                 pick(20), (sku[2] - '0' + 1) % 10, pick(20));
        ctl_import("stock", csv, "");
        break;
    case 4:
        /* A bin turning staging (or back) moves primary racks; SKUs held only there leave. */
        snprintf(csv, sizeof(csv), "warehouse,code,staging\nW,%s,%s\n", bins[pick(3)],
                 pick(2) ? "true" : "false");
        ctl_import("locations", csv, "");
        break;
    default:
        /* V turning supplier (or back) takes its stock out of the export. */
        snprintf(csv, sizeof(csv), "code,name,kind\nV,Second,%s\n", pick(2) ? "supplier" : "own");
        ctl_import("warehouses", csv, "");
        break;
    }
}

static void setup(void)
{
    int64_t org = fixture_org(db, "delta");
    fixture_key(db, org, "stock:read", key_read);
    fixture_key(db, org, "inventory:write", key_write);
    int64_t other = fixture_org(db, "delta-other");
    fixture_key(db, other, "stock:read", key_other);
    connect_call("UpsertWarehouses", "{\"warehouses\":[{\"code\":\"W\",\"name\":\"Main\","
                                     "\"kind\":\"own\"},{\"code\":\"V\",\"name\":\"Second\","
                                     "\"kind\":\"own\"},{\"code\":\"S\",\"name\":\"Supplier\","
                                     "\"kind\":\"supplier\"}]}");
    ctl_import("locations",
               "warehouse,code,staging\nW,A-1,false\nW,A-2,false\nW,A-10,false\n"
               "W,DOCK,true\n",
               "");
    char body[2048] = "{\"products\":[";
    for (int i = 0; i < SKUS; i++)
        snprintf(body + strlen(body), sizeof(body) - strlen(body),
                 "%s{\"sku\":\"P%02d\",\"name\":\"Product %d\"}", i ? "," : "", i, i);
    strcat(body, "]}");
    connect_call("UpsertProducts", body);
    ctl_import("stock", "sku,warehouse,on_hand\nP00,W,5\nP01,V,3\n", "");
}

/* The property: full == first full + each delta applied, and == first full + one delta. */
static void test_property(void)
{
    http_response_t first = rest_export(key_read, NULL, NULL);
    CHECK_INT(first.status, 200);
    json_t *chained = model_of(json_object_get(first.json, "items"));
    json_t *from_first_items = json_deep_copy(json_object_get(first.json, "items"));
    char first_cursor[256], cursor[256];
    snprintf(first_cursor, sizeof(first_cursor), "%s", e2e_str(first.json, "cursor", NULL));
    snprintf(cursor, sizeof(cursor), "%s", first_cursor);
    http_response_free(&first);

    for (int step = 0; step < STEPS; step++) {
        random_change(step);
        http_response_t full = rest_export(key_read, NULL, NULL);
        CHECK_INT(full.status, 200);
        json_t *full_items = json_object_get(full.json, "items");

        /* Every other step the delta comes through Connect, else over REST. */
        http_response_t delta = step % 2 ? connect_delta(cursor) : rest_export(key_read, cursor, 0);
        CHECK_INT(delta.status, 200);
        apply_delta(chained, json_object_get(delta.json, "items"));
        check_model(chained, full_items, step, "chained deltas");
        if (e2e_str(delta.json, "cursor", NULL) != NULL)
            snprintf(cursor, sizeof(cursor), "%s", e2e_str(delta.json, "cursor", NULL));
        http_response_free(&delta);

        http_response_t whole = rest_export(key_read, first_cursor, NULL);
        CHECK_INT(whole.status, 200);
        json_t *model = model_of(from_first_items);
        apply_delta(model, json_object_get(whole.json, "items"));
        check_model(model, full_items, step, "one delta from the first cursor");
        json_decref(model);
        http_response_free(&whole);
        http_response_free(&full);
    }
    /* Nothing changed since the last cursor: an empty delta that continues from the same one. */
    http_response_t empty = rest_export(key_read, cursor, NULL);
    CHECK_INT(empty.status, 200);
    CHECK_INT(json_array_size(json_object_get(empty.json, "items")), 0);
    CHECK_STR(e2e_str(empty.json, "cursor", NULL), cursor);
    CHECK(items_seen > STEPS);
    CHECK(removed_seen > 0);
    http_response_free(&empty);
    json_decref(chained);
    json_decref(from_first_items);
}

/* Another organization's cursor, an altered one and garbage: 400 naming since, nothing written. */
static void test_refused_cursors(void)
{
    http_response_t theirs = rest_export(key_other, NULL, NULL);
    http_response_t ours = rest_export(key_read, NULL, NULL);
    const char *history = "SELECT (SELECT count(*) FROM export_changes)"
                          " + (SELECT coalesce(sum(version % 1000003 + history_from % 1000003), 0)"
                          " FROM export_versions)";
    long long before = testdb_count(db, history);
    http_response_t res = rest_export(key_read, e2e_str(theirs.json, "cursor", NULL), NULL);
    CHECK_ERROR(res, 400, "INVALID_ARGUMENT", "since");
    http_response_free(&res);
    char altered[256];
    snprintf(altered, sizeof(altered), "%s", e2e_str(ours.json, "cursor", NULL));
    altered[3] = altered[3] == 'A' ? 'B' : 'A';
    res = rest_export(key_read, altered, NULL);
    CHECK_ERROR(res, 400, "INVALID_ARGUMENT", "since");
    http_response_free(&res);
    res = rest_export(key_read, "not-a-cursor", NULL);
    CHECK_ERROR(res, 400, "INVALID_ARGUMENT", "since");
    http_response_free(&res);
    res = connect_delta(e2e_str(theirs.json, "cursor", NULL));
    CHECK_INT(res.status, 400);
    CHECK_STR(e2e_str(res.json, "code", NULL), "invalid_argument");
    http_response_free(&res);
    CHECK_INT(testdb_count(db, history), before);
    http_response_free(&theirs);
    http_response_free(&ours);
}

/* A write with a retention of 0 hours prunes every earlier change: older cursors get 410, the
 * cursor taken just before the write still continues (nothing after it was pruned). */
static void test_retention(void)
{
    http_response_t old = rest_export(key_read, NULL, NULL);
    ctl_import("stock", "sku,warehouse,on_hand\nP03,W,101\n", "");
    http_response_t recent = rest_export(key_read, NULL, NULL);
    ctl_import("stock", "sku,warehouse,on_hand\nP04,W,102\n",
               "PGOPTIONS='-c walklist.export_history_hours=0'");
    http_response_t res = rest_export(key_read, e2e_str(old.json, "cursor", NULL), NULL);
    CHECK_ERROR(res, 410, "OUT_OF_RANGE", NULL);
    http_response_free(&res);
    res = connect_delta(e2e_str(old.json, "cursor", NULL));
    CHECK_INT(res.status, 400); /* Connect's out_of_range */
    CHECK_STR(e2e_str(res.json, "code", NULL), "out_of_range");
    http_response_free(&res);
    res = rest_export(key_read, e2e_str(recent.json, "cursor", NULL), NULL);
    CHECK_INT(res.status, 200);
    json_t *items = json_object_get(res.json, "items");
    CHECK_INT(json_array_size(items), 1);
    CHECK_STR(e2e_str(json_array_get(items, 0), "sku", NULL), "P04");
    http_response_free(&res);
    http_response_free(&old);
    http_response_free(&recent);
}

/* The delta's ETag names both versions: 304 while nothing changed; gzip on request. */
static void test_conditional_and_gzip(void)
{
    http_response_t full = rest_export(key_read, NULL, NULL);
    char cursor[256], etag[128], header[300], full_etag[128];
    snprintf(cursor, sizeof(cursor), "%s", e2e_str(full.json, "cursor", NULL));
    http_header(&full, "ETag", full_etag, sizeof(full_etag));
    ctl_import("stock", "sku,warehouse,on_hand\nP05,W,55\n", "");
    http_response_t delta = rest_export(key_read, cursor, NULL);
    CHECK_INT(delta.status, 200);
    CHECK(http_header(&delta, "ETag", etag, sizeof(etag)) != NULL);
    CHECK(strcmp(etag, full_etag) != 0);
    snprintf(header, sizeof(header), "If-None-Match: %s\r\n", etag);
    http_response_t again = rest_export(key_read, cursor, header);
    CHECK_INT(again.status, 304);
    http_response_free(&again);
    http_response_t gzipped = rest_export(key_read, cursor, "Accept-Encoding: gzip\r\n");
    char encoding[32] = "";
    CHECK_INT(gzipped.status, 200);
    CHECK_STR(http_header(&gzipped, "Content-Encoding", encoding, sizeof(encoding)), "gzip");
    CHECK(gzipped.body_len > 2 && (unsigned char)gzipped.body[0] == 0x1f &&
          (unsigned char)gzipped.body[1] == 0x8b);
    http_response_free(&gzipped);
    ctl_import("stock", "sku,warehouse,on_hand\nP05,W,56\n", "");
    again = rest_export(key_read, cursor, header);
    CHECK_INT(again.status, 200);
    http_response_free(&again);
    http_response_free(&delta);
    http_response_free(&full);
}

int main(void)
{
    conninfo = testdb_create("e2e_stock_delta");
    db = testdb_connect(conninfo);
    service_start(&service, conninfo, NULL);
    port = service.port;

    setup();
    test_property();
    test_refused_cursors();
    test_retention();
    test_conditional_and_gzip();

    CHECK_INT(service_stop(&service), 0);
    PQfinish(db);
    return test_exit();
}
