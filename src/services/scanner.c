/* The scanner's Check location mode (walklist.v1.ScannerService) happens here. */
#include <string.h>

#include "services/services.h"
#include "walklist/codes.h"
#include "store/scanner.h"

#define PAGE_SIZE_DEFAULT 50
#define PAGE_SIZE_MAX     200

static int list_pending_lists(wl_call_t *call, const Walklist__V1__ListPendingListsRequest *input,
                              Walklist__V1__ListPendingListsResponse **out)
{
    wl_core_t *core = call->core;
    int page_size = input->page_size == 0 ? PAGE_SIZE_DEFAULT : input->page_size;
    if (page_size < 1 || page_size > PAGE_SIZE_MAX)
        return wl_error_add_violation(call->err, "pageSize",
                                      "must be between 1 and %d (0 or absent means %d)",
                                      PAGE_SIZE_MAX, PAGE_SIZE_DEFAULT);
    PGconn *conn = NULL;
    int rc = wl_pool_acquire(core->pool, &conn, call->err);
    if (rc != 0)
        return rc;
    wl_pending_list_t *pending = NULL;
    size_t count = 0;
    /* One more than shown tells whether more lists wait. */
    rc = wl_scanner_pending(conn, call->principal->org_id, page_size + 1, call->arena, &pending,
                            &count, call->err);
    wl_pool_release(core->pool, conn);
    if (rc != 0)
        return rc;

    size_t shown = count > (size_t)page_size ? (size_t)page_size : count;
    Walklist__V1__ListPendingListsResponse *reply = wl_arena_alloc(call->arena, sizeof(*reply));
    Walklist__V1__PendingList **lists =
        wl_arena_alloc(call->arena, sizeof(*lists) * (shown ? shown : 1));
    Walklist__V1__PendingList *block =
        wl_arena_alloc(call->arena, sizeof(*block) * (shown ? shown : 1));
    if (reply == NULL || lists == NULL || block == NULL)
        return wl_error_set(call->err, WL_ENOMEM, NULL);
    walklist__v1__list_pending_lists_response__init(reply);
    for (size_t i = 0; i < shown; i++) {
        Walklist__V1__PendingList *list = &block[i];
        walklist__v1__pending_list__init(list);
        list->id = (char *)pending[i].id;
        list->name = (char *)pending[i].name;
        list->codes_count = pending[i].codes_count;
        list->created_at = wl__timestamp_from_ms(call->arena, pending[i].created_ms);
        if (list->created_at == NULL)
            return wl_error_set(call->err, WL_ENOMEM, NULL);
        lists[i] = list;
    }
    reply->lists = lists;
    reply->n_lists = shown;
    reply->more = count > shown;
    *out = reply;
    return 0;
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

/* The answer to a load, from arena memory; NULL when out of memory. */
static Walklist__V1__LoadLocateListResponse *
loaded_reply(const char *id, const wl_loaded_list_t *loaded, wl_arena_t *arena)
{
    Walklist__V1__LoadLocateListResponse *reply = wl_arena_alloc(arena, sizeof(*reply));
    if (reply == NULL)
        return NULL;
    walklist__v1__load_locate_list_response__init(reply);
    reply->id = wl_arena_strdup(arena, id);
    reply->name = (char *)loaded->name;
    reply->loaded_at = wl__timestamp_from_ms(arena, loaded->loaded_ms);
    if (reply->id == NULL || reply->loaded_at == NULL || !fill_walk(reply, loaded, arena))
        return NULL;
    return reply;
}

static int load_locate_list(wl_call_t *call, const Walklist__V1__LoadLocateListRequest *input,
                            Walklist__V1__LoadLocateListResponse **out)
{
    wl_core_t *core = call->core;
    if (!wl_list_id_plausible(input->id))
        return wl_error_set(call->err, WL_ENOTFOUND, "no walk list with that id");
    PGconn *conn = NULL;
    int rc = wl_pool_acquire(core->pool, &conn, call->err);
    if (rc != 0)
        return rc;
    wl_loaded_list_t loaded;
    rc = wl_scanner_load_begin(conn, call->principal->org_id, input->id, call->arena, &loaded,
                               call->err);
    if (rc == 0) {
        /* Built before the commit: a list whose answer cannot be built stays pending. */
        Walklist__V1__LoadLocateListResponse *reply = loaded_reply(input->id, &loaded, call->arena);
        if (reply == NULL) {
            wl_scanner_load_abandon(conn);
            rc = wl_error_set(call->err, WL_ENOMEM, NULL);
        } else if ((rc = wl_scanner_load_commit(conn, call->err)) == 0) {
            *out = reply;
        }
    }
    wl_pool_release(core->pool, conn);
    return rc;
}

WL_METHOD_RUN(list_pending_lists, Walklist__V1__ListPendingListsRequest,
              Walklist__V1__ListPendingListsResponse)
WL_METHOD_RUN(load_locate_list, Walklist__V1__LoadLocateListRequest,
              Walklist__V1__LoadLocateListResponse)

static const wl_method_t methods[] = {
    {.name = "ListPendingLists",
     .run = list_pending_lists_run,
     .policy = {.scope = WL_SCOPE_SCANNER, .rate_bucket = "shared"}},
    {.name = "LoadLocateList",
     .run = load_locate_list_run,
     .policy = {.scope = WL_SCOPE_SCANNER, .rate_bucket = "shared"}},
};

const wl_service_table_t wl__scanner_service = {
    .descriptor = &walklist__v1__scanner_service__descriptor,
    .methods = methods,
    .method_count = sizeof(methods) / sizeof(methods[0]),
};
