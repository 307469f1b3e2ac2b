/* --database-read-url: the export and the breakdown read from the replica, everything else
 * from the primary. Two databases with different stock stand in for primary and replica. */
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"

static void load(PGconn *db, int64_t org, const char *on_hand)
{
    char stock[128];
    fixture_import(db, org, "warehouses", "code,name,kind\nW,Main,own\n");
    fixture_import(db, org, "products", "sku,name,eans\nP,Product,\n");
    snprintf(stock, sizeof(stock), "sku,warehouse,on_hand\nP,W,%s\n", on_hand);
    fixture_import(db, org, "stock", stock);
}

/* A counter of /metrics, by its whole name with labels; -1 when absent. */
static long long metric(uint16_t port, const char *name)
{
    http_response_t res = e2e_request(port, "GET", "/metrics", NULL, NULL, NULL);
    long long value = -1;
    char *at = res.body != NULL ? strstr(res.body, name) : NULL;
    if (at != NULL && at[strlen(name)] == ' ')
        value = strtoll(at + strlen(name) + 1, NULL, 10);
    http_response_free(&res);
    return value;
}

int main(void)
{
    char primary_info[1200], replica_info[1200];
    snprintf(primary_info, sizeof(primary_info), "%s", testdb_create("e2e_read_primary"));
    snprintf(replica_info, sizeof(replica_info), "%s", testdb_create("e2e_read_replica"));
    PGconn *primary = testdb_connect(primary_info);
    PGconn *replica = testdb_connect(replica_info);
    int64_t org = fixture_org(primary, "replicated");
    CHECK_INT(fixture_org(replica, "replicated"), org);
    char key[WL_KEY_TOKEN_SIZE];
    fixture_key(primary, org, "lists:write,stock:read", key);
    load(primary, org, "5");
    load(replica, org, "7");

    service_t service;
    const char *args[] = {"--database-read-url", replica_info, NULL};
    service_start(&service, primary_info, args);

    /* A cold export (nothing of the organization cached, no If-None-Match) borrows one
     * connection: its snapshot reads the version too. */
    const char *read_borrows = "walklist_db_borrows_total{pool=\"read\"}";
    long long borrowed = metric(service.port, read_borrows);
    CHECK(borrowed >= 0);
    http_response_t res = e2e_request(service.port, "GET", "/api/v1/stock-export", key, NULL, NULL);
    CHECK_INT(res.status, 200);
    json_t *items = json_object_get(res.json, "items");
    CHECK_INT(json_integer_value(json_object_get(json_array_get(items, 0), "qty")), 7);
    http_response_free(&res);
    CHECK_INT(metric(service.port, read_borrows) - borrowed, 1);
    res = e2e_request(service.port, "GET", "/api/v1/stock", key, NULL, NULL);
    CHECK_INT(res.status, 200);
    items = json_object_get(res.json, "items");
    CHECK_INT(json_integer_value(json_object_get(json_array_get(items, 0), "onHand")), 7);
    http_response_free(&res);

    /* Writes and keys stay on the primary. */
    res = e2e_request(service.port, "POST", "/api/v1/locate-lists", key, "application/json",
                      "{\"name\":\"n\",\"codes\":[\"P\"]}");
    CHECK_INT(res.status, 201);
    http_response_free(&res);
    CHECK_INT(testdb_count(primary, "SELECT count(*) FROM locate_lists"), 1);
    CHECK_INT(testdb_count(replica, "SELECT count(*) FROM locate_lists"), 0);
    res = e2e_request(service.port, "GET", "/readyz", NULL, NULL, NULL);
    CHECK_INT(res.status, 200);
    http_response_free(&res);

    CHECK_INT(service_stop(&service), 0);

    /* Without the flag, everything reads the primary. */
    service_start(&service, primary_info, NULL);
    res = e2e_request(service.port, "GET", "/api/v1/stock-export", key, NULL, NULL);
    items = json_object_get(res.json, "items");
    CHECK_INT(json_integer_value(json_object_get(json_array_get(items, 0), "qty")), 5);
    http_response_free(&res);
    CHECK_INT(service_stop(&service), 0);
    PQfinish(primary);
    PQfinish(replica);
    return test_exit();
}
