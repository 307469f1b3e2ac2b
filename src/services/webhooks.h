/*
 * Webhook delivery workers (walklist/core.h, wl_core_webhooks_config_t) and the check of an
 * endpoint's target that walklistctl's webhook add makes.
 */
#ifndef WALKLIST_SERVICES_WEBHOOKS_H
#define WALKLIST_SERVICES_WEBHOOKS_H

#include <stdbool.h>

#include "walklist/core.h"
#include "walklist/error.h"

typedef struct wl_webhooks wl_webhooks_t;

/**
 * Starts config->workers delivery threads on database_url (each connects, and reconnects, on
 * its own). core seals the export cursors of stock.changed events and must outlive them.
 */
int wl__webhooks_start(wl_core_t *core, const char *database_url,
                       const wl_core_webhooks_config_t *config, wl_webhooks_t **out,
                       wl_error_t *err) WL_CHECK_RESULT;

/** Stops the threads (an attempt in flight is given up: it is retried later) and frees; NULL
 * is fine. */
void wl__webhooks_stop(wl_webhooks_t *webhooks);

void wl__webhooks_stats(wl_webhooks_t *webhooks, wl_core_webhook_stats_t *out);

/**
 * Checks an endpoint URL (wl_webhook_url_parse) and, unless allow_private, that its host
 * resolves and every address it resolves to may be delivered to (wl_webhook_address_refusal).
 * WL_EINVAL with a violation of "url" saying why not.
 */
int wl__webhook_target_check(const char *url, bool allow_private, wl_error_t *err) WL_CHECK_RESULT;

#endif
