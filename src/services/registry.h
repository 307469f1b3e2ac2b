/*
 * The core's registry of service methods. Each service is one table of rows, one row a method:
 * the name its descriptor gives it, its policy (scope, rate bucket, whether it admits with its
 * work) and the plain function that runs it. wl_core_create binds every table to its
 * descriptor by name and refuses to start on any mismatch.
 */
#ifndef WALKLIST_SERVICES_REGISTRY_H
#define WALKLIST_SERVICES_REGISTRY_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

#include "walklist/core.h"

/* A method's function in the form the registry calls: 0 with *reply set (arena memory), or a
 * WL_E* code with call->err filled. Written with WL_METHOD_RUN from a typed function. */
typedef int (*wl_method_run_fn)(wl_call_t *call, const ProtobufCMessage *input,
                                const ProtobufCMessage **reply);

struct wl_method {
    const char *name; /* as in the service descriptor: "CreateLocateList" */
    wl_method_policy_t policy;
    wl_method_run_fn run;
};

/* A service's rows, in any order: they are matched with the descriptor by name. */
typedef struct {
    const ProtobufCServiceDescriptor *descriptor;
    const wl_method_t *methods;
    size_t method_count;
} wl_service_table_t;

/*
 * Defines fn_run, the registry's form of fn, a method written with its own message types:
 *
 *     static int get_locate_list(wl_call_t *call, const Walklist__V1__GetLocateListRequest *in,
 *                                Walklist__V1__LocateList **reply);
 *     WL_METHOD_RUN(get_locate_list, Walklist__V1__GetLocateListRequest, Walklist__V1__LocateList)
 *     ... {.name = "GetLocateList", .run = get_locate_list_run, .policy = {...}},
 *
 * so that fn keeps its types checked by the compiler (calling it through a cast function
 * pointer instead would be undefined behaviour). *reply is set only on success.
 */
#define WL_METHOD_RUN(fn, Input, Output)                                                           \
    static int fn##_run(wl_call_t *call, const ProtobufCMessage *input,                            \
                        const ProtobufCMessage **reply)                                            \
    {                                                                                              \
        Output *typed = NULL;                                                                      \
        int rc = fn(call, (const Input *)input, &typed);                                           \
        if (rc == 0)                                                                               \
            *reply = (const ProtobufCMessage *)typed;                                              \
        return rc;                                                                                 \
    }

/**
 * Binds a table to its descriptor: by_index[m] (room for descriptor->n_methods) receives the
 * row of the descriptor's method m. WL_EINTERNAL, naming the service and the method, when a
 * row names no method of the descriptor, two rows name the same method, a row has no function,
 * or a method has no row (so the counts differ exactly when one of these holds).
 */
int wl__service_table_bind(const wl_service_table_t *table, const wl_method_t **by_index,
                           wl_error_t *err) WL_CHECK_RESULT;

/** The row named name in table (a linear search: for calls off the request path); NULL when
 * none. */
const wl_method_t *wl__service_table_find(const wl_service_table_t *table, const char *name);

#endif
