/* Making a reproducible benchmark catalogue, into the database or into CSV files, happens here. */
#include "generate.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "walklist/admin.h"

#define WAREHOUSE_COUNT 4
#define MAX_STOCK       3
#define MAX_LOCATIONS   4
#define MAX_EANS        2
#define MAX_RESERVE     3
#define MAX_SKUS        100000000

_Static_assert(WL_ADMIN_KIND_COUNT == 6, "a catalogue is made of the six kinds, in their order");

static const struct {
    const char *code, *name, *kind;
} warehouses[WAREHOUSE_COUNT] = {
    {"WH-NORTH", "North distribution centre", "own"},
    {"WH-SOUTH", "South distribution centre", "own"},
    {"WH-CITY", "City store backroom", "own"},
    {"SUP-ACME", "Acme supplier consignment", "supplier"},
};

static const char *const adjectives[] = {
    "Cordless",   "Heavy-duty", "Compact",    "Stainless",   "Galvanised", "Insulated",
    "Folding",    "Magnetic",   "Reinforced", "Waterproof",  "Adjustable", "Precision",
    "Industrial", "Soft-grip",  "Extra long", "Low-profile",
};
static const char *const nouns[] = {
    "drill",         "hammer",        "screwdriver set", "tape measure",  "work light",
    "safety gloves", "ladder",        "extension cord",  "spirit level",  "socket set",
    "wrench",        "pliers",        "utility knife",   "cable ties",    "wood screws",
    "wall plugs",    "hinge",         "padlock",         "sealant",       "paint roller",
    "brush",         "sandpaper",     "clamp",           "saw blade",     "drill bits",
    "tool box",      "workbench",     "respirator",      "ear defenders", "hose reel",
    "wheelbarrow",   "shelf bracket",
};
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* What one SKU has; a pure function of (seed, index). */
typedef struct {
    int stock_count;
    int stock_warehouse[MAX_STOCK];
    int64_t on_hand[MAX_STOCK];
    int location_count;
    int location_warehouse[MAX_LOCATIONS];
    int64_t location_bin[MAX_LOCATIONS];
    int64_t location_quantity[MAX_LOCATIONS];
    int ean_count;
    int64_t ean_body[MAX_EANS];
    int reservation_count;
    int reservation_warehouse[MAX_RESERVE];
    int64_t reservation_quantity[MAX_RESERVE];
    const char *reservation_status[MAX_RESERVE];
} sku_plan_t;

typedef struct {
    uint64_t state;
} rng_t;

/* splitmix64: tiny, fast, and well spread even for consecutive seeds. */
static uint64_t rng_next(rng_t *rng)
{
    uint64_t z = (rng->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rng_below(rng_t *rng, uint64_t n)
{
    return rng_next(rng) % n;
}

static rng_t rng_for(uint64_t seed, int64_t index)
{
    rng_t rng = {seed ^ ((uint64_t)index * 0xD1B54A32D192ED03ull)};
    (void)rng_next(&rng);
    return rng;
}

/* Bins per warehouse: about 20 SKUs' assignments share a warehouse's bins. */
static int64_t bins_per_warehouse(int64_t skus)
{
    return skus / 20 > 20 ? skus / 20 : 20;
}

static bool bin_is_staging(int64_t bin)
{
    return bin % 10 == 9;
}

/* Bin codes show natural order: aisle letters, then rack and level numbers without padding
 * (A-2-1 < A-10-1); staging areas are STAGE-n. */
static void bin_code(int64_t bin, char *out, size_t size)
{
    if (bin_is_staging(bin)) {
        snprintf(out, size, "STAGE-%" PRId64, bin / 10 + 1);
        return;
    }
    int64_t aisle = bin / 400, rack = (bin / 10) % 40 + 1, level = bin % 10 + 1;
    char letter = (char)('A' + aisle % 26);
    if (aisle < 26)
        snprintf(out, size, "%c-%" PRId64 "-%" PRId64, letter, rack, level);
    else
        snprintf(out, size, "%c%" PRId64 "-%" PRId64 "-%" PRId64, letter, aisle / 26, rack, level);
}

/* EAN-13 with a valid check digit: "40" + 10 digits of body + check. */
static void ean_code(int64_t body, char out[14])
{
    snprintf(out, 14, "40%010" PRId64, body % 10000000000);
    int sum = 0;
    for (int i = 0; i < 12; i++)
        sum += (out[i] - '0') * (i % 2 ? 3 : 1);
    out[12] = (char)('0' + (10 - sum % 10) % 10);
    out[13] = '\0';
}

static int pick_weighted(rng_t *rng, const int *percent, int n)
{
    int r = (int)rng_below(rng, 100);
    for (int i = 0; i < n; i++) {
        if (r < percent[i])
            return i;
        r -= percent[i];
    }
    return n - 1;
}

static void plan_sku(uint64_t seed, int64_t skus, int64_t index, sku_plan_t *plan)
{
    memset(plan, 0, sizeof(*plan));
    rng_t rng = rng_for(seed, index);

    /* Stock records in 1-3 warehouses: the first mostly an own one, the supplier now and then. */
    static const int stock_counts[] = {50, 35, 15};
    plan->stock_count = 1 + pick_weighted(&rng, stock_counts, 3);
    bool used[WAREHOUSE_COUNT] = {false};
    for (int s = 0; s < plan->stock_count; s++) {
        int w;
        if (s == 0)
            w = rng_below(&rng, 100) < 85 ? (int)rng_below(&rng, 3) : 3;
        else
            do
                w = (int)rng_below(&rng, WAREHOUSE_COUNT);
            while (used[w]);
        used[w] = true;
        plan->stock_warehouse[s] = w;
        uint64_t r = rng_below(&rng, 1000);
        plan->on_hand[s] = r < 80 ? 0 : (int64_t)(1 + rng_below(&rng, 400));
    }

    /* 1-4 rack assignments in the SKU's stock warehouses, distinct bins. */
    static const int location_counts[] = {40, 30, 20, 10};
    plan->location_count = 1 + pick_weighted(&rng, location_counts, 4);
    int64_t bins = bins_per_warehouse(skus);
    for (int l = 0; l < plan->location_count; l++) {
        int w = plan->stock_warehouse[rng_below(&rng, (uint64_t)plan->stock_count)];
        int64_t bin = (int64_t)rng_below(&rng, (uint64_t)bins);
        for (int k = 0; k < l;) { /* linear probe past a bin this SKU already has there */
            if (plan->location_warehouse[k] == w && plan->location_bin[k] == bin) {
                bin = (bin + 1) % bins;
                k = 0;
            } else {
                k++;
            }
        }
        plan->location_warehouse[l] = w;
        plan->location_bin[l] = bin;
        plan->location_quantity[l] = (int64_t)rng_below(&rng, 100);
    }

    /* 0-2 EANs; product 500k+1 also carries the first EAN of product 500k (shared, so
     * ambiguous on the scanner), which therefore always has one. */
    static const int ean_counts[] = {20, 60, 20};
    plan->ean_count = pick_weighted(&rng, ean_counts, 3);
    if (index % 500 == 0 && plan->ean_count == 0)
        plan->ean_count = 1;
    for (int e = 0; e < plan->ean_count; e++)
        plan->ean_body[e] = index * 2 + e;
    if (index % 500 == 1) {
        plan->ean_count = 2;
        plan->ean_body[0] = index * 2;
        plan->ean_body[1] = (index - 1) * 2;
    }

    /* Active reservations on about 20% of SKUs; released or consumed ones on some more. */
    uint64_t r = rng_below(&rng, 100);
    if (r < 20) {
        plan->reservation_count = rng_below(&rng, 4) == 0 ? 2 : 1;
        for (int k = 0; k < plan->reservation_count; k++)
            plan->reservation_status[k] = "active";
    } else if (r < 25) {
        plan->reservation_count = 1;
        plan->reservation_status[0] = r % 2 ? "released" : "consumed";
    }
    for (int k = 0; k < plan->reservation_count; k++) {
        plan->reservation_warehouse[k] =
            plan->stock_warehouse[rng_below(&rng, (uint64_t)plan->stock_count)];
        plan->reservation_quantity[k] = (int64_t)(1 + rng_below(&rng, 20));
    }
}

/* --- Sinks: where rows go ---------------------------------------------------------------- */

typedef struct sink sink_t;
struct sink {
    int (*begin)(sink_t *sink, int kind, wl_error_t *err);
    int (*row)(sink_t *sink, const wl_span_t *values, wl_error_t *err);
    int (*end)(sink_t *sink, bool ok, size_t *rows, wl_error_t *err);
    int kind;
    size_t line; /* of the current kind, the header being line 1 */
};

typedef struct {
    sink_t base;
    wl_admin_t *admin;
    int64_t org_id;
    wl_admin_batch_t *batch; /* NULL: none open */
} db_sink_t;

typedef struct {
    sink_t base;
    const char *dir;
    FILE *out;
    char path[4096];
} csv_sink_t;

static void report_problem(size_t label, const char *column, const char *description, void *data)
{
    const sink_t *sink = data;
    fprintf(stderr, "generate %s: row %zu: %s%s%s\n", wl_admin_kind_name((size_t)sink->kind), label,
            column, column[0] ? ": " : "", description);
}

static int db_begin(sink_t *sink, int kind, wl_error_t *err)
{
    db_sink_t *db = (db_sink_t *)sink;
    return wl_admin_batch_begin(db->admin, db->org_id, (size_t)kind, report_problem, sink,
                                &db->batch, err);
}

static int db_row(sink_t *sink, const wl_span_t *values, wl_error_t *err)
{
    db_sink_t *db = (db_sink_t *)sink;
    return wl_admin_batch_add(db->batch, sink->line, values, err);
}

static int db_end(sink_t *sink, bool ok, size_t *rows, wl_error_t *err)
{
    db_sink_t *db = (db_sink_t *)sink;
    wl_admin_batch_t *batch = db->batch;
    db->batch = NULL;
    if (batch == NULL)
        return 0;
    if (!ok) {
        wl_admin_batch_abort(batch);
        return 0;
    }
    int rc = wl_admin_batch_finish(batch, rows, err);
    if (rc == WL_EINVAL && err->code == 0)
        wl_error_set(err, WL_EINTERNAL, "generated %s rows were refused",
                     wl_admin_kind_name((size_t)sink->kind));
    return rc;
}

static int csv_begin(sink_t *sink, int kind, wl_error_t *err)
{
    csv_sink_t *csv = (csv_sink_t *)sink;
    snprintf(csv->path, sizeof(csv->path), "%s/%s.csv", csv->dir, wl_admin_kind_name((size_t)kind));
    csv->out = fopen(csv->path, "w");
    if (csv->out == NULL)
        return wl_error_set(err, WL_EINVAL, "cannot write %s: %s", csv->path, strerror(errno));
    static char buffer[1 << 20];
    setvbuf(csv->out, buffer, _IOFBF, sizeof(buffer));
    for (size_t i = 0; i < wl_admin_kind_column_count((size_t)kind); i++)
        fprintf(csv->out, "%s%s", i ? "," : "", wl_admin_kind_column((size_t)kind, i));
    fputc('\n', csv->out);
    return 0;
}

/* RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled. */
static void csv_field(FILE *out, wl_span_t value)
{
    bool quote = false;
    for (size_t i = 0; i < value.len && !quote; i++)
        quote = value.base[i] == ',' || value.base[i] == '"' || value.base[i] == '\n' ||
                value.base[i] == '\r';
    if (!quote) {
        fwrite(value.base, 1, value.len, out);
        return;
    }
    fputc('"', out);
    for (size_t i = 0; i < value.len; i++) {
        if (value.base[i] == '"')
            fputc('"', out);
        fputc(value.base[i], out);
    }
    fputc('"', out);
}

static int csv_row(sink_t *sink, const wl_span_t *values, wl_error_t *err)
{
    (void)err;
    csv_sink_t *csv = (csv_sink_t *)sink;
    size_t columns = wl_admin_kind_column_count((size_t)sink->kind);
    for (size_t i = 0; i < columns; i++) {
        if (i > 0)
            fputc(',', csv->out);
        csv_field(csv->out, values[i]);
    }
    fputc('\n', csv->out);
    return 0;
}

static int csv_end(sink_t *sink, bool ok, size_t *rows, wl_error_t *err)
{
    csv_sink_t *csv = (csv_sink_t *)sink;
    if (csv->out == NULL)
        return 0;
    bool failed = ferror(csv->out) != 0;
    failed |= fclose(csv->out) != 0;
    csv->out = NULL;
    *rows = sink->line - 1;
    if (ok && failed)
        return wl_error_set(err, WL_EINTERNAL, "cannot write %s", csv->path);
    return 0;
}

/* --- Rows of each kind ------------------------------------------------------------------- */

static int emit(sink_t *sink, const wl_span_t *values, wl_error_t *err)
{
    sink->line++;
    return sink->row(sink, values, err);
}

static wl_span_t text(const char *s)
{
    return wl_span_str(s);
}

/* Formats into buf and returns the span over it. */
static wl_span_t number(char *buf, size_t size, int64_t value)
{
    int n = snprintf(buf, size, "%" PRId64, value);
    return wl_span(buf, (size_t)n);
}

static void sku_code(int64_t skus, int64_t index, char *buf, size_t size)
{
    int width = 7;
    for (int64_t limit = 10000000; skus > limit && width < 18; limit *= 10)
        width++;
    snprintf(buf, size, "SKU-%0*" PRId64, width, index + 1);
}

static int emit_warehouses(sink_t *sink, const wl_generate_options_t *options, wl_error_t *err)
{
    (void)options;
    int rc = 0;
    for (int w = 0; rc == 0 && w < WAREHOUSE_COUNT; w++) {
        wl_span_t values[] = {text(warehouses[w].code), text(warehouses[w].name),
                              text(warehouses[w].kind)};
        rc = emit(sink, values, err);
    }
    return rc;
}

static int emit_locations(sink_t *sink, const wl_generate_options_t *options, wl_error_t *err)
{
    int64_t bins = bins_per_warehouse(options->skus);
    int rc = 0;
    char code[48];
    for (int w = 0; rc == 0 && w < WAREHOUSE_COUNT; w++) {
        for (int64_t b = 0; rc == 0 && b < bins; b++) {
            bin_code(b, code, sizeof(code));
            wl_span_t values[] = {text(warehouses[w].code), text(code),
                                  text(bin_is_staging(b) ? "true" : "false")};
            rc = emit(sink, values, err);
        }
    }
    return rc;
}

static int emit_products(sink_t *sink, const wl_generate_options_t *options, wl_error_t *err)
{
    int rc = 0;
    char sku[32], name[160], eans[2 * 14 + 2];
    for (int64_t i = 0; rc == 0 && i < options->skus; i++) {
        sku_plan_t plan;
        plan_sku(options->seed, options->skus, i, &plan);
        sku_code(options->skus, i, sku, sizeof(sku));
        rng_t rng = rng_for(options->seed ^ 0x6E616D65ull, i);
        const char *adjective = adjectives[rng_below(&rng, COUNT_OF(adjectives))];
        const char *noun = nouns[rng_below(&rng, COUNT_OF(nouns))];
        int n = snprintf(name, sizeof(name), "%s %s, model %" PRIu64, adjective, noun,
                         100 + rng_below(&rng, 900));
        if (i % 50 == 7) /* now and then a quote, as real catalogues have ("12\" ruler") */
            snprintf(name + n, sizeof(name) - (size_t)n, " \"pro\"");
        size_t len = 0;
        for (int e = 0; e < plan.ean_count; e++) {
            if (e > 0)
                eans[len++] = '|';
            ean_code(plan.ean_body[e], eans + len);
            len += 13;
        }
        wl_span_t values[] = {text(sku), text(name), wl_span(eans, len)};
        rc = emit(sink, values, err);
    }
    return rc;
}

static int emit_stock(sink_t *sink, const wl_generate_options_t *options, wl_error_t *err)
{
    int rc = 0;
    char sku[32], on_hand[24];
    for (int64_t i = 0; rc == 0 && i < options->skus; i++) {
        sku_plan_t plan;
        plan_sku(options->seed, options->skus, i, &plan);
        sku_code(options->skus, i, sku, sizeof(sku));
        for (int s = 0; rc == 0 && s < plan.stock_count; s++) {
            wl_span_t values[] = {text(sku), text(warehouses[plan.stock_warehouse[s]].code),
                                  number(on_hand, sizeof(on_hand), plan.on_hand[s])};
            rc = emit(sink, values, err);
        }
    }
    return rc;
}

static int emit_location_stock(sink_t *sink, const wl_generate_options_t *options, wl_error_t *err)
{
    int rc = 0;
    char sku[32], code[48], quantity[24];
    for (int64_t i = 0; rc == 0 && i < options->skus; i++) {
        sku_plan_t plan;
        plan_sku(options->seed, options->skus, i, &plan);
        sku_code(options->skus, i, sku, sizeof(sku));
        for (int l = 0; rc == 0 && l < plan.location_count; l++) {
            bin_code(plan.location_bin[l], code, sizeof(code));
            wl_span_t values[] = {text(sku), text(warehouses[plan.location_warehouse[l]].code),
                                  text(code),
                                  number(quantity, sizeof(quantity), plan.location_quantity[l])};
            rc = emit(sink, values, err);
        }
    }
    return rc;
}

static int emit_reservations(sink_t *sink, const wl_generate_options_t *options, wl_error_t *err)
{
    int rc = 0;
    char sku[32], ref[48], quantity[24];
    for (int64_t i = 0; rc == 0 && i < options->skus; i++) {
        sku_plan_t plan;
        plan_sku(options->seed, options->skus, i, &plan);
        sku_code(options->skus, i, sku, sizeof(sku));
        for (int k = 0; rc == 0 && k < plan.reservation_count; k++) {
            snprintf(ref, sizeof(ref), "RES-%s-%d", sku + 4, k + 1);
            wl_span_t values[] = {text(ref), text(sku),
                                  text(warehouses[plan.reservation_warehouse[k]].code),
                                  number(quantity, sizeof(quantity), plan.reservation_quantity[k]),
                                  text(plan.reservation_status[k])};
            rc = emit(sink, values, err);
        }
    }
    return rc;
}

static int (*const emitters[6])(sink_t *, const wl_generate_options_t *, wl_error_t *) = {
    emit_warehouses, emit_locations,      emit_products,
    emit_stock,      emit_location_stock, emit_reservations,
};

static double seconds_since(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

static int run(sink_t *sink, const wl_generate_options_t *options, FILE *progress,
               wl_generate_counts_t *counts, wl_error_t *err)
{
    memset(counts, 0, sizeof(*counts));
    if (options->skus < 1 || options->skus > MAX_SKUS)
        return wl_error_set(err, WL_EINVAL, "--skus must be from 1 to %d", MAX_SKUS);
    for (int kind = 0; kind < 6; kind++) {
        struct timespec start;
        clock_gettime(CLOCK_MONOTONIC, &start);
        sink->kind = kind;
        sink->line = 1;
        int rc = sink->begin(sink, kind, err);
        if (rc == 0)
            rc = emitters[kind](sink, options, err);
        int end_rc = sink->end(sink, rc == 0, &counts->rows[kind], err);
        if (rc == 0)
            rc = end_rc;
        if (rc != 0)
            return rc;
        if (progress != NULL)
            fprintf(progress, "walklistctl: generate: %zu %s row(s) in %.2f s\n",
                    counts->rows[kind], wl_admin_kind_name((size_t)kind), seconds_since(&start));
    }
    return 0;
}

int wl_generate_load(wl_admin_t *admin, int64_t org_id, const wl_generate_options_t *options,
                     FILE *progress, wl_generate_counts_t *counts, wl_error_t *err)
{
    db_sink_t sink = {.base = {db_begin, db_row, db_end}, .admin = admin, .org_id = org_id};
    return run(&sink.base, options, progress, counts, err);
}

/* mkdir -p: DIR and any parents it lacks. */
static int make_directories(const char *dir, wl_error_t *err)
{
    char path[4096];
    if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
        return wl_error_set(err, WL_EINVAL, "directory name too long: %s", dir);
    for (char *at = path + 1;; at++) {
        bool end = *at == '\0';
        if (*at != '/' && !end)
            continue;
        *at = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return wl_error_set(err, WL_EINVAL, "cannot create %s: %s", path, strerror(errno));
        if (end)
            break;
        *at = '/';
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return wl_error_set(err, WL_EINVAL, "%s is not a directory", dir);
    return 0;
}

int wl_generate_csv(const char *dir, const wl_generate_options_t *options,
                    wl_generate_counts_t *counts, wl_error_t *err)
{
    int rc = make_directories(dir, err);
    if (rc != 0)
        return rc;
    csv_sink_t sink = {.base = {csv_begin, csv_row, csv_end}, .dir = dir};
    return run(&sink.base, options, NULL, counts, err);
}
