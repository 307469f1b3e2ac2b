/* Committing concurrent admissions together happens here. */
#include "services/admissions.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "services/admission_queue.h"
#include "store/db.h"
#include "store/keys.h"
#include "walklist/monotonic.h"

typedef wl_admission_waiter_t waiter_t;

/* A thread waiting for its admission (wl_admissions_run): on its own stack; its committer
 * posts wake exactly once, as done. */
typedef struct {
    waiter_t base; /* first: done finds the sleeper from it */
    sem_t wake;
} sleeper_t;

struct wl_admissions {
    wl_pool_t *pool;
    int groups;
    int window_ms;
    pthread_mutex_t lock;
    pthread_cond_t work; /* a request was queued while a committer was idle, a lookup of
                          * prefixes answered, or stop */
    int idle;            /* committers waiting for work */
    bool stop;
    wl_admission_queue_t queue; /* not yet taken by a group */
    wl_placement_t placement;   /* place NULL: one server, one placement */
    int64_t placement_refreshed_ms;
    bool placing; /* a committer is refreshing the placement or looking prefixes up */
    char prefixes[WL_ADMIT_BATCH_MAX][WL_KEY_PREFIX_LEN + 1]; /* the one placing's */
    uint64_t commits, requests, on_nodes;
    int threads;
    pthread_t committers[WL_ADMIT_GROUPS_MAX];
};

/* Whether requests are placed on more than one node now. */
static bool distributed(const wl_admissions_t *commits)
{
    const wl_placement_t *placement = &commits->placement;
    return placement->place != NULL && placement->distributed(placement->data);
}

/* Below this much of its budget left a request is not sent: no statement ends that soon. */
#define MIN_STATEMENT_MS 100

/* The requests of the group whose budget leaves room for a statement, into run; the others
 * are answered WL_ETIMEDOUT at once. Returns how many run, and the latest silence they all
 * allow in *silence_ms (at most default_ms). */
static int still_due(wl_admit_t *const *requests, int count, int default_ms, wl_admit_t **run,
                     int *silence_ms)
{
    int64_t now = wl_db_clock_ms();
    int64_t allowed = default_ms;
    int kept = 0;
    for (int i = 0; i < count; i++) {
        int64_t left = requests[i]->deadline_ms != 0 ? requests[i]->deadline_ms - now : default_ms;
        if (left < MIN_STATEMENT_MS) {
            requests[i]->rc =
                wl_error_set(requests[i]->err, WL_ETIMEDOUT, "the database did not answer in time");
            continue;
        }
        allowed = left < allowed ? left : allowed;
        run[kept++] = requests[i];
    }
    *silence_ms = (int)allowed;
    return kept;
}

/* node: the pool of the node holding the group's rows, or NULL (the pool's server); node_org:
 * one of the group's organizations, by which the coordinator finds that node (0: none). Whether
 * the group went to that node. */
static bool commit_group(wl_admissions_t *commits, wl_pool_t *node, int64_t node_org,
                         wl_admit_t *const *requests, int count)
{
    if (count < 1) /* a queue with a head gives at least one; said for the optimizer */
        return false;
    PGconn *conn = NULL;
    wl_pool_t *pool = node;
    if (node == NULL || wl_pool_acquire(node, &conn, requests[0]->err) != 0) {
        /* A node that cannot be reached directly (down, or refusing this process) leaves the
         * group to the coordinator, which answers for the node as before there were node
         * pools. */
        pool = commits->pool;
        wl_error_init(requests[0]->err);
        if (wl_pool_acquire(pool, &conn, requests[0]->err) != 0) {
            for (int i = 0; i < count; i++)
                requests[i]->rc = wl_error_set(requests[i]->err, requests[0]->err->code, "%s",
                                               requests[0]->err->message);
            return false;
        }
    }
    /* On the node's own connection the group calls wl_admit there: wl_admit_at only carries
     * the call from the coordinator to the node, and on the node itself Citus plans that call
     * again for every group and runs a second PL/pgSQL frame around it (4-9% of the workers'
     * CPU per request, BENCHMARKS.md). */
    for (int i = 0; i < count; i++)
        requests[i]->node_org = pool == node ? 0 : node_org;
    /* An admission is short by design: a server silent for 4/5 of the request budget is given
     * up on (503) rather than waited for up to its statement timeout, and a request that waited
     * for a group (behind one the server is silent on) is given only what is left of its
     * budget, so that every request gets its answer within the budget. Row-lock waits end
     * before that (lock_timeout, 7/10 of it). */
    wl_admit_t *run[WL_ADMIT_BATCH_MAX];
    int silence_ms = 0;
    int kept =
        still_due(requests, count, wl_pool_timeout_ms(commits->pool) * 4 / 5, run, &silence_ms);
    if (kept > 0) {
        int previous = wl_db_set_silence_limit(conn, silence_ms);
        wl_admit_batch(conn, commits->window_ms, run, kept);
        wl_db_set_silence_limit(conn, previous);
    }
    wl_pool_release(pool, conn);
    return pool == node;
}

int wl_admissions_budget_ms(const wl_admissions_t *commits)
{
    return wl_pool_timeout_ms(commits->pool) * 4 / 5;
}

/* A request's budget starts when it is queued. */
static void set_deadline(wl_admissions_t *commits, wl_admit_t *request)
{
    if (request->deadline_ms == 0)
        request->deadline_ms = wl_db_clock_ms() + wl_admissions_budget_ms(commits);
}

/* Under the lock: whether a committer should bring the placement up to date, or look up where
 * the oldest waiter's key places it, before taking the next group. */
static bool placement_due(const wl_admissions_t *commits)
{
    if (commits->placement.place == NULL || commits->placing)
        return false;
    return wl_db_clock_ms() - commits->placement_refreshed_ms >= commits->placement.refresh_ms ||
           wl_admission_queue_head_unplaced(&commits->queue);
}

/* Under the lock, which it drops meanwhile: refreshes the placement when due, and places the
 * waiters of unknown keys by the organizations of their prefixes, in one statement. */
static void prepare_placement(wl_admissions_t *commits)
{
    const wl_placement_t *placement = &commits->placement;
    commits->placing = true;
    int64_t now = wl_db_clock_ms();
    bool refresh = now - commits->placement_refreshed_ms >= placement->refresh_ms;
    if (refresh)
        commits->placement_refreshed_ms = now;
    size_t count =
        wl_admission_queue_unplaced(&commits->queue, commits->prefixes, WL_ADMIT_BATCH_MAX);
    pthread_mutex_unlock(&commits->lock);

    wl_key_of_prefix_t keys[WL_ADMIT_BATCH_MAX];
    bool found = false;
    PGconn *conn = NULL;
    wl_error_t err;
    wl_error_init(&err);
    if (wl_pool_acquire(commits->pool, &conn, &err) == 0) {
        if (refresh)
            placement->refresh(conn, placement->data);
        found = count > 0 && wl_keys_of_prefixes(conn, commits->prefixes, count, keys, &err) == 0;
        wl_pool_release(commits->pool, conn);
    }

    pthread_mutex_lock(&commits->lock);
    /* Only waiters still queued are placed: the others went in a group meanwhile. */
    if (found)
        wl_admission_queue_place(&commits->queue, commits->prefixes, keys, count, placement);
    commits->placing = false;
    /* Committers that found only waiters of keys being placed take their groups now. */
    pthread_cond_broadcast(&commits->work);
}

/* Under the lock: waits for work to be signalled, or until until_ms (wl_db_clock_ms; 0: no
 * limit). */
static void wait_for_work(wl_admissions_t *commits, int64_t until_ms)
{
    if (until_ms == 0) {
        pthread_cond_wait(&commits->work, &commits->lock);
        return;
    }
    struct timespec until = {.tv_sec = (time_t)(until_ms / 1000),
                             .tv_nsec = (long)(until_ms % 1000) * 1000000L};
    pthread_cond_timedwait(&commits->work, &commits->lock, &until);
}

/* A committer: takes whatever queued up meanwhile (at least one request), commits it as one
 * group, answers every request of it, and goes again; at stop, once the queue is empty. */
static void *committer(void *arg)
{
    wl_admissions_t *commits = arg;
    pthread_mutex_lock(&commits->lock);
    for (;;) {
        while (commits->queue.head == NULL && !commits->stop) {
            commits->idle++;
            pthread_cond_wait(&commits->work, &commits->lock);
            commits->idle--;
        }
        if (commits->queue.head == NULL)
            break;
        if (placement_due(commits)) {
            prepare_placement(commits); /* unlocks meanwhile: the queue may have changed */
            continue;
        }
        waiter_t *group[WL_ADMIT_BATCH_MAX];
        int64_t now_ms = wl_db_clock_ms();
        int count = wl_admission_queue_take(&commits->queue, group, WL_ADMIT_BATCH_MAX,
                                            commits->placing, now_ms);
        if (count == 0) {
            /* Every waiter's key is being placed by another committer, or its placement waits
             * for more waiters, a group in flight to land or its hold to end: wait for any. */
            commits->idle++;
            wait_for_work(commits, wl_admission_queue_hold_ends_ms(&commits->queue, now_ms));
            commits->idle--;
            continue;
        }
        pthread_mutex_unlock(&commits->lock);
        /* A group of one node runs on that node, found by one of its organizations. */
        int64_t node_org = group[0]->placement != WL_PLACEMENT_ALONE && distributed(commits)
                               ? group[0]->placement_org
                               : 0;
        const wl_placement_t *placement = &commits->placement;
        wl_pool_t *node = node_org != 0 && placement->pool_of != NULL
                              ? placement->pool_of(group[0]->placement, placement->data)
                              : NULL;
        wl_admit_t *requests[WL_ADMIT_BATCH_MAX];
        for (int i = 0; i < count; i++)
            requests[i] = group[i]->request;
        int64_t group_placement = group[0]->placement;
        bool on_node = commit_group(commits, node, node_org, requests, count);
        pthread_mutex_lock(&commits->lock);
        commits->commits++;
        commits->on_nodes += on_node;
        commits->requests += (uint64_t)count;
        wl_admission_queue_landed(&commits->queue, group_placement, count, now_ms);
        /* Committers waiting for this group to land (their placement held back) go now; at
         * stop, the ones waiting for it go on to see the queue empty. */
        if (commits->idle > 0 && (commits->queue.head != NULL || commits->stop))
            pthread_cond_broadcast(&commits->work);
        pthread_mutex_unlock(&commits->lock);
        for (int i = 0; i < count; i++)
            group[i]->done(group[i]); /* the waiter may be gone right after */
        pthread_mutex_lock(&commits->lock);
    }
    pthread_mutex_unlock(&commits->lock);
    return NULL;
}

int wl_admissions_create(wl_pool_t *pool, int groups, int window_ms, wl_admissions_t **out,
                         wl_error_t *err)
{
    *out = NULL;
    wl_admissions_t *commits = calloc(1, sizeof(*commits));
    if (commits == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    if (pthread_mutex_init(&commits->lock, NULL) != 0) {
        free(commits);
        return wl_error_set(err, WL_EINTERNAL, "cannot create a lock");
    }
    if (wl_cond_init_monotonic(&commits->work) != 0) {
        pthread_mutex_destroy(&commits->lock);
        free(commits);
        return wl_error_set(err, WL_EINTERNAL, "cannot create a condition variable");
    }
    commits->pool = pool;
    commits->window_ms = window_ms;
    commits->groups = groups < WL_ADMIT_GROUPS_MAX ? groups : WL_ADMIT_GROUPS_MAX;
    wl_admission_queue_init(&commits->queue);
    for (int i = 0; i < commits->groups; i++) {
        if (pthread_create(&commits->committers[i], NULL, committer, commits) != 0) {
            wl_admissions_destroy(commits);
            return wl_error_set(err, WL_EINTERNAL, "cannot start a committer thread");
        }
        commits->threads++;
    }
    *out = commits;
    return 0;
}

void wl_admissions_destroy(wl_admissions_t *commits)
{
    if (commits == NULL)
        return;
    pthread_mutex_lock(&commits->lock);
    commits->stop = true;
    pthread_cond_broadcast(&commits->work);
    pthread_mutex_unlock(&commits->lock);
    for (int i = 0; i < commits->threads; i++)
        pthread_join(commits->committers[i], NULL);
    pthread_cond_destroy(&commits->work);
    pthread_mutex_destroy(&commits->lock);
    free(commits);
}

static void count_alone(wl_admissions_t *commits)
{
    pthread_mutex_lock(&commits->lock);
    commits->commits++;
    commits->requests++;
    pthread_mutex_unlock(&commits->lock);
}

static int64_t placement_of(wl_admissions_t *commits, int64_t org_id)
{
    const wl_placement_t *placement = &commits->placement;
    if (placement->place == NULL || !placement->distributed(placement->data))
        return 0;
    return org_id == 0 ? WL_PLACEMENT_ALONE : placement->place(org_id, placement->data);
}

void wl_admissions_queue(wl_admissions_t *commits, waiter_t *waiter)
{
    set_deadline(commits, waiter->request);
    if (commits->groups < 1) {
        (void)commit_group(commits, NULL, 0, &waiter->request, 1);
        count_alone(commits);
        waiter->done(waiter);
        return;
    }
    waiter->placement = placement_of(commits, waiter->request->org_id);
    waiter->placement_asked = false;
    waiter->placement_org = waiter->request->org_id;
    pthread_mutex_lock(&commits->lock);
    wl_admission_queue_push(&commits->queue, waiter);
    if (commits->idle > 0)
        pthread_cond_signal(&commits->work);
    pthread_mutex_unlock(&commits->lock);
}

static void wake_sleeper(waiter_t *waiter)
{
    sem_post(&((sleeper_t *)waiter)->wake);
}

int wl_admissions_run(wl_admissions_t *commits, wl_admit_t *request)
{
    set_deadline(commits, request);
    if (commits->groups < 1) {
        (void)commit_group(commits, NULL, 0, &request, 1);
        count_alone(commits);
        return request->rc;
    }
    sleeper_t self = {.base = {.request = request, .done = wake_sleeper}};
    if (sem_init(&self.wake, 0, 0) != 0)
        return wl_error_set(request->err, WL_EINTERNAL, "cannot create a semaphore");
    wl_admissions_queue(commits, &self.base);
    while (sem_wait(&self.wake) != 0)
        ; /* EINTR */
    sem_destroy(&self.wake);
    return request->rc;
}

void wl_admissions_stats(wl_admissions_t *commits, wl_admissions_stats_t *out)
{
    pthread_mutex_lock(&commits->lock);
    out->commits = commits->commits;
    out->requests = commits->requests;
    out->on_nodes = commits->on_nodes;
    out->waiting = commits->queue.waiting;
    pthread_mutex_unlock(&commits->lock);
}

void wl_admissions_set_placement(wl_admissions_t *commits, const wl_placement_t *placement)
{
    pthread_mutex_lock(&commits->lock);
    commits->placement = *placement;
    commits->placement_refreshed_ms = 0;
    pthread_mutex_unlock(&commits->lock);
}
