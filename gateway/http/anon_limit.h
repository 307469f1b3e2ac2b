/*
 * The per-address limit for requests that carry no valid key (default 120 a
 * minute): it slows key guessing and never applies to a valid key. Kept in
 * the process: a sliding-window counter per address (current and previous
 * window, weighted), in a fixed table, so memory does not grow with the number
 * of addresses; addresses that share a slot share a limit (stricter, never looser).
 */
#ifndef WALKLIST_GATEWAY_ANON_LIMIT_H
#define WALKLIST_GATEWAY_ANON_LIMIT_H

#include <stdbool.h>
#include <sys/socket.h>

typedef struct wl_anon_limiter wl_anon_limiter_t;

/** limit requests per window_s seconds per address; NULL when out of memory. */
wl_anon_limiter_t *wl_anon_limiter_create(int limit, int window_s);
void wl_anon_limiter_destroy(wl_anon_limiter_t *limiter);

/**
 * Counts a request from addr and says whether it is within the limit; when
 * it is not, *retry_after_s says when one will be.
 */
bool wl_anon_limiter_allow(wl_anon_limiter_t *limiter, const struct sockaddr *addr,
                           int *retry_after_s);

/** Whether a request from addr would be within the limit now; counts nothing. */
bool wl_anon_limiter_would_allow(wl_anon_limiter_t *limiter, const struct sockaddr *addr);

#endif
