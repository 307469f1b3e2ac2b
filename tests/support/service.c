/* Starting and stopping a walklistd for end-to-end tests happens here. */
#include "service.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

char *service_log(const service_t *service)
{
    FILE *f = fopen(service->log_path, "rb");
    if (f == NULL)
        return strdup("");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    size_t n = fread(text, 1, (size_t)size, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

void service_start(service_t *service, const char *conninfo, const char *const *extra_args)
{
    const char *binary = getenv("WALKLISTD");
    if (binary == NULL) {
        fprintf(stderr, "WALKLISTD is not set: run under ctest\n");
        exit(1);
    }
    static int started;
    memset(service, 0, sizeof(*service));
    /* Made here, before the fork, and never one that exists: a log left by an earlier test
     * whose process had the same PID would otherwise be read for this one's port until the
     * child truncated it (and a later test would wipe this one's log before token_scan). */
    int log_fd = -1;
    ++started;
    for (int again = 0; log_fd < 0 && again < 1000; again++) {
        snprintf(service->log_path, sizeof(service->log_path),
                 again == 0 ? WL_TEST_OUTPUT_DIR "/walklistd-%d-%d.log"
                            : WL_TEST_OUTPUT_DIR "/walklistd-%d-%d-%d.log",
                 (int)getpid(), started, again);
        log_fd = open(service->log_path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    }
    if (log_fd < 0) {
        fprintf(stderr, "cannot make a log file for walklistd\n");
        exit(1);
    }
    /* Limits high enough that tests of other things never meet them; a test of the
     * limits passes its own (the last occurrence of a flag wins). */
    const char *argv[40] = {binary,        "--database-url",
                            conninfo,      "--listen",
                            "127.0.0.1:0", "--threads",
                            "4",           "--rate-limit-locate-lists",
                            "1000000",     "--rate-limit-stock-export",
                            "1000000",     "--rate-limit-shared",
                            "1000000",     "--rate-limit-anonymous",
                            "1000000"};
    int argc = 15;
    for (int i = 0; extra_args != NULL && extra_args[i] != NULL && argc < 39; i++)
        argv[argc++] = extra_args[i];
    argv[argc] = NULL;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        /* A test killed by its timeout must not leave its walklistd behind. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        /* Tests write through another process (the fixtures) and export at once, which only
         * reading the version on every request sees without waiting for PostgreSQL's
         * announcement; a test of the default sets the variable itself. */
        setenv("WALKLIST_EXPORT_CACHE_TRUST_NOTIFY", "0", 0);
        dup2(log_fd, STDERR_FILENO);
        dup2(log_fd, STDOUT_FILENO);
        execv(binary, (char *const *)argv);
        _exit(127);
    }
    close(log_fd);
    service->pid = pid;
    for (int attempt = 0; attempt < 200; attempt++) {
        char *log = service_log(service);
        const char *listening = strstr(log, "\"msg\":\"listening\"");
        const char *port = listening ? strstr(listening, "\"port\":") : NULL;
        if (port != NULL) {
            service->port = (uint16_t)atoi(port + 7);
            free(log);
            return;
        }
        free(log);
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            char *text = service_log(service);
            fprintf(stderr, "walklistd exited at start:\n%s\n", text);
            free(text);
            exit(1);
        }
        struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    fprintf(stderr, "walklistd did not start listening within 10 s\n");
    kill(pid, SIGKILL);
    exit(1);
}

int service_run(const char *const *args, const char *env, char *out, size_t size)
{
    char path[] = "/tmp/walklist-run-XXXXXX";
    int fd = mkstemp(path);
    pid_t pid = fork();
    if (pid == 0) {
        if (env != NULL)
            putenv((char *)env);
        dup2(fd, STDERR_FILENO);
        dup2(fd, STDOUT_FILENO);
        const char *argv[16] = {getenv("WALKLISTD")};
        for (int i = 0; args[i] != NULL && i < 14; i++)
            argv[i + 1] = args[i];
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ssize_t n = pread(fd, out, size - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * A sanitizer report in walklistd's log (a sanitizer build writes them to stderr, which is the
 * log) fails the stop even when the exit status would not show it; the report is printed.
 */
static int sanitizer_report(const service_t *service, int status)
{
    static const char *const markers[] = {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                                          "runtime error:"};
    char *log = service_log(service);
    for (size_t i = 0; i < sizeof(markers) / sizeof(markers[0]); i++) {
        const char *report = strstr(log, markers[i]);
        if (report != NULL) {
            fprintf(stderr, "walklistd (%s) reported:\n%.8000s\n", service->log_path, report);
            status = status != 0 ? status : 99;
            break;
        }
    }
    free(log);
    return status;
}

/*
 * Every line walklistd writes is a JSON object (its request log, its own diagnostics,
 * libmicrohttpd's and libpq's messages through wl_log): log pipelines parse each line. A line
 * that is not fails the stop and is printed.
 */
static int plain_line(const service_t *service, int status)
{
    char *log = service_log(service);
    for (char *line = log, *end; *line != '\0'; line = end + (*end != '\0')) {
        end = strchr(line, '\n');
        if (end == NULL)
            end = line + strlen(line);
        json_error_t error;
        json_t *object = json_loadb(line, (size_t)(end - line), 0, &error);
        bool ok = json_is_object(object);
        json_decref(object);
        if (!ok && end > line) {
            fprintf(stderr, "walklistd (%s) wrote a line that is not a JSON object: %.*s\n",
                    service->log_path, (int)(end - line > 500 ? 500 : end - line), line);
            status = status != 0 ? status : 98;
            break;
        }
    }
    free(log);
    return status;
}

int service_stop(service_t *service)
{
    if (service->pid <= 0)
        return -1;
    kill(service->pid, SIGTERM);
    int status = 0;
    for (int attempt = 0; attempt < 200; attempt++) {
        if (waitpid(service->pid, &status, WNOHANG) == service->pid) {
            service->pid = 0;
            status = sanitizer_report(service, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
            return plain_line(service, status);
        }
        struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    kill(service->pid, SIGKILL);
    waitpid(service->pid, &status, 0);
    service->pid = 0;
    return -1;
}

void service_unreachable_database(char *url, size_t size)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t addr_len = sizeof(addr);
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        getsockname(fd, (struct sockaddr *)&addr, &addr_len) != 0) {
        fprintf(stderr, "cannot find a free loopback port\n");
        exit(1);
    }
    close(fd); /* nothing listens there now: connections are refused */
    snprintf(url, size, "host=127.0.0.1 port=%u dbname=walklist user=app",
             (unsigned)ntohs(addr.sin_port));
}
