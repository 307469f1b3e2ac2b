/*
 * The proto3 JSON mapping for protobuf-c messages, driven by their descriptors:
 * used by the REST gateway and the Connect JSON transport to turn request
 * bodies into messages and reply messages into JSON.
 *
 * Our choices within the mapping, the same for the public REST API and for
 * Connect JSON:
 * - Field names are lowerCamelCase, derived from the proto field name as
 *   protoc does; decoding also accepts the proto field name.
 * - Encoding emits every field (EmitUnpopulated) in field-number order:
 *   scalars with their defaults, empty repeated fields as [], empty maps as
 *   {}, unset message fields (wrappers and Timestamp too) as null. Of a oneof
 *   only the set member appears.
 * - Integers of every width are JSON numbers; uint64 values above INT64_MAX
 *   are decimal strings. On input, integers may also be decimal strings or
 *   reals without a fractional part. A JSON number beyond the int64 range is
 *   rejected by the parser as malformed: send it as a string.
 * - Enums are value names (unknown numbers as numbers), bytes are standard
 *   base64 (input may be URL-safe, padding optional), float and double may
 *   be "NaN", "Infinity" and "-Infinity" (on input also a number in a
 *   string). Reals are printed by jansson with 17 significant digits, which
 *   reads back exactly but is not the shortest form (0.1 is
 *   0.10000000000000001).
 * - google.protobuf.{String,Bytes,Bool,Int32,Int64,UInt32,UInt64,Float,Double}Value
 *   are their bare value; google.protobuf.Timestamp is an RFC 3339 string,
 *   encoded in UTC with 3, 6 or 9 fractional digits.
 * - Map fields (protobuf-c sees them as repeated *Entry messages) are JSON
 *   objects. Integer and bool keys must be in canonical form ("5", not "05";
 *   "true"), so that distinct keys are distinct JSON keys.
 * - Messages nest at most WL_JSON_MAX_DEPTH levels on input.
 * - The top-level message is always a JSON object, also when it is itself a
 *   well-known type (only fields of those types use the bare form).
 */
#ifndef WALKLIST_GATEWAY_JSON_CODEC_H
#define WALKLIST_GATEWAY_JSON_CODEC_H

#include <stddef.h>

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>

#include "walklist/arena.h"
#include "walklist/error.h"

/** Deepest message nesting accepted on input; the top-level message is level 0. */
#define WL_JSON_MAX_DEPTH 32

/**
 * Parses JSON text (len bytes, not NUL-terminated) and decodes it into a new
 * message of type desc allocated from arena.
 *
 * Returns 0 and sets *out on success; the message and everything it points to
 * live in the arena until wl_arena_dispose(). Otherwise sets *out to NULL and
 * returns a negative code recorded in err:
 * - WL_EINVAL with message "malformed JSON: <reason> (line L, column C)" when
 *   the text does not parse (also: invalid UTF-8, \u0000, duplicate keys,
 *   trailing garbage), or "the JSON value must be an object";
 * - WL_EINVAL with one field violation per problem otherwise, e.g.
 *   {"items[2].foo", "unknown field"}, {"pageSize", "must be an integer"};
 *   decoding goes on after a violation so that all of them are reported;
 * - WL_ENOMEM when the arena is exhausted (err may already hold WL_EINVAL
 *   from an earlier violation, as wl_error_t keeps the first error).
 *
 * Example:
 *     ProtobufCMessage *msg;
 *     int rc = wl_json_decode(&walklist__v1__create_locate_list_request__descriptor,
 *                             body.base, body.len, &arena, &msg, &err);
 *     if (rc != 0)
 *         return rc; // err holds the message and violations for the error body
 *     const Walklist__V1__CreateLocateListRequest *req = (const void *)msg;
 */
int wl_json_decode(const ProtobufCMessageDescriptor *desc, const char *text, size_t len,
                   wl_arena_t *arena, ProtobufCMessage **out, wl_error_t *err) WL_CHECK_RESULT;

/**
 * Decodes an already parsed JSON value, which must be an object, into a new
 * message of type desc allocated from arena. Results and errors as for
 * wl_json_decode(). The value is only read; the caller keeps its reference,
 * and no part of the message points into it.
 */
int wl_json_decode_value(const ProtobufCMessageDescriptor *desc, const json_t *value,
                         wl_arena_t *arena, ProtobufCMessage **out,
                         wl_error_t *err) WL_CHECK_RESULT;

/**
 * Encodes a message as a new JSON object whose keys are in field-number
 * order. The caller owns the reference (json_decref). NULL when out of memory.
 * A Timestamp outside 0001-01-01..9999-12-31, or with nanos outside
 * 0..999999999, is encoded as null. Strings that are not valid UTF-8 have
 * each invalid byte replaced by U+FFFD.
 */
json_t *wl_json_encode(const ProtobufCMessage *msg);

/**
 * Encodes a message as compact JSON text in the arena: NUL-terminated, valid
 * until wl_arena_dispose(), *len (if len is not NULL) set to its length
 * without the NUL. NULL when out of memory.
 */
char *wl_json_encode_text(const ProtobufCMessage *msg, wl_arena_t *arena, size_t *len);

/**
 * Writes the proto3 JSON name of a proto field name into buf, NUL-terminated
 * and truncated to size - 1 bytes (nothing is written when size is 0). Like
 * protoc's ToJsonName, each '_' is dropped and the character after it
 * upper-cased: "codes_count" -> "codesCount", "x_2y" -> "x2y".
 */
void wl_json_field_name(const char *proto_name, char *buf, size_t size);

#endif
