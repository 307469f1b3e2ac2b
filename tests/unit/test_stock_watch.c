/* The stock watch registry (stock_watch.h): who is woken, when, and with what to do. */
#include "export/stock_watch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

static atomic_int wakes;

static void wake(void *data)
{
    (void)data;
    atomic_fetch_add(&wakes, 1);
}

static bool woken_once(void *data)
{
    (void)data;
    return atomic_load(&wakes) >= 1;
}

/* What the watcher is to do, its heard time left in last_heard_ns. */
static int64_t last_heard_ns;

static unsigned take(wl_stock_watch_t *watch, wl_stock_watcher_t *watcher)
{
    return wl_stock_watch_take(watch, watcher, &last_heard_ns);
}

static bool stalled(void *watch_and_watcher)
{
    void **pair = watch_and_watcher;
    return take(pair[0], pair[1]) != 0;
}

static void test_changes_wake_their_organization_only(void)
{
    wl_stock_watch_t *watch = NULL;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_stock_watch_create(3600, 3600, &watch, &err), 0);
    wl_stock_watcher_t *a = wl_stock_watch_add(watch, 5), *b = wl_stock_watch_add(watch, 6);
    atomic_store(&wakes, 0);
    wl_stock_watch_park(watch, a, wake, NULL);
    CHECK_INT(atomic_load(&wakes), 0); /* nothing to do yet: parked */
    wl_stock_watch_changed(6, watch);  /* b is not parked: marked, not woken */
    CHECK_INT(atomic_load(&wakes), 0);
    wl_stock_watch_changed(5, watch);
    CHECK_INT(atomic_load(&wakes), 1);
    int64_t between_ns = wl_delta_share_now_ns();
    wl_stock_watch_changed(5, watch); /* woken already: once */
    CHECK_INT(atomic_load(&wakes), 1);
    int64_t after_ns = wl_delta_share_now_ns();
    CHECK_INT(take(watch, a), WL_STOCK_WATCH_CHANGED);
    /* When the last change was heard: a delta from a snapshot after it has both. */
    CHECK(last_heard_ns >= between_ns && last_heard_ns <= after_ns);
    CHECK_INT(take(watch, a), 0); /* taken */
    /* b's change waited for it: parking wakes it at once. */
    wl_stock_watch_park(watch, b, wake, NULL);
    CHECK_INT(atomic_load(&wakes), 2);
    CHECK_INT(take(watch, b), WL_STOCK_WATCH_CHANGED);
    /* 0: announcements may have been missed, every watcher reads. */
    wl_stock_watch_park(watch, a, wake, NULL);
    wl_stock_watch_park(watch, b, wake, NULL);
    wl_stock_watch_changed(0, watch);
    CHECK_INT(atomic_load(&wakes), 4);
    wl_stock_watch_remove(watch, a);
    wl_stock_watch_remove(watch, b);
    wl_stock_watch_destroy(watch);
}

static void count_wake(void *data)
{
    atomic_fetch_add((atomic_int *)data, 1);
}

enum { MANY_ORGS = 10000, MANY = 2 * MANY_ORGS };

/* More organizations than the registry has buckets (organizations share them), two watchers
 * each, and watchers removed from the middle of their bucket: a change still wakes exactly the
 * watchers of its organization. */
static void test_changes_find_their_watchers_among_many(void)
{
    static wl_stock_watcher_t *watchers[MANY];
    static atomic_int woken[MANY];
    wl_stock_watch_t *watch = NULL;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_stock_watch_create(3600, 3600, &watch, &err), 0);
    for (int i = 0; i < MANY; i++) {
        watchers[i] = wl_stock_watch_add(watch, 1 + i % MANY_ORGS);
        CHECK(watchers[i] != NULL);
        atomic_store(&woken[i], 0);
        wl_stock_watch_park(watch, watchers[i], count_wake, &woken[i]);
    }
    /* Every third watcher goes: some organizations keep one watcher, some none, some two. */
    for (int i = 0; i < MANY; i += 3) {
        wl_stock_watch_remove(watch, watchers[i]);
        watchers[i] = NULL;
    }
    for (int64_t org = 1; org <= MANY_ORGS; org += 7)
        wl_stock_watch_changed(org, watch);
    int wrong = 0;
    for (int i = 0; i < MANY; i++) {
        int64_t org = 1 + i % MANY_ORGS;
        int expected = watchers[i] != NULL && (org - 1) % 7 == 0 ? 1 : 0;
        wrong += atomic_load(&woken[i]) != expected;
    }
    CHECK_INT(wrong, 0);
    /* 0 still reaches every parked watcher. */
    wl_stock_watch_changed(0, watch);
    wrong = 0;
    for (int i = 0; i < MANY; i++)
        wrong += watchers[i] != NULL && atomic_load(&woken[i]) != 1;
    CHECK_INT(wrong, 0);
    for (int i = 0; i < MANY; i++)
        wl_stock_watch_remove(watch, watchers[i]);
    wl_stock_watch_destroy(watch);
}

static void test_heartbeat_and_stop(void)
{
    wl_stock_watch_t *watch = NULL;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_stock_watch_create(1, 3600, &watch, &err), 0);
    wl_stock_watcher_t *a = wl_stock_watch_add(watch, 5), *b = wl_stock_watch_add(watch, 5);
    atomic_store(&wakes, 0);
    wl_stock_watch_park(watch, a, wake, NULL);
    CHECK(test_wait_for(woken_once, NULL, 10000)); /* the timer, after the heartbeat interval */
    CHECK_INT(atomic_load(&wakes), 1);
    CHECK_INT(take(watch, a), WL_STOCK_WATCH_HEARTBEAT);
    wl_stock_watch_sent(watch, a); /* the heartbeat went: the interval starts again */
    CHECK_INT(take(watch, a), 0);
    wl_stock_watch_park(watch, a, wake, NULL);
    wl_stock_watch_stop(watch);
    CHECK_INT(atomic_load(&wakes), 2);
    CHECK((take(watch, a) & WL_STOCK_WATCH_STOPPING) != 0);
    wl_stock_watch_park(watch, b, wake, NULL); /* after the stop: at once */
    CHECK_INT(atomic_load(&wakes), 3);
    wl_stock_watch_remove(watch, a);
    wl_stock_watch_remove(watch, b);
    wl_stock_watch_destroy(watch);
}

/* Wakes on the test's own thread: those a call made at once, not the timer's. */
static pthread_t test_thread;
static atomic_int wakes_here;

static void wake_noting_thread(void *data)
{
    wake(data);
    if (pthread_equal(pthread_self(), test_thread))
        atomic_fetch_add(&wakes_here, 1);
}

/* A poller is woken by the timer's ticks and the stop, never by a change or as a heartbeat. */
static void test_poller(void)
{
    test_thread = pthread_self();
    atomic_store(&wakes_here, 0);
    wl_stock_watch_t *watch = NULL;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_stock_watch_create(1, 3600, &watch, &err), 0);
    wl_stock_watcher_t *poller = wl_stock_watch_add_poller(watch);
    CHECK(poller != NULL);
    atomic_store(&wakes, 0);
    wl_stock_watch_park(watch, poller, wake_noting_thread, NULL);
    wl_stock_watch_changed(5, watch); /* would wake it here, at once */
    CHECK_INT(atomic_load(&wakes_here), 0);
    CHECK(test_wait_for(woken_once, NULL, 10000)); /* a tick */
    CHECK_INT(take(watch, poller), 0);
    /* Past the heartbeat interval without a message: parking does not wake it at once. */
    sleep(2);
    atomic_store(&wakes, 0);
    wl_stock_watch_park(watch, poller, wake_noting_thread, NULL);
    CHECK_INT(atomic_load(&wakes_here), 0);
    CHECK(test_wait_for(woken_once, NULL, 10000)); /* the next tick */
    atomic_store(&wakes, 0);
    wl_stock_watch_stop(watch);
    CHECK_INT(atomic_load(&wakes), 0); /* not parked: it sees the stop when it next looks */
    CHECK_INT(take(watch, poller), WL_STOCK_WATCH_STOPPING);
    wl_stock_watch_park(watch, poller, wake_noting_thread, NULL); /* after the stop: at once */
    CHECK_INT(atomic_load(&wakes_here), 1);
    wl_stock_watch_remove(watch, poller);
    wl_stock_watch_destroy(watch);
}

static void test_stall(void)
{
    wl_stock_watch_t *watch = NULL;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_stock_watch_create(3600, 1, &watch, &err), 0);
    wl_stock_watcher_t *a = wl_stock_watch_add(watch, 5);
    wl_stock_watch_sent(watch, a); /* a message waits for its client, which takes none */
    void *pair[] = {watch, a};
    CHECK(test_wait_for(stalled, pair, 10000));
    CHECK_INT(take(watch, a), WL_STOCK_WATCH_STALLED);
    wl_stock_watch_remove(watch, a);
    wl_stock_watch_destroy(watch);
    CHECK(wl_stock_watch_create(0, 1, &watch, &err) == WL_EINVAL);
    CHECK(watch == NULL);
}

int main(void)
{
    test_changes_wake_their_organization_only();
    test_changes_find_their_watchers_among_many();
    test_heartbeat_and_stop();
    test_poller();
    test_stall();
    return test_exit();
}
