/* What each code of a walk list stands for, and the order of the walk, are decided here. */
#include "domain/resolve.h"

#include <stdlib.h>
#include <string.h>

#include "domain/bin_order.h"

static int compare_matches(const void *pa, const void *pb)
{
    const wl_code_match_t *a = pa, *b = pb;
    if (a->code_index != b->code_index)
        return a->code_index < b->code_index ? -1 : 1;
    if (a->kind != b->kind)
        return a->kind == WL_MATCH_SKU ? -1 : 1;
    return strcmp(a->sku, b->sku);
}

/* A candidate product in walk order (pos), to find the first appearance of each SKU. */
typedef struct {
    const char *sku;
    size_t pos;
} first_seen_t;

static int compare_first_seen(const void *pa, const void *pb)
{
    const first_seen_t *a = pa, *b = pb;
    int c = strcmp(a->sku, b->sku);
    if (c != 0)
        return c;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

/*
 * Keeps the first appearance of each SKU among the candidates, in place and in
 * order. Sorting a copy keeps this O(n log n): one EAN can stand for thousands
 * of products.
 */
static int dedupe_products(wl_walk_product_t *candidates, size_t *count, wl_arena_t *arena)
{
    size_t n = *count;
    if (n < 2)
        return 0;
    first_seen_t *seen = wl_arena_alloc(arena, n * sizeof(*seen));
    bool *keep = wl_arena_alloc(arena, n * sizeof(*keep));
    if (seen == NULL || keep == NULL)
        return WL_ENOMEM;
    for (size_t i = 0; i < n; i++)
        seen[i] = (first_seen_t){candidates[i].sku, i};
    qsort(seen, n, sizeof(*seen), compare_first_seen);
    for (size_t i = 0; i < n; i++)
        keep[seen[i].pos] = i == 0 || strcmp(seen[i - 1].sku, seen[i].sku) != 0;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (keep[i])
            candidates[kept++] = candidates[i];
    }
    *count = kept;
    return 0;
}

int wl_resolve_codes(const char *const *codes, size_t code_count, const wl_code_match_t *matches,
                     size_t match_count, wl_arena_t *arena, wl_resolution_t *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < match_count; i++) {
        if (matches[i].code_index >= code_count)
            return WL_EINVAL;
    }
    size_t slots = match_count ? match_count : 1;
    wl_code_match_t *sorted = wl_arena_alloc(arena, slots * sizeof(*sorted));
    const char **skus = wl_arena_alloc(arena, slots * sizeof(*skus));
    wl_walk_product_t *products = wl_arena_alloc(arena, slots * sizeof(*products));
    out->codes = wl_arena_alloc(arena, (code_count ? code_count : 1) * sizeof(*out->codes));
    if (sorted == NULL || skus == NULL || products == NULL || out->codes == NULL)
        return WL_ENOMEM;
    if (match_count > 0) {
        memcpy(sorted, matches, match_count * sizeof(*sorted));
        qsort(sorted, match_count, sizeof(*sorted), compare_matches);
    }

    size_t next = 0, skus_used = 0, product_count = 0;
    for (size_t code = 0; code < code_count; code++) {
        wl_code_resolution_t *res = &out->codes[code];
        res->code = codes[code];
        res->skus = skus + skus_used;
        /* Matches of this code: its SKU match (if any) sorts before its EAN matches. */
        size_t end = next;
        while (end < match_count && sorted[end].code_index == code)
            end++;
        wl_match_kind_t chosen = next < end ? sorted[next].kind : WL_MATCH_SKU;
        for (size_t i = next; i < end && sorted[i].kind == chosen; i++) {
            if (res->sku_count > 0 && strcmp(res->skus[res->sku_count - 1], sorted[i].sku) == 0)
                continue; /* the same match twice */
            res->skus[res->sku_count++] = sorted[i].sku;
            products[product_count++] =
                (wl_walk_product_t){sorted[i].sku, sorted[i].product_name, codes[code]};
        }
        skus_used += res->sku_count;
        if (res->sku_count == 0)
            res->outcome = WL_CODE_NOT_FOUND;
        else if (chosen == WL_MATCH_SKU)
            res->outcome = WL_CODE_SKU;
        else
            res->outcome = res->sku_count == 1 ? WL_CODE_EAN : WL_CODE_AMBIGUOUS;
        for (size_t i = product_count - res->sku_count; i < product_count; i++)
            products[i].ambiguous = res->outcome == WL_CODE_AMBIGUOUS;
        next = end;
    }
    out->code_count = code_count;
    int rc = dedupe_products(products, &product_count, arena);
    if (rc != 0)
        return rc;
    out->products = products;
    out->product_count = product_count;
    return 0;
}

int wl_walk_stop_compare(const wl_walk_stop_t *a, const wl_walk_stop_t *b)
{
    int c = wl_bin_compare(wl_span_str(a->bin_code), wl_span_str(b->bin_code));
    if (c == 0)
        c = strcmp(a->warehouse, b->warehouse);
    if (c == 0)
        c = strcmp(a->sku, b->sku);
    return c;
}

static int compare_stops(const void *a, const void *b)
{
    return wl_walk_stop_compare(a, b);
}

static int compare_products_by_sku(const void *pa, const void *pb)
{
    const wl_walk_product_t *const *a = pa, *const *b = pb;
    return strcmp((*a)->sku, (*b)->sku);
}

static int compare_sku_to_product(const void *key, const void *element)
{
    const wl_walk_product_t *const *product = element;
    return strcmp(key, (*product)->sku);
}

int wl_walk_build(const wl_resolution_t *resolution, wl_walk_stop_t *stops, size_t stop_count,
                  wl_arena_t *arena, wl_walk_t *out)
{
    memset(out, 0, sizeof(*out));
    size_t n = resolution->product_count;
    size_t slots = n ? n : 1;
    const wl_walk_product_t **by_sku = wl_arena_alloc(arena, slots * sizeof(*by_sku));
    bool *located = wl_arena_alloc(arena, slots * sizeof(*located));
    out->unlocated = wl_arena_alloc(arena, slots * sizeof(*out->unlocated));
    if (by_sku == NULL || located == NULL || out->unlocated == NULL)
        return WL_ENOMEM;
    for (size_t i = 0; i < n; i++)
        by_sku[i] = &resolution->products[i];
    qsort(by_sku, n, sizeof(*by_sku), compare_products_by_sku);
    for (size_t i = 0; i < stop_count; i++) {
        const wl_walk_product_t **found =
            n ? bsearch(stops[i].sku, by_sku, n, sizeof(*by_sku), compare_sku_to_product) : NULL;
        if (found == NULL)
            return WL_EINVAL;
        stops[i].product = *found;
        located[*found - resolution->products] = true;
    }
    if (stop_count > 0)
        qsort(stops, stop_count, sizeof(*stops), compare_stops);
    out->stops = stops;
    out->stop_count = stop_count;
    for (size_t i = 0; i < n; i++) {
        if (!located[i])
            out->unlocated[out->unlocated_count++] = &resolution->products[i];
    }
    return 0;
}
