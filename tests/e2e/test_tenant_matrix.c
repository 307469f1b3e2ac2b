/*
 * Tenant isolation and hostile strings over every transport (a key sees its own organization's
 * data only; another organization's id is 404, never 403):
 *
 * - Every REST route (iterated from gateway/protocols/api.c's route table through wl_api_routes(),
 * the device routes included) and every method of every core service over Connect and over gRPC
 *   (the same cases, sent by gRPC's C core as a client; iterated
 *   from the core registry, wl_core_services): without a key 401, with a malformed, unknown
 *   or revoked key 401, with a key lacking the method's scope 403 (a key lacking any other
 *   scope passes), with another organization's ids 404 (never 403), and another
 *   organization's data never shown or changed (a digest of all of organization B's rows is
 *   the same before and after everything A's keys tried). A route or method without a case
 *   here fails the test, so a new endpoint must join the matrix.
 * - SQL-looking strings, format strings, 120 emoji, 64 four-byte characters, NUL bytes
 *   (JSON \u0000, query %00, raw in protobuf strings), control characters and invalid UTF-8
 *   in every string field (REST JSON and query, path ids, Idempotency-Key, device and Connect
 *   protobuf, Connect JSON) are stored verbatim or refused (400, or 404 for an id), never
 *   executed: no 5xx, no dropped connection, every table still there, the server alive.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>

#include "protocols/api.h"
#include "codec/json_codec.h"
#include "errors/status_map.h"
#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"
#include "walklist/core.h"

#define JSON  "application/json"
#define PROTO "application/proto"

static service_t service;
static uint16_t port;
static PGconn *db;
static int64_t org_a, org_b;
static char key_a[WL_KEY_TOKEN_SIZE], key_b[WL_KEY_TOKEN_SIZE], key_revoked[WL_KEY_TOKEN_SIZE];
static const unsigned scope_bits[] = {WL_SCOPE_LISTS_WRITE, WL_SCOPE_STOCK_READ, WL_SCOPE_SCANNER,
                                      WL_SCOPE_INVENTORY_WRITE};
#define SCOPES (sizeof(scope_bits) / sizeof(scope_bits[0]))
static char key_a_without[SCOPES][WL_KEY_TOKEN_SIZE]; /* every scope but scope_bits[i] */
static char list_a[48], list_b[48], list_b_loaded[48];

/* --- Bytes -------------------------------------------------------------------------------- */

typedef struct {
    char *base;
    size_t len;
    size_t cap;
} buf_t;

static void put(buf_t *b, const void *bytes, size_t len)
{
    if (b->len + len + 1 > b->cap) {
        b->cap = (b->len + len + 1) * 2;
        b->base = realloc(b->base, b->cap);
    }
    memcpy(b->base + b->len, bytes, len);
    b->len += len;
    b->base[b->len] = '\0';
}

static void puts_(buf_t *b, const char *s)
{
    put(b, s, strlen(s));
}

/* A JSON string: quote, backslash and control characters escaped, every other byte as is
 * (so invalid UTF-8 goes out invalid, as a hostile client would send it). */
static void put_json_string(buf_t *b, const char *s, size_t len)
{
    put(b, "\"", 1);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '"' || c == '\\') {
            snprintf(esc, sizeof(esc), "\\%c", c);
            puts_(b, esc);
        } else if (c < 0x20) {
            snprintf(esc, sizeof(esc), "\\u%04x", c);
            puts_(b, esc);
        } else {
            put(b, &s[i], 1);
        }
    }
    put(b, "\"", 1);
}

static void put_pct(buf_t *b, const char *s, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~') {
            put(b, &s[i], 1);
        } else {
            char esc[4] = {'%', hex[c >> 4], hex[c & 15], '\0'};
            puts_(b, esc);
        }
    }
}

static void put_varint(buf_t *b, uint64_t v)
{
    unsigned char out[10];
    size_t n = 0;
    do {
        out[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            out[n] |= 0x80;
        n++;
    } while (v);
    put(b, out, n);
}

static void put_proto_bytes(buf_t *b, unsigned field, const void *bytes, size_t len)
{
    put_varint(b, (uint64_t)field << 3 | 2);
    put_varint(b, len);
    put(b, bytes, len);
}

/* --- Requests ----------------------------------------------------------------------------- */

static http_response_t call(const char *method, const char *target, const char *key,
                            const char *content_type, const void *body, size_t len,
                            const char *extra_headers)
{
    buf_t headers = {0};
    puts_(&headers, "");
    if (key != NULL) {
        puts_(&headers, "Authorization: Bearer ");
        puts_(&headers, key);
        puts_(&headers, "\r\n");
    }
    if (content_type != NULL) {
        puts_(&headers, "Content-Type: ");
        puts_(&headers, content_type);
        puts_(&headers, "\r\n");
    }
    if (extra_headers != NULL)
        puts_(&headers, extra_headers);
    http_response_t res;
    if (http_request(port, method, target, headers.base, body, body ? len : 0, &res) != 0)
        res.status = 0;
    free(headers.base);
    return res;
}

static http_response_t connect_call(const char *procedure, const char *key, const char *codec,
                                    const void *body, size_t len)
{
    char target[300];
    snprintf(target, sizeof(target), "/%s", procedure);
    return call("POST", target, key, codec, body ? body : "", body ? len : 0,
                "Connect-Protocol-Version: 1\r\n");
}

static const char *connect_code(const http_response_t *res)
{
    return res->json ? json_string_value(json_object_get(res->json, "code")) : NULL;
}

static bool body_contains(const http_response_t *res, const char *needle)
{
    return res->body != NULL && memmem(res->body, res->body_len, needle, strlen(needle)) != NULL;
}

/* A 401 with the Bearer challenge, in the error shape of the transport. */
static void check_unauthenticated(const http_response_t *res, bool connect_transport, bool key_sent,
                                  const char *what)
{
    char challenge[128];
    bool ok = res->status == 401 &&
              http_header(res, "WWW-Authenticate", challenge, sizeof(challenge)) != NULL;
    ok = ok && (strstr(challenge, "invalid_token") != NULL) == key_sent;
    if (connect_transport)
        ok = ok && connect_code(res) != NULL && strcmp(connect_code(res), "unauthenticated") == 0;
    else
        ok = ok && res->json != NULL &&
             strcmp(e2e_str(res->json, "error", "status") ? e2e_str(res->json, "error", "status")
                                                          : "",
                    "UNAUTHENTICATED") == 0;
    if (!ok)
        FAIL("%s: expected 401 UNAUTHENTICATED%s, got %d %s", what,
             key_sent ? " (invalid_token)" : "", res->status, res->body ? res->body : "");
}

static void check_status(const http_response_t *res, int status, const char *grpc_name,
                         bool connect_transport, const char *what)
{
    const char *code =
        connect_transport ? connect_code(res) : e2e_str(res->json, "error", "status");
    if (res->status != status || (grpc_name != NULL && (code == NULL || strcmp(code, grpc_name))))
        FAIL("%s: expected %d %s, got %d %s", what, status, grpc_name ? grpc_name : "", res->status,
             res->body ? res->body : "");
}

/* --- Organization B's rows, to prove A's keys changed none of them ----------------------- */

static void digest_of_b(char out[64])
{
    char sql[2048];
    snprintf(sql, sizeof(sql),
             "SELECT md5(coalesce(string_agg(t, '|' ORDER BY t), '')) FROM ("
             " SELECT 'L' || id || name || codes::text || state || coalesce(loaded_at::text, '')"
             "   AS t FROM locate_lists WHERE org_id = %1$lld"
             " UNION ALL SELECT 'P' || sku || name FROM products WHERE org_id = %1$lld"
             " UNION ALL SELECT 'E' || ean || sku FROM product_eans WHERE org_id = %1$lld"
             " UNION ALL SELECT 'W' || code || name || kind FROM warehouses WHERE org_id = %1$lld"
             " UNION ALL SELECT 'O' || warehouse || code || staging FROM locations"
             "   WHERE org_id = %1$lld"
             " UNION ALL SELECT 'S' || sku || warehouse || on_hand FROM stock WHERE org_id = %1$lld"
             " UNION ALL SELECT 'Q' || sku || warehouse || location || quantity"
             "   FROM location_stock WHERE org_id = %1$lld"
             " UNION ALL SELECT 'R' || ref || sku || warehouse || quantity || status"
             "   FROM reservations WHERE org_id = %1$lld"
             " UNION ALL SELECT 'A' || sku || qty || coalesce(location, '')"
             "   FROM stock_availability WHERE org_id = %1$lld"
             " UNION ALL SELECT 'K' || prefix || coalesce(revoked_at::text, '') FROM api_keys"
             "   WHERE org_id = %1$lld) x",
             (long long)org_b);
    testdb_value(db, sql, out, 64);
}

/* --- The REST routes ---------------------------------------------------------------------- */

typedef enum { BODY_NONE, BODY_JSON_LIST, BODY_DEVICE_ID, BODY_DEVICE_EMPTY } body_kind_t;

typedef struct {
    const char *method;
    const char *pattern;
    unsigned scope;
    unsigned ok_status;
    const char *query; /* appended to the path */
    body_kind_t body;
    bool names_a_list; /* the path or body carries a list id */
    bool lists_data;   /* the answer shows the organization's data */
} rest_case_t;

static const rest_case_t rest_cases[] = {
    {"POST", "/api/v1/locate-lists", WL_SCOPE_LISTS_WRITE, 201, NULL, BODY_JSON_LIST},
    {"GET", "/api/v1/locate-lists", WL_SCOPE_LISTS_WRITE, 201, "?name=matrix&codes=A,B"},
    {"GET", "/api/v1/locate-lists/{id}", WL_SCOPE_LISTS_WRITE, 200, NULL, BODY_NONE, true},
    {"GET", "/api/v1/stock-export", WL_SCOPE_STOCK_READ, 200, NULL, BODY_NONE, false, true},
    {"GET", "/api/v1/stock", WL_SCOPE_STOCK_READ, 200, NULL, BODY_NONE, false, true},
    {"POST", "/walklist.scanner.v1.DeviceService/ListPending", WL_SCOPE_SCANNER, 200, NULL,
     BODY_DEVICE_EMPTY, false, true},
    {"POST", "/walklist.scanner.v1.DeviceService/LoadList", WL_SCOPE_SCANNER, 200, NULL,
     BODY_DEVICE_ID, true},
};

static const rest_case_t *rest_case(const char *method, const char *pattern)
{
    for (size_t i = 0; i < sizeof(rest_cases) / sizeof(rest_cases[0]); i++)
        if (strcmp(rest_cases[i].method, method) == 0 &&
            strcmp(rest_cases[i].pattern, pattern) == 0)
            return &rest_cases[i];
    return NULL;
}

static http_response_t rest_call(const rest_case_t *c, const char *key, const char *list_id)
{
    buf_t target = {0}, body = {0};
    const char *slot = strstr(c->pattern, "{id}");
    if (slot != NULL) {
        put(&target, c->pattern, (size_t)(slot - c->pattern));
        put_pct(&target, list_id, strlen(list_id));
        puts_(&target, slot + 4);
    } else {
        puts_(&target, c->pattern);
    }
    if (c->query != NULL)
        puts_(&target, c->query);
    const char *content_type = NULL;
    switch (c->body) {
    case BODY_JSON_LIST:
        content_type = JSON;
        puts_(&body, "{\"name\":\"matrix\",\"codes\":[\"A\"]}");
        break;
    case BODY_DEVICE_ID:
        content_type = PROTO;
        put_proto_bytes(&body, 1, list_id, strlen(list_id));
        break;
    case BODY_DEVICE_EMPTY:
        content_type = PROTO;
        put(&body, "", 0);
        break;
    case BODY_NONE:
        break;
    }
    http_response_t res =
        call(c->method, target.base, key, content_type, body.base, body.len, NULL);
    free(target.base);
    free(body.base);
    return res;
}

static http_response_t post_list(const char *key, const char *json)
{
    return call("POST", "/api/v1/locate-lists", key, JSON, json, strlen(json), NULL);
}

/* A list of A's that is still pending, for routes that load it. */
static void fresh_list_of_a(char id[48])
{
    http_response_t res = post_list(key_a, "{\"name\":\"a-list\",\"codes\":[\"SKU-A\"]}");
    CHECK_INT(res.status, 201);
    snprintf(id, 48, "%s", e2e_str(res.json, "id", NULL) ? e2e_str(res.json, "id", NULL) : "");
    http_response_free(&res);
}

static void test_rest_matrix(void)
{
    const char *const *methods, *const *patterns;
    size_t count = wl_api_routes(&methods, &patterns);
    CHECK(count >= 7);
    for (size_t r = 0; r < count; r++) {
        char what[256];
        const rest_case_t *c = rest_case(methods[r], patterns[r]);
        if (c == NULL) {
            FAIL("route %s %s has no case in the tenant matrix: add one", methods[r], patterns[r]);
            continue;
        }
        char own[48];
        fresh_list_of_a(own);

        snprintf(what, sizeof(what), "%s %s without a key", c->method, c->pattern);
        http_response_t res = rest_call(c, NULL, own);
        check_unauthenticated(&res, false, false, what);
        http_response_free(&res);
        snprintf(what, sizeof(what), "%s %s with an unknown key", c->method, c->pattern);
        res = rest_call(c, "wlk_AAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", own);
        check_unauthenticated(&res, false, true, what);
        http_response_free(&res);
        snprintf(what, sizeof(what), "%s %s with a revoked key", c->method, c->pattern);
        res = rest_call(c, key_revoked, own);
        check_unauthenticated(&res, false, true, what);
        http_response_free(&res);

        /* Scopes: only the missing scope the route needs is refused, always with 403. */
        for (size_t s = 0; s < SCOPES; s++) {
            char id[48];
            fresh_list_of_a(id);
            res = rest_call(c, key_a_without[s], id);
            snprintf(what, sizeof(what), "%s %s with a key lacking scope %u", c->method, c->pattern,
                     scope_bits[s]);
            if (scope_bits[s] == c->scope)
                check_status(&res, 403, "PERMISSION_DENIED", false, what);
            else if (res.status != (int)c->ok_status)
                FAIL("%s: expected %u, got %d %s", what, c->ok_status, res.status, res.body);
            http_response_free(&res);
        }

        /* Own data: served. */
        res = rest_call(c, key_a, own);
        snprintf(what, sizeof(what), "%s %s with its own ids", c->method, c->pattern);
        if (res.status != (int)c->ok_status)
            FAIL("%s: expected %u, got %d %s", what, c->ok_status, res.status, res.body);
        if (c->lists_data && (body_contains(&res, "B-SECRET") || body_contains(&res, "b-secret")))
            FAIL("%s: the answer shows organization B's data: %s", what, res.body);
        if (c->lists_data &&
            !body_contains(&res, c->body == BODY_DEVICE_EMPTY ? "a-list" : "SKU-A"))
            FAIL("%s: the answer lacks organization A's own data: %s", what, res.body);
        http_response_free(&res);

        /* Another organization's ids, in both directions: 404, never 403. */
        if (c->names_a_list) {
            res = rest_call(c, key_a, list_b);
            snprintf(what, sizeof(what), "%s %s with B's list and A's key", c->method, c->pattern);
            check_status(&res, 404, "NOT_FOUND", false, what);
            http_response_free(&res);
            char other[48];
            fresh_list_of_a(other);
            res = rest_call(c, key_b, other);
            snprintf(what, sizeof(what), "%s %s with A's list and B's key", c->method, c->pattern);
            check_status(&res, 404, "NOT_FOUND", false, what);
            http_response_free(&res);
        }
    }
    fprintf(stderr,
            "REST: %zu routes, each without a key, with a bad and a revoked key, with "
            "%zu keys each lacking one scope, and with the other organization's ids\n",
            count, SCOPES);
    /* A filter naming B's SKU finds nothing for A. */
    http_response_t res = call("GET", "/api/v1/stock?sku=B-SECRET-SKU", key_a, NULL, NULL, 0, NULL);
    CHECK_INT(res.status, 200);
    CHECK_INT(json_array_size(json_object_get(res.json, "items")), 0);
    http_response_free(&res);
}

/* --- The Connect transport ---------------------------------------------------------------- */

/* What A's key gets when a method is given B's identifiers (JSON body). */
typedef struct {
    const char *procedure;
    const char *body; /* "%B" is B's pending list id, "%A" A's */
    bool with_b_key;  /* the call is made with B's key (A's ids), else with A's key */
    int status;
    const char *code; /* Connect code of an error, or NULL for 200 */
} cross_case_t;

static const cross_case_t cross_cases[] = {
    {"walklist.v1.LocateListService/CreateLocateList",
     "{\"name\":\"cross\",\"codes\":[\"B-SECRET-SKU\"]}", false, 200},
    {"walklist.v1.LocateListService/GetLocateList", "{\"id\":\"%B\"}", false, 404, "not_found"},
    {"walklist.v1.LocateListService/GetLocateList", "{\"id\":\"%A\"}", true, 404, "not_found"},
    {"walklist.v1.StockService/ExportStock", "{}", false, 200},
    {"walklist.v1.StockService/ListStock", "{\"sku\":\"B-SECRET-SKU\"}", false, 200},
    {"walklist.v1.StockService/ListStock", "{\"warehouse\":\"WB2\"}", false, 200},
    {"walklist.v1.ScannerService/ListPendingLists", "{}", false, 200},
    {"walklist.v1.ScannerService/LoadLocateList", "{\"id\":\"%B\"}", false, 404, "not_found"},
    {"walklist.v1.ScannerService/LoadLocateList", "{\"id\":\"%A\"}", true, 404, "not_found"},
    /* A's own warehouse of the same code: allowed, B's stays as it was. */
    {"walklist.v1.InventoryService/UpsertWarehouses",
     "{\"warehouses\":[{\"code\":\"WB\",\"name\":\"hijack\",\"kind\":\"supplier\"}]}", false, 200},
    {"walklist.v1.InventoryService/UpsertLocations",
     "{\"locations\":[{\"warehouse\":\"WB2\",\"code\":\"B-1\",\"staging\":true}]}", false, 400,
     "invalid_argument"},
    {"walklist.v1.InventoryService/UpsertProducts",
     "{\"products\":[{\"sku\":\"B-SECRET-SKU2\",\"name\":\"hijack\",\"eans\":[]}]}", false, 200},
    {"walklist.v1.InventoryService/SetStock",
     "{\"items\":[{\"sku\":\"B-SECRET-SKU\",\"warehouse\":\"WB2\",\"onHand\":99}]}", false, 400,
     "invalid_argument"},
    {"walklist.v1.InventoryService/SetLocationStock",
     "{\"items\":[{\"sku\":\"B-SECRET-SKU\",\"warehouse\":\"WB2\",\"location\":\"B-1\","
     "\"quantity\":9}]}",
     false, 400, "invalid_argument"},
    {"walklist.v1.InventoryService/CreateReservations",
     "{\"reservations\":[{\"ref\":\"R-B\",\"sku\":\"B-SECRET-SKU\",\"warehouse\":\"WB2\","
     "\"quantity\":1}]}",
     false, 400, "invalid_argument"},
    {"walklist.v1.InventoryService/ReleaseReservations", "{\"refs\":[\"R-B\"]}", false, 404,
     "not_found"},
    {"walklist.v1.InventoryService/ConsumeReservations", "{\"refs\":[\"R-B\"]}", false, 404,
     "not_found"},
    {"walklist.v1.InventoryService/ReleaseReservations", "{\"refs\":[\"R-A\"]}", true, 404,
     "not_found"},
};

/* --- The gRPC transport: the same matrix through gRPC's C core as a client ----------------- */

static wl_core_t *grpc_core; /* for the request and reply descriptors */
static grpc_channel *grpc_client;

/* The JSON request of a Connect case sent over gRPC (binary), and the outcome written as
 * Connect would (status from the gRPC code, {"code","message"}, the reply as JSON, the initial
 * metadata as headers), so that every check of the Connect row applies unchanged. */
static http_response_t grpc_json_call(const char *procedure, const char *key, const void *body,
                                      size_t len)
{
    http_response_t res = {0};
    char service_name[200];
    const char *slash = strchr(procedure, '/');
    snprintf(service_name, sizeof(service_name), "%.*s", (int)(slash - procedure), procedure);
    const wl_service_entry_t *entry = wl_core_find_service(grpc_core, service_name);
    const ProtobufCMethodDescriptor *method =
        entry ? protobuf_c_service_descriptor_get_method_by_name(entry->descriptor, slash + 1)
              : NULL;
    if (method == NULL)
        return res;
    wl_arena_t arena;
    wl_arena_init(&arena, 16u * 1024 * 1024);
    wl_error_t err;
    wl_error_init(&err);
    ProtobufCMessage *input = NULL;
    if (wl_json_decode(method->input, body, len, &arena, &input, &err) != 0) {
        wl_arena_dispose(&arena);
        return res;
    }
    grpc_slice request = grpc_slice_malloc(protobuf_c_message_get_packed_size(input));
    protobuf_c_message_pack(input, GRPC_SLICE_START_PTR(request));
    grpc_byte_buffer *request_buffer = grpc_raw_byte_buffer_create(&request, 1);
    grpc_slice_unref(request);

    grpc_completion_queue *queue = grpc_completion_queue_create_for_pluck(NULL);
    char path[300], bearer[256];
    snprintf(path, sizeof(path), "/%s", procedure);
    grpc_slice path_slice = grpc_slice_from_copied_string(path);
    grpc_call *call = grpc_channel_create_call(
        grpc_client, NULL, GRPC_PROPAGATE_DEFAULTS, queue, path_slice, NULL,
        gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_seconds(60, GPR_TIMESPAN)), NULL);
    grpc_slice_unref(path_slice);
    snprintf(bearer, sizeof(bearer), "Bearer %s", key ? key : "");
    grpc_metadata auth = {.key = grpc_slice_from_static_string("authorization"),
                          .value = grpc_slice_from_copied_string(bearer)};
    grpc_metadata_array initial, trailing;
    grpc_metadata_array_init(&initial);
    grpc_metadata_array_init(&trailing);
    grpc_byte_buffer *reply_buffer = NULL;
    grpc_status_code status = GRPC_STATUS_UNKNOWN;
    grpc_slice details = grpc_empty_slice();
    grpc_op ops[6];
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[0].data.send_initial_metadata.count = key ? 1 : 0;
    ops[0].data.send_initial_metadata.metadata = &auth;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = request_buffer;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &initial;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &reply_buffer;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &trailing;
    ops[5].data.recv_status_on_client.status = &status;
    ops[5].data.recv_status_on_client.status_details = &details;
    bool done = grpc_call_start_batch(call, ops, 6, &res, NULL) == GRPC_CALL_OK &&
                grpc_completion_queue_pluck(queue, &res, gpr_inf_future(GPR_CLOCK_REALTIME), NULL)
                        .success != 0;

    if (done) {
        wl_grpc_code_t code = (wl_grpc_code_t)status;
        res.status = code == WL_GRPC_OK ? 200 : (int)wl_http_status_of(code);
        char *head = NULL;
        size_t head_len = 0;
        FILE *out = open_memstream(&head, &head_len);
        fprintf(out, "HTTP/1.1 %d gRPC\r\n", res.status);
        for (size_t i = 0; i < initial.count; i++)
            fprintf(out, "%.*s: %.*s\r\n", (int)GRPC_SLICE_LENGTH(initial.metadata[i].key),
                    (const char *)GRPC_SLICE_START_PTR(initial.metadata[i].key),
                    (int)GRPC_SLICE_LENGTH(initial.metadata[i].value),
                    (const char *)GRPC_SLICE_START_PTR(initial.metadata[i].value));
        fclose(out);
        res.head = head;
        char *text = NULL;
        if (code == WL_GRPC_OK && reply_buffer != NULL) {
            grpc_byte_buffer_reader reader;
            grpc_byte_buffer_reader_init(&reader, reply_buffer);
            grpc_slice all = grpc_byte_buffer_reader_readall(&reader);
            grpc_byte_buffer_reader_destroy(&reader);
            ProtobufCMessage *reply =
                protobuf_c_message_unpack(method->output, &arena.allocator, GRPC_SLICE_LENGTH(all),
                                          GRPC_SLICE_START_PTR(all));
            grpc_slice_unref(all);
            size_t text_len = 0;
            const char *json = reply ? wl_json_encode_text(reply, &arena, &text_len) : NULL;
            text = json ? strndup(json, text_len) : NULL;
        } else {
            json_t *error = json_pack("{s:s, s:s%}", "code", wl_grpc_connect_name(code), "message",
                                      (const char *)GRPC_SLICE_START_PTR(details),
                                      (size_t)GRPC_SLICE_LENGTH(details));
            text = error ? json_dumps(error, JSON_COMPACT) : NULL;
            json_decref(error);
        }
        res.body = text ? text : strdup("");
        res.body_len = strlen(res.body);
        res.json = json_loads(res.body, 0, NULL);
    }
    grpc_slice_unref(auth.value);
    grpc_slice_unref(details);
    if (reply_buffer != NULL)
        grpc_byte_buffer_destroy(reply_buffer);
    grpc_byte_buffer_destroy(request_buffer);
    grpc_metadata_array_destroy(&initial);
    grpc_metadata_array_destroy(&trailing);
    grpc_call_unref(call);
    grpc_completion_queue_shutdown(queue);
    grpc_completion_queue_destroy(queue);
    wl_arena_dispose(&arena);
    return res;
}

static http_response_t connect_json_call(const char *procedure, const char *key, const void *body,
                                         size_t len)
{
    return connect_call(procedure, key, JSON, body, len);
}

typedef http_response_t (*rpc_caller_t)(const char *procedure, const char *key, const void *body,
                                        size_t len);

/* Every method of every core service, with Connect's answers, through one RPC transport. */
static void test_rpc_matrix(wl_core_t *core, rpc_caller_t rpc_call, const char *transport)
{
    const wl_service_entry_t *services;
    size_t service_count = wl_core_services(core, &services);
    size_t methods_seen = 0;
    for (size_t i = 0; i < service_count; i++) {
        const ProtobufCServiceDescriptor *desc = services[i].descriptor;
        for (unsigned m = 0; m < desc->n_methods; m++) {
            char procedure[256], what[1024];
            snprintf(procedure, sizeof(procedure), "%s/%s", desc->name, desc->methods[m].name);
            unsigned scope = wl_core_method_policy(&services[i], m)->scope;
            methods_seen++;
            /* A server stream answers in its own form (over Connect, 200 and an end-stream
             * message): e2e.test_watch_stock checks its refusals and its tenant isolation. */
            if (wl_core_method_policy(&services[i], m)->server_streaming)
                continue;

            http_response_t res = rpc_call(procedure, NULL, "{}", 2);
            snprintf(what, sizeof(what), "%s without a key", procedure);
            check_unauthenticated(&res, true, false, what);
            http_response_free(&res);
            res = rpc_call(procedure, key_revoked, "{}", 2);
            snprintf(what, sizeof(what), "%s with a revoked key", procedure);
            check_unauthenticated(&res, true, true, what);
            http_response_free(&res);
            for (size_t s = 0; s < SCOPES; s++) {
                res = rpc_call(procedure, key_a_without[s], "{}", 2);
                snprintf(what, sizeof(what), "%s with a key lacking scope %u", procedure,
                         scope_bits[s]);
                if ((scope & scope_bits[s]) != 0)
                    check_status(&res, 403, "permission_denied", true, what);
                else if (res.status == 401 || res.status == 403 || res.status >= 500 ||
                         res.status == 0)
                    FAIL("%s: got %d %s", what, res.status, res.body ? res.body : "");
                http_response_free(&res);
            }

            bool covered = false;
            for (size_t c = 0; c < sizeof(cross_cases) / sizeof(cross_cases[0]); c++) {
                const cross_case_t *x = &cross_cases[c];
                if (strcmp(x->procedure, procedure) != 0)
                    continue;
                covered = true;
                char body[512], own[48];
                fresh_list_of_a(own);
                const char *slot = strchr(x->body, '%');
                if (slot != NULL)
                    snprintf(body, sizeof(body), "%.*s%s%s", (int)(slot - x->body), x->body,
                             slot[1] == 'B' ? list_b : own, slot + 2);
                else
                    snprintf(body, sizeof(body), "%s", x->body);
                res = rpc_call(procedure, x->with_b_key ? key_b : key_a, body, strlen(body));
                snprintf(what, sizeof(what), "%s %s with %s's key", procedure, body,
                         x->with_b_key ? "B" : "A");
                if (x->code != NULL)
                    check_status(&res, x->status, x->code, true, what);
                else if (res.status != x->status)
                    FAIL("%s: expected %d, got %d %s", what, x->status, res.status, res.body);
                if (!x->with_b_key &&
                    (body_contains(&res, "b-secret") || body_contains(&res, list_b) ||
                     body_contains(&res, "B secret") ||
                     (res.status == 200 && body_contains(&res, "B-SECRET-SKU\""))))
                    FAIL("%s: the answer shows organization B's data: %s", what, res.body);
                http_response_free(&res);
            }
            if (!covered)
                FAIL("method %s has no cross-organization case in the tenant matrix: add one",
                     procedure);
        }
    }
    CHECK(methods_seen >= 14);
    fprintf(stderr, "%s: %zu methods of %zu services through the same matrix\n", transport,
            methods_seen, service_count);
}

/* --- Hostile strings ---------------------------------------------------------------------- */

typedef enum {
    PLAIN,          /* valid UTF-8 text without control characters: fits where it is short enough */
    CONTROL,        /* control characters: valid UTF-8, but never in a name or code */
    UNREPRESENTABLE /* NUL or invalid UTF-8: no string field can hold it, so always refused */
} hostile_kind_t;

typedef struct {
    const char *label;
    char *bytes;
    size_t len;
    hostile_kind_t kind;
} hostile_t;

static hostile_t hostile[32];
static size_t hostile_count;

static void add_hostile(const char *label, const char *bytes, size_t len, hostile_kind_t kind)
{
    hostile_t *h = &hostile[hostile_count++];
    h->label = label;
    h->bytes = malloc(len + 1);
    memcpy(h->bytes, bytes, len);
    h->bytes[len] = '\0';
    h->len = len;
    h->kind = kind;
}

static char *repeat(const char *unit, size_t times)
{
    size_t len = strlen(unit);
    char *s = malloc(len * times + 1);
    for (size_t i = 0; i < times; i++)
        memcpy(s + i * len, unit, len);
    s[len * times] = '\0';
    return s;
}

#define ADD(label, literal, kind) add_hostile(label, literal, sizeof(literal) - 1, kind)

static void make_hostile(void)
{
    ADD("sql drop", "'; DROP TABLE locate_lists; --", PLAIN);
    ADD("sql or", "\" OR 1=1 --", PLAIN);
    ADD("sql bobby", "Robert'); DROP TABLE api_keys;--", PLAIN);
    ADD("format", "%s%s%n%x%p", PLAIN);
    ADD("json-ish", "{\"$ne\":null}", PLAIN);
    char *s = repeat("\xF0\x9F\x98\x80", 120); /* U+1F600 */
    add_hostile("120 emoji", s, strlen(s), PLAIN);
    free(s);
    s = repeat("\xF0\x9F\x98\x80", 121);
    add_hostile("121 emoji", s, strlen(s), PLAIN);
    free(s);
    s = repeat("\xF0\x9D\x94\x98", 64); /* U+1D518 */
    add_hostile("64 four-byte", s, strlen(s), PLAIN);
    free(s);
    s = repeat("\xF0\x9D\x94\x98", 65);
    add_hostile("65 four-byte", s, strlen(s), PLAIN);
    free(s);
    s = repeat("x", 10000);
    add_hostile("10000 x", s, strlen(s), PLAIN);
    free(s);
    ADD("BEL",
        "a\x07"
        "b",
        CONTROL);
    ADD("CRLF header injection", "a\r\nX-Injected: 1", CONTROL);
    ADD("NUL inside", "a\0b", UNREPRESENTABLE);
    ADD("NUL alone", "\0", UNREPRESENTABLE);
    ADD("invalid bytes",
        "a\xFF\xFE"
        "b",
        UNREPRESENTABLE);
    ADD("overlong slash", "\xC0\xAF", UNREPRESENTABLE);
    ADD("surrogate", "\xED\xA0\x80", UNREPRESENTABLE);
    ADD("cut sequence", "abc\xE2\x82", UNREPRESENTABLE);
}

static void check_never_broken(const http_response_t *res, const char *what)
{
    if (res->status == 0 || res->status >= 500)
        FAIL("%s: got %d %s", what, res->status, res->body ? res->body : "");
}

/* What was created under name (REST or Connect), read back: name and first code. */
static void check_stored_list(const char *id, const hostile_t *name, const hostile_t *code,
                              const char *what)
{
    const char *params[] = {id};
    PGresult *r = PQexecParams(db, "SELECT name, codes[1] FROM locate_lists WHERE id = $1", 1, NULL,
                               params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
        FAIL("%s: list %s not stored", what, id);
    } else {
        if (name != NULL && ((size_t)PQgetlength(r, 0, 0) != name->len ||
                             memcmp(PQgetvalue(r, 0, 0), name->bytes, name->len) != 0))
            FAIL("%s: name stored as '%s'", what, PQgetvalue(r, 0, 0));
        if (code != NULL && ((size_t)PQgetlength(r, 0, 1) != code->len ||
                             memcmp(PQgetvalue(r, 0, 1), code->bytes, code->len) != 0))
            FAIL("%s: code stored as '%s'", what, PQgetvalue(r, 0, 1));
    }
    PQclear(r);
    /* And the API reads it back the same. */
    char target[128];
    snprintf(target, sizeof(target), "/api/v1/locate-lists/%s", id);
    http_response_t res = call("GET", target, key_a, NULL, NULL, 0, NULL);
    CHECK_INT(res.status, 200);
    const char *got = e2e_str(res.json, "name", NULL);
    if (name != NULL && (got == NULL || strcmp(got, name->bytes) != 0))
        FAIL("%s: GET answers the name '%s'", what, got ? got : "(none)");
    json_t *codes = json_object_get(res.json, "codes");
    if (code != NULL && (json_string_value(json_array_get(codes, 0)) == NULL ||
                         strcmp(json_string_value(json_array_get(codes, 0)), code->bytes) != 0))
        FAIL("%s: GET answers the code '%s'", what,
             json_string_value(json_array_get(codes, 0))
                 ? json_string_value(json_array_get(codes, 0))
                 : "(none)");
    http_response_free(&res);
}

/* Valid as a walk-list name / code (1-120 / 1-64 characters, no control characters)? */
static bool valid_name(const hostile_t *h)
{
    return h->kind == PLAIN && strcmp(h->label, "121 emoji") != 0 &&
           strcmp(h->label, "10000 x") != 0;
}

static bool valid_code(const hostile_t *h)
{
    return h->kind == PLAIN && strstr(h->label, "emoji") == NULL &&
           strcmp(h->label, "65 four-byte") && strcmp(h->label, "10000 x") != 0;
}

static void test_rest_hostile(void)
{
    for (size_t i = 0; i < hostile_count; i++) {
        const hostile_t *h = &hostile[i];
        char what[160];
        for (int field = 0; field < 2; field++) {
            /* JSON body: the hostile string as the name, then as the first code. */
            buf_t body = {0};
            puts_(&body, "{\"name\":");
            if (field == 0)
                put_json_string(&body, h->bytes, h->len);
            else
                puts_(&body, "\"ok\"");
            puts_(&body, ",\"codes\":[");
            if (field == 1)
                put_json_string(&body, h->bytes, h->len);
            else
                puts_(&body, "\"C\"");
            puts_(&body, "]}");
            http_response_t res =
                call("POST", "/api/v1/locate-lists", key_a, JSON, body.base, body.len, NULL);
            snprintf(what, sizeof(what), "POST JSON %s = %s", field ? "codes[0]" : "name",
                     h->label);
            check_never_broken(&res, what);
            bool valid = field == 0 ? valid_name(h) : valid_code(h);
            if (valid && res.status == 201)
                check_stored_list(e2e_str(res.json, "id", NULL), field == 0 ? h : NULL,
                                  field == 1 ? h : NULL, what);
            else if (valid)
                FAIL("%s: expected 201, got %d %s", what, res.status, res.body);
            else
                check_status(&res, 400, "INVALID_ARGUMENT", false, what);
            http_response_free(&res);
            free(body.base);

            /* The GET form: percent-encoded in the query. */
            buf_t target = {0};
            puts_(&target, "/api/v1/locate-lists?name=");
            if (field == 0)
                put_pct(&target, h->bytes, h->len);
            else
                puts_(&target, "ok");
            puts_(&target, "&codes=");
            if (field == 1)
                put_pct(&target, h->bytes, h->len);
            else
                puts_(&target, "C");
            res = call("GET", target.base, key_a, NULL, NULL, 0, NULL);
            snprintf(what, sizeof(what), "GET form %s = %s", field ? "codes" : "name", h->label);
            check_never_broken(&res, what);
            if (valid && res.status == 201)
                check_stored_list(e2e_str(res.json, "id", NULL), field == 0 ? h : NULL,
                                  field == 1 ? h : NULL, what);
            else if (valid)
                FAIL("%s: expected 201, got %d %s", what, res.status, res.body);
            else
                check_status(&res, 400, "INVALID_ARGUMENT", false, what);
            http_response_free(&res);
            free(target.base);
        }

        /* As a list id in the path and in the device body: no such list. */
        buf_t target = {0};
        puts_(&target, "/api/v1/locate-lists/");
        put_pct(&target, h->bytes, h->len);
        http_response_t res = call("GET", target.base, key_a, NULL, NULL, 0, NULL);
        snprintf(what, sizeof(what), "GET by id %s", h->label);
        check_never_broken(&res, what);
        if (res.status != 404 && res.status != 400)
            FAIL("%s: expected 404 or 400, got %d", what, res.status);
        http_response_free(&res);
        free(target.base);
        buf_t body = {0};
        put_proto_bytes(&body, 1, h->bytes, h->len);
        res = call("POST", "/walklist.scanner.v1.DeviceService/LoadList", key_a, PROTO, body.base,
                   body.len, NULL);
        snprintf(what, sizeof(what), "device LoadList id %s", h->label);
        check_never_broken(&res, what);
        /* 413: device requests are at most WL_DEVICE_BODY_LIMIT bytes. */
        if (res.status != 404 && res.status != 400 && res.status != 413)
            FAIL("%s: expected 404, 400 or 413, got %d", what, res.status);
        http_response_free(&res);
        free(body.base);

        /* Breakdown filters and page token. */
        static const char *const params[] = {"sku", "warehouse", "pageToken"};
        for (size_t p = 0; p < 3; p++) {
            buf_t q = {0};
            puts_(&q, "/api/v1/stock?");
            puts_(&q, params[p]);
            puts_(&q, "=");
            put_pct(&q, h->bytes, h->len);
            res = call("GET", q.base, key_a, NULL, NULL, 0, NULL);
            snprintf(what, sizeof(what), "GET /api/v1/stock %s = %s", params[p], h->label);
            check_never_broken(&res, what);
            if (res.status != 200 && res.status != 400)
                FAIL("%s: expected 200 or 400, got %d", what, res.status);
            if (h->kind == UNREPRESENTABLE && res.status != 400)
                FAIL("%s: a string no field can hold was not refused (%d)", what, res.status);
            http_response_free(&res);
            free(q.base);
        }
    }

    /* Idempotency-Key: printable ASCII is kept verbatim (and replays); anything else is 400. */
    const char *sql_key = "'; DROP TABLE idempotency_keys; --";
    char header[128];
    snprintf(header, sizeof(header), "Idempotency-Key: %s\r\n", sql_key);
    const char *list = "{\"name\":\"keyed\",\"codes\":[\"K\"]}";
    http_response_t first =
        call("POST", "/api/v1/locate-lists", key_a, JSON, list, strlen(list), header);
    http_response_t again =
        call("POST", "/api/v1/locate-lists", key_a, JSON, list, strlen(list), header);
    CHECK_INT(first.status, 201);
    CHECK_INT(again.status, 201);
    CHECK_STR(e2e_str(again.json, "id", NULL), e2e_str(first.json, "id", NULL));
    const char *params[] = {sql_key};
    PGresult *r = PQexecParams(db, "SELECT list_id FROM idempotency_keys WHERE key = $1", 1, NULL,
                               params, NULL, NULL, 0);
    CHECK(PQntuples(r) == 1 && e2e_str(first.json, "id", NULL) != NULL &&
          strcmp(PQgetvalue(r, 0, 0), e2e_str(first.json, "id", NULL)) == 0);
    PQclear(r);
    http_response_free(&first);
    http_response_free(&again);
    const char *bad_keys[] = {"Idempotency-Key: \xF0\x9F\x98\x80\r\n",
                              "Idempotency-Key: a\x01z\r\n"};
    for (size_t i = 0; i < 2; i++) {
        http_response_t res =
            call("POST", "/api/v1/locate-lists", key_a, JSON, list, strlen(list), bad_keys[i]);
        check_status(&res, 400, "INVALID_ARGUMENT", false, "a non-ASCII Idempotency-Key");
        http_response_free(&res);
    }
}

/* Connect: every string field of every method's request, in both codecs. */

static const char *sample_string(const char *field)
{
    static const struct {
        const char *field, *value;
    } samples[] = {
        {"name", "n"},    {"codes", "C1"},     {"kind", "own"},    {"warehouse", "WA"},
        {"code", "A-9"},  {"location", "A-1"}, {"sku", "SKU-A"},   {"eans", "4006381333931"},
        {"ref", "R-NEW"}, {"refs", "R-NONE"},  {"page_token", ""},
    };
    if (strcmp(field, "id") == 0)
        return list_a;
    for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++)
        if (strcmp(samples[i].field, field) == 0)
            return samples[i].value;
    return "x";
}

static void json_name(const char *proto_name, char *out, size_t size)
{
    size_t o = 0;
    for (const char *p = proto_name; *p != '\0' && o + 1 < size; p++) {
        if (*p == '_' && p[1] != '\0')
            out[o++] = (char)(p[1] >= 'a' && p[1] <= 'z' ? p[1] - 32 : p[1]), p++;
        else
            out[o++] = *p;
    }
    out[o] = '\0';
}

/*
 * Writes a sample request of desc: every field set (repeated ones once), strings from
 * sample_string, except the one at path target, which gets value. Field paths look like
 * "products[0].name". With collect, only lists the string field paths instead.
 */
static void emit(const ProtobufCMessageDescriptor *desc, const char *prefix, bool as_json,
                 const char *target, const hostile_t *value, buf_t *out, char paths[][96],
                 size_t *path_count, int depth)
{
    if (as_json)
        puts_(out, "{");
    for (unsigned f = 0; f < desc->n_fields; f++) {
        const ProtobufCFieldDescriptor *field = &desc->fields[f];
        bool repeated = field->label == PROTOBUF_C_LABEL_REPEATED;
        char path[96], name[64];
        snprintf(path, sizeof(path), "%s%s%s%s", prefix, prefix[0] ? "." : "", field->name,
                 repeated ? "[0]" : "");
        json_name(field->name, name, sizeof(name));
        if (as_json) {
            if (f > 0)
                puts_(out, ",");
            put_json_string(out, name, strlen(name));
            puts_(out, repeated ? ":[" : ":");
        }
        switch (field->type) {
        case PROTOBUF_C_TYPE_STRING: {
            if (paths != NULL) {
                snprintf(paths[(*path_count)++], 96, "%s", path);
                break;
            }
            bool hostile_here = target != NULL && strcmp(path, target) == 0;
            const char *s = hostile_here ? value->bytes : sample_string(field->name);
            size_t len = hostile_here ? value->len : strlen(s);
            if (as_json)
                put_json_string(out, s, len);
            else
                put_proto_bytes(out, field->id, s, len);
            break;
        }
        case PROTOBUF_C_TYPE_MESSAGE: {
            buf_t inner = {0};
            put(&inner, "", 0);
            if (depth < 4)
                emit(field->descriptor, path, as_json, target, value, as_json ? out : &inner, paths,
                     path_count, depth + 1);
            else if (as_json)
                puts_(out, "{}");
            if (!as_json && paths == NULL)
                put_proto_bytes(out, field->id, inner.base, inner.len);
            free(inner.base);
            break;
        }
        case PROTOBUF_C_TYPE_BOOL:
            if (as_json) {
                puts_(out, "false");
            } else if (paths == NULL) {
                put_varint(out, (uint64_t)field->id << 3);
                put_varint(out, 0);
            }
            break;
        default: {
            /* Numbers: small and positive (page sizes, quantities). */
            int number = strcmp(field->name, "page_size") == 0 ? 10 : 1;
            if (as_json) {
                char text[16];
                snprintf(text, sizeof(text), "%d", number);
                puts_(out, text);
            } else if (paths == NULL) {
                put_varint(out, (uint64_t)field->id << 3);
                put_varint(out, (uint64_t)number);
            }
            break;
        }
        }
        if (as_json && repeated)
            puts_(out, "]");
    }
    if (as_json)
        puts_(out, "}");
}

/* After a 200, an inventory string the request set is stored as sent. */
static void check_stored_inventory(const char *procedure, const char *path, const hostile_t *h,
                                   const char *what)
{
    static const struct {
        const char *procedure, *path, *sql;
    } stored[] = {
        {"walklist.v1.InventoryService/UpsertWarehouses", "warehouses[0].code",
         "SELECT count(*) FROM warehouses WHERE org_id = $1 AND code = $2"},
        {"walklist.v1.InventoryService/UpsertWarehouses", "warehouses[0].name",
         "SELECT count(*) FROM warehouses WHERE org_id = $1 AND name = $2"},
        {"walklist.v1.InventoryService/UpsertLocations", "locations[0].code",
         "SELECT count(*) FROM locations WHERE org_id = $1 AND code = $2"},
        {"walklist.v1.InventoryService/UpsertProducts", "products[0].sku",
         "SELECT count(*) FROM products WHERE org_id = $1 AND sku = $2"},
        {"walklist.v1.InventoryService/UpsertProducts", "products[0].name",
         "SELECT count(*) FROM products WHERE org_id = $1 AND name = $2"},
        {"walklist.v1.InventoryService/UpsertProducts", "products[0].eans[0]",
         "SELECT count(*) FROM product_eans WHERE org_id = $1 AND ean = $2"},
        {"walklist.v1.InventoryService/CreateReservations", "reservations[0].ref",
         "SELECT count(*) FROM reservations WHERE org_id = $1 AND ref = $2"},
    };
    for (size_t i = 0; i < sizeof(stored) / sizeof(stored[0]); i++) {
        if (strcmp(stored[i].procedure, procedure) != 0 || strcmp(stored[i].path, path) != 0)
            continue;
        char org[32];
        snprintf(org, sizeof(org), "%lld", (long long)org_a);
        const char *params[] = {org, h->bytes};
        PGresult *r = PQexecParams(db, stored[i].sql, 2, NULL, params, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_TUPLES_OK || atoi(PQgetvalue(r, 0, 0)) < 1)
            FAIL("%s: answered 200 but the value is not stored verbatim", what);
        PQclear(r);
    }
}

static void test_connect_hostile(wl_core_t *core)
{
    const wl_service_entry_t *services;
    size_t service_count = wl_core_services(core, &services);
    size_t requests = 0;
    for (size_t i = 0; i < service_count; i++) {
        const ProtobufCServiceDescriptor *desc = services[i].descriptor;
        for (unsigned m = 0; m < desc->n_methods; m++) {
            char procedure[256];
            snprintf(procedure, sizeof(procedure), "%s/%s", desc->name, desc->methods[m].name);
            if (wl_core_method_policy(&services[i], m)->server_streaming)
                continue; /* unary codecs are 415 there; e2e.test_watch_stock */
            char paths[32][96];
            size_t path_count = 0;
            buf_t scratch = {0};
            emit(desc->methods[m].input, "", true, NULL, NULL, &scratch, paths, &path_count, 0);
            free(scratch.base);
            for (size_t p = 0; p < path_count; p++) {
                for (size_t h = 0; h < hostile_count; h++) {
                    for (int codec = 0; codec < 2; codec++) {
                        buf_t body = {0};
                        put(&body, "", 0);
                        emit(desc->methods[m].input, "", codec == 0, paths[p], &hostile[h], &body,
                             NULL, NULL, 0);
                        http_response_t res = connect_call(procedure, key_a, codec ? PROTO : JSON,
                                                           body.base, body.len);
                        requests++;
                        char what[1024];
                        snprintf(what, sizeof(what), "%s %s %.95s = %s", procedure,
                                 codec ? "proto" : "json", paths[p], hostile[h].label);
                        check_never_broken(&res, what);
                        if (res.status != 200 && res.status != 400 && res.status != 404 &&
                            res.status != 409)
                            FAIL("%s: got %d %s", what, res.status, res.body);
                        /* NUL and invalid UTF-8 fit no field: refused, never cut short or
                         * stored altered; control characters never make a walk list. */
                        bool creates_list =
                            strcmp(procedure, "walklist.v1.LocateListService/CreateLocateList") ==
                            0;
                        if (res.status == 200 && (hostile[h].kind == UNREPRESENTABLE ||
                                                  (hostile[h].kind == CONTROL && creates_list)))
                            FAIL("%s: accepted (200): %s", what, res.body);
                        if (res.status == 200)
                            check_stored_inventory(procedure, paths[p], &hostile[h], what);
                        /* A list created with a hostile name or code keeps it verbatim. */
                        if (res.status == 200 && creates_list) {
                            const char *id = codec ? NULL : e2e_str(res.json, "id", NULL);
                            char found[64] = "";
                            if (id == NULL) {
                                /* proto answer: read back the newest list */
                                testdb_value(db,
                                             "SELECT id FROM locate_lists ORDER BY created_at "
                                             "DESC, id LIMIT 1",
                                             found, sizeof(found));
                                id = found;
                            }
                            bool is_name = strcmp(paths[p], "name") == 0;
                            check_stored_list(id, is_name ? &hostile[h] : NULL,
                                              is_name ? NULL : &hostile[h], what);
                        }
                        http_response_free(&res);
                        free(body.base);
                    }
                }
            }
        }
    }
    fprintf(stderr, "Connect: %zu hostile requests\n", requests);
}

static long long public_tables(void)
{
    return testdb_count(db, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'");
}

int main(void)
{
    const char *conninfo = testdb_create("e2e_tenant_matrix");
    db = testdb_connect(conninfo);
    org_a = fixture_org(db, "matrix-a");
    org_b = fixture_org(db, "matrix-b");
    const char *all = "lists:write,stock:read,scanner,inventory:write";
    fixture_key(db, org_a, all, key_a);
    fixture_key(db, org_b, all, key_b);
    fixture_key(db, org_a, all, key_revoked);
    for (size_t s = 0; s < SCOPES; s++) {
        char scopes[128] = "";
        for (size_t t = 0; t < SCOPES; t++) {
            if (t == s)
                continue;
            char name[32];
            wl_scopes_format(scope_bits[t], name, sizeof(name));
            snprintf(scopes + strlen(scopes), sizeof(scopes) - strlen(scopes), "%s%s",
                     scopes[0] ? "," : "", name);
        }
        fixture_key(db, org_a, scopes, key_a_without[s]);
    }
    char prefix[WL_KEY_PREFIX_LEN + 1];
    wl_error_t revoke_err;
    wl_error_init(&revoke_err);
    if (!wl_keys_parse(wl_span_str(key_revoked), prefix) ||
        wl_keys_revoke(db, prefix, &revoke_err) != 0)
        FAIL("cannot revoke a key: %s", revoke_err.message);

    fixture_import(db, org_a, "warehouses", "code,name,kind\nWA,A main,own\n");
    fixture_import(db, org_a, "locations", "warehouse,code,staging\nWA,A-1,false\n");
    fixture_import(db, org_a, "products", "sku,name,eans\nSKU-A,Alpha,4006381333931\n");
    fixture_import(db, org_a, "stock", "sku,warehouse,on_hand\nSKU-A,WA,5\n");
    fixture_import(db, org_a, "location-stock",
                   "sku,warehouse,location,quantity\nSKU-A,WA,A-1,5\n");
    fixture_import(db, org_a, "reservations",
                   "ref,sku,warehouse,quantity,status\nR-A,SKU-A,WA,1,active\n");
    fixture_import(db, org_b, "warehouses", "code,name,kind\nWB,B main,own\nWB2,B second,own\n");
    fixture_import(db, org_b, "locations", "warehouse,code,staging\nWB2,B-1,false\n");
    fixture_import(db, org_b, "products",
                   "sku,name,eans\nB-SECRET-SKU,B secret product,4006381333931\n"
                   "B-SECRET-SKU2,B second secret,\n");
    fixture_import(db, org_b, "stock", "sku,warehouse,on_hand\nB-SECRET-SKU,WB2,8\n");
    fixture_import(db, org_b, "location-stock",
                   "sku,warehouse,location,quantity\nB-SECRET-SKU,WB2,B-1,8\n");
    fixture_import(db, org_b, "reservations",
                   "ref,sku,warehouse,quantity,status\nR-B,B-SECRET-SKU,WB2,1,active\n");

    const char *const grpc_args[] = {"--grpc-listen", "127.0.0.1:0", NULL};
    service_start(&service, conninfo, grpc_args);
    port = service.port;
    char *log = service_log(&service);
    const char *grpc_field = log ? strstr(log, "\"grpcPort\":") : NULL;
    unsigned grpc_port = grpc_field ? (unsigned)strtoul(grpc_field + 11, NULL, 10) : 0;
    free(log);
    CHECK(grpc_port != 0);
    fresh_list_of_a(list_a);
    http_response_t res =
        post_list(key_b, "{\"name\":\"b-secret-list\",\"codes\":[\"B-SECRET-SKU\"]}");
    CHECK_INT(res.status, 201);
    snprintf(list_b, sizeof(list_b), "%s", e2e_str(res.json, "id", NULL));
    http_response_free(&res);
    res = post_list(key_b, "{\"name\":\"b-secret-loaded\",\"codes\":[\"B-SECRET-SKU\"]}");
    snprintf(list_b_loaded, sizeof(list_b_loaded), "%s", e2e_str(res.json, "id", NULL));
    http_response_free(&res);
    char digest_before[64], digest_after[64];
    digest_of_b(digest_before);
    long long tables = public_tables();

    wl_core_config_t config = {.database_url = conninfo, .db_pool_size = 1};
    wl_core_t *core = NULL;
    wl_error_t err;
    wl_error_init(&err);
    if (wl_core_create(&config, &core, &err) != 0) {
        FAIL("cannot create a core: %s", err.message);
        return test_exit();
    }
    test_rest_matrix();
    test_rpc_matrix(core, connect_json_call, "Connect");
    char grpc_target[64];
    snprintf(grpc_target, sizeof(grpc_target), "127.0.0.1:%u", grpc_port);
    grpc_init();
    grpc_channel_credentials *insecure = grpc_insecure_credentials_create();
    grpc_client = grpc_channel_create(grpc_target, insecure, NULL);
    grpc_channel_credentials_release(insecure);
    grpc_core = core;
    test_rpc_matrix(core, grpc_json_call, "gRPC");
    grpc_channel_destroy(grpc_client);
    grpc_shutdown_blocking();
    make_hostile();
    test_rest_hostile();
    test_connect_hostile(core);
    wl_core_destroy(core);

    /* Nothing of B's changed; every table is still there; the server is alive and serves. */
    digest_of_b(digest_after);
    CHECK_STR(digest_after, digest_before);
    CHECK_INT(public_tables(), tables);
    CHECK(testdb_count(db, "SELECT count(*) FROM locate_lists") > 0);
    CHECK(testdb_count(db, "SELECT count(*) FROM api_keys") > 0);
    CHECK(kill(service.pid, 0) == 0);
    res = post_list(key_a, "{\"name\":\"last\",\"codes\":[\"Z\"]}");
    CHECK_INT(res.status, 201);
    http_response_free(&res);
    for (size_t i = 0; i < hostile_count; i++)
        free(hostile[i].bytes);
    CHECK_INT(service_stop(&service), 0);
    PQfinish(db);
    return test_exit();
}
