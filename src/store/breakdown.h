/*
 * The per-warehouse stock breakdown: one item per (SKU, warehouse) pair that
 * has a stock record or a rack assignment, supplier warehouses included, read
 * a page at a time by keyset on (sku, warehouse) in byte order.
 */
#ifndef WALKLIST_STORE_BREAKDOWN_H
#define WALKLIST_STORE_BREAKDOWN_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>

#include "walklist/arena.h"
#include "walklist/error.h"

typedef struct {
    const char *code;
    int64_t quantity;
    bool staging;
} wl_breakdown_location_t;

typedef struct {
    const char *sku;
    const char *warehouse;
    const char *warehouse_kind;         /* "own" or "supplier" */
    int64_t on_hand;                    /* 0 when the pair has no stock record */
    int64_t reserved;                   /* active reservations of the SKU in the warehouse */
    int64_t available;                  /* max(0, on_hand - reserved) */
    wl_breakdown_location_t *locations; /* natural bin order, then code */
    size_t location_count;
} wl_breakdown_item_t;

typedef struct {
    const char *sku;             /* exact-match filter; NULL for every SKU */
    const char *warehouse;       /* exact-match filter; NULL for every warehouse */
    const char *after_sku;       /* keyset cursor: only pairs after (after_sku, */
    const char *after_warehouse; /* after_warehouse); both NULL for the first page */
    int limit;                   /* pairs to read at most, > 0 */
} wl_breakdown_query_t;

/**
 * Reads up to query->limit items of the organization, ordered by (sku,
 * warehouse) in byte order, from one snapshot (one statement). Items and
 * their strings are arena memory. A caller that wants to know whether a next
 * page exists asks for one item more than it returns.
 */
int wl_breakdown_list(PGconn *conn, int64_t org_id, const wl_breakdown_query_t *query,
                      wl_arena_t *arena, wl_breakdown_item_t **items, size_t *count,
                      wl_error_t *err) WL_CHECK_RESULT;

#endif
