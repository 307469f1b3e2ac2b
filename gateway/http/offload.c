/* Running request steps that may wait for the database, off libmicrohttpd's threads, happens
 * here. */
#include "http/offload.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#define OFFLOAD_THREADS_MAX 1024

struct wl_offload {
    pthread_mutex_t lock;
    pthread_cond_t work; /* a job was queued, or stop */
    wl_offload_job_t *head;
    wl_offload_job_t **tail;
    int pending;        /* queued or running */
    uint64_t submitted; /* jobs handed over since the pool was made */
    bool stop;
    bool stopped; /* the threads are joined: jobs run where they are submitted */
    unsigned threads;
    pthread_t workers[];
};

static void *worker(void *arg)
{
    wl_offload_t *offload = arg;
    pthread_mutex_lock(&offload->lock);
    for (;;) {
        while (offload->head == NULL && !offload->stop)
            pthread_cond_wait(&offload->work, &offload->lock);
        wl_offload_job_t *job = offload->head;
        if (job == NULL)
            break; /* stopping, and nothing is left */
        offload->head = job->next;
        if (offload->head == NULL)
            offload->tail = &offload->head;
        pthread_mutex_unlock(&offload->lock);
        job->run(job); /* the job may be gone once run returns */
        pthread_mutex_lock(&offload->lock);
        offload->pending--;
    }
    pthread_mutex_unlock(&offload->lock);
    return NULL;
}

int wl_offload_create(unsigned threads, wl_offload_t **out, wl_error_t *err)
{
    *out = NULL;
    if (threads == 0 || threads > OFFLOAD_THREADS_MAX)
        return wl_error_set(err, WL_EINVAL, "request threads must be 1 to %d, got %u",
                            OFFLOAD_THREADS_MAX, threads);
    wl_offload_t *offload = calloc(1, sizeof(*offload) + threads * sizeof(pthread_t));
    if (offload == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    pthread_mutex_init(&offload->lock, NULL);
    pthread_cond_init(&offload->work, NULL);
    offload->tail = &offload->head;
    for (unsigned i = 0; i < threads; i++) {
        if (pthread_create(&offload->workers[i], NULL, worker, offload) != 0) {
            wl_offload_destroy(offload);
            return wl_error_set(err, WL_EINTERNAL, "cannot start a request thread");
        }
        offload->threads++;
    }
    *out = offload;
    return 0;
}

void wl_offload_submit(wl_offload_t *offload, wl_offload_job_t *job)
{
    job->next = NULL;
    pthread_mutex_lock(&offload->lock);
    if (offload->stopped) {
        pthread_mutex_unlock(&offload->lock);
        job->run(job);
        return;
    }
    *offload->tail = job;
    offload->tail = &job->next;
    offload->pending++;
    offload->submitted++;
    pthread_cond_signal(&offload->work);
    pthread_mutex_unlock(&offload->lock);
}

void wl_offload_run_elsewhere(wl_job_t *job, void *executor)
{
    wl_offload_submit(executor, job);
}

uint64_t wl_offload_submitted(wl_offload_t *offload)
{
    pthread_mutex_lock(&offload->lock);
    uint64_t submitted = offload->submitted;
    pthread_mutex_unlock(&offload->lock);
    return submitted;
}

int wl_offload_pending(wl_offload_t *offload)
{
    pthread_mutex_lock(&offload->lock);
    int pending = offload->pending;
    pthread_mutex_unlock(&offload->lock);
    return pending;
}

void wl_offload_stop(wl_offload_t *offload)
{
    pthread_mutex_lock(&offload->lock);
    bool joined = offload->stopped;
    offload->stop = true;
    pthread_cond_broadcast(&offload->work);
    pthread_mutex_unlock(&offload->lock);
    if (joined)
        return;
    for (unsigned i = 0; i < offload->threads; i++)
        pthread_join(offload->workers[i], NULL);
    pthread_mutex_lock(&offload->lock);
    offload->stopped = true;
    pthread_mutex_unlock(&offload->lock);
}

void wl_offload_destroy(wl_offload_t *offload)
{
    if (offload == NULL)
        return;
    wl_offload_stop(offload);
    pthread_cond_destroy(&offload->work);
    pthread_mutex_destroy(&offload->lock);
    free(offload);
}
