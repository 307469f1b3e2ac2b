/* The scanner's Check location mode (walklist.v1.ScannerService) happens here. */
#include <string.h>

#include "services/services.h"
#include "walklist/codes.h"
#include "store/scanner.h"

#define PAGE_SIZE_DEFAULT 50
#define PAGE_SIZE_MAX     200

static void list_pending_lists(Walklist__V1__ScannerService_Service *base,
                               const Walklist__V1__ListPendingListsRequest *input,
                               Walklist__V1__ListPendingListsResponse_Closure closure,
                               void *closure_data)
{
    wl_core_t *core = ((wl_scanner_service_t *)base)->core;
    wl_call_t *call = closure_data;
    int page_size = input->page_size == 0 ? PAGE_SIZE_DEFAULT : input->page_size;
    if (page_size < 1 || page_size > PAGE_SIZE_MAX) {
        wl_error_add_violation(call->err, "pageSize",
                               "must be between 1 and %d (0 or absent means %d)", PAGE_SIZE_MAX,
                               PAGE_SIZE_DEFAULT);
        goto Fail;
    }
    PGconn *conn = NULL;
    if (wl_pool_acquire(core->pool, &conn, call->err) != 0)
        goto Fail;
    wl_pending_list_t *pending = NULL;
    size_t count = 0;
    /* One more than shown tells whether more lists wait. */
    int rc = wl_scanner_pending(conn, call->principal->org_id, page_size + 1, call->arena, &pending,
                                &count, call->err);
    wl_pool_release(core->pool, conn);
    if (rc != 0)
        goto Fail;

    size_t shown = count > (size_t)page_size ? (size_t)page_size : count;
    Walklist__V1__ListPendingListsResponse *reply = wl_arena_alloc(call->arena, sizeof(*reply));
    Walklist__V1__PendingList **lists =
        wl_arena_alloc(call->arena, sizeof(*lists) * (shown ? shown : 1));
    Walklist__V1__PendingList *block =
        wl_arena_alloc(call->arena, sizeof(*block) * (shown ? shown : 1));
    if (reply == NULL || lists == NULL || block == NULL)
        goto NoMemory;
    walklist__v1__list_pending_lists_response__init(reply);
    for (size_t i = 0; i < shown; i++) {
        Walklist__V1__PendingList *list = &block[i];
        walklist__v1__pending_list__init(list);
        list->id = (char *)pending[i].id;
        list->name = (char *)pending[i].name;
        list->codes_count = pending[i].codes_count;
        list->created_at = wl__timestamp_from_ms(call->arena, pending[i].created_ms);
        if (list->created_at == NULL)
            goto NoMemory;
        lists[i] = list;
    }
    reply->lists = lists;
    reply->n_lists = shown;
    reply->more = count > shown;
    closure(reply, closure_data);
    return;
NoMemory:
    wl_error_set(call->err, WL_ENOMEM, NULL);
Fail:
    closure(NULL, closure_data);
}

static Walklist__V1__CodeOutcome outcome_message(wl_code_outcome_t outcome)
{
    switch (outcome) {
    case WL_CODE_SKU:
        return WALKLIST__V1__CODE_OUTCOME__CODE_OUTCOME_SKU;
    case WL_CODE_EAN:
        return WALKLIST__V1__CODE_OUTCOME__CODE_OUTCOME_EAN;
    case WL_CODE_AMBIGUOUS:
        return WALKLIST__V1__CODE_OUTCOME__CODE_OUTCOME_AMBIGUOUS;
    case WL_CODE_NOT_FOUND:
        return WALKLIST__V1__CODE_OUTCOME__CODE_OUTCOME_NOT_FOUND;
    }
    return WALKLIST__V1__CODE_OUTCOME__CODE_OUTCOME_UNSPECIFIED;
}

/* Fills the reply's stops, unlocated products and code resolutions from arena memory. */
static bool fill_walk(Walklist__V1__LoadLocateListResponse *reply, const wl_loaded_list_t *loaded,
                      wl_arena_t *arena)
{
    const wl_walk_t *walk = &loaded->walk;
    const wl_resolution_t *resolution = &loaded->resolution;
    size_t stops = walk->stop_count, unlocated = walk->unlocated_count;
    size_t codes = resolution->code_count;
    reply->stops = wl_arena_alloc(arena, sizeof(*reply->stops) * (stops ? stops : 1));
    Walklist__V1__WalkStop *stop_block =
        wl_arena_alloc(arena, sizeof(*stop_block) * (stops ? stops : 1));
    reply->unlocated =
        wl_arena_alloc(arena, sizeof(*reply->unlocated) * (unlocated ? unlocated : 1));
    Walklist__V1__UnlocatedProduct *unlocated_block =
        wl_arena_alloc(arena, sizeof(*unlocated_block) * (unlocated ? unlocated : 1));
    reply->codes = wl_arena_alloc(arena, sizeof(*reply->codes) * (codes ? codes : 1));
    Walklist__V1__CodeResolution *code_block =
        wl_arena_alloc(arena, sizeof(*code_block) * (codes ? codes : 1));
    if (reply->stops == NULL || stop_block == NULL || reply->unlocated == NULL ||
        unlocated_block == NULL || reply->codes == NULL || code_block == NULL)
        return false;

    for (size_t i = 0; i < stops; i++) {
        const wl_walk_stop_t *from = &walk->stops[i];
        Walklist__V1__WalkStop *stop = &stop_block[i];
        walklist__v1__walk_stop__init(stop);
        stop->bin_code = (char *)from->bin_code;
        stop->warehouse = (char *)from->warehouse;
        stop->sku = (char *)from->sku;
        stop->product_name = (char *)from->product->product_name;
        stop->quantity = from->quantity;
        stop->code = (char *)from->product->code;
        stop->ambiguous = from->product->ambiguous;
        reply->stops[i] = stop;
    }
    reply->n_stops = stops;
    for (size_t i = 0; i < unlocated; i++) {
        const wl_walk_product_t *from = walk->unlocated[i];
        Walklist__V1__UnlocatedProduct *product = &unlocated_block[i];
        walklist__v1__unlocated_product__init(product);
        product->sku = (char *)from->sku;
        product->product_name = (char *)from->product_name;
        product->code = (char *)from->code;
        product->ambiguous = from->ambiguous;
        reply->unlocated[i] = product;
    }
    reply->n_unlocated = unlocated;
    for (size_t i = 0; i < codes; i++) {
        const wl_code_resolution_t *from = &resolution->codes[i];
        Walklist__V1__CodeResolution *code = &code_block[i];
        walklist__v1__code_resolution__init(code);
        code->code = (char *)from->code;
        code->outcome = outcome_message(from->outcome);
        code->skus = (char **)from->skus;
        code->n_skus = from->sku_count;
        reply->codes[i] = code;
    }
    reply->n_codes = codes;
    return true;
}

/* What build_reply needs besides the loaded list. */
typedef struct {
    const char *id;
    wl_arena_t *arena;
    Walklist__V1__LoadLocateListResponse *reply;
} reply_builder_t;

/* Runs before the load commits, so running out of memory here leaves the list pending. */
static int build_reply(const wl_loaded_list_t *loaded, void *data, wl_error_t *err)
{
    reply_builder_t *builder = data;
    Walklist__V1__LoadLocateListResponse *reply = wl_arena_alloc(builder->arena, sizeof(*reply));
    if (reply == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    walklist__v1__load_locate_list_response__init(reply);
    reply->id = wl_arena_strdup(builder->arena, builder->id);
    reply->name = (char *)loaded->name;
    reply->loaded_at = wl__timestamp_from_ms(builder->arena, loaded->loaded_ms);
    if (reply->id == NULL || reply->loaded_at == NULL || !fill_walk(reply, loaded, builder->arena))
        return wl_error_set(err, WL_ENOMEM, NULL);
    builder->reply = reply;
    return 0;
}

static void load_locate_list(Walklist__V1__ScannerService_Service *base,
                             const Walklist__V1__LoadLocateListRequest *input,
                             Walklist__V1__LoadLocateListResponse_Closure closure,
                             void *closure_data)
{
    wl_core_t *core = ((wl_scanner_service_t *)base)->core;
    wl_call_t *call = closure_data;
    reply_builder_t builder = {input->id, call->arena, NULL};
    if (!wl_list_id_plausible(input->id)) {
        wl_error_set(call->err, WL_ENOTFOUND, "no walk list with that id");
        closure(NULL, closure_data);
        return;
    }
    PGconn *conn = NULL;
    if (wl_pool_acquire(core->pool, &conn, call->err) != 0) {
        closure(NULL, closure_data);
        return;
    }
    wl_loaded_list_t loaded;
    int rc = wl_scanner_load(conn, call->principal->org_id, input->id, call->arena, build_reply,
                             &builder, &loaded, call->err);
    wl_pool_release(core->pool, conn);
    closure(rc == 0 ? builder.reply : NULL, closure_data);
}

void wl__scanner_service_init(wl_scanner_service_t *service, wl_core_t *core)
{
    walklist__v1__scanner_service__init(&service->base, NULL);
    service->base.list_pending_lists = list_pending_lists;
    service->base.load_locate_list = load_locate_list;
    service->core = core;
}
