/*
 * From core errors to HTTP: the standard gRPC-to-HTTP status table (as
 * grpc-gateway and Connect use it) and the Google API error body
 * {"error":{"code","status","message","details":[google.rpc.BadRequest, google.rpc.ErrorInfo]}}.
 */
#ifndef WALKLIST_GATEWAY_STATUS_MAP_H
#define WALKLIST_GATEWAY_STATUS_MAP_H

#include <jansson.h>

#include "errors/error_info.h"
#include "walklist/error.h"

/** HTTP status for a gRPC code. */
unsigned wl_http_status_of(wl_grpc_code_t code);

/**
 * The error body for an HTTP status, its gRPC code, and err (message and
 * field violations; may be NULL, then message is used): details hold the
 * BadRequest of err's violations, when it has any, then info's ErrorInfo.
 * Caller owns the result.
 */
json_t *wl_error_body(unsigned http_status, wl_grpc_code_t code, const char *message,
                      const wl_error_t *err, const wl_error_info_t *info);

/**
 * The same body without field violations or metadata, written without allocating (the JSON
 * writer, into buf of size bytes, NUL-terminated): for answers that must go out when nothing
 * can be allocated, or that are written outside any request. Its length; 0 when it does not fit.
 */
size_t wl_error_body_plain(char *buf, size_t size, unsigned http_status, wl_grpc_code_t code,
                           wl_reason_t reason, const char *message);

#endif
