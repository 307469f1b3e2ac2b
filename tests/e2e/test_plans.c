/*
 * Plans that do not depend on statistics: every statement walklistd runs for a request keeps
 * to its indexes however wrong PostgreSQL's statistics are. The database is analyzed while it
 * holds a dozen small organizations; walklistd serves each of them once, so that every cached
 * plan is made while the tables are small (a prepared statement or a PL/pgSQL one may keep a
 * generic plan for the session after five runs); then the tables grow tenfold, then a
 * thousandfold, with no ANALYZE and no autovacuum, and after each step the same walklistd
 * serves every request path again, for those and for grown organizations (creation in both forms
 * and with Idempotency-Key, GET by id, the export in full, 304 and delta, a key's first request
 * a conditional export (its version read in the admission's group), WatchStock, the
 * breakdown, the scanner's queue and load on both transports, an inventory write with its export
 * bump and webhook event, the webhook worker's polls). auto_explain logs the plan of every
 * statement walklistd runs, nested ones included; none may read a grown table by a sequential scan
 * or by a whole index.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "e2e.h"
#include "fixture.h"
#include "cli/generate.h"
#include "service.h"
#include "testdb.h"

/* The tables whose size follows tenants, keys or lists (grown by the first step), and those
 * that follow catalogues (grown by the second). */
static const char *const tenant_tables[] = {"organizations",      "api_keys",
                                            "rate_limits",        "locate_lists",
                                            "idempotency_keys",   "warehouses",
                                            "locations",          "export_versions",
                                            "export_changes",     "webhook_endpoints",
                                            "webhook_sequences",  "webhook_events",
                                            "webhook_deliveries", NULL};
static const char *const catalogue_tables[] = {
    "products",     "product_eans",       "stock", "location_stock",
    "reservations", "stock_availability", NULL};

#define GROWN_ORGS 3000
#define GROWN_SKUS 20000

static service_t service;
static PGconn *db;
/* The catalogue is generated through the admin API on a session of its own, connected before
 * auto_explain is preloaded into the database's sessions: its batch plans are not the
 * request paths'. */
static wl_admin_t *admin;
/* Organizations served before the tables grow, and grown ones served after: each key's first
 * request checks it and asks for rate-limit permits in the database (the specified limits). */
#define SMALL_ORGS    12
#define GROWN_CLIENTS 12
static char small_keys[SMALL_ORGS][WL_KEY_TOKEN_SIZE];
static int request_number;

static bool in_list(const char *const *list, const char *table)
{
    for (size_t i = 0; table != NULL && list[i] != NULL; i++)
        if (strcmp(list[i], table) == 0)
            return true;
    return false;
}

static http_response_t get(const char *key, const char *target, const char *extra_header)
{
    char headers[512];
    snprintf(headers, sizeof(headers), "Authorization: Bearer %s\r\n%s", key,
             extra_header ? extra_header : "");
    http_response_t res;
    if (http_request(service.port, "GET", target, headers, NULL, 0, &res) != 0)
        FAIL("GET %s failed", target);
    return res;
}

static void expect(http_response_t res, int status, const char *what)
{
    if (res.status != status)
        FAIL("%s answered %d, expected %d: %s", what, res.status, status, res.body ? res.body : "");
    http_response_free(&res);
}

static http_response_t device(const char *key, const char *method, const void *body, size_t len)
{
    char target[96], headers[256];
    snprintf(target, sizeof(target), "/walklist.scanner.v1.DeviceService/%s", method);
    snprintf(headers, sizeof(headers),
             "Authorization: Bearer %s\r\nContent-Type: application/proto\r\n", key);
    http_response_t res;
    if (http_request(service.port, "POST", target, headers, body, len, &res) != 0)
        FAIL("POST %s failed", target);
    return res;
}

/* Opens WatchStock from cursor and reads until its first message has arrived. */
static void watch_first_message(const char *key, const char *cursor)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(service.port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        FAIL("WatchStock: cannot connect");
        if (fd >= 0)
            close(fd);
        return;
    }
    char message[256], request[1024];
    int len = snprintf(message, sizeof(message), "{\"since\":\"%s\"}", cursor);
    int head = snprintf(request, sizeof(request),
                        "POST /walklist.v1.StockService/WatchStock HTTP/1.1\r\nHost: x\r\n"
                        "Authorization: Bearer %s\r\nContent-Type: application/connect+json\r\n"
                        "Connect-Protocol-Version: 1\r\nContent-Length: %d\r\n\r\n",
                        key, len + 5);
    char envelope[5] = {0, 0, 0, (char)(len >> 8), (char)len};
    memcpy(request + head, envelope, 5);
    memcpy(request + head + 5, message, (size_t)len);
    char seen[8192] = "";
    size_t used = 0;
    if (write(fd, request, (size_t)head + 5 + (size_t)len) == head + 5 + len) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        while (memmem(seen, used, "\"cursor\"", 8) == NULL && used < sizeof(seen) - 1 &&
               poll(&pfd, 1, 10000) > 0) {
            ssize_t n = read(fd, seen + used, sizeof(seen) - 1 - used);
            if (n <= 0)
                break;
            used += (size_t)n;
            seen[used] = '\0';
        }
    }
    /* The envelope's bytes hold zeros: memmem, not strstr. */
    if (memmem(seen, used, "\"cursor\"", 8) == NULL)
        FAIL("WatchStock sent no first message: %.300s", seen);
    close(fd);
}

/* One request of every path a client takes, with key (scopes: all) of an organization that has
 * products SKU-1 and SKU-2 in warehouse WH1. */
static void every_path(const char *key)
{
    char body[512], target[512], header[320], id[64] = "", etag[128] = "", cursor[256] = "";
    request_number++;

    snprintf(body, sizeof(body), "{\"name\":\"Walk %d\",\"codes\":[\"SKU-1\",\"4006381333931\"]}",
             request_number);
    http_response_t res =
        e2e_request(service.port, "POST", "/api/v1/locate-lists", key, "application/json", body);
    if (res.status == 201 && e2e_str(res.json, "id", NULL) != NULL)
        snprintf(id, sizeof(id), "%s", e2e_str(res.json, "id", NULL));
    expect(res, 201, "POST /api/v1/locate-lists");
    expect(get(key, "/api/v1/locate-lists?name=Walk&codes=SKU-1|SKU-2", NULL), 201,
           "GET /api/v1/locate-lists");
    snprintf(header, sizeof(header), "Idempotency-Key: plans-%d\r\n", request_number);
    for (int retry = 0; retry < 2; retry++) {
        char headers[512];
        snprintf(headers, sizeof(headers),
                 "Authorization: Bearer %s\r\nContent-Type: application/json\r\n%s", key, header);
        if (http_request(service.port, "POST", "/api/v1/locate-lists", headers, body, strlen(body),
                         &res) != 0)
            FAIL("POST with Idempotency-Key failed");
        expect(res, 201, "POST with Idempotency-Key");
    }
    snprintf(target, sizeof(target), "/api/v1/locate-lists/%s", id);
    expect(get(key, target, NULL), 200, "GET /api/v1/locate-lists/{id}");

    res = get(key, "/api/v1/stock-export", NULL);
    http_header(&res, "ETag", etag, sizeof(etag));
    if (e2e_str(res.json, "cursor", NULL) != NULL)
        snprintf(cursor, sizeof(cursor), "%s", e2e_str(res.json, "cursor", NULL));
    expect(res, 200, "GET /api/v1/stock-export");
    snprintf(header, sizeof(header), "If-None-Match: %s\r\n", etag);
    expect(get(key, "/api/v1/stock-export", header), 304, "GET /api/v1/stock-export (304)");

    snprintf(body, sizeof(body),
             "{\"items\":[{\"sku\":\"SKU-1\",\"warehouse\":\"WH1\",\"onHand\":%d}]}",
             request_number);
    expect(e2e_connect_json(service.port, "walklist.v1.InventoryService/SetStock", key, body), 200,
           "InventoryService/SetStock");
    snprintf(target, sizeof(target), "/api/v1/stock-export?since=%s", cursor);
    expect(get(key, target, NULL), 200, "GET /api/v1/stock-export?since=");
    watch_first_message(key, cursor);
    expect(e2e_connect_json(service.port, "walklist.v1.StockService/ExportStock", key, "{}"), 200,
           "StockService/ExportStock");

    res = get(key, "/api/v1/stock?pageSize=1", NULL);
    const char *token = e2e_str(res.json, "nextPageToken", NULL);
    snprintf(target, sizeof(target), "/api/v1/stock?pageSize=1&pageToken=%s", token ? token : "");
    expect(res, 200, "GET /api/v1/stock");
    expect(get(key, target, NULL), 200, "GET /api/v1/stock (second page)");
    expect(get(key, "/api/v1/stock?sku=SKU-2&warehouse=WH1", NULL), 200,
           "GET /api/v1/stock (filtered)");
    expect(e2e_connect_json(service.port, "walklist.v1.StockService/ListStock", key,
                            "{\"pageSize\":5}"),
           200, "StockService/ListStock");

    expect(device(key, "ListPending", "", 0), 200, "DeviceService/ListPending");
    /* LoadListRequest { string id = 1; }: tag 0x0a, length, bytes. */
    unsigned char load[80] = {0x0a, (unsigned char)strlen(id)};
    memcpy(load + 2, id, strlen(id));
    expect(device(key, "LoadList", load, 2 + strlen(id)), 200, "DeviceService/LoadList");
    expect(e2e_connect_json(service.port, "walklist.v1.ScannerService/ListPendingLists", key, "{}"),
           200, "ScannerService/ListPendingLists");
}

/* Keys whose first requests arrive together, so that admissions are checked in groups (one
 * statement for the requests in flight) as well as one by one: a plan may look a group's keys
 * up differently. */
#define TOGETHER 48

static void *create_once(void *key)
{
    http_response_t res =
        e2e_request(service.port, "POST", "/api/v1/locate-lists", key, "application/json",
                    "{\"name\":\"Together\",\"codes\":[\"A\"]}");
    int status = res.status;
    http_response_free(&res);
    return (void *)(intptr_t)status;
}

static void create_together(char keys[][WL_KEY_TOKEN_SIZE], int count)
{
    pthread_t threads[TOGETHER];
    for (int i = 0; i < count; i++)
        CHECK_INT(pthread_create(&threads[i], NULL, create_once, keys[i]), 0);
    for (int i = 0; i < count; i++) {
        void *status = NULL;
        pthread_join(threads[i], &status);
        CHECK_INT((intptr_t)status, 201);
    }
}

/* A small organization: a few products, bins, stock and a reservation, and one webhook
 * endpoint (nothing listens there: deliveries fail and are retried). */
static void small_organization(int64_t org)
{
    fixture_import(db, org, "warehouses", "code,name,kind\nWH1,Main,own\nSUP,Supplier,supplier\n");
    fixture_import(db, org, "locations", "warehouse,code,staging\nWH1,A-1,false\nWH1,B-2,false\n");
    fixture_import(db, org, "products",
                   "sku,name,eans\nSKU-1,Blue widget,4006381333931\nSKU-2,Red widget,\n");
    fixture_import(db, org, "stock", "sku,warehouse,on_hand\nSKU-1,WH1,5\nSKU-2,WH1,3\n");
    fixture_import(db, org, "location-stock",
                   "sku,warehouse,location,quantity\nSKU-1,WH1,A-1,5\nSKU-2,WH1,B-2,3\n");
    fixture_import(db, org, "reservations",
                   "ref,sku,warehouse,quantity,status\nR-1,SKU-1,WH1,1,active\n");
    char sql[512];
    snprintf(sql, sizeof(sql),
             "INSERT INTO webhook_endpoints (org_id, id, url, events, secret, created_at) "
             "VALUES (%lld, 'whe_plans', 'http://127.0.0.1:9/hook', "
             "'{stock.changed,locate_list.loaded}', '\\x%s', now())",
             (long long)org, "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
    testdb_exec(db, sql);
}

/* Organizations grown-FIRST..grown-LAST, each with a key, warehouses and bins, rate-limit rows,
 * lists, an idempotency key, an export version and history, a webhook endpoint with delivered
 * events; with catalogue, a catalogue of GROWN_SKUS SKUs in one more organization. Every write
 * on this session: a new session's first temporary table would make PostgreSQL drop every
 * cached plan of every session (a new pg_temp schema), and the plans made while the tables
 * were small must live on. */
static void grow(int first, int last, bool catalogue)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "INSERT INTO organizations (slug, name) SELECT format('grown-%%s', i), 'Grown' "
             "FROM generate_series(%d, %d) AS i",
             first, last);
    testdb_exec(db, sql);
    snprintf(sql, sizeof(sql),
             "CREATE TEMP TABLE new_orgs AS SELECT org_id, slug FROM organizations "
             "WHERE slug ~ '^grown-[0-9]+$' AND substr(slug, 7)::int BETWEEN %d AND %d",
             first, last);
    testdb_exec(db, sql);
    testdb_exec(db, "INSERT INTO api_keys (prefix, org_id, token_hash, scopes, name) "
                    "SELECT 'gr' || lpad(o.org_id::text, 6, '0'), o.org_id, "
                    "sha256(convert_to(format('wlk_gr%s_%s', lpad(o.org_id::text, 6, '0'), "
                    "md5(o.slug)), 'UTF8')), "
                    "ARRAY['lists:write','stock:read','scanner','inventory:write'], 'grown' "
                    "FROM new_orgs o");
    testdb_exec(db, "INSERT INTO warehouses (org_id, code, name, kind) "
                    "SELECT o.org_id, w, 'Grown ' || w, 'own' FROM new_orgs o, "
                    "unnest(ARRAY['WH-A','WH-B']) w");
    testdb_exec(db, "INSERT INTO locations (org_id, warehouse, code, staging, sort_key) "
                    "SELECT o.org_id, 'WH-A', 'BIN-' || n, false, convert_to('BIN-' || n, 'UTF8') "
                    "FROM new_orgs o, generate_series(1, 5) n");
    testdb_exec(db, "INSERT INTO rate_limits (org_id, bucket) SELECT o.org_id, b "
                    "FROM new_orgs o, unnest(ARRAY['locate-lists','stock-export','shared']) b");
    testdb_exec(db, "INSERT INTO locate_lists (org_id, id, name, codes) "
                    "SELECT o.org_id, 'grown-' || o.org_id || '-' || n, 'Grown walk', "
                    "'{SKU-1,SKU-2}' FROM new_orgs o, generate_series(1, 5) n");
    testdb_exec(db, "INSERT INTO idempotency_keys (org_id, key, request_hash, list_id) "
                    "SELECT o.org_id, 'k', '\\x00', 'grown-' || o.org_id || '-1' "
                    "FROM new_orgs o");
    testdb_exec(db, "INSERT INTO export_versions (org_id, version, changed_at) "
                    "SELECT o.org_id, 1000, now() FROM new_orgs o");
    testdb_exec(db, "INSERT INTO export_changes (org_id, version, sku) "
                    "SELECT o.org_id, 1000 + n / 10, 'SKU-' || n FROM new_orgs o, "
                    "generate_series(1, 20) n");
    testdb_exec(db, "INSERT INTO webhook_endpoints (org_id, id, url, events, secret, created_at) "
                    "SELECT o.org_id, 'whe_grown', 'http://127.0.0.1:9/hook', "
                    "'{stock.changed}', sha256(o.slug::bytea), now() "
                    "FROM new_orgs o");
    testdb_exec(db, "INSERT INTO webhook_sequences (org_id, seq) SELECT o.org_id, 3 "
                    "FROM new_orgs o");
    testdb_exec(db, "INSERT INTO webhook_events (org_id, seq, id, type, created_at, data) "
                    "SELECT o.org_id, n, 'msg_' || o.org_id || '_' || n, 'stock.changed', now(), "
                    "'{}' FROM new_orgs o, generate_series(1, 3) n");
    testdb_exec(db, "INSERT INTO webhook_deliveries (org_id, endpoint_id, seq, state, "
                    "next_attempt_at, delivered_at) SELECT org_id, 'whe_grown', seq, "
                    "'delivered', now(), now() FROM webhook_events "
                    "WHERE org_id IN (SELECT org_id FROM new_orgs)");
    testdb_exec(db, "DROP TABLE new_orgs");
    if (!catalogue)
        return;
    int64_t catalogue_org = fixture_org(db, "grown-catalogue");
    wl_generate_options_t options = {.skus = GROWN_SKUS, .seed = 7};
    wl_generate_counts_t counts;
    wl_error_t err;
    wl_error_init(&err);
    if (wl_generate_load(admin, catalogue_org, &options, NULL, &counts, &err) != 0)
        FAIL("generate: %s", err.message);
}

/* The key of grown organization number n (see grow). */
static void grown_key(int n, char key[WL_KEY_TOKEN_SIZE])
{
    char sql[256], token[WL_KEY_TOKEN_SIZE];
    snprintf(sql, sizeof(sql),
             "SELECT format('wlk_gr%%s_%%s', lpad(org_id::text, 6, '0'), md5(slug)) "
             "FROM organizations WHERE slug = 'grown-%d'",
             n);
    testdb_value(db, sql, token, sizeof(token));
    memcpy(key, token, WL_KEY_TOKEN_SIZE);
    fixture_record_token(key);
}

/* The test cluster's server log (tests/pg_fixture.sh): <cluster dir>/postgres.log. */
static void server_log_path(char *path, size_t size)
{
    char state[1024], dir[1024] = "";
    snprintf(state, sizeof(state), "%s/cluster", getenv("WALKLIST_TEST_PGDIR"));
    FILE *f = fopen(state, "r");
    if (f == NULL || fgets(dir, sizeof(dir), f) == NULL)
        FAIL("cannot read %s", state);
    if (f != NULL)
        fclose(f);
    dir[strcspn(dir, "\r\n")] = '\0';
    snprintf(path, size, "%s/postgres.log", dir);
}

static long log_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    return size;
}

typedef struct {
    int step;             /* the growth steps done, less one: which tables have grown */
    int plans;            /* plans of walklistd's statements read */
    int grown_reads;      /* scans of grown tables through an index condition */
    int bad;              /* scans of grown tables without one */
    const char *seen[32]; /* grown tables read at least once */
    size_t seen_count;
} plan_census_t;

/* The list's own copy of table's name (it outlives the plan's JSON). */
static const char *listed(const char *table)
{
    const char *const *lists[] = {tenant_tables, catalogue_tables};
    for (size_t l = 0; l < 2; l++)
        for (size_t i = 0; lists[l][i] != NULL; i++)
            if (strcmp(lists[l][i], table) == 0)
                return lists[l][i];
    return "?";
}

static bool is_grown(const plan_census_t *census, const char *table)
{
    return in_list(tenant_tables, table) || (census->step > 0 && in_list(catalogue_tables, table));
}

static bool was_seen(const plan_census_t *census, const char *table)
{
    for (size_t i = 0; i < census->seen_count; i++)
        if (strcmp(census->seen[i], table) == 0)
            return true;
    return false;
}

/* Indexes that may be read whole: each holds only work not yet done, whatever the number of
 * tenants (the webhook worker's poll starts from the deliveries not yet made). */
static const char *const work_indexes[] = {"webhook_deliveries_pending", NULL};

static bool is_work_index(const char *index)
{
    for (size_t i = 0; index != NULL && work_indexes[i] != NULL; i++)
        if (strcmp(work_indexes[i], index) == 0)
            return true;
    return false;
}

static void check_node(json_t *node, const char *query, plan_census_t *census)
{
    const char *type = json_string_value(json_object_get(node, "Node Type"));
    const char *table = json_string_value(json_object_get(node, "Relation Name"));
    if (type != NULL && is_grown(census, table) && strstr(type, "Scan") != NULL) {
        bool by_key = json_object_get(node, "Index Cond") != NULL ||
                      strcmp(type, "Bitmap Heap Scan") == 0 ||
                      is_work_index(json_string_value(json_object_get(node, "Index Name")));
        if (by_key) {
            census->grown_reads++;
            if (!was_seen(census, table) && census->seen_count < 32)
                census->seen[census->seen_count++] = listed(table);
        } else {
            census->bad++;
            FAIL("%s on %s (no index condition) in: %.600s", type, table, query);
        }
    }
    size_t i;
    json_t *child;
    json_array_foreach(json_object_get(node, "Plans"), i, child) check_node(child, query, census);
}

/* Reads the log from offset to end (-1: to its end): each auto_explain plan of a walklistd
 * session (its lines after the first start with a tab). */
static void read_plans(const char *path, long offset, long end, plan_census_t *census)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL || fseek(f, offset, SEEK_SET) != 0) {
        FAIL("cannot read %s", path);
        if (f != NULL)
            fclose(f);
        return;
    }
    size_t cap = 1 << 16, len = 0;
    char *plan = malloc(cap), *line = NULL;
    size_t line_cap = 0;
    bool in_plan = false;
    ssize_t n;
    for (;;) {
        n = getline(&line, &line_cap, f);
        bool continues = n > 0 && line[0] == '\t';
        if (in_plan && continues) {
            if (len + (size_t)n + 1 > cap)
                plan = realloc(plan, cap = (len + (size_t)n + 1) * 2);
            memcpy(plan + len, line + 1, (size_t)n - 1);
            len += (size_t)n - 1;
            continue;
        }
        if (in_plan) {
            json_error_t error;
            json_t *explained = json_loadb(plan, len, 0, &error);
            if (explained == NULL)
                FAIL("a logged plan is not JSON (%s): %.200s", error.text, plan);
            const char *query = json_string_value(json_object_get(explained, "Query Text"));
            census->plans++;
            check_node(json_object_get(explained, "Plan"), query ? query : "?", census);
            json_decref(explained);
            in_plan = false;
        }
        if (n <= 0 || (end >= 0 && ftell(f) - n >= end))
            break;
        /* walklistd's sessions name themselves walklist, walklist-read, walklistd-...; the
         * test's own (no application name) logs no plans. */
        if (strstr(line, " app=walklist") != NULL && strstr(line, " app=walklistctl") == NULL &&
            strstr(line, "plan:") != NULL) {
            in_plan = true;
            len = 0;
        }
    }
    free(line);
    free(plan);
    fclose(f);
}

int main(void)
{
    const char *conninfo = testdb_create("e2e_plans");
    db = testdb_connect(conninfo);
    wl_error_t connect_err;
    wl_error_init(&connect_err);
    if (wl_admin_connect(conninfo, "test_plans", &admin, &connect_err) != 0)
        FAIL("admin: %s", connect_err.message);
    char log_path[1100];
    server_log_path(log_path, sizeof(log_path));

    /* Nothing refreshes the statistics behind the test's back. */
    const char *const *lists[] = {tenant_tables, catalogue_tables};
    for (size_t l = 0; l < 2; l++)
        for (size_t i = 0; lists[l][i] != NULL; i++) {
            char sql[128];
            snprintf(sql, sizeof(sql), "ALTER TABLE %s SET (autovacuum_enabled = off)",
                     lists[l][i]);
            testdb_exec(db, sql);
        }
    /* Every plan of a session of this database, nested statements included, into the log. */
    testdb_exec(db, "LOAD 'auto_explain'");
    testdb_exec(db, "ALTER DATABASE e2e_plans SET session_preload_libraries = 'auto_explain'");
    testdb_exec(db, "ALTER DATABASE e2e_plans SET auto_explain.log_min_duration = 0");
    testdb_exec(db, "ALTER DATABASE e2e_plans SET auto_explain.log_nested_statements = on");
    testdb_exec(db, "ALTER DATABASE e2e_plans SET auto_explain.log_format = 'json'");

    for (int i = 0; i < SMALL_ORGS; i++) {
        char slug[32];
        snprintf(slug, sizeof(slug), "plans-small-%d", i);
        int64_t org = fixture_org(db, slug);
        fixture_key(db, org, "lists:write,stock:read,scanner,inventory:write", small_keys[i]);
        small_organization(org);
    }
    testdb_exec(db, "ANALYZE");

    const char *args[] = {"--threads",
                          "2",
                          "--db-pool-size",
                          "2",
                          "--webhook-allow-private",
                          "1",
                          "--webhook-poll-ms",
                          "50",
                          "--max-connections-per-ip",
                          "200",
                          NULL};
    service_start(&service, conninfo, args);
    /* PL/pgSQL and prepared statements are planned for their parameters five times, then may
     * keep a generic plan for the session: made here, while every table is small. */
    for (int i = 0; i < SMALL_ORGS; i++)
        every_path(small_keys[i]);

    /* The tables grow in two steps, each followed by the requests whose plans count (the same
     * process, its cached plans): tenfold in tenants, where a plan may still think a whole
     * table cheap to read, then a thousandfold, with a catalogue. */
    const struct {
        int first, last;
        bool catalogue;
    } steps[] = {{1, GROWN_ORGS / 10, false}, {GROWN_ORGS / 10 + 1, GROWN_ORGS, true}};
    long offsets[3];
    for (size_t step = 0; step < 2; step++) {
        grow(steps[step].first, steps[step].last, steps[step].catalogue);
        char grown_keys[GROWN_CLIENTS][WL_KEY_TOKEN_SIZE];
        for (int i = 0; i < GROWN_CLIENTS; i++) {
            int n = steps[step].first + i;
            grown_key(n, grown_keys[i]);
            char sql[128];
            snprintf(sql, sizeof(sql), "SELECT org_id FROM organizations WHERE slug = 'grown-%d'",
                     n);
            small_organization(testdb_count(db, sql));
        }
        offsets[step] = log_size(log_path);
        CHECK(offsets[step] >= 0);
        for (int i = 0; i < SMALL_ORGS; i++)
            every_path(small_keys[i]);
        for (int i = 0; i < GROWN_CLIENTS; i++)
            every_path(grown_keys[i]);
        char together[TOGETHER][WL_KEY_TOKEN_SIZE];
        for (int i = 0; i < TOGETHER; i++)
            grown_key(steps[step].first + GROWN_CLIENTS + i, together[i]);
        create_together(together, TOGETHER);
        for (int i = 0; i < GROWN_CLIENTS; i++) {
            char key[WL_KEY_TOKEN_SIZE];
            grown_key(steps[step].first + GROWN_CLIENTS + TOGETHER + i, key);
            expect(get(key, "/api/v1/stock-export", "If-None-Match: \"0-0\"\r\n"), 200,
                   "GET /api/v1/stock-export (If-None-Match, the key's first request)");
        }
    }
    CHECK(testdb_count(db, "SELECT count(*) FROM stock_availability") > GROWN_SKUS / 2);
    CHECK(testdb_count(db, "SELECT count(*) FROM rate_limits") >= 3 * GROWN_ORGS);
    CHECK_INT(service_stop(&service), 0);
    offsets[2] = -1;

    /* After each step, the tables it and the steps before it grew. */
    plan_census_t census = {0};
    for (int step = 0; step < 2; step++) {
        census.step = step;
        read_plans(log_path, offsets[step], offsets[step + 1], &census);
    }
    CHECK_INT(census.bad, 0);
    /* The log held the plans: every request path read its tables, by key. */
    if (census.plans < 100 || census.grown_reads < 100)
        FAIL("only %d plans with %d reads of grown tables in the log", census.plans,
             census.grown_reads);
    const char *must_read[] = {"api_keys",           "rate_limits",
                               "locate_lists",       "idempotency_keys",
                               "stock_availability", "export_versions",
                               "export_changes",     "stock",
                               "webhook_endpoints",  NULL};
    for (size_t m = 0; must_read[m] != NULL; m++)
        if (!was_seen(&census, must_read[m]))
            FAIL("no plan read %s", must_read[m]);
    printf("%d plans, %d reads of grown tables by key, %d without\n", census.plans,
           census.grown_reads, census.bad);

    wl_admin_close(admin);
    PQfinish(db);
    return test_exit();
}
