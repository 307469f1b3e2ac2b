/*
 * The REST exchanges a test program makes, recorded for the check of every answer against the
 * API description (e2e.zz_openapi_bodies, tests/connect-client/openapi_bodies.mjs).
 *
 * Every exchange of tests/support/http_client.c whose request line names a /api/v1 target is
 * written as one JSON line into EXCHANGE_LOG_DIR/<test program>.jsonl (or into the directory
 * $WALKLIST_TEST_EXCHANGES): method, target (api_key values replaced by REDACTED), status, the
 * response's header lines, and the body as the client would read it (de-chunked, gzip inflated);
 * the secret of anything shaped like a key, anywhere in the record, is overwritten with 'x'.
 * The file is emptied by the first exchange of each run of the program, so it holds that
 * program's last run only. Bodies over EXCHANGE_LOG_WHOLE_BYTES are recorded with every JSON
 * array cut to its first EXCHANGE_LOG_ARRAY_ITEMS entries ("truncated"), and left out ("omitted",
 * with their size) when that is not JSON or still too large.
 */
#ifndef WALKLIST_EXCHANGE_LOG_H
#define WALKLIST_EXCHANGE_LOG_H

#include <stdbool.h>
#include <stddef.h>

#include "http_client.h"

#define EXCHANGE_LOG_DIR         WL_TEST_OUTPUT_DIR "/rest-exchanges"
#define EXCHANGE_LOG_WHOLE_BYTES (1024 * 1024)
#define EXCHANGE_LOG_ARRAY_ITEMS 1000
#define EXCHANGE_LOG_MAX_BYTES   (4 * 1024 * 1024)

/**
 * Records one exchange when request (the bytes sent) starts with a request line for /api/v1.
 * complete: the whole response arrived (its last chunk, or Content-Length bytes); raw: the
 * request was written by the test byte for byte (http_raw) rather than by http_request.
 * Exits the test when the record cannot be written.
 */
void exchange_log_record(const char *request, size_t request_len, const http_response_t *res,
                         bool complete, bool raw);

#endif
