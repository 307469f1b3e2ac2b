/* Importing inventory CSV files, all or nothing, happens here. */
#include "store/import.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "domain/csv.h"
#include "store/inventory.h"

/* The CSV kinds, named as on the command line, in the order a whole catalogue is imported;
 * their columns are the header. */
static const struct {
    const char *name;
    wl_inventory_kind_t kind;
} csv_kinds[] = {
    {"warehouses", WL_INVENTORY_WAREHOUSES},
    {"locations", WL_INVENTORY_LOCATIONS},
    {"products", WL_INVENTORY_PRODUCTS},
    {"stock", WL_INVENTORY_STOCK},
    {"location-stock", WL_INVENTORY_LOCATION_STOCK},
    {"reservations", WL_INVENTORY_RESERVATIONS},
};

static bool find_kind(const char *name, wl_inventory_kind_t *kind)
{
    for (size_t i = 0; i < sizeof(csv_kinds) / sizeof(csv_kinds[0]); i++) {
        if (strcmp(csv_kinds[i].name, name) == 0) {
            *kind = csv_kinds[i].kind;
            return true;
        }
    }
    return false;
}

size_t wl_import_kind_count(void)
{
    return sizeof(csv_kinds) / sizeof(csv_kinds[0]);
}

const char *wl_import_kind_name(size_t i)
{
    return i < wl_import_kind_count() ? csv_kinds[i].name : NULL;
}

wl_inventory_kind_t wl_import_kind(size_t i)
{
    return csv_kinds[i].kind;
}

int wl_import_kind_valid(const char *kind)
{
    wl_inventory_kind_t ignored;
    return find_kind(kind, &ignored);
}

static void name_line(size_t line, char *buf, size_t size, void *data)
{
    (void)data;
    snprintf(buf, size, "line %zu", line);
}

static bool span_is(wl_span_t s, const char *text)
{
    return wl_span_eq(s, wl_span_str(text));
}

static int check_header(wl_inventory_batch_t *batch, wl_inventory_kind_t kind,
                        const wl_csv_record_t *rec)
{
    size_t columns = wl_inventory_column_count(kind);
    bool ok = rec->field_count == columns;
    for (size_t i = 0; ok && i < columns; i++)
        ok = span_is(rec->fields[i], wl_inventory_column(kind, i));
    if (!ok) {
        char expected[160] = "";
        for (size_t i = 0; i < columns; i++) {
            size_t used = strlen(expected);
            snprintf(expected + used, sizeof(expected) - used, "%s%s", i ? "," : "",
                     wl_inventory_column(kind, i));
        }
        char description[224];
        snprintf(description, sizeof(description), "header must be %s", expected);
        wl_inventory_batch_problem(batch, rec->line, "", description);
        return WL_EINVAL;
    }
    return 0;
}

/* Streams the file's rows into the batch; reports every line the batch cannot take. */
static int read_rows(wl_inventory_batch_t *batch, wl_inventory_kind_t kind, FILE *in,
                     wl_error_t *err)
{
    wl_csv_reader_t *reader = NULL;
    int rc = wl_csv_reader_create(in, &reader);
    if (rc != 0)
        return wl_error_set(err, rc, NULL);
    size_t columns = wl_inventory_column_count(kind);
    bool header_seen = false;
    wl_csv_record_t rec;
    wl_error_t csv_err;
    wl_error_init(&csv_err);
    int more;
    while ((more = wl_csv_next(reader, &rec, &csv_err)) == 1 && !batch->direct_refused) {
        if (!header_seen) {
            header_seen = true;
            if (check_header(batch, kind, &rec) != 0)
                break;
            continue;
        }
        if (rec.field_count != columns) {
            char description[96];
            snprintf(description, sizeof(description), "has %zu fields, expected %zu",
                     rec.field_count, columns);
            wl_inventory_batch_problem(batch, rec.line, "", description);
            continue;
        }
        rc = wl_inventory_batch_add(batch, rec.line, rec.fields, err);
        if (rc != 0)
            break;
    }
    if (more < 0 && rc == 0) {
        /* The reader's message names the line ("line 7: unterminated quoted field"). */
        size_t line = 0;
        int skip = 0;
        if (sscanf(csv_err.message, "line %zu: %n", &line, &skip) == 1 && skip > 0)
            wl_inventory_batch_problem(batch, line, "", csv_err.message + skip);
        else
            wl_inventory_batch_problem(batch, 0, "", csv_err.message);
    }
    if (!header_seen && more >= 0 && rc == 0)
        wl_inventory_batch_problem(batch, 1, "", "the file is empty: a header row is required");
    wl_csv_reader_destroy(reader);
    return rc;
}

/* A batch of its own transaction, or of the catalogue when not NULL; first: its rows may go
 * straight into the kind's table (wl_inventory_batch_begin_first). */
static int begin(wl_inventory_batch_t *batch, PGconn *conn, int64_t org_id,
                 wl_inventory_catalogue_t *catalogue, wl_inventory_kind_t kind,
                 const wl_inventory_reporter_t *reporter, bool first, wl_error_t *err)
{
    if (catalogue != NULL)
        return first ? wl_inventory_batch_begin_first_in(batch, catalogue, kind, reporter, err)
                     : wl_inventory_batch_begin_in(batch, catalogue, kind, reporter, err);
    return first ? wl_inventory_batch_begin_first(batch, conn, org_id, kind, reporter, err)
                 : wl_inventory_batch_begin(batch, conn, org_id, kind, reporter, err);
}

/* One file, in a transaction of its own or as a batch of the catalogue (not NULL). */
static int import_file(PGconn *conn, int64_t org_id, wl_inventory_catalogue_t *catalogue,
                       const char *kind_name, FILE *in, wl_import_report_fn report,
                       void *report_data, size_t *rows, wl_error_t *err)
{
    wl_inventory_kind_t kind;
    *rows = 0;
    if (!find_kind(kind_name, &kind))
        return wl_error_set(err, WL_EINVAL, "unknown import kind '%s'", kind_name);
    wl_inventory_reporter_t reporter = {report, name_line, report_data};
    wl_inventory_batch_t batch;
    /* A file that can be read again may go straight into the tables on the organization's
     * first import of the kind; when that batch finds a problem, the file is read again into
     * a staged batch, which reports each one with its line. */
    long start = ftell(in);
    int rc = begin(&batch, conn, org_id, catalogue, kind, &reporter, start >= 0, err);
    for (int attempt = 0; rc == 0 && attempt < 2; attempt++) {
        rc = read_rows(&batch, kind, in, err);
        if (rc != 0) {
            wl_inventory_batch_abort(&batch);
            return rc;
        }
        rc = wl_inventory_batch_finish(&batch, rows, err);
        if (rc == 0 || !batch.direct_refused)
            break;
        clearerr(in);
        if (fseek(in, start, SEEK_SET) != 0)
            return wl_error_set(err, WL_EINTERNAL, "cannot read the file again: %s",
                                strerror(errno));
        rc = begin(&batch, conn, org_id, catalogue, kind, &reporter, false, err);
    }
    if (rc == WL_EINVAL && err->code == 0 && catalogue != NULL)
        wl_error_set(err, WL_EINVAL, "the %s file has %zu problem(s); nothing was imported",
                     kind_name, batch.problems);
    else if (rc == WL_EINVAL && err->code == 0)
        wl_error_set(err, WL_EINVAL, "the file has %zu problem(s); nothing was imported",
                     batch.problems);
    return rc;
}

int wl_import_csv(PGconn *conn, int64_t org_id, const char *kind_name, FILE *in,
                  wl_import_report_fn report, void *report_data, size_t *rows, wl_error_t *err)
{
    return import_file(conn, org_id, NULL, kind_name, in, report, report_data, rows, err);
}

/* A catalogue's problems reach its caller with the kind of the file they are in. */
typedef struct {
    wl_import_catalogue_report_fn report;
    void *data;
    size_t kind;
} catalogue_reporter_t;

static void report_in_file(size_t line, const char *column, const char *description, void *data)
{
    const catalogue_reporter_t *reporter = data;
    reporter->report(reporter->kind, line, column, description, reporter->data);
}

int wl_import_catalogue(PGconn *conn, int64_t org_id, FILE *const files[],
                        wl_import_catalogue_report_fn report, void *report_data, size_t rows[],
                        wl_error_t *err)
{
    size_t count = wl_import_kind_count(), present = 0;
    for (size_t i = 0; i < count; i++) {
        rows[i] = 0;
        present += files[i] != NULL;
    }
    if (present == 0)
        return wl_error_set(err, WL_EINVAL, "the catalogue has no file");
    wl_inventory_catalogue_t catalogue;
    int rc = wl_inventory_catalogue_begin(&catalogue, conn, org_id, err);
    for (size_t i = 0; rc == 0 && i < count; i++) {
        if (files[i] == NULL)
            continue;
        catalogue_reporter_t reporter = {report, report_data, i};
        rc = import_file(conn, org_id, &catalogue, csv_kinds[i].name, files[i], report_in_file,
                         &reporter, &rows[i], err);
    }
    if (rc == 0)
        return wl_inventory_catalogue_commit(&catalogue, err);
    wl_inventory_catalogue_abort(&catalogue);
    for (size_t i = 0; i < count; i++)
        rows[i] = 0;
    return rc;
}
