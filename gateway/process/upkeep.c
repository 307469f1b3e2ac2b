/* Running the process's upkeep chores on one thread happens here. */
#include "process/upkeep.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MAX_FDS 1024 /* every chore's descriptors in one poll, the wake pipe's included */

typedef struct wl_upkeep wl_upkeep_t;

struct wl_upkeep_chore {
    wl_upkeep_hooks_t hooks;
    wl_upkeep_t *loop;
    int first, count; /* its descriptors in the poll it last prepared; count -1: none yet */
    wl_upkeep_chore_t *next;
};

struct wl_upkeep {
    pthread_mutex_t lock; /* the chores; held while any chore's function runs */
    wl_upkeep_chore_t *chores;
    bool stop;
    int wake[2]; /* a pipe: a byte has the loop prepare again (or stop) */
    pthread_t thread;
    struct pollfd fds[MAX_FDS]; /* the loop thread's alone */
};

/* Starting and stopping the loop, and adding and removing its chores, one at a time. */
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static wl_upkeep_t *shared; /* the process's loop; NULL while there is no chore */

int64_t wl_upkeep_now_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* Every chore's descriptors into loop->fds after the wake pipe (lock held); returns how many
 * descriptors in all, with *due_ms the earliest deadline (-1: none). */
static int prepare_all(wl_upkeep_t *loop, int64_t *due_ms)
{
    int used = 1;
    loop->fds[0] = (struct pollfd){.fd = loop->wake[0], .events = POLLIN};
    *due_ms = -1;
    for (wl_upkeep_chore_t *chore = loop->chores; chore != NULL; chore = chore->next) {
        int64_t chore_due = -1;
        chore->first = used;
        chore->count =
            chore->hooks.prepare(loop->fds + used, MAX_FDS - used, &chore_due, chore->hooks.data);
        used += chore->count;
        if (chore_due >= 0 && (*due_ms < 0 || chore_due < *due_ms))
            *due_ms = chore_due;
    }
    return used;
}

static void *loop_main(void *arg)
{
    wl_upkeep_t *loop = arg;
    pthread_mutex_lock(&loop->lock);
    while (!loop->stop) {
        int64_t due_ms;
        int used = prepare_all(loop, &due_ms);
        pthread_mutex_unlock(&loop->lock);
        int timeout = -1;
        if (due_ms >= 0) {
            int64_t wait_ms = due_ms - wl_upkeep_now_ms();
            timeout = wait_ms < 0 ? 0 : wait_ms > INT_MAX ? INT_MAX : (int)wait_ms;
        }
        (void)poll(loop->fds, (nfds_t)used, timeout);
        if (loop->fds[0].revents & POLLIN) {
            char bytes[64];
            while (read(loop->wake[0], bytes, sizeof(bytes)) > 0)
                ;
        }
        int64_t now = wl_upkeep_now_ms();
        pthread_mutex_lock(&loop->lock);
        /* A chore added during the poll has prepared nothing: it runs after the next one. */
        for (wl_upkeep_chore_t *chore = loop->chores; chore != NULL; chore = chore->next) {
            if (chore->count >= 0)
                chore->hooks.run(loop->fds + chore->first, chore->count, now, chore->hooks.data);
        }
    }
    pthread_mutex_unlock(&loop->lock);
    return NULL;
}

static void loop_free(wl_upkeep_t *loop)
{
    close(loop->wake[0]);
    close(loop->wake[1]);
    pthread_mutex_destroy(&loop->lock);
    free(loop);
}

static int loop_start(wl_upkeep_t **out, wl_error_t *err)
{
    wl_upkeep_t *loop = calloc(1, sizeof(*loop));
    if (loop == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    if (pipe2(loop->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
        free(loop);
        return wl_error_set(err, WL_EINTERNAL, "upkeep: cannot create a pipe");
    }
    pthread_mutex_init(&loop->lock, NULL);
    if (pthread_create(&loop->thread, NULL, loop_main, loop) != 0) {
        loop_free(loop);
        return wl_error_set(err, WL_EINTERNAL, "cannot start the upkeep thread");
    }
    *out = loop;
    return 0;
}

int wl_upkeep_add(const wl_upkeep_hooks_t *hooks, wl_upkeep_chore_t **out, wl_error_t *err)
{
    *out = NULL;
    wl_upkeep_chore_t *chore = calloc(1, sizeof(*chore));
    if (chore == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    chore->hooks = *hooks;
    chore->count = -1;
    pthread_mutex_lock(&shared_lock);
    int rc = shared == NULL ? loop_start(&shared, err) : 0;
    if (rc == 0) {
        chore->loop = shared;
        pthread_mutex_lock(&shared->lock);
        chore->next = shared->chores;
        shared->chores = chore;
        pthread_mutex_unlock(&shared->lock);
    }
    pthread_mutex_unlock(&shared_lock);
    if (rc != 0) {
        free(chore);
        return rc;
    }
    wl_upkeep_wake(chore);
    *out = chore;
    return 0;
}

void wl_upkeep_remove(wl_upkeep_chore_t *chore)
{
    if (chore == NULL)
        return;
    wl_upkeep_t *loop = chore->loop;
    pthread_mutex_lock(&shared_lock);
    pthread_mutex_lock(&loop->lock);
    wl_upkeep_chore_t **link = &loop->chores;
    while (*link != chore)
        link = &(*link)->next;
    *link = chore->next;
    bool last = loop->chores == NULL;
    loop->stop = last;
    pthread_mutex_unlock(&loop->lock);
    if (last) {
        wl_upkeep_wake(chore);
        pthread_join(loop->thread, NULL);
        loop_free(loop);
        shared = NULL;
    }
    pthread_mutex_unlock(&shared_lock);
    free(chore);
}

void wl_upkeep_wake(wl_upkeep_chore_t *chore)
{
    (void)!write(chore->loop->wake[1], "x", 1);
}
