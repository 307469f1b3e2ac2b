/* Writing inventory in batches for internal services (walklist.v1.InventoryService) happens here.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "services/services.h"
#include "store/inventory.h"
#include "walklist/codes.h"
#include "walklist/utf8.h"

#define BATCH_MAX 1000

/* Scratch room for one item's values while they are added to the batch. */
typedef struct {
    wl_inventory_batch_t *batch;
    size_t index;
    wl_arena_t *arena;
    char number[24]; /* a quantity as text */
} fill_t;

/*
 * Gives the values of item fill->index of a request's list, in the kind's column order; false
 * only when out of memory.
 */
typedef bool (*fill_fn)(const void *items, fill_t *fill, wl_span_t *values);

/* One RPC: which batch it runs and how its items read. */
typedef struct {
    wl_inventory_kind_t kind;
    const char *list;  /* the request's repeated field, in violations' paths */
    bool scalar_items; /* items are bare strings: a violation names the item alone */
    fill_fn fill;
} batch_rpc_t;

static wl_span_t quantity_text(fill_t *fill, int64_t quantity)
{
    /* A negative quantity stays negative in the text, so the batch refuses it as the CSV's. */
    snprintf(fill->number, sizeof(fill->number), "%" PRId64, quantity);
    return wl_span_str(fill->number);
}

static bool fill_warehouse(const void *items, fill_t *fill, wl_span_t *values)
{
    const Walklist__V1__Warehouse *item = ((Walklist__V1__Warehouse *const *)items)[fill->index];
    values[0] = wl_span_str(item->code);
    values[1] = wl_span_str(item->name);
    values[2] = wl_span_str(item->kind);
    return true;
}

static bool fill_location(const void *items, fill_t *fill, wl_span_t *values)
{
    const Walklist__V1__Location *item = ((Walklist__V1__Location *const *)items)[fill->index];
    values[0] = wl_span_str(item->warehouse);
    values[1] = wl_span_str(item->code);
    values[2] = wl_span_str(item->staging ? "true" : "false");
    return true;
}

/*
 * The batch takes a product's EANs as one '|'-separated value, as the CSV has them. Each EAN
 * is checked here first, so that a violation names it ("products[2].eans[1]"); a product with
 * a bad EAN is staged without EANs, so that its other values are still checked.
 */
static bool fill_product(const void *items, fill_t *fill, wl_span_t *values)
{
    const Walklist__V1__Product *item = ((Walklist__V1__Product *const *)items)[fill->index];
    values[0] = wl_span_str(item->sku);
    values[1] = wl_span_str(item->name);
    values[2] = wl_span_str("");
    size_t joined_len = 0;
    bool valid = true;
    for (size_t i = 0; i < item->n_eans; i++) {
        char column[32];
        snprintf(column, sizeof(column), "eans[%zu]", i);
        wl_error_t check;
        wl_error_init(&check);
        wl_span_t ean = wl_span_str(item->eans[i]);
        if (wl_code_validate(ean, column, &check) == 0 && memchr(ean.base, '|', ean.len) != NULL)
            wl_error_add_violation(&check, column, "must not contain '|'");
        for (size_t v = 0; v < check.violation_count; v++)
            wl_inventory_batch_problem(fill->batch, fill->index, column,
                                       check.violations[v].description);
        valid = valid && check.violation_count == 0;
        joined_len += ean.len + 1;
    }
    if (!valid || item->n_eans == 0)
        return true;
    char *joined = wl_arena_alloc(fill->arena, joined_len);
    if (joined == NULL)
        return false;
    size_t used = 0;
    for (size_t i = 0; i < item->n_eans; i++) {
        size_t len = strlen(item->eans[i]);
        memcpy(joined + used, item->eans[i], len);
        used += len;
        if (i + 1 < item->n_eans)
            joined[used++] = '|';
    }
    values[2] = wl_span(joined, used);
    return true;
}

static bool fill_stock(const void *items, fill_t *fill, wl_span_t *values)
{
    const Walklist__V1__StockLevel *item = ((Walklist__V1__StockLevel *const *)items)[fill->index];
    values[0] = wl_span_str(item->sku);
    values[1] = wl_span_str(item->warehouse);
    values[2] = quantity_text(fill, item->on_hand);
    return true;
}

static bool fill_location_stock(const void *items, fill_t *fill, wl_span_t *values)
{
    const Walklist__V1__LocationStockLevel *item =
        ((Walklist__V1__LocationStockLevel *const *)items)[fill->index];
    values[0] = wl_span_str(item->sku);
    values[1] = wl_span_str(item->warehouse);
    values[2] = wl_span_str(item->location);
    values[3] = quantity_text(fill, item->quantity);
    return true;
}

static bool fill_reservation(const void *items, fill_t *fill, wl_span_t *values)
{
    const Walklist__V1__Reservation *item =
        ((Walklist__V1__Reservation *const *)items)[fill->index];
    values[0] = wl_span_str(item->ref);
    values[1] = wl_span_str(item->sku);
    values[2] = wl_span_str(item->warehouse);
    values[3] = quantity_text(fill, item->quantity);
    return true;
}

static bool fill_ref(const void *items, fill_t *fill, wl_span_t *values)
{
    values[0] = wl_span_str(((char *const *)items)[fill->index]);
    return true;
}

static const batch_rpc_t upsert_warehouses_rpc = {WL_INVENTORY_WAREHOUSES, "warehouses", false,
                                                  fill_warehouse};
static const batch_rpc_t upsert_locations_rpc = {WL_INVENTORY_LOCATIONS, "locations", false,
                                                 fill_location};
static const batch_rpc_t upsert_products_rpc = {WL_INVENTORY_PRODUCTS, "products", false,
                                                fill_product};
static const batch_rpc_t set_stock_rpc = {WL_INVENTORY_STOCK, "items", false, fill_stock};
static const batch_rpc_t set_location_stock_rpc = {WL_INVENTORY_LOCATION_STOCK, "items", false,
                                                   fill_location_stock};
static const batch_rpc_t create_reservations_rpc = {WL_INVENTORY_RESERVATIONS_CREATE,
                                                    "reservations", false, fill_reservation};
static const batch_rpc_t release_reservations_rpc = {WL_INVENTORY_RESERVATIONS_RELEASE, "refs",
                                                     true, fill_ref};
static const batch_rpc_t consume_reservations_rpc = {WL_INVENTORY_RESERVATIONS_CONSUME, "refs",
                                                     true, fill_ref};

/* Where the batch's problems go: field violations named by item index. */
typedef struct {
    const batch_rpc_t *rpc;
    wl_error_t *err;
} item_reporter_t;

/* "on_hand" -> "onHand": violations name fields as proto3 JSON does. */
static void json_name(const char *column, char *buf, size_t size)
{
    size_t n = 0;
    bool upper_next = false;
    for (const char *p = column; *p != '\0' && n + 1 < size; p++) {
        if (*p == '_') {
            upper_next = true;
            continue;
        }
        buf[n++] = upper_next && *p >= 'a' && *p <= 'z' ? (char)(*p - 'a' + 'A') : *p;
        upper_next = false;
    }
    buf[n] = '\0';
}

static void report_item(size_t index, const char *column, const char *description, void *data)
{
    const item_reporter_t *reporter = data;
    char field[sizeof(reporter->err->violations[0].field)], name[48];
    if (reporter->rpc->scalar_items || column[0] == '\0') {
        snprintf(field, sizeof(field), "%s[%zu]", reporter->rpc->list, index);
    } else {
        json_name(column, name, sizeof(name));
        snprintf(field, sizeof(field), "%s[%zu].%s", reporter->rpc->list, index, name);
    }
    /* Descriptions quote codes of up to 256 bytes: a cut one must stay valid UTF-8. */
    size_t keep = wl_utf8_truncate(wl_span_str(description),
                                   sizeof(reporter->err->violations[0].description) - 1);
    wl_error_add_violation(reporter->err, field, "%.*s", (int)keep, description);
}

static void name_item(size_t index, char *buf, size_t size, void *data)
{
    const item_reporter_t *reporter = data;
    snprintf(buf, size, "%s[%zu]", reporter->rpc->list, index);
}

/* Runs one batch RPC for the caller's organization; *count is the number of items written. */
static int run_batch(wl_call_t *call, const batch_rpc_t *rpc, size_t item_count, const void *items,
                     int32_t *count)
{
    wl_core_t *core = call->core;
    if (item_count == 0)
        return wl_error_add_violation(call->err, rpc->list, "must have 1 to %d entries", BATCH_MAX);
    if (item_count > BATCH_MAX)
        return wl_error_add_violation(call->err, rpc->list, "must have at most %d entries, got %zu",
                                      BATCH_MAX, item_count);
    PGconn *conn = NULL;
    int rc = wl_pool_acquire(core->pool, &conn, call->err);
    if (rc != 0)
        return rc;
    item_reporter_t item_reporter = {rpc, call->err};
    wl_inventory_reporter_t reporter = {report_item, name_item, &item_reporter};
    wl_inventory_batch_t batch;
    rc = wl_inventory_batch_begin(&batch, conn, call->principal->org_id, rpc->kind, &reporter,
                                  call->err);
    for (size_t i = 0; rc == 0 && i < item_count; i++) {
        fill_t fill = {&batch, i, call->arena, ""};
        wl_span_t values[WL_INVENTORY_MAX_COLUMNS];
        rc = rpc->fill(items, &fill, values) ? wl_inventory_batch_add(&batch, i, values, call->err)
                                             : wl_error_set(call->err, WL_ENOMEM, NULL);
        if (rc != 0)
            wl_inventory_batch_abort(&batch);
    }
    size_t written = 0;
    if (rc == 0)
        rc = wl_inventory_batch_finish(&batch, &written, call->err);
    wl_pool_release(core->pool, conn);
    if (rc == 0)
        wl__core_export_may_have_changed(core, call->principal->org_id);
    *count = (int32_t)written;
    return rc;
}

/*
 * Each method: a reply of its type, then the batch. The methods differ only in their types, so
 * one macro writes them, with their registry form (registry.h).
 */
#define BATCH_METHOD(method, rpc, Request, Response, response_init, list)                          \
    static int method(wl_call_t *call, const Request *input, Response **out)                       \
    {                                                                                              \
        Response *reply = wl_arena_alloc(call->arena, sizeof(*reply));                             \
        if (reply == NULL)                                                                         \
            return wl_error_set(call->err, WL_ENOMEM, NULL);                                       \
        response_init(reply);                                                                      \
        int rc = run_batch(call, &rpc, input->n_##list, input->list, &reply->count);               \
        if (rc == 0)                                                                               \
            *out = reply;                                                                          \
        return rc;                                                                                 \
    }                                                                                              \
    WL_METHOD_RUN(method, Request, Response)

BATCH_METHOD(upsert_warehouses, upsert_warehouses_rpc, Walklist__V1__UpsertWarehousesRequest,
             Walklist__V1__UpsertWarehousesResponse, walklist__v1__upsert_warehouses_response__init,
             warehouses)
BATCH_METHOD(upsert_locations, upsert_locations_rpc, Walklist__V1__UpsertLocationsRequest,
             Walklist__V1__UpsertLocationsResponse, walklist__v1__upsert_locations_response__init,
             locations)
BATCH_METHOD(upsert_products, upsert_products_rpc, Walklist__V1__UpsertProductsRequest,
             Walklist__V1__UpsertProductsResponse, walklist__v1__upsert_products_response__init,
             products)
BATCH_METHOD(set_stock, set_stock_rpc, Walklist__V1__SetStockRequest,
             Walklist__V1__SetStockResponse, walklist__v1__set_stock_response__init, items)
BATCH_METHOD(set_location_stock, set_location_stock_rpc, Walklist__V1__SetLocationStockRequest,
             Walklist__V1__SetLocationStockResponse,
             walklist__v1__set_location_stock_response__init, items)
BATCH_METHOD(create_reservations, create_reservations_rpc, Walklist__V1__CreateReservationsRequest,
             Walklist__V1__CreateReservationsResponse,
             walklist__v1__create_reservations_response__init, reservations)
BATCH_METHOD(release_reservations, release_reservations_rpc,
             Walklist__V1__ReleaseReservationsRequest, Walklist__V1__ReleaseReservationsResponse,
             walklist__v1__release_reservations_response__init, refs)
BATCH_METHOD(consume_reservations, consume_reservations_rpc,
             Walklist__V1__ConsumeReservationsRequest, Walklist__V1__ConsumeReservationsResponse,
             walklist__v1__consume_reservations_response__init, refs)

/* Every method writes, in the shared bucket. */
#define WRITE_POLICY                                                                               \
    {                                                                                              \
        .scope = WL_SCOPE_INVENTORY_WRITE, .rate_bucket = "shared"                                 \
    }

static const wl_method_t methods[] = {
    {.name = "UpsertWarehouses", .run = upsert_warehouses_run, .policy = WRITE_POLICY},
    {.name = "UpsertLocations", .run = upsert_locations_run, .policy = WRITE_POLICY},
    {.name = "UpsertProducts", .run = upsert_products_run, .policy = WRITE_POLICY},
    {.name = "SetStock", .run = set_stock_run, .policy = WRITE_POLICY},
    {.name = "SetLocationStock", .run = set_location_stock_run, .policy = WRITE_POLICY},
    {.name = "CreateReservations", .run = create_reservations_run, .policy = WRITE_POLICY},
    {.name = "ReleaseReservations", .run = release_reservations_run, .policy = WRITE_POLICY},
    {.name = "ConsumeReservations", .run = consume_reservations_run, .policy = WRITE_POLICY},
};

const wl_service_table_t wl__inventory_service = {
    .descriptor = &walklist__v1__inventory_service__descriptor,
    .methods = methods,
    .method_count = sizeof(methods) / sizeof(methods[0]),
};
