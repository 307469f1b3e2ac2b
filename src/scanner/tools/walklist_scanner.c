/*
 * walklist-scanner: a handheld's Check location mode on a terminal, built on the scanner
 * firmware library (src/scanner, walklist/scanner_*.h) like a handheld's firmware: the library
 * builds the request and reads the answer through a fixed receive buffer filled from a plain
 * POSIX socket, streaming it into the decoder, so a walk of any length is shown with the same
 * few KiB of memory.
 *
 *     walklist-scanner --url http://127.0.0.1:8080 --key KEY list
 *     walklist-scanner --url http://127.0.0.1:8080 --key KEY load ID
 *
 * Exit status: 0 done, 1 the server answered with an error or the exchange failed, 2 usage.
 *
 * Plain HTTP only, as on the devices: an https URL is refused with a message that says to put a
 * TLS-terminating proxy in front (docs/firmware.md, "Porting").
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "walklist/scanner_exchange.h"
#include "walklist/version.h"

#define RECEIVE_BUFFER_SIZE 512        /* socket reads land here, the decoder reads from here */
#define ERROR_BODY_SIZE     1024       /* the JSON error shown for a non-200 answer */
#define MAX_RESPONSE_SIZE   (4u << 20) /* the largest body accepted */
#define IO_TIMEOUT_S        30

static const char usage[] =
    "usage: walklist-scanner --url http://HOST:PORT --key KEY list\n"
    "       walklist-scanner --url http://HOST:PORT --key KEY load ID\n"
    "       walklist-scanner --help | --version\n"
    "  list      the organization's pending walk lists, oldest first\n"
    "  load ID   load a list (once: a second load is refused) and show its walk\n"
    "The key may also come from WALKLIST_SCANNER_KEY (keys in arguments show in ps).\n"
    "The URL is plain http://, as on the devices; for https put a TLS-terminating proxy\n"
    "(stunnel, nginx, HAProxy) next to the scanner and point --url at it.\n"
    "Exit status: 0 done, 1 the server refused or the exchange failed, 2 usage.\n";

typedef struct {
    char host[256];
    char port[8];
    char base_path[256]; /* "" or "/prefix" without a trailing slash */
} target_t;

static int fail(const char *what)
{
    fprintf(stderr, "walklist-scanner: %s\n", what);
    return 1;
}

static bool parse_url(const char *url, target_t *target)
{
    static const char scheme[] = "http://";
    if (strncasecmp(url, scheme, sizeof(scheme) - 1) != 0)
        return false;
    const char *host = url + sizeof(scheme) - 1;
    const char *path = host + strcspn(host, "/");
    const char *host_end, *port = NULL;
    if (*host == '[') { /* [v6]:port */
        host++;
        host_end = memchr(host, ']', (size_t)(path - host));
        if (host_end == NULL)
            return false;
        if (host_end[1] == ':')
            port = host_end + 2;
        else if (host_end + 1 != path)
            return false;
    } else {
        host_end = memchr(host, ':', (size_t)(path - host));
        if (host_end != NULL)
            port = host_end + 1;
        else
            host_end = path;
    }
    size_t host_len = (size_t)(host_end - host);
    size_t port_len = port ? (size_t)(path - port) : 2;
    if (host_len == 0 || host_len >= sizeof(target->host) || port_len == 0 ||
        port_len >= sizeof(target->port))
        return false;
    memcpy(target->host, host, host_len);
    target->host[host_len] = '\0';
    if (port != NULL) {
        memcpy(target->port, port, port_len);
        target->port[port_len] = '\0';
    } else {
        strcpy(target->port, "80");
    }
    size_t path_len = strlen(path);
    while (path_len > 0 && path[path_len - 1] == '/')
        path_len--;
    if (path_len >= sizeof(target->base_path))
        return false;
    memcpy(target->base_path, path, path_len);
    target->base_path[path_len] = '\0';
    return true;
}

static int connect_to(const target_t *target)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *addrs = NULL;
    int gai = getaddrinfo(target->host, target->port, &hints, &addrs);
    if (gai != 0) {
        fprintf(stderr, "walklist-scanner: cannot resolve %s: %s\n", target->host,
                gai_strerror(gai));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *a = addrs; a != NULL && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0)
            continue;
        struct timeval timeout = {.tv_sec = IO_TIMEOUT_S};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(addrs);
    if (fd < 0)
        fprintf(stderr, "walklist-scanner: cannot connect to %s:%s: %s\n", target->host,
                target->port, strerror(errno));
    return fd;
}

static bool send_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

/* Host, and the port unless it is HTTP's own: "[v6]" keeps an IPv6 address one field value. */
static void host_field(const target_t *target, char *out, size_t size)
{
    bool v6 = strchr(target->host, ':') != NULL;
    bool default_port = strcmp(target->port, "80") == 0;
    snprintf(out, size, "%s%s%s%s%s", v6 ? "[" : "", target->host, v6 ? "]" : "",
             default_port ? "" : ":", default_port ? "" : target->port);
}

/* The library's receive hook: the socket, with EINTR retried. */
static int socket_recv(void *io, uint8_t *buf, size_t size)
{
    int fd = *(int *)io;
    for (;;) {
        ssize_t n = recv(fd, buf, size, 0);
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 ? -1 : (int)n;
    }
}

/* A non-200 answer: status and the JSON error body (cut to ERROR_BODY_SIZE) on stderr. */
static int report_error(wl_scanner_exchange_t *ex)
{
    char text[ERROR_BODY_SIZE + 1];
    wl_scanner_error_t err = {.body = text, .body_size = sizeof(text)};
    int rc = wl_scanner_exchange_error(ex, &err);
    if (!wl_scanner_is_server_error(rc) && rc != WL_SCANNER_ETOO_LARGE)
        return fail(wl_scanner_strerror(rc)); /* the answer broke off */
    while (err.body_len > 0 && (text[err.body_len - 1] == '\n' || text[err.body_len - 1] == '\r'))
        text[--err.body_len] = '\0';
    fprintf(stderr, "walklist-scanner: HTTP %d: %s\n", ex->http.status, text);
    return 1;
}

/* --- the screens --------------------------------------------------------------------------- */

static void print_time(uint64_t seconds)
{
    time_t t = (time_t)seconds;
    struct tm tm;
    char text[32] = "?";
    if (gmtime_r(&t, &tm) != NULL)
        strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
    fputs(text, stdout);
}

static int show_queue(pb_istream_t *stream)
{
    walklist_scanner_v1_ListPendingResponse queue;
    int rc = wl_scanner_decode_list_pending(stream, &queue);
    if (rc != WL_SCANNER_OK) {
        fprintf(stderr, "walklist-scanner: %s: %s\n", wl_scanner_strerror(rc),
                PB_GET_ERROR(stream));
        return 1;
    }
    puts("Pending lists (id, created, codes, name):");
    for (pb_size_t i = 0; i < queue.lists_count; i++) {
        const walklist_scanner_v1_PendingList *list = &queue.lists[i];
        printf("  %s\t", list->id);
        print_time(list->created_at);
        printf("\t%u\t%s\n", (unsigned)list->codes_count, list->name);
    }
    if (queue.lists_count == 0)
        puts("  (none)");
    if (queue.more)
        puts("More lists are waiting.");
    return 0;
}

enum { SECTION_STOPS, SECTION_AMBIGUOUS, SECTION_NOT_FOUND, SECTION_UNLOCATED, SECTION_END };

static const char *const section_titles[] = {
    "Stops (bin, warehouse, SKU, quantity, name):",
    "Ambiguous codes (code, SKUs):",
    "Not found:",
    "Without location (SKU, name):",
};

/* The Check location screen, printed as the walk streams in. */
typedef struct {
    const walklist_scanner_v1_LoadListResponse *walk; /* name decoded before any entry */
    bool started;
    int section;                          /* the section whose title was printed last */
    size_t entries;                       /* in that section */
    char open_code[WL_SCANNER_CODE_SIZE]; /* the ambiguous code whose line is open, or "" */
} screen_t;

static void enter_section(screen_t *screen, int section)
{
    if (!screen->started) {
        printf("Check location: %s\n", screen->walk->name);
        screen->started = true;
        screen->section = -1;
    }
    if (screen->open_code[0] != '\0' && section != screen->section) {
        putchar('\n');
        screen->open_code[0] = '\0';
    }
    while (screen->section < section) {
        if (screen->section >= 0 && screen->entries == 0)
            puts("  (none)");
        screen->section++;
        screen->entries = 0;
        if (screen->section < SECTION_END)
            puts(section_titles[screen->section]);
    }
    screen->entries++;
}

static bool show_stop(void *context, const walklist_scanner_v1_Stop *stop)
{
    enter_section(context, SECTION_STOPS);
    printf("  %s\t%s\t%s\t%u\t%s\n", stop->bin, stop->warehouse, stop->sku,
           (unsigned)stop->quantity, stop->name);
    return true;
}

static bool show_ambiguous(void *context, const walklist_scanner_v1_AmbiguousMatch *match)
{
    screen_t *screen = context;
    enter_section(screen, SECTION_AMBIGUOUS);
    if (strcmp(screen->open_code, match->code) == 0) {
        printf("\t%s", match->sku);
        return true;
    }
    if (screen->open_code[0] != '\0')
        putchar('\n');
    printf("  %s\t%s", match->code, match->sku);
    snprintf(screen->open_code, sizeof(screen->open_code), "%s", match->code);
    return true;
}

static bool show_not_found(void *context, const char *code)
{
    enter_section(context, SECTION_NOT_FOUND);
    printf("  %s\n", code);
    return true;
}

static bool show_unlocated(void *context, const walklist_scanner_v1_Unlocated *product)
{
    enter_section(context, SECTION_UNLOCATED);
    printf("  %s\t%s\n", product->sku, product->name);
    return true;
}

static int show_walk(pb_istream_t *stream)
{
    walklist_scanner_v1_LoadListResponse walk;
    screen_t screen = {.walk = &walk};
    wl_scanner_walk_handler_t handler = {show_stop, show_ambiguous, show_not_found, show_unlocated,
                                         &screen};
    int rc = wl_scanner_decode_load_list(stream, &handler, &walk);
    if (rc != WL_SCANNER_OK) {
        if (screen.open_code[0] != '\0')
            putchar('\n');
        fflush(stdout);
        fprintf(stderr, "walklist-scanner: %s: %s\n", wl_scanner_strerror(rc),
                PB_GET_ERROR(stream));
        return 1;
    }
    enter_section(&screen, SECTION_END);
    if (walk.truncated)
        puts("Truncated: the list has more entries than a device is sent; the first are shown.");
    return 0;
}

/* --- main ---------------------------------------------------------------------------------- */

static int call(const target_t *target, const char *key, const char *path, const uint8_t *request,
                size_t request_len, int (*show)(pb_istream_t *stream))
{
    int fd = connect_to(target);
    if (fd < 0)
        return 1;
    char host[300];
    host_field(target, host, sizeof(host));
    wl_scanner_server_t server = {.host = host, .base_path = target->base_path, .key = key};
    uint8_t out[WL_SCANNER_REQUEST_SIZE + 1024], buf[RECEIVE_BUFFER_SIZE];
    size_t out_len = 0;
    wl_scanner_exchange_t ex;
    wl_scanner_exchange_init(&ex, socket_recv, &fd, buf, sizeof(buf), MAX_RESPONSE_SIZE);
    int rc = 1, head;
    if (wl_scanner_http_request(&server, path, request, request_len, out, sizeof(out), &out_len) !=
        WL_SCANNER_OK)
        fail("the key or the URL cannot go into a request");
    else if (!send_all(fd, out, out_len))
        fail("cannot send the request");
    else if ((head = wl_scanner_exchange_head(&ex)) == WL_SCANNER_ETOO_LARGE)
        fail("the response is too large");
    else if (head != WL_SCANNER_OK)
        fail("no valid HTTP response");
    else if (ex.http.status != 200)
        rc = report_error(&ex);
    else if (!ex.http.proto)
        fail("the response is not application/proto");
    else {
        pb_istream_t stream = wl_scanner_exchange_body(&ex);
        rc = show(&stream);
        int end = rc == 0 ? wl_scanner_exchange_end(&ex) : WL_SCANNER_OK;
        if (end != WL_SCANNER_OK)
            rc = fail(wl_scanner_strerror(end));
    }
    close(fd);
    return rc;
}

int main(int argc, char **argv)
{
    const char *url = NULL, *key = getenv("WALKLIST_SCANNER_KEY");
    for (int a = 1; a < argc && strcmp(argv[a], "--") != 0; a++) {
        if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
            fputs(usage, stdout);
            return 0;
        }
        if (strcmp(argv[a], "--version") == 0) {
            printf("walklist-scanner %s (commit %s)\n", WL_VERSION, WL_COMMIT);
            return 0;
        }
    }
    int i = 1;
    for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        if (strcmp(argv[i], "--url") == 0)
            url = argv[i + 1];
        else if (strcmp(argv[i], "--key") == 0)
            key = argv[i + 1];
        else
            break;
    }
    target_t target;
    if (url == NULL || key == NULL || key[0] == '\0' || i >= argc) {
        fputs(usage, stderr);
        return 2;
    }
    if (strncasecmp(url, "https://", 8) == 0) {
        fprintf(stderr,
                "walklist-scanner: https is not supported (the scanner speaks plain HTTP, as the "
                "devices do): run a TLS-terminating proxy such as stunnel next to the scanner and "
                "give its http:// address, got %s\n",
                url);
        return 2;
    }
    if (!parse_url(url, &target)) {
        fprintf(stderr, "walklist-scanner: --url must be http://HOST[:PORT][/PATH], got %s\n", url);
        return 2;
    }
    uint8_t request[WL_SCANNER_LOAD_LIST_REQUEST_SIZE + 1];
    size_t request_len = 0;
    if (strcmp(argv[i], "list") == 0 && i + 1 == argc) {
        if (wl_scanner_encode_list_pending(request, sizeof(request), &request_len) != 0)
            return fail("cannot encode the request");
        return call(&target, key, WL_SCANNER_LIST_PENDING_PATH, request, request_len, show_queue);
    }
    if (strcmp(argv[i], "load") == 0 && i + 2 == argc) {
        int rc = wl_scanner_encode_load_list(argv[i + 1], request, sizeof(request), &request_len);
        if (rc != WL_SCANNER_OK) {
            fprintf(stderr, "walklist-scanner: list id must be 1 to 40 characters\n");
            return 2;
        }
        return call(&target, key, WL_SCANNER_LOAD_LIST_PATH, request, request_len, show_walk);
    }
    fputs(usage, stderr);
    return 2;
}
