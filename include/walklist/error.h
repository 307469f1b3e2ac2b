/*
 * Error codes and the caller-provided error record of the walklist core.
 *
 * Functions that can fail return 0 or a negative WL_E* code. Each code has a
 * message and a gRPC status; transports map the gRPC status to their own
 * (HTTP, Connect). Validation failures also collect field violations that
 * the gateway returns as google.rpc.BadRequest details.
 */
#ifndef WALKLIST_ERROR_H
#define WALKLIST_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#if defined(__GNUC__)
#define WL_CHECK_RESULT __attribute__((warn_unused_result))
#define WL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define WL_CHECK_RESULT
#define WL_PRINTF(f, a)
#endif

/* gRPC status codes, numbered as in google.rpc.Code. */
#define WL_GRPC_CODE_MAP(XX)                                                                       \
    XX(OK, 0, "ok")                                                                                \
    XX(CANCELLED, 1, "canceled")                                                                   \
    XX(UNKNOWN, 2, "unknown")                                                                      \
    XX(INVALID_ARGUMENT, 3, "invalid_argument")                                                    \
    XX(DEADLINE_EXCEEDED, 4, "deadline_exceeded")                                                  \
    XX(NOT_FOUND, 5, "not_found")                                                                  \
    XX(ALREADY_EXISTS, 6, "already_exists")                                                        \
    XX(PERMISSION_DENIED, 7, "permission_denied")                                                  \
    XX(RESOURCE_EXHAUSTED, 8, "resource_exhausted")                                                \
    XX(FAILED_PRECONDITION, 9, "failed_precondition")                                              \
    XX(ABORTED, 10, "aborted")                                                                     \
    XX(OUT_OF_RANGE, 11, "out_of_range")                                                           \
    XX(UNIMPLEMENTED, 12, "unimplemented")                                                         \
    XX(INTERNAL, 13, "internal")                                                                   \
    XX(UNAVAILABLE, 14, "unavailable")                                                             \
    XX(DATA_LOSS, 15, "data_loss")                                                                 \
    XX(UNAUTHENTICATED, 16, "unauthenticated")

typedef enum {
#define XX(name, value, connect_name) WL_GRPC_##name = value,
    WL_GRPC_CODE_MAP(XX)
#undef XX
} wl_grpc_code_t;

/* Core error codes: name, gRPC status, default message. */
#define WL_ERRNO_MAP(XX)                                                                           \
    XX(EINVAL, INVALID_ARGUMENT, "invalid argument")                                               \
    XX(ENOTFOUND, NOT_FOUND, "not found")                                                          \
    XX(EUNAUTHENTICATED, UNAUTHENTICATED, "missing or invalid API key")                            \
    XX(EPERMISSION, PERMISSION_DENIED, "the API key lacks the required scope")                     \
    XX(EPRECONDITION, FAILED_PRECONDITION, "failed precondition")                                  \
    XX(EEXISTS, ALREADY_EXISTS, "already exists")                                                  \
    XX(EEXHAUSTED, RESOURCE_EXHAUSTED, "resource exhausted")                                       \
    XX(EUNIMPLEMENTED, UNIMPLEMENTED, "not implemented")                                           \
    XX(EUNAVAILABLE, UNAVAILABLE, "database unavailable")                                          \
    XX(ETIMEDOUT, UNAVAILABLE, "the database did not answer in time")                              \
    XX(ECANCELLED, CANCELLED, "the call was given up by its client")                               \
    XX(ENOMEM, INTERNAL, "out of memory")                                                          \
    XX(EINTERNAL, INTERNAL, "internal error")                                                      \
    XX(EIDEMPOTENCY, FAILED_PRECONDITION, "the Idempotency-Key was used for a different request")  \
    XX(EHISTORY, OUT_OF_RANGE, "the changes since the cursor are no longer kept")

typedef enum {
    WL_OK = 0,
    WL__ERRNO_BASE = -1000,
#define XX(name, grpc, msg) WL_##name,
    WL_ERRNO_MAP(XX)
#undef XX
} wl_errno_t;

#define WL_MAX_VIOLATIONS 32

typedef struct {
    char field[64];
    char description[192];
} wl_field_violation_t;

/**
 * The first error of an operation (sticky: later errors do not overwrite it),
 * plus every field violation found while validating. Caller-allocated;
 * initialise with wl_error_init().
 */
typedef struct {
    int code; /* 0 or WL_E* */
    char message[256];
    size_t violation_count;    /* entries used in violations */
    size_t violations_dropped; /* violations beyond WL_MAX_VIOLATIONS */
    wl_field_violation_t violations[WL_MAX_VIOLATIONS];
} wl_error_t;

void wl_error_init(wl_error_t *err);

/** Records code and message unless an error is already recorded. Returns code. */
int wl_error_set(wl_error_t *err, int code, const char *fmt, ...) WL_PRINTF(3, 4);

/**
 * Adds a field violation (field path in lowerCamelCase, e.g. "codes[3]") and
 * makes the error WL_EINVAL with message "invalid request" unless an error is
 * already recorded. Returns WL_EINVAL.
 */
int wl_error_add_violation(wl_error_t *err, const char *field, const char *fmt, ...)
    WL_PRINTF(3, 4);

/** Message of a WL_E* code ("unknown error" for anything else). */
const char *wl_strerror(int code);

/** gRPC status of a WL_E* code (WL_GRPC_OK for 0, INTERNAL for unknown codes). */
wl_grpc_code_t wl_error_grpc_code(int code);

/** Upper-case gRPC code name, e.g. "INVALID_ARGUMENT". */
const char *wl_grpc_code_name(wl_grpc_code_t code);

/** Connect protocol code name, e.g. "invalid_argument". */
const char *wl_grpc_connect_name(wl_grpc_code_t code);

#endif
