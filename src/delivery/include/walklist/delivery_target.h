/*
 * Where a webhook may be delivered (docs/change-feeds.md, "Webhooks"): what an endpoint URL may be,
 * as libcurl (the parser that sends) reads it, and which addresses a delivery may go to (no
 * private, loopback, link-local, multicast or unspecified ones, IPv4 or IPv6, IPv4-mapped
 * included: a webhook must not reach into the network walklistd runs in). walklistctl's
 * webhook add checks a new endpoint with wl_delivery_target_check; walklistd's deliveries
 * check every address they connect to with wl_delivery_address_refusal.
 */
#ifndef WALKLIST_DELIVERY_TARGET_H
#define WALKLIST_DELIVERY_TARGET_H

#include <stdbool.h>
#include <sys/socket.h>

#include "walklist/error.h"

/* Endpoint URLs are at most this long. */
#define WL_DELIVERY_URL_MAX 2048
/* A host name is at most 253 characters (RFC 1035); an IPv6 literal fits too. */
#define WL_DELIVERY_HOST_MAX 256

/** Where an endpoint URL points: its parts as libcurl parses it. */
typedef struct {
    bool https;
    char host[WL_DELIVERY_HOST_MAX]; /* a name, or an address without brackets */
    unsigned port;                   /* the URL's, or the scheme's default */
} wl_delivery_target_t;

/**
 * Checks an endpoint URL: an absolute http:// or https:// URL of at most WL_DELIVERY_URL_MAX
 * characters with a host and no user name or password (they would be shown by webhook list)
 * and no fragment. WL_EINVAL with a violation of "url" saying what is wrong. No I/O.
 */
int wl_delivery_url_parse(const char *url, wl_delivery_target_t *out,
                          wl_error_t *err) WL_CHECK_RESULT;

/**
 * NULL when a delivery may go to addr (AF_INET or AF_INET6), else why not ("a private
 * address", "a loopback address", ...): private (RFC 1918, unique local fc00::/7, shared
 * 100.64/10), loopback, link-local, multicast, unspecified, broadcast and reserved ranges; an
 * IPv6 address that embeds an IPv4 one (mapped ::ffff:0:0/96, compatible ::/96, NAT64
 * 64:ff9b::/96, 6to4 2002::/16) is judged by the IPv4 address. No I/O.
 */
const char *wl_delivery_address_refusal(const struct sockaddr *addr);

/**
 * Checks an endpoint URL (wl_delivery_url_parse) and, unless allow_private, that its host
 * resolves and every address it resolves to may be delivered to (wl_delivery_address_refusal).
 * WL_EINVAL with a violation of "url" saying why not.
 */
int wl_delivery_target_check(const char *url, bool allow_private, wl_error_t *err) WL_CHECK_RESULT;

#endif
