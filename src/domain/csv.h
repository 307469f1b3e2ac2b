/*
 * Streaming RFC 4180 CSV reader for imports. It reads a FILE* in fixed-size
 * chunks and holds one record at a time, so memory stays bounded (about
 * 1 MiB at most) however many rows the file has. Fields are raw bytes: UTF-8
 * and every other content rule belong to the validators.
 */
#ifndef WALKLIST_DOMAIN_CSV_H
#define WALKLIST_DOMAIN_CSV_H

#include <stddef.h>
#include <stdio.h>

#include "walklist/error.h"
#include "walklist/span.h"

#define WL_CSV_RECORD_MAX 1048576 /* bytes of one record as written, line end excluded */
#define WL_CSV_FIELDS_MAX 64

typedef struct wl_csv_reader wl_csv_reader_t;

typedef struct {
    size_t line;             /* 1-based physical line where the record starts */
    size_t field_count;      /* 1 to WL_CSV_FIELDS_MAX */
    const wl_span_t *fields; /* unquoted, unescaped; valid until the next wl_csv_next */
} wl_csv_record_t;

/**
 * Creates a reader of in, which stays the caller's: it must stay open while
 * the reader is used, and wl_csv_reader_destroy does not close it. Returns 0,
 * or WL_ENOMEM with *out NULL.
 */
int wl_csv_reader_create(FILE *in, wl_csv_reader_t **out) WL_CHECK_RESULT;

/** Frees the reader (NULL is fine). Spans of its last record become invalid. */
void wl_csv_reader_destroy(wl_csv_reader_t *r);

/**
 * Reads the next record into *rec. Returns 1 with a record, 0 at the end of
 * input, or an error with err's message naming a line:
 *  - WL_EINVAL: "line 7: unterminated quoted field" (the line where the
 *    quote opened), "line 3: unexpected character after closing quote",
 *    "line 4: quote in unquoted field" (the line of the offending character),
 *    "line 9: record longer than 1048576 bytes", "line 2: more than 64 fields"
 *    (the line where the record starts);
 *  - WL_EINTERNAL: "line 5: read error: ..." when the FILE* reports an error;
 *  - WL_ENOMEM.
 * Errors are final: every later call returns the same error again.
 *
 * Accepted input: LF or CRLF line ends (a CR not followed by LF or by the end
 * of input is an ordinary byte), "" for a quote inside quoted fields, commas
 * and line breaks inside quoted fields (kept as written), a last record
 * without line end, one UTF-8 BOM at the very start (skipped), empty fields,
 * NUL bytes. Empty lines are skipped and make no record; a line with only a
 * comma is a record of two empty fields, and `""` one of one empty field.
 */
int wl_csv_next(wl_csv_reader_t *r, wl_csv_record_t *rec, wl_error_t *err) WL_CHECK_RESULT;

#endif
