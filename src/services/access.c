/* Letting requests in (key, scope, rate limit), alone or with their work, happens here. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/services.h"

struct wl_admission {
    const wl_method_policy_t *policy;
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
};

wl_admission_t *wl_core_admission(wl_core_t *core, wl_arena_t *arena, wl_span_t token,
                                  const wl_method_policy_t *policy)
{
    wl_admission_t *admission = wl_arena_alloc(arena, sizeof(*admission));
    if (admission == NULL)
        return NULL;
    memset(admission, 0, sizeof(*admission));
    admission->policy = policy;
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

int wl__admit(wl_core_t *core, wl_admission_t *admission, wl_admit_t *work, wl_error_t *err)
{
    if (admission == NULL || admission->decided) {
        if (admission != NULL && admission->result != 0)
            return wl_error_set(err, admission->result, "%s", admission->message);
        if (work == NULL)
            return 0;
        work->org_id = admission ? admission->principal.org_id : work->org_id;
        work->ask = NULL;
        work->err = err;
        return wl_admissions_run(core->admissions, work);
    }
    if (admission->malformed)
        return decided(admission, WL_EUNAUTHENTICATED, err, "invalid API key");

    wl_admit_t take;
    wl_admit_t *request = work != NULL ? work : &take;
    if (work == NULL) {
        memset(&take, 0, sizeof(take));
        take.action = WL_ADMIT_TAKE;
    }
    memcpy(request->prefix, admission->prefix, sizeof(request->prefix));
    memcpy(request->digest, admission->digest, sizeof(request->digest));
    request->org_id = admission->key_known ? admission->principal.org_id : 0;
    request->scope = admission->policy->scope;
    request->bucket = admission->rate.bucket;
    request->limit = admission->rate.limit;
    request->err = err;
    wl_rate_t *rate = &admission->rate;

    /* A known key may spend a leased permit, or know its bucket full, without a round trip. */
    wl_rate_fetch_t fetch;
    bool fetching = false;
    wl_rate_ask_t one = {.want = 1, .hold_ms = 0, .return_at = NULL, .return_count = 0};
    request->ask = NULL;
    if (rate->bucket != NULL && admission->key_known) {
        fetching = !wl_rate_leases_spend(core->leases, admission->principal.org_id, rate, &fetch);
        request->ask = fetching ? &fetch.ask : NULL;
    } else if (rate->bucket != NULL) {
        request->ask = &one;
    }
    bool lets_in =
        admission->key_known && (rate->bucket == NULL || rate->accepted || fetching) &&
        (admission->principal.scopes & admission->policy->scope) == admission->policy->scope;
    if (admission->key_known && !lets_in)
        request->action = WL_ADMIT_TAKE; /* refused whatever the count says: no work */
    if (admission->key_known && !fetching && request->action == WL_ADMIT_TAKE)
        return decide_from(core, admission, err); /* nothing to ask the database */

    int rc = wl_admissions_run(core->admissions, request);
    if (fetching)
        wl_rate_leases_fetched(core->leases, admission->principal.org_id, &fetch,
                               rc == 0 && request->asked ? &request->grant : NULL, rate);
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

int wl_admission_decide(wl_core_t *core, wl_admission_t *admission, wl_error_t *err)
{
    return wl__admit(core, admission, NULL, err);
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
