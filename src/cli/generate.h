/*
 * A realistic, reproducible catalogue for benchmarks and demos
 * (`walklistctl generate`): three own warehouses and one supplier warehouse,
 * bins with about 10% staging areas, products with 0-2 EANs (a few shared
 * between two products), stock records in 1-3 warehouses, 1-4 rack
 * assignments per SKU and active reservations on about a fifth of the SKUs.
 *
 * Every value is a pure function of (seed, SKU index), so the same seed and
 * size give the same catalogue byte for byte, whatever the order of
 * generation. The rows go either into the database as batches of the admin
 * API (wl_admin_batch_*: COPY staging, checks, upserts, export refresh, exactly
 * what the CSV import does, one transaction per kind), or into the six CSV
 * files that `walklistctl import` reads.
 */
#ifndef WALKLIST_CLI_GENERATE_H
#define WALKLIST_CLI_GENERATE_H

#include <stdint.h>
#include <stdio.h>

#include "walklist/admin.h"
#include "walklist/error.h"

typedef struct {
    int64_t skus;  /* products to make, 1 to 100,000,000 */
    uint64_t seed; /* same seed and skus, same catalogue */
} wl_generate_options_t;

/** Rows made of each kind, indexed like wl_admin_kind_name (warehouses ... reservations). */
typedef struct {
    size_t rows[6];
} wl_generate_counts_t;

/**
 * Loads the catalogue into the organization's inventory, one all-or-nothing
 * transaction per kind, with progress lines (kind, rows, seconds) on progress
 * when it is not NULL. Upserts by natural key, so running it again with the
 * same options changes nothing.
 */
int wl_generate_load(wl_admin_t *admin, int64_t org_id, const wl_generate_options_t *options,
                     FILE *progress, wl_generate_counts_t *counts, wl_error_t *err) WL_CHECK_RESULT;

/**
 * Writes the catalogue as DIR/warehouses.csv, locations.csv, products.csv,
 * stock.csv, location-stock.csv and reservations.csv, creating DIR (and its parents) when
 * missing.
 */
int wl_generate_csv(const char *dir, const wl_generate_options_t *options,
                    wl_generate_counts_t *counts, wl_error_t *err) WL_CHECK_RESULT;

#endif
