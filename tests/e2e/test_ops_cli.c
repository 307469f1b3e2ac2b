/*
 * What an operator's tools see of the programs: --version of walklistd, walklistctl and
 * walklist-scanner (the build's version and commit, also in walklist_build_info), walklistd
 * --probe against a running walklistd (a container's HEALTHCHECK), walklistd's messages to
 * systemd (Type=notify), and walklist-scanner's --help and its answer to an https URL.
 */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"
#include "service.h"
#include "testdb.h"
#include "walklist/version.h"

static service_t service;
static char err_path[64];

typedef struct {
    int status; /* exit code; -1 when it did not exit */
    char out[16384];
    char err[4096];
} output_t;

/* Reads what fits into buf, and the rest to nowhere (a writer must not die of SIGPIPE). */
static void read_into(FILE *in, char *buf, size_t size)
{
    size_t len = in ? fread(buf, 1, size - 1, in) : 0;
    buf[len] = '\0';
    char rest[512];
    while (in != NULL && fread(rest, 1, sizeof(rest), in) > 0) {
    }
}

/* Runs `program args` through the shell (args already quoted), stdout and stderr apart. */
static void run(output_t *o, const char *program, const char *args)
{
    char command[1024];
    snprintf(command, sizeof(command), "'%s' %s 2>'%s'", program, args, err_path);
    FILE *p = popen(command, "r");
    read_into(p, o->out, sizeof(o->out));
    int status = p ? pclose(p) : -1;
    o->status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    FILE *err = fopen(err_path, "r");
    read_into(err, o->err, sizeof(o->err));
    if (err != NULL)
        fclose(err);
}

static const char *program(const char *variable)
{
    const char *path = getenv(variable);
    if (path == NULL) {
        fprintf(stderr, "%s is not set: run under ctest\n", variable);
        exit(1);
    }
    return path;
}

static void test_versions(void)
{
    static const struct {
        const char *variable, *name;
    } programs[] = {
        {"WALKLISTD", "walklistd"},
        {"WALKLISTCTL", "walklistctl"},
        {"WALKLIST_SCANNER", "walklist-scanner"},
    };
    char expected[128];
    for (size_t i = 0; i < sizeof(programs) / sizeof(programs[0]); i++) {
        output_t o;
        run(&o, program(programs[i].variable), "--version");
        snprintf(expected, sizeof(expected), "%s %s (commit %s)\n", programs[i].name, WL_VERSION,
                 WL_COMMIT);
        CHECK_INT(o.status, 0);
        CHECK_STR(o.out, expected);
        CHECK_STR(o.err, "");
    }
    /* The version is the project's (CMake's project(VERSION)), the commit git's or "unknown". */
    CHECK(strspn(WL_VERSION, "0123456789.") == strlen(WL_VERSION) && strchr(WL_VERSION, '.'));
    CHECK(strcmp(WL_COMMIT, "unknown") == 0 ||
          (strlen(WL_COMMIT) == 12 && strspn(WL_COMMIT, "0123456789abcdef") == 12));

    http_response_t res = e2e_request(service.port, "GET", "/metrics", NULL, NULL, NULL);
    snprintf(
        expected, sizeof(expected),
        "\n# TYPE walklist_build_info gauge\nwalklist_build_info{version=\"%s\",commit=\"%s\"} "
        "1\n",
        WL_VERSION, WL_COMMIT);
    CHECK_INT(res.status, 200);
    CHECK(res.body != NULL && strstr(res.body, expected) != NULL);
    http_response_free(&res);
}

/* A loopback port that refuses connections for as long as the socket stays open: bound, never
 * listening. */
static int refusing_port(uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(addr);
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        getsockname(fd, (struct sockaddr *)&addr, &len) != 0) {
        FAIL("cannot bind a loopback socket");
        *port = 1;
        return fd;
    }
    *port = ntohs(addr.sin_port);
    return fd;
}

static void test_probe(void)
{
    const char *walklistd = program("WALKLISTD");
    uint16_t closed_port = 0;
    int closed_fd = refusing_port(&closed_port);
    char url[128];
    const struct {
        const char *path; /* after http://127.0.0.1:PORT, or a whole URL with "!" */
        int port;         /* 0: walklistd's */
        int status;
        const char *err; /* in stderr; "" for none at all */
    } cases[] = {
        {"/healthz", 0, 0, ""},
        {"/readyz", 0, 0, ""},
        {"/no-such-path", 0, 1, "answered 404"},
        {"/healthz", closed_port, 1, "cannot connect to 127.0.0.1 port"},
        {"!https://127.0.0.1:1/healthz", 0, 1, "--probe speaks plain HTTP"},
        {"!ftp://127.0.0.1/healthz", 0, 1, "--probe needs http://HOST[:PORT][/PATH]"},
        {"!http://127.0.0.1:port/healthz", 0, 1, "--probe needs http://HOST[:PORT][/PATH]"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (cases[i].path[0] == '!')
            snprintf(url, sizeof(url), "--probe '%s'", cases[i].path + 1);
        else
            snprintf(url, sizeof(url), "--probe 'http://127.0.0.1:%u%s'",
                     (unsigned)(cases[i].port ? cases[i].port : service.port), cases[i].path);
        output_t o;
        /* The probe reads no setting: an unusable environment changes nothing. */
        setenv("WALKLIST_THREADS", "not-a-number", 1);
        run(&o, walklistd, url);
        unsetenv("WALKLIST_THREADS");
        int failures = test_failures;
        CHECK_INT(o.status, cases[i].status);
        CHECK_STR(o.out, "");
        if (cases[i].err[0] == '\0')
            CHECK_STR(o.err, "");
        else
            CHECK(strstr(o.err, cases[i].err) != NULL);
        if (test_failures != failures)
            fprintf(stderr, "  %s: exit %d, stderr %s\n", url, o.status, o.err);
    }
    close(closed_fd);

    output_t o;
    run(&o, walklistd, "--help");
    CHECK_INT(o.status, 0);
    CHECK(strstr(o.out, "--probe URL") != NULL && strstr(o.out, "--version") != NULL);
}

static void test_scanner_cli(void)
{
    const char *scanner = program("WALKLIST_SCANNER");
    output_t o;
    run(&o, scanner, "--help");
    CHECK_INT(o.status, 0);
    CHECK(strncmp(o.out, "usage: walklist-scanner", 23) == 0);
    CHECK_STR(o.err, "");
    /* https is refused before anything is sent, saying what to do instead. */
    char args[128];
    snprintf(args, sizeof(args), "--url https://127.0.0.1:%u --key k list", (unsigned)service.port);
    run(&o, scanner, args);
    CHECK_INT(o.status, 2);
    CHECK_STR(o.out, "");
    CHECK(strstr(o.err, "https is not supported") != NULL);
    CHECK(strstr(o.err, "TLS-terminating proxy") != NULL);
}

/* systemd's side of sd_notify: a datagram socket named by NOTIFY_SOCKET. */
static int notify_socket(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
    unlink(path);
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        FAIL("cannot bind %s", path);
        return -1;
    }
    /* Only a bound on a hung walklistd: the messages are sent before the calls return. */
    struct timeval limit = {.tv_sec = 60};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
    setenv("NOTIFY_SOCKET", path, 1);
    return fd;
}

static void expect_notification(int fd, const char *expected)
{
    char message[256];
    ssize_t n = fd >= 0 ? recv(fd, message, sizeof(message) - 1, 0) : -1;
    message[n > 0 ? n : 0] = '\0';
    if (strncmp(message, expected, strlen(expected)) != 0)
        FAIL("systemd was told '%s', expected '%s...'", message, expected);
}

int main(void)
{
    snprintf(err_path, sizeof(err_path), "/tmp/wl_ops_cli_%ld.err", (long)getpid());
    char notify_path[64];
    snprintf(notify_path, sizeof(notify_path), "/tmp/wl_ops_cli_%ld.notify", (long)getpid());
    const char *conninfo = testdb_create("e2e_ops_cli");
#ifdef WL_HAVE_SYSTEMD
    int notify_fd = notify_socket(notify_path);
#endif
    service_start(&service, conninfo, NULL);
#ifdef WL_HAVE_SYSTEMD
    unsetenv("NOTIFY_SOCKET"); /* the programs run below are not the service */
    expect_notification(notify_fd, "READY=1");
#endif
    test_versions();
    test_probe();
    test_scanner_cli();
    CHECK_INT(service_stop(&service), 0);
#ifdef WL_HAVE_SYSTEMD
    expect_notification(notify_fd, "STOPPING=1");
    close(notify_fd);
    unlink(notify_path);
#endif
    unlink(err_path);
    return test_exit();
}
