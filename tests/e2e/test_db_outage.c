/* Database outages: quick 503s (with Retry-After) while PostgreSQL is down, recovery without a
 * restart, and no acknowledged walk list lost. Uses a PostgreSQL of its own. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "fixture.h"
#include "private_pg.h"
#include "service.h"
#include "testdb.h"

static char state_dir[512];
static char conninfo[1024];
static service_t service;
static char key[WL_KEY_TOKEN_SIZE];

static int cluster(const char *action)
{
    return private_pg(state_dir, action);
}

/* Whatever happens, the private cluster does not outlive the test. */
static void remove_cluster(void)
{
    if (service.pid > 0)
        service_stop(&service);
    cluster("remove");
}

static http_response_t create_list(const char *name)
{
    char body[256];
    snprintf(body, sizeof(body), "{\"name\":\"%s\",\"codes\":[\"A\",\"B\"]}", name);
    return e2e_request(service.port, "POST", "/api/v1/locate-lists", key, "application/json", body);
}

/* Polls until a creation succeeds again; returns its status. */
static int wait_for_recovery(void)
{
    for (int attempt = 0; attempt < 100; attempt++) {
        http_response_t res = create_list("after");
        int status = res.status;
        http_response_free(&res);
        if (status == 201)
            return status;
        usleep(100 * 1000);
    }
    return 0;
}

/* The status /readyz settles on within five seconds. */
static int readyz_within(int status)
{
    int seen = 0;
    for (int i = 0; i < 50 && seen != status; i++) {
        if (i > 0) {
            struct timespec pause = {0, 100000000};
            nanosleep(&pause, NULL);
        }
        http_response_t res = e2e_request(service.port, "GET", "/readyz", NULL, NULL, NULL);
        seen = res.status;
        http_response_free(&res);
    }
    return seen;
}

static void check_outage(void)
{
    double started = test_now_s();
    http_response_t res = create_list("during");
    CHECK_ERROR(res, 503, "UNAVAILABLE", NULL);
    char retry[16];
    CHECK(http_header(&res, "Retry-After", retry, sizeof(retry)) != NULL);
    http_response_free(&res);
    /* --db-timeout-ms is 1000: the answer must not hang far past it. */
    CHECK(test_now_s() - started < 8.0);
    res = e2e_request(service.port, "GET", "/api/v1/stock-export", key, NULL, NULL);
    CHECK_ERROR(res, 503, "UNAVAILABLE", NULL);
    http_response_free(&res);
    /* /readyz keeps its answer a second (probes poll it from many places). */
    CHECK_INT(readyz_within(503), 503);
    res = e2e_request(service.port, "GET", "/healthz", NULL, NULL, NULL);
    CHECK_INT(res.status, 200);
    http_response_free(&res);
}

int main(void)
{
    snprintf(state_dir, sizeof(state_dir), "%s/outage-pg-%d", getenv("WALKLIST_TEST_PGDIR"),
             (int)getpid());
    atexit(remove_cluster);
    if (cluster("create") != 0) {
        fprintf(stderr, "could not create the private cluster\n");
        return 1;
    }
    if (!private_pg_conninfo(state_dir, conninfo, sizeof(conninfo)))
        return 1;
    PGconn *db = testdb_connect(conninfo);
    fixture_key(db, fixture_org(db, "outage"), "lists:write,stock:read", key);
    PQfinish(db);

    const char *args[] = {"--db-timeout-ms", "1000", NULL};
    service_start(&service, conninfo, args);
    char ids[8][64];
    int acknowledged = 0;
    http_response_t res = create_list("before");
    CHECK_INT(res.status, 201);
    snprintf(ids[acknowledged++], sizeof(ids[0]), "%s", e2e_str(res.json, "id", NULL));
    http_response_free(&res);

    /* A clean shutdown of PostgreSQL, then back. */
    CHECK_INT(cluster("stop"), 0);
    check_outage();
    CHECK_INT(cluster("start"), 0);
    CHECK_INT(wait_for_recovery(), 201);

    /* A crash (kill -9 of the postmaster), then back. */
    res = create_list("before crash");
    CHECK_INT(res.status, 201);
    snprintf(ids[acknowledged++], sizeof(ids[0]), "%s", e2e_str(res.json, "id", NULL));
    http_response_free(&res);
    CHECK_INT(cluster("kill"), 0);
    check_outage();
    CHECK_INT(cluster("start"), 0);
    CHECK_INT(wait_for_recovery(), 201);
    CHECK_INT(readyz_within(200), 200);

    /* Every list answered 201 exists with its codes. */
    db = testdb_connect(conninfo);
    for (int i = 0; i < acknowledged; i++) {
        char sql[1024], codes[64];
        snprintf(sql, sizeof(sql), "SELECT codes::text FROM locate_lists WHERE id = '%s'", ids[i]);
        CHECK_STR(testdb_value(db, sql, codes, sizeof(codes)), "{A,B}");
    }
    PQfinish(db);

    CHECK_INT(service_stop(&service), 0);
    return test_exit();
}
