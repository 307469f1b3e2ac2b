/*
 * Running the steps of requests that may wait for the database, on threads of their own, so
 * that libmicrohttpd's threads never wait for it: while PostgreSQL is slow or unreachable, a
 * probe (/healthz), a 304 answered from memory and every other connection of the same thread
 * are still served at once. The server suspends a connection, submits its next step here, and
 * the step resumes the connection when it is done (server.c). Jobs run in the order they were
 * submitted, as many at a time as there are threads.
 */
#ifndef WALKLIST_GATEWAY_OFFLOAD_H
#define WALKLIST_GATEWAY_OFFLOAD_H

#include <stdint.h>

#include "walklist/core.h"
#include "walklist/error.h"

typedef struct wl_offload wl_offload_t;

/* A step to run: its owner embeds it and keeps it alive until run returns. The core's job
 * (walklist/core.h), so that the core's waits run here too (wl_offload_run_elsewhere). */
typedef wl_job_t wl_offload_job_t;

int wl_offload_create(unsigned threads, wl_offload_t **out, wl_error_t *err) WL_CHECK_RESULT;

/** Queues job; it runs on one of the threads (after wl_offload_stop: on the caller's). */
void wl_offload_submit(wl_offload_t *offload, wl_offload_job_t *job);

/** wl_offload_submit in the shape of wl_completion_t.run_elsewhere (executor: the pool). */
void wl_offload_run_elsewhere(wl_job_t *job, void *executor);

/** Jobs handed to the threads since the pool was made: how often requests crossed threads. */
uint64_t wl_offload_submitted(wl_offload_t *offload);

/** Jobs submitted and not yet finished. */
int wl_offload_pending(wl_offload_t *offload);

/** Runs every job already submitted, then stops the threads. */
void wl_offload_stop(wl_offload_t *offload);

/** Stops (if not yet) and frees the pool. */
void wl_offload_destroy(wl_offload_t *offload);

#endif
