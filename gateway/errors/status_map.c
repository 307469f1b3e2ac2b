/* Turning core errors into HTTP statuses and Google API error bodies happens here. */
#include "errors/status_map.h"

#include "walklist/json_writer.h"

unsigned wl_http_status_of(wl_grpc_code_t code)
{
    switch (code) {
    case WL_GRPC_OK:
        return 200;
    case WL_GRPC_CANCELLED:
        return 499;
    case WL_GRPC_INVALID_ARGUMENT:
    case WL_GRPC_FAILED_PRECONDITION:
    case WL_GRPC_OUT_OF_RANGE:
        return 400;
    case WL_GRPC_DEADLINE_EXCEEDED:
        return 504;
    case WL_GRPC_NOT_FOUND:
        return 404;
    case WL_GRPC_ALREADY_EXISTS:
    case WL_GRPC_ABORTED:
        return 409;
    case WL_GRPC_PERMISSION_DENIED:
        return 403;
    case WL_GRPC_UNAUTHENTICATED:
        return 401;
    case WL_GRPC_RESOURCE_EXHAUSTED:
        return 429;
    case WL_GRPC_UNIMPLEMENTED:
        return 501;
    case WL_GRPC_UNAVAILABLE:
        return 503;
    case WL_GRPC_UNKNOWN:
    case WL_GRPC_INTERNAL:
    case WL_GRPC_DATA_LOSS:
        return 500;
    }
    return 500;
}

json_t *wl_error_body(unsigned http_status, wl_grpc_code_t code, const char *message,
                      const wl_error_t *err, const wl_error_info_t *info)
{
    json_t *details = json_array();
    if (err != NULL && err->violation_count > 0) {
        json_t *violations = json_array();
        for (size_t i = 0; i < err->violation_count; i++) {
            json_array_append_new(violations,
                                  json_pack("{s:s, s:s}", "field", err->violations[i].field,
                                            "description", err->violations[i].description));
        }
        json_array_append_new(details, json_pack("{s:s, s:o}", "@type",
                                                 "type.googleapis.com/google.rpc.BadRequest",
                                                 "fieldViolations", violations));
    }
    json_array_append_new(details, wl_error_info_json(info));
    /* Internal errors never show internals. */
    const char *text = message;
    if (code == WL_GRPC_INTERNAL || code == WL_GRPC_UNKNOWN || code == WL_GRPC_DATA_LOSS)
        text = "internal error";
    else if (text == NULL && err != NULL && err->message[0] != '\0')
        text = err->message;
    if (text == NULL)
        text = "error";
    return json_pack("{s:{s:i, s:s, s:s, s:o}}", "error", "code", (int)http_status, "status",
                     wl_grpc_code_name(code), "message", text, "details", details);
}

size_t wl_error_body_plain(char *buf, size_t size, unsigned http_status, wl_grpc_code_t code,
                           wl_reason_t reason, const char *message)
{
    wl_json_writer_t w;
    wl_json_writer_init(&w, buf, size > 0 ? size - 1 : 0, 0);
    wl_json_open_object(&w);
    wl_json_key(&w, "error");
    wl_json_open_object(&w);
    wl_json_key(&w, "code");
    wl_json_int(&w, http_status);
    wl_json_key(&w, "status");
    wl_json_cstring(&w, wl_grpc_code_name(code));
    wl_json_key(&w, "message");
    wl_json_cstring(&w, message);
    wl_json_key(&w, "details");
    wl_json_open_array(&w);
    wl_json_open_object(&w);
    wl_json_key(&w, "@type");
    wl_json_cstring(&w, "type.googleapis.com/google.rpc.ErrorInfo");
    wl_json_key(&w, "reason");
    wl_json_cstring(&w, wl_reason_name(reason));
    wl_json_key(&w, "domain");
    wl_json_cstring(&w, WL_ERROR_DOMAIN);
    wl_json_key(&w, "metadata");
    wl_json_open_object(&w);
    wl_json_close_object(&w);
    wl_json_close_object(&w);
    wl_json_close_array(&w);
    wl_json_close_object(&w);
    wl_json_close_object(&w);
    if (!wl_json_ok(&w))
        return 0;
    buf[w.len] = '\0';
    return w.len;
}
