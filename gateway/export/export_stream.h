/*
 * GET /api/v1/stock-export over HTTP (one consistent snapshot, ordered by
 * SKU): conditional on the organization's export version, and streamed from
 * the core's export cursor through the JSON encoder (and gzip, when the client
 * takes it) into a chunked response, so memory per export is a few buffers
 * however many SKUs there are.
 *
 * - ETag: "<org_id>-<version>" for the plain body, "<org_id>-<version>-gzip"
 *   for the gzip-coded one (RFC 9110 section 8.8.3: different bytes, different
 *   strong tags). It changes exactly when an exported value changes; it does
 *   not follow generatedAt, which is the snapshot's time of each answer.
 * - If-None-Match matching the ETag (weak comparison, "*", lists): 304 with
 *   ETag, Vary and Cache-Control, after reading only the version.
 * - Cache-Control: no-cache (store, but revalidate), Vary: Accept-Encoding.
 * - The body is byte for byte what the JSON codec makes of ExportStockResponse:
 *   {"items":[{"sku":..,"qty":..,"location":..|null},..],"generatedAt":".."}.
 * - A database failure before the first bytes is an ordinary error answer;
 *   after them the connection is cut, so the client sees a truncated chunked
 *   body and never a complete-looking partial document.
 */
#ifndef WALKLIST_GATEWAY_EXPORT_STREAM_H
#define WALKLIST_GATEWAY_EXPORT_STREAM_H

#include "http/exchange.h"
#include "export/export_cache.h"
#include "walklist/core.h"

/**
 * Before the export's admission is decided (ex->admission pending): when the answer would read
 * the organization's version in a statement of its own (a conditional request, or a body that
 * may be cached, and no version in cache), asks the admission to read it in its group
 * (wl_admission_read_export_version). Returns what wl_export_stream_respond is then given
 * (arena memory), or NULL.
 */
void *wl_export_stream_admit(wl_core_t *core, wl_export_cache_t *cache, wl_exchange_t *ex);

/** Answers an authenticated export request (ex->principal is set), from cache when it holds
 * the organization's current export (cache may be NULL: none); admitted is
 * wl_export_stream_admit's answer. */
void wl_export_stream_respond(wl_core_t *core, wl_export_cache_t *cache, wl_exchange_t *ex,
                              void *admitted);

#endif
