/*
 * Crashes under a creation load, on a private PostgreSQL with durable settings
 * (tests/pg_cluster.sh): four client threads POST walk lists continuously, every other one
 * with an Idempotency-Key, while
 *   (a) the PostgreSQL postmaster is killed (kill -9) and started again: every request answers
 *       201 or 503, each 503 within a few seconds (--db-timeout-ms 1000), and the same
 *       walklistd serves 201s again once the database is back, without a restart;
 *   (b) walklistd itself is killed (SIGKILL) and started again.
 * After each: every id answered 201 exists with its name and codes; every row is a whole list
 * (the codes its name says, 1 to 200 of them) with an idempotency row exactly when a key was
 * sent; no idempotency row points nowhere; and every keyed request that got no 201 answers 201
 * on a retry with the same key, leaving exactly one list for that key.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
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

#define LOADERS          4
#define ATTEMPTS_PER_RUN 800 /* per loader and phase: the load is bounded in count ... */
#define PHASE_SECONDS    30  /* ... and in time */
#define SLOW_503_SECONDS 5.0 /* --db-timeout-ms is 1000 */

static char state_dir[512];
static char conninfo[1024];
static service_t service;
static char key[WL_KEY_TOKEN_SIZE];
static int64_t org_id;

typedef struct {
    int status;
    bool keyed;
    double seconds;
    char name[64];
    char id[48];
} attempt_t;

typedef struct {
    char phase;
    int loader;
    attempt_t attempts[ATTEMPTS_PER_RUN];
    int count;
} loader_t;

static loader_t loaders[LOADERS];
static atomic_int stop_load;
static atomic_int created; /* 201s so far in the phase */
static atomic_int port_in_use;

static int cluster(const char *action)
{
    return private_pg(state_dir, action);
}

static void remove_cluster(void)
{
    if (service.pid > 0)
        service_stop(&service);
    cluster("remove");
}

static void pause_ms(int ms)
{
    struct timespec pause = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&pause, NULL);
}

/* The list a name stands for: "f<phase> t<loader> n<n> c<count> k|-" has codes
 * "<phase><loader>N<n>C0" ... "C<count-1>", and an Idempotency-Key when it ends in k. */
static int codes_count_of(int n)
{
    return n % 5 == 4 ? 200 : 1 + (n % 4) * 50;
}

static char *list_body(char phase, int loader, int n, const char *name)
{
    size_t cap = 256 + 24 * 200;
    char *body = malloc(cap);
    size_t used = (size_t)snprintf(body, cap, "{\"name\":\"%s\",\"codes\":[", name);
    for (int i = 0; i < codes_count_of(n); i++)
        used += (size_t)snprintf(body + used, cap - used, "%s\"%c%dN%dC%d\"", i ? "," : "", phase,
                                 loader, n, i);
    snprintf(body + used, cap - used, "]}");
    return body;
}

/* The codes column as PostgreSQL prints text[] for the list named name. */
static int expected_codes_text(const char *name, char *out, size_t size, bool *keyed)
{
    char phase, flag;
    int loader, n, count;
    if (sscanf(name, "f%c t%d n%d c%d %c", &phase, &loader, &n, &count, &flag) != 5 ||
        count != codes_count_of(n))
        return -1;
    *keyed = flag == 'k';
    size_t used = (size_t)snprintf(out, size, "{");
    for (int i = 0; i < count && used < size; i++)
        used += (size_t)snprintf(out + used, size - used, "%s%c%dN%dC%d", i ? "," : "", phase,
                                 loader, n, i);
    if (used < size)
        snprintf(out + used, size - used, "}");
    return 0;
}

static http_response_t create(char phase, int loader, int n, bool keyed, const char *name)
{
    char *body = list_body(phase, loader, n, name);
    char headers[512];
    int used = snprintf(headers, sizeof(headers),
                        "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                        "X-Request-Id: f%c-t%d-n%d\r\n",
                        key, phase, loader, n);
    if (keyed)
        snprintf(headers + used, sizeof(headers) - (size_t)used,
                 "Idempotency-Key: fault-%c-%d-%d\r\n", phase, loader, n);
    http_response_t res;
    http_request((uint16_t)atomic_load(&port_in_use), "POST", "/api/v1/locate-lists", headers, body,
                 strlen(body), &res);
    free(body);
    return res;
}

static void *load(void *arg)
{
    loader_t *l = arg;
    double deadline = test_now_s() + PHASE_SECONDS;
    for (int n = 0; n < ATTEMPTS_PER_RUN && !atomic_load(&stop_load) && test_now_s() < deadline;
         n++) {
        attempt_t *a = &l->attempts[l->count++];
        a->keyed = n % 2 == 0;
        snprintf(a->name, sizeof(a->name), "f%c t%d n%d c%d %c", l->phase, l->loader, n,
                 codes_count_of(n), a->keyed ? 'k' : '-');
        double started = test_now_s();
        http_response_t res = create(l->phase, l->loader, n, a->keyed, a->name);
        a->seconds = test_now_s() - started;
        a->status = res.status;
        if (res.status == 201) {
            const char *id = e2e_str(res.json, "id", NULL);
            snprintf(a->id, sizeof(a->id), "%s", id ? id : "");
            atomic_fetch_add(&created, 1);
        }
        http_response_free(&res);
        /* A client backs off a little on a failure (503 says Retry-After: 1; less here, to
         * keep the load on). */
        if (a->status != 201)
            pause_ms(50);
    }
    return NULL;
}

static pthread_t threads[LOADERS];

static void start_load(char phase)
{
    atomic_store(&stop_load, 0);
    atomic_store(&created, 0);
    for (int i = 0; i < LOADERS; i++) {
        loaders[i].phase = phase;
        loaders[i].loader = i;
        loaders[i].count = 0;
        pthread_create(&threads[i], NULL, load, &loaders[i]);
    }
}

static void stop_load_and_join(void)
{
    atomic_store(&stop_load, 1);
    for (int i = 0; i < LOADERS; i++)
        pthread_join(threads[i], NULL);
}

/* Waits until at least n more lists were created (or seconds passed); returns the 201s. */
static int wait_created(int n, double seconds)
{
    int from = atomic_load(&created);
    double deadline = test_now_s() + seconds;
    while (atomic_load(&created) < from + n && test_now_s() < deadline)
        pause_ms(20);
    return atomic_load(&created) - from;
}

/* Every answered 201 exists with its name; returns how many were checked. */
static int check_acknowledged(PGconn *db)
{
    int checked = 0;
    for (int i = 0; i < LOADERS; i++) {
        for (int j = 0; j < loaders[i].count; j++) {
            const attempt_t *a = &loaders[i].attempts[j];
            if (a->status != 201)
                continue;
            const char *params[] = {a->id};
            PGresult *r = PQexecParams(db, "SELECT name FROM locate_lists WHERE id = $1", 1, NULL,
                                       params, NULL, NULL, 0);
            if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
                FAIL("list %s (%s) was answered 201 but is not stored", a->id, a->name);
            else
                CHECK_STR(PQgetvalue(r, 0, 0), a->name);
            PQclear(r);
            checked++;
        }
    }
    return checked;
}

/* Every row of the organization is a whole list, with its idempotency row when keyed. */
static void check_rows_whole(PGconn *db)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT l.name, l.codes::text, cardinality(l.codes), i.key, "
             "       (SELECT count(*) FROM idempotency_keys k "
             "         WHERE k.org_id = l.org_id AND k.list_id = l.id) "
             "  FROM locate_lists l LEFT JOIN idempotency_keys i "
             "    ON i.org_id = l.org_id AND i.list_id = l.id "
             " WHERE l.org_id = %lld",
             (long long)org_id);
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        FAIL("reading the lists failed: %s", PQerrorMessage(db));
        PQclear(r);
        return;
    }
    int bad = 0;
    for (int row = 0; row < PQntuples(r); row++) {
        const char *name = PQgetvalue(r, row, 0);
        char expected[8192];
        bool keyed = false;
        int cardinality = atoi(PQgetvalue(r, row, 2));
        if (strncmp(name, "f", 1) != 0 || strchr(name, ' ') == NULL) {
            /* Lists made outside the load ("after") are whole by construction. */
            if (cardinality < 1 || cardinality > 200)
                bad++;
            continue;
        }
        if (expected_codes_text(name, expected, sizeof(expected), &keyed) != 0 ||
            strcmp(PQgetvalue(r, row, 1), expected) != 0 || cardinality < 1 || cardinality > 200) {
            FAIL("list '%s' is not whole: %.80s...", name, PQgetvalue(r, row, 1));
            bad++;
            continue;
        }
        char phase;
        int loader, n;
        sscanf(name, "f%c t%d n%d", &phase, &loader, &n);
        char key_text[64];
        snprintf(key_text, sizeof(key_text), "fault-%c-%d-%d", phase, loader, n);
        if (keyed ? PQgetisnull(r, row, 3) || strcmp(PQgetvalue(r, row, 3), key_text) != 0 ||
                        atoi(PQgetvalue(r, row, 4)) != 1
                  : !PQgetisnull(r, row, 3)) {
            FAIL("list '%s': idempotency row %s", name,
                 keyed ? "missing or wrong" : "present without a key");
            bad++;
        }
    }
    CHECK_INT(bad, 0);
    PQclear(r);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM idempotency_keys i WHERE i.org_id = %lld AND NOT EXISTS "
             "(SELECT 1 FROM locate_lists l WHERE l.org_id = i.org_id AND l.id = i.list_id)",
             (long long)org_id);
    CHECK_INT(testdb_count(db, sql), 0);
}

/* Keyed requests without a 201 are retried with their key: each answers 201 and leaves
 * exactly one list. Unkeyed ones left at most one list (the commit may have won the race
 * with the crash; never two). Returns the retries made. */
static int retry_unanswered(PGconn *db)
{
    int retried = 0;
    for (int i = 0; i < LOADERS; i++) {
        for (int j = 0; j < loaders[i].count; j++) {
            const attempt_t *a = &loaders[i].attempts[j];
            if (a->status == 201)
                continue;
            char sql[256];
            if (a->keyed) {
                http_response_t res = create(loaders[i].phase, i, j, true, a->name);
                if (res.status != 201)
                    FAIL("retry of '%s' with its key answered %d: %s", a->name, res.status,
                         res.body ? res.body : "");
                http_response_free(&res);
                retried++;
                snprintf(sql, sizeof(sql), "SELECT count(*) FROM locate_lists WHERE name = '%s'",
                         a->name);
                CHECK_INT(testdb_count(db, sql), 1);
            } else {
                snprintf(sql, sizeof(sql), "SELECT count(*) FROM locate_lists WHERE name = '%s'",
                         a->name);
                CHECK(testdb_count(db, sql) <= 1);
            }
        }
    }
    return retried;
}

static void count_outcomes(bool quiet_failures, int *ok, int *unavailable, int *failed, int *other,
                           double *slowest_503)
{
    *ok = *unavailable = *failed = *other = 0;
    *slowest_503 = 0;
    for (int i = 0; i < LOADERS; i++) {
        for (int j = 0; j < loaders[i].count; j++) {
            const attempt_t *a = &loaders[i].attempts[j];
            if (a->status == 201) {
                (*ok)++;
            } else if (a->status == 503) {
                (*unavailable)++;
                if (a->seconds > *slowest_503)
                    *slowest_503 = a->seconds;
            } else if (a->status == 0) {
                (*failed)++;
                if (!quiet_failures)
                    fprintf(stderr, "'%s' got no answer after %.3f s\n", a->name, a->seconds);
            } else {
                (*other)++;
                fprintf(stderr, "'%s' answered %d\n", a->name, a->status);
            }
        }
    }
}

/* (a) PostgreSQL crashes and comes back under load. */
static void test_database_crash(void)
{
    atomic_store(&port_in_use, service.port);
    start_load('a');
    CHECK(wait_created(40, 10) >= 40);
    double killed = test_now_s();
    CHECK_INT(cluster("kill"), 0);
    pause_ms(1500); /* the outage, under load */
    CHECK_INT(cluster("start"), 0);
    double restarted = test_now_s();
    CHECK(wait_created(40, 15) >= 40);
    stop_load_and_join();
    fprintf(stderr, "database down for %.1f s\n", restarted - killed);

    int ok, unavailable, failed, other;
    double slowest_503;
    count_outcomes(false, &ok, &unavailable, &failed, &other, &slowest_503);
    fprintf(stderr, "(a) %d created, %d answered 503 (slowest %.2f s), %d no answer, %d other\n",
            ok, unavailable, slowest_503, failed, other);
    CHECK(unavailable > 0);
    CHECK_INT(failed, 0);
    CHECK_INT(other, 0);
    CHECK(slowest_503 < SLOW_503_SECONDS);

    /* The same process serves again: no restart was needed. */
    CHECK(kill(service.pid, 0) == 0);
    http_response_t res = e2e_request(service.port, "GET", "/readyz", NULL, NULL, NULL);
    CHECK_INT(res.status, 200);
    http_response_free(&res);

    PGconn *db = testdb_connect(conninfo);
    CHECK_INT(check_acknowledged(db), ok);
    check_rows_whole(db);
    CHECK(retry_unanswered(db) > 0);
    check_rows_whole(db);
    PQfinish(db);
}

/* (b) walklistd is killed under load and started again. */
static void test_service_crash(void)
{
    atomic_store(&port_in_use, service.port);
    start_load('b');
    CHECK(wait_created(40, 10) >= 40);
    CHECK_INT(kill(service.pid, SIGKILL), 0);
    int status = 0;
    waitpid(service.pid, &status, 0);
    service.pid = 0;
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    pause_ms(200); /* the loaders see refused connections */
    stop_load_and_join();

    int ok, unavailable, failed, other;
    double slowest_503;
    count_outcomes(true, &ok, &unavailable, &failed, &other, &slowest_503);
    fprintf(stderr, "(b) %d created, %d answered 503, %d no answer, %d other\n", ok, unavailable,
            failed, other);
    CHECK(failed > 0);
    CHECK_INT(unavailable + other, 0);

    /* Sessions of the killed process are gone (their transactions rolled back) soon. */
    PGconn *db = testdb_connect(conninfo);
    CHECK_INT(check_acknowledged(db), ok);
    check_rows_whole(db);

    const char *args[] = {"--db-timeout-ms", "1000", NULL};
    service_start(&service, conninfo, args);
    atomic_store(&port_in_use, service.port);
    CHECK(retry_unanswered(db) > 0);
    check_rows_whole(db);
    http_response_t res = e2e_request(service.port, "POST", "/api/v1/locate-lists", key,
                                      "application/json", "{\"name\":\"after\",\"codes\":[\"A\"]}");
    CHECK_INT(res.status, 201);
    http_response_free(&res);
    PQfinish(db);
}

int main(void)
{
    double started = test_now_s();
    snprintf(state_dir, sizeof(state_dir), "%s/faults-pg-%d", getenv("WALKLIST_TEST_PGDIR"),
             (int)getpid());
    atexit(remove_cluster);
    if (cluster("create") != 0) {
        fprintf(stderr, "could not create the private cluster\n");
        return 1;
    }
    if (!private_pg_conninfo(state_dir, conninfo, sizeof(conninfo)))
        return 1;
    PGconn *db = testdb_connect(conninfo);
    org_id = fixture_org(db, "faults");
    fixture_key(db, org_id, "lists:write", key);
    PQfinish(db);

    const char *args[] = {"--db-timeout-ms", "1000", NULL};
    service_start(&service, conninfo, args);
    test_database_crash();
    test_service_crash();
    CHECK_INT(service_stop(&service), 0);
    fprintf(stderr, "took %.1f s\n", test_now_s() - started);
    return test_exit();
}
