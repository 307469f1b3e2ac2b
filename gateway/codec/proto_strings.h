/*
 * The strings of a binary protobuf message, checked on the wire before
 * protobuf-c unpacks it. protobuf-c hands strings over as NUL-terminated C
 * strings without checking them, so a string holding a NUL byte would end
 * silently at that byte (a name "a\0b" stored as "a"), and one that is not
 * UTF-8 would reach the core as it came. Proto3 requires UTF-8 strings; we
 * also refuse NUL, which no string field can hold.
 */
#ifndef WALKLIST_GATEWAY_PROTO_STRINGS_H
#define WALKLIST_GATEWAY_PROTO_STRINGS_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "walklist/error.h"

/**
 * Checks every string field of the message of type desc encoded in data (nested
 * messages included, up to protobuf-c's own nesting limit). Returns 0, or WL_EINVAL
 * with a field violation per bad string, named as in the JSON form
 * ("products[2].name": lowerCamelCase, repeated fields indexed). Bytes that are not
 * a well-formed message are left for protobuf-c to refuse (0 is returned).
 *
 *     if (wl_proto_check_strings(desc, body, body_len, err) != 0)
 *         return WL_EINVAL; // err names the fields
 *     message = protobuf_c_message_unpack(desc, allocator, body_len, body);
 */
int wl_proto_check_strings(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len,
                           wl_error_t *err) WL_CHECK_RESULT;

#endif
