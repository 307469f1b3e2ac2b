/*
 * End to end: Connect's GET form (GET /<package>.<Service>/<Method>?connect=v1&encoding=...
 * &message=...) over raw HTTP/1.1 against a running walklistd. Each procedure marked
 * idempotency_level = NO_SIDE_EFFECTS answers GET in both codecs, with the message
 * percent-encoded or in base64 (padded or not), plain or gzip-compressed, as POST answers the
 * same message; answers carry ETag, Cache-Control and Vary, and If-None-Match gets 304 (the
 * stock export's tag follows its version, as GET /api/v1/stock-export's does). GET of a
 * procedure with side effects is 405 with nothing written; each bad query is a Connect error
 * with nothing written.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"
#include "fixture.h"
#include "gunzip.h"
#include "service.h"
#include "testdb.h"
#include "walklist/base64.h"
#include "walklist/v1/locate_list.pb-c.h"
#include "walklist/v1/scanner.pb-c.h"
#include "walklist/v1/stock.pb-c.h"

#define GET_LIST      "walklist.v1.LocateListService/GetLocateList"
#define CREATE_LIST   "walklist.v1.LocateListService/CreateLocateList"
#define EXPORT_STOCK  "walklist.v1.StockService/ExportStock"
#define LIST_STOCK    "walklist.v1.StockService/ListStock"
#define LIST_PENDING  "walklist.v1.ScannerService/ListPendingLists"
#define LOAD_LIST     "walklist.v1.ScannerService/LoadLocateList"
#define CACHE_CONTROL "private, no-cache"
#define VARY          "Authorization, Accept-Encoding"

static service_t service;
static PGconn *db;
static int64_t org_a;
static char key_all[WL_KEY_TOKEN_SIZE], key_lists[WL_KEY_TOKEN_SIZE];
static char list_id[64];

/* --- Requests ----------------------------------------------------------------------------- */

static const char *header_of(const http_response_t *res, const char *name)
{
    static char value[8][512];
    static int next;
    char *buf = value[next++ % 8];
    return http_header(res, name, buf, 512);
}

/* GET /<procedure>?<query> with a Bearer key (when not NULL) and extra header lines. */
static http_response_t get(const char *procedure, const char *query, const char *key,
                           const char *extra)
{
    size_t target_size = strlen(procedure) + strlen(query) + 4;
    char *target = malloc(target_size);
    snprintf(target, target_size, "/%s?%s", procedure, query);
    char headers[1024] = "";
    snprintf(headers, sizeof(headers), "%s%s%s%s", key ? "Authorization: Bearer " : "",
             key ? key : "", key ? "\r\n" : "", extra ? extra : "");
    http_response_t res;
    if (http_request(service.port, "GET", target, headers, NULL, 0, &res) != 0)
        FAIL("GET %s failed", target);
    free(target);
    return res;
}

/* The query of a JSON message, percent-encoded (malloc'd). */
static char *json_query(const char *message)
{
    size_t size = strlen(message) * 3 + 64;
    char *escaped = malloc(size), *query = malloc(size + 64);
    http_escape(message, escaped, size);
    snprintf(query, size + 64, "encoding=json&message=%s&connect=v1", escaped);
    free(escaped);
    return query;
}

/* The query of message bytes in URL-safe base64 (padded: '=' percent-encoded), gzip-coded
 * first when gzip (malloc'd). */
static char *base64_query(const char *encoding, const void *message, size_t len, bool padded,
                          bool gzip)
{
    void *coded = NULL;
    if (gzip) {
        coded = gzip_encode(message, len, &len);
        message = coded;
    }
    size_t text_size = wl_base64_encoded_len(len, padded) + 1;
    char *text = malloc(text_size);
    wl_base64_encode(message, len, WL_BASE64_URL, padded, text);
    size_t size = text_size * 3 + 128;
    char *escaped = malloc(size), *query = malloc(size + 128);
    http_escape(text, escaped, size);
    snprintf(query, size + 128, "connect=v1&encoding=%s&message=%s&base64=1%s", encoding, escaped,
             gzip ? "&compression=gzip" : "");
    free(text);
    free(escaped);
    free(coded);
    return query;
}

static char *proto_query(const ProtobufCMessage *message, bool padded, bool gzip)
{
    size_t len = protobuf_c_message_get_packed_size(message);
    uint8_t *packed = malloc(len ? len : 1);
    protobuf_c_message_pack(message, packed);
    char *query = base64_query("proto", packed, len, padded, gzip);
    free(packed);
    return query;
}

/* POST of a JSON message, the answer GET must match. */
static http_response_t post_json(const char *procedure, const char *key, const char *message)
{
    return e2e_connect_json(service.port, procedure, key, message);
}

/* What a GET could have written: lists (and how many are loaded), the export's version. Into
 * text (a fresh buffer per call of the caller's). */
typedef struct {
    char text[128];
} written_t;

static const char *written_into(written_t *out)
{
    char *text = out->text;
    char loaded[32], version[32];
    long long lists = testdb_count(db, "SELECT count(*) FROM locate_lists");
    testdb_value(db, "SELECT count(*) FROM locate_lists WHERE state = 'loaded'", loaded,
                 sizeof(loaded));
    testdb_value(db, "SELECT coalesce(max(version), 0) FROM export_versions", version,
                 sizeof(version));
    snprintf(text, sizeof(out->text), "%lld/%s/%s", lists, loaded, version);
    return text;
}

#define WRITTEN() written_into(&(written_t){{0}})

/* A 200 answer of a GET call: content type, the cache headers and a validator. */
static void check_cacheable(const http_response_t *res, const char *content_type)
{
    CHECK_INT(res->status, 200);
    CHECK_STR(header_of(res, "Content-Type"), content_type);
    CHECK_STR(header_of(res, "Cache-Control"), CACHE_CONTROL);
    CHECK_STR(header_of(res, "Vary"), VARY);
    CHECK(header_of(res, "ETag") != NULL);
}

/* Checks status, Connect's error JSON with code, the ErrorInfo reason, a message saying
 * `says` (when not NULL), no-store, and that nothing was written. */
static void check_refused(const http_response_t *res, int status, const char *code,
                          const char *reason, const char *says, const char *before)
{
    CHECK_INT(res->status, status);
    CHECK_STR(header_of(res, "Content-Type"), "application/json");
    CHECK_STR(header_of(res, "Cache-Control"), "no-store");
    CHECK(res->json != NULL);
    CHECK_STR(json_string_value(json_object_get(res->json, "code")), code);
    const char *message = json_string_value(json_object_get(res->json, "message"));
    CHECK(message != NULL);
    if (says != NULL && (message == NULL || strstr(message, says) == NULL))
        FAIL("the message \"%s\" does not say \"%s\"", message ? message : "", says);
    CHECK_CONNECT_REASON(*res, reason, NULL, NULL);
    CHECK_STR(WRITTEN(), before);
}

/* --- Each procedure in every form ---------------------------------------------------------- */

/*
 * GETs the JSON message (as JSON, percent-encoded and in base64) and its binary encoding
 * (base64 padded and not, plain and gzip'd) of procedure, and checks each against POST's
 * answer (same_as_post: byte for byte in JSON; else the caller compares).
 */
static void check_every_form(const char *procedure, const char *message_json,
                             const ProtobufCMessage *message,
                             const ProtobufCMessageDescriptor *reply_desc, bool same_as_post)
{
    written_t before_;
    const char *before = written_into(&before_);
    http_response_t post = post_json(procedure, key_all, message_json);
    CHECK_INT(post.status, 200);

    /* JSON: percent-encoded, base64 unpadded, base64 padded and gzip'd. */
    for (int form = 0; form < 3; form++) {
        char *query = form == 0 ? json_query(message_json)
                                : base64_query("json", message_json, strlen(message_json),
                                               form == 2, form == 2);
        http_response_t res = get(procedure, query, key_all, NULL);
        check_cacheable(&res, "application/json");
        if (same_as_post)
            CHECK_STR(res.body, post.body);
        CHECK(res.json != NULL);
        http_response_free(&res);
        free(query);
    }

    for (int form = 0; form < 4; form++) {
        char *query = proto_query(message, form & 1, form & 2);
        http_response_t res = get(procedure, query, key_all, NULL);
        check_cacheable(&res, "application/proto");
        ProtobufCMessage *reply =
            protobuf_c_message_unpack(reply_desc, NULL, res.body_len, (const uint8_t *)res.body);
        if (reply == NULL)
            FAIL("GET %s (form %d): the answer is not a %s", procedure, form, reply_desc->name);
        else
            protobuf_c_message_free_unpacked(reply, NULL);
        http_response_free(&res);
        free(query);
    }
    http_response_free(&post);
    CHECK_STR(WRITTEN(), before);
}

static void test_every_procedure(void)
{
    char message[128];
    snprintf(message, sizeof(message), "{\"id\":\"%s\"}", list_id);
    Walklist__V1__GetLocateListRequest get_list = WALKLIST__V1__GET_LOCATE_LIST_REQUEST__INIT;
    get_list.id = list_id;
    check_every_form(GET_LIST, message, &get_list.base, &walklist__v1__locate_list__descriptor,
                     true);

    Walklist__V1__ListStockRequest list_stock = WALKLIST__V1__LIST_STOCK_REQUEST__INIT;
    list_stock.page_size = 2;
    check_every_form(LIST_STOCK, "{\"pageSize\":2}", &list_stock.base,
                     &walklist__v1__list_stock_response__descriptor, true);

    Walklist__V1__ListPendingListsRequest pending = WALKLIST__V1__LIST_PENDING_LISTS_REQUEST__INIT;
    check_every_form(LIST_PENDING, "{}", &pending.base,
                     &walklist__v1__list_pending_lists_response__descriptor, true);

    /* The export's generatedAt is each snapshot's: the items are compared. */
    Walklist__V1__ExportStockRequest export = WALKLIST__V1__EXPORT_STOCK_REQUEST__INIT;
    check_every_form(EXPORT_STOCK, "{}", &export.base,
                     &walklist__v1__export_stock_response__descriptor, false);
    char *query = json_query("{}");
    http_response_t res = get(EXPORT_STOCK, query, key_all, NULL);
    http_response_t post = post_json(EXPORT_STOCK, key_all, "{}");
    CHECK(json_equal(json_object_get(res.json, "items"), json_object_get(post.json, "items")));
    CHECK_INT(json_array_size(json_object_get(res.json, "items")), 2);
    http_response_free(&res);
    http_response_free(&post);
    free(query);

    /* The empty message: zero bytes in base64 (never inflated, even with compression). */
    res = get(LIST_PENDING, "connect=v1&encoding=proto&message=&base64=1&compression=gzip", key_all,
              NULL);
    check_cacheable(&res, "application/proto");
    http_response_free(&res);

    /* A large answer goes gzip'd to a client that takes it, under a tag of its own. */
    char *codes = malloc(16 * 1024);
    size_t used = (size_t)snprintf(codes, 16 * 1024, "{\"name\":\"Big list\",\"codes\":[");
    for (int i = 0; i < 100; i++)
        used +=
            (size_t)snprintf(codes + used, 16 * 1024 - used, "%s\"CODE-%04d\"", i ? "," : "", i);
    snprintf(codes + used, 16 * 1024 - used, "]}");
    post = post_json(CREATE_LIST, key_all, codes);
    char message_big[128];
    snprintf(message_big, sizeof(message_big), "{\"id\":\"%s\"}",
             e2e_str(post.json, "id", NULL) ? e2e_str(post.json, "id", NULL) : "");
    http_response_free(&post);
    free(codes);
    query = json_query(message_big);
    http_response_t plain = get(GET_LIST, query, key_all, NULL);
    res = get(GET_LIST, query, key_all, "Accept-Encoding: gzip\r\n");
    check_cacheable(&res, "application/json");
    CHECK_STR(header_of(&res, "Content-Encoding"), "gzip");
    size_t text_len = 0;
    char *text = gunzip(res.body, res.body_len, true, &text_len);
    CHECK(text != NULL && strcmp(text, plain.body) == 0);
    free(text);
    char plain_tag[128];
    snprintf(plain_tag, sizeof(plain_tag), "%s", header_of(&plain, "ETag"));
    CHECK(strstr(header_of(&res, "ETag"), "-gzip\"") != NULL);
    CHECK(strcmp(header_of(&res, "ETag"), plain_tag) != 0);
    http_response_free(&res);
    http_response_free(&plain);
    free(query);
}

/* --- Validators and 304 -------------------------------------------------------------------- */

static void test_not_modified(void)
{
    /* A list's answer is tagged by its bytes: 304 until it changes (loaded). */
    char message[128], *query;
    http_response_t post =
        post_json(CREATE_LIST, key_all, "{\"name\":\"Tagged\",\"codes\":[\"SKU-1\"]}");
    snprintf(message, sizeof(message), "{\"id\":\"%s\"}",
             e2e_str(post.json, "id", NULL) ? e2e_str(post.json, "id", NULL) : "");
    char id[64];
    snprintf(id, sizeof(id), "%s",
             e2e_str(post.json, "id", NULL) ? e2e_str(post.json, "id", NULL) : "");
    http_response_free(&post);
    query = json_query(message);
    http_response_t res = get(GET_LIST, query, key_all, NULL);
    check_cacheable(&res, "application/json");
    char tag[128], condition[256];
    snprintf(tag, sizeof(tag), "%s", header_of(&res, "ETag"));
    CHECK(tag[0] == '"'); /* strong: the same bytes */
    http_response_free(&res);
    snprintf(condition, sizeof(condition), "If-None-Match: %s\r\n", tag);
    res = get(GET_LIST, query, key_all, condition);
    CHECK_INT(res.status, 304);
    CHECK_INT(res.body_len, 0);
    CHECK_STR(header_of(&res, "ETag"), tag);
    CHECK_STR(header_of(&res, "Cache-Control"), CACHE_CONTROL);
    CHECK_STR(header_of(&res, "Vary"), VARY);
    http_response_free(&res);
    /* Another key of the organization sees the same answer: the same tag. */
    res = get(GET_LIST, query, key_lists, condition);
    CHECK_INT(res.status, 304);
    http_response_free(&res);
    /* Loaded, the list answers anew. */
    char load[128];
    snprintf(load, sizeof(load), "{\"id\":\"%s\"}", id);
    post = post_json(LOAD_LIST, key_all, load);
    CHECK_INT(post.status, 200);
    http_response_free(&post);
    res = get(GET_LIST, query, key_all, condition);
    CHECK_INT(res.status, 200);
    CHECK_STR(e2e_str(res.json, "state", NULL), "loaded");
    CHECK(strcmp(header_of(&res, "ETag"), tag) != 0);
    http_response_free(&res);
    free(query);

    written_t before_;
    const char *before = written_into(&before_);
    /* The export's tag is its version's, as GET /api/v1/stock-export's (made weak). */
    res = e2e_request(service.port, "GET", "/api/v1/stock-export", key_all, NULL, NULL);
    CHECK_INT(res.status, 200);
    char rest_tag[128], weak[160];
    snprintf(rest_tag, sizeof(rest_tag), "%s", header_of(&res, "ETag"));
    snprintf(weak, sizeof(weak), "W/%s", rest_tag);
    http_response_free(&res);
    query = json_query("{}");
    char *binary = base64_query("proto", "", 0, false, false);
    res = get(EXPORT_STOCK, query, key_all, NULL);
    check_cacheable(&res, "application/json");
    CHECK_STR(header_of(&res, "ETag"), weak);
    http_response_free(&res);
    /* The version the two 304s need is read in their admissions' group, not on its own. */
    long long alone[2], alone_after[2], grouped[2], grouped_after[2];
    testdb_statement_counts(db, "SELECT coalesce((SELECT version FROM export_versions", alone);
    testdb_statement_counts(db, "FROM export_versions ev WHERE ev.org_id", grouped);
    /* ... and they are answered where they arrived, without a request thread. */
    long long jobs = e2e_metric(service.port, "walklist_request_thread_jobs_total");
    snprintf(condition, sizeof(condition), "If-None-Match: %s\r\n", rest_tag);
    res = get(EXPORT_STOCK, query, key_all, condition);
    CHECK_INT(res.status, 304);
    CHECK_INT(res.body_len, 0);
    CHECK_STR(header_of(&res, "ETag"), weak);
    http_response_free(&res);
    snprintf(condition, sizeof(condition), "If-None-Match: \"other\", %s\r\n", weak);
    res = get(EXPORT_STOCK, binary, key_all, condition);
    CHECK_INT(res.status, 304);
    http_response_free(&res);
    testdb_statement_counts(db, "SELECT coalesce((SELECT version FROM export_versions",
                            alone_after);
    testdb_statement_counts(db, "FROM export_versions ev WHERE ev.org_id", grouped_after);
    CHECK_INT(alone_after[0] - alone[0], 0);
    CHECK_INT(grouped_after[0] - grouped[0], 2);
    CHECK_INT(e2e_metric(service.port, "walklist_request_thread_jobs_total") - jobs, 0);
    CHECK_STR(WRITTEN(), before);

    /* A delta's tag names its start too. */
    post = post_json(EXPORT_STOCK, key_all, "{}");
    const char *cursor = e2e_str(post.json, "cursor", NULL);
    char since[512];
    snprintf(since, sizeof(since), "{\"since\":\"%s\"}", cursor ? cursor : "");
    http_response_free(&post);
    char *delta_query = json_query(since);
    res = get(EXPORT_STOCK, delta_query, key_all, NULL);
    check_cacheable(&res, "application/json");
    char delta_tag[160];
    snprintf(delta_tag, sizeof(delta_tag), "%s", header_of(&res, "ETag"));
    CHECK(strncmp(delta_tag, weak, strlen(weak) - 1) == 0 && strstr(delta_tag, "-since-") != NULL);
    CHECK_INT(json_array_size(json_object_get(res.json, "items")), 0);
    http_response_free(&res);

    /* A change of the export moves both tags: the old ones get the new answer. */
    fixture_import(db, org_a, "stock", "sku,warehouse,on_hand\nSKU-1,WH1,11\n");
    snprintf(condition, sizeof(condition), "If-None-Match: %s\r\n", weak);
    res = get(EXPORT_STOCK, query, key_all, condition);
    CHECK_INT(res.status, 200);
    CHECK(strcmp(header_of(&res, "ETag"), weak) != 0);
    http_response_free(&res);
    snprintf(condition, sizeof(condition), "If-None-Match: %s\r\n", delta_tag);
    res = get(EXPORT_STOCK, delta_query, key_all, condition);
    CHECK_INT(res.status, 200);
    CHECK_INT(json_array_size(json_object_get(res.json, "items")), 1);
    http_response_free(&res);
    free(delta_query);
    free(binary);
    free(query);
}

/* --- Refusals ------------------------------------------------------------------------------ */

static void test_side_effects_refused(void)
{
    written_t before_;
    const char *before = written_into(&before_);
    /* GET of a procedure with side effects: 405 before the key is read, nothing created. */
    char *query = json_query("{\"name\":\"Never by GET\",\"codes\":[\"SKU-1\"]}");
    http_response_t res = get(CREATE_LIST, query, key_all, NULL);
    check_refused(&res, 405, "unimplemented", "METHOD_NOT_ALLOWED", "POST", before);
    CHECK_STR(header_of(&res, "Allow"), "POST");
    http_response_free(&res);
    free(query);
    CHECK_INT(testdb_count(db, "SELECT count(*) FROM locate_lists WHERE name = 'Never by GET'"), 0);
    /* Loading a list is a change: the list stays pending. */
    char message[128];
    snprintf(message, sizeof(message), "{\"id\":\"%s\"}", list_id);
    query = json_query(message);
    res = get(LOAD_LIST, query, key_all, NULL);
    check_refused(&res, 405, "unimplemented", "METHOD_NOT_ALLOWED", NULL, before);
    CHECK_STR(header_of(&res, "Allow"), "POST");
    http_response_free(&res);
    free(query);
    /* Another method than GET or POST on a procedure without side effects. */
    res = e2e_request(service.port, "DELETE", "/" LIST_STOCK, key_all, NULL, NULL);
    check_refused(&res, 405, "unimplemented", "METHOD_NOT_ALLOWED", NULL, before);
    CHECK_STR(header_of(&res, "Allow"), "GET, POST");
    http_response_free(&res);
}

static void test_bad_queries(void)
{
    written_t before_;
    const char *before = written_into(&before_);
    const char *json_message = "connect=v1&encoding=json&message=%7B%7D";
    struct {
        const char *query;
        int status;
        const char *code, *reason, *says;
    } cases[] = {
        {"connect=v1&encoding=json", 400, "invalid_argument", "INVALID_REQUEST", "message"},
        {"connect=v1&encoding=proto&message=%21%21%21&base64=1", 400, "invalid_argument",
         "INVALID_REQUEST", "base64"},
        {"connect=v1&encoding=proto&message=AAA*&base64=1", 400, "invalid_argument",
         "INVALID_REQUEST", "base64"},
        {"connect=v1&encoding=xml&message=%7B%7D", 415, "invalid_argument",
         "UNSUPPORTED_MEDIA_TYPE", "encoding"},
        {"connect=v1&message=%7B%7D", 415, "invalid_argument", "UNSUPPORTED_MEDIA_TYPE",
         "encoding"},
        {"encoding=json&message=%7B%7D", 400, "invalid_argument", "PROTOCOL_HEADER_INVALID",
         "connect"},
        {"connect=v2&encoding=json&message=%7B%7D", 400, "invalid_argument",
         "PROTOCOL_HEADER_INVALID", "connect"},
        {"connect=v1&encoding=json&message=%7B%7D&compression=br", 501, "unimplemented",
         "CONTENT_ENCODING_UNSUPPORTED", "gzip"},
        {"connect=v1&encoding=json&encoding=proto&message=%7B%7D", 400, "invalid_argument",
         "INVALID_REQUEST", "once"},
        {"connect=v1&encoding=json&message=%7B%ZZ", 400, "invalid_argument", "INVALID_REQUEST",
         "escape"},
        {"connect=v1&encoding=json&message=%7B%22nope%22%3A1%7D", 400, "invalid_argument",
         "INVALID_REQUEST", NULL},
        /* Not gzip at all ("hello"), flagged gzip. */
        {"connect=v1&encoding=json&message=aGVsbG8&base64=1&compression=gzip", 400,
         "invalid_argument", "INVALID_REQUEST", "gzip"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        http_response_t res = get(LIST_STOCK, cases[i].query, key_all, NULL);
        if (res.status != cases[i].status)
            fprintf(stderr, "case %zu: %s -> %d %s\n", i, cases[i].query, res.status, res.body);
        check_refused(&res, cases[i].status, cases[i].code, cases[i].reason, cases[i].says, before);
        if (cases[i].status == 501)
            CHECK_STR(header_of(&res, "Accept-Encoding"), "gzip");
        http_response_free(&res);
    }

    /* Corrupt gzip: a valid member with its CRC broken. */
    size_t coded_len = 0;
    char *coded = gzip_encode("{\"pageSize\":2}", 14, &coded_len);
    coded[coded_len - 6] ^= 0x55;
    char text[256], escaped[512], query[768];
    wl_base64_encode((const unsigned char *)coded, coded_len, WL_BASE64_URL, false, text);
    http_escape(text, escaped, sizeof(escaped));
    snprintf(query, sizeof(query), "connect=v1&encoding=json&message=%s&base64=1&compression=gzip",
             escaped);
    free(coded);
    http_response_t res = get(LIST_STOCK, query, key_all, NULL);
    check_refused(&res, 400, "invalid_argument", "INVALID_REQUEST", "gzip", before);
    http_response_free(&res);

    /* A message inflating past the 4 MiB limit: refused as a body over it. */
    size_t bomb_len = 4u * 1024 * 1024 + 1;
    char *bomb = malloc(bomb_len);
    memset(bomb, ' ', bomb_len);
    memcpy(bomb, "{}", 2);
    char *bomb_query = base64_query("json", bomb, bomb_len, false, true);
    free(bomb);
    CHECK(strlen(bomb_query) < 16 * 1024);
    res = get(LIST_STOCK, bomb_query, key_all, NULL);
    check_refused(&res, 413, "resource_exhausted", "BODY_TOO_LARGE", "inflates", before);
    http_response_free(&res);
    free(bomb_query);

    /* The key, its scope and its bucket as on POST. */
    res = get(LIST_STOCK, json_message, NULL, NULL);
    check_refused(&res, 401, "unauthenticated", "API_KEY_MISSING", NULL, before);
    http_response_free(&res);
    res = get(LIST_STOCK, json_message, key_lists, NULL);
    check_refused(&res, 403, "permission_denied", "SCOPE_MISSING", NULL, before);
    http_response_free(&res);
    res = get(LIST_STOCK, json_message, key_all, NULL);
    CHECK_INT(res.status, 200);
    CHECK(header_of(&res, "RateLimit-Policy") != NULL &&
          strstr(header_of(&res, "RateLimit-Policy"), "\"shared\"") != NULL);
    http_response_free(&res);
    res = get(EXPORT_STOCK, json_message, key_all, NULL);
    CHECK(header_of(&res, "RateLimit-Policy") != NULL &&
          strstr(header_of(&res, "RateLimit-Policy"), "\"stock-export\"") != NULL);
    http_response_free(&res);
    /* A Connect-Timeout-Ms header applies as on POST. */
    res = get(LIST_STOCK, json_message, key_all, "Connect-Timeout-Ms: 0\r\n");
    check_refused(&res, 504, "deadline_exceeded", "DEADLINE_EXCEEDED", NULL, before);
    http_response_free(&res);
}

int main(void)
{
    const char *conninfo = testdb_create("e2e_connect_get");
    db = testdb_connect(conninfo);
    testdb_exec(db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    org_a = fixture_org(db, "connect-get-a");
    fixture_key(db, org_a, "lists:write,stock:read,scanner", key_all);
    fixture_key(db, org_a, "lists:write", key_lists);
    fixture_import(db, org_a, "warehouses", "code,name,kind\nWH1,Main,own\n");
    fixture_import(db, org_a, "locations", "warehouse,code,staging\nWH1,A-2,false\n");
    fixture_import(db, org_a, "products", "sku,name,eans\nSKU-1,Blue widget,\nSKU-2,Red,\n");
    fixture_import(db, org_a, "stock", "sku,warehouse,on_hand\nSKU-1,WH1,8\nSKU-2,WH1,3\n");
    fixture_import(db, org_a, "location-stock",
                   "sku,warehouse,location,quantity\nSKU-1,WH1,A-2,5\n");
    service_start(&service, conninfo, NULL);

    http_response_t res =
        post_json(CREATE_LIST, key_all, "{\"name\":\"Read by GET\",\"codes\":[\"SKU-1\",\"X\"]}");
    CHECK_INT(res.status, 200);
    snprintf(list_id, sizeof(list_id), "%s",
             e2e_str(res.json, "id", NULL) ? e2e_str(res.json, "id", NULL) : "");
    http_response_free(&res);

    test_every_procedure();
    test_side_effects_refused();
    test_bad_queries();
    test_not_modified();

    char *log = service_log(&service);
    CHECK(strstr(log, key_all) == NULL);
    free(log);
    CHECK_INT(service_stop(&service), 0);
    PQfinish(db);
    return test_exit();
}
