/* walklistd --probe: one GET by the server's binary, for container health checks, happens here. */
#include "process/probe.h"

#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

typedef struct {
    char host[256];
    char port[8];
    const char *path; /* into the URL; "" means "/" */
} probe_target_t;

static bool parse_target(const char *url, probe_target_t *target, FILE *why)
{
    if (strncasecmp(url, "https://", 8) == 0) {
        fprintf(why,
                "walklistd: --probe speaks plain HTTP; with TLS, probe the --ops-listen "
                "address (http://), got %s\n",
                url);
        return false;
    }
    if (strncasecmp(url, "http://", 7) != 0) {
        fprintf(why, "walklistd: --probe needs http://HOST[:PORT][/PATH], got %s\n", url);
        return false;
    }
    const char *authority = url + 7;
    size_t authority_len = strcspn(authority, "/");
    target->path = authority + authority_len;
    strcpy(target->port, "80");
    int taken = 0;
    /* %n counts what matched, so "host:port" must be the whole authority. */
    if (authority[0] == '[' &&
        sscanf(authority, "[%255[0-9a-fA-F:.]]%n", target->host, &taken) == 1) {
        /* an IPv6 address */
    } else if (sscanf(authority, "%255[^:/[]%n", target->host, &taken) != 1) {
        taken = -1;
    }
    if (taken > 0 && authority[taken] == ':') {
        int port_len = 0;
        if (sscanf(authority + taken + 1, "%7[0-9]%n", target->port, &port_len) != 1)
            taken = -1;
        else
            taken += 1 + port_len;
    }
    if (taken <= 0 || (size_t)taken != authority_len) {
        fprintf(why, "walklistd: --probe needs http://HOST[:PORT][/PATH], got %s\n", url);
        return false;
    }
    return true;
}

static int connect_target(const probe_target_t *target, int timeout_ms, FILE *why)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *found = NULL;
    int gai = getaddrinfo(target->host, target->port, &hints, &found);
    if (gai != 0) {
        fprintf(why, "walklistd: probe: cannot resolve %s: %s\n", target->host, gai_strerror(gai));
        return -1;
    }
    struct timeval limit = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    int fd = -1, connect_errno = 0;
    for (struct addrinfo *a = found; a != NULL && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        /* On Linux the send limit bounds connect() too. */
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            connect_errno = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(found);
    if (fd < 0)
        fprintf(why, "walklistd: probe: cannot connect to %s port %s: %s\n", target->host,
                target->port, strerror(connect_errno));
    return fd;
}

int wl_probe(const char *url, int timeout_ms, FILE *why)
{
    probe_target_t target;
    if (!parse_target(url, &target, why))
        return 1;
    int fd = connect_target(&target, timeout_ms, why);
    if (fd < 0)
        return 1;
    char request[1024];
    bool v6 = strchr(target.host, ':') != NULL;
    int len = snprintf(request, sizeof(request),
                       "GET %s HTTP/1.1\r\nHost: %s%s%s:%s\r\nUser-Agent: walklistd-probe\r\n"
                       "Connection: close\r\n\r\n",
                       target.path[0] != '\0' ? target.path : "/", v6 ? "[" : "", target.host,
                       v6 ? "]" : "", target.port);
    int rc = 1;
    if (len <= 0 || (size_t)len >= sizeof(request)) {
        fprintf(why, "walklistd: probe: the URL is too long\n");
    } else if (send(fd, request, (size_t)len, MSG_NOSIGNAL) != len) {
        fprintf(why, "walklistd: probe: cannot send the request: %s\n", strerror(errno));
    } else {
        /* The status line is all that is read: "HTTP/1.1 200 OK". */
        char answer[64];
        size_t have = 0;
        ssize_t n = 0;
        while (have < sizeof(answer) - 1 && memchr(answer, '\n', have) == NULL &&
               (n = recv(fd, answer + have, sizeof(answer) - 1 - have, 0)) > 0)
            have += (size_t)n;
        answer[have] = '\0';
        int status = 0;
        if (sscanf(answer, "HTTP/1.%*[01] %3d", &status) != 1)
            fprintf(why, "walklistd: probe: no HTTP answer from %s%s\n", url,
                    n < 0 ? " in time" : "");
        else if (status < 200 || status > 299)
            fprintf(why, "walklistd: probe: %s answered %d\n", url, status);
        else
            rc = 0;
    }
    close(fd);
    return rc;
}
