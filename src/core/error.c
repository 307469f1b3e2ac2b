/* Error codes, their messages and gRPC mapping, and the sticky error record live here. */
#include "walklist/error.h"

#include <stdio.h>
#include <string.h>

void wl_error_init(wl_error_t *err)
{
    /* Only the header: violations are read up to violation_count, and clearing all of them
     * (several KiB) for every error record made up a visible part of a request's cost. */
    err->code = 0;
    err->message[0] = '\0';
    err->violation_count = 0;
    err->violations_dropped = 0;
}

static void set_message(wl_error_t *err, const char *fmt, va_list ap)
{
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
}

int wl_error_set(wl_error_t *err, int code, const char *fmt, ...)
{
    if (err == NULL || err->code != 0)
        return code;
    err->code = code;
    if (fmt == NULL) {
        snprintf(err->message, sizeof(err->message), "%s", wl_strerror(code));
        return code;
    }
    va_list ap;
    va_start(ap, fmt);
    set_message(err, fmt, ap);
    va_end(ap);
    return code;
}

int wl_error_add_violation(wl_error_t *err, const char *field, const char *fmt, ...)
{
    if (err == NULL)
        return WL_EINVAL;
    if (err->code == 0) {
        err->code = WL_EINVAL;
        snprintf(err->message, sizeof(err->message), "invalid request");
    }
    if (err->violation_count == WL_MAX_VIOLATIONS) {
        err->violations_dropped++;
        return WL_EINVAL;
    }
    wl_field_violation_t *v = &err->violations[err->violation_count++];
    snprintf(v->field, sizeof(v->field), "%s", field);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->description, sizeof(v->description), fmt, ap);
    va_end(ap);
    return WL_EINVAL;
}

const char *wl_strerror(int code)
{
    switch (code) {
    case WL_OK:
        return "ok";
#define XX(name, grpc, msg)                                                                        \
    case WL_##name:                                                                                \
        return msg;
        WL_ERRNO_MAP(XX)
#undef XX
    default:
        return "unknown error";
    }
}

wl_grpc_code_t wl_error_grpc_code(int code)
{
    switch (code) {
    case WL_OK:
        return WL_GRPC_OK;
#define XX(name, grpc, msg)                                                                        \
    case WL_##name:                                                                                \
        return WL_GRPC_##grpc;
        WL_ERRNO_MAP(XX)
#undef XX
    default:
        return WL_GRPC_INTERNAL;
    }
}

const char *wl_grpc_code_name(wl_grpc_code_t code)
{
    switch (code) {
#define XX(name, value, connect_name)                                                              \
    case WL_GRPC_##name:                                                                           \
        return #name;
        WL_GRPC_CODE_MAP(XX)
#undef XX
    }
    return "UNKNOWN";
}

const char *wl_grpc_connect_name(wl_grpc_code_t code)
{
    switch (code) {
#define XX(name, value, connect_name)                                                              \
    case WL_GRPC_##name:                                                                           \
        return connect_name;
        WL_GRPC_CODE_MAP(XX)
#undef XX
    }
    return "unknown";
}
