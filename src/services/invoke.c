/* Invoking a service method, through the core's API or protobuf-c's RPC interface, happens
 * here: the admission, the scope, then the method. */
#include <string.h>

#include "services/services.h"
#include "store/db.h"

/* The call, where it may wait or (may_wait false) as far as it goes without waiting: then
 * WL__EWOULDWAIT where it would (services.h). */
static int invoke(wl_call_t *call, const wl_service_entry_t *service, unsigned method_index,
                  const ProtobufCMessage *input, bool may_wait)
{
    if (method_index >= service->descriptor->n_methods)
        return wl_error_set(call->err, WL_EUNIMPLEMENTED, "no such method");
    const wl_method_t *method = service->methods[method_index];
    const wl_method_policy_t *policy = &method->policy;
    /* Only a method that admits with its work waits for nothing but its admission. */
    if (!may_wait && (!policy->admits_with_work || call->admission == NULL))
        return wl__would_wait(call);
    if (call->admission != NULL)
        wl__admission_defer(call->admission, !may_wait);
    if (call->admission != NULL) {
        call->principal = wl_admission_principal(call->admission);
        if ((!policy->admits_with_work || !wl_admission_pending(call->admission)) &&
            wl_admission_decide(call->core, call->admission, call->err) != 0)
            return call->err->code;
    }
    if (call->admission != NULL && wl_admission_pending(call->admission)) {
        /* The method decides the admission with its work, scope included. */
    } else if (call->principal == NULL ||
               (call->principal->scopes & policy->scope) != policy->scope) {
        char needed[64];
        wl_scopes_format(policy->scope, needed, sizeof(needed));
        return wl_error_set(call->err, WL_EPERMISSION, "the API key lacks the scope %s", needed);
    }
    call->reply = NULL;
    wl_db_watch_call(call->gave_up, call->gave_up_data);
    int rc = method->run(call, input, &call->reply);
    wl_db_watch_call(NULL, NULL);
    /* err's code wins over rc: it is the call's first error (sticky), as the transports
     * answer it. */
    if (rc != 0 && call->err->code == 0)
        wl_error_set(call->err, rc, NULL);
    if (call->err->code != 0) {
        call->reply = NULL;
        return call->err->code;
    }
    if (call->reply == NULL)
        return wl_error_set(call->err, WL_EINTERNAL, NULL);
    return 0;
}

int wl_core_invoke(wl_call_t *call, const wl_service_entry_t *service, unsigned method_index,
                   const ProtobufCMessage *input)
{
    return invoke(call, service, method_index, input, true);
}

int wl__would_wait(wl_call_t *call)
{
    return wl_error_set(call->err, WL__EWOULDWAIT, NULL);
}

/* A call run asynchronously, from its start to its completion (arena memory). */
typedef struct {
    wl_job_t job; /* first: run_waiting finds the rest from it */
    wl_call_t *call;
    const wl_service_entry_t *service;
    unsigned method_index;
    const ProtobufCMessage *input;
    wl_completion_t completion;
} async_call_t;

/* On the thread that may wait (completion.run_elsewhere's): the call, from the start. */
static void run_waiting(wl_job_t *job)
{
    async_call_t *async = (async_call_t *)job;
    wl_error_init(async->call->err);
    int rc = invoke(async->call, async->service, async->method_index, async->input, true);
    (void)rc; /* call->err says how it ended */
    async->completion.done(async->completion.data);
}

static void admitted(void *data);

/* Runs the call again from the start, as far as it goes without waiting; true when it
 * finished, false when it waits (in its admission's group, or on a thread that may). */
static bool go_on(async_call_t *async)
{
    wl_call_t *call = async->call;
    wl_error_init(call->err);
    int rc = invoke(call, async->service, async->method_index, async->input, false);
    if (rc != WL__EWOULDWAIT)
        return true;
    if (call->admission != NULL && wl__admission_prepared(call->admission)) {
        wl__admission_queue(call->core, call->admission, admitted, async);
        return false;
    }
    if (async->completion.run_elsewhere != NULL) {
        async->job.run = run_waiting;
        async->completion.run_elsewhere(&async->job, async->completion.executor);
        return false;
    }
    wl_error_init(call->err);
    rc = invoke(call, async->service, async->method_index, async->input, true); /* waits here */
    return true;
}

/* On a committer, once the group of the admission the call stopped at is done: the call runs
 * again and finds its admission answered. */
static void admitted(void *data)
{
    async_call_t *async = data;
    if (go_on(async))
        async->completion.done(async->completion.data);
}

bool wl_core_invoke_async(wl_call_t *call, const wl_service_entry_t *service, unsigned method_index,
                          const ProtobufCMessage *input, const wl_completion_t *completion)
{
    async_call_t *async = wl_arena_alloc(call->arena, sizeof(*async));
    if (async == NULL) {
        wl_error_set(call->err, WL_ENOMEM, NULL);
        return true;
    }
    *async = (async_call_t){.call = call,
                            .service = service,
                            .method_index = method_index,
                            .input = input,
                            .completion = *completion};
    return go_on(async);
}

static void invoke_for_protobuf_c(ProtobufCService *base, unsigned method_index,
                                  const ProtobufCMessage *input, ProtobufCClosure closure,
                                  void *closure_data)
{
    const wl_protobuf_service_t *service = (const wl_protobuf_service_t *)base;
    wl_call_t *call = closure_data;
    int rc = wl_core_invoke(call, service->entry, method_index, input);
    closure(rc == 0 ? call->reply : NULL, closure_data);
}

/* The core owns the service: protobuf_c_service_destroy must not free it. */
static void destroy(ProtobufCService *base)
{
    (void)base;
}

void wl__protobuf_service_init(wl_protobuf_service_t *service, const wl_service_entry_t *entry)
{
    service->base = (ProtobufCService){
        .descriptor = entry->descriptor, .invoke = invoke_for_protobuf_c, .destroy = destroy};
    service->entry = entry;
}
