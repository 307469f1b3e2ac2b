/* Answering stock reads (walklist.v1.StockService) happens here. */
#include <string.h>

#include "services/services.h"
#include "store/stock.h"

typedef struct {
    wl_call_t *call;
    Walklist__V1__ExportStockResponse *reply;
    size_t capacity;
} export_builder_t;

static int export_begin(int64_t generated_ms, void *data)
{
    export_builder_t *builder = data;
    builder->reply->generated_at = wl__timestamp_from_ms(builder->call->arena, generated_ms);
    return builder->reply->generated_at ? 0 : wl_error_set(builder->call->err, WL_ENOMEM, NULL);
}

static int export_row(const wl_export_row_t *row, void *data)
{
    export_builder_t *builder = data;
    wl_arena_t *arena = builder->call->arena;
    Walklist__V1__ExportStockResponse *reply = builder->reply;
    if (reply->n_items == builder->capacity) {
        size_t capacity = builder->capacity ? builder->capacity * 2 : 256;
        Walklist__V1__StockExportItem **items = wl_arena_alloc(arena, capacity * sizeof(*items));
        if (items == NULL)
            return wl_error_set(builder->call->err, WL_ENOMEM, NULL);
        if (reply->n_items > 0)
            memcpy(items, reply->items, reply->n_items * sizeof(*items));
        reply->items = items;
        builder->capacity = capacity;
    }
    Walklist__V1__StockExportItem *item = wl_arena_alloc(arena, sizeof(*item));
    if (item == NULL)
        return wl_error_set(builder->call->err, WL_ENOMEM, NULL);
    walklist__v1__stock_export_item__init(item);
    item->sku = wl_arena_strdup(arena, row->sku);
    item->qty = row->qty;
    if (row->location != NULL) {
        item->location = wl_arena_alloc(arena, sizeof(*item->location));
        if (item->location != NULL) {
            google__protobuf__string_value__init(item->location);
            item->location->value = wl_arena_strdup(arena, row->location);
        }
        if (item->location == NULL || item->location->value == NULL)
            return wl_error_set(builder->call->err, WL_ENOMEM, NULL);
    }
    if (item->sku == NULL)
        return wl_error_set(builder->call->err, WL_ENOMEM, NULL);
    reply->items[reply->n_items++] = item;
    return 0;
}

static void export_stock(Walklist__V1__StockService_Service *base,
                         const Walklist__V1__ExportStockRequest *input,
                         Walklist__V1__ExportStockResponse_Closure closure, void *closure_data)
{
    (void)input;
    wl_core_t *core = ((wl_stock_service_t *)base)->core;
    wl_call_t *call = closure_data;
    Walklist__V1__ExportStockResponse *reply = wl_arena_alloc(call->arena, sizeof(*reply));
    if (reply == NULL) {
        wl_error_set(call->err, WL_ENOMEM, NULL);
        closure(NULL, closure_data);
        return;
    }
    walklist__v1__export_stock_response__init(reply);
    export_builder_t builder = {call, reply, 0};
    PGconn *conn = NULL;
    if (wl_pool_acquire(core->pool, &conn, call->err) != 0) {
        closure(NULL, closure_data);
        return;
    }
    int rc = wl_stock_export(conn, call->principal->org_id, export_begin, export_row, &builder,
                             call->err);
    wl_pool_release(core->pool, conn);
    closure(rc == 0 ? reply : NULL, closure_data);
}

static void list_stock(Walklist__V1__StockService_Service *base,
                       const Walklist__V1__ListStockRequest *input,
                       Walklist__V1__ListStockResponse_Closure closure, void *closure_data)
{
    (void)base;
    (void)input;
    wl_call_t *call = closure_data;
    wl_error_set(call->err, WL_EUNIMPLEMENTED, "the per-warehouse breakdown is not available yet");
    closure(NULL, closure_data);
}

void wl__stock_service_init(wl_stock_service_t *service, wl_core_t *core)
{
    walklist__v1__stock_service__init(&service->base, NULL);
    service->base.export_stock = export_stock;
    service->base.list_stock = list_stock;
    service->core = core;
}
