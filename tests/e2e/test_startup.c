/*
 * What walklistd says when it cannot start or cannot reach its database: a connection string
 * libpq cannot read, a port out of range and a listener it cannot open are refused at startup
 * with the reason (errno's included) and an exit status; an unreachable database is logged with
 * libpq's reason, passwords redacted; an application_name in the user's URL names the sessions.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"

/* A loopback socket that listens (bound, so no one else gets the port): its port. */
static uint16_t listening_socket(int *fd)
{
    *fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (bind(*fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(*fd, 1) != 0 ||
        getsockname(*fd, (struct sockaddr *)&addr, &len) != 0)
        FAIL("cannot open a listening socket");
    return ntohs(addr.sin_port);
}

static void test_refused_at_startup(const char *conninfo)
{
    char out[4096];
    /* Not a connection string: refused before anything is opened, the password redacted. */
    const char *bad_urls[] = {"host=127.0.0.1 password=hunter2-secret nonsense",
                              "postgresql://app:hunter2-secret@127.0.0.1/db?bogus_option=1"};
    for (size_t i = 0; i < 2; i++) {
        const char *args[] = {"--database-url", bad_urls[i], "--listen", "127.0.0.1:0", NULL};
        CHECK_INT(service_run(args, NULL, out, sizeof(out)), 2);
        if (strstr(out, "walklistd: --database-url: not a libpq connection string or URI: ") ==
            NULL)
            FAIL("no reason given for %s: %s", bad_urls[i], out);
        CHECK(strstr(out, "hunter2") == NULL);
        CHECK(strstr(out, "listening") == NULL);
    }
    const char *read_args[] = {
        "--database-url", conninfo, "--database-read-url", "postgresql://[::1", "--listen",
        "127.0.0.1:0",    NULL};
    CHECK_INT(service_run(read_args, NULL, out, sizeof(out)), 2);
    CHECK(strstr(out, "walklistd: --database-read-url: not a libpq connection string") != NULL);

    /* A port out of range or not a number: refused, not bound modulo 65536. */
    const char *ports[] = {"127.0.0.1:99999", "127.0.0.1:http", "127.0.0.1:"};
    for (size_t i = 0; i < 3; i++) {
        const char *args[] = {"--database-url", conninfo, "--listen", ports[i], NULL};
        CHECK_INT(service_run(args, NULL, out, sizeof(out)), 2);
        CHECK(strstr(out, "--listen must be host:port") != NULL);
    }

    /* A listener that cannot be opened names errno's reason. */
    int fd;
    uint16_t taken = listening_socket(&fd);
    char listen_addr[32], expected[96];
    snprintf(listen_addr, sizeof(listen_addr), "127.0.0.1:%u", (unsigned)taken);
    snprintf(expected, sizeof(expected), "cannot listen on %s: Address already in use",
             listen_addr);
    const char *args[] = {"--database-url", conninfo, "--listen", listen_addr, NULL};
    CHECK_INT(service_run(args, NULL, out, sizeof(out)), 1);
    if (strstr(out, expected) == NULL)
        FAIL("expected \"%s\" in: %s", expected, out);
    close(fd);
}

/* An unreachable database: walklistd serves 503 and its log says why, as libpq put it. */
static void test_unreachable_database_logged(void)
{
    int fd;
    uint16_t port = listening_socket(&fd);
    close(fd); /* nothing listens there now: connections are refused */
    char url[200];
    snprintf(url, sizeof(url),
             "host=127.0.0.1 port=%u dbname=walklist user=app password=hunter2-secret",
             (unsigned)port);
    service_t service;
    service_start(&service, url, NULL);
    http_response_t res = e2e_request(service.port, "GET", "/readyz", NULL, NULL, NULL);
    CHECK_INT(res.status, 503);
    http_response_free(&res);
    CHECK_INT(service_stop(&service), 0);
    char *log = service_log(&service);
    const char *line = strstr(log, "\"msg\":\"database unreachable\"");
    CHECK(line != NULL);
    const char *end = line ? strchr(line, '\n') : NULL;
    const char *reason = line ? strstr(line, "Connection refused") : NULL;
    if (reason == NULL || (end != NULL && reason > end))
        FAIL("the unreachable line gives no reason: %s", log);
    CHECK(strstr(log, "hunter2") == NULL);
    free(log);
}

/* application_name in the user's URL is kept; walklist's own is only the default. */
static void test_application_name_kept(const char *conninfo, PGconn *db)
{
    char url[1024];
    snprintf(url, sizeof(url), "%s application_name=erp-sync-7", conninfo);
    service_t service;
    service_start(&service, url, NULL);
    http_response_t res = e2e_request(service.port, "GET", "/readyz", NULL, NULL, NULL);
    CHECK_INT(res.status, 200);
    http_response_free(&res);
    CHECK(testdb_count(db, "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                           "current_database() AND application_name = 'erp-sync-7'") > 0);
    CHECK_INT(testdb_count(db, "SELECT count(*) FROM pg_stat_activity WHERE datname = "
                               "current_database() AND application_name = 'walklist'"),
              0);
    CHECK_INT(service_stop(&service), 0);
}

int main(void)
{
    const char *conninfo = testdb_create("e2e_startup");
    PGconn *db = testdb_connect(conninfo);
    test_refused_at_startup(conninfo);
    test_unreachable_database_logged();
    test_application_name_kept(conninfo, db);
    PQfinish(db);
    return test_exit();
}
