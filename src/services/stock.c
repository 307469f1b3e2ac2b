/* Answering stock reads (walklist.v1.StockService) happens here. */
#include <assert.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/page_token.h"
#include "services/services.h"
#include "store/breakdown.h"
#include "store/secrets.h"
#include "store/stock.h"
#include "walklist/utf8.h"

struct wl_export_cursor {
    wl_core_t *core;
    PGconn *conn; /* borrowed from the pool until close */
    wl_stock_export_t export;
    char token[WL_EXPORT_CURSOR_MAX]; /* the snapshot's cursor */
};

static int check_export_scope(const wl_principal_t *principal, wl_error_t *err)
{
    /* The export's stream (wl_core_export_open) is ExportStock outside wl_core_invoke: the same
     * row says what it needs. */
    unsigned scope = wl__service_table_find(&wl__stock_service, "ExportStock")->policy.scope;
    if (principal == NULL || (principal->scopes & scope) != scope) {
        char needed[64];
        wl_scopes_format(scope, needed, sizeof(needed));
        return wl_error_set(err, WL_EPERMISSION, "the API key lacks the scope %s", needed);
    }
    return 0;
}

int wl_core_export_version(wl_core_t *core, const wl_principal_t *principal, int64_t *version,
                           wl_error_t *err)
{
    int rc = check_export_scope(principal, err);
    if (rc != 0)
        return rc;
    PGconn *conn = NULL;
    rc = wl_pool_acquire(wl__core_read_pool(core), &conn, err);
    if (rc != 0)
        return rc;
    rc = wl_stock_export_version(conn, principal->org_id, version, err);
    wl_pool_release(wl__core_read_pool(core), conn);
    return rc;
}

void wl_admission_read_export_version(wl_core_t *core, wl_admission_t *admission)
{
    if (admission == NULL || !wl_admission_pending(admission) ||
        wl__core_read_pool(core) != core->pool)
        return;
    wl_stock_version_work_t *work = wl_arena_alloc(wl__admission_arena(admission), sizeof(*work));
    if (work == NULL)
        return; /* read on its own later */
    wl_stock_version_work(work, 0);
    wl__admission_attach(admission, &work->work);
}

bool wl_admission_export_version(const wl_admission_t *admission, int64_t *version)
{
    wl_stock_version_work_t *work = wl_stock_version_work_of(wl__admission_work(admission));
    if (work == NULL || !work->work.done || wl_admission_result(admission) != 0 ||
        wl_admission_pending(admission))
        return false;
    *version = work->version;
    return true;
}

static int export_open(wl_core_t *core, const wl_principal_t *principal, int64_t since,
                       wl_export_cursor_t **out, wl_error_t *err)
{
    *out = NULL;
    int rc = check_export_scope(principal, err);
    if (rc != 0)
        return rc;
    wl_export_cursor_t *cursor = calloc(1, sizeof(*cursor));
    if (cursor == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    cursor->core = core;
    unsigned char secret[WL_SECRET_SIZE];
    rc = wl_pool_acquire(wl__core_read_pool(core), &cursor->conn, err);
    /* Before the read-only snapshot: the process's first use may create the secret (sealing
     * the cursor then finds it in memory). */
    if (rc == 0)
        rc = wl__page_secret(core, cursor->conn, secret, err);
    if (rc == 0)
        rc = wl_stock_export_begin(&cursor->export, cursor->conn, principal->org_id, since, err);
    if (rc == 0)
        rc = wl__export_cursor_seal(core, cursor->conn, principal->org_id, cursor->export.version,
                                    cursor->token, err);
    if (rc != 0) {
        wl_export_cursor_close(cursor);
        return rc;
    }
    *out = cursor;
    return 0;
}

int wl_core_export_open(wl_core_t *core, const wl_principal_t *principal, wl_export_cursor_t **out,
                        wl_error_t *err)
{
    return export_open(core, principal, -1, out, err);
}

int wl_core_export_open_since(wl_core_t *core, const wl_principal_t *principal, int64_t since,
                              wl_export_cursor_t **out, wl_error_t *err)
{
    return export_open(core, principal, since, out, err);
}

bool wl_core_export_since_waits(wl_core_t *core)
{
    return atomic_load_explicit(&core->page_secret.state, memory_order_acquire) != 2;
}

int wl_core_export_since(wl_core_t *core, const wl_principal_t *principal, const char *cursor,
                         const char *field, int64_t *since, wl_error_t *err)
{
    int rc = check_export_scope(principal, err);
    if (rc != 0)
        return rc;
    unsigned char secret[WL_SECRET_SIZE];
    PGconn *conn = NULL;
    /* The secret is in memory after the process's first use; only then is a connection taken. */
    if (wl_core_export_since_waits(core))
        rc = wl_pool_acquire(wl__core_read_pool(core), &conn, err);
    if (rc == 0)
        rc = wl__page_secret(core, conn, secret, err);
    if (conn != NULL)
        wl_pool_release(wl__core_read_pool(core), conn);
    if (rc != 0)
        return rc;
    char org[24];
    wl_span_t scope[2], version;
    wl__export_cursor_scope(principal->org_id, org, scope);
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    rc = wl_page_token_decode(secret, scope, 2, wl_span_str(cursor), 1, &arena, &version);
    char *end = NULL;
    long long value = rc == 0 ? strtoll(version.base, &end, 10) : -1;
    bool refused =
        rc == WL_EINVAL || (rc == 0 && (end == version.base || *end != '\0' || value < 0));
    wl_arena_dispose(&arena);
    if (refused) {
        wl_error_add_violation(err, field,
                               "is not a cursor of this organization's export: pass the cursor "
                               "of an earlier export or delta unchanged");
        return err->code;
    }
    if (rc != 0)
        return wl_error_set(err, rc, NULL);
    *since = value;
    return 0;
}

const char *wl_export_cursor_token(const wl_export_cursor_t *cursor)
{
    return cursor->token;
}

int64_t wl_export_cursor_version(const wl_export_cursor_t *cursor)
{
    return cursor->export.version;
}

int64_t wl_export_cursor_generated_ms(const wl_export_cursor_t *cursor)
{
    return cursor->export.generated_ms;
}

int wl_export_cursor_next(wl_export_cursor_t *cursor, wl_export_item_t *item, wl_error_t *err)
{
    wl_export_row_t row;
    int rc = wl_stock_export_next(&cursor->export, &row, err);
    if (rc == 1)
        *item = (wl_export_item_t){
            .sku = row.sku, .qty = row.qty, .location = row.location, .removed = row.removed};
    return rc;
}

void wl_export_cursor_close(wl_export_cursor_t *cursor)
{
    if (cursor == NULL)
        return;
    if (cursor->conn != NULL) {
        wl_stock_export_end(&cursor->export);
        wl_pool_release(wl__core_read_pool(cursor->core), cursor->conn);
    }
    free(cursor);
}

/* Appends a copy of row to the items of a reply (ExportStockResponse or WatchStockResponse). */
static int add_export_item(wl_arena_t *arena, wl_error_t *err,
                           Walklist__V1__StockExportItem ***items_io, size_t *n_items,
                           size_t *capacity, const wl_export_item_t *row)
{
    if (*n_items == *capacity) {
        size_t grown = *capacity ? *capacity * 2 : 256;
        Walklist__V1__StockExportItem **items = wl_arena_alloc(arena, grown * sizeof(*items));
        if (items == NULL)
            return wl_error_set(err, WL_ENOMEM, NULL);
        if (*n_items > 0)
            memcpy(items, *items_io, *n_items * sizeof(*items));
        *items_io = items;
        *capacity = grown;
    }
    Walklist__V1__StockExportItem *item = wl_arena_alloc(arena, sizeof(*item));
    if (item == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
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
            return wl_error_set(err, WL_ENOMEM, NULL);
    }
    if (row->removed) {
        item->change_case = WALKLIST__V1__STOCK_EXPORT_ITEM__CHANGE_REMOVED;
        item->removed = 1;
    }
    if (item->sku == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    (*items_io)[(*n_items)++] = item;
    return 0;
}

/*
 * The whole export as one reply message, for transports that cannot stream
 * (the REST gateway streams through the cursor instead): memory grows with
 * the catalogue here.
 */
static int export_stock(wl_call_t *call, const Walklist__V1__ExportStockRequest *input,
                        Walklist__V1__ExportStockResponse **out)
{
    Walklist__V1__ExportStockResponse *reply = wl_arena_alloc(call->arena, sizeof(*reply));
    if (reply == NULL)
        return wl_error_set(call->err, WL_ENOMEM, NULL);
    walklist__v1__export_stock_response__init(reply);
    wl_export_cursor_t *cursor = NULL;
    int64_t since = -1;
    int rc = 0;
    if (input->since[0] != '\0')
        rc = wl_core_export_since(call->core, call->principal, input->since, "since", &since,
                                  call->err);
    if (rc == 0)
        rc = wl_core_export_open_since(call->core, call->principal, since, &cursor, call->err);
    if (rc == 0) {
        reply->generated_at =
            wl__timestamp_from_ms(call->arena, wl_export_cursor_generated_ms(cursor));
        reply->cursor = wl_arena_strdup(call->arena, wl_export_cursor_token(cursor));
        if (reply->generated_at == NULL || reply->cursor == NULL)
            rc = wl_error_set(call->err, WL_ENOMEM, NULL);
    }
    size_t capacity = 0;
    wl_export_item_t item;
    while (rc == 0 && (rc = wl_export_cursor_next(cursor, &item, call->err)) == 1)
        rc = add_export_item(call->arena, call->err, &reply->items, &reply->n_items, &capacity,
                             &item);
    wl_export_cursor_close(cursor);
    if (rc != 0)
        return rc;
    *out = reply;
    return 0;
}

/*
 * A server stream's start, checked: since "" (from the current version, or the full export) or
 * a cursor of this organization (WL_EINVAL with a violation of since otherwise). Its messages
 * are made by the transport, from the core's export cursor (wl_core_export_open_since), each
 * from a snapshot of its own; the run answers only where they start (the start text in arena
 * memory), which is never sent.
 */
static int stream_start(wl_call_t *call, const char *since, char **start)
{
    int64_t version = -1;
    if (since[0] != '\0' &&
        wl_core_export_since(call->core, call->principal, since, "since", &version, call->err) != 0)
        return call->err->code;
    if ((*start = wl_arena_strdup(call->arena, since)) == NULL)
        return wl_error_set(call->err, WL_ENOMEM, NULL);
    return 0;
}

/* WatchStock's start: a WatchStockResponse with no items and the cursor the stream starts at. */
static int watch_stock(wl_call_t *call, const Walklist__V1__WatchStockRequest *input,
                       Walklist__V1__WatchStockResponse **out)
{
    Walklist__V1__WatchStockResponse *reply = wl_arena_alloc(call->arena, sizeof(*reply));
    if (reply == NULL)
        return wl_error_set(call->err, WL_ENOMEM, NULL);
    walklist__v1__watch_stock_response__init(reply);
    int rc = stream_start(call, input->since, &reply->cursor);
    if (rc == 0)
        *out = reply;
    return rc;
}

/* StreamExportStock's start: a StreamExportStockResponse with no items and the cursor the
 * export is a delta from ("" for the full export). */
static int stream_export_stock(wl_call_t *call, const Walklist__V1__StreamExportStockRequest *input,
                               Walklist__V1__StreamExportStockResponse **out)
{
    Walklist__V1__StreamExportStockResponse *reply = wl_arena_alloc(call->arena, sizeof(*reply));
    if (reply == NULL)
        return wl_error_set(call->err, WL_ENOMEM, NULL);
    walklist__v1__stream_export_stock_response__init(reply);
    int rc = stream_start(call, input->since, &reply->cursor);
    if (rc == 0)
        *out = reply;
    return rc;
}

#define PAGE_SIZE_DEFAULT 100
#define PAGE_SIZE_MAX     1000

/* A filter is compared with codes in the database, which hold UTF-8 only. */
static void check_filter(const char *value, const char *field, wl_error_t *err)
{
    if (wl_utf8_count(wl_span_str(value)) < 0)
        wl_error_add_violation(err, field, "must be valid UTF-8");
}

static Walklist__V1__WarehouseStock *warehouse_stock(wl_arena_t *arena,
                                                     const wl_breakdown_item_t *item)
{
    Walklist__V1__WarehouseStock *out = wl_arena_alloc(arena, sizeof(*out));
    if (out == NULL)
        return NULL;
    walklist__v1__warehouse_stock__init(out);
    /* The strings are already arena memory (the store's copies). */
    out->sku = (char *)item->sku;
    out->warehouse = (char *)item->warehouse;
    out->warehouse_kind = (char *)item->warehouse_kind;
    out->on_hand = item->on_hand;
    out->reserved = item->reserved;
    out->available = item->available;
    if (item->location_count == 0)
        return out;
    out->locations = wl_arena_alloc(arena, item->location_count * sizeof(*out->locations));
    if (out->locations == NULL)
        return NULL;
    for (size_t i = 0; i < item->location_count; i++) {
        Walklist__V1__StockLocation *location = wl_arena_alloc(arena, sizeof(*location));
        if (location == NULL)
            return NULL;
        walklist__v1__stock_location__init(location);
        location->code = (char *)item->locations[i].code;
        location->quantity = item->locations[i].quantity;
        location->staging = item->locations[i].staging;
        out->locations[out->n_locations++] = location;
    }
    return out;
}

/*
 * One page of the per-warehouse breakdown. The page token carries the last
 * (sku, warehouse) of the previous page and is sealed for this organization
 * and these filters, so a page continues exactly after the last pair shown,
 * whatever was written in between, and a token cannot be replayed elsewhere.
 */
static int list_stock(wl_call_t *call, const Walklist__V1__ListStockRequest *input,
                      Walklist__V1__ListStockResponse **out)
{
    wl_core_t *core = call->core;
    wl_arena_t *arena = call->arena;
    int page_size = input->page_size == 0 ? PAGE_SIZE_DEFAULT : input->page_size;
    if (page_size < 1 || page_size > PAGE_SIZE_MAX)
        wl_error_add_violation(call->err, "pageSize",
                               "must be between 1 and %d (0 or absent means %d)", PAGE_SIZE_MAX,
                               PAGE_SIZE_DEFAULT);
    check_filter(input->sku, "sku", call->err);
    check_filter(input->warehouse, "warehouse", call->err);
    if (call->err->code != 0)
        return call->err->code;

    char org[24];
    snprintf(org, sizeof(org), "%lld", (long long)call->principal->org_id);
    const wl_span_t scope[] = {wl_span_str("walklist.v1.StockService/ListStock"), wl_span_str(org),
                               wl_span_str(input->sku), wl_span_str(input->warehouse)};
    const size_t scope_count = sizeof(scope) / sizeof(scope[0]);
    wl_breakdown_query_t query = {
        .sku = input->sku[0] != '\0' ? input->sku : NULL,
        .warehouse = input->warehouse[0] != '\0' ? input->warehouse : NULL,
        .limit = page_size + 1, /* one more tells whether a next page exists */
    };
    unsigned char secret[WL_SECRET_SIZE];
    wl_breakdown_item_t *items = NULL;
    size_t count = 0;
    PGconn *conn = NULL;
    int rc = wl_pool_acquire(wl__core_read_pool(core), &conn, call->err);
    if (rc != 0)
        return rc;
    rc = wl__page_secret(core, conn, secret, call->err);
    if (rc == 0 && input->page_token[0] != '\0') {
        wl_span_t last[2];
        rc = wl_page_token_decode(secret, scope, scope_count, wl_span_str(input->page_token), 2,
                                  arena, last);
        if (rc == WL_EINVAL)
            wl_error_add_violation(call->err, "pageToken",
                                   "is not a token this request can continue from: pass the "
                                   "previous page's nextPageToken unchanged, with the same "
                                   "sku and warehouse filters");
        else if (rc != 0)
            wl_error_set(call->err, rc, NULL);
        if (rc == 0) {
            query.after_sku = last[0].base;
            query.after_warehouse = last[1].base;
        }
    }
    if (rc == 0)
        rc = wl_breakdown_list(conn, call->principal->org_id, &query, arena, &items, &count,
                               call->err);
    wl_pool_release(wl__core_read_pool(core), conn);
    if (rc != 0)
        return rc;

    Walklist__V1__ListStockResponse *reply = wl_arena_alloc(arena, sizeof(*reply));
    size_t shown = count > (size_t)page_size ? (size_t)page_size : count;
    if (reply == NULL)
        return wl_error_set(call->err, WL_ENOMEM, NULL);
    walklist__v1__list_stock_response__init(reply);
    if (shown > 0) {
        reply->items = wl_arena_alloc(arena, shown * sizeof(*reply->items));
        if (reply->items == NULL)
            return wl_error_set(call->err, WL_ENOMEM, NULL);
    }
    for (size_t i = 0; i < shown; i++) {
        reply->items[i] = warehouse_stock(arena, &items[i]);
        if (reply->items[i] == NULL)
            return wl_error_set(call->err, WL_ENOMEM, NULL);
        reply->n_items++;
    }
    if (count > shown) {
        const wl_span_t last[] = {wl_span_str(items[shown - 1].sku),
                                  wl_span_str(items[shown - 1].warehouse)};
        rc = wl_page_token_encode(secret, scope, scope_count, last, 2, arena,
                                  &reply->next_page_token);
        if (rc != 0)
            return wl_error_set(call->err, rc == WL_ENOMEM ? WL_ENOMEM : WL_EINTERNAL, NULL);
    }
    *out = reply;
    return 0;
}

WL_METHOD_RUN(export_stock, Walklist__V1__ExportStockRequest, Walklist__V1__ExportStockResponse)
WL_METHOD_RUN(watch_stock, Walklist__V1__WatchStockRequest, Walklist__V1__WatchStockResponse)
WL_METHOD_RUN(stream_export_stock, Walklist__V1__StreamExportStockRequest,
              Walklist__V1__StreamExportStockResponse)
WL_METHOD_RUN(list_stock, Walklist__V1__ListStockRequest, Walklist__V1__ListStockResponse)

static const wl_method_t methods[] = {
    {.name = "ExportStock",
     .run = export_stock_run,
     .policy = {.scope = WL_SCOPE_STOCK_READ, .rate_bucket = "stock-export"}},
    {.name = "ListStock",
     .run = list_stock_run,
     .policy = {.scope = WL_SCOPE_STOCK_READ, .rate_bucket = "shared"}},
    {.name = "WatchStock",
     .run = watch_stock_run,
     .policy = {.scope = WL_SCOPE_STOCK_READ,
                .rate_bucket = "stock-export",
                .server_streaming = true}},
    {.name = "StreamExportStock",
     .run = stream_export_stock_run,
     .policy = {.scope = WL_SCOPE_STOCK_READ,
                .rate_bucket = "stock-export",
                .server_streaming = true}},
};

const wl_service_table_t wl__stock_service = {
    .descriptor = &walklist__v1__stock_service__descriptor,
    .methods = methods,
    .method_count = sizeof(methods) / sizeof(methods[0]),
};
