/*
 * Reads the plain JSON texts most request bodies are (strings without escapes, integers of at
 * most 18 digits, objects, arrays, true, false, null, up to 32 levels deep) into jansson values
 * without jansson's reader, which goes through every byte one call at a time (a tenth of
 * walklistd's CPU per walk list went to reading its 450-byte body).
 *
 * Any other text, valid or not, is left to jansson: NULL then means "not plain", never
 * "invalid", and the caller reads the text with json_loadb, which accepts it or words the
 * error. What is read here is exactly what json_loadb(JSON_REJECT_DUPLICATES |
 * JSON_DECODE_ANY) makes of the same text: the same types, the same keys in the same order,
 * strings and keys checked as UTF-8 by jansson itself; a repeated key is left to jansson too.
 */
#ifndef WALKLIST_GATEWAY_JSON_PLAIN_H
#define WALKLIST_GATEWAY_JSON_PLAIN_H

#include <jansson.h>
#include <stddef.h>

/** The value of text[0..len) (a new reference); NULL when it is not plain or memory ran out. */
json_t *wl_json_read_plain(const char *text, size_t len);

#endif
