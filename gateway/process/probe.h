/*
 * walklistd --probe URL: a health check by the server's own binary, so that a container image
 * needs no curl. One HTTP/1.1 GET over plain TCP; the answer's status line decides.
 */
#ifndef WALKLIST_GATEWAY_PROBE_H
#define WALKLIST_GATEWAY_PROBE_H

#include <stdio.h>

/**
 * GETs url, http://HOST[:PORT][/PATH] (HOST a name, an IPv4 address or [v6]; PORT 80 and PATH
 * "/" when left out), waiting at most timeout_ms for each of connect, send and receive.
 * Returns 0 when the answer's status is 2xx; 1 otherwise, with one line saying why on why
 * (the status, or what failed: an https URL is refused, TLS listeners are probed on
 * --ops-listen).
 *
 *     return wl_probe("http://127.0.0.1:8080/readyz", 5000, stderr);
 */
int wl_probe(const char *url, int timeout_ms, FILE *why);

#endif
