/*
 * A deliberately small HTTP/1.1 client for end-to-end tests: one request per
 * connection over loopback, raw bytes out, status, headers and (de-chunked)
 * body in. Raw on purpose, so tests can send malformed requests too.
 */
#ifndef WALKLIST_HTTP_CLIENT_H
#define WALKLIST_HTTP_CLIENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int status; /* 0 when the exchange failed */
    char *head; /* status line and headers, NUL-terminated */
    char *body; /* NUL-terminated */
    size_t body_len;
    json_t *json; /* parsed body when it is JSON, else NULL */
} http_response_t;

/**
 * Sends method target with extra header lines (each "Name: value\r\n", may be
 * NULL) and an optional body (Content-Length added when body is not NULL).
 */
int http_request(uint16_t port, const char *method, const char *target, const char *headers,
                 const char *body, size_t body_len, http_response_t *out);

/** Sends raw bytes as the whole request and reads the answer. */
int http_raw(uint16_t port, const char *request, size_t len, http_response_t *out);

/** Value of a response header (case-insensitive), copied into buf; NULL when absent. */
const char *http_header(const http_response_t *res, const char *name, char *buf, size_t size);

void http_response_free(http_response_t *res);

/** Percent-encodes s for a query component into buf (RFC 3986 unreserved kept). */
const char *http_escape(const char *s, char *buf, size_t size);

#endif
