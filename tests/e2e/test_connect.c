/*
 * End to end: the Connect transport (the internal services' RPC) over raw HTTP/1.1 against a
 * running walklistd. Binary (protobuf-c) and JSON round trips of every method of LocateListService,
 * StockService and ScannerService, checked against the REST answers for the same data; every
 * procedure of the core registry routed; each Connect error code the transport uses, with its
 * HTTP status and error JSON (google.rpc.BadRequest details decoded from binary); content
 * types, the protocol version header, timeouts, body limits and rate limits; gzip both ways,
 * and the refusals of a body that inflates past the limit, of corrupt gzip and of an unknown
 * coding, each with nothing written.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocols/connect.h"
#include "e2e.h"
#include "fixture.h"
#include "google/rpc/error_details.pb-c.h"
#include "gunzip.h"
#include "service.h"
#include "testdb.h"
#include "walklist/core.h"
#include "walklist/v1/inventory.pb-c.h"
#include "walklist/v1/locate_list.pb-c.h"
#include "walklist/v1/scanner.pb-c.h"
#include "walklist/v1/stock.pb-c.h"

#define PROTO "application/proto"
#define JSON  "application/json"

static service_t service, limited;
static PGconn *db;
static uint16_t port;
static char key_all[WL_KEY_TOKEN_SIZE], key_lists[WL_KEY_TOKEN_SIZE], key_b[WL_KEY_TOKEN_SIZE];
static char key_every_scope[WL_KEY_TOKEN_SIZE], key_c[WL_KEY_TOKEN_SIZE];
static char key_inventory[WL_KEY_TOKEN_SIZE];

/* --- Requests ----------------------------------------------------------------------------- */

/*
 * POSTs body to /<procedure> on port_ with the Connect headers: Bearer key (when not NULL),
 * Content-Type (when not NULL), Connect-Protocol-Version: 1, and extra header lines.
 */
static http_response_t call_at(uint16_t port_, const char *procedure, const char *key,
                               const char *content_type, const void *body, size_t len,
                               const char *extra)
{
    char target[256], headers[1024] = "";
    snprintf(target, sizeof(target), "/%s", procedure);
    size_t used = 0;
    if (key != NULL)
        used += (size_t)snprintf(headers + used, sizeof(headers) - used,
                                 "Authorization: Bearer %s\r\n", key);
    if (content_type != NULL)
        used += (size_t)snprintf(headers + used, sizeof(headers) - used, "Content-Type: %s\r\n",
                                 content_type);
    snprintf(headers + used, sizeof(headers) - used, "%s%s",
             extra && strstr(extra, "Connect-Protocol-Version") ? ""
                                                                : "Connect-Protocol-Version: 1\r\n",
             extra ? extra : "");
    http_response_t res;
    if (http_request(port_, "POST", target, headers, body ? body : "", len, &res) != 0)
        FAIL("POST %s failed", target);
    return res;
}

static http_response_t call(const char *procedure, const char *key, const char *content_type,
                            const void *body, size_t len, const char *extra)
{
    return call_at(port, procedure, key, content_type, body, len, extra);
}

static http_response_t call_json(const char *procedure, const char *key, const char *body)
{
    return call(procedure, key, JSON, body, strlen(body), NULL);
}

/* Packs a protobuf-c message and POSTs it as application/proto. */
static http_response_t call_proto(const char *procedure, const char *key,
                                  const ProtobufCMessage *message, const char *extra)
{
    size_t len = protobuf_c_message_get_packed_size(message);
    uint8_t *packed = malloc(len ? len : 1);
    protobuf_c_message_pack(message, packed);
    http_response_t res = call(procedure, key, PROTO, packed, len, extra);
    free(packed);
    return res;
}

static const char *header_of(const http_response_t *res, const char *name)
{
    static char value[8][512];
    static int next;
    char *buf = value[next++ % 8];
    return http_header(res, name, buf, 512);
}

/* A 200 application/proto answer unpacked as desc (NULL, with a failure, otherwise). */
static ProtobufCMessage *proto_reply(const http_response_t *res,
                                     const ProtobufCMessageDescriptor *desc)
{
    if (res->status != 200 || header_of(res, "Content-Type") == NULL ||
        strcmp(header_of(res, "Content-Type"), PROTO) != 0) {
        FAIL("expected a 200 %s answer, got %d %s: %s", PROTO, res->status,
             header_of(res, "Content-Type") ? header_of(res, "Content-Type") : "-", res->body);
        return NULL;
    }
    ProtobufCMessage *message =
        protobuf_c_message_unpack(desc, NULL, res->body_len, (const uint8_t *)res->body);
    if (message == NULL)
        FAIL("the answer is not a valid %s", desc->name);
    return message;
}

/* --- Error checks ------------------------------------------------------------------------- */

/* Checks the HTTP status, Content-Type application/json and Connect's {"code","message"}. */
#define CHECK_CONNECT_ERROR(res, http_status, connect_code)                                        \
    do {                                                                                           \
        CHECK_INT((res).status, http_status);                                                      \
        CHECK_STR(header_of(&(res), "Content-Type"), "application/json");                          \
        CHECK((res).json != NULL);                                                                 \
        CHECK_STR(json_string_value(json_object_get((res).json, "code")), connect_code);           \
        CHECK(json_is_string(json_object_get((res).json, "message")));                             \
        CHECK(json_object_get((res).json, "error") == NULL);                                       \
        Google__Rpc__ErrorInfo *info_ = (Google__Rpc__ErrorInfo *)e2e_connect_detail(              \
            &(res), &google__rpc__error_info__descriptor);                                         \
        if (info_ == NULL || strcmp(info_->domain, "walklist.dev") != 0 || info_->reason[0] == 0)  \
            FAIL("no ErrorInfo of walklist.dev in %s", (res).body);                                \
        if (info_ != NULL)                                                                         \
            protobuf_c_message_free_unpacked(&info_->base, NULL);                                  \
    } while (0)

/*
 * The google.rpc.BadRequest detail of a Connect error (the first of two: the ErrorInfo every
 * error carries follows it), decoded from its base64 "value" (the "debug" copy is checked
 * against it); NULL with a failure when there is none.
 */
static Google__Rpc__BadRequest *bad_request(const http_response_t *res)
{
    json_t *details = json_object_get(res->json, "details");
    if (json_array_size(details) != 2) {
        FAIL("expected two details in %s", res->body);
        return NULL;
    }
    CHECK_CONNECT_REASON(*res, "INVALID_REQUEST", NULL, NULL);
    json_t *detail = json_array_get(details, 0);
    CHECK_STR(json_string_value(json_object_get(detail, "type")), "google.rpc.BadRequest");
    Google__Rpc__BadRequest *decoded =
        (Google__Rpc__BadRequest *)e2e_connect_detail(res, &google__rpc__bad_request__descriptor);
    if (decoded == NULL) {
        FAIL("no BadRequest value that decodes in %s", res->body);
        return NULL;
    }
    json_t *debug = json_object_get(json_object_get(detail, "debug"), "fieldViolations");
    CHECK_INT(json_array_size(debug), decoded->n_field_violations);
    for (size_t i = 0; i < decoded->n_field_violations && i < json_array_size(debug); i++) {
        CHECK_STR(json_string_value(json_object_get(json_array_get(debug, i), "field")),
                  decoded->field_violations[i]->field);
    }
    return decoded;
}

static bool has_violation(const Google__Rpc__BadRequest *request, const char *field)
{
    for (size_t i = 0; request != NULL && i < request->n_field_violations; i++) {
        if (strcmp(request->field_violations[i]->field, field) == 0 &&
            request->field_violations[i]->description[0] != '\0')
            return true;
    }
    return false;
}

/* --- Data --------------------------------------------------------------------------------- */

static void load_inventory(int64_t org)
{
    fixture_import(db, org, "warehouses",
                   "code,name,kind\nWH1,Main,own\nWH2,Annex,own\nSUP,Supplier,supplier\n");
    fixture_import(db, org, "locations",
                   "warehouse,code,staging\nWH1,A-2,false\nWH1,A-10,false\nWH2,B-1,false\n"
                   "WH1,STAGE,true\nSUP,S-1,false\n");
    fixture_import(
        db, org, "products",
        "sku,name,eans\nSKU-1,Blue widget,4006381333931\nSKU-2,Red widget,5000000000001\n"
        "SKU-3,Green widget,5000000000001\nSKU-4,Gadget without a rack,\n");
    fixture_import(db, org, "stock",
                   "sku,warehouse,on_hand\nSKU-1,WH1,8\nSKU-1,WH2,3\nSKU-2,WH1,7\nSKU-4,WH1,2\n"
                   "SKU-2,SUP,40\n");
    fixture_import(db, org, "location-stock",
                   "sku,warehouse,location,quantity\nSKU-1,WH1,A-10,5\nSKU-1,WH2,B-1,3\n"
                   "SKU-2,WH1,A-2,7\nSKU-1,WH1,STAGE,9\nSKU-2,SUP,S-1,4\n");
}

/* --- Round trips -------------------------------------------------------------------------- */

static void create_binary(const char *name, const char *const *codes, size_t count, char *id,
                          size_t size)
{
    Walklist__V1__CreateLocateListRequest request = WALKLIST__V1__CREATE_LOCATE_LIST_REQUEST__INIT;
    request.name = (char *)name;
    request.codes = (char **)codes;
    request.n_codes = count;
    http_response_t res =
        call_proto("walklist.v1.LocateListService/CreateLocateList", key_all, &request.base, NULL);
    Walklist__V1__CreateLocateListResponse *reply =
        (void *)proto_reply(&res, &walklist__v1__create_locate_list_response__descriptor);
    snprintf(id, size, "%s", reply ? reply->id : "");
    if (reply != NULL)
        walklist__v1__create_locate_list_response__free_unpacked(reply, NULL);
    http_response_free(&res);
}

static void test_locate_lists(void)
{
    /* CreateLocateList, binary: trimmed and deduplicated like every other transport. */
    const char *codes[] = {" SKU-1 ", "4006381333931", "SKU-1", "NOPE-1"};
    Walklist__V1__CreateLocateListRequest request = WALKLIST__V1__CREATE_LOCATE_LIST_REQUEST__INIT;
    request.name = "Connect binary";
    request.codes = (char **)codes;
    request.n_codes = 4;
    http_response_t res =
        call_proto("walklist.v1.LocateListService/CreateLocateList", key_all, &request.base, NULL);
    Walklist__V1__CreateLocateListResponse *created =
        (void *)proto_reply(&res, &walklist__v1__create_locate_list_response__descriptor);
    char id[64] = "";
    if (created != NULL) {
        snprintf(id, sizeof(id), "%s", created->id);
        CHECK(strlen(created->id) > 0);
        CHECK_STR(created->name, "Connect binary");
        CHECK_INT(created->codes_count, 3);
        walklist__v1__create_locate_list_response__free_unpacked(created, NULL);
    }
    /* Authenticated answers carry the bucket's rate-limit headers, as on /api/v1. */
    CHECK(header_of(&res, "RateLimit-Policy") != NULL &&
          strncmp(header_of(&res, "RateLimit-Policy"), "\"locate-lists\";q=", 17) == 0);
    CHECK(header_of(&res, "RateLimit-Remaining") != NULL);
    CHECK(header_of(&res, "Location") == NULL);
    http_response_free(&res);

    /* GetLocateList, binary, and the same list through REST. */
    Walklist__V1__GetLocateListRequest get = WALKLIST__V1__GET_LOCATE_LIST_REQUEST__INIT;
    get.id = id;
    res = call_proto("walklist.v1.LocateListService/GetLocateList", key_all, &get.base, NULL);
    Walklist__V1__LocateList *list =
        (void *)proto_reply(&res, &walklist__v1__locate_list__descriptor);
    if (list != NULL) {
        CHECK_STR(list->id, id);
        CHECK_INT(list->n_codes, 3);
        CHECK_STR(list->n_codes == 3 ? list->codes[0] : NULL, "SKU-1");
        CHECK_STR(list->n_codes == 3 ? list->codes[2] : NULL, "NOPE-1");
        CHECK_STR(list->state, "pending");
        CHECK(list->created_at != NULL && list->created_at->seconds > 0);
        CHECK(list->loaded_at == NULL);
        walklist__v1__locate_list__free_unpacked(list, NULL);
    }
    http_response_free(&res);

    /* GetLocateList, JSON: byte for byte the REST body of the same list. */
    char body[256], target[128];
    snprintf(body, sizeof(body), "{\"id\":\"%s\"}", id);
    res = call_json("walklist.v1.LocateListService/GetLocateList", key_all, body);
    CHECK_INT(res.status, 200);
    CHECK_STR(header_of(&res, "Content-Type"), JSON);
    snprintf(target, sizeof(target), "/api/v1/locate-lists/%s", id);
    http_response_t rest = e2e_request(port, "GET", target, key_all, NULL, NULL);
    CHECK_INT(rest.status, 200);
    CHECK_STR(res.body, rest.body);
    CHECK(json_is_null(json_object_get(res.json, "loadedAt")));
    http_response_free(&rest);
    http_response_free(&res);

    /* CreateLocateList, JSON (with the charset parameter, echoed on the answer). */
    const char *create = "{\"name\":\"Connect JSON\",\"codes\":[\"SKU-2\",\"SKU-2\",\"SKU-3\"]}";
    res = call("walklist.v1.LocateListService/CreateLocateList", key_all,
               "application/json; charset=UTF-8", create, strlen(create), NULL);
    CHECK_INT(res.status, 200);
    CHECK_STR(header_of(&res, "Content-Type"), "application/json; charset=utf-8");
    CHECK(json_is_string(json_object_get(res.json, "id")));
    CHECK_STR(e2e_str(res.json, "name", NULL), "Connect JSON");
    CHECK_INT(json_integer_value(json_object_get(res.json, "codesCount")), 2);
    CHECK_INT(json_object_size(res.json), 3);
    http_response_free(&res);

    /* Idempotency-Key reaches the core: a retry answers the first list, another list with the
     * same key is failed_precondition (HTTP 400 in Connect's table, not REST's 422). */
    const char *retry = "{\"name\":\"Retry\",\"codes\":[\"SKU-1\"]}";
    const char *idempotency = "Idempotency-Key: connect-retry-1\r\n";
    http_response_t first = call("walklist.v1.LocateListService/CreateLocateList", key_all, JSON,
                                 retry, strlen(retry), idempotency);
    http_response_t again = call("walklist.v1.LocateListService/CreateLocateList", key_all, JSON,
                                 retry, strlen(retry), idempotency);
    CHECK_INT(first.status, 200);
    CHECK_INT(again.status, 200);
    CHECK_STR(e2e_str(again.json, "id", NULL), e2e_str(first.json, "id", NULL));
    CHECK(header_of(&first, "Idempotent-Replayed") == NULL);
    CHECK_STR(header_of(&again, "Idempotent-Replayed"), "true");
    const char *other = "{\"name\":\"Other\",\"codes\":[\"SKU-2\"]}";
    http_response_t conflict = call("walklist.v1.LocateListService/CreateLocateList", key_all, JSON,
                                    other, strlen(other), idempotency);
    CHECK_CONNECT_ERROR(conflict, 400, "failed_precondition");
    http_response_free(&first);
    http_response_free(&again);
    http_response_free(&conflict);
}

static void test_stock(void)
{
    /* ExportStock, binary and JSON, against the REST export of the same snapshot data. */
    Walklist__V1__ExportStockRequest export_request = WALKLIST__V1__EXPORT_STOCK_REQUEST__INIT;
    http_response_t res =
        call_proto("walklist.v1.StockService/ExportStock", key_all, &export_request.base, NULL);
    Walklist__V1__ExportStockResponse *export =
        (void *)proto_reply(&res, &walklist__v1__export_stock_response__descriptor);
    http_response_t rest = e2e_request(port, "GET", "/api/v1/stock-export", key_all, NULL, NULL);
    CHECK_INT(rest.status, 200);
    json_t *rest_items = json_object_get(rest.json, "items");
    if (export != NULL) {
        CHECK_INT(export->n_items, json_array_size(rest_items));
        CHECK(export->n_items == 3);
        for (size_t i = 0; i < export->n_items && i < json_array_size(rest_items); i++) {
            json_t *item = json_array_get(rest_items, i);
            CHECK_STR(export->items[i]->sku, e2e_str(item, "sku", NULL));
            CHECK_INT(export->items[i]->qty, json_integer_value(json_object_get(item, "qty")));
            const char *location = e2e_str(item, "location", NULL);
            CHECK_STR(export->items[i]->location ? export->items[i]->location->value : NULL,
                      location);
        }
        CHECK(export->generated_at != NULL && export->generated_at->seconds > 0);
        walklist__v1__export_stock_response__free_unpacked(export, NULL);
    }
    http_response_free(&res);

    res = call_json("walklist.v1.StockService/ExportStock", key_all, "{}");
    CHECK_INT(res.status, 200);
    CHECK(json_equal(json_object_get(res.json, "items"), rest_items));
    CHECK(json_is_string(json_object_get(res.json, "generatedAt")));
    /* SKU-4 has stock but no rack: location is null in JSON, unset in binary. */
    CHECK(json_is_null(
        json_object_get(json_array_get(json_object_get(res.json, "items"), 2), "location")));
    CHECK(strncmp(header_of(&res, "RateLimit-Policy"), "\"stock-export\";", 15) == 0);
    http_response_free(&res);
    http_response_free(&rest);

    /* ListStock, binary with a page size, then JSON: the REST breakdown's items. */
    Walklist__V1__ListStockRequest list_request = WALKLIST__V1__LIST_STOCK_REQUEST__INIT;
    list_request.page_size = 2;
    res = call_proto("walklist.v1.StockService/ListStock", key_all, &list_request.base, NULL);
    Walklist__V1__ListStockResponse *page =
        (void *)proto_reply(&res, &walklist__v1__list_stock_response__descriptor);
    char token[512] = "";
    if (page != NULL) {
        CHECK_INT(page->n_items, 2);
        CHECK_STR(page->n_items > 0 ? page->items[0]->sku : NULL, "SKU-1");
        CHECK_STR(page->n_items > 0 ? page->items[0]->warehouse : NULL, "WH1");
        CHECK(page->n_items > 0 && page->items[0]->n_locations == 2);
        CHECK(strlen(page->next_page_token) > 0);
        snprintf(token, sizeof(token), "%s", page->next_page_token);
        walklist__v1__list_stock_response__free_unpacked(page, NULL);
    }
    CHECK(strncmp(header_of(&res, "RateLimit-Policy"), "\"shared\";", 9) == 0);
    http_response_free(&res);

    char body[768];
    snprintf(body, sizeof(body), "{\"pageSize\":2,\"pageToken\":\"%s\"}", token);
    res = call_json("walklist.v1.StockService/ListStock", key_all, body);
    char target[768];
    snprintf(target, sizeof(target), "/api/v1/stock?pageSize=2&pageToken=%s", token);
    rest = e2e_request(port, "GET", target, key_all, NULL, NULL);
    CHECK_INT(res.status, 200);
    CHECK_INT(rest.status, 200);
    CHECK_STR(res.body, rest.body);
    http_response_free(&res);
    http_response_free(&rest);
}

static void test_scanner(void)
{
    const char *codes[] = {"SKU-1", "5000000000001", "NOPE"};
    char id[64], second_id[64];
    create_binary("Scanner binary", codes, 3, id, sizeof(id));
    create_binary("Scanner JSON", codes, 1, second_id, sizeof(second_id));

    /* ListPendingLists, binary and JSON. */
    Walklist__V1__ListPendingListsRequest pending = WALKLIST__V1__LIST_PENDING_LISTS_REQUEST__INIT;
    pending.page_size = 200;
    http_response_t res =
        call_proto("walklist.v1.ScannerService/ListPendingLists", key_all, &pending.base, NULL);
    Walklist__V1__ListPendingListsResponse *queue =
        (void *)proto_reply(&res, &walklist__v1__list_pending_lists_response__descriptor);
    size_t binary_count = 0;
    if (queue != NULL) {
        binary_count = queue->n_lists;
        bool found = false;
        for (size_t i = 0; i < queue->n_lists; i++)
            found |= strcmp(queue->lists[i]->id, id) == 0 && queue->lists[i]->codes_count == 3;
        CHECK(found);
        CHECK(!queue->more);
        walklist__v1__list_pending_lists_response__free_unpacked(queue, NULL);
    }
    http_response_free(&res);
    res = call_json("walklist.v1.ScannerService/ListPendingLists", key_all, "{\"pageSize\":200}");
    CHECK_INT(res.status, 200);
    CHECK_INT(json_array_size(json_object_get(res.json, "lists")), binary_count);
    CHECK(json_is_false(json_object_get(res.json, "more")));
    http_response_free(&res);

    /* LoadLocateList, binary: the walk; a second load is failed_precondition. */
    Walklist__V1__LoadLocateListRequest load = WALKLIST__V1__LOAD_LOCATE_LIST_REQUEST__INIT;
    load.id = id;
    res = call_proto("walklist.v1.ScannerService/LoadLocateList", key_all, &load.base, NULL);
    Walklist__V1__LoadLocateListResponse *walk =
        (void *)proto_reply(&res, &walklist__v1__load_locate_list_response__descriptor);
    if (walk != NULL) {
        CHECK_STR(walk->id, id);
        CHECK(walk->loaded_at != NULL);
        CHECK_INT(walk->n_codes, 3);
        /* SKU-1 at A-10 and B-1; the ambiguous EAN's SKU-2 at A-2; never the staging bin. */
        CHECK_INT(walk->n_stops, 3);
        CHECK_STR(walk->n_stops == 3 ? walk->stops[0]->bin_code : NULL, "A-2");
        CHECK_STR(walk->n_stops == 3 ? walk->stops[1]->bin_code : NULL, "A-10");
        CHECK_INT(walk->n_codes == 3 ? (int)walk->codes[1]->outcome : -1,
                  WALKLIST__V1__CODE_OUTCOME__CODE_OUTCOME_AMBIGUOUS);
        CHECK_INT(walk->n_codes == 3 ? (int)walk->codes[2]->outcome : -1,
                  WALKLIST__V1__CODE_OUTCOME__CODE_OUTCOME_NOT_FOUND);
        walklist__v1__load_locate_list_response__free_unpacked(walk, NULL);
    }
    http_response_free(&res);
    res = call_proto("walklist.v1.ScannerService/LoadLocateList", key_all, &load.base, NULL);
    CHECK_CONNECT_ERROR(res, 400, "failed_precondition");
    http_response_free(&res);

    /* LoadLocateList, JSON. */
    char body[128];
    snprintf(body, sizeof(body), "{\"id\":\"%s\"}", second_id);
    res = call_json("walklist.v1.ScannerService/LoadLocateList", key_all, body);
    CHECK_INT(res.status, 200);
    CHECK_STR(e2e_str(res.json, "id", NULL), second_id);
    CHECK_STR(e2e_str(json_array_get(json_object_get(res.json, "codes"), 0), "outcome", NULL),
              "CODE_OUTCOME_SKU");
    CHECK(json_is_string(json_object_get(res.json, "loadedAt")));
    http_response_free(&res);

    /* Another organization's list is not_found, never permission_denied. */
    snprintf(body, sizeof(body), "{\"id\":\"%s\"}", id);
    res = call_json("walklist.v1.ScannerService/LoadLocateList", key_b, body);
    CHECK_CONNECT_ERROR(res, 404, "not_found");
    http_response_free(&res);
}

/* The {"count":N} answer of an InventoryService method, binary: N, or -1 with a failure. */
static int32_t inventory_count_binary(const char *method, const ProtobufCMessage *request)
{
    char procedure[128];
    snprintf(procedure, sizeof(procedure), "walklist.v1.InventoryService/%s", method);
    http_response_t res = call_proto(procedure, key_inventory, request, NULL);
    const ProtobufCMethodDescriptor *rpc = protobuf_c_service_descriptor_get_method_by_name(
        &walklist__v1__inventory_service__descriptor, method);
    ProtobufCMessage *reply = proto_reply(&res, rpc->output);
    int32_t count = -1;
    if (reply != NULL) {
        /* Every inventory reply is {int32 count = 1}. */
        const ProtobufCFieldDescriptor *field =
            protobuf_c_message_descriptor_get_field_by_name(reply->descriptor, "count");
        count = *(const int32_t *)((const char *)reply + field->offset);
        protobuf_c_message_free_unpacked(reply, NULL);
    }
    http_response_free(&res);
    return count;
}

static long long inventory_count_json(const char *method, const char *body)
{
    char procedure[128];
    snprintf(procedure, sizeof(procedure), "walklist.v1.InventoryService/%s", method);
    http_response_t res = call_json(procedure, key_inventory, body);
    if (res.status != 200)
        FAIL("%s: %d %s", method, res.status, res.body);
    long long count =
        res.status == 200 ? json_integer_value(json_object_get(res.json, "count")) : -1;
    http_response_free(&res);
    return count;
}

/* SKU's qty in the stock export (through Connect), or -1 when it is not exported. */
static long long exported_qty(const char *key, const char *sku, char *location, size_t size)
{
    http_response_t res = call_json("walklist.v1.StockService/ExportStock", key, "{}");
    long long qty = -1;
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(res.json, "items"), i, item)
    {
        if (strcmp(e2e_str(item, "sku", NULL), sku) == 0) {
            qty = json_integer_value(json_object_get(item, "qty"));
            snprintf(location, size, "%s",
                     e2e_str(item, "location", NULL) ? e2e_str(item, "location", NULL) : "");
        }
    }
    http_response_free(&res);
    return qty;
}

/* Every InventoryService method, alternately binary and JSON, on an organization of its own. */
static void test_inventory(void)
{
    Walklist__V1__Warehouse main_wh = WALKLIST__V1__WAREHOUSE__INIT;
    Walklist__V1__Warehouse supplier = WALKLIST__V1__WAREHOUSE__INIT;
    main_wh.code = "WH1";
    main_wh.name = "Main";
    main_wh.kind = "own";
    supplier.code = "SUP";
    supplier.name = "Supplier";
    supplier.kind = "supplier";
    Walklist__V1__Warehouse *warehouses[] = {&main_wh, &supplier};
    Walklist__V1__UpsertWarehousesRequest upsert_warehouses =
        WALKLIST__V1__UPSERT_WAREHOUSES_REQUEST__INIT;
    upsert_warehouses.warehouses = warehouses;
    upsert_warehouses.n_warehouses = 2;
    CHECK_INT(inventory_count_binary("UpsertWarehouses", &upsert_warehouses.base), 2);

    CHECK_INT(inventory_count_json("UpsertLocations",
                                   "{\"locations\":[{\"warehouse\":\"WH1\",\"code\":\"A-1\"},"
                                   "{\"warehouse\":\"WH1\",\"code\":\"DOCK\",\"staging\":true}]}"),
              2);

    char *eans[] = {"4006381333931"};
    Walklist__V1__Product first = WALKLIST__V1__PRODUCT__INIT;
    Walklist__V1__Product second = WALKLIST__V1__PRODUCT__INIT;
    first.sku = "INV-1";
    first.name = "Inventory one";
    first.eans = eans;
    first.n_eans = 1;
    second.sku = "INV-2";
    second.name = "Inventory two";
    Walklist__V1__Product *products[] = {&first, &second};
    Walklist__V1__UpsertProductsRequest upsert_products =
        WALKLIST__V1__UPSERT_PRODUCTS_REQUEST__INIT;
    upsert_products.products = products;
    upsert_products.n_products = 2;
    CHECK_INT(inventory_count_binary("UpsertProducts", &upsert_products.base), 2);

    CHECK_INT(inventory_count_json("SetStock",
                                   "{\"items\":["
                                   "{\"sku\":\"INV-1\",\"warehouse\":\"WH1\",\"onHand\":10},"
                                   "{\"sku\":\"INV-2\",\"warehouse\":\"WH1\",\"onHand\":\"5\"}]}"),
              2);

    Walklist__V1__LocationStockLevel rack = WALKLIST__V1__LOCATION_STOCK_LEVEL__INIT;
    rack.sku = "INV-1";
    rack.warehouse = "WH1";
    rack.location = "A-1";
    rack.quantity = 10;
    Walklist__V1__LocationStockLevel *racks[] = {&rack};
    Walklist__V1__SetLocationStockRequest set_racks =
        WALKLIST__V1__SET_LOCATION_STOCK_REQUEST__INIT;
    set_racks.items = racks;
    set_racks.n_items = 1;
    CHECK_INT(inventory_count_binary("SetLocationStock", &set_racks.base), 1);

    char location[64] = "";
    CHECK_INT(exported_qty(key_inventory, "INV-1", location, sizeof(location)), 10);
    CHECK_STR(location, "A-1");

    const char *reservations =
        "{\"reservations\":["
        "{\"ref\":\"R1\",\"sku\":\"INV-1\",\"warehouse\":\"WH1\",\"quantity\":3},"
        "{\"ref\":\"R2\",\"sku\":\"INV-2\",\"warehouse\":\"WH1\",\"quantity\":5}]}";
    CHECK_INT(inventory_count_json("CreateReservations", reservations), 2);
    CHECK_INT(exported_qty(key_inventory, "INV-1", location, sizeof(location)), 7);
    /* A retry of the same reservations is accepted; R1 with another quantity already exists. */
    CHECK_INT(inventory_count_json("CreateReservations", reservations), 2);
    http_response_t res =
        call_json("walklist.v1.InventoryService/CreateReservations", key_inventory,
                  "{\"reservations\":[{\"ref\":\"R1\",\"sku\":\"INV-1\","
                  "\"warehouse\":\"WH1\",\"quantity\":4}]}");
    CHECK_CONNECT_ERROR(res, 409, "already_exists");
    http_response_free(&res);

    char *refs[] = {"R1"};
    Walklist__V1__ReleaseReservationsRequest release =
        WALKLIST__V1__RELEASE_RESERVATIONS_REQUEST__INIT;
    release.refs = refs;
    release.n_refs = 1;
    CHECK_INT(inventory_count_binary("ReleaseReservations", &release.base), 1);
    CHECK_INT(exported_qty(key_inventory, "INV-1", location, sizeof(location)), 10);
    res = call_proto("walklist.v1.InventoryService/ReleaseReservations", key_inventory,
                     &release.base, NULL);
    CHECK_CONNECT_ERROR(res, 400, "failed_precondition");
    http_response_free(&res);
    res = call_json("walklist.v1.InventoryService/ConsumeReservations", key_inventory,
                    "{\"refs\":[\"NOPE\"]}");
    CHECK_CONNECT_ERROR(res, 404, "not_found");
    http_response_free(&res);
    CHECK_INT(inventory_count_json("ConsumeReservations", "{\"refs\":[\"R2\"]}"), 1);

    /* Validation names the item's field; the detail decodes from binary. */
    Walklist__V1__Warehouse bad = WALKLIST__V1__WAREHOUSE__INIT;
    bad.code = "WH9";
    bad.name = "Bad";
    bad.kind = "rented";
    Walklist__V1__Warehouse *bad_list[] = {&main_wh, &bad};
    upsert_warehouses.warehouses = bad_list;
    res = call_proto("walklist.v1.InventoryService/UpsertWarehouses", key_inventory,
                     &upsert_warehouses.base, NULL);
    CHECK_CONNECT_ERROR(res, 400, "invalid_argument");
    Google__Rpc__BadRequest *details = bad_request(&res);
    CHECK(has_violation(details, "warehouses[1].kind"));
    if (details != NULL)
        google__rpc__bad_request__free_unpacked(details, NULL);
    http_response_free(&res);

    /* inventory:write is needed. */
    res = call_json("walklist.v1.InventoryService/ConsumeReservations", key_all,
                    "{\"refs\":[\"R2\"]}");
    CHECK_CONNECT_ERROR(res, 403, "permission_denied");
    http_response_free(&res);
}

/*
 * A full batch at the character limits: 1,000 products with 64-character SKUs and
 * 200-character names, every character 4 bytes of UTF-8. About 1.1 MB as JSON (and as
 * binary), over 1 MiB: the body limit takes it.
 */
static void test_largest_batch(void)
{
    const char *glyph = "\xf0\x9f\x93\xa6"; /* U+1F4E6 PACKAGE */
    size_t cap = 1000 * (64 * 4 + 200 * 4 + 64) + 64;
    char *body = malloc(cap);
    size_t used = (size_t)snprintf(body, cap, "{\"products\":[");
    for (int i = 0; i < 1000; i++) {
        used += (size_t)snprintf(body + used, cap - used, "%s{\"sku\":\"%04d", i ? "," : "", i);
        for (int c = 0; c < 60; c++)
            used += (size_t)snprintf(body + used, cap - used, "%s", glyph);
        used += (size_t)snprintf(body + used, cap - used, "\",\"name\":\"");
        for (int c = 0; c < 200; c++)
            used += (size_t)snprintf(body + used, cap - used, "%s", glyph);
        used += (size_t)snprintf(body + used, cap - used, "\",\"eans\":[]}");
    }
    used += (size_t)snprintf(body + used, cap - used, "]}");
    CHECK(used > 1024 * 1024 && used <= WL_CONNECT_BODY_LIMIT);
    http_response_t res =
        call("walklist.v1.InventoryService/UpsertProducts", key_inventory, JSON, body, used, NULL);
    CHECK_INT(res.status, 200);
    CHECK_INT(json_integer_value(json_object_get(res.json, "count")), 1000);
    if (res.status != 200)
        fprintf(stderr, "%.300s\n", res.body);
    http_response_free(&res);
    free(body);
}

/* Every procedure of the core registry is routed, whatever services it holds by now. */
static void test_every_procedure_routed(const char *conninfo)
{
    wl_core_config_t config = {.database_url = conninfo, .db_pool_size = 1};
    wl_core_t *core = NULL;
    wl_error_t err;
    wl_error_init(&err);
    if (wl_core_create(&config, &core, &err) != 0) {
        FAIL("cannot create a core: %s", err.message);
        return;
    }
    const wl_service_entry_t *services;
    size_t count = wl_core_services(core, &services), procedures = 0;
    for (size_t i = 0; i < count; i++) {
        for (unsigned m = 0; m < services[i].descriptor->n_methods; m++) {
            char procedure[256];
            snprintf(procedure, sizeof(procedure), "%s/%s", services[i].descriptor->name,
                     services[i].descriptor->methods[m].name);
            /* A request that changes nothing: an empty message is valid or invalid_argument. A
             * server stream refuses the unary codec: 415 (e2e.test_watch_stock streams). */
            http_response_t res = call_json(procedure, key_every_scope, "{\"unknownField\":1}");
            bool streaming = wl_core_method_policy(&services[i], m)->server_streaming;
            CHECK_CONNECT_ERROR(res, streaming ? 415 : 400, "invalid_argument");
            if (res.status != (streaming ? 415 : 400))
                fprintf(stderr, "  procedure %s\n", procedure);
            http_response_free(&res);
            procedures++;
        }
    }
    CHECK(procedures >= 6);
    wl_core_destroy(core);
}

/* --- Errors ------------------------------------------------------------------------------- */

static void test_invalid_argument(void)
{
    /* Validation: BadRequest details, decodable from binary, naming each field. */
    const char *codes[] = {"ok", "bad\x01code"};
    Walklist__V1__CreateLocateListRequest request = WALKLIST__V1__CREATE_LOCATE_LIST_REQUEST__INIT;
    request.name = "   ";
    request.codes = (char **)codes;
    request.n_codes = 2;
    http_response_t res =
        call_proto("walklist.v1.LocateListService/CreateLocateList", key_all, &request.base, NULL);
    CHECK_CONNECT_ERROR(res, 400, "invalid_argument");
    Google__Rpc__BadRequest *details = bad_request(&res);
    CHECK(has_violation(details, "name"));
    CHECK(has_violation(details, "codes[1]"));
    if (details != NULL)
        google__rpc__bad_request__free_unpacked(details, NULL);
    http_response_free(&res);

    /* The same through JSON, and a JSON type error. */
    res = call_json("walklist.v1.LocateListService/CreateLocateList", key_all,
                    "{\"name\":\"x\",\"codes\":[]}");
    CHECK_CONNECT_ERROR(res, 400, "invalid_argument");
    details = bad_request(&res);
    CHECK(has_violation(details, "codes"));
    if (details != NULL)
        google__rpc__bad_request__free_unpacked(details, NULL);
    http_response_free(&res);
    res = call_json("walklist.v1.StockService/ListStock", key_all, "{\"pageSize\":\"many\"}");
    CHECK_CONNECT_ERROR(res, 400, "invalid_argument");
    details = bad_request(&res);
    CHECK(has_violation(details, "pageSize"));
    if (details != NULL)
        google__rpc__bad_request__free_unpacked(details, NULL);
    http_response_free(&res);

    /* Bodies that are not the method's message: no BadRequest, just the message and the
     * ErrorInfo. */
    res = call("walklist.v1.StockService/ListStock", key_all, PROTO, "\xff\xff\xff", 3, NULL);
    CHECK_CONNECT_ERROR(res, 400, "invalid_argument");
    CHECK_INT(json_array_size(json_object_get(res.json, "details")), 1);
    CHECK_CONNECT_REASON(res, "INVALID_REQUEST", NULL, NULL);
    http_response_free(&res);
    res = call_json("walklist.v1.StockService/ListStock", key_all, "{\"pageSize\":");
    CHECK_CONNECT_ERROR(res, 400, "invalid_argument");
    http_response_free(&res);
    res = call_json("walklist.v1.StockService/ExportStock", key_all, "");
    CHECK_CONNECT_ERROR(res, 400, "invalid_argument");
    http_response_free(&res);
    /* An empty binary body is the empty message. */
    res = call("walklist.v1.StockService/ExportStock", key_all, PROTO, "", 0, NULL);
    CHECK_INT(res.status, 200);
    http_response_free(&res);
}

static void test_auth(void)
{
    const char *body = "{}";
    http_response_t res = call_json("walklist.v1.StockService/ExportStock", NULL, body);
    CHECK_CONNECT_ERROR(res, 401, "unauthenticated");
    CHECK_STR(header_of(&res, "WWW-Authenticate"), "Bearer realm=\"walklist\"");
    CHECK(header_of(&res, "RateLimit-Policy") == NULL);
    http_response_free(&res);

    res = call_json("walklist.v1.StockService/ExportStock", "wlk_abcdefgh_nottherealsecret", body);
    CHECK_CONNECT_ERROR(res, 401, "unauthenticated");
    CHECK_STR(header_of(&res, "WWW-Authenticate"),
              "Bearer realm=\"walklist\", error=\"invalid_token\"");
    http_response_free(&res);

    /* api_key in the query never authenticates here. */
    char target[256];
    snprintf(target, sizeof(target), "/walklist.v1.StockService/ExportStock?api_key=%s", key_all);
    res = e2e_request(port, "POST", target, NULL, JSON, body);
    CHECK_CONNECT_ERROR(res, 401, "unauthenticated");
    http_response_free(&res);

    /* Basic is not Bearer. */
    res = call("walklist.v1.StockService/ExportStock", NULL, JSON, body, 2,
               "Authorization: Basic dXNlcjpwYXNz\r\n");
    CHECK_CONNECT_ERROR(res, 401, "unauthenticated");
    http_response_free(&res);

    /* A key without the method's scope; the request still counts in its bucket. */
    res = call_json("walklist.v1.StockService/ExportStock", key_lists, body);
    CHECK_CONNECT_ERROR(res, 403, "permission_denied");
    CHECK(strstr(e2e_str(res.json, "message", NULL), "stock:read") != NULL);
    CHECK(header_of(&res, "RateLimit-Remaining") != NULL);
    http_response_free(&res);
    res = call_json("walklist.v1.ScannerService/ListPendingLists", key_lists, body);
    CHECK_CONNECT_ERROR(res, 403, "permission_denied");
    http_response_free(&res);

    /* An unknown id is not_found, and another organization's too. */
    res = call_json("walklist.v1.LocateListService/GetLocateList", key_all,
                    "{\"id\":\"AAAAAAAAAAAAAAAAAAAAAA\"}");
    CHECK_CONNECT_ERROR(res, 404, "not_found");
    http_response_free(&res);
}

static void test_rate_limit(void)
{
    /* limited runs with --rate-limit-shared 3: the fourth ListStock is refused. Buckets are
     * per organization in the database, so this organization is used nowhere else. */
    for (int i = 0; i < 3; i++) {
        http_response_t res =
            call_at(limited.port, "walklist.v1.StockService/ListStock", key_c, JSON, "{}", 2, NULL);
        CHECK_INT(res.status, 200);
        char expected[64];
        snprintf(expected, sizeof(expected), "%d", 2 - i);
        CHECK_STR(header_of(&res, "RateLimit-Remaining"), expected);
        http_response_free(&res);
    }
    http_response_t res =
        call_at(limited.port, "walklist.v1.StockService/ListStock", key_c, JSON, "{}", 2, NULL);
    CHECK_CONNECT_ERROR(res, 429, "resource_exhausted");
    CHECK(header_of(&res, "Retry-After") != NULL && atoi(header_of(&res, "Retry-After")) >= 1);
    CHECK_STR(header_of(&res, "RateLimit-Remaining"), "0");
    CHECK_STR(header_of(&res, "RateLimit-Policy"), "\"shared\";q=3;w=60");
    http_response_free(&res);
    /* Other buckets are untouched. */
    res = call_at(limited.port, "walklist.v1.StockService/ExportStock", key_c, JSON, "{}", 2, NULL);
    CHECK_INT(res.status, 200);
    http_response_free(&res);
}

static void test_protocol_headers(void)
{
    const char *procedure = "walklist.v1.StockService/ExportStock";
    /* Connect-Protocol-Version is required, and must be 1. */
    http_response_t res = call(procedure, key_all, JSON, "{}", 2, "Connect-Protocol-Version:\r\n");
    CHECK_CONNECT_ERROR(res, 400, "invalid_argument");
    http_response_free(&res);
    res = e2e_request(port, "POST", "/walklist.v1.StockService/ExportStock", key_all, JSON, "{}");
    CHECK_CONNECT_ERROR(res, 400, "invalid_argument");
    CHECK(strstr(e2e_str(res.json, "message", NULL), "Connect-Protocol-Version") != NULL);
    http_response_free(&res);
    res = call(procedure, key_all, JSON, "{}", 2, "Connect-Protocol-Version: 2\r\n");
    CHECK_CONNECT_ERROR(res, 400, "invalid_argument");
    http_response_free(&res);

    /* Content types: 415 with Accept-Post for anything but the two codecs. */
    const char *refused[] = {"text/plain",
                             "application/json; charset=latin-1",
                             "application/connect+proto",
                             "application/proto; charset=utf-8",
                             "application/jsonx",
                             NULL};
    for (int i = 0; i < 6; i++) {
        res = call(procedure, key_all, refused[i], "{}", 2, NULL);
        CHECK_CONNECT_ERROR(res, 415, "invalid_argument");
        CHECK(header_of(&res, "Accept-Post") != NULL &&
              strstr(header_of(&res, "Accept-Post"), "application/proto") != NULL);
        http_response_free(&res);
    }
    res = call(procedure, key_all, "Application/JSON;charset=\"utf-8\"", "{}", 2, NULL);
    CHECK_INT(res.status, 200);
    http_response_free(&res);

    /* gzip and identity (test_compression); another coding is unimplemented. */
    res = call(procedure, key_all, JSON, "{}", 2, "Content-Encoding: br\r\n");
    CHECK_CONNECT_ERROR(res, 501, "unimplemented");
    CHECK_STR(header_of(&res, "Accept-Encoding"), "gzip");
    http_response_free(&res);
    res = call(procedure, key_all, JSON, "{}", 2, "Content-Encoding: identity\r\n");
    CHECK_INT(res.status, 200);
    http_response_free(&res);

    /* Timeouts: a valid one runs, 0 has already passed, anything else is invalid. */
    res = call(procedure, key_all, JSON, "{}", 2, "Connect-Timeout-Ms: 9999999999\r\n");
    CHECK_INT(res.status, 200);
    http_response_free(&res);
    res = call(procedure, key_all, JSON, "{}", 2, "Connect-Timeout-Ms: 0\r\n");
    CHECK_CONNECT_ERROR(res, 504, "deadline_exceeded");
    http_response_free(&res);
    const char *invalid[] = {"-1", "abc", "1.5", "12345678901", "+5", "1e3"};
    for (int i = 0; i < 6; i++) {
        char header[64];
        snprintf(header, sizeof(header), "Connect-Timeout-Ms: %s\r\n", invalid[i]);
        res = call(procedure, key_all, JSON, "{}", 2, header);
        CHECK_CONNECT_ERROR(res, 400, "invalid_argument");
        http_response_free(&res);
    }
}

static void test_routes(void)
{
    /* Unknown procedures: 404, which Connect clients read as unimplemented. */
    const char *unknown[] = {"walklist.v1.StockService/Nope", "walklist.v1.NopeService/ExportStock",
                             "walklist.v1.stockservice/exportstock",
                             "walklist.v1.StockService/ExportStock/", "walklist.v1.StockService"};
    for (int i = 0; i < 5; i++) {
        http_response_t res = call(unknown[i], key_all, JSON, "{}", 2, NULL);
        CHECK_CONNECT_ERROR(res, 404, "unimplemented");
        http_response_free(&res);
    }
    /* ... answered before authentication. */
    http_response_t res = call("walklist.v1.StockService/Nope", NULL, JSON, "{}", 2, NULL);
    CHECK_CONNECT_ERROR(res, 404, "unimplemented");
    http_response_free(&res);

    /* Wrong method: 405 with Allow, before authentication (GET only where the method has no
     * side effects: test_connect_get). */
    res = e2e_request(port, "GET", "/walklist.v1.ScannerService/LoadLocateList", NULL, NULL, NULL);
    CHECK_CONNECT_ERROR(res, 405, "unimplemented");
    CHECK_STR(header_of(&res, "Allow"), "POST");
    http_response_free(&res);
    res = e2e_request(port, "PUT", "/walklist.v1.StockService/ExportStock", key_all, JSON, "{}");
    CHECK_INT(res.status, 405);
    CHECK_STR(header_of(&res, "Allow"), "GET, POST");
    http_response_free(&res);

    /* The device transport keeps its own paths and error shape. */
    res = e2e_request(port, "POST", "/walklist.scanner.v1.DeviceService/ListPending", key_all, JSON,
                      "{}");
    CHECK_ERROR(res, 415, "INVALID_ARGUMENT", NULL);
    http_response_free(&res);
}

static void test_body_limits(void)
{
    /* The largest valid walk list, with every character \u-escaped (200 codes of 64 emoji as
     * surrogate pairs): about 148 KB of JSON, over REST's 64 KiB, accepted here. */
    size_t cap = 200 * (64 * 12 + 8) + 64;
    char *body = malloc(cap);
    size_t used = (size_t)snprintf(body, cap, "{\"name\":\"Escaped\",\"codes\":[");
    for (int i = 0; i < 200; i++) {
        used += (size_t)snprintf(body + used, cap - used, "%s\"%03d", i ? "," : "", i);
        for (int c = 0; c < 61; c++)
            used += (size_t)snprintf(body + used, cap - used, "\\ud83d\\ude00");
        used += (size_t)snprintf(body + used, cap - used, "\"");
    }
    used += (size_t)snprintf(body + used, cap - used, "]}");
    CHECK(used > 140000);
    http_response_t res =
        call("walklist.v1.LocateListService/CreateLocateList", key_all, JSON, body, used, NULL);
    CHECK_INT(res.status, 200);
    CHECK_INT(json_integer_value(json_object_get(res.json, "codesCount")), 200);
    http_response_free(&res);
    free(body);

    /* Over the limit: announced, answered before the body; chunked, answered after it. */
    size_t big = WL_CONNECT_BODY_LIMIT + 1;
    body = malloc(big);
    memset(body, ' ', big);
    res = call("walklist.v1.StockService/ExportStock", key_all, JSON, body, big, NULL);
    CHECK_CONNECT_ERROR(res, 413, "resource_exhausted");
    CHECK(header_of(&res, "Retry-After") == NULL);
    http_response_free(&res);

    /* 4200 KiB in 7 chunks: past the limit, but not so far that the server cuts it off. */
    size_t chunk = 600 * 1024, chunks = 7;
    size_t request_cap = chunks * (chunk + 16) + 1024;
    char *request = malloc(request_cap);
    int n = snprintf(request, request_cap,
                     "POST /walklist.v1.StockService/ExportStock HTTP/1.1\r\nHost: localhost\r\n"
                     "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                     "Connect-Protocol-Version: 1\r\nTransfer-Encoding: chunked\r\n"
                     "Connection: close\r\n\r\n",
                     key_all);
    for (size_t i = 0; i < chunks; i++) {
        n += snprintf(request + n, request_cap - (size_t)n, "%zx\r\n", chunk);
        memset(request + n, ' ', chunk);
        n += (int)chunk;
        n += snprintf(request + n, request_cap - (size_t)n, "\r\n");
    }
    n += snprintf(request + n, request_cap - (size_t)n, "0\r\n\r\n");
    if (http_raw(port, request, (size_t)n, &res) != 0)
        FAIL("chunked request failed");
    CHECK_CONNECT_ERROR(res, 413, "resource_exhausted");
    http_response_free(&res);
    free(request);
    free(body);
}

/* Locate lists of org connect-a named name. */
static long long lists_named(const char *name)
{
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM locate_lists WHERE name = '%s'", name);
    return testdb_count(db, sql);
}

/* True when a Connect error's message contains words. */
static bool message_says(const http_response_t *res, const char *words)
{
    const char *message = e2e_str(res->json, "message", NULL);
    return message != NULL && strstr(message, words) != NULL;
}

/* A CreateLocateList JSON request of count codes of 60 characters, named name. */
static char *list_request(const char *name, int count, size_t *len)
{
    size_t cap = (size_t)count * 64 + 128;
    char *body = malloc(cap);
    size_t used = (size_t)snprintf(body, cap, "{\"name\":\"%s\",\"codes\":[", name);
    for (int i = 0; i < count; i++)
        used += (size_t)snprintf(body + used, cap - used, "%s\"CODE-%054d\"", i ? "," : "", i);
    used += (size_t)snprintf(body + used, cap - used, "]}");
    *len = used;
    return body;
}

static void test_compression(void)
{
    const char *create = "walklist.v1.LocateListService/CreateLocateList";
    /* A gzip request body; its answer is small (under 1 KiB), so it stays identity. */
    size_t len = 0, coded_len = 0;
    char *body = list_request("Gzip both ways", 50, &len);
    char *coded = gzip_encode(body, len, &coded_len);
    http_response_t res = call(create, key_all, JSON, coded, coded_len,
                               "Content-Encoding: gzip\r\nAccept-Encoding: gzip\r\n");
    free(coded);
    CHECK_INT(res.status, 200);
    CHECK(header_of(&res, "Content-Encoding") == NULL);
    CHECK_INT(json_integer_value(json_object_get(res.json, "codesCount")), 50);
    const char *created = e2e_str(res.json, "id", NULL);
    char id[64] = "";
    snprintf(id, sizeof(id), "%s", created ? created : "");
    http_response_free(&res);
    CHECK_INT(lists_named("Gzip both ways"), 1);
    size_t text_len = 0;
    char *text = NULL;

    /* GetLocateList (50 codes: over 1 KiB) in gzip, only for a client that takes it. */
    char get[128];
    snprintf(get, sizeof(get), "{\"id\":\"%s\"}", id);
    res = call("walklist.v1.LocateListService/GetLocateList", key_all, JSON, get, strlen(get),
               "Accept-Encoding: br;q=1, gzip;q=0.5\r\n");
    CHECK_INT(res.status, 200);
    CHECK_STR(header_of(&res, "Content-Encoding"), "gzip");
    text = gunzip(res.body, res.body_len, true, &text_len);
    CHECK(text != NULL && strstr(text, "CODE-") != NULL);
    free(text);
    http_response_free(&res);
    res = call("walklist.v1.LocateListService/GetLocateList", key_all, JSON, get, strlen(get),
               "Accept-Encoding: gzip;q=0\r\n");
    CHECK_INT(res.status, 200);
    CHECK(header_of(&res, "Content-Encoding") == NULL);
    CHECK(json_array_size(json_object_get(res.json, "codes")) == 50);
    http_response_free(&res);
    /* A small answer stays identity, whatever the client takes. */
    res = call("walklist.v1.StockService/ExportStock", key_all, JSON, "{}", 2,
               "Accept-Encoding: gzip\r\n");
    CHECK_INT(res.status, 200);
    if (res.body_len < 1024)
        CHECK(header_of(&res, "Content-Encoding") == NULL);
    http_response_free(&res);
    free(body);

    /* A bomb: 64 MiB of spaces around a list, gzip'd to about 64 KiB, is refused as a body
     * over the limit is, before anything is written. */
    size_t bomb_len = 64u * 1024 * 1024;
    char *bomb = malloc(bomb_len);
    memset(bomb, ' ', bomb_len);
    const char *list = "{\"name\":\"Gzip bomb\",\"codes\":[\"SKU-1\"]}";
    memcpy(bomb, list, strlen(list));
    coded = gzip_encode(bomb, bomb_len, &coded_len);
    free(bomb);
    CHECK(coded_len < 512 * 1024);
    res = call(create, key_all, JSON, coded, coded_len, "Content-Encoding: gzip\r\n");
    CHECK_CONNECT_ERROR(res, 413, "resource_exhausted");
    CHECK_CONNECT_REASON(res, "BODY_TOO_LARGE", NULL, NULL);
    CHECK(message_says(&res, "inflates"));
    http_response_free(&res);
    free(coded);
    CHECK_INT(lists_named("Gzip bomb"), 0);

    /* Corrupt gzip: a valid body with its CRC damaged, and bytes that are not gzip at all. */
    body = list_request("Gzip corrupt", 3, &len);
    coded = gzip_encode(body, len, &coded_len);
    coded[coded_len - 6] ^= 0x55;
    res = call(create, key_all, JSON, coded, coded_len, "Content-Encoding: gzip\r\n");
    CHECK_CONNECT_ERROR(res, 400, "invalid_argument");
    CHECK(message_says(&res, "not valid gzip"));
    http_response_free(&res);
    res = call(create, key_all, JSON, body, len, "Content-Encoding: gzip\r\n");
    CHECK_CONNECT_ERROR(res, 400, "invalid_argument");
    http_response_free(&res);
    /* An unknown coding: unimplemented, gzip advertised. */
    res = call(create, key_all, JSON, body, len, "Content-Encoding: br\r\n");
    CHECK_CONNECT_ERROR(res, 501, "unimplemented");
    CHECK_STR(header_of(&res, "Accept-Encoding"), "gzip");
    http_response_free(&res);
    free(coded);
    free(body);
    CHECK_INT(lists_named("Gzip corrupt"), 0);
    /* A refused key is refused first, whatever the body. */
    res = call(create, "wlk_nope", JSON, "x", 1, "Content-Encoding: gzip\r\n");
    CHECK_INT(res.status, 401);
    http_response_free(&res);
}

int main(void)
{
    const char *conninfo = testdb_create("e2e_connect");
    db = testdb_connect(conninfo);
    int64_t org_a = fixture_org(db, "connect-a");
    int64_t org_b = fixture_org(db, "connect-b");
    fixture_key(db, org_a, "lists:write,stock:read,scanner", key_all);
    fixture_key(db, org_a, "lists:write", key_lists);
    fixture_key(db, org_b, "lists:write,scanner", key_b);
    fixture_key(db, org_b, "lists:write,stock:read,scanner,inventory:write", key_every_scope);
    fixture_key(db, fixture_org(db, "connect-c"), "stock:read", key_c);
    fixture_key(db, fixture_org(db, "connect-d"), "inventory:write,stock:read", key_inventory);
    load_inventory(org_a);
    service_start(&service, conninfo, NULL);
    port = service.port;
    const char *limits[] = {"--rate-limit-shared", "3", NULL};
    service_start(&limited, conninfo, limits);

    test_locate_lists();
    test_stock();
    test_scanner();
    test_invalid_argument();
    test_auth();
    test_rate_limit();
    test_protocol_headers();
    test_routes();
    test_body_limits();
    test_compression();
    test_inventory();
    test_largest_batch();
    test_every_procedure_routed(conninfo);

    /* Keys never reach the log, not even from a query string. */
    char *log = service_log(&service);
    CHECK(strstr(log, key_all) == NULL);
    free(log);
    CHECK_INT(service_stop(&service), 0);
    CHECK_INT(service_stop(&limited), 0);
    PQfinish(db);
    return test_exit();
}
