/*
 * CSV imports (src/domain/csv.c, and the per-kind checks of src/store/inventory.c): the first
 * byte picks the import kind, the rest is the file, read record by record as wl_import_csv
 * does; each record of the kind's width goes through the row checks. Errors are final.
 */
#include <string.h>

#include "fuzz.h"
#include "domain/csv.h"
#include "store/inventory.h"

static void problem(size_t label, const char *column, const char *description, void *data)
{
    (void)label;
    FUZZ_CHECK(column != NULL && description != NULL && description[0] != '\0');
    ++*(size_t *)data;
}

static void row_name(size_t label, char *buf, size_t size, void *data)
{
    (void)data;
    snprintf(buf, size, "line %zu", label);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) /* fmemopen needs a byte */
        return 0;
    wl_inventory_kind_t kind = (wl_inventory_kind_t)(data[0] % (WL_INVENTORY_RESERVATIONS + 1));
    FILE *in = fmemopen((void *)(data + 1), size - 1, "r");
    FUZZ_CHECK(in != NULL);
    wl_csv_reader_t *reader = NULL;
    FUZZ_CHECK(wl_csv_reader_create(in, &reader) == 0);
    size_t problems = 0, line = 0;
    wl_inventory_reporter_t reporter = {problem, row_name, &problems};
    wl_csv_record_t rec;
    wl_error_t err;
    wl_error_init(&err);
    int rc;
    while ((rc = wl_csv_next(reader, &rec, &err)) == 1) {
        FUZZ_CHECK(rec.line > line && rec.field_count >= 1 && rec.field_count <= WL_CSV_FIELDS_MAX);
        line = rec.line;
        if (rec.field_count == wl_inventory_column_count(kind)) {
            size_t before = problems;
            bool valid = wl_inventory_row_valid(kind, rec.line, rec.fields, &reporter);
            FUZZ_CHECK(valid == (problems == before));
        }
    }
    if (rc < 0) {
        wl_error_t again;
        wl_error_init(&again);
        FUZZ_CHECK(err.code == rc && wl_csv_next(reader, &rec, &again) == rc);
        FUZZ_CHECK(strncmp(err.message, "line ", 5) == 0 &&
                   strcmp(err.message, again.message) == 0);
    }
    wl_csv_reader_destroy(reader);
    fclose(in);
    return 0;
}
