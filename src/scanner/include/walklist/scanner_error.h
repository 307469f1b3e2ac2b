/*
 * The server's error answers, read as they stream in: every non-200 answer carries the Google
 * API error JSON, {"error":{"code":404,"status":"NOT_FOUND","message":"..."}}, whose
 * status is the gRPC code name. A small scanner picks "status" and "message" out of the "error"
 * object in any order, from fragments of any size, and maps the status (else the HTTP status) to a
 * WL_SCANNER_E... code. Pure C11: no I/O, no heap, no stdio.
 */
#ifndef WALKLIST_SCANNER_ERROR_H
#define WALKLIST_SCANNER_ERROR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "walklist/scanner_status.h"

#define WL_SCANNER_ERROR_STATUS_SIZE                                                               \
    24 /* the longest gRPC code name, FAILED_PRECONDITION, fits                                    \
        */
#define WL_SCANNER_ERROR_MESSAGE_SIZE 96

/** What the server said; caller-allocated. */
typedef struct {
    int http_status;                             /* 0 when no answer was read */
    uint32_t retry_after;                        /* seconds, from Retry-After; 0 when absent */
    char status[WL_SCANNER_ERROR_STATUS_SIZE];   /* "NOT_FOUND", ...; "" when the body has none */
    char message[WL_SCANNER_ERROR_MESSAGE_SIZE]; /* for people, cut to fit; "" when none */
    /* Optional, set by the caller before use: the start of the raw body is copied here
     * (NUL-terminated, cut to body_size - 1), e.g. for a log. NULL: not kept. */
    char *body;
    size_t body_size;
    size_t body_len;
    /* Private: the JSON scanner's state. */
    uint32_t containers; /* bit n: the container at depth n+1 is an object */
    uint8_t depth, flags, target, key_len, hex_left;
    char key[8];
    size_t target_len;
} wl_scanner_error_t;

/** Prepares err for an answer with this HTTP status. body and body_size are kept. */
void wl_scanner_error_init(wl_scanner_error_t *err, int http_status);

/** Scans the next fragment of the error body. */
void wl_scanner_error_feed(wl_scanner_error_t *err, const uint8_t *data, size_t len);

/**
 * The result code of the answer: the code named by "status" when it is one we know, else the
 * code its HTTP status stands for alone (401, 403, 404, 405, 429, 500, 503, 504, and 400 for
 * INVALID_ARGUMENT), else WL_SCANNER_ESERVER.
 */
int wl_scanner_error_code(const wl_scanner_error_t *err);

#endif
