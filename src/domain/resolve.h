/*
 * Resolution of a walk list's codes into the walk of the scanner's Check
 * location mode. Pure: no I/O; results in arena memory.
 *
 * The store finds every product a code could stand for (the product whose
 * SKU it is, and the products carrying it as an EAN); this module decides:
 *  - a code that is a product's SKU resolves to that product (SKU), even when
 *    it is also another product's EAN;
 *  - otherwise a code carried as an EAN by exactly one product resolves to it
 *    (EAN), by several products to all of them (AMBIGUOUS: every candidate is
 *    walked, flagged ambiguous);
 *  - otherwise the code is NOT_FOUND.
 * Every code of the list gets exactly one resolution, in list order.
 *
 * A product matched by more than one code (its SKU and its EAN both in the
 * list, or one product behind two ambiguous EANs) is walked once, under the
 * first code of the list that matched it; the later codes still report their
 * own resolution. Within one ambiguous code the candidates are taken in SKU
 * byte order.
 *
 * The walk: one stop per (walked product, non-staging location in an own
 * warehouse), in natural bin order (wl_bin_compare), then warehouse code, then
 * SKU, both byte-wise; then the walked products without any stop, in list
 * order.
 */
#ifndef WALKLIST_DOMAIN_RESOLVE_H
#define WALKLIST_DOMAIN_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "walklist/arena.h"
#include "walklist/error.h"

/* Numbered like walklist.v1.CodeOutcome. */
typedef enum {
    WL_CODE_SKU = 1,       /* exact SKU of a product */
    WL_CODE_EAN = 2,       /* EAN of exactly one product */
    WL_CODE_AMBIGUOUS = 3, /* EAN of more than one product */
    WL_CODE_NOT_FOUND = 4,
} wl_code_outcome_t;

typedef enum {
    WL_MATCH_SKU, /* the code is the product's SKU */
    WL_MATCH_EAN, /* the code is one of the product's EANs */
} wl_match_kind_t;

/** One product a list code could stand for, as the store found it. */
typedef struct {
    size_t code_index; /* position of the code in the list, from 0 */
    wl_match_kind_t kind;
    const char *sku;
    const char *product_name;
} wl_code_match_t;

/** How one code of the list resolved. */
typedef struct {
    const char *code;
    wl_code_outcome_t outcome;
    const char **skus; /* the matched SKUs in byte order; none for NOT_FOUND */
    size_t sku_count;
} wl_code_resolution_t;

/** A product the walk visits, once, under the first code that matched it. */
typedef struct {
    const char *sku;
    const char *product_name;
    const char *code; /* the list code it was matched by */
    bool ambiguous;   /* that code is an EAN of more than one product */
} wl_walk_product_t;

typedef struct {
    wl_code_resolution_t *codes; /* one per list code, in list order */
    size_t code_count;
    wl_walk_product_t *products; /* every matched product once, in list order */
    size_t product_count;
} wl_resolution_t;

/**
 * Resolves the codes of a list from the candidate matches the store found,
 * given in any order (duplicates are ignored). The resolution points into
 * codes and matches' strings, which must outlive it, and into arena memory.
 * WL_EINVAL when a match names a code_index >= code_count; WL_ENOMEM.
 *
 *     const char *codes[] = {"SKU-1", "4006381333931", "NOPE"};
 *     wl_code_match_t matches[] = {{0, WL_MATCH_SKU, "SKU-1", "Bolt"},
 *                                  {1, WL_MATCH_EAN, "SKU-7", "Nut"},
 *                                  {1, WL_MATCH_EAN, "SKU-8", "Nut, zinc"}};
 *     wl_resolution_t res;
 *     wl_resolve_codes(codes, 3, matches, 3, arena, &res);
 *     // res.codes: SKU [SKU-1], AMBIGUOUS [SKU-7, SKU-8], NOT_FOUND []
 *     // res.products: SKU-1, SKU-7 (ambiguous), SKU-8 (ambiguous)
 */
int wl_resolve_codes(const char *const *codes, size_t code_count, const wl_code_match_t *matches,
                     size_t match_count, wl_arena_t *arena, wl_resolution_t *out) WL_CHECK_RESULT;

/** One stop of the walk: a walked product at one location. */
typedef struct {
    const char *bin_code;
    const char *warehouse;
    const char *sku;
    int64_t quantity;
    const wl_walk_product_t *product; /* filled by wl_walk_build */
} wl_walk_stop_t;

/**
 * Walk order: bin code in natural order (wl_bin_compare), then warehouse
 * code, then SKU, both byte-wise. Negative, 0 or positive like strcmp.
 */
int wl_walk_stop_compare(const wl_walk_stop_t *a, const wl_walk_stop_t *b);

typedef struct {
    wl_walk_stop_t *stops; /* in walk order */
    size_t stop_count;
    const wl_walk_product_t **unlocated; /* walked products without a stop, in list order */
    size_t unlocated_count;
} wl_walk_t;

/**
 * Builds the walk from the stops the store found for the resolution's
 * products: links each stop to its product, sorts the stops in place (they
 * become out->stops) and lists the products left without a stop. WL_EINVAL
 * when a stop's SKU is not a walked product; WL_ENOMEM.
 */
int wl_walk_build(const wl_resolution_t *resolution, wl_walk_stop_t *stops, size_t stop_count,
                  wl_arena_t *arena, wl_walk_t *out) WL_CHECK_RESULT;

#endif
