/* The upkeep loop (process/upkeep.h): chores' descriptors and deadlines on one thread, which
 * runs while there is a chore. Every wait polls for its condition with a deadline. */
#include "process/upkeep.h"

#include <dirent.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

#include "test.h"

typedef struct {
    int fd;                 /* polled for reading when >= 0 */
    _Atomic int64_t due_ms; /* -1: none */
    atomic_int runs, ready, due_runs;
} chore_state_t;

static int prepare(struct pollfd *fds, int room, int64_t *due_ms, void *data)
{
    chore_state_t *state = data;
    *due_ms = atomic_load(&state->due_ms);
    if (state->fd < 0 || room < 1)
        return 0;
    fds[0] = (struct pollfd){.fd = state->fd, .events = POLLIN};
    return 1;
}

static void run(const struct pollfd *fds, int count, int64_t now_ms, void *data)
{
    chore_state_t *state = data;
    atomic_fetch_add(&state->runs, 1);
    if (count == 1 && (fds[0].revents & POLLIN)) {
        char byte;
        if (read(state->fd, &byte, 1) == 1)
            atomic_fetch_add(&state->ready, 1);
    }
    int64_t due = atomic_load(&state->due_ms);
    if (due >= 0 && now_ms >= due) {
        atomic_store(&state->due_ms, -1); /* once */
        atomic_fetch_add(&state->due_runs, 1);
    }
}

static wl_upkeep_chore_t *add(chore_state_t *state)
{
    wl_upkeep_hooks_t hooks = {.prepare = prepare, .run = run, .data = state};
    wl_upkeep_chore_t *chore = NULL;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_upkeep_add(&hooks, &chore, &err), 0);
    return chore;
}

/* Polls until *counter reaches at_least, for 10 s at most. */
static bool reaches(atomic_int *counter, int at_least)
{
    return test_wait_for_count(counter, at_least, 10000);
}

static int threads(void)
{
    DIR *dir = opendir("/proc/self/task");
    int count = 0;
    for (struct dirent *e; dir != NULL && (e = readdir(dir)) != NULL;)
        count += e->d_name[0] != '.';
    if (dir != NULL)
        closedir(dir);
    return count;
}

static bool threads_are(void *count)
{
    return threads() == *(int *)count;
}

/* A deadline is kept, a descriptor is polled, and wl_upkeep_wake brings a new deadline in. */
static void test_deadlines_and_descriptors(void)
{
    int pipe_fds[2];
    CHECK_INT(pipe(pipe_fds), 0);
    chore_state_t timer = {.fd = -1, .due_ms = wl_upkeep_now_ms() + 50};
    chore_state_t reader = {.fd = pipe_fds[0], .due_ms = -1};
    wl_upkeep_chore_t *a = add(&timer), *b = add(&reader);
    CHECK(reaches(&timer.due_runs, 1));
    CHECK_INT(write(pipe_fds[1], "x", 1), 1);
    CHECK(reaches(&reader.ready, 1));
    /* The loop waits for nothing now (no deadline): a new one needs a wake-up. */
    atomic_store(&timer.due_ms, wl_upkeep_now_ms());
    wl_upkeep_wake(a);
    CHECK(reaches(&timer.due_runs, 2));
    wl_upkeep_remove(a);
    wl_upkeep_remove(b);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
}

/* The thread comes with the first chore and goes with the last; a removed chore runs no more. */
static void test_thread_follows_the_chores(void)
{
    /* This process has no other thread, once the last test's loop has left. */
    int before = 1;
    CHECK(test_wait_for(threads_are, &before, 10000));
    chore_state_t one = {.fd = -1, .due_ms = -1}, two = {.fd = -1, .due_ms = -1};
    wl_upkeep_chore_t *a = add(&one);
    CHECK_INT(threads(), before + 1);
    wl_upkeep_chore_t *b = add(&two);
    CHECK_INT(threads(), before + 1); /* shared */
    CHECK(reaches(&one.runs, 1));
    wl_upkeep_remove(a);
    int runs = atomic_load(&one.runs);
    atomic_store(&two.due_ms, wl_upkeep_now_ms());
    wl_upkeep_wake(b);
    CHECK(reaches(&two.due_runs, 1));
    CHECK_INT(atomic_load(&one.runs), runs);
    wl_upkeep_remove(b);
    CHECK(test_wait_for(threads_are, &before, 10000)); /* the thread has left */
    a = add(&one);                                     /* and starts again */
    CHECK_INT(threads(), before + 1);
    wl_upkeep_remove(a);
    CHECK(test_wait_for(threads_are, &before, 10000)); /* the thread has left */
}

int main(void)
{
    test_deadlines_and_descriptors();
    test_thread_follows_the_chores();
    return test_exit();
}
