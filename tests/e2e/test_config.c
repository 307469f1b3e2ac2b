/*
 * walklistd's configuration: a bad flag or environment value stops it at once with exit status 2
 * and a message naming the setting, before it opens anything; the key cache and permit leases can
 * be switched off, and requests are then decided in PostgreSQL every time.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"

static void test_bad_values(const char *conninfo)
{
    static const struct {
        const char *flag, *value, *env;
    } cases[] = {
        {"--rate-lease-ms", "-1", NULL},
        {"--rate-lease-ms", "60001", NULL},
        {"--rate-lease-ms", "10s", NULL},
        {"--key-cache-ttl-ms", "3600001", NULL},
        {"--key-cache-ttl-ms", "", NULL},
        {"--rate-lease-ms", NULL, "WALKLIST_RATE_LEASE_MS=soon"},
        {"--key-cache-ttl-ms", NULL, "WALKLIST_KEY_CACHE_TTL_MS=-5"},
        {"--rate-limit-shared", "0", NULL},
        {"--threads", "0", NULL},
        {"--commit-groups", "65", NULL},
        {"--commit-groups", "-1", NULL},
        {"--commit-groups", NULL, "WALKLIST_COMMIT_GROUPS=two"},
        {"--tls-min-version", "1.1", NULL},
        {"--tls-min-version", NULL, "WALKLIST_TLS_MIN_VERSION=1.0"},
        {"--bogus-flag", "1", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *args[] = {"--database-url",
                              conninfo,
                              "--listen",
                              "127.0.0.1:0",
                              cases[i].value ? cases[i].flag : NULL,
                              cases[i].value,
                              NULL};
        char err[2048];
        CHECK_INT(service_run(args, cases[i].env, err, sizeof(err)), 2);
        CHECK(strstr(err, cases[i].flag) != NULL);
        /* Refused before serving: it never listened. */
        CHECK(strstr(err, "\"msg\":\"listening\"") == NULL);
    }
}

static long long metric(const char *text, const char *series)
{
    char needle[256];
    snprintf(needle, sizeof(needle), "\n%s ", series);
    const char *at = strstr(text, needle);
    return at == NULL ? -1 : atoll(at + strlen(needle));
}

static void create_lists(uint16_t port, const char *key, int count)
{
    for (int i = 0; i < count; i++) {
        http_response_t res =
            e2e_request(port, "POST", "/api/v1/locate-lists", key, "application/json",
                        "{\"name\":\"Config\",\"codes\":[\"SKU-1\"]}");
        CHECK_INT(res.status, 201);
        http_response_free(&res);
    }
}

static long long metric_of(uint16_t port, const char *series)
{
    http_response_t res = e2e_request(port, "GET", "/metrics", NULL, NULL, NULL);
    long long value = metric(res.body ? res.body : "", series);
    http_response_free(&res);
    return value;
}

/* By default requests go through group commit, each list with its key check and rate-limit
 * decision (one statement each); one at a time, each is its own group. */
static void test_group_commit_counts(const char *conninfo, PGconn *db)
{
    int64_t org = fixture_org(db, "config-groups");
    char key[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org, "lists:write", key);
    service_t service;
    service_start(&service, conninfo, NULL);
    create_lists(service.port, key, 3);
    CHECK_INT(metric_of(service.port, "walklist_admission_commits_total"), 3);
    CHECK_INT(metric_of(service.port, "walklist_admission_requests_total"), 3);
    CHECK_INT(service_stop(&service), 0);
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM locate_lists WHERE org_id = %lld",
             (long long)org);
    CHECK_INT(testdb_count(db, sql), 3);
}

/* With all three switched off, every key check and every rate decision is made in PostgreSQL,
 * and every request commits alone, outside any group. */
static void test_switched_off(const char *conninfo, PGconn *db)
{
    int64_t org = fixture_org(db, "config-off");
    char key[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org, "stock:read,lists:write", key);
    const char *args[] = {
        "--key-cache-ttl-ms", "0", "--rate-lease-ms", "0", "--commit-groups", "0", NULL};
    service_t service;
    service_start(&service, conninfo, args);
    for (int i = 0; i < 5; i++) {
        http_response_t res =
            e2e_request(service.port, "GET", "/api/v1/stock-export", key, NULL, NULL);
        CHECK_INT(res.status, 200);
        http_response_free(&res);
    }
    http_response_t res = e2e_request(service.port, "GET", "/metrics", NULL, NULL, NULL);
    const char *text = res.body ? res.body : "";
    CHECK_INT(metric(text, "walklist_key_checks_total{source=\"cache\"}"), 0);
    CHECK_INT(metric(text, "walklist_rate_limit_decisions_total{source=\"lease\"}"), 0);
    CHECK_INT(metric(text, "walklist_rate_limit_refills_total"), 0);
    http_response_free(&res);
    create_lists(service.port, key, 2);
    CHECK_INT(metric_of(service.port, "walklist_admission_commits_total"), 7);
    CHECK_INT(metric_of(service.port, "walklist_admission_requests_total"), 7);
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM locate_lists WHERE org_id = %lld",
             (long long)org);
    CHECK_INT(testdb_count(db, sql), 2);
    CHECK_INT(testdb_count(db, "SELECT coalesce(sum(c), 0) FROM rate_limits r, unnest(r.hits,"
                               " coalesce(r.counts, array_fill(1, ARRAY[cardinality(r.hits)])))"
                               " AS u(h, c) WHERE r.bucket = 'stock-export'"),
              5);
    CHECK_INT(service_stop(&service), 0);
}

int main(void)
{
    const char *conninfo = testdb_create("e2e_config");
    PGconn *db = testdb_connect(conninfo);
    test_bad_values(conninfo);
    test_switched_off(conninfo, db);
    test_group_commit_counts(conninfo, db);
    PQfinish(db);
    return test_exit();
}
