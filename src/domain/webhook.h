/*
 * Webhooks' pure rules (docs/change-feeds.md, "Webhooks"): the event names, the signing secret's
 * text form and the Standard Webhooks signature (https://www.standardwebhooks.com). Where a
 * delivery may go is the deliverer's (walklist/delivery_target.h). No I/O.
 */
#ifndef WALKLIST_DOMAIN_WEBHOOK_H
#define WALKLIST_DOMAIN_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "walklist/error.h"

/* The events, by name (the "type" of a payload). */
#define WL_WEBHOOK_EVENT_LIST_LOADED   "locate_list.loaded"
#define WL_WEBHOOK_EVENT_STOCK_CHANGED "stock.changed"

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
