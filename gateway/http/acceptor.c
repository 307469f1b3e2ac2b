/* Accepting connections and handing them to libmicrohttpd happens here. */
#include "http/acceptor.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "walklist/log.h"

/* How long accepting pauses when the process is out of descriptors or memory. */
#define RETRY_PAUSE_MS 100
/* At the limit, how long to wait for a close before counting the daemon's connections again
 * (a connection handed over can still be refused by a worker without a close notification). */
#define RECOUNT_MS 1000

struct wl_acceptor {
    int listen_fd;
    int wake_fd; /* an eventfd: a connection closed at the limit, or stop */
    struct MHD_Daemon *daemon;
    unsigned limit;
    atomic_int open; /* handed over and not yet closed */
    atomic_bool stopping;
    bool running; /* the thread was started and not yet joined */
    pthread_t thread;
};

/* Waits until a connection may be accepted; false once stopping. */
static bool wait_for_room(wl_acceptor_t *acceptor)
{
    for (;;) {
        bool full = atomic_load(&acceptor->open) >= (int)acceptor->limit;
        struct pollfd fds[2] = {{.fd = acceptor->wake_fd, .events = POLLIN},
                                {.fd = acceptor->listen_fd, .events = POLLIN}};
        /* At the limit only a close (or stop) is awaited: clients wait in the backlog. */
        int ready = poll(fds, full ? 1 : 2, full ? RECOUNT_MS : -1);
        if (atomic_load(&acceptor->stopping))
            return false;
        if (ready > 0 && (fds[0].revents & POLLIN)) {
            uint64_t count;
            if (read(acceptor->wake_fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
                wl_log("error", "acceptor", "reading its eventfd: %s", strerror(errno));
        }
        if (ready == 0 && full) {
            const union MHD_DaemonInfo *info =
                MHD_get_daemon_info(acceptor->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
            if (info != NULL)
                atomic_store(&acceptor->open, (int)info->num_connections);
        }
        if (!full && ready > 0 && (fds[1].revents & POLLIN))
            return true;
    }
}

static void *accept_loop(void *arg)
{
    wl_acceptor_t *acceptor = arg;
    while (wait_for_room(acceptor)) {
        struct sockaddr_storage addr;
        socklen_t addr_len = sizeof(addr);
        int fd = accept4(acceptor->listen_fd, (struct sockaddr *)&addr, &addr_len,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            /* libmicrohttpd closes the socket itself when it refuses it (per-address limit). */
            atomic_fetch_add(&acceptor->open, 1);
            if (MHD_add_connection(acceptor->daemon, fd, (struct sockaddr *)&addr, addr_len) !=
                MHD_YES)
                atomic_fetch_sub(&acceptor->open, 1);
        } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            /* Out of descriptors or memory: the backlog keeps the client until there is room. */
            struct pollfd wake = {.fd = acceptor->wake_fd, .events = POLLIN};
            (void)poll(&wake, 1, RETRY_PAUSE_MS);
        }
        /* Anything else (EAGAIN, ECONNABORTED, EINTR, ...) concerns one client only. */
    }
    return NULL;
}

int wl_acceptor_start(int listen_fd, struct MHD_Daemon *daemon, unsigned limit, wl_acceptor_t **out,
                      wl_error_t *err)
{
    *out = NULL;
    wl_acceptor_t *acceptor = calloc(1, sizeof(*acceptor));
    if (acceptor == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    /* Non-blocking: a connection that poll reported may be gone (reset) by the time of
     * accept, which must then not block the thread (and its stop) until the next one. */
    int flags = fcntl(listen_fd, F_GETFL);
    if (flags < 0 || fcntl(listen_fd, F_SETFL, flags | O_NONBLOCK) != 0) {
        free(acceptor);
        return wl_error_set(err, WL_EINTERNAL, "cannot make the listening socket non-blocking");
    }
    acceptor->listen_fd = listen_fd;
    acceptor->daemon = daemon;
    acceptor->limit = limit > 0 ? limit : 1;
    acceptor->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (acceptor->wake_fd < 0) {
        free(acceptor);
        return wl_error_set(err, WL_EINTERNAL, "cannot create an eventfd");
    }
    if (pthread_create(&acceptor->thread, NULL, accept_loop, acceptor) != 0) {
        close(acceptor->wake_fd);
        free(acceptor);
        return wl_error_set(err, WL_EINTERNAL, "cannot start the accepting thread");
    }
    acceptor->running = true;
    *out = acceptor;
    return 0;
}

static void wake(wl_acceptor_t *acceptor)
{
    uint64_t one = 1;
    if (write(acceptor->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        wl_log("error", "acceptor", "waking its thread: %s", strerror(errno));
}

void wl_acceptor_closed(wl_acceptor_t *acceptor)
{
    if (atomic_fetch_sub(&acceptor->open, 1) >= (int)acceptor->limit)
        wake(acceptor); /* it was full: accept again */
}

void wl_acceptor_stop(wl_acceptor_t *acceptor)
{
    if (acceptor == NULL || !acceptor->running)
        return;
    atomic_store(&acceptor->stopping, true);
    wake(acceptor);
    pthread_join(acceptor->thread, NULL);
    acceptor->running = false;
    close(acceptor->listen_fd);
    acceptor->listen_fd = -1;
}

void wl_acceptor_destroy(wl_acceptor_t *acceptor)
{
    if (acceptor == NULL)
        return;
    wl_acceptor_stop(acceptor);
    close(acceptor->wake_fd);
    free(acceptor);
}
