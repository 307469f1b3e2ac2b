/* Invoking a service method, through the core's API or protobuf-c's RPC interface, happens
 * here: the admission, the scope, then the method. */
#include <string.h>

#include "services/services.h"
#include "store/db.h"

int wl_core_invoke(wl_call_t *call, const wl_service_entry_t *service, unsigned method_index,
                   const ProtobufCMessage *input)
{
    if (method_index >= service->descriptor->n_methods)
        return wl_error_set(call->err, WL_EUNIMPLEMENTED, "no such method");
    const wl_method_t *method = service->methods[method_index];
    const wl_method_policy_t *policy = &method->policy;
    /* Only a method that admits with its work waits for nothing but its admission. */
    if (call->defer_admission && (!policy->admits_with_work || call->admission == NULL))
        return wl__would_wait(call);
    if (call->admission != NULL)
        wl_admission_defer(call->admission, call->defer_admission);
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

int wl__would_wait(wl_call_t *call)
{
    return wl_error_set(call->err, WL_EWOULDWAIT, NULL);
}

static void invoke(ProtobufCService *base, unsigned method_index, const ProtobufCMessage *input,
                   ProtobufCClosure closure, void *closure_data)
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
    service->base =
        (ProtobufCService){.descriptor = entry->descriptor, .invoke = invoke, .destroy = destroy};
    service->entry = entry;
}
