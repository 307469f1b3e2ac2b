/*
 * The internal RPC transport for services that speak protobuf: every method of every core
 * service over the Connect protocol (connectrpc.com/docs/protocol), unary (a method whose
 * policy says server_streaming is a Connect server stream: application/connect+proto or
 * +json, one enveloped request message, answered 200 with enveloped messages and the
 * end-stream message, errors included; watch_stream.h), as
 * POST /<package>.<Service>/<Method> with application/proto or application/json
 * bodies (or, for a unary method its proto marks idempotency_level = NO_SIDE_EFFECTS, the
 * protocol's GET form with the message in the query: connect_get.h), Bearer keys, and
 * Connect's error JSON. The procedures are the core
 * registry's service descriptors, read once at startup: a method added to a
 * core service is served here without a line of this module changing.
 *
 * Our choices within the protocol:
 * - Connect-Protocol-Version: 1 is required (the protocol lets servers reject
 *   traffic without it, with 400); stock Connect clients always send it.
 * - Connect-Timeout-Ms (1 to 10 digits; 0 is a deadline already passed) sets a
 *   deadline from the arrival of the request headers. It is checked before
 *   the method runs and again after it: a call whose deadline passed answers
 *   deadline_exceeded, even when the method completed (as the protocol
 *   allows). The deadline does not shorten database statements inside the
 *   core, whose own statement timeout still applies.
 * - Request bodies up to WL_CONNECT_BODY_LIMIT in either codec, else 413 with
 *   code resource_exhausted (the code Connect implementations give a message
 *   over their read limit); the reply's binary encoding up to
 *   WL_CONNECT_REPLY_LIMIT in either codec, else resource_exhausted (429).
 * - Every error's HTTP status comes from Connect's code table, except four
 *   answers decided by the HTTP request itself before its message is read,
 *   which use the HTTP status for exactly that case (so that nothing in
 *   between takes them for, say, a rate limit worth retrying) with the Connect
 *   code a client infers from it or the REST error table names: unknown procedure
 *   404 unimplemented, wrong method 405 unimplemented (with Allow: POST, or GET, POST where
 *   the GET form is served), body
 *   too large 413 resource_exhausted, unsupported Content-Type 415
 *   invalid_argument (with Accept-Post).
 * - gzip and identity: a unary request body in Content-Encoding gzip is inflated under
 *   WL_CONNECT_BODY_LIMIT counted on the inflated bytes (past it 413 resource_exhausted, as a
 *   body over the limit; corrupt gzip 400 invalid_argument); a unary answer of 1 KiB and more
 *   goes gzip-coded when Accept-Encoding takes gzip (error bodies stay identity). Another
 *   coding is unimplemented (501), with Accept-Encoding: gzip. A server stream does the same
 *   per message with Connect-Content-Encoding and Connect-Accept-Encoding: a request envelope
 *   flagged compressed (0x01) is inflated under the same limit, and each message of 1 KiB and
 *   more goes compressed (the end-stream message never does); its errors end the stream.
 * - api_key query parameters are never read: only Authorization: Bearer.
 * - The GET form: connect=v1 stands in for Connect-Protocol-Version and is required (400
 *   without it); the message is read from the query (percent-encoded, or base64=1; a
 *   compression=gzip message inflated under WL_CONNECT_BODY_LIMIT as a body is); same
 *   admission, codecs and errors as POST. Answers carry a validator and cache headers
 *   (connect_get.h); If-None-Match of a versioned reply (ExportStock) is answered 304 from
 *   the version alone, of any other after the call, from its bytes.
 */
#ifndef WALKLIST_GATEWAY_CONNECT_H
#define WALKLIST_GATEWAY_CONNECT_H

#include <stdbool.h>
#include <time.h>

#include "http/anon_limit.h"
#include "http/exchange.h"
#include "protocols/rpc.h"
#include "export/stock_watch.h"
#include "protocols/connect_wire.h"
#include "walklist/core.h"

/* Request bodies and replies (binary encoding) in either codec: the limits of every RPC
 * transport (rpc.h). Bodies are read only for an authenticated key with the method's scope. */
#define WL_CONNECT_BODY_LIMIT  WL_RPC_REQUEST_LIMIT
#define WL_CONNECT_REPLY_LIMIT WL_RPC_REPLY_LIMIT

typedef struct wl_connect wl_connect_t;

/**
 * Builds the procedure table from the core's services. anonymous is the
 * per-address limiter of requests without a valid key, shared with the REST
 * routes so that both transports count against one limit; it must outlive
 * the transport.
 */
int wl_connect_create(wl_core_t *core, wl_anon_limiter_t *anonymous, wl_stock_watch_t *watch,
                      wl_connect_t **out, wl_error_t *err) WL_CHECK_RESULT;
void wl_connect_destroy(wl_connect_t *connect);

/**
 * Called once the request headers are in. Either sets a response (route,
 * method, key, scope, headers refused) or sets ex->body_limit and expects
 * wl_connect_finish (or wl_connect_body_too_large) once the body is read.
 */
void wl_connect_begin(wl_connect_t *connect, wl_exchange_t *ex);

/** Called with the whole body read: decodes, invokes the method, sets the response. */
void wl_connect_finish(wl_connect_t *connect, wl_exchange_t *ex);

/** Answers a body that turned out longer than ex->body_limit (chunked uploads). */
void wl_connect_body_too_large(wl_connect_t *connect, wl_exchange_t *ex);

/**
 * Parses a Connect-Timeout-Ms value (1 to 10 ASCII digits, nothing else): true with *deadline
 * set to start plus that many milliseconds (tv_nsec normalised), false for anything else.
 */
bool wl_connect_parse_timeout(const char *value, struct timespec start, struct timespec *deadline);

#endif
