/*
 * The stock export's JSON text written piece by piece, without building a
 * document, in exactly the form the JSON codec gives ExportStockResponse
 * (compact, fields in order, strings escaped as jansson escapes them, bytes
 * that are not UTF-8 as U+FFFD), so the streamed body and the codec's agree
 * byte for byte. Pure functions: no I/O, no allocation.
 */
#ifndef WALKLIST_GATEWAY_EXPORT_JSON_H
#define WALKLIST_GATEWAY_EXPORT_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "walklist/core.h"

/** The body's first bytes, before the first item. */
#define WL_EXPORT_JSON_OPEN "{\"items\":["

/** Most bytes wl_export_json_item() writes for item (SIZE_MAX when it could not fit). */
size_t wl_export_json_item_bound(const wl_export_item_t *item);

/**
 * Writes {"sku":..,"qty":..,"location":..|null} (a removed item of a delta:
 * ..,"removed":true}) at out, which has room for
 * wl_export_json_item_bound(item) bytes; returns the end of what it wrote
 * (nothing is NUL-terminated).
 */
char *wl_export_json_item(char *out, const wl_export_item_t *item);

/** Room wl_export_json_close needs, for a cursor of up to 160 bytes. */
#define WL_EXPORT_JSON_CLOSE_MAX 256

/**
 * Writes the body's last bytes, "],\"generatedAt\":\"" + the time +
 * "\",\"cursor\":\"" + cursor + "\"}", into buf (WL_EXPORT_JSON_CLOSE_MAX
 * bytes), NUL-terminated; returns their length. generated_ms is milliseconds
 * since the epoch, in years 1 to 9999; the cursor is base64url (no escapes).
 */
size_t wl_export_json_close(int64_t generated_ms, const char *cursor, char *buf, size_t size);

#endif
