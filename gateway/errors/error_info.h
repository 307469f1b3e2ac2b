/*
 * The machine-readable half of every error answer: a google.rpc.ErrorInfo whose reason comes
 * from one enum (below), in the domain WL_ERROR_DOMAIN, with metadata where it helps (the
 * bucket and limit of RATE_LIMITED, the scope of SCOPE_MISSING). Each transport sends the
 * same ErrorInfo for the same case, whatever HTTP status and code its protocol gives it: REST
 * in the error JSON's details, Connect in its error's details, gRPC in grpc-status-details-bin.
 * Clients key on the reason. The table of docs/api.md ("Errors") and the ErrorInfo schema of
 * gateway/openapi.json list the same reasons (e2e.test_openapi checks both).
 */
#ifndef WALKLIST_GATEWAY_ERROR_INFO_H
#define WALKLIST_GATEWAY_ERROR_INFO_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "walklist/arena.h"

#define WL_ERROR_DOMAIN "walklist.dev"

/* Every reason an answer gives, in UPPER_SNAKE_CASE; stable: a reason is never renamed or
 * reused for another case. The comment of each says where it is decided. */
#define WL_REASON_MAP(XX)                                                                          \
    XX(API_KEY_MISSING)              /* no Authorization header, or another scheme than Bearer */  \
    XX(API_KEY_INVALID)              /* a malformed, unknown or revoked key */                     \
    XX(API_KEY_AMBIGUOUS)            /* api_key more than once, or beside the header */            \
    XX(SCOPE_MISSING)                /* the key lacks the method's scope */                        \
    XX(RATE_LIMITED)                 /* the key's bucket, or the per-address limit, is full */     \
    XX(BODY_TOO_LARGE)               /* the request body or message is over its limit */           \
    XX(REPLY_TOO_LARGE)              /* an RPC reply would be over its limit */                    \
    XX(HEADERS_TOO_LARGE)            /* a header field line or the header block is too large */    \
    XX(UNSUPPORTED_MEDIA_TYPE)       /* a Content-Type the endpoint does not take */               \
    XX(CONTENT_ENCODING_UNSUPPORTED) /* a Connect Content-Encoding other than identity */          \
    XX(TRANSFER_CODING_UNSUPPORTED)  /* a transfer coding other than chunked */                    \
    XX(MALFORMED_REQUEST)            /* an HTTP request head that cannot be trusted */             \
    XX(PROTOCOL_HEADER_INVALID)      /* Connect-Protocol-Version (connect=v1), timeout wrong */    \
    XX(INVALID_REQUEST)              /* the request's content is invalid (BadRequest details) */   \
    XX(ENDPOINT_NOT_FOUND)           /* no such path, procedure or gRPC method */                  \
    XX(METHOD_NOT_ALLOWED)           /* the path exists for other HTTP methods */                  \
    XX(NOT_FOUND)                    /* no such resource (id, reservation, service) */             \
    XX(ALREADY_EXISTS)               /* the resource exists already */                             \
    XX(FAILED_PRECONDITION)          /* the resource is not in a state that allows it */           \
    XX(IDEMPOTENCY_KEY_REUSED)       /* the Idempotency-Key was used for another request */        \
    XX(NOT_IMPLEMENTED)              /* the core does not implement it */                          \
    XX(CURSOR_EXPIRED)               /* a delta export's changes since the cursor are not kept */  \
    XX(STREAM_STALLED)               /* a stream's client read nothing for too long */             \
    XX(DATABASE_UNAVAILABLE)         /* the database cannot be reached */                          \
    XX(DATABASE_TIMEOUT)             /* the database did not answer in time */                     \
    XX(SHUTTING_DOWN)                /* the server is stopping: not served, retry elsewhere */     \
    XX(DEADLINE_EXCEEDED)            /* the RPC's deadline passed */                               \
    XX(CANCELLED)                    /* the client cancelled the call */                           \
    XX(INTERNAL)                     /* anything else; the message shows no internals */

typedef enum {
#define XX(name) WL_REASON_##name,
    WL_REASON_MAP(XX)
#undef XX
        WL_REASON_COUNT
} wl_reason_t;

/** The reason's name, e.g. "RATE_LIMITED" (static). */
const char *wl_reason_name(wl_reason_t reason);

/** The reason of a core error (WL_E* code), as the core decided it. */
wl_reason_t wl_reason_of_error(int code);

/* The metadata of one answer: a few short key/value pairs (keys lowerCamelCase). */
#define WL_ERROR_INFO_MAX_METADATA 4

typedef struct {
    wl_reason_t reason;
    struct {
        char key[24];
        char value[64];
    } metadata[WL_ERROR_INFO_MAX_METADATA];
    size_t metadata_count;
} wl_error_info_t;

/** Adds a metadata pair (value formatted as printf; cut to fit; dropped past the maximum). */
void wl_error_info_add(wl_error_info_t *info, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** The ErrorInfo as a REST error detail: {"@type", "reason", "domain", "metadata"}. */
json_t *wl_error_info_json(const wl_error_info_t *info);

/** The ErrorInfo in binary (arena memory, *len bytes); NULL when out of memory. */
uint8_t *wl_error_info_pack(const wl_error_info_t *info, wl_arena_t *arena, size_t *len);

#endif
