/* Webhook deliveries happen here: worker threads lease endpoints with pending deliveries from
 * the core's outbox, POST them signed, and record how each attempt ended. */
#include "walklist/delivery.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "delivery/sender.h"
#include "walklist/log.h"
#include "walklist/outbox.h"
#include "walklist/monotonic.h"
#include "walklist/random.h"

#define DUE_BATCH      8  /* endpoints looked at per round */
#define SESSION_MAX    50 /* deliveries to one endpoint per lease, then others get a turn */
#define PRUNE_EVERY_MS (3600 * 1000LL)

struct wl_delivery {
    wl_core_t *core;
    wl_delivery_config_t config;
    int64_t lease_ms;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* stop */
    atomic_bool stopping;
    struct worker *workers;
    int started;
};

typedef struct worker {
    wl_delivery_t *delivery;
    pthread_t thread;
    wl_outbox_t *outbox;
    CURL *curl; /* kept between attempts, so connections to an endpoint are reused */
    int64_t pruned_ms;
} worker_t;

static int64_t wall_ms(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

/* The delay before attempt number attempts + 1: retry_base_ms doubled per failed attempt, at
 * most retry_max_ms, drawn from its upper half (jitter, so that endpoints that failed together
 * are not retried together). */
static int64_t retry_delay_ms(const wl_delivery_config_t *config, int attempts)
{
    int64_t delay = config->retry_base_ms;
    for (int i = 1; i < attempts && delay < config->retry_max_ms; i++)
        delay *= 2;
    if (delay > config->retry_max_ms)
        delay = config->retry_max_ms;
    uint32_t draw = 0;
    if (wl_random_bytes(&draw, sizeof(draw)) != 0)
        draw = 0;
    return delay / 2 + (int64_t)(draw % (uint32_t)(delay / 2 + 1));
}

static void log_attempt(const char *level, const char *msg, const wl_outbox_endpoint_t *endpoint,
                        const char *id, int attempts, const wl_sent_t *sent)
{
    wl_log_line_t line;
    wl_log_line_begin(&line, level, msg);
    wl_log_line_str(&line, "endpoint", endpoint->id, strlen(endpoint->id));
    wl_log_line_str(&line, "webhookId", id, strlen(id));
    wl_log_line_int(&line, "attempts", attempts);
    if (sent->status > 0)
        wl_log_line_int(&line, "status", sent->status);
    if (sent->error[0] != '\0')
        wl_log_line_str(&line, "error", sent->error, strlen(sent->error));
    wl_log_line_end(&line);
}

/* Signs and sends one attempt. */
static void send_one(worker_t *w, const char *url, const wl_outbox_delivery_t *delivery,
                     wl_sent_t *sent)
{
    const wl_delivery_t *delivery_threads = w->delivery;
    long long timestamp = (long long)time(NULL);
    char signature[WL_OUTBOX_SIGNATURE_SIZE];
    wl_error_t sign_err;
    wl_error_init(&sign_err);
    if (wl_outbox_sign(w->outbox, delivery, timestamp, signature, &sign_err) != 0) {
        memset(sent, 0, sizeof(*sent));
        snprintf(sent->error, sizeof(sent->error), "cannot sign the delivery");
        return;
    }
    wl_send_t send = {
        .url = url,
        .webhook_id = delivery->webhook_id,
        .timestamp = timestamp,
        .signature = signature,
        .body = delivery->body,
        .connect_timeout_ms = delivery_threads->config.connect_timeout_ms,
        .timeout_ms = delivery_threads->config.timeout_ms,
        .allow_private = delivery_threads->config.allow_private,
        .stopping = &delivery_threads->stopping,
    };
    wl__sender_post(w->curl, &send, sent);
}

/* One attempt of the leased endpoint's oldest pending delivery: 1 delivered, 0 failed or none
 * due (*attempted false), < 0 when the outbox failed. */
static int attempt_next(worker_t *w, const wl_outbox_endpoint_t *endpoint, const char *url,
                        int64_t now, wl_arena_t *arena, bool *attempted, wl_error_t *err)
{
    wl_delivery_t *delivery_threads = w->delivery;
    wl_outbox_delivery_t delivery;
    *attempted = false;
    int rc = wl_outbox_next(w->outbox, now, arena, &delivery, err);
    if (rc <= 0)
        return rc;
    *attempted = true;
    wl_sent_t sent;
    send_one(w, url, &delivery, &sent);
    int64_t after = wall_ms();
    const wl_delivery_config_t *config = &delivery_threads->config;
    wl_outbox_outcome_t outcome = {
        .delivered = sent.delivered,
        .refused = sent.refused,
        .status = sent.status,
        .error = sent.delivered ? NULL : sent.error,
        .retry_ms = after + retry_delay_ms(config, delivery.attempts),
        .disable_ms = after - (int64_t)config->disable_after_s * 1000,
    };
    /* Cut short by the stop, not failed by the endpoint: nothing is held against it, and the
     * delivery is due at once for whichever process comes next (the attempt counted). */
    if (atomic_load(&delivery_threads->stopping) && !sent.delivered)
        return 0;
    bool disabled = false;
    rc = wl_outbox_record(w->outbox, &outcome, after, &disabled, err);
    if (rc != 0)
        return rc;
    if (!sent.delivered)
        log_attempt("warn", "webhook attempt failed", endpoint, delivery.webhook_id,
                    delivery.attempts, &sent);
    if (disabled)
        log_attempt("warn", "webhook endpoint disabled: failing for too long", endpoint,
                    delivery.webhook_id, delivery.attempts, &sent);
    return sent.delivered ? 1 : 0;
}

/* Delivers to one endpoint while it has work due and answers: 1 when an attempt was made, 0
 * when none (someone else has the endpoint, or nothing is due), < 0 when the outbox failed. */
static int serve_endpoint(worker_t *w, const wl_outbox_endpoint_t *endpoint, wl_error_t *err)
{
    wl_delivery_t *delivery_threads = w->delivery;
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    int attempted = 0, rc = 0;
    while (attempted < SESSION_MAX && !atomic_load(&delivery_threads->stopping)) {
        /* Taken, then renewed before each attempt: an attempt always has a whole lease. */
        int64_t now = wall_ms();
        const char *url = NULL;
        rc = wl_outbox_lease(w->outbox, endpoint, now, now + delivery_threads->lease_ms, &arena,
                             &url, err);
        if (rc <= 0)
            break;
        bool tried = false;
        rc = attempt_next(w, endpoint, url, now, &arena, &tried, err);
        attempted += tried;
        if (rc <= 0)
            break;
    }
    if (rc >= 0) {
        int released = wl_outbox_release(w->outbox, err);
        if (released != 0)
            rc = released; /* the lease runs out by itself */
    }
    wl_arena_dispose(&arena);
    return rc < 0 ? rc : attempted > 0;
}

/* One round: the endpoints with work due, each served in turn. */
static int run_once(worker_t *w, wl_error_t *err)
{
    int64_t now = wall_ms();
    if (now - w->pruned_ms >= PRUNE_EVERY_MS) {
        int rc = wl_outbox_prune(w->outbox, now, err);
        if (rc != 0)
            return rc;
        w->pruned_ms = now;
    }
    wl_outbox_endpoint_t due[DUE_BATCH];
    int count = 0, worked = 0;
    int rc = wl_outbox_due(w->outbox, now, due, DUE_BATCH, &count, err);
    for (int i = 0; rc == 0 && i < count && !atomic_load(&w->delivery->stopping); i++) {
        int served = serve_endpoint(w, &due[i], err);
        if (served < 0)
            rc = served;
        worked += served > 0;
    }
    return rc < 0 ? rc : worked;
}

static void pause_ms(wl_delivery_t *delivery_threads, int ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&delivery_threads->lock);
    if (!atomic_load(&delivery_threads->stopping))
        pthread_cond_timedwait(&delivery_threads->wake, &delivery_threads->lock, &until);
    pthread_mutex_unlock(&delivery_threads->lock);
}

static void *work(void *data)
{
    worker_t *w = data;
    wl_delivery_t *delivery_threads = w->delivery;
    while (!atomic_load(&delivery_threads->stopping)) {
        wl_error_t err;
        wl_error_init(&err);
        int worked = 0;
        if (wl_outbox_connect(w->outbox, &err) == 0) {
            worked = run_once(w, &err);
            if (worked < 0) {
                /* The outbox has dropped its connection: the next round opens another. */
                wl_log("warn", "webhook worker: database failed; reconnecting", "%s", err.message);
                worked = 0;
            }
        }
        if (worked == 0)
            pause_ms(delivery_threads, delivery_threads->config.poll_ms);
    }
    return NULL;
}

/* --- Starting and stopping ------------------------------------------------------------------ */

static int or_default(int value, int fallback)
{
    return value > 0 ? value : fallback;
}

int wl_delivery_start(wl_core_t *core, const wl_delivery_config_t *config, wl_delivery_t **out,
                      wl_error_t *err)
{
    *out = NULL;
    if (config->workers < 1)
        return wl_error_set(err, WL_EINVAL, "webhook delivery needs at least one worker");
    wl_delivery_t *delivery_threads = calloc(1, sizeof(*delivery_threads));
    if (delivery_threads == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    delivery_threads->core = core;
    delivery_threads->config = *config;
    wl_delivery_config_t *c = &delivery_threads->config;
    c->poll_ms = or_default(c->poll_ms, WL_DELIVERY_DEFAULT_POLL_MS);
    c->connect_timeout_ms =
        or_default(c->connect_timeout_ms, WL_DELIVERY_DEFAULT_CONNECT_TIMEOUT_MS);
    c->timeout_ms = or_default(c->timeout_ms, WL_DELIVERY_DEFAULT_TIMEOUT_MS);
    c->retry_base_ms = or_default(c->retry_base_ms, WL_DELIVERY_DEFAULT_RETRY_BASE_MS);
    c->retry_max_ms = or_default(c->retry_max_ms, WL_DELIVERY_DEFAULT_RETRY_MAX_MS);
    if (c->retry_max_ms < c->retry_base_ms)
        c->retry_max_ms = c->retry_base_ms;
    c->disable_after_s = or_default(c->disable_after_s, WL_DELIVERY_DEFAULT_DISABLE_AFTER_S);
    /* Long enough for a whole attempt and its bookkeeping; a process that dies mid-attempt
     * leaves the endpoint to others once it runs out. */
    delivery_threads->lease_ms = 2LL * c->timeout_ms + c->connect_timeout_ms + 2000;
    pthread_mutex_init(&delivery_threads->lock, NULL);
    wl_cond_init_monotonic(&delivery_threads->wake);
    int rc = 0;
    /* Not thread-safe, so here, before any thread of ours uses libcurl. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        rc = wl_error_set(err, WL_EINTERNAL, "cannot initialise libcurl");
    if (rc == 0 &&
        (delivery_threads->workers = calloc((size_t)c->workers, sizeof(worker_t))) == NULL)
        rc = wl_error_set(err, WL_ENOMEM, NULL);
    for (int i = 0; rc == 0 && i < c->workers; i++) {
        worker_t *w = &delivery_threads->workers[i];
        w->delivery = delivery_threads;
        if (wl_outbox_open(core, &w->outbox, err) != 0 || (w->curl = curl_easy_init()) == NULL) {
            rc = wl_error_set(err, WL_EINTERNAL, "cannot start a webhook worker");
            break;
        }
        if (pthread_create(&w->thread, NULL, work, w) != 0) {
            rc = wl_error_set(err, WL_EINTERNAL, "cannot start a webhook worker thread");
            break;
        }
        delivery_threads->started++;
    }
    if (rc != 0) {
        wl_delivery_stop(delivery_threads);
        return rc;
    }
    *out = delivery_threads;
    return 0;
}

void wl_delivery_stop(wl_delivery_t *delivery_threads)
{
    if (delivery_threads == NULL)
        return;
    pthread_mutex_lock(&delivery_threads->lock);
    atomic_store(&delivery_threads->stopping, true);
    pthread_cond_broadcast(&delivery_threads->wake);
    pthread_mutex_unlock(&delivery_threads->lock);
    for (int i = 0; i < delivery_threads->started; i++)
        pthread_join(delivery_threads->workers[i].thread, NULL);
    /* Past started too: a worker whose thread did not start may have its outbox and handle. */
    for (int i = 0; delivery_threads->workers != NULL && i < delivery_threads->config.workers;
         i++) {
        wl_outbox_close(delivery_threads->workers[i].outbox);
        if (delivery_threads->workers[i].curl != NULL)
            curl_easy_cleanup(delivery_threads->workers[i].curl);
    }
    free(delivery_threads->workers);
    pthread_cond_destroy(&delivery_threads->wake);
    pthread_mutex_destroy(&delivery_threads->lock);
    curl_global_cleanup();
    free(delivery_threads);
}
