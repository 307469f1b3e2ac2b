/*
 * Shutdown never loses an answer: after SIGTERM every answer carries
 * "Connection: close", a request arriving on a kept-alive connection is answered 503 without
 * being served (nothing written), and when the shutdown timeout fires with a creation still at
 * the database (held there by a row lock), that creation and a kept-alive creator's one held with
 * it are waited for and their clients get their 201s. Keep-alive creators run throughout: every
 * list in the database was answered 201 to its client, and every 201 is in the database.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"
#include "fixture.h"
#include "private_pg.h"
#include "service.h"
#include "testdb.h"

#define CREATORS            3
#define SHUTDOWN_TIMEOUT_MS 1000

static service_t service;
static char key_a[WL_KEY_TOKEN_SIZE], key_b[WL_KEY_TOKEN_SIZE];
static double sigterm_at;

typedef struct {
    int status; /* 0: no answer (connection closed or refused) */
    bool close;
    char id[32];
    char body[512];
} answer_t;

static int connect_service(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(service.port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval timeout = {30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Sends a creation on a kept-alive connection (fd) and reads exactly its answer. */
static answer_t create_on(int fd, const char *key, const char *name, bool keep_alive)
{
    answer_t answer = {0};
    char body[128], request[1024];
    snprintf(body, sizeof(body), "{\"name\":\"%s\",\"codes\":[\"A\"]}", name);
    int n = snprintf(request, sizeof(request),
                     "POST /api/v1/locate-lists HTTP/1.1\r\nHost: x\r\n%s"
                     "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n%s",
                     keep_alive ? "" : "Connection: close\r\n", key, strlen(body), body);
    if (send(fd, request, (size_t)n, MSG_NOSIGNAL) != n)
        return answer;
    char buf[4096];
    size_t got = 0;
    char *end = NULL;
    while (end == NULL && got < sizeof(buf) - 1) {
        ssize_t r = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
        if (r <= 0)
            return answer;
        got += (size_t)r;
        buf[got] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    if (end == NULL)
        return answer;
    const char *length = strcasestr(buf, "\r\nContent-Length:");
    size_t want = length ? strtoul(length + 17, NULL, 10) : 0;
    size_t head = (size_t)(end + 4 - buf);
    while (got < head + want && got < sizeof(buf) - 1) {
        ssize_t r = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
        if (r <= 0)
            return answer;
        got += (size_t)r;
    }
    buf[got] = '\0';
    answer.status = atoi(buf + 9);
    *end = '\0';
    answer.close = strcasestr(buf, "\r\nConnection: close") != NULL;
    snprintf(answer.body, sizeof(answer.body), "%s", end + 4);
    json_t *json = json_loads(end + 4, 0, NULL);
    if (json != NULL && answer.status == 201)
        snprintf(answer.id, sizeof(answer.id), "%s", e2e_str(json, "id", NULL));
    json_decref(json);
    return answer;
}

typedef struct {
    int index;
    const char *key;   /* creator 0 creates for organization B, held at the database */
    int created;       /* 201s received */
    int sent_after;    /* requests sent 100 ms or more after SIGTERM */
    int served_after;  /* ... of which answered anything but 503 */
    int answers_after; /* answers received 100 ms or more after SIGTERM */
    int open_after;    /* ... of which without Connection: close */
} creator_t;

/* Creates lists on one kept-alive connection after another until none can be opened. */
static void *creator(void *arg)
{
    creator_t *c = arg;
    char name[32];
    snprintf(name, sizeof(name), "keepalive-%d", c->index);
    int fd = connect_service();
    while (fd >= 0) {
        double sent = test_now_s();
        answer_t answer = create_on(fd, c->key, name, true);
        /* Answers queued once SIGTERM was surely taken in. */
        bool after = sigterm_at > 0 && test_now_s() > sigterm_at + 0.1;
        if (answer.status == 201)
            c->created++;
        if (after && answer.status != 0) {
            c->answers_after++;
            c->open_after += !answer.close;
        }
        if (sigterm_at > 0 && sent > sigterm_at + 0.1) {
            c->sent_after++;
            c->served_after += answer.status != 0 && answer.status != 503;
        }
        if (answer.status == 0 || answer.close) {
            close(fd);
            fd = connect_service();
        }
    }
    return NULL;
}

typedef struct {
    int fd;
    answer_t answer;
} late_request_t;

static void *request_late(void *arg)
{
    late_request_t *late = arg;
    late->answer = create_on(late->fd, key_a, "after-sigterm", true);
    return NULL;
}

int main(void)
{
    const char *conninfo = testdb_create("e2e_shutdown");
    PGconn *db = testdb_connect(conninfo);
    int64_t org_a = fixture_org(db, "shutdown-a");
    int64_t org_b = fixture_org(db, "shutdown-b");
    fixture_key(db, org_a, "lists:write", key_a);
    fixture_key(db, org_b, "lists:write", key_b);
    char timeout[16];
    snprintf(timeout, sizeof(timeout), "%d", SHUTDOWN_TIMEOUT_MS);
    /* Long database waits: the held row lock must outlast the shutdown timeout. Two of the
     * four commit groups are held with organization B; the other two serve organization A. */
    const char *args[] = {"--shutdown-timeout-ms",
                          timeout,
                          "--db-timeout-ms",
                          "30000",
                          "--commit-groups",
                          "4",
                          "--threads",
                          "8",
                          "--ops-listen",
                          "127.0.0.1:0",
                          NULL};
    service_start(&service, conninfo, args);
    char *started_log = service_log(&service);
    const char *ops = strstr(started_log, "\"opsPort\":");
    uint16_t ops_port = ops ? (uint16_t)atoi(ops + 10) : 0;
    free(started_log);
    CHECK(ops_port != 0);
    http_response_t res = e2e_request(ops_port, "GET", "/readyz", NULL, NULL, NULL);
    CHECK_INT(res.status, 200);
    http_response_free(&res);
    /* The operations listener serves nothing else. */
    res = e2e_request(ops_port, "GET", "/api/v1/locate-lists", key_a, NULL, NULL);
    CHECK_INT(res.status, 404);
    http_response_free(&res);

    /* A kept-alive connection, idle at SIGTERM. */
    int idle = connect_service();
    answer_t answer = create_on(idle, key_a, "idle", true);
    CHECK_INT(answer.status, 201);
    CHECK(!answer.close);

    /* A creation held at the database: organization B's rate-limit bucket is locked, so its
     * admission waits for the row. */
    char sql[160];
    snprintf(sql, sizeof(sql),
             "INSERT INTO rate_limits (org_id, bucket) VALUES (%lld, 'locate-lists')",
             (long long)org_b);
    testdb_exec(db, sql);
    PGconn *holder = testdb_connect(conninfo);
    testdb_exec(holder, "BEGIN");
    snprintf(sql, sizeof(sql),
             "SELECT 1 FROM rate_limits WHERE org_id = %lld AND bucket = 'locate-lists' FOR UPDATE",
             (long long)org_b);
    PGresult *locked = PQexec(holder, sql);
    CHECK_INT(PQresultStatus(locked), PGRES_TUPLES_OK);
    PQclear(locked);
    int stuck = connect_service();
    char body[128], request[1024];
    snprintf(body, sizeof(body), "{\"name\":\"held\",\"codes\":[\"A\"]}");
    int n = snprintf(request, sizeof(request),
                     "POST /api/v1/locate-lists HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                     "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n%s",
                     key_b, strlen(body), body);
    CHECK(send(stuck, request, (size_t)n, 0) == n);
    long long waiting = 0;
    for (int i = 0; i < 100 && waiting == 0; i++) {
        usleep(50 * 1000);
        waiting = testdb_count(db, "SELECT count(*) FROM pg_locks WHERE NOT granted");
    }
    CHECK(waiting > 0);

    pthread_t threads[CREATORS];
    creator_t creators[CREATORS];
    /* Organization A's creators first (their lists may later be held in a commit group with
     * organization B's), then creator 0. */
    for (int i = CREATORS - 1; i >= 0; i--) {
        creators[i] = (creator_t){.index = i, .key = i == 0 ? key_b : key_a};
        pthread_create(&threads[i], NULL, creator, &creators[i]);
        usleep(300 * 1000);
    }
    sigterm_at = test_now_s();
    kill(service.pid, SIGTERM);
    /* Shutdown has begun once new connections are refused (walklistd marks itself stopping
     * first). */
    for (int i = 0; i < 100; i++) {
        int probe = connect_service();
        if (probe < 0)
            break;
        close(probe);
        usleep(50 * 1000);
    }

    /* Probes on the operations listener: draining, not ready; alive. */
    res = e2e_request(ops_port, "GET", "/readyz", NULL, NULL, NULL);
    CHECK_INT(res.status, 503);
    http_response_free(&res);
    res = e2e_request(ops_port, "GET", "/healthz", NULL, NULL, NULL);
    CHECK_INT(res.status, 200);
    http_response_free(&res);

    /* A request on the idle kept-alive connection. Its answer is read later: the worker thread
     * that serves its connection may be one waiting at the database with the held creation. */
    pthread_t late;
    late_request_t late_request = {.fd = idle};
    pthread_create(&late, NULL, request_late, &late_request);

    /* Past the shutdown timeout the held creation is still waited for. */
    usleep((SHUTDOWN_TIMEOUT_MS + 1500) * 1000);
    int status = 0;
    CHECK_INT(waitpid(service.pid, &status, WNOHANG), 0);
    testdb_exec(holder, "COMMIT");
    PQfinish(holder);

    /* The late request was refused unserved, and its connection closed. */
    pthread_join(late, NULL);
    CHECK_INT(late_request.answer.status, 503);
    CHECK(late_request.answer.close);
    CHECK(strstr(late_request.answer.body, "shutting down") != NULL);
    close(idle);

    /* Its client hears how it ended. */
    char buf[2048] = "";
    size_t got = 0;
    ssize_t r;
    while (got < sizeof(buf) - 1 && (r = recv(stuck, buf + got, sizeof(buf) - 1 - got, 0)) > 0)
        got += (size_t)r;
    buf[got] = '\0';
    CHECK(strncmp(buf, "HTTP/1.1 201", 12) == 0);
    CHECK(strcasestr(buf, "\r\nConnection: close\r\n") != NULL);
    close(stuck);

    for (int i = 0; i < CREATORS; i++)
        pthread_join(threads[i], NULL);
    CHECK_INT(service_stop(&service), 0);

    char *log = service_log(&service);
    CHECK(strstr(log, "still in flight after 1000 ms") != NULL);
    free(log);

    CHECK_INT(testdb_count(db, "SELECT count(*) FROM locate_lists WHERE name = 'held'"), 1);
    CHECK_INT(testdb_count(db, "SELECT count(*) FROM locate_lists WHERE name = 'after-sigterm'"),
              0);
    for (int i = 0; i < CREATORS; i++) {
        creator_t *c = &creators[i];
        char count_sql[128];
        snprintf(count_sql, sizeof(count_sql),
                 "SELECT count(*) FROM locate_lists WHERE name = 'keepalive-%d'", i);
        fprintf(stderr,
                "creator %d: %d created; after SIGTERM %d answers received, %d requests sent\n", i,
                c->created, c->answers_after, c->sent_after);
        /* Every list in the database was answered 201, and no other. */
        CHECK_INT(testdb_count(db, count_sql), c->created);
        CHECK_INT(c->open_after, 0);
        CHECK_INT(c->served_after, 0);
        CHECK(c->created > 0);
    }
    /* Held with organization B's bucket, creator 0's request was answered after SIGTERM. */
    CHECK_INT(creators[0].created, 1);
    CHECK(creators[0].answers_after > 0);
    PQfinish(db);
    return test_exit();
}
