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

#endif
