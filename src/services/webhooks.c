/* Webhook deliveries happen here: worker threads lease endpoints with pending events, POST
 * them signed, and record how each attempt ended. */
#include "services/webhooks.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "domain/webhook.h"
#include "services/services.h"
#include "store/db.h"
#include "store/webhooks.h"
#include "walklist/log.h"
#include "walklist/json_writer.h"
#include "walklist/random.h"

#define DUE_BATCH       8  /* endpoints looked at per round */
#define PENDING_BATCH   64 /* deliveries read at once: the longest run a stock.changed coalesces */
#define SESSION_MAX     50 /* deliveries to one endpoint per lease, then others get a turn */
#define RESPONSE_LIMIT  (64 * 1024) /* answer bytes read at most; the rest is not waited for */
#define PRUNE_EVERY_MS  (3600 * 1000LL)
#define KEEP_DONE_MS    (7 * 24 * 3600 * 1000LL) /* done deliveries shown by webhook deliveries */
#define CONNECT_WAIT_MS 10000

struct wl_webhooks {
    wl_core_t *core;
    char *database_url;
    wl_core_webhooks_config_t config;
    int64_t lease_ms;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* stop */
    atomic_bool stopping;
    struct worker *workers;
    int started;
    atomic_uint_fast64_t delivered, failed, refused, disabled;
};

typedef struct worker {
    wl_webhooks_t *webhooks;
    pthread_t thread;
    char owner[40]; /* this thread's name on its leases */
    PGconn *conn;   /* NULL: not connected */
    CURL *curl;     /* kept between attempts, so connections to an endpoint are reused */
    int64_t pruned_ms;
} worker_t;

static int64_t wall_ms(void)
{
    return wl_db_wall_clock_ms();
}

/* --- One attempt over HTTP ------------------------------------------------------------- */

typedef struct {
    const wl_webhooks_t *webhooks;
    size_t received;
    const char *refusal; /* why a connection was refused (not NULL: nothing was sent) */
    char refused_address[INET6_ADDRSTRLEN];
} attempt_t;

/* The answer's body is not kept: it is counted, and the transfer ends past RESPONSE_LIMIT. */
static size_t discard(char *data, size_t size, size_t count, void *context)
{
    (void)data;
    attempt_t *attempt = context;
    attempt->received += size * count;
    return attempt->received > RESPONSE_LIMIT ? 0 : size * count;
}

static int progress(void *context, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                    curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    const attempt_t *attempt = context;
    return atomic_load(&attempt->webhooks->stopping) ? 1 : 0;
}

/*
 * Every address libcurl is about to connect to is checked here, after its own resolution:
 * what the URL's host resolves to now is what counts (DNS may have changed since webhook add),
 * and nothing resolved separately can differ from what is connected to.
 */
static curl_socket_t open_checked(void *context, curlsocktype purpose,
                                  struct curl_sockaddr *address)
{
    (void)purpose;
    attempt_t *attempt = context;
    const char *refusal = wl_webhook_address_refusal(&address->addr);
    if (refusal != NULL) {
        attempt->refusal = refusal;
        const void *bytes = address->family == AF_INET6
                                ? (const void *)&((struct sockaddr_in6 *)&address->addr)->sin6_addr
                                : (const void *)&((struct sockaddr_in *)&address->addr)->sin_addr;
        if (inet_ntop(address->family, bytes, attempt->refused_address,
                      sizeof(attempt->refused_address)) == NULL)
            attempt->refused_address[0] = '\0';
        return CURL_SOCKET_BAD;
    }
    return socket(address->family, address->socktype, address->protocol);
}

typedef struct {
    bool delivered, refused;
    int status;
    char error[200];
} sent_t;

static void send_one(worker_t *w, const wl_webhook_lease_t *lease, const char *id, const char *body,
                     sent_t *sent)
{
    const wl_webhooks_t *hooks = w->webhooks;
    memset(sent, 0, sizeof(*sent));
    long long timestamp = (long long)time(NULL);
    char signature[WL_WEBHOOK_SIGNATURE_SIZE];
    if (wl_webhook_sign(lease->secret, lease->secret_len, id, timestamp, body, strlen(body),
                        signature) != 0) {
        snprintf(sent->error, sizeof(sent->error), "cannot sign the delivery");
        return;
    }
    char id_header[128], timestamp_header[48], signature_header[80];
    snprintf(id_header, sizeof(id_header), "webhook-id: %s", id);
    snprintf(timestamp_header, sizeof(timestamp_header), "webhook-timestamp: %lld", timestamp);
    snprintf(signature_header, sizeof(signature_header), "webhook-signature: %s", signature);
    struct curl_slist *headers = NULL;
    const char *lines[] = {"Content-Type: application/json",
                           "User-Agent: walklist-webhooks",
                           "Expect:",
                           id_header,
                           timestamp_header,
                           signature_header};
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        struct curl_slist *more = curl_slist_append(headers, lines[i]);
        if (more == NULL) {
            curl_slist_free_all(headers);
            snprintf(sent->error, sizeof(sent->error), "out of memory");
            return;
        }
        headers = more;
    }
    attempt_t attempt = {.webhooks = hooks};
    CURL *curl = w->curl;
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, lease->url);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L); /* a redirect is a failed attempt */
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    /* A proxy from the environment would be connected to instead of the checked address. */
    curl_easy_setopt(curl, CURLOPT_PROXY, "");
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)hooks->config.connect_timeout_ms);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)hooks->config.timeout_ms);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &attempt);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &attempt);
    if (!hooks->config.allow_private) {
        curl_easy_setopt(curl, CURLOPT_OPENSOCKETFUNCTION, open_checked);
        curl_easy_setopt(curl, CURLOPT_OPENSOCKETDATA, &attempt);
    }
    CURLcode result = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    sent->status = (int)status;
    if (attempt.refusal != NULL && status == 0) {
        sent->refused = true;
        snprintf(sent->error, sizeof(sent->error),
                 "refused: the host resolves to %s (%s); see --webhook-allow-private",
                 attempt.refused_address, attempt.refusal);
    } else if (status >= 200 && status <= 299) {
        /* Also when the transfer ended early: the answer said 2xx, and a long body is cut. */
        sent->delivered = true;
    } else if (status > 0) {
        snprintf(sent->error, sizeof(sent->error), "HTTP %ld", status);
    } else {
        snprintf(sent->error, sizeof(sent->error), "%s", curl_easy_strerror(result));
    }
}

/* --- Bodies ------------------------------------------------------------------------------ */

/*
 * The body of the first attempt of pending[0]. A stock.changed coalesces the stock.changed
 * deliveries right after it that were never attempted (their cursor ranges chain): one
 * delivery from the first one's cursorFrom to the last one's cursorTo; *coalesced receives
 * their seqs.
 */
static int build_body(worker_t *w, const wl_webhook_due_t *endpoint,
                      const wl_webhook_pending_t *pending, int count, wl_arena_t *arena,
                      const char **body, int64_t *coalesced, int *coalesced_count, wl_error_t *err)
{
    const wl_webhook_pending_t *head = &pending[0];
    *coalesced_count = 0;
    bool stock = strcmp(head->type, WL_WEBHOOK_EVENT_STOCK_CHANGED) == 0;
    int64_t to = head->stock_to;
    bool reset = head->stock_reset;
    for (int i = 1; stock && i < count; i++) {
        const wl_webhook_pending_t *next = &pending[i];
        if (strcmp(next->type, WL_WEBHOOK_EVENT_STOCK_CHANGED) != 0 || next->attempts > 0 ||
            next->body != NULL)
            break;
        to = next->stock_to;
        reset = reset || next->stock_reset;
        coalesced[(*coalesced_count)++] = next->seq;
    }
    char cursor_from[WL_EXPORT_CURSOR_MAX], cursor_to[WL_EXPORT_CURSOR_MAX];
    if (stock) {
        int rc = wl__export_cursor_seal(w->webhooks->core, w->conn, endpoint->org_id,
                                        head->stock_from, cursor_from, err);
        if (rc == 0)
            rc = wl__export_cursor_seal(w->webhooks->core, w->conn, endpoint->org_id, to, cursor_to,
                                        err);
        if (rc != 0)
            return rc;
    }
    /* {"type":..,"timestamp":..,"data":..}: an event's data as it was stored, or a
     * stock.changed's cursors (at most 160 bytes each) and counts. */
    size_t size = strlen(head->type) + strlen(head->created_at) + strlen(head->data);
    size = size > (SIZE_MAX - 1024) / WL_JSON_ESCAPE_GROWTH ? SIZE_MAX
                                                            : size * WL_JSON_ESCAPE_GROWTH + 1024;
    char *text = size != SIZE_MAX ? wl_arena_alloc(arena, size) : NULL;
    if (text == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    wl_json_writer_t json;
    wl_json_writer_init(&json, text, size - 1, 0);
    wl_json_open_object(&json);
    wl_json_key(&json, "type");
    wl_json_cstring(&json, head->type);
    wl_json_key(&json, "timestamp");
    wl_json_cstring(&json, head->created_at);
    wl_json_key(&json, "data");
    if (stock) {
        wl_json_open_object(&json);
        wl_json_key(&json, "cursorFrom");
        wl_json_cstring(&json, cursor_from);
        wl_json_key(&json, "cursorTo");
        wl_json_cstring(&json, cursor_to);
        wl_json_key(&json, "historyReset");
        wl_json_bool(&json, reset);
        wl_json_key(&json, "changes");
        wl_json_int(&json, *coalesced_count + 1);
        wl_json_close_object(&json);
    } else {
        wl_json_raw(&json, head->data, strlen(head->data));
    }
    wl_json_close_object(&json);
    if (!wl_json_ok(&json))
        return wl_error_set(err, WL_EINTERNAL, "the webhook body did not fit");
    text[json.len] = '\0';
    *body = text;
    return 0;
}

/* --- Leases and attempts ------------------------------------------------------------------ */

/* The delay before attempt number attempts + 1: retry_base_ms doubled per failed attempt, at
 * most retry_max_ms, drawn from its upper half (jitter, so that endpoints that failed together
 * are not retried together). */
static int64_t retry_delay_ms(const wl_core_webhooks_config_t *config, int attempts)
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

static void log_attempt(const char *level, const char *msg, const wl_webhook_due_t *endpoint,
                        const char *id, int attempts, const sent_t *sent)
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

/* One attempt of the endpoint's oldest pending delivery: 1 delivered, 0 failed, < 0 when the
 * database failed. */
static int attempt_head(worker_t *w, const wl_webhook_due_t *endpoint,
                        const wl_webhook_lease_t *lease, const wl_webhook_pending_t *pending,
                        int count, wl_arena_t *arena, wl_error_t *err)
{
    wl_webhooks_t *hooks = w->webhooks;
    const wl_webhook_pending_t *head = &pending[0];
    const char *id = head->webhook_id, *body = head->body;
    int64_t coalesced[PENDING_BATCH];
    int coalesced_count = 0, rc = 0;
    if (body == NULL) {
        id = head->event_id;
        rc =
            build_body(w, endpoint, pending, count, arena, &body, coalesced, &coalesced_count, err);
        if (rc == 0)
            rc = wl_webhooks_attempt(w->conn, endpoint, head->seq, id, body, coalesced,
                                     coalesced_count, wall_ms(), err);
    } else {
        rc = wl_webhooks_attempt(w->conn, endpoint, head->seq, NULL, NULL, NULL, 0, wall_ms(), err);
    }
    if (rc != 0)
        return rc;
    sent_t sent;
    send_one(w, lease, id, body, &sent);
    int attempts = head->attempts + 1;
    int64_t now = wall_ms();
    wl_webhook_outcome_t outcome = {
        .delivered = sent.delivered,
        .status = sent.status,
        .error = sent.delivered ? NULL : sent.error,
        .retry_ms = now + retry_delay_ms(&hooks->config, attempts),
        .disable_ms = now - (int64_t)hooks->config.disable_after_s * 1000,
    };
    /* Cut short by the stop, not failed by the endpoint: nothing is held against it, and the
     * delivery is due at once for whichever process comes next (the attempt counted). */
    if (atomic_load(&hooks->stopping) && !sent.delivered)
        return 0;
    bool disabled = false;
    rc = wl_webhooks_record(w->conn, endpoint, head->seq, &outcome, now, &disabled, err);
    if (rc != 0)
        return rc;
    if (sent.delivered) {
        atomic_fetch_add(&hooks->delivered, 1);
    } else {
        atomic_fetch_add(sent.refused ? &hooks->refused : &hooks->failed, 1);
        log_attempt("warn", "webhook attempt failed", endpoint, id, attempts, &sent);
    }
    if (disabled) {
        atomic_fetch_add(&hooks->disabled, 1);
        log_attempt("warn", "webhook endpoint disabled: failing for too long", endpoint, id,
                    attempts, &sent);
    }
    return sent.delivered ? 1 : 0;
}

/* Delivers to one endpoint while it has work due and answers: 1 when an attempt was made, 0
 * when none (someone else has the endpoint, or nothing is due), < 0 when the database
 * failed. */
static int serve_endpoint(worker_t *w, const wl_webhook_due_t *endpoint, wl_error_t *err)
{
    wl_webhooks_t *hooks = w->webhooks;
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    wl_webhook_lease_t lease = {0};
    int attempted = 0, rc = 0;
    bool leased = false;
    while (attempted < SESSION_MAX && !atomic_load(&hooks->stopping)) {
        /* Taken, then renewed before each attempt: an attempt always has a whole lease. */
        int64_t now = wall_ms();
        rc = wl_webhooks_lease(w->conn, endpoint, w->owner, now, now + hooks->lease_ms, &arena,
                               &lease, err);
        if (rc <= 0)
            break;
        leased = true;
        wl_webhook_pending_t *pending = NULL;
        int count = 0;
        rc = wl_webhooks_pending(w->conn, endpoint, PENDING_BATCH, &arena, &pending, &count, err);
        if (rc != 0 || count == 0 || pending[0].next_attempt_ms > now)
            break;
        rc = attempt_head(w, endpoint, &lease, pending, count, &arena, err);
        attempted++;
        if (rc <= 0)
            break;
    }
    explicit_bzero(lease.secret, sizeof(lease.secret));
    if (leased && rc >= 0) {
        int released = wl_webhooks_release(w->conn, endpoint, w->owner, err);
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
        int rc = wl_webhooks_prune(w->conn, now - KEEP_DONE_MS, err);
        if (rc != 0)
            return rc;
        w->pruned_ms = now;
    }
    wl_webhook_due_t due[DUE_BATCH];
    int count = 0, worked = 0;
    int rc = wl_webhooks_due(w->conn, now, due, DUE_BATCH, &count, err);
    for (int i = 0; rc == 0 && i < count && !atomic_load(&w->webhooks->stopping); i++) {
        int served = serve_endpoint(w, &due[i], err);
        if (served < 0)
            rc = served;
        worked += served > 0;
    }
    return rc < 0 ? rc : worked;
}

static void pause_ms(wl_webhooks_t *hooks, int ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&hooks->lock);
    if (!atomic_load(&hooks->stopping))
        pthread_cond_timedwait(&hooks->wake, &hooks->lock, &until);
    pthread_mutex_unlock(&hooks->lock);
}

static void *work(void *data)
{
    worker_t *w = data;
    wl_webhooks_t *hooks = w->webhooks;
    while (!atomic_load(&hooks->stopping)) {
        wl_error_t err;
        wl_error_init(&err);
        int worked = 0;
        if (w->conn == NULL) {
            wl_db_connect_t how = {.conninfo = hooks->database_url,
                                   .application = "walklist-webhooks",
                                   .liveness_timeout_ms = CONNECT_WAIT_MS,
                                   .statement_timeout_ms = WL_CORE_DEFAULT_STATEMENT_TIMEOUT_MS,
                                   .lock_timeout_ms = CONNECT_WAIT_MS,
                                   .plan_by_key = true};
            w->conn = wl_db_connect(&how, wl_db_clock_ms() + CONNECT_WAIT_MS, &err, NULL, 0);
        }
        if (w->conn != NULL) {
            worked = run_once(w, &err);
            if (worked < 0) {
                wl_log("warn", "webhook worker: database failed; reconnecting", "%s", err.message);
                wl_db_discard(w->conn);
                w->conn = NULL;
                worked = 0;
            }
        }
        if (worked == 0)
            pause_ms(hooks, hooks->config.poll_ms);
    }
    if (w->conn != NULL)
        wl_db_discard(w->conn);
    w->conn = NULL;
    return NULL;
}

/* --- Starting and stopping ------------------------------------------------------------------ */

static int or_default(int value, int fallback)
{
    return value > 0 ? value : fallback;
}

int wl__webhooks_start(wl_core_t *core, const char *database_url,
                       const wl_core_webhooks_config_t *config, wl_webhooks_t **out,
                       wl_error_t *err)
{
    *out = NULL;
    wl_webhooks_t *hooks = calloc(1, sizeof(*hooks));
    if (hooks == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    hooks->core = core;
    hooks->config = *config;
    wl_core_webhooks_config_t *c = &hooks->config;
    c->poll_ms = or_default(c->poll_ms, WL_CORE_DEFAULT_WEBHOOK_POLL_MS);
    c->connect_timeout_ms =
        or_default(c->connect_timeout_ms, WL_CORE_DEFAULT_WEBHOOK_CONNECT_TIMEOUT_MS);
    c->timeout_ms = or_default(c->timeout_ms, WL_CORE_DEFAULT_WEBHOOK_TIMEOUT_MS);
    c->retry_base_ms = or_default(c->retry_base_ms, WL_CORE_DEFAULT_WEBHOOK_RETRY_BASE_MS);
    c->retry_max_ms = or_default(c->retry_max_ms, WL_CORE_DEFAULT_WEBHOOK_RETRY_MAX_MS);
    if (c->retry_max_ms < c->retry_base_ms)
        c->retry_max_ms = c->retry_base_ms;
    c->disable_after_s = or_default(c->disable_after_s, WL_CORE_DEFAULT_WEBHOOK_DISABLE_AFTER_S);
    /* Long enough for a whole attempt and its bookkeeping; a process that dies mid-attempt
     * leaves the endpoint to others once it runs out. */
    hooks->lease_ms = 2LL * c->timeout_ms + c->connect_timeout_ms + 2000;
    pthread_mutex_init(&hooks->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&hooks->wake, &attr);
    pthread_condattr_destroy(&attr);
    int rc = 0;
    /* Not thread-safe, so here, before any thread of ours uses libcurl. */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        rc = wl_error_set(err, WL_EINTERNAL, "cannot initialise libcurl");
    if (rc == 0 && (hooks->database_url = strdup(database_url)) == NULL)
        rc = wl_error_set(err, WL_ENOMEM, NULL);
    if (rc == 0 && (hooks->workers = calloc((size_t)c->workers, sizeof(worker_t))) == NULL)
        rc = wl_error_set(err, WL_ENOMEM, NULL);
    for (int i = 0; rc == 0 && i < c->workers; i++) {
        worker_t *w = &hooks->workers[i];
        char random_part[23];
        w->webhooks = hooks;
        if (wl_random_id(random_part) != 0 || (w->curl = curl_easy_init()) == NULL) {
            rc = wl_error_set(err, WL_EINTERNAL, "cannot start a webhook worker");
            break;
        }
        snprintf(w->owner, sizeof(w->owner), "walklistd-%s", random_part);
        if (pthread_create(&w->thread, NULL, work, w) != 0) {
            curl_easy_cleanup(w->curl);
            w->curl = NULL;
            rc = wl_error_set(err, WL_EINTERNAL, "cannot start a webhook worker thread");
            break;
        }
        hooks->started++;
    }
    if (rc != 0) {
        wl__webhooks_stop(hooks);
        return rc;
    }
    *out = hooks;
    return 0;
}

void wl__webhooks_stop(wl_webhooks_t *hooks)
{
    if (hooks == NULL)
        return;
    pthread_mutex_lock(&hooks->lock);
    atomic_store(&hooks->stopping, true);
    pthread_cond_broadcast(&hooks->wake);
    pthread_mutex_unlock(&hooks->lock);
    for (int i = 0; i < hooks->started; i++) {
        pthread_join(hooks->workers[i].thread, NULL);
        curl_easy_cleanup(hooks->workers[i].curl);
    }
    free(hooks->workers);
    free(hooks->database_url);
    pthread_cond_destroy(&hooks->wake);
    pthread_mutex_destroy(&hooks->lock);
    curl_global_cleanup();
    free(hooks);
}

void wl__webhooks_stats(wl_webhooks_t *hooks, wl_core_webhook_stats_t *out)
{
    memset(out, 0, sizeof(*out));
    if (hooks == NULL)
        return;
    out->delivered = atomic_load(&hooks->delivered);
    out->failed = atomic_load(&hooks->failed);
    out->refused = atomic_load(&hooks->refused);
    out->disabled = atomic_load(&hooks->disabled);
    out->workers = hooks->started;
}

/* --- webhook add's check ------------------------------------------------------------------ */

int wl__webhook_target_check(const char *url, bool allow_private, wl_error_t *err)
{
    wl_webhook_target_t target;
    int rc = wl_webhook_url_parse(url, &target, err);
    if (rc != 0 || allow_private)
        return rc;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *found = NULL;
    int gai = getaddrinfo(target.host, NULL, &hints, &found);
    if (gai != 0)
        return wl_error_add_violation(err, "url", "the host '%.100s' does not resolve: %s",
                                      target.host, gai_strerror(gai));
    /* Every address, not only the first: a delivery may connect to any of them. */
    for (struct addrinfo *a = found; rc == 0 && a != NULL; a = a->ai_next) {
        const char *refusal = wl_webhook_address_refusal(a->ai_addr);
        if (refusal != NULL)
            rc = wl_error_add_violation(err, "url",
                                        "the host '%.100s' resolves to %s: refused unless "
                                        "--webhook-allow-private",
                                        target.host, refusal);
    }
    freeaddrinfo(found);
    return rc;
}
