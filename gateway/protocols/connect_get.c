/* Reading Connect's GET form of a call and making its answer cacheable happens here. */
#include "protocols/connect_get.h"

#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "http/gzip_filter.h"
#include "http/negotiate.h"
#include "http/query.h"
#include "walklist/base64.h"
#include "walklist/v1/stock.pb-c.h"

/* The protocol's parameters: each at most once (two would leave the call ambiguous). */
static const char *const protocol_parameters[] = {"connect", "encoding", "message", "base64",
                                                  "compression"};

static bool span_is(const wl_span_t *value, const char *text)
{
    return value != NULL && wl_span_eq(*value, wl_span_str(text));
}

static wl_connect_get_result_t refuse(wl_connect_get_t *out, wl_connect_get_result_t result,
                                      const char *problem)
{
    out->problem = problem;
    return result;
}

wl_connect_get_result_t wl_connect_get_read(wl_span_t raw, wl_arena_t *arena, wl_connect_get_t *out)
{
    *out = (wl_connect_get_t){0};
    wl_error_t err;
    wl_error_init(&err);
    wl_query_t query;
    int rc = wl_query_parse(raw, arena, &query, &err);
    if (rc == WL_ENOMEM)
        return WL_CONNECT_GET_NO_MEMORY;
    if (rc != 0)
        return refuse(out, WL_CONNECT_GET_INVALID, "the query has a malformed percent escape");
    for (size_t i = 0; i < sizeof(protocol_parameters) / sizeof(protocol_parameters[0]); i++) {
        if (wl_query_count(&query, protocol_parameters[i]) > 1)
            return refuse(out, WL_CONNECT_GET_INVALID,
                          "each of connect, encoding, message, base64 and compression may be "
                          "given once");
    }
    const wl_span_t *encoding = wl_query_get(&query, "encoding");
    out->json = span_is(encoding, "json");
    if (!out->json && !span_is(encoding, "proto"))
        return refuse(out, WL_CONNECT_GET_CODEC,
                      "the query parameter encoding must be json or proto");
    if (!span_is(wl_query_get(&query, "connect"), "v1"))
        return refuse(out, WL_CONNECT_GET_VERSION,
                      "missing required query parameter: set connect to \"v1\"");
    const wl_span_t *compression = wl_query_get(&query, "compression");
    out->gzip = span_is(compression, "gzip");
    if (compression != NULL && !out->gzip && !span_is(compression, "identity"))
        return refuse(out, WL_CONNECT_GET_COMPRESSION,
                      "unsupported compression: this server supports gzip and identity");
    const wl_span_t *message = wl_query_get(&query, "message");
    if (message == NULL)
        return refuse(out, WL_CONNECT_GET_MESSAGE,
                      "missing required query parameter message (the request message)");
    out->message = *message;
    if (!span_is(wl_query_get(&query, "base64"), "1"))
        return WL_CONNECT_GET_READ;
    unsigned char *bytes = wl_arena_alloc(arena, message->len * 3 / 4 + 1);
    if (bytes == NULL)
        return WL_CONNECT_GET_NO_MEMORY;
    size_t len = 0;
    if (!wl_base64_decode(message->base, message->len, WL_BASE64_DECODE_LENIENT, bytes, &len))
        return refuse(out, WL_CONNECT_GET_MESSAGE,
                      "with base64=1 the message must be URL-safe base64 (RFC 4648 section 5), "
                      "padded or not");
    out->message = wl_span((const char *)bytes, len);
    return WL_CONNECT_GET_READ;
}

/* --- Validators ---------------------------------------------------------------------------- */

static void export_tag(int64_t org_id, int64_t version, int64_t since, char *tag, size_t size)
{
    char delta[32] = "";
    if (since >= 0)
        snprintf(delta, sizeof(delta), "-since-%" PRId64, since);
    snprintf(tag, size, "W/\"%" PRId64 "-%" PRId64 "%s\"", org_id, version, delta);
}

/* A delta's start: the version of the request's since (-1: the full export). */
static bool export_since(wl_core_t *core, const wl_principal_t *principal,
                         const ProtobufCMessage *input, int64_t *since)
{
    const Walklist__V1__ExportStockRequest *request =
        (const Walklist__V1__ExportStockRequest *)input;
    *since = -1;
    if (request->since == NULL || request->since[0] == '\0')
        return true;
    wl_error_t err;
    wl_error_init(&err);
    return wl_core_export_since(core, principal, request->since, "since", since, &err) == 0;
}

/* The stock export's version: the reply's cursor names it. Both cursors were checked already
 * (the call succeeded with them), and the secret that seals them is in memory by now. */
static bool export_reply_tag(wl_core_t *core, const wl_principal_t *principal,
                             const ProtobufCMessage *input, const ProtobufCMessage *reply,
                             char *tag, size_t size)
{
    const Walklist__V1__ExportStockResponse *export =
        (const Walklist__V1__ExportStockResponse *)reply;
    if (wl_core_export_since_waits(core) || export->cursor == NULL)
        return false;
    wl_error_t err;
    wl_error_init(&err);
    int64_t version = 0, since = -1;
    if (wl_core_export_since(core, principal, export->cursor, "cursor", &version, &err) != 0 ||
        !export_since(core, principal, input, &since))
        return false;
    export_tag(principal->org_id, version, since, tag, size);
    return true;
}

/* The version now, without the export: read in the admission's group when it was asked there
 * (wl_admission_read_export_version), else in one statement, which only a caller that may
 * wait makes (as the page secret a since needs, the process's first time). */
static wl_connect_tag_t export_current_tag(wl_core_t *core, const wl_admission_t *admission,
                                           const wl_principal_t *principal,
                                           const ProtobufCMessage *input, bool may_wait, char *tag,
                                           size_t size)
{
    const Walklist__V1__ExportStockRequest *request =
        (const Walklist__V1__ExportStockRequest *)input;
    bool has_since = request->since != NULL && request->since[0] != '\0';
    int64_t version = 0, since = -1;
    bool in_hand = admission != NULL && wl_admission_export_version(admission, &version);
    if (!may_wait && (!in_hand || (has_since && wl_core_export_since_waits(core))))
        return WL_CONNECT_TAG_WAITS;
    if (!export_since(core, principal, input, &since))
        return WL_CONNECT_TAG_NONE;
    wl_error_t err;
    wl_error_init(&err);
    if (!in_hand && wl_core_export_version(core, principal, &version, &err) != 0)
        return WL_CONNECT_TAG_NONE;
    export_tag(principal->org_id, version, since, tag, size);
    return WL_CONNECT_TAG_READ;
}

/* Procedures whose reply has a version of its own; every other reply is tagged by its bytes. */
static const struct {
    const char *path;
    bool (*reply_tag)(wl_core_t *core, const wl_principal_t *principal,
                      const ProtobufCMessage *input, const ProtobufCMessage *reply, char *tag,
                      size_t size);
    wl_connect_tag_t (*current_tag)(wl_core_t *core, const wl_admission_t *admission,
                                    const wl_principal_t *principal, const ProtobufCMessage *input,
                                    bool may_wait, char *tag, size_t size);
    void (*admit)(wl_core_t *core, wl_admission_t *admission);
} versioned[] = {
    {.path = "/walklist.v1.StockService/ExportStock",
     .reply_tag = export_reply_tag,
     .current_tag = export_current_tag,
     .admit = wl_admission_read_export_version},
};

static int versioned_row(const char *path)
{
    for (size_t i = 0; i < sizeof(versioned) / sizeof(versioned[0]); i++) {
        if (strcmp(versioned[i].path, path) == 0)
            return (int)i;
    }
    return -1;
}

bool wl_connect_get_versioned(const char *path)
{
    return versioned_row(path) >= 0;
}

bool wl_connect_get_version_tag(wl_core_t *core, const char *path, const wl_principal_t *principal,
                                const ProtobufCMessage *input, const ProtobufCMessage *reply,
                                char *tag, size_t size)
{
    int row = versioned_row(path);
    return row >= 0 && principal != NULL && input != NULL &&
           versioned[row].reply_tag(core, principal, input, reply, tag, size);
}

void wl_connect_get_admit(wl_core_t *core, const char *path, wl_admission_t *admission)
{
    int row = versioned_row(path);
    if (row >= 0 && admission != NULL)
        versioned[row].admit(core, admission);
}

wl_connect_tag_t wl_connect_get_current_tag(wl_core_t *core, const char *path,
                                            const wl_admission_t *admission,
                                            const wl_principal_t *principal,
                                            const ProtobufCMessage *input, bool may_wait, char *tag,
                                            size_t size)
{
    int row = versioned_row(path);
    return row >= 0
               ? versioned[row].current_tag(core, admission, principal, input, may_wait, tag, size)
               : WL_CONNECT_TAG_NONE;
}

/* "<base64url of the first 128 bits of the body's SHA-256>[-gzip]", quoted; false on failure. */
static bool digest_tag(const char *body, size_t len, bool gzip, char *tag, size_t size)
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int digest_len = 0;
    if (EVP_Digest(body, len, digest, &digest_len, EVP_sha256(), NULL) != 1 || digest_len < 16)
        return false;
    char text[32];
    wl_base64_encode(digest, 16, WL_BASE64_URL, false, text);
    return snprintf(tag, size, "\"%s%s\"", text, gzip ? "-gzip" : "") < (int)size;
}

static void set_cache_headers(wl_exchange_t *ex, const char *tag)
{
    wl_exchange_add_header(ex, "ETag", tag);
    wl_exchange_add_header(ex, "Vary", WL_CONNECT_GET_VARY);
    ex->cache_control = WL_CONNECT_GET_CACHE_CONTROL;
}

void wl_connect_get_not_modified(wl_exchange_t *ex, const char *tag)
{
    set_cache_headers(ex, tag);
    wl_exchange_empty(ex, 304);
}

bool wl_connect_get_answer(wl_exchange_t *ex, const char *content_type, char *body, size_t len,
                           const char *version_tag)
{
    const char *plain = body;
    size_t plain_len = len;
    bool gzip =
        wl_gzip_worth(len) && wl_negotiate_gzip(wl_exchange_header_list(ex, "Accept-Encoding"));
    if (gzip) {
        /* Failing (out of memory), the plain answer goes, as wl_gzip_offer's does. */
        wl_error_t err;
        wl_error_init(&err);
        char *coded = NULL;
        size_t coded_len = 0;
        gzip = wl_gzip_body(body, len, &ex->arena, &coded, &coded_len, &err) == 0;
        if (gzip) {
            body = coded;
            len = coded_len;
        }
    }
    char digest[64];
    if (version_tag == NULL) {
        if (!digest_tag(plain, plain_len, gzip, digest, sizeof(digest)))
            return false;
        version_tag = digest;
    }
    set_cache_headers(ex, version_tag);
    if (wl_negotiate_none_match(wl_exchange_header_list(ex, "If-None-Match"), version_tag)) {
        /* The length a 200 would carry keeps the connection open (exchange.h). */
        wl_exchange_empty(ex, 304);
        ex->content_length_known = true;
        ex->content_length = len;
        return true;
    }
    if (gzip)
        wl_exchange_add_header(ex, "Content-Encoding", "gzip");
    ex->status = 200;
    ex->content_type = content_type;
    ex->response = body;
    ex->response_len = len;
    return true;
}
