/* CSV records are cut out of a byte stream here, one record in memory at a time. */
#include "domain/csv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define READ_CHUNK         65536
#define RECORD_INITIAL_CAP 4096

struct wl_csv_reader {
    FILE *in;
    size_t line;        /* physical line of the next unread byte */
    size_t record_line; /* line where the record being read starts */
    bool bom_checked;
    bool input_ended; /* fread returned nothing: end of file or error */
    bool read_failed;
    int read_errno;
    int failed; /* sticky: once set, every call returns it */
    char failure[160];
    char *record; /* field contents of the current record, back to back */
    size_t record_len;
    size_t record_cap;
    size_t field_start[WL_CSV_FIELDS_MAX];
    size_t field_len[WL_CSV_FIELDS_MAX];
    wl_span_t fields[WL_CSV_FIELDS_MAX];
    size_t in_pos;
    size_t in_len;
    unsigned char in_buf[READ_CHUNK];
};

int wl_csv_reader_create(FILE *in, wl_csv_reader_t **out)
{
    *out = NULL;
    wl_csv_reader_t *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return WL_ENOMEM;
    r->record = malloc(RECORD_INITIAL_CAP);
    if (r->record == NULL) {
        free(r);
        return WL_ENOMEM;
    }
    r->record_cap = RECORD_INITIAL_CAP;
    r->in = in;
    r->line = 1;
    *out = r;
    return 0;
}

void wl_csv_reader_destroy(wl_csv_reader_t *r)
{
    if (r == NULL)
        return;
    free(r->record);
    free(r);
}

static int fail(wl_csv_reader_t *r, int code, const char *fmt, ...) WL_PRINTF(3, 4);

static int fail(wl_csv_reader_t *r, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->failure, sizeof(r->failure), fmt, ap);
    va_end(ap);
    r->failed = code;
    return code;
}

/* Makes at least need unread bytes available unless the input has ended. */
static void fill(wl_csv_reader_t *r, size_t need)
{
    if (r->in_len - r->in_pos >= need || r->input_ended)
        return;
    memmove(r->in_buf, r->in_buf + r->in_pos, r->in_len - r->in_pos);
    r->in_len -= r->in_pos;
    r->in_pos = 0;
    while (r->in_len < need && !r->input_ended) {
        size_t n = fread(r->in_buf + r->in_len, 1, READ_CHUNK - r->in_len, r->in);
        r->in_len += n;
        if (n == 0) {
            r->input_ended = true;
            if (ferror(r->in)) {
                r->read_failed = true;
                r->read_errno = errno;
            }
        }
    }
}

/* The unread byte at offset k, or -1 past the end of input. */
static int peek_at(wl_csv_reader_t *r, size_t k)
{
    fill(r, k + 1);
    return r->in_pos + k < r->in_len ? r->in_buf[r->in_pos + k] : -1;
}

static inline int peek(wl_csv_reader_t *r)
{
    return r->in_pos < r->in_len ? r->in_buf[r->in_pos] : peek_at(r, 0);
}

/* A lone CR is data; only CR LF, or CR as the last byte of input, ends a line. */
static bool at_record_end(wl_csv_reader_t *r)
{
    int c = peek(r);
    if (c < 0 || c == '\n')
        return true;
    if (c != '\r')
        return false;
    c = peek_at(r, 1);
    return c < 0 || c == '\n';
}

static bool take_line_end(wl_csv_reader_t *r)
{
    int c = peek(r);
    if (c == '\r' && at_record_end(r)) {
        r->in_pos++;
        c = peek(r);
        if (c < 0)
            return true;
    }
    if (c != '\n')
        return false;
    r->in_pos++;
    r->line++;
    return true;
}

/* Counts one byte of the record as written; quote_line is 0 outside quotes. */
static int count_raw(wl_csv_reader_t *r, size_t *raw, size_t quote_line)
{
    if (++*raw <= WL_CSV_RECORD_MAX)
        return 0;
    if (quote_line != 0)
        return fail(r, WL_EINVAL,
                    "line %zu: record longer than %d bytes (inside the quoted field opened on "
                    "line %zu)",
                    r->record_line, WL_CSV_RECORD_MAX, quote_line);
    return fail(r, WL_EINVAL, "line %zu: record longer than %d bytes", r->record_line,
                WL_CSV_RECORD_MAX);
}

static int append(wl_csv_reader_t *r, unsigned char b)
{
    if (r->record_len == r->record_cap) {
        /* Contents never exceed the raw bytes, so the buffer stops at WL_CSV_RECORD_MAX. */
        size_t cap = r->record_cap * 2;
        if (cap > WL_CSV_RECORD_MAX)
            cap = WL_CSV_RECORD_MAX;
        char *grown = realloc(r->record, cap);
        if (grown == NULL)
            return fail(r, WL_ENOMEM, "line %zu: out of memory", r->record_line);
        r->record = grown;
        r->record_cap = cap;
    }
    r->record[r->record_len++] = (char)b;
    return 0;
}

/* Reads up to (not including) the ',' or line end after the field. */
static int read_unquoted(wl_csv_reader_t *r, size_t *raw)
{
    for (;;) {
        int c = peek(r);
        if (c < 0 || c == ',' || c == '\n' || (c == '\r' && at_record_end(r)))
            return 0;
        if (c == '"')
            return fail(r, WL_EINVAL, "line %zu: quote in unquoted field", r->line);
        r->in_pos++;
        int rc = count_raw(r, raw, 0);
        if (rc == 0)
            rc = append(r, (unsigned char)c);
        if (rc != 0)
            return rc;
    }
}

/* Reads from the opening quote up to (not including) the ',' or line end after the closing one. */
static int read_quoted(wl_csv_reader_t *r, size_t *raw)
{
    size_t quote_line = r->line;
    r->in_pos++;
    int rc = count_raw(r, raw, quote_line);
    if (rc != 0)
        return rc;
    for (;;) {
        int c = peek(r);
        if (c < 0)
            return fail(r, WL_EINVAL, "line %zu: unterminated quoted field", quote_line);
        r->in_pos++;
        rc = count_raw(r, raw, quote_line);
        if (rc != 0)
            return rc;
        if (c == '"') {
            if (peek(r) != '"')
                break;
            r->in_pos++;
            rc = count_raw(r, raw, quote_line);
            if (rc != 0)
                return rc;
        } else if (c == '\n') {
            r->line++;
        }
        rc = append(r, (unsigned char)c);
        if (rc != 0)
            return rc;
    }
    int c = peek(r);
    if (c == ',' || at_record_end(r))
        return 0;
    return fail(r, WL_EINVAL, "line %zu: unexpected character after closing quote", r->line);
}

/* Returns the field count of the next record, 0 at the end of input, or an error. */
static int read_record(wl_csv_reader_t *r)
{
    if (!r->bom_checked) {
        r->bom_checked = true;
        fill(r, 3);
        if (r->in_len - r->in_pos >= 3 && memcmp(r->in_buf + r->in_pos, "\xEF\xBB\xBF", 3) == 0)
            r->in_pos += 3;
    }
    while (take_line_end(r))
        ;
    if (peek(r) < 0)
        return 0;

    r->record_line = r->line;
    r->record_len = 0;
    size_t raw = 0;
    int count = 0;
    for (;;) {
        if (count == WL_CSV_FIELDS_MAX)
            return fail(r, WL_EINVAL, "line %zu: more than %d fields", r->record_line,
                        WL_CSV_FIELDS_MAX);
        r->field_start[count] = r->record_len;
        int rc = peek(r) == '"' ? read_quoted(r, &raw) : read_unquoted(r, &raw);
        if (rc != 0)
            return rc;
        r->field_len[count] = r->record_len - r->field_start[count];
        count++;
        if (peek(r) != ',')
            break;
        r->in_pos++;
        rc = count_raw(r, &raw, 0);
        if (rc != 0)
            return rc;
    }
    take_line_end(r);
    return count;
}

int wl_csv_next(wl_csv_reader_t *r, wl_csv_record_t *rec, wl_error_t *err)
{
    int rc = r->failed != 0 ? r->failed : read_record(r);
    /* A read error looks like the end of input to the parser, so whatever it
     * made of the bytes before it (a short record, a missing quote) is not trusted. */
    if (r->read_failed && r->failed != WL_EINTERNAL)
        rc = fail(r, WL_EINTERNAL, "line %zu: read error: %s", r->line, strerror(r->read_errno));
    if (rc < 0) {
        wl_error_set(err, rc, "%s", r->failure);
        return rc;
    }
    if (rc == 0)
        return 0;
    for (int i = 0; i < rc; i++)
        r->fields[i] = wl_span(r->record + r->field_start[i], r->field_len[i]);
    rec->line = r->record_line;
    rec->field_count = (size_t)rc;
    rec->fields = r->fields;
    return 1;
}
