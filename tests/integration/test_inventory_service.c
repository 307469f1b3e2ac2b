/*
 * walklist.v1.InventoryService invoked through the core (no HTTP) against PostgreSQL: each
 * RPC's effect on the tables and on stock_availability, violations named by item index and
 * field, all or nothing up to 1,000 items, the scope, and tenant isolation.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "test.h"
#include "testdb.h"
#include "walklist/core.h"
#include "walklist/utf8.h"
#include "walklist/v1/inventory.pb-c.h"

#define SERVICE "walklist.v1.InventoryService"

static wl_core_t *core;
static PGconn *db;

typedef struct {
    wl_arena_t arena;
    wl_error_t err;
    wl_call_t call;
} call_ctx_t;

#define WAREHOUSE(c, n, k)                                                                         \
    {                                                                                              \
        .base = PROTOBUF_C_MESSAGE_INIT(&walklist__v1__warehouse__descriptor),                     \
        .code = (char *)(c), .name = (char *)(n), .kind = (char *)(k)                              \
    }
#define LOCATION(w, c, s)                                                                          \
    {                                                                                              \
        .base = PROTOBUF_C_MESSAGE_INIT(&walklist__v1__location__descriptor),                      \
        .warehouse = (char *)(w), .code = (char *)(c), .staging = (s)                              \
    }
#define PRODUCT(s, n, eans_)                                                                       \
    {                                                                                              \
        .base = PROTOBUF_C_MESSAGE_INIT(&walklist__v1__product__descriptor), .sku = (char *)(s),   \
        .name = (char *)(n), .n_eans = sizeof(eans_) / sizeof(char *), .eans = (char **)(eans_)    \
    }
#define STOCK(s, w, q)                                                                             \
    {                                                                                              \
        .base = PROTOBUF_C_MESSAGE_INIT(&walklist__v1__stock_level__descriptor),                   \
        .sku = (char *)(s), .warehouse = (char *)(w), .on_hand = (q)                               \
    }
#define LOCATION_STOCK(s, w, l, q)                                                                 \
    {                                                                                              \
        .base = PROTOBUF_C_MESSAGE_INIT(&walklist__v1__location_stock_level__descriptor),          \
        .sku = (char *)(s), .warehouse = (char *)(w), .location = (char *)(l), .quantity = (q)     \
    }
#define RESERVATION(r, s, w, q)                                                                    \
    {                                                                                              \
        .base = PROTOBUF_C_MESSAGE_INIT(&walklist__v1__reservation__descriptor),                   \
        .ref = (char *)(r), .sku = (char *)(s), .warehouse = (char *)(w), .quantity = (q)          \
    }

#define PRODUCT_WITHOUT_EANS(s, n)                                                                 \
    {                                                                                              \
        .base = PROTOBUF_C_MESSAGE_INIT(&walklist__v1__product__descriptor), .sku = (char *)(s),   \
        .name = (char *)(n)                                                                        \
    }

/*
 * Calls method with its request's one repeated field set to the n items given as pointers
 * (messages, or strings for refs). Every request of the service has that shape, so the
 * request is built from its descriptor. ctx holds the reply or error until disposed.
 */
static int call_batch(call_ctx_t *ctx, const wl_principal_t *principal, const char *method,
                      void *const *items, size_t n)
{
    const wl_service_entry_t *entry = wl_core_find_service(core, SERVICE);
    CHECK(entry != NULL);
    const ProtobufCMethodDescriptor *m =
        protobuf_c_service_descriptor_get_method_by_name(entry->descriptor, method);
    CHECK(m != NULL);
    const ProtobufCMessageDescriptor *input = m->input;
    CHECK_INT(input->n_fields, 1);
    ProtobufCMessage *request = calloc(1, input->sizeof_message);
    input->message_init(request);
    const ProtobufCFieldDescriptor *list = &input->fields[0];
    *(size_t *)((char *)request + list->quantifier_offset) = n;
    *(void *const **)((char *)request + list->offset) = items;

    wl_arena_init(&ctx->arena, 0);
    wl_error_init(&ctx->err);
    ctx->call =
        (wl_call_t){.core = core, .arena = &ctx->arena, .principal = principal, .err = &ctx->err};
    int rc = wl_core_invoke(&ctx->call, entry, (unsigned)(m - entry->descriptor->methods), request);
    free(request);
    return rc;
}

/* Messages given as an array of structs of elem_size bytes. */
static int call_messages(call_ctx_t *ctx, const wl_principal_t *principal, const char *method,
                         void *items, size_t elem_size, size_t n)
{
    void **pointers = calloc(n ? n : 1, sizeof(*pointers));
    for (size_t i = 0; i < n; i++)
        pointers[i] = (char *)items + i * elem_size;
    int rc = call_batch(ctx, principal, method, pointers, n);
    free(pointers);
    return rc;
}

#define CALL(ctx, principal, method, items)                                                        \
    call_messages(ctx, principal, method, items, sizeof((items)[0]),                               \
                  sizeof(items) / sizeof((items)[0]))
#define CALL_REFS(ctx, principal, method, refs)                                                    \
    call_batch(ctx, principal, method, (void *const *)(refs), sizeof(refs) / sizeof((refs)[0]))

/* The count of a reply: every response of the service is {int32 count}. */
static int32_t reply_count(const call_ctx_t *ctx)
{
    const ProtobufCMessage *reply = ctx->call.reply;
    if (reply == NULL)
        return -1;
    CHECK_STR(reply->descriptor->fields[0].name, "count");
    return *(const int32_t *)((const char *)reply + reply->descriptor->fields[0].offset);
}

/* Calls that must succeed, writing n items. */
#define CALL_OK(principal, method, items)                                                          \
    do {                                                                                           \
        call_ctx_t ok_;                                                                            \
        int rc_ = CALL(&ok_, principal, method, items);                                            \
        CHECK_INT(rc_, 0);                                                                         \
        if (rc_ != 0)                                                                              \
            print_error(&ok_);                                                                     \
        CHECK_INT(reply_count(&ok_), sizeof(items) / sizeof((items)[0]));                          \
        wl_arena_dispose(&ok_.arena);                                                              \
    } while (0)

static void print_error(const call_ctx_t *ctx)
{
    fprintf(stderr, "  error %d: %s\n", ctx->err.code, ctx->err.message);
    for (size_t i = 0; i < ctx->err.violation_count; i++)
        fprintf(stderr, "    %s: %s\n", ctx->err.violations[i].field,
                ctx->err.violations[i].description);
}

/* The violation of field, NULL when there is none. */
static const wl_field_violation_t *violation(const call_ctx_t *ctx, const char *field)
{
    for (size_t i = 0; i < ctx->err.violation_count; i++) {
        if (strcmp(ctx->err.violations[i].field, field) == 0)
            return &ctx->err.violations[i];
    }
    return NULL;
}

/* field is violated and its description mentions text. */
#define CHECK_VIOLATION(ctx, field, text)                                                          \
    do {                                                                                           \
        const wl_field_violation_t *v_ = violation(ctx, field);                                    \
        CHECK_STR(v_ != NULL ? field : "(no such violation)", field);                              \
        if (v_ != NULL && strstr(v_->description, text) == NULL)                                   \
            FAIL("%s: \"%s\" does not mention \"%s\"", field, v_->description, text);              \
    } while (0)

static const char *sql_value(char *buf, size_t size, const char *fmt, ...) WL_PRINTF(3, 4);

static const char *sql_value(char *buf, size_t size, const char *fmt, ...)
{
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    return testdb_value(db, sql, buf, size);
}

static long long sql_count(const char *fmt, ...) WL_PRINTF(1, 2);

static long long sql_count(const char *fmt, ...)
{
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    return testdb_count(db, sql);
}

/* "qty@location", "qty@-" without a location, "" without an export row. */
#define CHECK_AVAILABILITY(org, sku, expected)                                                     \
    do {                                                                                           \
        char avail_[128];                                                                          \
        CHECK_STR(sql_value(avail_, sizeof(avail_),                                                \
                            "SELECT qty || '@' || coalesce(location, '-') FROM stock_availability" \
                            " WHERE org_id = %" PRId64 " AND sku = '%s'",                          \
                            (int64_t)(org), sku),                                                  \
                  expected);                                                                       \
    } while (0)

/* Every inventory row of the database, as one digest: equal digests, nothing written. */
static void inventory_digest(char digest[33])
{
    testdb_value(db,
                 "SELECT md5(concat_ws('#',"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM warehouses t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM locations t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM products t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM product_eans t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM stock t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM location_stock t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM reservations t),"
                 " (SELECT string_agg(t::text, '|' ORDER BY t::text) FROM stock_availability t)))",
                 digest, 33);
}

static void test_registry(void)
{
    const wl_service_entry_t *entry = wl_core_find_service(core, SERVICE);
    CHECK(entry != NULL);
    if (entry == NULL)
        return;
    CHECK_INT(entry->descriptor->n_methods, 8);
    for (unsigned i = 0; i < entry->descriptor->n_methods; i++) {
        CHECK_INT(wl_core_method_policy(entry, i)->scope, WL_SCOPE_INVENTORY_WRITE);
        CHECK_STR(wl_core_method_policy(entry, i)->rate_bucket, "shared");
    }
}

/* Builds the base inventory of org through the service; every write refreshes the export. */
static void test_writes(const wl_principal_t *writer, int64_t org)
{
    char buf[256];
    Walklist__V1__Warehouse warehouses[] = {WAREHOUSE("W1", "Main, north", "own"),
                                            WAREHOUSE("W2", "Second", "own"),
                                            WAREHOUSE("SUP", "Supplier", "supplier")};
    CALL_OK(writer, "UpsertWarehouses", warehouses);
    CHECK_STR(sql_value(buf, sizeof(buf),
                        "SELECT string_agg(code || ':' || name || ':' || kind, ' ' ORDER BY code)"
                        " FROM warehouses WHERE org_id = %" PRId64,
                        org),
              "SUP:Supplier:supplier W1:Main, north:own W2:Second:own");

    Walklist__V1__Location locations[] = {
        LOCATION("W1", "A-1", false), LOCATION("W1", "A-2", false), LOCATION("W1", "A-10", false),
        LOCATION("W1", "DOCK", true), LOCATION("W2", "B-1", false), LOCATION("SUP", "S-1", false)};
    CALL_OK(writer, "UpsertLocations", locations);
    CHECK_STR(sql_value(buf, sizeof(buf),
                        "SELECT string_agg(code || ':' || staging, ' ' ORDER BY sort_key)"
                        " FROM locations WHERE org_id = %" PRId64 " AND warehouse = 'W1'",
                        org),
              "A-1:false A-2:false A-10:false DOCK:true");

    static const char *const drill_eans[] = {"4006381333931", "4006381333948"};
    static const char *const bits_eans[] = {"4006381333931"};
    Walklist__V1__Product products[] = {
        PRODUCT("SKU-1", "Drill\n18V", drill_eans),
        PRODUCT("SKU-2", "Bits", bits_eans),
        PRODUCT_WITHOUT_EANS("SKU-3", "Gloves"),
    };
    CALL_OK(writer, "UpsertProducts", products);
    CHECK_INT(sql_count("SELECT count(*) FROM products WHERE org_id = %" PRId64, org), 3);
    CHECK_STR(sql_value(buf, sizeof(buf),
                        "SELECT string_agg(sku, ' ' ORDER BY sku) FROM product_eans"
                        " WHERE org_id = %" PRId64 " AND ean = '4006381333931'",
                        org),
              "SKU-1 SKU-2");
    CHECK_STR(sql_value(buf, sizeof(buf),
                        "SELECT name FROM products WHERE org_id = %" PRId64 " AND sku = 'SKU-1'",
                        org),
              "Drill\n18V");
    /* No stock and no rack yet: nothing is exported. */
    CHECK_INT(sql_count("SELECT count(*) FROM stock_availability WHERE org_id = %" PRId64, org), 0);

    /* EANs are replaced by the list sent, names updated. */
    static const char *const new_eans[] = {"5000000000001", "4006381333948"};
    Walklist__V1__Product renamed[] = {PRODUCT("SKU-1", "Drill 2", new_eans)};
    CALL_OK(writer, "UpsertProducts", renamed);
    CHECK_STR(sql_value(buf, sizeof(buf),
                        "SELECT name || ' ' || (SELECT string_agg(ean, ' ' ORDER BY ean)"
                        " FROM product_eans e WHERE e.org_id = p.org_id AND e.sku = p.sku)"
                        " FROM products p WHERE org_id = %" PRId64 " AND sku = 'SKU-1'",
                        org),
              "Drill 2 4006381333948 5000000000001");

    Walklist__V1__StockLevel stock[] = {STOCK("SKU-1", "W1", 10), STOCK("SKU-1", "W2", 5),
                                        STOCK("SKU-1", "SUP", 100), STOCK("SKU-2", "W1", 30)};
    CALL_OK(writer, "SetStock", stock);
    CHECK_INT(sql_count("SELECT count(*) FROM stock WHERE org_id = %" PRId64, org), 4);
    CHECK_AVAILABILITY(org, "SKU-1", "15@-");
    CHECK_AVAILABILITY(org, "SKU-2", "30@-");
    CHECK_AVAILABILITY(org, "SKU-3", "");

    Walklist__V1__LocationStockLevel racks[] = {
        LOCATION_STOCK("SKU-1", "W1", "A-10", 4), LOCATION_STOCK("SKU-1", "W1", "A-2", 4),
        LOCATION_STOCK("SKU-1", "W1", "DOCK", 50), LOCATION_STOCK("SKU-2", "SUP", "S-1", 9),
        LOCATION_STOCK("SKU-3", "W2", "B-1", 0)};
    CALL_OK(writer, "SetLocationStock", racks);
    CHECK_INT(sql_count("SELECT count(*) FROM location_stock WHERE org_id = %" PRId64, org), 5);
    CHECK_AVAILABILITY(org, "SKU-1", "15@A-2"); /* tie: natural order */
    CHECK_AVAILABILITY(org, "SKU-2", "30@-");   /* its only rack is at the supplier */
    CHECK_AVAILABILITY(org, "SKU-3", "0@B-1");  /* a rack holding 0 still counts */

    /* Setting a value again updates it. */
    Walklist__V1__StockLevel more_stock[] = {STOCK("SKU-1", "W1", 20)};
    CALL_OK(writer, "SetStock", more_stock);
    CHECK_AVAILABILITY(org, "SKU-1", "25@A-2");
    Walklist__V1__LocationStockLevel more_rack[] = {LOCATION_STOCK("SKU-1", "W1", "A-10", 5)};
    CALL_OK(writer, "SetLocationStock", more_rack);
    CHECK_AVAILABILITY(org, "SKU-1", "25@A-10");

    /* Kind and staging changes refresh the SKUs they touch. */
    Walklist__V1__Warehouse w2_supplier[] = {WAREHOUSE("W2", "Second", "supplier")};
    CALL_OK(writer, "UpsertWarehouses", w2_supplier);
    CHECK_AVAILABILITY(org, "SKU-1", "20@A-10");
    CHECK_AVAILABILITY(org, "SKU-3", "");
    Walklist__V1__Warehouse w2_own[] = {WAREHOUSE("W2", "Second", "own")};
    CALL_OK(writer, "UpsertWarehouses", w2_own);
    CHECK_AVAILABILITY(org, "SKU-1", "25@A-10");
    CHECK_AVAILABILITY(org, "SKU-3", "0@B-1");
    Walklist__V1__Location a10_staging[] = {LOCATION("W1", "A-10", true)};
    CALL_OK(writer, "UpsertLocations", a10_staging);
    CHECK_AVAILABILITY(org, "SKU-1", "25@A-2");
    Walklist__V1__Location a10_rack[] = {LOCATION("W1", "A-10", false)};
    CALL_OK(writer, "UpsertLocations", a10_rack);
    CHECK_AVAILABILITY(org, "SKU-1", "25@A-10");
}

static void test_reservations(const wl_principal_t *writer, int64_t org)
{
    char buf[256], before[33], after[33];
    call_ctx_t ctx;
    Walklist__V1__Reservation created[] = {RESERVATION("R1", "SKU-1", "W1", 3),
                                           RESERVATION("R2", "SKU-2", "W1", 10),
                                           RESERVATION("R3", "SKU-1", "SUP", 50)};
    CALL_OK(writer, "CreateReservations", created);
    CHECK_STR(sql_value(buf, sizeof(buf),
                        "SELECT string_agg(ref || ':' || sku || ':' || warehouse || ':' || quantity"
                        " || ':' || status, ' ' ORDER BY ref) FROM reservations"
                        " WHERE org_id = %" PRId64,
                        org),
              "R1:SKU-1:W1:3:active R2:SKU-2:W1:10:active R3:SKU-1:SUP:50:active");
    CHECK_AVAILABILITY(org, "SKU-1", "22@A-10"); /* the supplier's reservation does not count */
    CHECK_AVAILABILITY(org, "SKU-2", "20@-");

    /* A retry of the same creation succeeds and changes nothing. */
    inventory_digest(before);
    CALL_OK(writer, "CreateReservations", created);
    inventory_digest(after);
    CHECK_STR(after, before);

    /* A ref that exists with other values: ALREADY_EXISTS, nothing written (not even R4). */
    Walklist__V1__Reservation changed[] = {RESERVATION("R4", "SKU-1", "W1", 1),
                                           RESERVATION("R1", "SKU-1", "W1", 4)};
    CHECK_INT(CALL(&ctx, writer, "CreateReservations", changed), WL_EEXISTS);
    CHECK_INT(wl_error_grpc_code(ctx.err.code), WL_GRPC_ALREADY_EXISTS);
    CHECK(strstr(ctx.err.message, "reservations[1]: reservation R1 already exists") != NULL);
    wl_arena_dispose(&ctx.arena);
    inventory_digest(after);
    CHECK_STR(after, before);

    /* Release: active -> released, the quantity is available again. */
    char *release_r1[] = {"R1"};
    CHECK_INT(CALL_REFS(&ctx, writer, "ReleaseReservations", release_r1), 0);
    CHECK_INT(reply_count(&ctx), 1);
    wl_arena_dispose(&ctx.arena);
    CHECK_STR(sql_value(buf, sizeof(buf),
                        "SELECT status FROM reservations WHERE org_id = %" PRId64 " AND ref = 'R1'",
                        org),
              "released");
    CHECK_AVAILABILITY(org, "SKU-1", "25@A-10");

    /* Consume: active -> consumed; the reservation no longer counts either. */
    char *consume_r2[] = {"R2"};
    CHECK_INT(CALL_REFS(&ctx, writer, "ConsumeReservations", consume_r2), 0);
    CHECK_INT(reply_count(&ctx), 1);
    wl_arena_dispose(&ctx.arena);
    CHECK_STR(sql_value(buf, sizeof(buf),
                        "SELECT status FROM reservations WHERE org_id = %" PRId64 " AND ref = 'R2'",
                        org),
              "consumed");
    CHECK_AVAILABILITY(org, "SKU-2", "30@-");

    /* A released or consumed reservation is not active: FAILED_PRECONDITION, nothing written,
     * even for the good refs of the batch. */
    Walklist__V1__Reservation r5[] = {RESERVATION("R5", "SKU-1", "W2", 2)};
    CALL_OK(writer, "CreateReservations", r5);
    CHECK_AVAILABILITY(org, "SKU-1", "23@A-10");
    inventory_digest(before);
    char *again[] = {"R5", "R1"};
    CHECK_INT(CALL_REFS(&ctx, writer, "ReleaseReservations", again), WL_EPRECONDITION);
    CHECK_INT(wl_error_grpc_code(ctx.err.code), WL_GRPC_FAILED_PRECONDITION);
    CHECK(strstr(ctx.err.message, "refs[1]: reservation R1 is released, not active") != NULL);
    CHECK_INT(ctx.err.violation_count, 0);
    wl_arena_dispose(&ctx.arena);
    char *consume_consumed[] = {"R2"};
    CHECK_INT(CALL_REFS(&ctx, writer, "ConsumeReservations", consume_consumed), WL_EPRECONDITION);
    CHECK(strstr(ctx.err.message, "refs[0]: reservation R2 is consumed, not active") != NULL);
    wl_arena_dispose(&ctx.arena);

    /* An unknown ref: NOT_FOUND, and it wins over a reservation that is not active. */
    char *unknown[] = {"R1", "R5", "R9", "r5"};
    CHECK_INT(CALL_REFS(&ctx, writer, "ConsumeReservations", unknown), WL_ENOTFOUND);
    CHECK_INT(wl_error_grpc_code(ctx.err.code), WL_GRPC_NOT_FOUND);
    CHECK(strstr(ctx.err.message, "refs[2]: no reservation R9 (and 2 more)") != NULL);
    wl_arena_dispose(&ctx.arena);
    inventory_digest(after);
    CHECK_STR(after, before);

    /* A finished reservation is never reopened by creating it again. */
    Walklist__V1__Reservation reopen[] = {RESERVATION("R1", "SKU-1", "W1", 3)};
    CHECK_INT(CALL(&ctx, writer, "CreateReservations", reopen), WL_EEXISTS);
    CHECK(strstr(ctx.err.message, "released") != NULL);
    wl_arena_dispose(&ctx.arena);

    /* A ref twice in one batch, and a bad ref: violations, as for every kind. */
    char *twice[] = {"R5", "", "R5"};
    CHECK_INT(CALL_REFS(&ctx, writer, "ReleaseReservations", twice), WL_EINVAL);
    CHECK_VIOLATION(&ctx, "refs[1]", "1 to 64 characters");
    CHECK_VIOLATION(&ctx, "refs[2]", "duplicate key (ref): first on refs[0]");
    CHECK_INT(ctx.err.violation_count, 2);
    wl_arena_dispose(&ctx.arena);
    inventory_digest(after);
    CHECK_STR(after, before);

    char *r5_only[] = {"R5"};
    CHECK_INT(CALL_REFS(&ctx, writer, "ReleaseReservations", r5_only), 0);
    wl_arena_dispose(&ctx.arena);
    CHECK_AVAILABILITY(org, "SKU-1", "25@A-10");
}

static void test_violations(const wl_principal_t *writer)
{
    char before[33], after[33];
    call_ctx_t ctx;
    inventory_digest(before);

    Walklist__V1__Warehouse warehouses[] = {
        WAREHOUSE("W9", "Nine", "own"), WAREHOUSE("W8", "", "Own"), WAREHOUSE(" W7", "x", "own"),
        WAREHOUSE("W9", "Again", "supplier")};
    CHECK_INT(CALL(&ctx, writer, "UpsertWarehouses", warehouses), WL_EINVAL);
    CHECK_INT(wl_error_grpc_code(ctx.err.code), WL_GRPC_INVALID_ARGUMENT);
    CHECK_VIOLATION(&ctx, "warehouses[1].name", "must not be empty");
    CHECK_VIOLATION(&ctx, "warehouses[1].kind", "must be own or supplier");
    CHECK_VIOLATION(&ctx, "warehouses[2].code", "whitespace");
    CHECK_VIOLATION(&ctx, "warehouses[3]", "duplicate key (code): first on warehouses[0]");
    CHECK_INT(ctx.err.violation_count, 4);
    wl_arena_dispose(&ctx.arena);

    Walklist__V1__Location locations[] = {LOCATION("W1", "A-9", false),
                                          LOCATION("NOPE", "A-1", false), LOCATION("w1", "", true)};
    CHECK_INT(CALL(&ctx, writer, "UpsertLocations", locations), WL_EINVAL);
    CHECK_VIOLATION(&ctx, "locations[1].warehouse", "unknown warehouse NOPE");
    CHECK_VIOLATION(&ctx, "locations[2].code", "1 to 64 characters");
    CHECK_INT(ctx.err.violation_count, 2);
    wl_arena_dispose(&ctx.arena);

    static const char *const eans[] = {"123", "", "12|3", "1 "};
    Walklist__V1__Product products[] = {PRODUCT("P9", "Nine", eans),
                                        PRODUCT_WITHOUT_EANS("P8", "Bad \xC0\xAF")};
    CHECK_INT(CALL(&ctx, writer, "UpsertProducts", products), WL_EINVAL);
    CHECK_VIOLATION(&ctx, "products[0].eans[1]", "1 to 64 characters");
    CHECK_VIOLATION(&ctx, "products[0].eans[2]", "must not contain '|'");
    CHECK_VIOLATION(&ctx, "products[0].eans[3]", "whitespace");
    CHECK_VIOLATION(&ctx, "products[1].name", "UTF-8");
    CHECK_INT(ctx.err.violation_count, 4);
    wl_arena_dispose(&ctx.arena);

    Walklist__V1__StockLevel stock[] = {STOCK("SKU-1", "W1", 1),        STOCK("SKU-1", "W2", -1),
                                        STOCK("SKU-9", "W1", 1),        STOCK("SKU-2", "W9", 1),
                                        STOCK("SKU-1", "W1", 2),        STOCK("sku-1", "W1", 1),
                                        STOCK("SKU-3", "W1", INT64_MAX)};
    CHECK_INT(CALL(&ctx, writer, "SetStock", stock), WL_EINVAL);
    CHECK_VIOLATION(&ctx, "items[1].onHand", "whole number");
    CHECK_VIOLATION(&ctx, "items[2].sku", "unknown product SKU-9");
    CHECK_VIOLATION(&ctx, "items[3].warehouse", "unknown warehouse W9");
    CHECK_VIOLATION(&ctx, "items[4]", "duplicate key (sku, warehouse): first on items[0]");
    CHECK_VIOLATION(&ctx, "items[5].sku", "unknown product sku-1");
    CHECK_VIOLATION(&ctx, "items[6].onHand", "whole number");
    CHECK_INT(ctx.err.violation_count, 6);
    wl_arena_dispose(&ctx.arena);

    Walklist__V1__LocationStockLevel racks[] = {
        LOCATION_STOCK("SKU-1", "W1", "A-1", 1), LOCATION_STOCK("SKU-1", "W1", "B-1", 1),
        LOCATION_STOCK("SKU-1", "W9", "A-1", 1), LOCATION_STOCK("SKU-2", "W1", "A-1", -3)};
    CHECK_INT(CALL(&ctx, writer, "SetLocationStock", racks), WL_EINVAL);
    CHECK_VIOLATION(&ctx, "items[1].location", "unknown location B-1 in warehouse W1");
    CHECK_VIOLATION(&ctx, "items[2].location", "unknown location A-1 in warehouse W9");
    CHECK_VIOLATION(&ctx, "items[3].quantity", "whole number");
    CHECK_INT(ctx.err.violation_count, 3);
    wl_arena_dispose(&ctx.arena);

    Walklist__V1__Reservation reservations[] = {RESERVATION("R7", "SKU-1", "W1", -1),
                                                RESERVATION("R8", "SKU-9", "W1", 1),
                                                RESERVATION("", "SKU-1", "NOPE", 1)};
    CHECK_INT(CALL(&ctx, writer, "CreateReservations", reservations), WL_EINVAL);
    CHECK_VIOLATION(&ctx, "reservations[0].quantity", "whole number");
    CHECK_VIOLATION(&ctx, "reservations[1].sku", "unknown product SKU-9");
    CHECK_VIOLATION(&ctx, "reservations[2].ref", "1 to 64 characters");
    CHECK_INT(ctx.err.violation_count, 3);
    wl_arena_dispose(&ctx.arena);

    /* A long unknown code: the description is cut, but never inside a character. */
    char wide_sku[4 * 64 + 1] = "";
    for (int i = 0; i < 64; i++)
        strcat(wide_sku, "\xF0\x9F\x93\xA6"); /* U+1F4E6, 4 bytes */
    Walklist__V1__StockLevel wide[] = {STOCK(wide_sku, "W1", 1)};
    CHECK_INT(CALL(&ctx, writer, "SetStock", wide), WL_EINVAL);
    CHECK_VIOLATION(&ctx, "items[0].sku", "unknown product \xF0\x9F\x93\xA6");
    CHECK(ctx.err.violation_count == 1 &&
          wl_utf8_count(wl_span_str(ctx.err.violations[0].description)) > 0);
    wl_arena_dispose(&ctx.arena);
    char *wide_refs[] = {wide_sku};
    CHECK_INT(CALL_REFS(&ctx, writer, "ReleaseReservations", wide_refs), WL_ENOTFOUND);
    CHECK(wl_utf8_count(wl_span_str(ctx.err.message)) > 0);
    wl_arena_dispose(&ctx.arena);

    /* Empty batches: a violation of the list field, for every RPC. */
    static const char *const methods[][2] = {
        {"UpsertWarehouses", "warehouses"}, {"UpsertLocations", "locations"},
        {"UpsertProducts", "products"},     {"SetStock", "items"},
        {"SetLocationStock", "items"},      {"CreateReservations", "reservations"},
        {"ReleaseReservations", "refs"},    {"ConsumeReservations", "refs"}};
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        CHECK_INT(call_batch(&ctx, writer, methods[i][0], NULL, 0), WL_EINVAL);
        CHECK_VIOLATION(&ctx, methods[i][1], "must have 1 to 1000 entries");
        CHECK_INT(ctx.err.violation_count, 1);
        wl_arena_dispose(&ctx.arena);
    }

    inventory_digest(after);
    CHECK_STR(after, before);
}

/* 1,000 items apply together; a bad 1,000th writes nothing; 1,001 are refused. */
static void test_batch_limits(const wl_principal_t *writer, int64_t org)
{
    enum { N = 1000 };
    char before[33], after[33];
    call_ctx_t ctx;
    static char skus[N + 1][16];
    static Walklist__V1__Product products[N + 1];
    static Walklist__V1__StockLevel stock[N + 1];
    for (int i = 0; i <= N; i++) {
        snprintf(skus[i], sizeof(skus[i]), "BULK-%04d", i);
        products[i] = (Walklist__V1__Product)PRODUCT_WITHOUT_EANS(skus[i], "Bulk");
        stock[i] = (Walklist__V1__StockLevel)STOCK(skus[i], i % 2 ? "W1" : "W2", i);
    }
    long long products_before =
        sql_count("SELECT count(*) FROM products WHERE org_id = %" PRId64, org);

    /* A bad value in item 999 (checked in C): nothing of the 1,000 is written. */
    inventory_digest(before);
    products[N - 1].name = "";
    CHECK_INT(call_messages(&ctx, writer, "UpsertProducts", products, sizeof(products[0]), N),
              WL_EINVAL);
    CHECK_VIOLATION(&ctx, "products[999].name", "must not be empty");
    CHECK_INT(ctx.err.violation_count, 1);
    wl_arena_dispose(&ctx.arena);
    inventory_digest(after);
    CHECK_STR(after, before);
    CHECK_INT(sql_count("SELECT count(*) FROM products WHERE org_id = %" PRId64, org),
              products_before);

    /* 1,001 items: a violation of the list, nothing checked or written. */
    products[N - 1].name = "Bulk";
    CHECK_INT(call_messages(&ctx, writer, "UpsertProducts", products, sizeof(products[0]), N + 1),
              WL_EINVAL);
    CHECK_VIOLATION(&ctx, "products", "must have at most 1000 entries, got 1001");
    CHECK_INT(ctx.err.violation_count, 1);
    wl_arena_dispose(&ctx.arena);
    inventory_digest(after);
    CHECK_STR(after, before);

    /* Exactly 1,000 items: all written. */
    CHECK_INT(call_messages(&ctx, writer, "UpsertProducts", products, sizeof(products[0]), N), 0);
    CHECK_INT(reply_count(&ctx), N);
    wl_arena_dispose(&ctx.arena);
    CHECK_INT(sql_count("SELECT count(*) FROM products WHERE org_id = %" PRId64, org),
              products_before + N);

    /* An unknown reference in item 999 (checked in SQL): nothing written, no export row. */
    inventory_digest(before);
    stock[N - 1].warehouse = "W9";
    CHECK_INT(call_messages(&ctx, writer, "SetStock", stock, sizeof(stock[0]), N), WL_EINVAL);
    CHECK_VIOLATION(&ctx, "items[999].warehouse", "unknown warehouse W9");
    CHECK_INT(ctx.err.violation_count, 1);
    wl_arena_dispose(&ctx.arena);
    inventory_digest(after);
    CHECK_STR(after, before);
    CHECK_INT(sql_count("SELECT count(*) FROM stock WHERE org_id = %" PRId64
                        " AND sku LIKE 'BULK-%%'",
                        org),
              0);
    CHECK_INT(sql_count("SELECT count(*) FROM stock_availability WHERE org_id = %" PRId64
                        " AND sku LIKE 'BULK-%%'",
                        org),
              0);

    CHECK_INT(call_messages(&ctx, writer, "SetStock", stock, sizeof(stock[0]), N + 1), WL_EINVAL);
    CHECK_VIOLATION(&ctx, "items", "at most 1000");
    wl_arena_dispose(&ctx.arena);

    /* Every item bad: the first violations are kept, the rest counted. */
    for (int i = 0; i < N; i++)
        stock[i].on_hand = -1;
    CHECK_INT(call_messages(&ctx, writer, "SetStock", stock, sizeof(stock[0]), N), WL_EINVAL);
    CHECK_INT(ctx.err.violation_count, WL_MAX_VIOLATIONS);
    CHECK_INT(ctx.err.violation_count + ctx.err.violations_dropped, N);
    CHECK_STR(ctx.err.violations[0].field, "items[0].onHand");
    wl_arena_dispose(&ctx.arena);
    inventory_digest(after);
    CHECK_STR(after, before);

    for (int i = 0; i < N; i++)
        stock[i].on_hand = i;
    stock[N - 1].warehouse = "W1";
    CHECK_INT(call_messages(&ctx, writer, "SetStock", stock, sizeof(stock[0]), N), 0);
    CHECK_INT(reply_count(&ctx), N);
    wl_arena_dispose(&ctx.arena);
    CHECK_INT(sql_count("SELECT count(*) FROM stock WHERE org_id = %" PRId64
                        " AND sku LIKE 'BULK-%%'",
                        org),
              N);
    /* BULK-0000 holds 0 and is exported with 0: a stock record makes a SKU exported. */
    CHECK_INT(sql_count("SELECT count(*) FROM stock_availability WHERE org_id = %" PRId64
                        " AND sku LIKE 'BULK-%%'",
                        org),
              N);
    CHECK_INT(sql_count("SELECT sum(qty) FROM stock_availability WHERE org_id = %" PRId64
                        " AND sku LIKE 'BULK-%%'",
                        org),
              (long long)N * (N - 1) / 2);
    CHECK_AVAILABILITY(org, "BULK-0999", "999@-");
}

static void test_scope(const wl_principal_t *no_inventory)
{
    char before[33], after[33];
    call_ctx_t ctx;
    inventory_digest(before);
    Walklist__V1__Warehouse warehouses[] = {WAREHOUSE("W5", "Five", "own")};
    CHECK_INT(CALL(&ctx, no_inventory, "UpsertWarehouses", warehouses), WL_EPERMISSION);
    CHECK_INT(wl_error_grpc_code(ctx.err.code), WL_GRPC_PERMISSION_DENIED);
    CHECK(strstr(ctx.err.message, "inventory:write") != NULL);
    wl_arena_dispose(&ctx.arena);
    char *refs[] = {"R5"};
    CHECK_INT(CALL_REFS(&ctx, no_inventory, "ReleaseReservations", refs), WL_EPERMISSION);
    wl_arena_dispose(&ctx.arena);
    CHECK_INT(CALL(&ctx, NULL, "UpsertWarehouses", warehouses), WL_EPERMISSION);
    wl_arena_dispose(&ctx.arena);
    inventory_digest(after);
    CHECK_STR(after, before);
}

/* Another organization's warehouses, locations, products and refs do not exist for a key. */
static void test_tenants(const wl_principal_t *other, int64_t org, int64_t other_org)
{
    char before[33], after[33], buf[256];
    call_ctx_t ctx;
    inventory_digest(before);
    Walklist__V1__Location locations[] = {LOCATION("W1", "X-1", false)};
    CHECK_INT(CALL(&ctx, other, "UpsertLocations", locations), WL_EINVAL);
    CHECK_VIOLATION(&ctx, "locations[0].warehouse", "unknown warehouse W1");
    wl_arena_dispose(&ctx.arena);
    Walklist__V1__StockLevel stock[] = {STOCK("SKU-1", "W1", 1)};
    CHECK_INT(CALL(&ctx, other, "SetStock", stock), WL_EINVAL);
    CHECK_VIOLATION(&ctx, "items[0].sku", "unknown product SKU-1");
    CHECK_VIOLATION(&ctx, "items[0].warehouse", "unknown warehouse W1");
    wl_arena_dispose(&ctx.arena);
    Walklist__V1__LocationStockLevel racks[] = {LOCATION_STOCK("SKU-1", "W1", "A-1", 1)};
    CHECK_INT(CALL(&ctx, other, "SetLocationStock", racks), WL_EINVAL);
    CHECK_VIOLATION(&ctx, "items[0].location", "unknown location A-1 in warehouse W1");
    wl_arena_dispose(&ctx.arena);
    Walklist__V1__Reservation reservations[] = {RESERVATION("R9", "SKU-1", "W1", 1)};
    CHECK_INT(CALL(&ctx, other, "CreateReservations", reservations), WL_EINVAL);
    CHECK_VIOLATION(&ctx, "reservations[0].warehouse", "unknown warehouse W1");
    wl_arena_dispose(&ctx.arena);
    char *refs[] = {"R5"};
    CHECK_INT(CALL_REFS(&ctx, other, "ConsumeReservations", refs), WL_ENOTFOUND);
    wl_arena_dispose(&ctx.arena);
    inventory_digest(after);
    CHECK_STR(after, before);

    /* The same codes in the other organization are its own rows. */
    Walklist__V1__Warehouse warehouses[] = {WAREHOUSE("W1", "Elsewhere", "supplier")};
    CALL_OK(other, "UpsertWarehouses", warehouses);
    Walklist__V1__Product products[] = {PRODUCT_WITHOUT_EANS("SKU-1", "Other drill")};
    CALL_OK(other, "UpsertProducts", products);
    Walklist__V1__StockLevel other_stock[] = {STOCK("SKU-1", "W1", 7)};
    CALL_OK(other, "SetStock", other_stock);
    CHECK_STR(sql_value(buf, sizeof(buf),
                        "SELECT name || ' ' || kind FROM warehouses WHERE org_id = %" PRId64
                        " AND code = 'W1'",
                        org),
              "Main, north own");
    CHECK_AVAILABILITY(org, "SKU-1", "25@A-10");
    CHECK_AVAILABILITY(other_org, "SKU-1", ""); /* its W1 is a supplier */
}

typedef struct {
    const wl_principal_t *principal;
    const char *method;
    void *const *items;
    pthread_barrier_t *start;
    int rc;
} racer_t;

static void *race(void *data)
{
    racer_t *racer = data;
    call_ctx_t ctx;
    pthread_barrier_wait(racer->start);
    racer->rc = call_batch(&ctx, racer->principal, racer->method, racer->items, 1);
    wl_arena_dispose(&ctx.arena);
    return NULL;
}

/* Runs two one-item calls at once; rc receives their results, a success (0) first. */
static void run_pair(const wl_principal_t *principal, const char *method, void *const *first,
                     void *const *second, int rc[2])
{
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    racer_t racers[2] = {{principal, method, first, &start, 0},
                         {principal, method, second, &start, 0}};
    pthread_t threads[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, race, &racers[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&start);
    rc[0] = racers[0].rc > racers[1].rc ? racers[0].rc : racers[1].rc;
    rc[1] = racers[0].rc > racers[1].rc ? racers[1].rc : racers[0].rc;
}

/* Concurrent changes of one reservation: exactly one wins, the other sees its result. */
static void test_races(const wl_principal_t *writer, int64_t org)
{
    for (int round = 0; round < 10; round++) {
        char ref[16];
        snprintf(ref, sizeof(ref), "RACE-%d", round);
        Walklist__V1__Reservation one = RESERVATION(ref, "SKU-2", "W1", 1);
        Walklist__V1__Reservation other = RESERVATION(ref, "SKU-2", "W1", 2);
        void *first[] = {&one}, *second[] = {&other};
        int rc[2];
        run_pair(writer, "CreateReservations", first, second, rc);
        CHECK_INT(rc[0], 0);
        CHECK_INT(rc[1], WL_EEXISTS);

        char *refs[] = {ref};
        run_pair(writer, round % 2 ? "ConsumeReservations" : "ReleaseReservations",
                 (void *const *)refs, (void *const *)refs, rc);
        CHECK_INT(rc[0], 0);
        CHECK_INT(rc[1], WL_EPRECONDITION);
    }
    CHECK_INT(sql_count("SELECT count(*) FROM reservations WHERE org_id = %" PRId64
                        " AND ref LIKE 'RACE-%%' AND status = 'active'",
                        org),
              0);
    CHECK_AVAILABILITY(org, "SKU-2", "30@-");
}

int main(void)
{
    const char *conninfo = testdb_create("integration_inventory_service");
    db = testdb_connect(conninfo);
    int64_t org_a = fixture_org(db, "inv-a");
    int64_t org_b = fixture_org(db, "inv-b");
    char key_a[WL_KEY_TOKEN_SIZE], key_b[WL_KEY_TOKEN_SIZE], key_read[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org_a, "inventory:write", key_a);
    fixture_key(db, org_b, "inventory:write,stock:read", key_b);
    fixture_key(db, org_a, "lists:write,stock:read,scanner", key_read);

    wl_error_t err;
    wl_error_init(&err);
    wl_core_config_t config = {.database_url = conninfo, .db_pool_size = 2};
    if (wl_core_create(&config, &core, &err) != 0) {
        fprintf(stderr, "core: %s\n", err.message);
        return 1;
    }
    wl_principal_t a, b, reader;
    CHECK_INT(wl_core_authenticate(core, wl_span_str(key_a), &a, &err), 0);
    CHECK_INT(wl_core_authenticate(core, wl_span_str(key_b), &b, &err), 0);
    CHECK_INT(wl_core_authenticate(core, wl_span_str(key_read), &reader, &err), 0);

    test_registry();
    test_writes(&a, org_a);
    test_reservations(&a, org_a);
    test_violations(&a);
    test_batch_limits(&a, org_a);
    test_races(&a, org_a);
    test_scope(&reader);
    test_tenants(&b, org_a, org_b);

    wl_core_destroy(core);
    PQfinish(db);
    return test_exit();
}
