/*
 * Result codes of the scanner firmware library (walklist/scanner_*.h): 0 is success, every
 * failure a negative WL_SCANNER_E... code. The codes from -20 down say what the server
 * answered (the "status" of its error JSON, a gRPC code name), so firmware can act on them
 * without reading JSON: retry later on RESOURCE_EXHAUSTED and UNAVAILABLE, ask for a new key
 * on UNAUTHENTICATED, drop the list from the screen on NOT_FOUND and FAILED_PRECONDITION
 * (another device loaded it). Pure C11, no I/O, no heap.
 */
#ifndef WALKLIST_SCANNER_STATUS_H
#define WALKLIST_SCANNER_STATUS_H

/* XX(name, value, description): failures on this side of the connection. */
#define WL_SCANNER_LOCAL_MAP(XX)                                                                   \
    XX(EARGUMENT, -1, "argument out of bounds")                                                    \
    XX(EBUFFER, -2, "buffer too small")                                                            \
    XX(EDECODE, -3, "malformed response")                                                          \
    XX(ESTOPPED, -4, "stopped by the handler")                                                     \
    XX(EHTTP, -5, "malformed HTTP response")                                                       \
    XX(ECLOSED, -6, "the connection ended before the response did")                                \
    XX(ERECV, -7, "receive failed")                                                                \
    XX(ECONTENT_TYPE, -8, "the response is not application/proto")                                 \
    XX(ETOO_LARGE, -9, "the response is too large")

/*
 * XX(name, value, HTTP status, description): the server's answers, by the gRPC code name in
 * the error JSON's "status". The HTTP status is the one that alone identifies the code (0: it
 * shares its status with another code), used when the body names no known code.
 */
#define WL_SCANNER_SERVER_MAP(XX)                                                                  \
    XX(INVALID_ARGUMENT, -20, 400, "the server refused the request as invalid")                    \
    XX(UNAUTHENTICATED, -21, 401, "the key is missing, invalid or revoked")                        \
    XX(PERMISSION_DENIED, -22, 403, "the key lacks the scanner scope")                             \
    XX(NOT_FOUND, -23, 404, "no such list")                                                        \
    XX(FAILED_PRECONDITION, -24, 0, "the list is no longer pending (loaded by another device)")    \
    XX(RESOURCE_EXHAUSTED, -25, 429, "rate limited: retry after retry_after seconds")              \
    XX(UNIMPLEMENTED, -26, 405, "the server does not offer this method")                           \
    XX(INTERNAL, -27, 500, "the server failed")                                                    \
    XX(UNAVAILABLE, -28, 503, "the server is unavailable: retry after retry_after seconds")        \
    XX(DEADLINE_EXCEEDED, -29, 504, "the server ran out of time")                                  \
    XX(SERVER, -30, 0, "the server answered with another error")

typedef enum {
    WL_SCANNER_OK = 0,
#define WL_SCANNER_LOCAL_ENUM(name, value, text) WL_SCANNER_##name = value,
    WL_SCANNER_LOCAL_MAP(WL_SCANNER_LOCAL_ENUM)
#undef WL_SCANNER_LOCAL_ENUM
#define WL_SCANNER_SERVER_ENUM(name, value, http, text) WL_SCANNER_E##name = value,
        WL_SCANNER_SERVER_MAP(WL_SCANNER_SERVER_ENUM)
#undef WL_SCANNER_SERVER_ENUM
} wl_scanner_status_t;

/** A short English description of a result code ("ok", "malformed response", ...). */
const char *wl_scanner_strerror(int status);

/** True for the codes that come from the server's answer (-20 and below). */
static inline int wl_scanner_is_server_error(int status)
{
    return status <= WL_SCANNER_EINVALID_ARGUMENT;
}

#endif
