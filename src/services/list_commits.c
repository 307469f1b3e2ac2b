/* Committing concurrently created walk lists together happens here. */
#include "services/list_commits.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

/* A request waiting for its list: on its own stack, queued in arrival order. */
typedef struct waiter {
    wl_list_insert_t *list;
    bool done;
    pthread_cond_t wake;
    struct waiter *next;
} waiter_t;

struct wl_list_commits {
    wl_pool_t *pool;
    int groups;
    pthread_mutex_t lock;
    int in_flight;   /* groups being committed */
    int waiting;     /* entries between head and tail */
    waiter_t *head;  /* not yet taken by a group */
    waiter_t **tail; /* where the next waiter goes */
    uint64_t commits, lists;
};

int wl_list_commits_create(wl_pool_t *pool, int groups, wl_list_commits_t **out, wl_error_t *err)
{
    *out = NULL;
    wl_list_commits_t *commits = calloc(1, sizeof(*commits));
    if (commits == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    if (pthread_mutex_init(&commits->lock, NULL) != 0) {
        free(commits);
        return wl_error_set(err, WL_EINTERNAL, "cannot create a lock");
    }
    commits->pool = pool;
    commits->groups = groups > 0 ? groups : 1;
    commits->tail = &commits->head;
    *out = commits;
    return 0;
}

void wl_list_commits_destroy(wl_list_commits_t *commits)
{
    if (commits == NULL)
        return;
    pthread_mutex_destroy(&commits->lock);
    free(commits);
}

/* Takes up to WL_LIST_BATCH_MAX waiters from the queue's head; the lock is held. */
static int take_group(wl_list_commits_t *commits, waiter_t **group)
{
    int count = 0;
    while (commits->head != NULL && count < WL_LIST_BATCH_MAX) {
        group[count++] = commits->head;
        commits->head = commits->head->next;
        commits->waiting--;
    }
    if (commits->head == NULL)
        commits->tail = &commits->head;
    return count;
}

static void commit_group(wl_list_commits_t *commits, waiter_t **group, int count)
{
    wl_list_insert_t *lists[WL_LIST_BATCH_MAX];
    for (int i = 0; i < count; i++)
        lists[i] = group[i]->list;
    PGconn *conn = NULL;
    if (wl_pool_acquire(commits->pool, &conn, lists[0]->err) != 0) {
        for (int i = 0; i < count; i++)
            lists[i]->rc =
                wl_error_set(lists[i]->err, lists[0]->err->code, "%s", lists[0]->err->message);
        return;
    }
    wl_lists_insert_batch(conn, lists, count);
    wl_pool_release(commits->pool, conn);
}

int wl_list_commits_insert(wl_list_commits_t *commits, wl_list_insert_t *list)
{
    waiter_t self = {.list = list};
    if (pthread_cond_init(&self.wake, NULL) != 0)
        return wl_error_set(list->err, WL_EINTERNAL, "cannot create a condition variable");
    pthread_mutex_lock(&commits->lock);
    *commits->tail = &self;
    commits->tail = &self.next;
    commits->waiting++;
    while (!self.done) {
        /* Lead when a commit slot is free and this request is the oldest one waiting; the
         * group is whatever queued up meanwhile (at least this list). */
        if (commits->in_flight < commits->groups && commits->head == &self) {
            waiter_t *group[WL_LIST_BATCH_MAX];
            int count = take_group(commits, group);
            commits->in_flight++;
            if (commits->head != NULL && commits->in_flight < commits->groups)
                pthread_cond_signal(&commits->head->wake); /* more than one group waits */
            pthread_mutex_unlock(&commits->lock);
            commit_group(commits, group, count);
            pthread_mutex_lock(&commits->lock);
            commits->in_flight--;
            commits->commits++;
            commits->lists += (uint64_t)count;
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
    return list->rc;
}

void wl_list_commits_stats(wl_list_commits_t *commits, wl_list_commits_stats_t *out)
{
    pthread_mutex_lock(&commits->lock);
    out->commits = commits->commits;
    out->lists = commits->lists;
    out->waiting = commits->waiting;
    pthread_mutex_unlock(&commits->lock);
}
