/*
 * A database across a network that fails: PostgreSQL runs on a host of its own (a
 * network namespace behind a veth pair, tests/netns_db.sh) while walklistd runs here. When the
 * network loses every packet (the database host's link goes down under load; later iptables
 * drops its traffic while walklistd's connections sit idle; last PostgreSQL is stopped with
 * SIGSTOP, its host still answering TCP), nothing hangs: every request is
 * answered within --db-timeout-ms (503 with Retry-After once the database is given up on, at
 * once after that), /healthz keeps answering 200 at once all along (on the main listener,
 * whose request threads wait on the database, and on the operations listener), and once the
 * network returns creation works
 * again within a couple of seconds, without a restart, with every 201 in the database.
 * Skipped (77) where network namespaces cannot be used (not root, no iproute2, a chroot or an
 * unprivileged container, where ip netns exec cannot remount /).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"
#include "fixture.h"
#include "private_pg.h"
#include "service.h"
#include "testdb.h"

#define DB_TIMEOUT_MS 3000
/* What a busy machine may add to any wait below (scheduling, a slow fork). */
#define SLACK_S 1.0
/* Once the database is given up on, refusals come at once; "at once" with room to spare. */
#define QUICK_S      1.0
#define CREATORS     4
#define OUTCOMES_MAX 20000

typedef enum { CREATION, HEALTHZ, OPS_HEALTHZ } kind_t;

typedef struct {
    double started, took;
    int status;
    bool retry_after;
    kind_t kind;
    char id[32];
} outcome_t;

static char name[32], state_dir[512], conninfo[1024];
static service_t service;
static uint16_t ops_port;
static char key[WL_KEY_TOKEN_SIZE];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static outcome_t outcomes[OUTCOMES_MAX];
static int outcome_count;
static atomic_bool stop;

static int netns(const char *action)
{
    char command[1400];
    snprintf(command, sizeof(command), "%s/tests/netns_db.sh %s %s %s >&2",
             getenv("WALKLIST_SOURCE_DIR"), action, name,
             strcmp(action, "down") == 0 ? state_dir : "");
    int status = system(command);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int iptables(const char *op)
{
    char command[512];
    snprintf(command, sizeof(command),
             "ip netns exec %s iptables %s INPUT -p tcp --dport 5432 -j DROP && "
             "ip netns exec %s iptables %s OUTPUT -p tcp --sport 5432 -j DROP",
             name, op, name, op);
    int status = system(command);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void remove_all(void)
{
    if (service.pid > 0)
        service_stop(&service);
    if (state_dir[0] != '\0')
        netns("down");
}

static outcome_t request(kind_t kind)
{
    outcome_t out = {.started = test_now_s(), .kind = kind};
    http_response_t res =
        kind == CREATION
            ? e2e_request(service.port, "POST", "/api/v1/locate-lists", key, "application/json",
                          "{\"name\":\"partition\",\"codes\":[\"A\"]}")
            : e2e_request(kind == HEALTHZ ? service.port : ops_port, "GET", "/healthz", NULL, NULL,
                          NULL);
    out.took = test_now_s() - out.started;
    out.status = res.status;
    char retry[16];
    out.retry_after = http_header(&res, "Retry-After", retry, sizeof(retry)) != NULL;
    if (res.status == 201)
        snprintf(out.id, sizeof(out.id), "%s", e2e_str(res.json, "id", NULL));
    http_response_free(&res);
    pthread_mutex_lock(&lock);
    if (outcome_count < OUTCOMES_MAX)
        outcomes[outcome_count++] = out;
    pthread_mutex_unlock(&lock);
    return out;
}

static void *keep_requesting(void *arg)
{
    kind_t kind = *(const kind_t *)arg;
    while (!atomic_load(&stop)) {
        request(kind);
        usleep(kind == CREATION ? 20 * 1000 : 100 * 1000);
    }
    return NULL;
}

/* The first creation that succeeds after since, polled; returns when it ended (0: none). */
static double recovered_after(double since)
{
    while (test_now_s() - since < 15.0) {
        outcome_t out = request(CREATION);
        if (out.status == 201)
            return out.started + out.took;
        usleep(50 * 1000);
    }
    return 0;
}

/* Checks every outcome that started in [from, to): answered in time, 201 only before the
 * outage bit (before from + early_201_s), otherwise 503 with Retry-After; quick once the
 * database was given up on (from + the timeout + slack). */
static void check_outage(double from, double to, double early_201_s)
{
    double given_up = from + DB_TIMEOUT_MS / 1000.0 + SLACK_S;
    int refused = 0, quick = 0, healthz = 0, ops = 0;
    double slowest = 0, slowest_quick = 0, slowest_ops = 0;
    for (int i = 0; i < outcome_count; i++) {
        const outcome_t *o = &outcomes[i];
        if (o->started < from || o->started >= to)
            continue;
        if (o->took > DB_TIMEOUT_MS / 1000.0 + SLACK_S)
            FAIL("%s started %.2f s into the outage took %.2f s",
                 o->kind == CREATION ? "a creation" : "/healthz", o->started - from, o->took);
        if (o->took > slowest)
            slowest = o->took;
        if (o->kind == OPS_HEALTHZ) {
            ops++;
            if (o->took > slowest_ops)
                slowest_ops = o->took;
            CHECK_INT(o->status, 200);
            if (o->took > QUICK_S)
                FAIL("/healthz on the operations listener took %.2f s", o->took);
            continue;
        }
        if (o->kind == HEALTHZ) {
            /* Never behind a request that waits on the database (gateway/http/offload.h). */
            healthz++;
            CHECK_INT(o->status, 200);
            if (o->took > QUICK_S)
                FAIL("/healthz on the main listener took %.2f s, %.2f s into the outage", o->took,
                     o->started - from);
            continue;
        }
        if (o->status == 201 && o->started < from + early_201_s)
            continue;
        CHECK_INT(o->status, 503);
        CHECK(o->retry_after);
        refused++;
        if (o->started >= given_up) {
            quick++;
            if (o->took > slowest_quick)
                slowest_quick = o->took;
            if (o->took > QUICK_S)
                FAIL("a creation took %.2f s after the database was given up on", o->took);
        }
    }
    fprintf(stderr,
            "outage: %d creations refused (%d after it was given up on), %d /healthz, %d on the "
            "operations listener\n",
            refused, quick, healthz, ops);
    fprintf(stderr,
            "outage: slowest answer %.2f s (limit %.2f), once given up on %.2f s, operations "
            "listener %.2f s (limit %.2f)\n",
            slowest, DB_TIMEOUT_MS / 1000.0 + SLACK_S, slowest_quick, slowest_ops, QUICK_S);
    CHECK(refused > 0);
}

static bool metrics_say(const char *line)
{
    http_response_t res = e2e_request(service.port, "GET", "/metrics", NULL, NULL, NULL);
    bool found = res.status == 200 && strstr(res.body, line) != NULL;
    http_response_free(&res);
    return found;
}

static void check_recovery(const char *what, double recovered, double mend)
{
    CHECK(recovered > 0);
    fprintf(stderr, "%s: creation works again %.2f s after the database did\n", what,
            recovered - mend);
    if (recovered > 0 && recovered - mend > 2.0 + SLACK_S)
        FAIL("%s: creation came back %.2f s after the database", what, recovered - mend);
}

/* Under load, the database host's link goes down: a pulled cable. */
static void partition_under_load(void)
{
    static const kind_t kinds[CREATORS + 2] = {CREATION, CREATION, CREATION,
                                               CREATION, HEALTHZ,  OPS_HEALTHZ};
    pthread_t threads[CREATORS + 2];
    for (int i = 0; i < CREATORS + 2; i++)
        pthread_create(&threads[i], NULL, keep_requesting, (void *)&kinds[i]);
    sleep(1);
    double cut = test_now_s();
    CHECK_INT(netns("cut"), 0);
    sleep(DB_TIMEOUT_MS / 1000 + 3);
    CHECK(metrics_say("walklist_db_reachable 0\n"));
    double mend = test_now_s();
    CHECK_INT(netns("mend"), 0);
    double recovered = recovered_after(mend);
    CHECK(metrics_say("walklist_db_reachable 1\n"));
    atomic_store(&stop, true);
    for (int i = 0; i < CREATORS + 2; i++)
        pthread_join(threads[i], NULL);
    int before = 0;
    for (int i = 0; i < outcome_count; i++)
        before += outcomes[i].started + outcomes[i].took < cut && outcomes[i].status == 201;
    CHECK(before > 0);
    /* A request already in flight when the link went down may still have been answered. */
    check_outage(cut, mend, 0.2);
    check_recovery("link down", recovered, mend);
}

/* An outage while walklistd's connections are idle: a few requests at once, a few after a
 * pause, every answer checked, then the recovery. toggle(true) starts it, toggle(false) ends
 * it. */
static void outage_while_idle(const char *what, int (*toggle)(bool on))
{
    int start = outcome_count;
    double cut = test_now_s();
    CHECK_INT(toggle(true), 0);
    for (int i = 0; i < 3; i++)
        request(CREATION);
    request(HEALTHZ);
    request(OPS_HEALTHZ);
    sleep(2);
    for (int i = 0; i < 3; i++)
        request(CREATION);
    double mend = test_now_s();
    CHECK_INT(toggle(false), 0);
    double recovered = recovered_after(mend);
    CHECK(outcome_count - start >= 8);
    check_outage(cut, mend, 0);
    check_recovery(what, recovered, mend);
}

/* Every packet to and from PostgreSQL is dropped (iptables in its namespace). */
static int drop_packets(bool on)
{
    return iptables(on ? "-I" : "-D");
}

/* Stops (SIGSTOP) or continues PostgreSQL: the postmaster and every backend. */
static int freeze(const char *signal)
{
    char command[1400];
    snprintf(command, sizeof(command),
             "pid=$(head -n 1 \"$(cat %s/cluster)/data/postmaster.pid\") && "
             "pkill -%s -P \"$pid\"; kill -%s \"$pid\"",
             state_dir, signal, signal);
    int status = system(command);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The server stops answering while its host keeps TCP alive (a stopped process, a frozen
 * machine): keepalives are answered, so only walklistd's own limit on silence notices. */
static int stop_server(bool on)
{
    return freeze(on ? "STOP" : "CONT");
}

int main(void)
{
    snprintf(name, sizeof(name), "wlp%d", (int)getpid() % 100000);
    char command[1024];
    snprintf(command, sizeof(command), "%s/tests/netns_db.sh check", getenv("WALKLIST_SOURCE_DIR"));
    if (system(command) != 0) {
        fprintf(stderr, "skipped: network namespaces cannot be used here (needs root, iproute2 "
                        "and a machine that lets ip netns exec remount /: not a chroot or an "
                        "unprivileged container)\n");
        return 77;
    }
    snprintf(state_dir, sizeof(state_dir), "%s/partition-pg-%d", getenv("WALKLIST_TEST_PGDIR"),
             (int)getpid());
    atexit(remove_all);
    snprintf(command, sizeof(command), "%s/tests/netns_db.sh up %s %d %s %s >&2",
             getenv("WALKLIST_SOURCE_DIR"), name, 100 + (int)getpid() % 150, state_dir,
             getenv("WALKLISTCTL"));
    if (system(command) != 0) {
        fprintf(stderr, "could not start PostgreSQL in a network namespace\n");
        return 1;
    }
    if (!private_pg_conninfo(state_dir, conninfo, sizeof(conninfo)))
        return 1;
    PGconn *db = testdb_connect(conninfo);
    fixture_key(db, fixture_org(db, "partition"), "lists:write", key);
    PQfinish(db);

    char timeout[16];
    snprintf(timeout, sizeof(timeout), "%d", DB_TIMEOUT_MS);
    const char *args[] = {"--db-timeout-ms", timeout, "--ops-listen", "127.0.0.1:0", NULL};
    service_start(&service, conninfo, args);
    char *log = service_log(&service);
    const char *ops = strstr(log, "\"opsPort\":");
    ops_port = ops ? (uint16_t)atoi(ops + 10) : 0;
    free(log);
    CHECK(ops_port != 0);

    partition_under_load();
    if (system("command -v iptables >/dev/null") == 0)
        outage_while_idle("packets dropped", drop_packets);
    else
        fprintf(stderr, "iptables is not installed: the dropped-packets case is skipped\n");
    outage_while_idle("server stopped", stop_server);

    /* Every list answered 201 is in the database. */
    db = testdb_connect(conninfo);
    int acknowledged = 0;
    for (int i = 0; i < outcome_count; i++) {
        if (outcomes[i].status != 201)
            continue;
        acknowledged++;
        const char *values[] = {outcomes[i].id};
        PGresult *res = PQexecParams(db, "SELECT 1 FROM locate_lists WHERE id = $1", 1, NULL,
                                     values, NULL, NULL, 0);
        if (PQntuples(res) != 1)
            FAIL("list %s was answered 201 but is not in the database", outcomes[i].id);
        PQclear(res);
    }
    PQfinish(db);
    fprintf(stderr, "%d lists acknowledged, all present\n", acknowledged);
    CHECK(acknowledged > 0);
    CHECK_INT(service_stop(&service), 0);
    return test_exit();
}
