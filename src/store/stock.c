/* Reading the stock export from one snapshot, batch by batch, happens here. */
#include "store/stock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"

int wl_stock_export_begin(wl_stock_export_t *export, PGconn *conn, int64_t org_id, int64_t since,
                          wl_error_t *err)
{
    memset(export, 0, sizeof(*export));
    export->conn = conn;
    export->org_id = org_id;
    export->since = since;
    int rc =
        wl_db_exec(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL, NULL, err);
    if (rc != 0)
        return rc;
    char org[24];
    snprintf(org, sizeof(org), "%lld", (long long)org_id);
    const char *params[] = {org};
    PGresult *res = NULL;
    /* The first statement takes the snapshot: the version it reads is the version of the
     * rows read later, and its clock is the snapshot's time. */
    rc = wl_db_exec_hot(conn,
                        "SELECT coalesce(v.version, 0), coalesce(v.history_from, 0),"
                        " floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
                        " FROM (SELECT 1) one"
                        " LEFT JOIN export_versions v ON v.org_id = $1",
                        1, params, &res, err);
    if (rc != 0) {
        wl_stock_export_end(export);
        return rc;
    }
    export->version = wl_db_int64(res, 0, 0);
    int64_t history_from = wl_db_int64(res, 0, 1);
    export->generated_ms = wl_db_int64(res, 0, 2);
    PQclear(res);
    /* Nothing changed since the cursor: an empty delta, whatever was pruned before it. */
    if (since >= 0 && since == export->version)
        export->finished = true;
    else if (since >= 0 && (since < history_from || since > export->version)) {
        wl_stock_export_end(export);
        return wl_error_set(err, WL_EHISTORY,
                            "the changes since this cursor are no longer kept: export in full "
                            "(without since) and continue from its cursor");
    }
    return 0;
}

/* The version comes in the work's bigint column, list_created_ms (wl_admit.sql says why). */
#define VERSION_COLUMN 2

static int read_version(wl_admit_work_t *base, const PGresult *res, int row, int column)
{
    wl_stock_version_work_t *work = (wl_stock_version_work_t *)base;
    work->version = wl_db_int64(res, row, column + VERSION_COLUMN);
    return 0;
}

void wl_stock_version_work(wl_stock_version_work_t *work, int64_t org_id)
{
    memset(work, 0, sizeof(*work));
    work->work =
        (wl_admit_work_t){.kind = "version", .org_id = org_id, .read_answer = read_version};
}

wl_stock_version_work_t *wl_stock_version_work_of(wl_admit_work_t *work)
{
    return work != NULL && work->read_answer == read_version ? (wl_stock_version_work_t *)work
                                                             : NULL;
}

int wl_stock_export_version(PGconn *conn, int64_t org_id, int64_t *version, wl_error_t *err)
{
    char org[24];
    snprintf(org, sizeof(org), "%lld", (long long)org_id);
    const char *params[] = {org};
    PGresult *res = NULL;
    int rc = wl_db_exec_hot(
        conn, "SELECT coalesce((SELECT version FROM export_versions WHERE org_id = $1), 0)", 1,
        params, &res, err);
    if (rc != 0)
        return rc;
    *version = wl_db_int64(res, 0, 0);
    PQclear(res);
    return 0;
}

/* Starts the ordered read. The org id is a number formatted here: COPY takes no parameters. */
static int start_copy(wl_stock_export_t *export, wl_error_t *err)
{
    char sql[512];
    /* The primary key (org_id, sku) delivers the rows in order, without a sort. */
    if (export->since < 0)
        snprintf(sql, sizeof(sql),
                 "COPY (SELECT sku, qty, location FROM stock_availability WHERE org_id = %lld"
                 " ORDER BY sku) TO STDOUT",
                 (long long)export->org_id);
    /* The delta reads the history after since (a range of its primary key) and each changed
     * SKU's row by key: its cost follows the changes, not the catalogue. */
    else
        snprintf(sql, sizeof(sql),
                 "COPY (SELECT c.sku, coalesce(sa.qty, 0), sa.location, sa.sku IS NULL"
                 " FROM (SELECT DISTINCT sku FROM export_changes"
                 " WHERE org_id = %lld AND version > %lld) c"
                 " LEFT JOIN stock_availability sa ON sa.org_id = %lld AND sa.sku = c.sku"
                 " ORDER BY c.sku) TO STDOUT",
                 (long long)export->org_id, (long long)export->since, (long long)export->org_id);
    int rc = wl_db_copy_start(export->conn, sql, err);
    export->copying = rc == 0;
    return rc;
}

/*
 * Decodes one field of COPY's text format in place: backslash escapes (\\, \t, \n, \r, \b, \f,
 * \v, octal \ooo and hex \xhh) become their bytes. Returns the end of the decoded text.
 */
static char *decode_field(char *start, char *end)
{
    char *out = start;
    for (char *p = start; p < end; p++) {
        if (*p != '\\' || p + 1 == end) {
            *out++ = *p;
            continue;
        }
        char c = *++p;
        switch (c) {
        case 'b':
            *out++ = '\b';
            break;
        case 'f':
            *out++ = '\f';
            break;
        case 'n':
            *out++ = '\n';
            break;
        case 'r':
            *out++ = '\r';
            break;
        case 't':
            *out++ = '\t';
            break;
        case 'v':
            *out++ = '\v';
            break;
        case 'x': {
            int value = 0, digits = 0;
            while (
                digits < 2 && p + 1 < end &&
                ((p[1] >= '0' && p[1] <= '9') || ((p[1] | 0x20) >= 'a' && (p[1] | 0x20) <= 'f'))) {
                char h = *++p;
                value = value * 16 + (h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
                digits++;
            }
            *out++ = digits ? (char)value : 'x';
            break;
        }
        default:
            if (c >= '0' && c <= '7') {
                int value = c - '0';
                for (int digits = 1; digits < 3 && p + 1 < end && p[1] >= '0' && p[1] <= '7';
                     digits++)
                    value = value * 8 + (*++p - '0');
                *out++ = (char)value;
            } else {
                *out++ = c;
            }
        }
    }
    return out;
}

/* Splits "sku\tqty\tlocation\n" (a delta's: "\tremoved" before the newline) into the row,
 * decoding in place. */
static int parse_line(char *line, int len, bool delta, wl_export_row_t *row, wl_error_t *err)
{
    char *end = line + len;
    if (len > 0 && end[-1] == '\n')
        end--;
    row->removed = false;
    if (delta) {
        if (end - line < 2 || end[-2] != '\t')
            return wl_error_set(err, WL_EINTERNAL, "unexpected export row");
        row->removed = end[-1] == 't';
        end -= 2;
    }
    char *tab1 = memchr(line, '\t', (size_t)(end - line));
    char *tab2 = tab1 ? memchr(tab1 + 1, '\t', (size_t)(end - tab1 - 1)) : NULL;
    if (tab2 == NULL)
        return wl_error_set(err, WL_EINTERNAL, "unexpected export row");
    *decode_field(line, tab1) = '\0';
    row->sku = line;
    int64_t qty = 0;
    bool negative = tab1[1] == '-';
    for (char *p = tab1 + 1 + negative; p < tab2; p++)
        qty = qty * 10 + (*p - '0');
    row->qty = negative ? -qty : qty;
    char *location = tab2 + 1;
    if (end - location == 2 && location[0] == '\\' && location[1] == 'N') {
        row->location = NULL;
    } else {
        *decode_field(location, end) = '\0';
        row->location = location;
    }
    return 0;
}

/* After the last row: the COPY's own result tells whether it really completed. */
static int finish_copy(wl_stock_export_t *export, wl_error_t *err)
{
    int rc = 0;
    PGresult *res;
    export->copying = false;
    while ((res = PQgetResult(export->conn)) != NULL) {
        if (PQresultStatus(res) != PGRES_COMMAND_OK && rc == 0)
            rc = wl_db_fail(export->conn, res, err);
        PQclear(res);
    }
    return rc;
}

int wl_stock_export_next(wl_stock_export_t *export, wl_export_row_t *row, wl_error_t *err)
{
    if (export->finished)
        return 0;
    if (export->line != NULL) {
        PQfreemem(export->line);
        export->line = NULL;
    }
    if (!export->copying) {
        int rc = start_copy(export, err);
        if (rc != 0)
            return rc;
    }
    int len = wl_db_copy_row(export->conn, &export->line, err);
    if (len == -1) {
        export->finished = true;
        return finish_copy(export, err);
    }
    if (len < 0) {
        export->copying = false;
        return err->code;
    }
    return parse_line(export->line, len, export->since >= 0, row, err) == 0 ? 1 : err->code;
}

void wl_stock_export_end(wl_stock_export_t *export)
{
    if (export->line != NULL)
        PQfreemem(export->line);
    export->line = NULL;
    export->finished = true;
    /* A COPY abandoned half way (the client went away): its connection is shut rather than
     * cancelled and drained, which could wait on a server that stopped answering; the pool
     * makes a new one. Otherwise, read only: rolling back ends the transaction. */
    if (export->conn != NULL && export->copying)
        wl_db_abandon(export->conn);
    else if (export->conn != NULL)
        wl_db_rollback(export->conn);
    export->copying = false;
    export->conn = NULL;
}
