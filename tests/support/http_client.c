/* Talking HTTP/1.1 to walklistd over loopback, for end-to-end tests, happens here. */
#include "http_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "exchange_log.h"

static int connect_loopback(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct timeval timeout = {30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* De-chunks body in place; 0 when the last chunk arrived, -1 when the body is malformed or cut
 * short (a malformed body is left as it came). */
static int dechunk(char *body, size_t len, size_t *out_len)
{
    size_t in = 0, out = 0;
    bool last = false;
    while (in < len) {
        char *end = NULL;
        unsigned long size = strtoul(body + in, &end, 16);
        char *crlf = strstr(body + in, "\r\n");
        if (crlf == NULL || end == body + in)
            return -1;
        in = (size_t)(crlf - body) + 2;
        if (size == 0) {
            last = true;
            break;
        }
        if (in + size > len)
            return -1;
        memmove(body + out, body + in, size);
        out += size;
        in += size + 2;
    }
    body[out] = '\0';
    *out_len = out;
    return last ? 0 : -1;
}

/* Parses the used bytes of buf (NUL-terminated) as one answer into out; complete: all of its
 * body arrived (the last chunk, or Content-Length bytes). */
static int parse_response(const char *buf, size_t used, bool head_request, http_response_t *out,
                          bool *complete)
{
    const char *split = strstr(buf, "\r\n\r\n");
    if (split == NULL || sscanf(buf, "HTTP/1.%*d %d", &out->status) != 1) {
        out->status = 0;
        return -1;
    }
    size_t head_len = (size_t)(split - buf);
    out->head = strndup(buf, head_len + 2);
    out->body_len = used - head_len - 4;
    out->body = malloc(out->body_len + 1);
    memcpy(out->body, split + 4, out->body_len);
    out->body[out->body_len] = '\0';
    char te[64], cl[32];
    *complete = true;
    if (http_header(out, "Transfer-Encoding", te, sizeof(te)) && strcasecmp(te, "chunked") == 0)
        *complete = dechunk(out->body, out->body_len, &out->body_len) == 0;
    else if (http_header(out, "Content-Length", cl, sizeof(cl)) && !head_request &&
             out->status != 204 && out->status != 304)
        *complete = out->body_len >= (size_t)strtoull(cl, NULL, 10);
    char ct[128];
    if (http_header(out, "Content-Type", ct, sizeof(ct)) &&
        strncmp(ct, "application/json", 16) == 0)
        out->json = json_loadb(out->body, out->body_len, 0, NULL);
    return 0;
}

/* One exchange; raw: the test wrote the request bytes itself (recorded as such). */
static int exchange(uint16_t port, const char *request, size_t len, http_response_t *out, bool raw)
{
    memset(out, 0, sizeof(*out));
    int fd = connect_loopback(port);
    if (fd < 0)
        return -1;
    size_t sent = 0;
    while (sent < len) {
        ssize_t n = send(fd, request + sent, len - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* the server may answer early (413, 401) and close */
        sent += (size_t)n;
    }
    shutdown(fd, SHUT_WR);
    size_t cap = 65536, used = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (used + 4096 + 1 > cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        ssize_t n = recv(fd, buf + used, cap - used - 1, 0);
        /* With SO_RCVTIMEO set, recv fails with EINTR on any signal, even one ignored by
         * default: SIGCHLD of a system() that another thread of the test runs (system()
         * blocks SIGCHLD in its thread, so the signal is queued and wakes this one). */
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        used += (size_t)n;
    }
    close(fd);
    buf[used] = '\0';
    bool head_request = len >= 5 && memcmp(request, "HEAD ", 5) == 0;
    bool complete = false;
    int rc = parse_response(buf, used, head_request, out, &complete);
    free(buf);
    if (rc != 0)
        return -1;
    /* An interim answer (100 Continue) comes before the final one, which this client leaves in
     * the body; the record is of the final answer. */
    http_response_t final = {0};
    bool final_complete = false;
    if (out->status >= 100 && out->status < 200 && strncmp(out->body, "HTTP/1.", 7) == 0 &&
        parse_response(out->body, out->body_len, head_request, &final, &final_complete) == 0)
        exchange_log_record(request, len, &final, final_complete, raw);
    else
        exchange_log_record(request, len, out, complete, raw);
    http_response_free(&final);
    return 0;
}

int http_raw(uint16_t port, const char *request, size_t len, http_response_t *out)
{
    return exchange(port, request, len, out, true);
}

int http_request(uint16_t port, const char *method, const char *target, const char *headers,
                 const char *body, size_t body_len, http_response_t *out)
{
    size_t cap = strlen(target) + (headers ? strlen(headers) : 0) + body_len + 256;
    char *request = malloc(cap);
    int n = snprintf(request, cap, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s",
                     method, target, headers ? headers : "");
    if (body != NULL)
        n += snprintf(request + n, cap - (size_t)n, "Content-Length: %zu\r\n", body_len);
    n += snprintf(request + n, cap - (size_t)n, "\r\n");
    if (body != NULL) {
        memcpy(request + n, body, body_len);
        n += (int)body_len;
    }
    int rc = exchange(port, request, (size_t)n, out, false);
    free(request);
    return rc;
}

const char *http_header(const http_response_t *res, const char *name, char *buf, size_t size)
{
    if (res->head == NULL)
        return NULL;
    size_t name_len = strlen(name);
    const char *line = strstr(res->head, "\r\n");
    while (line != NULL && line[2] != '\0') {
        line += 2;
        if (strncasecmp(line, name, name_len) == 0 && line[name_len] == ':') {
            const char *value = line + name_len + 1;
            while (*value == ' ')
                value++;
            size_t len = strcspn(value, "\r\n");
            snprintf(buf, size, "%.*s", (int)len, value);
            return buf;
        }
        line = strstr(line, "\r\n");
    }
    return NULL;
}

void http_response_free(http_response_t *res)
{
    free(res->head);
    free(res->body);
    json_decref(res->json);
    memset(res, 0, sizeof(*res));
}

const char *http_escape(const char *s, char *buf, size_t size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *s != '\0' && o + 4 < size; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~') {
            buf[o++] = (char)c;
        } else {
            buf[o++] = '%';
            buf[o++] = hex[c >> 4];
            buf[o++] = hex[c & 15];
        }
    }
    buf[o] = '\0';
    return buf;
}
