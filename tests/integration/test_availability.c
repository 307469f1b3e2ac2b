/* stock_availability stays right when two writers of one organization overlap. */
#include <stdlib.h>
#include <unistd.h>

#include "fixture.h"
#include "test.h"
#include "testdb.h"

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
    usleep(300 * 1000); /* let B block on A's lock */
    CHECK(PQisBusy(b) || PQconsumeInput(b) == 1);
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
    PQfinish(a);
    PQfinish(b);
    return test_exit();
}
