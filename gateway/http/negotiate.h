/*
 * Reading the request header fields that choose how a request is read and a
 * response's form: the request body's media type (Content-Type, RFC 9110
 * section 8.3, for every transport), which content coding a client takes
 * (Accept-Encoding, section 12.5.3) and whether its cached copy is still
 * current (If-None-Match, section 13.1.2). Pure functions on field values; several field lines of
 * one name are given joined with ", " (section 5.3).
 */
#ifndef WALKLIST_GATEWAY_NEGOTIATE_H
#define WALKLIST_GATEWAY_NEGOTIATE_H

#include <stdbool.h>

/**
 * True when the response should be gzip-coded: "gzip" (or its alias
 * "x-gzip"), else "*", has a q-value above 0, and "identity" is not listed
 * with a higher one. Names are case-insensitive; a q-value that is not one
 * (q=2, q=0.1234, q=x) makes its element count as absent. NULL or an empty
 * field: no coding (identity).
 *
 *     wl_negotiate_gzip("gzip, deflate, br")          -> true
 *     wl_negotiate_gzip("gzip;q=0")                   -> false
 *     wl_negotiate_gzip("*")                          -> true
 *     wl_negotiate_gzip("*;q=0.5, identity;q=0.8")    -> false
 */
bool wl_negotiate_gzip(const char *accept_encoding);

typedef enum {
    WL_MEDIA_OTHER, /* none of ours (or absent): 415 */
    WL_MEDIA_JSON,  /* application/json */
    WL_MEDIA_PROTO, /* application/proto */
} wl_media_t;

/**
 * The media type of a request body: application/json, whose parameters may include a charset
 * that must then be UTF-8 ("utf-8" in any case, quoted or not; other parameters are ignored),
 * or application/proto without parameters. Names are case-insensitive; blanks around the type
 * and parameters are allowed. *utf8_charset tells whether a charset was given (a Connect reply
 * echoes it); it may be NULL.
 *
 *     wl_negotiate_content_type("application/json; charset=\"UTF-8\"", &c)  -> JSON, c true
 *     wl_negotiate_content_type("application/json;charset=latin1", &c)      -> OTHER
 *     wl_negotiate_content_type("application/proto; x=y", &c)               -> OTHER
 */
wl_media_t wl_negotiate_content_type(const char *content_type, bool *utf8_charset);

/**
 * True when If-None-Match matches etag (a quoted opaque-tag such as
 * "\"7-12\""), so that a GET is answered 304: the field is "*", or one of its
 * entity-tags equals etag by the weak comparison (a "W/" prefix on either
 * side is ignored). NULL, or a field that is not a valid list of entity-tags,
 * matches nothing.
 *
 *     wl_negotiate_none_match("\"a\", W/\"7-12\"", "\"7-12\"")  -> true
 *     wl_negotiate_none_match("\"7-1\"", "\"7-12\"")            -> false
 */
bool wl_negotiate_none_match(const char *if_none_match, const char *etag);

#endif
