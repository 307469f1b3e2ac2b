/*
 * Webhooks end to end, against the test cluster, real walklistd processes and a real receiver
 * (tests/support/webhook_receiver.py): walklistctl webhook add refuses what it must and
 * writes nothing then; events written while no process delivers wait in the outbox, and a
 * change that does not commit has none; a delivery to a loopback address is refused by a
 * walklistd without --webhook-allow-private; then the receiver is down, answers 500,
 * redirects (never followed), answers too slowly, and walklistd is killed (SIGKILL) while an
 * attempt waits for its answer and another one takes over: every event arrives, signed
 * (checked with the secret webhook add printed), in order, duplicates only as documented (the
 * same webhook-id and body again), stock.changed events of one burst coalesced, and their
 * cursors work with ?since=. Then an endpoint failing for longer than
 * --webhook-disable-after-s is disabled, and enabled again; last, two processes share two
 * endpoints without ever sending two requests to one at once.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"

static const char *conninfo;
static PGconn *db;

typedef struct {
    int status;
    char out[16384];
    char err[4096];
} output_t;

static void read_file(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "rb");
    size_t len = f ? fread(buf, 1, size - 1, f) : 0;
    buf[len] = '\0';
    if (f != NULL)
        fclose(f);
}

/* Runs walklistctl with args (NULL-terminated), on the test database. */
static void ctl(output_t *o, const char *const *args)
{
    const char *argv[24] = {getenv("WALKLISTCTL")};
    int argc = 1;
    for (int i = 0; args[i] != NULL && argc < 23; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    char out_path[64], err_path[64];
    snprintf(out_path, sizeof(out_path), "webhooks-ctl-%d.out", (int)getpid());
    snprintf(err_path, sizeof(err_path), "webhooks-ctl-%d.err", (int)getpid());
    pid_t pid = fork();
    if (pid == 0) {
        int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(out, 1);
        dup2(err, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    o->status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    read_file(out_path, o->out, sizeof(o->out));
    read_file(err_path, o->err, sizeof(o->err));
    unlink(out_path);
    unlink(err_path);
}

static long long count(const char *sql)
{
    return testdb_count(db, sql);
}

/* Waits up to seconds for the query's count to reach at least want; returns the count. */
static long long wait_count(const char *sql, long long want, int seconds)
{
    long long n = count(sql);
    for (int i = 0; n < want && i < seconds * 20; i++) {
        usleep(50000);
        n = count(sql);
    }
    return n;
}

/* --- The receiver ------------------------------------------------------------------------ */

static char receiver_log[64], receiver_mode[64];
static uint16_t receiver_port;
static pid_t receiver_pid;

static uint16_t free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(addr);
    bind(fd, (struct sockaddr *)&addr, sizeof(addr));
    getsockname(fd, (struct sockaddr *)&addr, &len);
    close(fd);
    return ntohs(addr.sin_port);
}

static void receiver_set_mode(const char *mode)
{
    FILE *f = fopen(receiver_mode, "w");
    fputs(mode, f);
    fclose(f);
}

static void receiver_start(void)
{
    char port[8], script[512];
    snprintf(port, sizeof(port), "%u", receiver_port);
    snprintf(script, sizeof(script), "%s/tests/support/webhook_receiver.py",
             getenv("WALKLIST_SOURCE_DIR"));
    receiver_pid = fork();
    if (receiver_pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        execl("/usr/bin/python3", "python3", script, port, receiver_log, receiver_mode,
              (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in addr = {.sin_family = AF_INET,
                                   .sin_port = htons(receiver_port),
                                   .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int ok = connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0;
        close(fd);
        if (ok)
            return;
        usleep(25000);
    }
    FAIL("the receiver did not start");
}

static void receiver_stop(void)
{
    if (receiver_pid > 0) {
        kill(receiver_pid, SIGKILL);
        waitpid(receiver_pid, NULL, 0);
    }
    receiver_pid = 0;
}

/* The requests received so far, one JSON object each (a new reference). */
static json_t *received(void)
{
    json_t *all = json_array();
    FILE *f = fopen(receiver_log, "r");
    char line[65536];
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        json_t *one = json_loads(line, 0, NULL);
        if (one != NULL)
            json_array_append_new(all, one);
    }
    if (f != NULL)
        fclose(f);
    return all;
}

static size_t wait_received(size_t want, int seconds)
{
    for (int i = 0;; i++) {
        json_t *all = received();
        size_t n = json_array_size(all);
        json_decref(all);
        if (n >= want || i >= seconds * 20)
            return n;
        usleep(50000);
    }
}

/* --- Signatures (Standard Webhooks), checked independently of the product's code ----------- */

static unsigned char secret_bytes[64];
static size_t secret_len;

static int signature_valid(json_t *request)
{
    const char *id = e2e_str(request, "id", NULL), *ts = e2e_str(request, "timestamp", NULL);
    const char *sig = e2e_str(request, "signature", NULL), *body = e2e_str(request, "body", NULL);
    if (id == NULL || ts == NULL || sig == NULL || body == NULL || strncmp(sig, "v1,", 3) != 0)
        return 0;
    size_t len = strlen(id) + strlen(ts) + strlen(body) + 3;
    char *signed_text = malloc(len);
    snprintf(signed_text, len, "%s.%s.%s", id, ts, body);
    unsigned char mac[32];
    unsigned int mac_len = 0;
    HMAC(EVP_sha256(), secret_bytes, (int)secret_len, (unsigned char *)signed_text,
         strlen(signed_text), mac, &mac_len);
    free(signed_text);
    unsigned char given[64];
    int given_len = EVP_DecodeBlock(given, (const unsigned char *)sig + 3, (int)strlen(sig + 3));
    return given_len >= 32 && memcmp(given, mac, 32) == 0;
}

/* --- Steps ----------------------------------------------------------------------------------- */

static char endpoint_id[64];

/* webhook add refuses what it must, and then nothing is written. */
static void test_add_validation(void)
{
    static const struct {
        const char *org, *url, *events;
        bool allow_private;
        const char *expected; /* in the message */
    } refused[] = {
        {"hooks", "ftp://example.com/hook", "stock.changed", false, "http:// or https://"},
        {"hooks", "not a url", "stock.changed", false, "url"},
        {"hooks", "http://user:pw@example.com/hook", "stock.changed", false, "user name"},
        {"hooks", "http://127.0.0.1:9/hook", "stock.changed", false, "loopback"},
        {"hooks", "http://[::1]/hook", "stock.changed", false, "loopback"},
        {"hooks", "http://[::ffff:127.0.0.1]/hook", "stock.changed", false, "loopback"},
        {"hooks", "http://10.1.2.3/hook", "stock.changed", false, "private"},
        {"hooks", "http://169.254.169.254/latest", "stock.changed", false, "link-local"},
        {"hooks", "http://0.0.0.0/hook", "stock.changed", false, "unspecified"},
        {"hooks", "http://[ff02::1]/hook", "stock.changed", false, "multicast"},
        {"hooks", "http://localhost/hook", "stock.changed", false, "loopback"},
        {"hooks", "http://127.0.0.1:9/", "stock.changed,order.shipped", true,
         "unknown event 'order.shipped'"},
        {"hooks", "http://127.0.0.1:9/", "stock.changed,stock.changed", true, "given twice"},
        {"hooks", "http://127.0.0.1:9/", NULL, true, "--events is required"},
        {"nobody", "http://127.0.0.1:9/", "stock.changed", true, "no organization 'nobody'"},
    };
    output_t o;
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        const char *args[10] = {"webhook", "add", "--org", refused[i].org, "--url", refused[i].url};
        int argc = 6;
        if (refused[i].events != NULL) {
            args[argc++] = "--events";
            args[argc++] = refused[i].events;
        }
        if (refused[i].allow_private)
            args[argc++] = "--webhook-allow-private";
        ctl(&o, args);
        CHECK_INT(o.status, 1);
        if (strstr(o.err, refused[i].expected) == NULL)
            FAIL("%s: '%s' not in: %s", refused[i].url, refused[i].expected, o.err);
        CHECK_STR(o.out, "");
    }
    CHECK_INT(count("SELECT count(*) FROM webhook_endpoints"), 0);
    ctl(&o, (const char *[]){"webhook", "remove", "whe_nothing", "--org", "hooks", NULL});
    CHECK_INT(o.status, 1);
    CHECK(strstr(o.err, "no webhook endpoint") != NULL);
}

/* Adds an endpoint of the receiver at path for events: its id into id, what walklistctl
 * printed into o. */
static void add_endpoint_at(const char *path, const char *events, char id[64], output_t *o)
{
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u%s", receiver_port, path);
    ctl(o, (const char *[]){"webhook", "add", "--org", "hooks", "--url", url, "--events", events,
                            "--webhook-allow-private", NULL});
    CHECK_INT(o->status, 0);
    if (sscanf(o->out, "%63s", id) != 1)
        id[0] = '\0';
}

static void add_endpoint(void)
{
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/hook", receiver_port);
    output_t o;
    add_endpoint_at("/hook", "locate_list.loaded,stock.changed", endpoint_id, &o);
    char secret[128] = "";
    if (sscanf(o.out, "%*s %127s", secret) != 1 || strncmp(endpoint_id, "whe_", 4) != 0 ||
        strncmp(secret, "whsec_", 6) != 0) {
        FAIL("webhook add printed: %s", o.out);
        exit(test_exit());
    }
    secret_len =
        (size_t)EVP_DecodeBlock(secret_bytes, (unsigned char *)secret + 6, (int)strlen(secret + 6));
    secret_len -= strstr(secret, "=") != NULL; /* EVP_DecodeBlock counts padding as bytes */
    CHECK_INT(secret_len, 32);
    /* The secret is never shown again. */
    const char *list[] = {"webhook", "list", "--org", "hooks", NULL};
    ctl(&o, list);
    CHECK_INT(o.status, 0);
    CHECK(strstr(o.out, endpoint_id) != NULL);
    CHECK(strstr(o.out, "locate_list.loaded,stock.changed") != NULL);
    CHECK(strstr(o.out, url) != NULL);
    CHECK(strstr(o.out, secret + 6) == NULL);
}

static char key[WL_KEY_TOKEN_SIZE];

/* Creates a walk list and loads it through walklistd's scanner service; its id into id. */
static void load_list(const service_t *service, const char *name, char id[64])
{
    char body[256];
    snprintf(body, sizeof(body),
             "{\"name\":\"%s\",\"codes\":[\"SKU-1\",\"4000000000001\","
             "\"NOPE\"]}",
             name);
    http_response_t res =
        e2e_request(service->port, "POST", "/api/v1/locate-lists", key, "application/json", body);
    CHECK_INT(res.status, 201);
    snprintf(id, 64, "%s", e2e_str(res.json, "id", NULL) ? e2e_str(res.json, "id", NULL) : "");
    http_response_free(&res);
    snprintf(body, sizeof(body), "{\"id\":\"%s\"}", id);
    res = e2e_connect_json(service->port, "walklist.v1.ScannerService/LoadLocateList", key, body);
    CHECK_INT(res.status, 200);
    if (res.status != 200)
        fprintf(stderr, "load %s: %s\n", name, res.body);
    http_response_free(&res);
}

static int64_t org_id;

static void import_stock(int on_hand)
{
    char csv[128];
    snprintf(csv, sizeof(csv), "sku,warehouse,on_hand\nSKU-1,WH1,%d\nSKU-2,WH1,%d\n", on_hand,
             on_hand + 1);
    fixture_import(db, org_id, "stock", csv);
}

#define PENDING_IS_ZERO "SELECT (count(*) = 0)::int FROM webhook_deliveries WHERE state = 'pending'"
#define PENDING         "SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'"

/* A walklistd with short webhook timings, and one more flag with its value (or NULL, NULL). */
static void start_walklistd(service_t *service, const char *allow_private, const char *workers,
                            const char *more_flag, const char *more_value)
{
    const char *args[] = {"--webhook-workers",
                          workers,
                          "--webhook-allow-private",
                          allow_private,
                          "--webhook-poll-ms",
                          "50",
                          "--webhook-retry-base-ms",
                          "100",
                          "--webhook-retry-max-ms",
                          "400",
                          "--webhook-connect-timeout-ms",
                          "300",
                          "--webhook-timeout-ms",
                          "700",
                          more_flag,
                          more_value,
                          NULL};
    service_start(service, conninfo, args);
}

/* A change that does not commit has no event: a second load of a list (400), an import
 * refused for a bad line. */
static void reload_and_bad_import(const service_t *service, const char *loaded_id)
{
    long long before = count("SELECT count(*) FROM webhook_events");
    char body[96];
    snprintf(body, sizeof(body), "{\"id\":\"%s\"}", loaded_id);
    http_response_t res =
        e2e_connect_json(service->port, "walklist.v1.ScannerService/LoadLocateList", key, body);
    CHECK_INT(res.status, 400);
    http_response_free(&res);
    FILE *bad = fopen("webhooks-bad-stock.csv", "w");
    fputs("sku,warehouse,on_hand\nSKU-1,WH1,9\nSKU-2,WH1,-1\n", bad);
    fclose(bad);
    output_t o;
    ctl(&o, (const char *[]){"import", "stock", "webhooks-bad-stock.csv", "--org", "hooks", NULL});
    CHECK_INT(o.status, 1);
    unlink("webhooks-bad-stock.csv");
    CHECK_INT(count("SELECT count(*) FROM webhook_events"), before);
}

static char list_ids[3][64];

/*
 * Two walklistd processes of three workers each on one database, two endpoints, six events
 * each: never two requests to one endpoint at once (the leases), each endpoint's events in
 * order, each once (no attempt failed).
 */
static void test_processes_share_endpoints(void)
{
    char ids[2][64];
    output_t o;
    const char *paths[] = {"/a", "/b"};
    receiver_set_mode("ok");
    receiver_start();
    for (int e = 0; e < 2; e++)
        add_endpoint_at(paths[e], "locate_list.loaded", ids[e], &o);
    service_t writer, deliverers[2];
    start_walklistd(&writer, "1", "0", NULL, NULL);
    char list_id[64];
    for (int i = 0; i < 6; i++)
        load_list(&writer, "shared", list_id);
    service_stop(&writer);
    CHECK_INT(count(PENDING), 12);
    receiver_set_mode("slow 0.1");
    for (int p = 0; p < 2; p++)
        start_walklistd(&deliverers[p], "1", "3", NULL, NULL);
    CHECK_INT(
        wait_count("SELECT count(*) FROM webhook_deliveries WHERE state = 'delivered'", 12, 20),
        12);
    for (int p = 0; p < 2; p++)
        service_stop(&deliverers[p]);

    char done_log[80];
    snprintf(done_log, sizeof(done_log), "%s.done", receiver_log);
    for (int e = 0; e < 2; e++) {
        /* The endpoint's events, in the order they were written. */
        char sql[512];
        snprintf(sql, sizeof(sql),
                 "SELECT v.id FROM webhook_deliveries d JOIN webhook_events v"
                 " ON v.org_id = d.org_id AND v.seq = d.seq WHERE d.endpoint_id = '%s'"
                 " ORDER BY d.seq",
                 ids[e]);
        PGresult *expected = PQexec(db, sql);
        CHECK_INT(PQntuples(expected), 6);
        FILE *f = fopen(done_log, "r");
        char line[1024];
        int seen = 0;
        double last_end = 0;
        while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
            json_t *done = json_loads(line, 0, NULL);
            if (strcmp(e2e_str(done, "path", NULL) ? e2e_str(done, "path", NULL) : "", paths[e]) ==
                0) {
                double start = json_real_value(json_object_get(done, "start"));
                if (start < last_end)
                    FAIL("%s: a request started %.3f s before the previous one ended", paths[e],
                         last_end - start);
                last_end = json_real_value(json_object_get(done, "end"));
                if (seen < PQntuples(expected))
                    CHECK_STR(e2e_str(done, "id", NULL), PQgetvalue(expected, seen, 0));
                seen++;
            }
            json_decref(done);
        }
        if (f != NULL)
            fclose(f);
        CHECK_INT(seen, 6);
        PQclear(expected);
    }
}

int main(void)
{
    conninfo = testdb_create("e2e_webhooks");
    db = testdb_connect(conninfo);
    setenv("WALKLIST_DATABASE_URL", conninfo, 1);
    snprintf(receiver_log, sizeof(receiver_log), "webhooks-%d.jsonl", (int)getpid());
    snprintf(receiver_mode, sizeof(receiver_mode), "webhooks-%d.mode", (int)getpid());
    unlink(receiver_log);
    receiver_set_mode("ok");
    receiver_port = free_port();
    org_id = fixture_org(db, "hooks");
    fixture_key(db, org_id, "lists:write,scanner,stock:read", key);
    fixture_import(db, org_id, "warehouses", "code,name,kind\nWH1,Main,own\n");
    fixture_import(db, org_id, "products",
                   "sku,name,eans\nSKU-1,One,\nSKU-2,Two,4000000000001\nSKU-3,Three,"
                   "4000000000001\n");

    test_add_validation();
    add_endpoint();

    /* Events written while no process delivers wait in the outbox: a list loaded, a burst of
     * three imports, another list loaded. */
    service_t service;
    start_walklistd(&service, "1", "0", NULL, NULL);
    load_list(&service, "first", list_ids[0]);
    import_stock(5);
    import_stock(6);
    import_stock(7);
    load_list(&service, "second", list_ids[1]);
    reload_and_bad_import(&service, list_ids[1]);
    service_stop(&service);
    CHECK_INT(count("SELECT count(*) FROM webhook_events"), 5);
    CHECK_INT(count(PENDING), 5);

    /* A walklistd without --webhook-allow-private refuses the loopback receiver: nothing is
     * sent, the refusal is recorded and counted. */
    receiver_start();
    start_walklistd(&service, "0", "1", NULL, NULL);
    CHECK(wait_count("SELECT count(*) FROM webhook_deliveries WHERE last_error LIKE 'refused:%'", 1,
                     10) >= 1);
    http_response_t res = e2e_request(service.port, "GET", "/metrics", NULL, NULL, NULL);
    CHECK(strstr(res.body ? res.body : "",
                 "walklist_webhook_attempts_total{result=\"refused\"} ") != NULL);
    CHECK(strstr(res.body ? res.body : "",
                 "walklist_webhook_attempts_total{result=\"refused\"} 0\n") == NULL);
    http_response_free(&res);
    service_stop(&service);
    CHECK_INT(wait_received(1, 0), 0);
    receiver_stop();

    /* Receiver down: attempts fail and are retried. */
    start_walklistd(&service, "1", "1", NULL, NULL);
    CHECK(wait_count("SELECT max(attempts) FROM webhook_deliveries", 3, 10) >= 3);
    CHECK_INT(count(PENDING), 5);
    /* Up, answering 500s; then too slowly; then well. */
    receiver_set_mode("500");
    receiver_start();
    CHECK(wait_received(2, 10) >= 2);
    CHECK_INT(count("SELECT count(*) FROM webhook_deliveries WHERE last_status = 500"), 1);
    /* A redirect is a failed attempt, never followed. */
    receiver_set_mode("302");
    size_t before = wait_received(0, 0);
    CHECK(wait_received(before + 1, 10) >= before + 1);
    CHECK(wait_count("SELECT count(*) FROM webhook_deliveries WHERE last_status = 302", 1, 5) >= 1);
    receiver_set_mode("slow 2");
    before = wait_received(0, 0);
    CHECK(wait_received(before + 1, 10) >= before + 1);
    receiver_set_mode("ok");
    CHECK_INT(wait_count("SELECT count(*) FROM webhook_deliveries WHERE state <> 'pending'", 5, 20),
              5);
    CHECK_INT(count(PENDING), 0);
    /* The three imports were one delivery. */
    CHECK_INT(count("SELECT count(*) FROM webhook_deliveries WHERE state = 'coalesced'"), 2);

    /* Killed while an attempt waits for its answer: another process delivers it again, under
     * the same webhook-id. */
    receiver_set_mode("slow 3");
    before = wait_received(0, 0);
    load_list(&service, "third", list_ids[2]);
    CHECK(wait_received(before + 1, 10) >= before + 1);
    kill(service.pid, SIGKILL);
    waitpid(service.pid, NULL, 0);
    receiver_set_mode("ok");
    start_walklistd(&service, "1", "1", NULL, NULL);
    CHECK_INT(wait_count("SELECT count(*) FROM webhook_deliveries WHERE state <> 'pending'", 6, 20),
              6);

    /* Every event arrived, signed, in order; duplicates carry the same id and body. */
    json_t *all = received();
    json_t *bodies = json_object(); /* webhook-id -> body */
    json_t *order = json_array();   /* ids in order of first arrival */
    size_t i;
    json_t *request;
    json_array_foreach(all, i, request)
    {
        const char *id = e2e_str(request, "id", NULL), *body = e2e_str(request, "body", NULL);
        if (!signature_valid(request))
            FAIL("a bad signature: %s", json_dumps(request, 0));
        CHECK_STR(e2e_str(request, "contentType", NULL), "application/json");
        CHECK_STR(e2e_str(request, "path", NULL), "/hook"); /* never /elsewhere */
        if (id == NULL || body == NULL)
            continue;
        json_t *seen = json_object_get(bodies, id);
        if (seen == NULL) {
            json_object_set_new(bodies, id, json_string(body));
            json_array_append_new(order, json_string(id));
        } else {
            CHECK_STR(json_string_value(seen), body);
        }
    }
    PGresult *events = PQexec(db, "SELECT coalesce(d.webhook_id, v.id), d.state, v.type"
                                  " FROM webhook_deliveries d JOIN webhook_events v"
                                  " ON v.org_id = d.org_id AND v.seq = d.seq ORDER BY d.seq");
    size_t delivered = 0;
    for (int row = 0; row < PQntuples(events); row++) {
        if (strcmp(PQgetvalue(events, row, 1), "delivered") != 0)
            continue;
        const char *id = PQgetvalue(events, row, 0);
        CHECK_STR(json_string_value(json_array_get(order, delivered)), id);
        delivered++;
    }
    PQclear(events);
    CHECK_INT(delivered, 4);
    CHECK_INT(json_array_size(order), 4);
    /* The attempt cut by SIGKILL was received, then sent again: the same id (and body). */
    size_t third_received = 0;
    json_array_foreach(all, i, request)
    {
        const char *id = e2e_str(request, "id", NULL);
        third_received +=
            id != NULL && strcmp(id, json_string_value(json_array_get(order, 3))) == 0;
    }
    CHECK(third_received >= 2);

    /* What the events say. */
    json_t *first = json_loads(
        json_string_value(json_object_get(bodies, json_string_value(json_array_get(order, 0)))), 0,
        NULL);
    CHECK_STR(e2e_str(first, "type", NULL), "locate_list.loaded");
    json_t *data = json_object_get(first, "data");
    CHECK_STR(e2e_str(data, "id", NULL), list_ids[0]);
    CHECK_STR(e2e_str(data, "name", NULL), "first");
    CHECK(e2e_str(data, "loadedAt", NULL) != NULL);
    CHECK_INT(json_integer_value(json_object_get(data, "found")), 1);
    CHECK_INT(json_integer_value(json_object_get(data, "ambiguous")), 1);
    CHECK_INT(json_integer_value(json_object_get(data, "notFound")), 1);
    json_decref(first);
    json_t *stock = json_loads(
        json_string_value(json_object_get(bodies, json_string_value(json_array_get(order, 1)))), 0,
        NULL);
    CHECK_STR(e2e_str(stock, "type", NULL), "stock.changed");
    data = json_object_get(stock, "data");
    CHECK_INT(json_integer_value(json_object_get(data, "changes")), 3);
    bool reset = json_is_true(json_object_get(data, "historyReset"));
    /* The range is the whole burst: from before the first import to after the last. */
    char target[512];
    snprintf(target, sizeof(target), "/api/v1/stock-export?since=%s",
             e2e_str(data, "cursorTo", NULL) ? e2e_str(data, "cursorTo", NULL) : "");
    res = e2e_request(service.port, "GET", target, key, NULL, NULL);
    CHECK_INT(res.status, 200);
    CHECK_INT(json_array_size(json_object_get(res.json, "items")), 0);
    http_response_free(&res);
    snprintf(target, sizeof(target), "/api/v1/stock-export?since=%s",
             e2e_str(data, "cursorFrom", NULL) ? e2e_str(data, "cursorFrom", NULL) : "");
    res = e2e_request(service.port, "GET", target, key, NULL, NULL);
    /* A write that replaced most of the export (these small imports do) restarts the
     * history: historyReset says so, and the range's start answers 410 (export in full). */
    CHECK_INT(res.status, reset ? 410 : 200);
    http_response_free(&res);
    json_decref(stock);
    json_decref(order);
    json_decref(bodies);
    json_decref(all);

    /* walklistctl shows the deliveries. */
    output_t o;
    const char *deliveries[] = {"webhook",    "deliveries", "--org", "hooks",
                                "--endpoint", endpoint_id,  NULL};
    ctl(&o, deliveries);
    CHECK_INT(o.status, 0);
    CHECK(strncmp(o.out, "EVENT\tTYPE\tENDPOINT\tSTATE\tATTEMPTS", 34) == 0);
    CHECK(strstr(o.out, "\tdelivered\t") != NULL);
    CHECK(strstr(o.out, "\tcoalesced\t") != NULL);
    CHECK(strstr(o.out, "\t204\t-\t-\t") != NULL); /* last status, no error, no next attempt */
    CHECK(count("SELECT count(*) FROM webhook_deliveries WHERE state = 'delivered'"
                " AND attempts >= 3") >= 1);
    res = e2e_request(service.port, "GET", "/metrics", NULL, NULL, NULL);
    CHECK(strstr(res.body ? res.body : "", "walklist_webhook_workers 1\n") != NULL);
    CHECK(strstr(res.body ? res.body : "",
                 "walklist_webhook_attempts_total{result=\"delivered\"} 0\n") == NULL);
    http_response_free(&res);
    service_stop(&service);

    /* An endpoint failing for longer than --webhook-disable-after-s is disabled; events are no
     * longer written for it. */
    receiver_stop();
    start_walklistd(&service, "1", "1", "--webhook-disable-after-s", "1");
    load_list(&service, "fourth", list_ids[2]);
    CHECK_INT(
        wait_count("SELECT count(*) FROM webhook_endpoints WHERE disabled_at IS NOT NULL", 1, 15),
        1);
    ctl(&o, (const char *[]){"webhook", "list", "--org", "hooks", NULL});
    CHECK(strstr(o.out, "\tdisabled ") != NULL);
    long long events_before = count("SELECT count(*) FROM webhook_events");
    load_list(&service, "fifth", list_ids[2]);
    CHECK_INT(count("SELECT count(*) FROM webhook_events"), events_before);
    service_stop(&service);
    /* Enabled again, its pending delivery goes out. */
    ctl(&o, (const char *[]){"webhook", "enable", endpoint_id, "--org", "hooks", NULL});
    CHECK_INT(o.status, 0);
    ctl(&o, (const char *[]){"webhook", "list", "--org", "hooks", NULL});
    CHECK(strstr(o.out, "\tactive\t") != NULL);
    receiver_set_mode("ok");
    receiver_start();
    start_walklistd(&service, "1", "1", NULL, NULL);
    CHECK_INT(wait_count(PENDING_IS_ZERO, 1, 10), 1);
    service_stop(&service);
    receiver_stop();

    /* Removing the endpoint removes its deliveries. */
    ctl(&o, (const char *[]){"webhook", "remove", endpoint_id, "--org", "hooks", NULL});
    CHECK_INT(o.status, 0);
    CHECK_INT(count("SELECT count(*) FROM webhook_endpoints"), 0);
    CHECK_INT(count("SELECT count(*) FROM webhook_deliveries"), 0);

    test_processes_share_endpoints();
    receiver_stop();
    unlink(receiver_log);
    unlink(receiver_mode);
    char done_log[80];
    snprintf(done_log, sizeof(done_log), "%s.done", receiver_log);
    unlink(done_log);
    PQfinish(db);
    return test_exit();
}
