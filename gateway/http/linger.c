/* Lingering on connections answered before their body was read happens here. */
#include "http/linger.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LINGER_MAX      256
#define LINGER_BYTES    (1024 * 1024)
#define LINGER_IDLE_MS  2000
#define LINGER_TOTAL_MS 5000

typedef struct {
    int fd;
    int64_t until_ms; /* LINGER_TOTAL_MS after it began */
    int64_t idle_ms;  /* last data + LINGER_IDLE_MS */
    size_t dropped;
} lingering_t;

struct wl_linger {
    pthread_mutex_t lock;
    pthread_t thread;
    int wake[2]; /* a pipe: a connection was added, or stop */
    bool stop;
    int count;
    lingering_t entries[LINGER_MAX];
};

static int64_t clock_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* Reads and drops what is waiting on entry; false once the connection is done with. */
static bool drain(lingering_t *entry, int64_t now)
{
    char scratch[16384];
    for (;;) {
        ssize_t n = recv(entry->fd, scratch, sizeof(scratch), MSG_DONTWAIT);
        if (n > 0) {
            entry->dropped += (size_t)n;
            entry->idle_ms = now + LINGER_IDLE_MS;
            if (entry->dropped >= LINGER_BYTES)
                return false;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
}

static void *run(void *arg)
{
    wl_linger_t *linger = arg;
    struct pollfd fds[LINGER_MAX + 1];
    pthread_mutex_lock(&linger->lock);
    while (!linger->stop) {
        int count = linger->count;
        fds[0] = (struct pollfd){.fd = linger->wake[0], .events = POLLIN};
        for (int i = 0; i < count; i++)
            fds[i + 1] = (struct pollfd){.fd = linger->entries[i].fd, .events = POLLIN};
        pthread_mutex_unlock(&linger->lock);
        poll(fds, (nfds_t)count + 1, count > 0 ? 100 : -1);
        if (fds[0].revents & POLLIN) {
            char buf[64];
            while (read(linger->wake[0], buf, sizeof(buf)) > 0)
                ;
        }
        int64_t now = clock_ms();
        pthread_mutex_lock(&linger->lock);
        /* Entries only grow at the end while the lock is away: the first count are as polled. */
        for (int i = count - 1; i >= 0; i--) {
            lingering_t *entry = &linger->entries[i];
            bool going = (fds[i + 1].revents == 0 || drain(entry, now)) && now < entry->until_ms &&
                         now < entry->idle_ms;
            if (going)
                continue;
            close(entry->fd);
            *entry = linger->entries[--linger->count];
        }
    }
    for (int i = 0; i < linger->count; i++)
        close(linger->entries[i].fd);
    linger->count = 0;
    pthread_mutex_unlock(&linger->lock);
    return NULL;
}

int wl_linger_create(wl_linger_t **out, wl_error_t *err)
{
    wl_linger_t *linger = calloc(1, sizeof(*linger));
    if (linger == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    if (pipe2(linger->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        free(linger);
        return wl_error_set(err, WL_EINTERNAL, "cannot create a pipe");
    }
    pthread_mutex_init(&linger->lock, NULL);
    if (pthread_create(&linger->thread, NULL, run, linger) != 0) {
        close(linger->wake[0]);
        close(linger->wake[1]);
        pthread_mutex_destroy(&linger->lock);
        free(linger);
        return wl_error_set(err, WL_EINTERNAL, "cannot start the lingering-close thread");
    }
    *out = linger;
    return 0;
}

void wl_linger_destroy(wl_linger_t *linger)
{
    if (linger == NULL)
        return;
    pthread_mutex_lock(&linger->lock);
    linger->stop = true;
    pthread_mutex_unlock(&linger->lock);
    (void)!write(linger->wake[1], "x", 1);
    pthread_join(linger->thread, NULL);
    close(linger->wake[0]);
    close(linger->wake[1]);
    pthread_mutex_destroy(&linger->lock);
    free(linger);
}

void wl_linger_add(wl_linger_t *linger, int fd)
{
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0)
        return;
    int64_t now = clock_ms();
    pthread_mutex_lock(&linger->lock);
    if (linger->stop || linger->count == LINGER_MAX) {
        pthread_mutex_unlock(&linger->lock);
        close(copy);
        return;
    }
    linger->entries[linger->count++] =
        (lingering_t){copy, now + LINGER_TOTAL_MS, now + LINGER_IDLE_MS, 0};
    pthread_mutex_unlock(&linger->lock);
    (void)!write(linger->wake[1], "x", 1);
}
