/* Importing inventory CSV files, all or nothing, happens here. */
#include "store/import.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "walklist/bin_order.h"
#include "walklist/codes.h"
#include "walklist/csv.h"
#include "walklist/utf8.h"

typedef enum {
    COL_CODE,        /* SKU, EAN, bin, warehouse code, reservation ref */
    COL_NAME,        /* display name, up to 200 characters, required */
    COL_WAREHOUSE_KIND,
    COL_BOOL,        /* true / false */
    COL_QUANTITY,    /* integer >= 0 */
    COL_EANS,        /* EANs separated by '|', may be empty */
    COL_RESERVATION_STATUS,
} column_type_t;

typedef struct {
    const char *name;
    column_type_t type;
} column_t;

#define MAX_COLUMNS 6
#define MAX_CHECKS 3
#define MAX_UPSERTS 3

/*
 * One importable kind. SQL runs against the staging table import_rows, which
 * has a column "line" and one text column per CSV column (plus sort_key for
 * locations). $1 is always the organization.
 */
typedef struct {
    const char *kind;
    column_t columns[MAX_COLUMNS];
    size_t column_count;
    const char *staging_columns; /* column definitions after "line integer" */
    const char *key_columns;     /* natural key, for the duplicate check */
    /* Reference checks: each returns (line, column, description) for bad rows. */
    const char *checks[MAX_CHECKS];
    /* SKUs whose export rows the import changes, computed before the upsert. */
    const char *affected_skus;
    const char *upsert[MAX_UPSERTS];
} import_kind_t;

static const import_kind_t kinds[] = {
    {
        "warehouses",
        {{"code", COL_CODE}, {"name", COL_NAME}, {"kind", COL_WAREHOUSE_KIND}},
        3,
        "code text COLLATE \"C\", name text, kind text",
        "code",
        {NULL},
        "SELECT sku FROM stock WHERE org_id = $1 AND warehouse IN (SELECT code FROM import_rows)"
        " UNION SELECT sku FROM location_stock WHERE org_id = $1"
        " AND warehouse IN (SELECT code FROM import_rows)"
        " UNION SELECT sku FROM reservations WHERE org_id = $1"
        " AND warehouse IN (SELECT code FROM import_rows)",
        {"INSERT INTO warehouses (org_id, code, name, kind)"
         " SELECT $1, code, name, kind FROM import_rows"
         " ON CONFLICT (org_id, code) DO UPDATE SET name = excluded.name, kind = excluded.kind",
         NULL},
    },
    {
        "locations",
        {{"warehouse", COL_CODE}, {"code", COL_CODE}, {"staging", COL_BOOL}},
        3,
        "warehouse text COLLATE \"C\", code text COLLATE \"C\", staging boolean, sort_key bytea",
        "warehouse, code",
        {"SELECT line, 'warehouse', 'unknown warehouse ' || warehouse FROM import_rows i"
         " WHERE NOT EXISTS (SELECT 1 FROM warehouses w WHERE w.org_id = $1"
         " AND w.code = i.warehouse)"},
        "SELECT sku FROM location_stock ls JOIN import_rows i"
        " ON ls.warehouse = i.warehouse AND ls.location = i.code WHERE ls.org_id = $1",
        {"INSERT INTO locations (org_id, warehouse, code, staging, sort_key)"
         " SELECT $1, warehouse, code, staging, sort_key FROM import_rows"
         " ON CONFLICT (org_id, warehouse, code) DO UPDATE SET staging = excluded.staging",
         NULL},
    },
    {
        "products",
        {{"sku", COL_CODE}, {"name", COL_NAME}, {"eans", COL_EANS}},
        3,
        "sku text COLLATE \"C\", name text, eans text COLLATE \"C\"",
        "sku",
        {NULL},
        NULL,
        {"INSERT INTO products (org_id, sku, name) SELECT $1, sku, name FROM import_rows"
         " ON CONFLICT (org_id, sku) DO UPDATE SET name = excluded.name",
         /* A product's EANs are replaced by the file's list. Two statements, not one with a
          * data-modifying CTE: the INSERT of such a statement does not see the DELETE, so an EAN
          * kept across the change would conflict with its own old row and be lost. */
         "DELETE FROM product_eans e USING import_rows i WHERE e.org_id = $1 AND e.sku = i.sku",
         "INSERT INTO product_eans (org_id, ean, sku)"
         " SELECT DISTINCT $1::bigint, ean, sku FROM import_rows,"
         " unnest(string_to_array(eans, '|')) AS ean WHERE ean <> ''"},
    },
    {
        "stock",
        {{"sku", COL_CODE}, {"warehouse", COL_CODE}, {"on_hand", COL_QUANTITY}},
        3,
        "sku text COLLATE \"C\", warehouse text COLLATE \"C\", on_hand bigint",
        "sku, warehouse",
        {"SELECT line, 'sku', 'unknown product ' || sku FROM import_rows i WHERE NOT EXISTS"
         " (SELECT 1 FROM products p WHERE p.org_id = $1 AND p.sku = i.sku)",
         "SELECT line, 'warehouse', 'unknown warehouse ' || warehouse FROM import_rows i"
         " WHERE NOT EXISTS (SELECT 1 FROM warehouses w WHERE w.org_id = $1"
         " AND w.code = i.warehouse)"},
        "SELECT sku FROM import_rows",
        {"INSERT INTO stock (org_id, sku, warehouse, on_hand)"
         " SELECT $1, sku, warehouse, on_hand FROM import_rows"
         " ON CONFLICT (org_id, sku, warehouse) DO UPDATE SET on_hand = excluded.on_hand",
         NULL},
    },
    {
        "location-stock",
        {{"sku", COL_CODE},
         {"warehouse", COL_CODE},
         {"location", COL_CODE},
         {"quantity", COL_QUANTITY}},
        4,
        "sku text COLLATE \"C\", warehouse text COLLATE \"C\", location text COLLATE \"C\","
        " quantity bigint",
        "sku, warehouse, location",
        {"SELECT line, 'sku', 'unknown product ' || sku FROM import_rows i WHERE NOT EXISTS"
         " (SELECT 1 FROM products p WHERE p.org_id = $1 AND p.sku = i.sku)",
         "SELECT line, 'location', 'unknown location ' || location || ' in warehouse '"
         " || warehouse FROM import_rows i WHERE NOT EXISTS (SELECT 1 FROM locations l"
         " WHERE l.org_id = $1 AND l.warehouse = i.warehouse AND l.code = i.location)"},
        "SELECT sku FROM import_rows",
        {"INSERT INTO location_stock (org_id, sku, warehouse, location, quantity)"
         " SELECT $1, sku, warehouse, location, quantity FROM import_rows"
         " ON CONFLICT (org_id, sku, warehouse, location)"
         " DO UPDATE SET quantity = excluded.quantity",
         NULL},
    },
    {
        "reservations",
        {{"ref", COL_CODE},
         {"sku", COL_CODE},
         {"warehouse", COL_CODE},
         {"quantity", COL_QUANTITY},
         {"status", COL_RESERVATION_STATUS}},
        5,
        "ref text COLLATE \"C\", sku text COLLATE \"C\", warehouse text COLLATE \"C\","
        " quantity bigint, status text",
        "ref",
        {"SELECT line, 'sku', 'unknown product ' || sku FROM import_rows i WHERE NOT EXISTS"
         " (SELECT 1 FROM products p WHERE p.org_id = $1 AND p.sku = i.sku)",
         "SELECT line, 'warehouse', 'unknown warehouse ' || warehouse FROM import_rows i"
         " WHERE NOT EXISTS (SELECT 1 FROM warehouses w WHERE w.org_id = $1"
         " AND w.code = i.warehouse)"},
        /* An updated reservation may move to another SKU: both change. */
        "SELECT sku FROM import_rows UNION SELECT r.sku FROM reservations r"
        " JOIN import_rows i ON i.ref = r.ref WHERE r.org_id = $1",
        {"INSERT INTO reservations (org_id, ref, sku, warehouse, quantity, status)"
         " SELECT $1, ref, sku, warehouse, quantity, status FROM import_rows"
         " ON CONFLICT (org_id, ref) DO UPDATE SET sku = excluded.sku,"
         " warehouse = excluded.warehouse, quantity = excluded.quantity,"
         " status = excluded.status",
         NULL},
    },
};

static const import_kind_t *find_kind(const char *kind)
{
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if (strcmp(kinds[i].kind, kind) == 0)
            return &kinds[i];
    }
    return NULL;
}

int wl_import_kind_valid(const char *kind)
{
    return find_kind(kind) != NULL;
}

typedef struct {
    wl_import_report_fn report;
    void *data;
    size_t problems;
} reporter_t;

static void problem(reporter_t *r, size_t line, const char *column, const char *description)
{
    r->problems++;
    r->report(line, column, description, r->data);
}

/* Reports the violations a validator recorded, then forgets them. */
static void report_violations(reporter_t *r, size_t line, wl_error_t *check)
{
    for (size_t i = 0; i < check->violation_count; i++)
        problem(r, line, check->violations[i].field, check->violations[i].description);
    wl_error_init(check);
}

static bool span_is(wl_span_t s, const char *text)
{
    return wl_span_eq(s, wl_span_str(text));
}

/*
 * Names may hold line breaks, which RFC 4180 quoting exists to carry (a product name on two
 * lines); every other control character is refused. CR and LF are ASCII, so the pieces between
 * them are whole UTF-8 and each is checked on its own.
 */
static int validate_name(wl_span_t name, const char *field, wl_error_t *check)
{
    long chars = 0;
    size_t start = 0;
    for (size_t i = 0; i <= name.len; i++) {
        if (i < name.len && name.base[i] != '\n' && name.base[i] != '\r')
            continue;
        wl_span_t piece = wl_span(name.base + start, i - start);
        if (wl_text_validate(piece, WL_TEXT_MAX_CHARS, false, field, check) != 0)
            return WL_EINVAL;
        chars += wl_utf8_count(piece) + (i < name.len ? 1 : 0);
        start = i + 1;
    }
    if (chars == 0)
        return wl_error_add_violation(check, field, "must not be empty");
    if (chars > WL_TEXT_MAX_CHARS)
        return wl_error_add_violation(check, field, "must be at most %d characters",
                                      WL_TEXT_MAX_CHARS);
    return 0;
}

static bool validate_value(const column_t *column, wl_span_t value, size_t line, reporter_t *r)
{
    wl_error_t check;
    wl_error_init(&check);
    int rc = 0;
    switch (column->type) {
    case COL_CODE:
        rc = wl_code_validate(value, column->name, &check);
        break;
    case COL_NAME:
        rc = validate_name(value, column->name, &check);
        break;
    case COL_WAREHOUSE_KIND:
        if (!span_is(value, "own") && !span_is(value, "supplier"))
            wl_error_add_violation(&check, column->name, "must be own or supplier");
        break;
    case COL_BOOL:
        if (!span_is(value, "true") && !span_is(value, "false"))
            wl_error_add_violation(&check, column->name, "must be true or false");
        break;
    case COL_QUANTITY: {
        bool ok = value.len > 0 && value.len <= 18;
        for (size_t i = 0; ok && i < value.len; i++)
            ok = value.base[i] >= '0' && value.base[i] <= '9';
        if (!ok)
            wl_error_add_violation(&check, column->name,
                                   "must be a whole number from 0 to 999999999999999999");
        break;
    }
    case COL_EANS: {
        size_t start = 0;
        for (size_t i = 0; value.len > 0 && i <= value.len; i++) {
            if (i < value.len && value.base[i] != '|')
                continue;
            if (wl_code_validate(wl_span(value.base + start, i - start), column->name, &check))
                rc = WL_EINVAL;
            start = i + 1;
        }
        break;
    }
    case COL_RESERVATION_STATUS:
        if (!span_is(value, "active") && !span_is(value, "released") &&
            !span_is(value, "consumed"))
            wl_error_add_violation(&check, column->name, "must be active, released or consumed");
        break;
    }
    bool ok = rc == 0 && check.violation_count == 0;
    report_violations(r, line, &check);
    return ok;
}

/* Appends a value in COPY text format: backslash, tab, newline and CR escaped. */
static bool copy_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + 2 * n + 2 > *cap) {
        size_t grown = *cap ? *cap : 4096;
        while (*len + 2 * n + 2 > grown)
            grown *= 2;
        char *p = realloc(*buf, grown);
        if (p == NULL)
            return false;
        *buf = p;
        *cap = grown;
    }
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\\' || c == '\t' || c == '\n' || c == '\r') {
            (*buf)[(*len)++] = '\\';
            c = c == '\t' ? 't' : c == '\n' ? 'n' : c == '\r' ? 'r' : c;
        }
        (*buf)[(*len)++] = c;
    }
    return true;
}

static int check_header(const import_kind_t *kind, const wl_csv_record_t *rec, reporter_t *r)
{
    bool ok = rec->field_count == kind->column_count;
    for (size_t i = 0; ok && i < kind->column_count; i++)
        ok = span_is(rec->fields[i], kind->columns[i].name);
    if (!ok) {
        char expected[160] = "";
        for (size_t i = 0; i < kind->column_count; i++) {
            size_t used = strlen(expected);
            snprintf(expected + used, sizeof(expected) - used, "%s%s", i ? "," : "",
                     kind->columns[i].name);
        }
        char description[224];
        snprintf(description, sizeof(description), "header must be %s", expected);
        problem(r, rec->line, "", description);
        return WL_EINVAL;
    }
    return 0;
}

/* Streams the file's valid rows into import_rows; reports every bad line. */
static int stage_rows(PGconn *conn, const import_kind_t *kind, FILE *in, reporter_t *r,
                      size_t *rows, wl_error_t *err)
{
    wl_csv_reader_t *reader = NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int rc = wl_csv_reader_create(in, &reader);
    if (rc != 0)
        return wl_error_set(err, rc, NULL);
    PGresult *res = PQexec(conn, "COPY import_rows FROM STDIN");
    if (PQresultStatus(res) != PGRES_COPY_IN) {
        rc = wl_db_fail(conn, res, err);
        PQclear(res);
        wl_csv_reader_destroy(reader);
        return rc;
    }
    PQclear(res);

    bool header_seen = false;
    wl_csv_record_t rec;
    wl_error_t csv_err;
    wl_error_init(&csv_err);
    int more;
    while ((more = wl_csv_next(reader, &rec, &csv_err)) == 1) {
        if (!header_seen) {
            header_seen = true;
            if (check_header(kind, &rec, r) != 0)
                break;
            continue;
        }
        if (rec.field_count != kind->column_count) {
            char description[96];
            snprintf(description, sizeof(description), "has %zu fields, expected %zu",
                     rec.field_count, kind->column_count);
            problem(r, rec.line, "", description);
            continue;
        }
        bool ok = true;
        for (size_t i = 0; i < kind->column_count; i++)
            ok &= validate_value(&kind->columns[i], rec.fields[i], rec.line, r);
        /* Valid rows are staged even after a bad one, so that the SQL checks (references,
         * duplicate keys) can report every bad line; nothing is written unless all are good. */
        if (!ok)
            continue;
        char line[24];
        len = 0;
        snprintf(line, sizeof(line), "%zu", rec.line);
        bool appended = copy_append(&buf, &len, &cap, line, strlen(line));
        for (size_t i = 0; appended && i < kind->column_count; i++) {
            buf[len++] = '\t';
            appended = copy_append(&buf, &len, &cap, rec.fields[i].base, rec.fields[i].len);
        }
        if (appended && strcmp(kind->kind, "locations") == 0) {
            /* The natural bin order key, so SQL sorts bins as the scanner does. */
            uint8_t key[WL_BIN_SORT_KEY_MAX(256)];
            wl_span_t code = rec.fields[1];
            size_t key_len = wl_bin_sort_key(code, key, sizeof(key));
            char hex[2 * sizeof(key) + 3] = "\\x"; /* bytea hex input; COPY escaping doubles the \\ */
            for (size_t k = 0; k < key_len && k < sizeof(key); k++)
                snprintf(hex + 2 + 2 * k, 3, "%02x", key[k]);
            buf[len++] = '\t';
            appended = copy_append(&buf, &len, &cap, hex, strlen(hex)) && key_len <= sizeof(key);
        }
        if (!appended) {
            rc = wl_error_set(err, WL_ENOMEM, NULL);
            break;
        }
        buf[len++] = '\n';
        if (PQputCopyData(conn, buf, (int)len) != 1) {
            rc = wl_db_fail(conn, NULL, err);
            break;
        }
        (*rows)++;
    }
    if (more < 0 && rc == 0) {
        /* The reader's message names the line ("line 7: unterminated quoted field"). */
        size_t line = 0;
        int skip = 0;
        if (sscanf(csv_err.message, "line %zu: %n", &line, &skip) == 1 && skip > 0)
            problem(r, line, "", csv_err.message + skip);
        else
            problem(r, 0, "", csv_err.message);
    }
    if (!header_seen && more >= 0 && rc == 0)
        problem(r, 1, "", "the file is empty: a header row is required");
    free(buf);
    wl_csv_reader_destroy(reader);

    bool abort_copy = rc != 0;
    if (PQputCopyEnd(conn, abort_copy ? "import aborted" : NULL) != 1 && rc == 0)
        rc = wl_db_fail(conn, NULL, err);
    while ((res = PQgetResult(conn)) != NULL) {
        if (PQresultStatus(res) != PGRES_COMMAND_OK && rc == 0 && !abort_copy)
            rc = wl_db_fail(conn, res, err);
        PQclear(res);
    }
    return rc;
}

/* Reports the rows that fail a SQL check, in line order. */
static int run_check(PGconn *conn, const char *sql, const char *org, reporter_t *r,
                     wl_error_t *err)
{
    PGresult *res = NULL;
    const char *params[] = {org};
    char ordered[1024];
    if ((size_t)snprintf(ordered, sizeof(ordered), "SELECT * FROM (%s) c ORDER BY 1", sql) >=
        sizeof(ordered))
        return wl_error_set(err, WL_EINTERNAL, "import check too long");
    int rc = wl_db_exec(conn, ordered, 1, params, &res, err);
    if (rc != 0)
        return rc;
    for (int i = 0; i < PQntuples(res); i++)
        problem(r, (size_t)strtoull(PQgetvalue(res, i, 0), NULL, 10), PQgetvalue(res, i, 1),
                PQgetvalue(res, i, 2));
    PQclear(res);
    return 0;
}

static int check_duplicates(PGconn *conn, const import_kind_t *kind, reporter_t *r,
                            wl_error_t *err)
{
    char sql[512];
    /* Every line after the first with the same key is reported, naming the first. */
    snprintf(sql, sizeof(sql),
             "SELECT line, first_line FROM (SELECT line, min(line) OVER (PARTITION BY %s)"
             " AS first_line FROM import_rows) d WHERE line <> first_line ORDER BY line",
             kind->key_columns);
    PGresult *res = NULL;
    int rc = wl_db_exec(conn, sql, 0, NULL, &res, err);
    if (rc != 0)
        return rc;
    for (int i = 0; i < PQntuples(res); i++) {
        char description[160];
        snprintf(description, sizeof(description), "duplicate key (%s): first on line %s",
                 kind->key_columns, PQgetvalue(res, i, 1));
        problem(r, (size_t)strtoull(PQgetvalue(res, i, 0), NULL, 10), "", description);
    }
    PQclear(res);
    return 0;
}

int wl_import_csv(PGconn *conn, int64_t org_id, const char *kind_name, FILE *in,
                  wl_import_report_fn report, void *report_data, size_t *rows, wl_error_t *err)
{
    const import_kind_t *kind = find_kind(kind_name);
    if (kind == NULL)
        return wl_error_set(err, WL_EINVAL, "unknown import kind '%s'", kind_name);
    reporter_t r = {report, report_data, 0};
    char org[24], ddl[512];
    snprintf(org, sizeof(org), "%" PRId64, org_id);
    snprintf(ddl, sizeof(ddl),
             "CREATE TEMP TABLE import_rows (line integer NOT NULL, %s) ON COMMIT DROP",
             kind->staging_columns);
    *rows = 0;
    int rc = wl_db_begin(conn, err);
    if (rc != 0)
        return rc;
    rc = wl_db_exec(conn, ddl, 0, NULL, NULL, err);
    if (rc == 0)
        rc = stage_rows(conn, kind, in, &r, rows, err);
    if (rc == 0)
        rc = check_duplicates(conn, kind, &r, err);
    for (size_t i = 0; rc == 0 && i < MAX_CHECKS && kind->checks[i] != NULL; i++)
        rc = run_check(conn, kind->checks[i], org, &r, err);
    if (rc == 0 && r.problems > 0)
        rc = WL_EINVAL;
    if (rc == 0 && kind->affected_skus != NULL) {
        char sql[1024];
        snprintf(sql, sizeof(sql),
                 "CREATE TEMP TABLE import_affected ON COMMIT DROP AS %s", kind->affected_skus);
        const char *params[] = {org};
        rc = wl_db_exec(conn, sql, strstr(sql, "$1") ? 1 : 0, params, NULL, err);
    }
    for (size_t i = 0; rc == 0 && i < MAX_UPSERTS && kind->upsert[i] != NULL; i++) {
        const char *params[] = {org};
        rc = wl_db_exec(conn, kind->upsert[i], 1, params, NULL, err);
    }
    if (rc == 0 && kind->affected_skus != NULL) {
        const char *params[] = {org};
        rc = wl_db_exec(conn,
                        "SELECT wl_refresh_availability($1, array(SELECT sku FROM import_affected))",
                        1, params, NULL, err);
    }
    if (rc == 0)
        rc = wl_db_commit(conn, err);
    if (rc != 0) {
        wl_db_rollback(conn);
        if (rc == WL_EINVAL && err->code == 0)
            wl_error_set(err, WL_EINVAL, "the file has %zu problem(s); nothing was imported",
                         r.problems);
        *rows = 0;
    }
    return rc;
}
