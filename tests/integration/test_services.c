/* The core's protobuf-c services invoked directly (no HTTP) against PostgreSQL. */
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "test.h"
#include "testdb.h"
#include "walklist/core.h"
#include "walklist/v1/locate_list.pb-c.h"
#include "walklist/v1/stock.pb-c.h"

static wl_core_t *core;
static PGconn *db;

typedef struct {
    wl_arena_t arena;
    wl_error_t err;
    wl_call_t call;
} call_ctx_t;

static void call_begin(call_ctx_t *ctx, const wl_principal_t *principal)
{
    wl_arena_init(&ctx->arena, 0);
    wl_error_init(&ctx->err);
    ctx->call =
        (wl_call_t){.core = core, .arena = &ctx->arena, .principal = principal, .err = &ctx->err};
}

static int invoke(call_ctx_t *ctx, const char *service, const char *method,
                  const ProtobufCMessage *input)
{
    const wl_service_entry_t *entry = wl_core_find_service(core, service);
    CHECK(entry != NULL);
    const ProtobufCMethodDescriptor *m =
        protobuf_c_service_descriptor_get_method_by_name(entry->descriptor, method);
    CHECK(m != NULL);
    return wl_core_invoke(&ctx->call, entry, (unsigned)(m - entry->descriptor->methods), input);
}

static void principal_for(const char *token, wl_principal_t *out)
{
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_core_authenticate(core, wl_span_str(token), out, &err), 0);
}

static void test_create_and_get(const wl_principal_t *writer, const wl_principal_t *other_org)
{
    char *codes[] = {" B-7 ", "A", "B-7", "", "C"};
    Walklist__V1__CreateLocateListRequest create = WALKLIST__V1__CREATE_LOCATE_LIST_REQUEST__INIT;
    create.name = "Cycle count";
    create.codes = codes;
    create.n_codes = 5;

    /* One empty code: nothing is written, the violation names the index as sent. */
    call_ctx_t ctx;
    long long before = testdb_count(db, "SELECT count(*) FROM locate_lists");
    call_begin(&ctx, writer);
    CHECK_INT(invoke(&ctx, "walklist.v1.LocateListService", "CreateLocateList", &create.base),
              WL_EINVAL);
    CHECK_INT(ctx.err.violation_count, 1);
    CHECK_STR(ctx.err.violations[0].field, "codes[3]");
    CHECK_INT(testdb_count(db, "SELECT count(*) FROM locate_lists"), before);
    wl_arena_dispose(&ctx.arena);

    codes[3] = "D";
    call_begin(&ctx, writer);
    CHECK_INT(invoke(&ctx, "walklist.v1.LocateListService", "CreateLocateList", &create.base), 0);
    const Walklist__V1__CreateLocateListResponse *created = (const void *)ctx.call.reply;
    CHECK_INT(created->codes_count, 4);
    CHECK_STR(created->name, "Cycle count");
    char id[64];
    snprintf(id, sizeof(id), "%s", created->id);
    wl_arena_dispose(&ctx.arena);
    CHECK_INT(testdb_count(db, "SELECT count(*) FROM locate_lists"), before + 1);

    Walklist__V1__GetLocateListRequest get = WALKLIST__V1__GET_LOCATE_LIST_REQUEST__INIT;
    get.id = id;
    call_begin(&ctx, writer);
    CHECK_INT(invoke(&ctx, "walklist.v1.LocateListService", "GetLocateList", &get.base), 0);
    const Walklist__V1__LocateList *list = (const void *)ctx.call.reply;
    CHECK_INT(list->n_codes, 4);
    CHECK_STR(list->codes[0], "B-7");
    CHECK_STR(list->codes[1], "A");
    CHECK_STR(list->codes[2], "D");
    CHECK_STR(list->codes[3], "C");
    CHECK_STR(list->state, "pending");
    CHECK(list->created_at != NULL && list->created_at->seconds > 0);
    CHECK(list->created_at != NULL && list->created_at->nanos % 1000000 == 0);
    CHECK(list->loaded_at == NULL);
    wl_arena_dispose(&ctx.arena);

    /* Another organization cannot see it. */
    call_begin(&ctx, other_org);
    CHECK_INT(invoke(&ctx, "walklist.v1.LocateListService", "GetLocateList", &get.base),
              WL_ENOTFOUND);
    wl_arena_dispose(&ctx.arena);
}

static void test_scopes(const wl_principal_t *stock_only)
{
    Walklist__V1__CreateLocateListRequest create = WALKLIST__V1__CREATE_LOCATE_LIST_REQUEST__INIT;
    char *codes[] = {"A"};
    create.name = "n";
    create.codes = codes;
    create.n_codes = 1;
    call_ctx_t ctx;
    call_begin(&ctx, stock_only);
    CHECK_INT(invoke(&ctx, "walklist.v1.LocateListService", "CreateLocateList", &create.base),
              WL_EPERMISSION);
    CHECK_INT(wl_error_grpc_code(ctx.err.code), WL_GRPC_PERMISSION_DENIED);
    wl_arena_dispose(&ctx.arena);
    call_begin(&ctx, NULL);
    CHECK_INT(invoke(&ctx, "walklist.v1.LocateListService", "CreateLocateList", &create.base),
              WL_EPERMISSION);
    wl_arena_dispose(&ctx.arena);
}

static void test_export(const wl_principal_t *reader)
{
    Walklist__V1__ExportStockRequest request = WALKLIST__V1__EXPORT_STOCK_REQUEST__INIT;
    call_ctx_t ctx;
    call_begin(&ctx, reader);
    CHECK_INT(invoke(&ctx, "walklist.v1.StockService", "ExportStock", &request.base), 0);
    const Walklist__V1__ExportStockResponse *reply = (const void *)ctx.call.reply;
    CHECK_INT(reply->n_items, 2);
    if (reply->n_items == 2) {
        CHECK_STR(reply->items[0]->sku, "P-1");
        CHECK_INT(reply->items[0]->qty, 4);
        CHECK(reply->items[0]->location != NULL);
        CHECK_STR(reply->items[0]->location ? reply->items[0]->location->value : NULL, "R-9");
        CHECK_STR(reply->items[1]->sku, "P-2");
        CHECK_INT(reply->items[1]->qty, 0);
        CHECK(reply->items[1]->location == NULL);
    }
    CHECK(reply->generated_at != NULL && reply->generated_at->nanos % 1000000 == 0);
    wl_arena_dispose(&ctx.arena);
}

/* What the protobuf-c closure received (the reply, or NULL), and how often. */
static struct {
    const ProtobufCMessage *reply;
    const void *closure_data;
    int calls;
} closure_seen;

static void record_reply(const ProtobufCMessage *reply, void *closure_data)
{
    closure_seen.reply = reply;
    closure_seen.closure_data = closure_data;
    closure_seen.calls++;
}

static unsigned method_index(const wl_service_entry_t *entry, const char *name)
{
    const ProtobufCMethodDescriptor *m =
        protobuf_c_service_descriptor_get_method_by_name(entry->descriptor, name);
    CHECK(m != NULL);
    return (unsigned)(m - entry->descriptor->methods);
}

/* The same methods through their protobuf-c face (ProtobufCService, for protobuf-c RPC users):
 * the closure is called exactly once, with the reply or with NULL and the error in the call. */
static void test_protobuf_service(const wl_principal_t *reader, const wl_principal_t *stock_only)
{
    const wl_service_entry_t *stock = wl_core_find_service(core, "walklist.v1.StockService");
    const wl_service_entry_t *lists = wl_core_find_service(core, "walklist.v1.LocateListService");
    CHECK(stock != NULL && lists != NULL);
    if (stock == NULL || lists == NULL)
        return;
    CHECK(stock->service->descriptor == stock->descriptor);

    Walklist__V1__ExportStockRequest request = WALKLIST__V1__EXPORT_STOCK_REQUEST__INIT;
    call_ctx_t ctx;
    call_begin(&ctx, reader);
    closure_seen.calls = 0;
    stock->service->invoke(stock->service, method_index(stock, "ExportStock"), &request.base,
                           record_reply, &ctx.call);
    CHECK_INT(closure_seen.calls, 1);
    CHECK(closure_seen.closure_data == &ctx.call);
    CHECK(closure_seen.reply != NULL && closure_seen.reply == ctx.call.reply);
    CHECK_INT(ctx.err.code, 0);
    if (closure_seen.reply != NULL)
        CHECK_INT(((const Walklist__V1__ExportStockResponse *)closure_seen.reply)->n_items, 2);
    wl_arena_dispose(&ctx.arena);

    /* Refused before the method: a key without lists:write. */
    Walklist__V1__CreateLocateListRequest create = WALKLIST__V1__CREATE_LOCATE_LIST_REQUEST__INIT;
    char *codes[] = {"A"};
    create.name = "n";
    create.codes = codes;
    create.n_codes = 1;
    call_begin(&ctx, stock_only);
    closure_seen.calls = 0;
    lists->service->invoke(lists->service, method_index(lists, "CreateLocateList"), &create.base,
                           record_reply, &ctx.call);
    CHECK_INT(closure_seen.calls, 1);
    CHECK(closure_seen.reply == NULL);
    CHECK_INT(ctx.err.code, WL_EPERMISSION);
    wl_arena_dispose(&ctx.arena);
}

static void test_unavailable(void)
{
    /* A database that cannot be reached is UNAVAILABLE, not an internal error. */
    wl_core_t *dead = NULL;
    wl_error_t err;
    wl_error_init(&err);
    wl_core_config_t config = {.database_url = "host=/nonexistent-walklist port=1 dbname=x",
                               .db_timeout_ms = 2000};
    CHECK_INT(wl_core_create(&config, &dead, &err), 0);
    CHECK_INT(wl_core_ready(dead, &err), WL_EUNAVAILABLE);
    wl_error_init(&err);
    wl_principal_t p;
    CHECK_INT(wl_core_authenticate(
                  dead, wl_span_str("wlk_AAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"), &p, &err),
              WL_EUNAVAILABLE);
    wl_core_destroy(dead);
}

int main(void)
{
    const char *conninfo = testdb_create("integration_services");
    db = testdb_connect(conninfo);
    int64_t org_a = fixture_org(db, "svc-a");
    int64_t org_b = fixture_org(db, "svc-b");
    char key_a[WL_KEY_TOKEN_SIZE], key_b[WL_KEY_TOKEN_SIZE], key_stock[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org_a, "lists:write,stock:read", key_a);
    fixture_key(db, org_b, "lists:write,stock:read", key_b);
    fixture_key(db, org_a, "stock:read", key_stock);
    fixture_import(db, org_a, "warehouses", "code,name,kind\nW,Main,own\n");
    fixture_import(db, org_a, "locations", "warehouse,code,staging\nW,R-9,false\n");
    fixture_import(db, org_a, "products", "sku,name,eans\nP-1,One,\nP-2,Two,\n");
    fixture_import(db, org_a, "stock", "sku,warehouse,on_hand\nP-1,W,4\nP-2,W,0\n");
    fixture_import(db, org_a, "location-stock", "sku,warehouse,location,quantity\nP-1,W,R-9,4\n");

    wl_error_t err;
    wl_error_init(&err);
    wl_core_config_t config = {.database_url = conninfo, .db_pool_size = 2};
    if (wl_core_create(&config, &core, &err) != 0) {
        fprintf(stderr, "core: %s\n", err.message);
        return 1;
    }
    CHECK_INT(wl_core_ready(core, &err), 0);
    wl_principal_t a, b, stock_only;
    principal_for(key_a, &a);
    principal_for(key_b, &b);
    principal_for(key_stock, &stock_only);
    CHECK_INT(a.org_id, org_a);
    CHECK_STR(a.org_slug, "svc-a");

    test_create_and_get(&a, &b);
    test_scopes(&stock_only);
    test_export(&a);
    test_protobuf_service(&a, &stock_only);
    test_unavailable();

    wl_core_destroy(core);
    PQfinish(db);
    return test_exit();
}
