/*
 * One webhook attempt over HTTP with libcurl: a signed POST of a delivery's body to its
 * endpoint, every address connected to checked first (wl_delivery_address_refusal) unless
 * private ones are allowed, redirects not followed, and how the attempt ended.
 */
#ifndef WALKLIST_DELIVERY_SENDER_H
#define WALKLIST_DELIVERY_SENDER_H

#include <curl/curl.h>
#include <stdatomic.h>
#include <stdbool.h>

/** What to send, and how; the strings stay the caller's. */
typedef struct {
    const char *url;
    const char *webhook_id;
    long long timestamp;   /* the webhook-timestamp header, seconds since the epoch */
    const char *signature; /* the webhook-signature header */
    const char *body;      /* JSON, NUL-terminated */
    int connect_timeout_ms, timeout_ms;
    bool allow_private;
    const atomic_bool *stopping; /* true: the attempt is given up */
} wl_send_t;

/** How an attempt ended. */
typedef struct {
    bool delivered; /* a 2xx answer */
    bool refused;   /* nothing sent: every address was refused */
    int status;     /* the answer's HTTP status, 0: none */
    char error[200];
} wl_sent_t;

/** Sends on curl, an easy handle kept between attempts (so that connections to an endpoint are
 * reused); reset first. */
void wl__sender_post(CURL *curl, const wl_send_t *send, wl_sent_t *sent);

#endif
