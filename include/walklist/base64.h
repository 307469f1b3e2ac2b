/*
 * Base64 (RFC 4648), the one implementation for every use: list ids and page tokens
 * (URL-safe alphabet, unpadded), protobuf JSON bytes fields (standard alphabet, padded, and
 * either alphabet accepted when reading), Connect error details (standard, unpadded).
 */
#ifndef WALKLIST_BASE64_H
#define WALKLIST_BASE64_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    WL_BASE64_STANDARD, /* A-Z a-z 0-9 + / */
    WL_BASE64_URL,      /* A-Z a-z 0-9 - _ */
} wl_base64_alphabet_t;

/** Characters that encoding len bytes takes (without the NUL). */
size_t wl_base64_encoded_len(size_t len, bool padded);

/** Encodes len bytes into out (wl_base64_encoded_len + 1 bytes, NUL-terminated); returns the
 * characters written. */
size_t wl_base64_encode(const unsigned char *in, size_t len, wl_base64_alphabet_t alphabet,
                        bool padded, char *out);

typedef enum {
    /* Unpadded URL-safe only, and canonical: unused low bits must be zero, so that every byte
     * string has one spelling (page tokens). */
    WL_BASE64_DECODE_URL_CANONICAL,
    /* Either alphabet (not both in one string), padding optional (protobuf JSON, RFC 4648). */
    WL_BASE64_DECODE_LENIENT,
} wl_base64_decoding_t;

/** Decodes len characters into out (len * 3 / 4 bytes suffice); false when the text is not
 * base64 of the given kind. */
bool wl_base64_decode(const char *in, size_t len, wl_base64_decoding_t kind, unsigned char *out,
                      size_t *out_len);

#endif
