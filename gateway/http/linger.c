/* Lingering on connections answered before their body was read happens here. */
#include "http/linger.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "process/upkeep.h"

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
    wl_upkeep_chore_t *chore; /* the upkeep loop polls the connections */
    int count;
    lingering_t entries[LINGER_MAX];
};

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

static int prepare(struct pollfd *fds, int room, int64_t *due_ms, void *data)
{
    wl_linger_t *linger = data;
    pthread_mutex_lock(&linger->lock);
    int count = linger->count < room ? linger->count : room;
    for (int i = 0; i < count; i++) {
        const lingering_t *entry = &linger->entries[i];
        fds[i] = (struct pollfd){.fd = entry->fd, .events = POLLIN};
        int64_t ends = entry->until_ms < entry->idle_ms ? entry->until_ms : entry->idle_ms;
        if (*due_ms < 0 || ends < *due_ms)
            *due_ms = ends;
    }
    pthread_mutex_unlock(&linger->lock);
    return count;
}

static void run(const struct pollfd *fds, int count, int64_t now, void *data)
{
    wl_linger_t *linger = data;
    pthread_mutex_lock(&linger->lock);
    /* Entries only grow at the end between prepare and run: the first count are as polled. */
    for (int i = count - 1; i >= 0; i--) {
        lingering_t *entry = &linger->entries[i];
        bool going = (fds[i].revents == 0 || drain(entry, now)) && now < entry->until_ms &&
                     now < entry->idle_ms;
        if (going)
            continue;
        close(entry->fd);
        *entry = linger->entries[--linger->count];
    }
    pthread_mutex_unlock(&linger->lock);
}

int wl_linger_create(wl_linger_t **out, wl_error_t *err)
{
    wl_linger_t *linger = calloc(1, sizeof(*linger));
    if (linger == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    pthread_mutex_init(&linger->lock, NULL);
    wl_upkeep_hooks_t hooks = {.prepare = prepare, .run = run, .data = linger};
    int rc = wl_upkeep_add(&hooks, &linger->chore, err);
    if (rc != 0) {
        pthread_mutex_destroy(&linger->lock);
        free(linger);
        return rc;
    }
    *out = linger;
    return 0;
}

void wl_linger_destroy(wl_linger_t *linger)
{
    if (linger == NULL)
        return;
    wl_upkeep_remove(linger->chore);
    for (int i = 0; i < linger->count; i++)
        close(linger->entries[i].fd);
    pthread_mutex_destroy(&linger->lock);
    free(linger);
}

void wl_linger_add(wl_linger_t *linger, int fd)
{
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0)
        return;
    int64_t now = wl_upkeep_now_ms();
    pthread_mutex_lock(&linger->lock);
    if (linger->count == LINGER_MAX) {
        pthread_mutex_unlock(&linger->lock);
        close(copy);
        return;
    }
    linger->entries[linger->count++] =
        (lingering_t){copy, now + LINGER_TOTAL_MS, now + LINGER_IDLE_MS, 0};
    pthread_mutex_unlock(&linger->lock);
    wl_upkeep_wake(linger->chore);
}
