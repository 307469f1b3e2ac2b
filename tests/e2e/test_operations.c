/* Operations: health and readiness, metrics, request ids, the log line, graceful shutdown. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"

static service_t service;
static PGconn *db;
static char key[WL_KEY_TOKEN_SIZE];

static void test_health_and_request_ids(void)
{
    http_response_t res = e2e_request(service.port, "GET", "/healthz", NULL, NULL, NULL);
    CHECK_INT(res.status, 200);
    http_response_free(&res);
    res = e2e_request(service.port, "GET", "/readyz", NULL, NULL, NULL);
    CHECK_INT(res.status, 200);
    http_response_free(&res);

    char id[80];
    http_request(service.port, "GET", "/healthz", "X-Request-Id: trace-42\r\n", NULL, 0, &res);
    CHECK_STR(http_header(&res, "X-Request-Id", id, sizeof(id)), "trace-42");
    http_response_free(&res);
    http_request(service.port, "GET", "/healthz", "X-Request-Id: has space\r\n", NULL, 0, &res);
    CHECK(http_header(&res, "X-Request-Id", id, sizeof(id)) != NULL && strlen(id) == 20 &&
          strchr(id, ' ') == NULL);
    http_response_free(&res);
    res = e2e_request(service.port, "GET", "/healthz", NULL, NULL, NULL);
    CHECK(http_header(&res, "X-Request-Id", id, sizeof(id)) != NULL && strlen(id) == 20);
    http_response_free(&res);
}

/* The value of a series: the line that starts with it (HELP and TYPE lines do not). */
static long long metric(const char *text, const char *series)
{
    char needle[512];
    snprintf(needle, sizeof(needle), "\n%s ", series);
    const char *at = strstr(text, needle);
    return at == NULL ? -1 : atoll(at + strlen(needle));
}

static void test_metrics(void)
{
    /* Keys are kept once the key watch listens (it connects in the background). */
    for (int i = 0; i < 100; i++) {
        http_response_t res = e2e_request(service.port, "GET", "/metrics", NULL, NULL, NULL);
        bool up = res.body != NULL && metric(res.body, "walklist_key_watch_up") == 1;
        http_response_free(&res);
        if (up)
            break;
        struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    for (int i = 0; i < 3; i++) {
        http_response_t res =
            e2e_request(service.port, "GET", "/api/v1/stock-export", key, NULL, NULL);
        CHECK_INT(res.status, 200);
        http_response_free(&res);
    }
    /* The stock-export bucket allows 4 a minute here: the next two are 429s. */
    for (int i = 0; i < 3; i++) {
        http_response_t res =
            e2e_request(service.port, "GET", "/api/v1/stock-export", key, NULL, NULL);
        CHECK_INT(res.status, i == 0 ? 200 : 429);
        http_response_free(&res);
    }
    http_response_t res = e2e_request(service.port, "GET", "/nowhere", NULL, NULL, NULL);
    http_response_free(&res);

    res = e2e_request(service.port, "GET", "/metrics", NULL, NULL, NULL);
    CHECK_INT(res.status, 200);
    char type[80];
    CHECK_STR(http_header(&res, "Content-Type", type, sizeof(type)),
              "text/plain; version=0.0.4; charset=utf-8");
    const char *text = res.body ? res.body : "";
    CHECK_INT(
        metric(text, "walklist_http_requests_total{route=\"/api/v1/stock-export\",status=\"200\"}"),
        4);
    CHECK_INT(
        metric(text, "walklist_http_requests_total{route=\"/api/v1/stock-export\",status=\"429\"}"),
        2);
    CHECK_INT(metric(text, "walklist_http_requests_total{route=\"unmatched\",status=\"404\"}"), 1);
    CHECK_INT(
        metric(text,
               "walklist_http_request_duration_seconds_count{route=\"/api/v1/stock-export\"}"),
        6);
    CHECK_INT(metric(text, "walklist_http_request_duration_seconds_bucket{route=\"/api/v1/"
                           "stock-export\",le=\"+Inf\"}"),
              6);
    CHECK_INT(metric(text, "walklist_rate_limit_rejections_total{bucket=\"stock-export\"}"), 2);
    CHECK(metric(text, "walklist_db_pool_connections{state=\"in_use\"}") >= 0);
    CHECK(metric(text, "walklist_db_pool_connections{state=\"idle\"}") >= 1);
    CHECK(metric(text, "walklist_db_pool_size") >= 1);
    /* The key is checked in the database once (counting that request there too), then kept;
     * a limit of 4 never leases, so requests 2-5 ask the database for one permit each (the
     * fifth is refused), and the full bucket is remembered: the sixth is refused here. */
    CHECK_INT(metric(text, "walklist_key_watch_up"), 1);
    CHECK_INT(metric(text, "walklist_key_checks_total{source=\"database\"}"), 1);
    CHECK_INT(metric(text, "walklist_key_checks_total{source=\"cache\"}"), 5);
    CHECK_INT(metric(text, "walklist_rate_limit_decisions_total{source=\"database\"}"), 4);
    CHECK_INT(metric(text, "walklist_rate_limit_decisions_total{source=\"lease\"}"), 1);
    CHECK_INT(metric(text, "walklist_rate_limit_refills_total"), 0);
    CHECK(strstr(text, "# TYPE walklist_http_request_duration_seconds histogram") != NULL);
    http_response_free(&res);
}

static void test_log_lines(void)
{
    char *log = service_log(&service);
    int requests = 0;
    for (char *line = strtok(log, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        json_error_t error;
        json_t *entry = json_loads(line, 0, &error);
        CHECK(entry != NULL);
        if (entry == NULL) {
            fprintf(stderr, "not JSON: %s\n", line);
            continue;
        }
        const char *msg = json_string_value(json_object_get(entry, "msg"));
        if (msg != NULL && strcmp(msg, "request") == 0) {
            requests++;
            CHECK(json_is_string(json_object_get(entry, "method")));
            CHECK(json_is_string(json_object_get(entry, "route")));
            CHECK(json_is_integer(json_object_get(entry, "status")));
            CHECK(json_is_number(json_object_get(entry, "durationMs")));
            CHECK(json_is_string(json_object_get(entry, "org")));
            CHECK(json_is_string(json_object_get(entry, "requestId")));
        }
        json_decref(entry);
    }
    free(log);
    CHECK(requests >= 10);
    log = service_log(&service);
    CHECK(strstr(log, key) == NULL);
    CHECK(strstr(log, "\"org\":\"ops\"") != NULL);
    CHECK(strstr(log, "\"requestId\":\"trace-42\"") != NULL);
    free(log);
}

static int readyz_within(int status, int tries)
{
    int seen = 0;
    for (int i = 0; i < tries; i++) {
        http_response_t res = e2e_request(service.port, "GET", "/readyz", NULL, NULL, NULL);
        seen = res.status;
        http_response_free(&res);
        if (seen == status)
            break;
        struct timespec pause = {0, 100000000};
        nanosleep(&pause, NULL);
    }
    return seen;
}

/* /readyz runs a statement of the product (an empty admission), so a database that answers
 * but cannot serve requests (here: the admission function gone) is not ready; the answer is
 * kept a second, so it changes within about that. */
static void test_readyz_checks_the_product(void)
{
    CHECK_INT(readyz_within(200, 50), 200);
    testdb_exec(db, "ALTER FUNCTION wl_admit RENAME TO wl_admit_away");
    CHECK_INT(readyz_within(503, 50), 503);
    http_response_t res = e2e_request(service.port, "GET", "/readyz", NULL, NULL, NULL);
    CHECK_INT(res.status, 503);
    CHECK(res.body != NULL && strstr(res.body, "walklistctl migrate") != NULL);
    http_response_free(&res);
    testdb_exec(db, "ALTER FUNCTION wl_admit_away RENAME TO wl_admit");
    CHECK_INT(readyz_within(200, 50), 200);
}

/* An applied migration that differs from the build's (edited after it was applied: simulated
 * by changing its recorded checksum) makes /readyz 503, naming the migration. */
static void test_readyz_checks_migration_checksums(void)
{
    char checksum[80];
    testdb_value(db, "SELECT checksum FROM schema_migrations WHERE version = 1", checksum,
                 sizeof(checksum));
    CHECK(strlen(checksum) == 64);
    testdb_exec(db, "UPDATE schema_migrations SET checksum = repeat('0', 64) WHERE version = 1");
    CHECK_INT(readyz_within(503, 50), 503);
    http_response_t res = e2e_request(service.port, "GET", "/readyz", NULL, NULL, NULL);
    CHECK_INT(res.status, 503);
    CHECK(res.body != NULL && strstr(res.body, "differs from this build") != NULL);
    CHECK(res.body != NULL && strstr(res.body, "0001_schema") != NULL);
    http_response_free(&res);
    char sql[160];
    snprintf(sql, sizeof(sql), "UPDATE schema_migrations SET checksum = '%s' WHERE version = 1",
             checksum);
    testdb_exec(db, sql);
    CHECK_INT(readyz_within(200, 50), 200);
}

/* A key a client puts where the log shows it (the path, however encoded; the request id) is
 * redacted there; the secret part never appears, whole or cut. */
static void test_keys_redacted_in_log_lines(void)
{
    char secret_start[24];
    snprintf(secret_start, sizeof(secret_start), "%.16s", key + 13); /* after "wlk_" + 8 + "_" */
    char encoded[WL_KEY_TOKEN_SIZE * 3];
    size_t used = 0;
    for (const char *p = key; *p != '\0'; p++)
        used +=
            (size_t)snprintf(encoded + used, sizeof(encoded) - used, "%%%02X", (unsigned char)*p);
    char targets[6][320];
    snprintf(targets[0], sizeof(targets[0]), "/api/v1/locate-lists%%3Fapi_key=%s", key);
    snprintf(targets[1], sizeof(targets[1]), "/api/v1/locate-lists;api_key=%s", key);
    snprintf(targets[2], sizeof(targets[2]), "/api/v1/locate-lists/%s", key);
    snprintf(targets[3], sizeof(targets[3]), "/api/v1/locate-lists/%s", encoded);
    snprintf(targets[4], sizeof(targets[4]), "/nope/%0180d/%s", 0, key);
    snprintf(targets[5], sizeof(targets[5]), "/api/v1/stock-export");
    for (int i = 0; i < 6; i++) {
        char headers[256];
        snprintf(headers, sizeof(headers), "Authorization: Bearer %s\r\nX-Request-Id: %s\r\n", key,
                 i == 5 ? key : "redaction");
        http_response_t res;
        CHECK_INT(http_request(service.port, "GET", targets[i], headers, NULL, 0, &res), 0);
        http_response_free(&res);
    }
    char *log = service_log(&service);
    CHECK(strstr(log, secret_start) == NULL);
    CHECK(strstr(log, "\"path\":\"/api/v1/locate-lists%3Fapi_key=REDACTED\"") != NULL);
    CHECK(strstr(log, "\"path\":\"/api/v1/locate-lists/REDACTED\"") != NULL);
    CHECK(strstr(log, "\"requestId\":\"REDACTED\"") != NULL);
    free(log);
}

/* SIGTERM: new connections are refused, a request in flight still completes, exit status 0. */
static void test_graceful_shutdown(void)
{
    long long before = testdb_count(db, "SELECT count(*) FROM locate_lists");
    const char *body = "{\"name\":\"in flight\",\"codes\":[\"A\"]}";
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(service.port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0);
    char head[512];
    int n = snprintf(head, sizeof(head),
                     "POST /api/v1/locate-lists HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                     "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n",
                     key, strlen(body));
    CHECK(send(fd, head, (size_t)n, 0) == n);
    CHECK(send(fd, body, 10, 0) == 10); /* half the body: the request is in flight */
    usleep(200 * 1000);

    kill(service.pid, SIGTERM);
    usleep(300 * 1000);
    /* No longer accepting. */
    int probe = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(connect(probe, (struct sockaddr *)&addr, sizeof(addr)) != 0);
    close(probe);

    CHECK(send(fd, body + 10, strlen(body) - 10, 0) == (ssize_t)(strlen(body) - 10));
    char answer[2048] = "";
    size_t got = 0;
    ssize_t r;
    while (got < sizeof(answer) - 1 &&
           (r = recv(fd, answer + got, sizeof(answer) - 1 - got, 0)) > 0)
        got += (size_t)r;
    answer[got] = '\0';
    CHECK(strncmp(answer, "HTTP/1.1 201", 12) == 0);
    close(fd);
    CHECK_INT(service_stop(&service), 0);
    CHECK_INT(testdb_count(db, "SELECT count(*) FROM locate_lists"), before + 1);
}

int main(void)
{
    const char *conninfo = testdb_create("e2e_operations");
    db = testdb_connect(conninfo);
    int64_t org = fixture_org(db, "ops");
    fixture_key(db, org, "lists:write,stock:read", key);
    const char *args[] = {"--rate-limit-stock-export", "4", NULL};
    service_start(&service, conninfo, args);

    test_health_and_request_ids();
    test_metrics();
    test_log_lines();
    test_keys_redacted_in_log_lines();
    test_readyz_checks_the_product();
    test_readyz_checks_migration_checksums();
    test_graceful_shutdown();

    PQfinish(db);
    return test_exit();
}
