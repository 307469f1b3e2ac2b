/* Committing concurrent admissions together happens here. */
#include "services/admissions.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

/* A request waiting for its admission: on its own stack, queued in arrival order. */
typedef struct waiter {
    wl_admit_t *request;
    bool done;
    pthread_cond_t wake;
    struct waiter *next;
} waiter_t;

struct wl_admissions {
    wl_pool_t *pool;
    int groups;
    pthread_mutex_t lock;
    int in_flight;   /* groups being committed */
    int waiting;     /* entries between head and tail */
    waiter_t *head;  /* not yet taken by a group */
    waiter_t **tail; /* where the next waiter goes */
    uint64_t commits, requests;
};

int wl_admissions_create(wl_pool_t *pool, int groups, wl_admissions_t **out, wl_error_t *err)
{
    *out = NULL;
    wl_admissions_t *commits = calloc(1, sizeof(*commits));
    if (commits == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    if (pthread_mutex_init(&commits->lock, NULL) != 0) {
        free(commits);
        return wl_error_set(err, WL_EINTERNAL, "cannot create a lock");
    }
    commits->pool = pool;
    commits->groups = groups;
    commits->tail = &commits->head;
    *out = commits;
    return 0;
}

void wl_admissions_destroy(wl_admissions_t *commits)
{
    if (commits == NULL)
        return;
    pthread_mutex_destroy(&commits->lock);
    free(commits);
}

/* Takes up to WL_ADMIT_BATCH_MAX waiters from the queue's head; the lock is held. */
static int take_group(wl_admissions_t *commits, waiter_t **group)
{
    int count = 0;
    while (commits->head != NULL && count < WL_ADMIT_BATCH_MAX) {
        group[count++] = commits->head;
        commits->head = commits->head->next;
        commits->waiting--;
    }
    if (commits->head == NULL)
        commits->tail = &commits->head;
    return count;
}

static void commit_group(wl_admissions_t *commits, wl_admit_t *const *requests, int count)
{
    PGconn *conn = NULL;
    if (wl_pool_acquire(commits->pool, &conn, requests[0]->err) != 0) {
        for (int i = 0; i < count; i++)
            requests[i]->rc = wl_error_set(requests[i]->err, requests[0]->err->code, "%s",
                                           requests[0]->err->message);
        return;
    }
    wl_admit_batch(conn, requests, count);
    wl_pool_release(commits->pool, conn);
}

/* Without grouping: the request alone, counted as a group of one. */
static void commit_group_alone(wl_admissions_t *commits, wl_admit_t *request)
{
    commit_group(commits, &request, 1);
    pthread_mutex_lock(&commits->lock);
    commits->commits++;
    commits->requests++;
    pthread_mutex_unlock(&commits->lock);
}

int wl_admissions_run(wl_admissions_t *commits, wl_admit_t *request)
{
    if (commits->groups < 1) {
        commit_group_alone(commits, request);
        return request->rc;
    }
    waiter_t self = {.request = request};
    if (pthread_cond_init(&self.wake, NULL) != 0)
        return wl_error_set(request->err, WL_EINTERNAL, "cannot create a condition variable");
    pthread_mutex_lock(&commits->lock);
    *commits->tail = &self;
    commits->tail = &self.next;
    commits->waiting++;
    while (!self.done) {
        /* Lead when a commit slot is free and this request is the oldest one waiting; the
         * group is whatever queued up meanwhile (at least this request). */
        if (commits->in_flight < commits->groups && commits->head == &self) {
            waiter_t *group[WL_ADMIT_BATCH_MAX];
            int count = take_group(commits, group);
            commits->in_flight++;
            if (commits->head != NULL && commits->in_flight < commits->groups)
                pthread_cond_signal(&commits->head->wake); /* more than one group waits */
            pthread_mutex_unlock(&commits->lock);
            wl_admit_t *requests[WL_ADMIT_BATCH_MAX];
            for (int i = 0; i < count; i++)
                requests[i] = group[i]->request;
            commit_group(commits, requests, count);
            pthread_mutex_lock(&commits->lock);
            commits->in_flight--;
            commits->commits++;
            commits->requests += (uint64_t)count;
            for (int i = 0; i < count; i++) {
                group[i]->done = true;
                if (group[i] != &self)
                    pthread_cond_signal(&group[i]->wake);
            }
            if (commits->head != NULL)
                pthread_cond_signal(&commits->head->wake); /* the next group's leader */
            break;
        }
        pthread_cond_wait(&self.wake, &commits->lock);
    }
    pthread_mutex_unlock(&commits->lock);
    pthread_cond_destroy(&self.wake);
    return request->rc;
}

void wl_admissions_stats(wl_admissions_t *commits, wl_admissions_stats_t *out)
{
    pthread_mutex_lock(&commits->lock);
    out->commits = commits->commits;
    out->requests = commits->requests;
    out->waiting = commits->waiting;
    pthread_mutex_unlock(&commits->lock);
}
