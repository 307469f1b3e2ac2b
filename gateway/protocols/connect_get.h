/*
 * Connect's GET form of a unary call (the protocol's Unary-Get-Request), for procedures whose
 * proto says idempotency_level = NO_SIDE_EFFECTS: the request message travels in the query,
 *
 *     GET /<package>.<Service>/<Method>?connect=v1&encoding=json|proto&message=...
 *         [&base64=1][&compression=gzip|identity]
 *
 * in any order and among other parameters, which are ignored. Reading that query, and making
 * the answer one an HTTP cache may keep and revalidate: a validator (ETag), Cache-Control and
 * Vary, and 304 for If-None-Match. No I/O: the caller runs the call between the two.
 */
#ifndef WALKLIST_GATEWAY_CONNECT_GET_H
#define WALKLIST_GATEWAY_CONNECT_GET_H

#include <stdbool.h>
#include <stddef.h>

#include "http/exchange.h"
#include "walklist/arena.h"
#include "walklist/core.h"
#include "walklist/span.h"

/* What a GET answer says to caches: every answer is the key's organization's, so shared
 * caches keep none (private, as they keep no answer to an Authorization without it anyway);
 * the client's own cache keeps it but asks again each time (no-cache), with If-None-Match. */
#define WL_CONNECT_GET_CACHE_CONTROL "private, no-cache"
#define WL_CONNECT_GET_VARY          "Authorization, Accept-Encoding"

/** How the query of a GET call was read, in the order its problems are answered. */
typedef enum {
    WL_CONNECT_GET_READ,        /* *out holds the call */
    WL_CONNECT_GET_INVALID,     /* a bad escape, a repeated parameter of the protocol (400) */
    WL_CONNECT_GET_CODEC,       /* encoding missing, or neither json nor proto (415) */
    WL_CONNECT_GET_VERSION,     /* connect missing, or not v1 (400) */
    WL_CONNECT_GET_COMPRESSION, /* compression neither gzip nor identity (unimplemented) */
    WL_CONNECT_GET_MESSAGE,     /* message missing, or base64=1 with a message that is not (400) */
    WL_CONNECT_GET_NO_MEMORY,
} wl_connect_get_result_t;

typedef struct {
    bool json;           /* encoding=json; else proto */
    bool gzip;           /* compression=gzip: the message is to be inflated */
    wl_span_t message;   /* percent-decoded, then base64-decoded with base64=1 (arena memory) */
    const char *problem; /* what is wrong, for the error answer (static memory) */
} wl_connect_get_t;

/**
 * Reads the raw query of a GET call (after '?'). base64=1 takes URL-safe base64 (RFC 4648
 * section 5, the standard alphabet too), padded or not; another base64 value is ignored, as
 * the protocol says. A zero-length message is the empty message.
 */
wl_connect_get_result_t wl_connect_get_read(wl_span_t query, wl_arena_t *arena,
                                            wl_connect_get_t *out);

/**
 * The weak validator of a reply that has a version of its own (the stock export's, which
 * changes exactly when an exported value does): W/"<org_id>-<version>", with "-since-<version>"
 * for a delta, the tag of GET /api/v1/stock-export made weak (the reply's generatedAt differs
 * from one snapshot to the next). Written into tag (size bytes); false for a procedure (path)
 * without a version, or when the version cannot be read without waiting.
 */
bool wl_connect_get_version_tag(wl_core_t *core, const char *path, const wl_principal_t *principal,
                                const ProtobufCMessage *input, const ProtobufCMessage *reply,
                                char *tag, size_t size);

/** Whether the reply of the procedure (path) has a version (wl_connect_get_version_tag). */
bool wl_connect_get_versioned(const char *path);

/**
 * Before a conditional GET's admission is decided: asks it for what the versioned procedure's
 * current tag needs (the stock export's version, wl_admission_read_export_version), so that
 * its group reads that too. Nothing for another procedure.
 */
void wl_connect_get_admit(wl_core_t *core, const char *path, wl_admission_t *admission);

typedef enum {
    WL_CONNECT_TAG_READ,  /* tag holds it */
    WL_CONNECT_TAG_NONE,  /* no version, or it cannot be read: the call runs, and answers */
    WL_CONNECT_TAG_WAITS, /* reading it would wait for the database, and the caller may not */
} wl_connect_tag_t;

/**
 * The validator the reply of a versioned procedure would have now, read without running the
 * call (the stock export's: its version, from the admission's group when it was asked there,
 * else one statement), so that a conditional GET is answered 304 as GET /api/v1/stock-export
 * answers it. Waits for the database only with may_wait.
 */
wl_connect_tag_t wl_connect_get_current_tag(wl_core_t *core, const char *path,
                                            const wl_admission_t *admission,
                                            const wl_principal_t *principal,
                                            const ProtobufCMessage *input, bool may_wait, char *tag,
                                            size_t size);

/** Sets 304 Not Modified with tag and the cache headers of a GET answer. */
void wl_connect_get_not_modified(wl_exchange_t *ex, const char *tag);

/**
 * Sets the answer of a GET call whose reply is body (len bytes of content_type, arena memory):
 * gzip-coded when it is worth it and Accept-Encoding takes gzip, with ETag (version_tag, or
 * else a strong tag of the body's SHA-256, "-gzip" added for the coded bytes), Cache-Control
 * and Vary; 304 without content when If-None-Match matches the tag. False when out of memory.
 */
bool wl_connect_get_answer(wl_exchange_t *ex, const char *content_type, char *body, size_t len,
                           const char *version_tag);

#endif
