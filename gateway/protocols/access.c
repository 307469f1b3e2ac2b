/* Starting admissions and answering their refusals, for every transport, happens here. */
#include "protocols/access.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

bool wl_access_bearer_token(const char *header, wl_span_t *token)
{
    header += strspn(header, " \t");
    if (strncasecmp(header, "Bearer", 6) != 0 || (header[6] != ' ' && header[6] != '\t'))
        return false;
    const char *start = header + 6 + strspn(header + 6, " \t");
    size_t len = strcspn(start, " \t");
    const char *rest = start + len;
    if (len == 0 || rest[strspn(rest, " \t")] != '\0')
        return false;
    *token = wl_span(start, len);
    return true;
}

bool wl_access_read_key(const wl_access_t *access, wl_exchange_t *ex, const wl_span_t *query_key,
                        wl_span_t *token)
{
    const char *header = wl_exchange_header(ex, "Authorization");
    if (header != NULL && query_key != NULL) {
        access->answer(ex, 400, WL_GRPC_INVALID_ARGUMENT, WL_REASON_API_KEY_AMBIGUOUS,
                       "send the API key in the Authorization header or in api_key, not both",
                       NULL);
        return false;
    }
    if (query_key != NULL) {
        *token = *query_key;
        return true;
    }
    if (header == NULL) {
        wl_access_unauthenticated(access, ex, false, "missing API key");
        return false;
    }
    if (!wl_access_bearer_token(header, token)) {
        /* A Bearer credential of the wrong shape was still a key sent; another scheme was not. */
        bool bearer = strncasecmp(header + strspn(header, " \t"), "Bearer", 6) == 0;
        wl_access_unauthenticated(access, ex, bearer,
                                  "the Authorization header must be 'Bearer <API key>'");
        return false;
    }
    return true;
}

void wl_access_unauthenticated(const wl_access_t *access, wl_exchange_t *ex, bool key_sent,
                               const char *message)
{
    int retry_after = 0;
    if (!wl_anon_limiter_allow(access->anonymous, wl_exchange_client_addr(ex), &retry_after)) {
        char seconds[16];
        snprintf(seconds, sizeof(seconds), "%d", retry_after > 0 ? retry_after : 1);
        wl_exchange_add_header(ex, "Retry-After", seconds);
        wl_error_info_add(&ex->error_info, "bucket", "anonymous");
        access->answer(ex, 429, WL_GRPC_RESOURCE_EXHAUSTED, WL_REASON_RATE_LIMITED,
                       "too many requests without a valid API key", NULL);
        return;
    }
    wl_exchange_add_header(ex, "WWW-Authenticate",
                           key_sent ? "Bearer realm=\"walklist\", error=\"invalid_token\""
                                    : "Bearer realm=\"walklist\"");
    access->answer(ex, 401, WL_GRPC_UNAUTHENTICATED,
                   key_sent ? WL_REASON_API_KEY_INVALID : WL_REASON_API_KEY_MISSING, message, NULL);
}

/* The admission's principal and rate decision, for the answer's headers and the log line. */
static void follow(wl_exchange_t *ex)
{
    ex->principal = *wl_admission_principal(ex->admission);
    ex->rate = *wl_admission_rate(ex->admission);
    ex->authenticated = ex->principal.org_id != 0;
}

static void answer_refusal(const wl_access_t *access, wl_exchange_t *ex, const wl_error_t *err)
{
    int result = wl_admission_result(ex->admission);
    if (result == WL_EUNAUTHENTICATED) {
        wl_access_unauthenticated(access, ex, true, "invalid API key");
        return;
    }
    if (result == WL_EEXHAUSTED) {
        char seconds[16];
        snprintf(seconds, sizeof(seconds), "%d", ex->rate.reset_s > 0 ? ex->rate.reset_s : 1);
        wl_exchange_add_header(ex, "Retry-After", seconds);
        if (ex->rate.bucket != NULL) {
            wl_error_info_add(&ex->error_info, "bucket", "%s", ex->rate.bucket);
            wl_error_info_add(&ex->error_info, "limit", "%d", ex->rate.limit);
            wl_error_info_add(&ex->error_info, "windowSeconds", "%d", ex->rate.window_s);
        }
        access->answer(ex, 429, WL_GRPC_RESOURCE_EXHAUSTED, WL_REASON_RATE_LIMITED, err->message,
                       NULL);
        return;
    }
    if (result == WL_EPERMISSION) {
        char scope[64];
        wl_scopes_format(ex->scope_needed, scope, sizeof(scope));
        wl_error_info_add(&ex->error_info, "scope", "%s", scope);
    }
    wl_grpc_code_t code = wl_error_grpc_code(result);
    if (code == WL_GRPC_UNAVAILABLE)
        wl_exchange_add_header(ex, "Retry-After", "1");
    access->answer(ex, wl_http_status_of(code), code, wl_reason_of_error(result), NULL, err);
}

bool wl_access_admitted(const wl_access_t *access, wl_exchange_t *ex)
{
    if (ex->admission == NULL)
        return true; /* nothing asked for admission (no route needs one before it starts) */
    /* Where the request may not wait, a decision the database must make is made meanwhile: the
     * request stops here, and runs again once it is decided. */
    if (!ex->may_wait && !wl_admission_decide_async(access->core, ex->admission, &ex->completion)) {
        ex->stop = WL_EXCHANGE_AWAITS_CORE;
        return false;
    }
    wl_error_t err;
    wl_error_init(&err);
    int rc = wl_admission_decide(access->core, ex->admission, &err);
    follow(ex);
    if (rc == 0)
        return true;
    answer_refusal(access, ex, &err);
    return false;
}

bool wl_access_begin(const wl_access_t *access, wl_exchange_t *ex, wl_span_t token,
                     const wl_method_policy_t *policy, bool may_defer)
{
    /* Begun again where it may wait (exchange.h): the admission already made is the one. */
    ex->scope_needed = policy->scope;
    if (ex->admission == NULL)
        ex->admission = wl_core_admission(access->core, &ex->arena, token, policy);
    if (ex->admission == NULL) {
        access->answer(ex, 500, WL_GRPC_INTERNAL, WL_REASON_INTERNAL, NULL, NULL);
        return false;
    }
    /* A client that waits for 100 Continue before its body is owed a refusal instead, so its
     * admission is not deferred (libmicrohttpd sends 100 as soon as the body is wanted). */
    if (may_defer && policy->admits_with_work && wl_admission_pending(ex->admission) &&
        wl_exchange_header(ex, "Expect") == NULL) {
        if (wl_anon_limiter_would_allow(access->anonymous, wl_exchange_client_addr(ex)))
            return true;
    }
    return wl_access_admitted(access, ex);
}
