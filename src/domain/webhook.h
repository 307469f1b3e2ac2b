/*
 * Webhooks' pure rules (README, "Webhooks"): the event names, what an endpoint URL may be,
 * which addresses a delivery may go to (no private, loopback, link-local, multicast or
 * unspecified ones, IPv4 or IPv6, IPv4-mapped included: a webhook must not reach into the
 * network walklistd runs in), the signing secret's text form and the Standard Webhooks
 * signature (https://www.standardwebhooks.com). No I/O.
 */
#ifndef WALKLIST_DOMAIN_WEBHOOK_H
#define WALKLIST_DOMAIN_WEBHOOK_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "walklist/error.h"

/* The events, by name (the "type" of a payload). */
#define WL_WEBHOOK_EVENT_LIST_LOADED   "locate_list.loaded"
#define WL_WEBHOOK_EVENT_STOCK_CHANGED "stock.changed"

/* Endpoint URLs are at most this long. */
#define WL_WEBHOOK_URL_MAX 2048
/* A host name is at most 253 characters (RFC 1035); an IPv6 literal fits too. */
#define WL_WEBHOOK_HOST_MAX 256
/* Secret bytes: the middle of Standard Webhooks' 24-64. */
#define WL_WEBHOOK_SECRET_SIZE 32
/* "whsec_" + base64 of the secret, and the NUL. */
#define WL_WEBHOOK_SECRET_TEXT_SIZE (6 + 44 + 1)
/* "v1," + base64 of an HMAC-SHA256, and the NUL. */
#define WL_WEBHOOK_SIGNATURE_SIZE (3 + 44 + 1)

/** Whether name is one of the events above. */
bool wl_webhook_event_known(const char *name);

/**
 * Checks a comma-separated list of event names ("locate_list.loaded,stock.changed": no
 * blanks, no repeats, at least one) and counts them. WL_EINVAL with a violation of "events"
 * naming the first bad one.
 */
int wl_webhook_events_check(const char *events, size_t *count, wl_error_t *err) WL_CHECK_RESULT;

/** Where an endpoint URL points: its parts as libcurl parses it (the parser that sends). */
typedef struct {
    bool https;
    char host[WL_WEBHOOK_HOST_MAX]; /* a name, or an address without brackets */
    unsigned port;                  /* the URL's, or the scheme's default */
} wl_webhook_target_t;

/**
 * Checks an endpoint URL: an absolute http:// or https:// URL of at most WL_WEBHOOK_URL_MAX
 * characters with a host and no user name or password (they would be shown by webhook list)
 * and no fragment. WL_EINVAL with a violation of "url" saying what is wrong.
 */
int wl_webhook_url_parse(const char *url, wl_webhook_target_t *out,
                         wl_error_t *err) WL_CHECK_RESULT;

/**
 * NULL when a delivery may go to addr (AF_INET or AF_INET6), else why not ("a private
 * address", "a loopback address", ...): private (RFC 1918, unique local fc00::/7, shared
 * 100.64/10), loopback, link-local, multicast, unspecified, broadcast and reserved ranges; an
 * IPv6 address that embeds an IPv4 one (mapped ::ffff:0:0/96, compatible ::/96, NAT64
 * 64:ff9b::/96, 6to4 2002::/16) is judged by the IPv4 address.
 */
const char *wl_webhook_address_refusal(const struct sockaddr *addr);

/** Writes the secret's text form, "whsec_" + standard base64. */
void wl_webhook_secret_format(const unsigned char secret[WL_WEBHOOK_SECRET_SIZE],
                              char out[WL_WEBHOOK_SECRET_TEXT_SIZE]);

/**
 * Signs a delivery as Standard Webhooks does: "v1," + base64 of HMAC-SHA256 keyed with the
 * secret's bytes over "<id>.<timestamp>.<body>". WL_EINTERNAL when the HMAC fails.
 */
int wl_webhook_sign(const unsigned char *secret, size_t secret_len, const char *id,
                    int64_t timestamp, const char *body, size_t body_len,
                    char out[WL_WEBHOOK_SIGNATURE_SIZE]) WL_CHECK_RESULT;

#endif
