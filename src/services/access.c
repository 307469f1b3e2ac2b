/* Letting requests in (key, scope, rate limit), alone or with their work, happens here. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/services.h"

/* One admission's way to the database: the request it sends, the permit fetch it may make,
 * and what answering it needs. In the caller's frame when the caller waits for it; in the
 * request's arena when a step that may not wait stops there (wl__admission_prepared), to be
 * queued (wl__admission_queue) and answered when the step runs again. */
typedef struct {
    wl_admission_waiter_t waiter; /* first: the committer's done finds the slot from it */
    wl_core_t *core;
    wl_admission_t *admission;
    wl_admit_t request;
    wl_rate_fetch_t fetch;
    bool fetching;
    bool decides;   /* the answer decides the admission; else it only carries the work */
    bool with_work; /* prepared by a wl__admit with work */
    bool queued;
    void (*done)(void *data);
    void *done_data;
    wl_error_t err; /* the request's failure, while prepared */
} admit_slot_t;

struct wl_admission {
    const wl_method_policy_t *policy;
    wl_arena_t *arena;
    bool defers;            /* the decider may not wait (wl__admission_defer) */
    admit_slot_t *prepared; /* stopped here, until answered when the call runs again */
    bool decided;
    int result;
    char message[128];
    bool malformed; /* not the shape of a key: refused without asking anyone */
    bool key_known; /* principal came from the cache of checked keys */
    wl_key_ticket_t ticket;
    char prefix[WL_KEY_PREFIX_LEN + 1];
    unsigned char digest[WL_KEY_DIGEST_SIZE];
    wl_principal_t principal;
    wl_rate_t rate;
    wl_admit_work_t *work; /* sent with the decision (wl__admission_attach), or NULL */
};

wl_admission_t *wl_core_admission(wl_core_t *core, wl_arena_t *arena, wl_span_t token,
                                  const wl_method_policy_t *policy)
{
    wl_admission_t *admission = wl_arena_alloc(arena, sizeof(*admission));
    if (admission == NULL)
        return NULL;
    memset(admission, 0, sizeof(*admission));
    admission->policy = policy;
    admission->arena = arena;
    admission->rate.bucket = policy->rate_bucket;
    if (policy->rate_bucket != NULL) {
        admission->rate.limit = wl_core_rate_limit(core, policy->rate_bucket);
        admission->rate.window_s = core->rate_window_ms / 1000;
    }
    if (!wl_keys_parse(token, admission->prefix)) {
        admission->malformed = true;
        return admission;
    }
    wl_keys_digest(token, admission->digest);
    if (core->keys == NULL)
        return admission;
    admission->key_known =
        wl_key_cache_find(core->keys, admission->prefix, admission->digest, &admission->principal);
    if (!admission->key_known)
        admission->ticket = wl_key_cache_ticket(core->keys);
    return admission;
}

bool wl_admission_pending(const wl_admission_t *admission)
{
    return !admission->decided;
}

bool wl__admission_prepared(const wl_admission_t *admission)
{
    return admission->prepared != NULL && !admission->prepared->queued;
}

void wl__admission_defer(wl_admission_t *admission, bool defer)
{
    admission->defers = defer;
}

bool wl__admission_defers(const wl_admission_t *admission)
{
    return admission != NULL && admission->defers;
}

/* Once the database answered the slot's request (rc): a permit fetch is settled at once, for
 * the requests of the bucket waiting for it, whether or not the call runs again. */
static void settle_fetch(admit_slot_t *slot, int rc)
{
    wl_admit_t *request = &slot->request;
    if (slot->fetching)
        wl_rate_leases_fetched(slot->core->leases, slot->admission->principal.org_id, &slot->fetch,
                               rc == 0 && request->asked ? &request->grant : NULL,
                               &slot->admission->rate);
}

/* On the committer thread, once the slot's group is done. */
static void prepared_done(wl_admission_waiter_t *waiter)
{
    admit_slot_t *slot = (admit_slot_t *)waiter;
    settle_fetch(slot, slot->request.rc);
    void (*done)(void *data) = slot->done;
    void *data = slot->done_data;
    done(data); /* the slot may be gone right after */
}

void wl__admission_attach(wl_admission_t *admission, wl_admit_work_t *work)
{
    admission->work = work;
}

wl_admit_work_t *wl__admission_work(const wl_admission_t *admission)
{
    return admission->work;
}

wl_arena_t *wl__admission_arena(const wl_admission_t *admission)
{
    return admission->arena;
}

/* The work a decision sends: the attached one, while the admission is pending. */
static wl_admit_work_t *attached(const wl_admission_t *admission)
{
    return admission->decided ? NULL : admission->work;
}

wl_admit_work_t *wl__admit_sent(const wl_admission_t *admission)
{
    const admit_slot_t *slot = admission != NULL ? admission->prepared : NULL;
    return slot != NULL && slot->queued ? slot->request.work : NULL;
}

void wl__admission_queue(wl_core_t *core, wl_admission_t *admission, void (*done)(void *data),
                         void *data)
{
    admit_slot_t *slot = admission->prepared;
    slot->queued = true;
    slot->done = done;
    slot->done_data = data;
    slot->waiter.request = &slot->request;
    slot->waiter.done = prepared_done;
    wl_admissions_queue(core->admissions, &slot->waiter);
}

int wl_admission_result(const wl_admission_t *admission)
{
    return admission->decided ? admission->result : 0;
}

bool wl_admission_refused(const wl_admission_t *admission)
{
    return admission->decided && admission->result != 0;
}

const wl_principal_t *wl_admission_principal(const wl_admission_t *admission)
{
    return &admission->principal;
}

const wl_rate_t *wl_admission_rate(const wl_admission_t *admission)
{
    return &admission->rate;
}

static int decided(wl_admission_t *admission, int result, wl_error_t *err, const char *fmt, ...)
    WL_PRINTF(4, 5);

static int decided(wl_admission_t *admission, int result, wl_error_t *err, const char *fmt, ...)
{
    admission->decided = true;
    admission->result = result;
    admission->message[0] = '\0';
    if (fmt != NULL) {
        va_list args;
        va_start(args, fmt);
        vsnprintf(admission->message, sizeof(admission->message), fmt, args);
        va_end(args);
    }
    if (result == 0)
        return 0;
    return wl_error_set(err, result, "%s", admission->message);
}

/* The decision once the key and the count are known (from memory or from the database). */
static int decide_from(wl_core_t *core, wl_admission_t *admission, wl_error_t *err)
{
    const wl_rate_t *rate = &admission->rate;
    if (rate->bucket != NULL && !rate->accepted)
        return decided(admission, WL_EEXHAUSTED, err, "rate limit of %d requests per %d s exceeded",
                       rate->limit, rate->window_s);
    unsigned scope = admission->policy->scope;
    if ((admission->principal.scopes & scope) != scope) {
        char needed[64];
        wl_scopes_format(scope, needed, sizeof(needed));
        return decided(admission, WL_EPERMISSION, err, "the API key lacks the scope %s", needed);
    }
    (void)core;
    return decided(admission, 0, err, NULL);
}

/* After the database answered the slot's request (rc; its work, when it had one, holds its
 * answers): the admission's decision when the request decides it. */
static int answered(wl_core_t *core, wl_admission_t *admission, admit_slot_t *slot, int rc,
                    wl_error_t *err)
{
    wl_admit_t *request = &slot->request;
    if (!slot->decides)
        return rc;
    wl_rate_t *rate = &admission->rate;
    if (rc != 0)
        return decided(admission, rc, err, "%s", err->message);
    if (!request->key_valid)
        return decided(admission, WL_EUNAUTHENTICATED, err, "invalid API key");
    if (!admission->key_known) {
        admission->principal = request->principal;
        if (core->keys != NULL)
            wl_key_cache_remember(core->keys, admission->ticket, admission->digest,
                                  &admission->principal);
        if (rate->bucket != NULL) {
            rate->accepted = request->grant.granted > 0;
            rate->remaining =
                rate->limit > request->grant.used ? rate->limit - request->grant.used : 0;
            rate->reset_s = (int)((request->grant.reset_ms + 999) / 1000);
        }
    }
    return decide_from(core, admission, err);
}

/* A call that may not wait stopped at its admission: what the database is asked keeps in the
 * arena until the call runs again (answer_prepared). */
static int prepare(wl_admission_t *admission, const admit_slot_t *local, wl_error_t *err)
{
    /* Every byte is written below: the request up to its error record, and that record's head. */
    admit_slot_t *slot = wl_arena_alloc_unzeroed(admission->arena, sizeof(*slot));
    if (slot == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    memcpy(slot, local, offsetof(admit_slot_t, err));
    wl_error_init(&slot->err);
    slot->request.err = &slot->err;
    if (slot->fetching) {
        slot->request.ask = &slot->fetch.ask;
        if (local->fetch.ask.return_at == local->fetch.return_at)
            slot->fetch.ask.return_at = slot->fetch.return_at;
    }
    admission->prepared = slot;
    return wl_error_set(err, WL__EWOULDWAIT, "the admission waits to be queued");
}

/* The call runs again after its prepared admission was queued and answered (its work, sent
 * then, holds the work's answers: wl__admit_sent). */
static int answer_prepared(wl_core_t *core, wl_admission_t *admission, wl_error_t *err)
{
    admit_slot_t *slot = admission->prepared;
    admission->prepared = NULL; /* a later admission of the call goes its own way */
    if (!slot->queued)
        return wl_error_set(err, WL_EINTERNAL, "a prepared admission was never sent");
    int rc = slot->request.rc;
    if (rc != 0)
        wl_error_set(err, slot->err.code, "%s", slot->err.message);
    return answered(core, admission, slot, rc, err);
}

static bool database_given_up(wl_core_t *core)
{
    wl_pool_stats_t stats;
    wl_pool_stats(core->pool, &stats);
    return stats.unreachable;
}

int wl__admit(wl_core_t *core, wl_admission_t *admission, wl_admit_work_t *work, wl_error_t *err)
{
    /* The call runs again: the admission it stopped at is answered (a check of the decision
     * alone, without work, before the method runs again, is not that admission). */
    if (admission != NULL && admission->prepared != NULL &&
        (work != NULL) == admission->prepared->with_work)
        return answer_prepared(core, admission, err);
    admit_slot_t slot;
    slot.core = core;
    slot.admission = admission;
    slot.decides = admission != NULL && !admission->decided;
    slot.with_work = work != NULL;
    slot.fetching = false;
    slot.queued = false;
    wl_admit_t *request = &slot.request;
    memset(request, 0, sizeof(*request));
    request->work = work;
    request->err = err;
    if (!slot.decides) {
        if (admission != NULL && admission->result != 0)
            return wl_error_set(err, admission->result, "%s", admission->message);
        if (work == NULL)
            return 0;
        request->org_id = admission != NULL ? admission->principal.org_id : work->org_id;
    } else if (admission->malformed) {
        return decided(admission, WL_EUNAUTHENTICATED, err, "invalid API key");
    } else {
        memcpy(request->prefix, admission->prefix, sizeof(request->prefix));
        memcpy(request->digest, admission->digest, sizeof(request->digest));
        request->org_id = admission->key_known ? admission->principal.org_id : 0;
        request->scope = admission->policy->scope;
        request->bucket = admission->rate.bucket;
        request->limit = admission->rate.limit;
        wl_rate_t *rate = &admission->rate;

        /* A known key may spend a leased permit, or know its bucket full, without a round
         * trip. */
        static const wl_rate_ask_t one = {.want = 1};
        if (rate->bucket != NULL && admission->key_known) {
            int64_t org = admission->principal.org_id;
            wl_rate_spend_t spent = wl_rate_leases_spend(core->leases, org, rate, &slot.fetch, 0);
            if (spent == WL_RATE_BUSY && admission->defers)
                return wl_error_set(err, WL__EWOULDWAIT, "the bucket's permits are being fetched");
            /* Another request's ask of the bucket is in flight: waiting for it costs this one's
             * budget too (a group's silence at most, then 503), and nothing once the database
             * was given up on (the ask is then stuck until its own limit). */
            if (spent == WL_RATE_BUSY && database_given_up(core))
                return decided(admission, WL_EUNAVAILABLE, err, "database unavailable");
            if (spent == WL_RATE_BUSY)
                spent = wl_rate_leases_spend(core->leases, org, rate, &slot.fetch,
                                             wl_admissions_budget_ms(core->admissions));
            if (spent == WL_RATE_BUSY)
                return decided(admission, WL_ETIMEDOUT, err, "the database did not answer in time");
            slot.fetching = spent == WL_RATE_FETCH;
            request->ask = slot.fetching ? &slot.fetch.ask : NULL;
        } else if (rate->bucket != NULL) {
            request->ask = &one;
        }
        bool lets_in =
            admission->key_known && (rate->bucket == NULL || rate->accepted || slot.fetching) &&
            (admission->principal.scopes & admission->policy->scope) == admission->policy->scope;
        if (admission->key_known && !lets_in)
            request->work = NULL; /* refused whatever the count says: no work */
        if (admission->key_known && !slot.fetching && request->work == NULL)
            return decide_from(core, admission, err); /* nothing to ask the database */
    }
    if (admission != NULL && admission->defers)
        return prepare(admission, &slot, err);
    int rc = wl_admissions_run(core->admissions, request);
    settle_fetch(&slot, rc);
    return answered(core, admission, &slot, rc, err);
}

int wl_admission_decide(wl_core_t *core, wl_admission_t *admission, wl_error_t *err)
{
    return wl__admit(core, admission, attached(admission), err);
}

/* An admission decided asynchronously, from its start to its completion. */
typedef struct {
    wl_job_t job; /* first: run_decided finds the rest from it */
    wl_core_t *core;
    wl_admission_t *admission;
    wl_completion_t completion;
} async_admission_t;

/* Decides the admission (waiting where it may, or from its group's answer); the decision
 * stays in it (wl_admission_result). */
static void decide_here(wl_core_t *core, wl_admission_t *admission)
{
    wl_error_t err;
    wl_error_init(&err);
    int rc = wl__admit(core, admission, attached(admission), &err);
    (void)rc;
}

/* On the thread that may wait (completion->run_elsewhere's). */
static void decide_waiting(wl_job_t *job)
{
    async_admission_t *async = (async_admission_t *)job;
    decide_here(async->core, async->admission);
    async->completion.done(async->completion.data);
}

/* On a committer, once the admission's group is done: its answer decides it. */
static void group_decided(void *data)
{
    async_admission_t *async = data;
    decide_here(async->core, async->admission);
    async->completion.done(async->completion.data);
}

bool wl_admission_decide_async(wl_core_t *core, wl_admission_t *admission,
                               const wl_completion_t *completion)
{
    if (admission->decided)
        return true;
    wl_error_t err;
    wl_error_init(&err);
    async_admission_t *async = wl_arena_alloc(admission->arena, sizeof(*async));
    if (async == NULL) {
        (void)decided(admission, WL_ENOMEM, &err, "out of memory");
        return true;
    }
    *async = (async_admission_t){.core = core, .admission = admission, .completion = *completion};
    admission->defers = true;
    int rc = wl__admit(core, admission, attached(admission), &err);
    admission->defers = false;
    if (rc != WL__EWOULDWAIT)
        return true;
    if (wl__admission_prepared(admission)) {
        wl__admission_queue(core, admission, group_decided, async);
        return false;
    }
    if (completion->run_elsewhere != NULL) {
        async->job.run = decide_waiting;
        completion->run_elsewhere(&async->job, completion->executor);
        return false;
    }
    decide_here(core, admission); /* waits here: nowhere else to */
    return true;
}

int wl_core_authorize(wl_core_t *core, wl_span_t token, const char *bucket, wl_principal_t *out,
                      wl_rate_t *rate, wl_error_t *err)
{
    wl_method_policy_t policy = {0, bucket, false};
    if (bucket != NULL && wl_core_rate_limit(core, bucket) == 0)
        return wl_error_set(err, WL_EINTERNAL, "unknown rate-limit bucket %s", bucket);
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    wl_admission_t *admission = wl_core_admission(core, &arena, token, &policy);
    int rc = admission != NULL ? wl_admission_decide(core, admission, err)
                               : wl_error_set(err, WL_ENOMEM, NULL);
    if (admission != NULL) {
        *out = admission->principal;
        if (rate != NULL)
            *rate = admission->rate;
    }
    wl_arena_dispose(&arena);
    return rc;
}

int wl_core_authenticate(wl_core_t *core, wl_span_t token, wl_principal_t *out, wl_error_t *err)
{
    return wl_core_authorize(core, token, NULL, out, NULL, err);
}

int wl_core_rate_limit(const wl_core_t *core, const char *bucket)
{
    if (strcmp(bucket, "locate-lists") == 0)
        return core->rate_locate_lists;
    if (strcmp(bucket, "stock-export") == 0)
        return core->rate_stock_export;
    if (strcmp(bucket, "shared") == 0)
        return core->rate_shared;
    return 0;
}
