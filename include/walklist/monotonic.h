/*
 * Condition variables whose timed waits count on the monotonic clock: a deadline computed from
 * CLOCK_MONOTONIC does not move when the wall clock is set.
 */
#ifndef WALKLIST_MONOTONIC_H
#define WALKLIST_MONOTONIC_H

#include <pthread.h>

/** pthread_cond_init with CLOCK_MONOTONIC as the clock of pthread_cond_timedwait. */
int wl_cond_init_monotonic(pthread_cond_t *cond);

#endif
