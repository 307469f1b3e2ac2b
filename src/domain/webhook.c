/* Webhooks' rules (events, the secret's text) and their signatures live here. */
#include "domain/webhook.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "walklist/base64.h"

static const char *const event_names[] = {WL_WEBHOOK_EVENT_LIST_LOADED,
                                          WL_WEBHOOK_EVENT_STOCK_CHANGED};
#define EVENT_COUNT (sizeof(event_names) / sizeof(event_names[0]))

bool wl_webhook_event_known(const char *name)
{
    for (size_t i = 0; i < EVENT_COUNT; i++)
        if (strcmp(event_names[i], name) == 0)
            return true;
    return false;
}

int wl_webhook_events_check(const char *events, size_t *count, wl_error_t *err)
{
    *count = 0;
    bool seen[EVENT_COUNT] = {false};
    const char *at = events != NULL ? events : "";
    for (;;) {
        size_t len = strcspn(at, ",");
        size_t i = 0;
        while (i < EVENT_COUNT &&
               !(strlen(event_names[i]) == len && memcmp(event_names[i], at, len) == 0))
            i++;
        if (i == EVENT_COUNT)
            return wl_error_add_violation(err, "events",
                                          "unknown event '%.*s' (locate_list.loaded, "
                                          "stock.changed)",
                                          (int)(len > 64 ? 64 : len), at);
        if (seen[i])
            return wl_error_add_violation(err, "events", "event '%s' given twice", event_names[i]);
        seen[i] = true;
        (*count)++;
        if (at[len] == '\0')
            return 0;
        at += len + 1;
    }
}

void wl_webhook_secret_format(const unsigned char secret[WL_WEBHOOK_SECRET_SIZE],
                              char out[WL_WEBHOOK_SECRET_TEXT_SIZE])
{
    memcpy(out, "whsec_", 6);
    wl_base64_encode(secret, WL_WEBHOOK_SECRET_SIZE, WL_BASE64_STANDARD, true, out + 6);
}

int wl_webhook_sign(const unsigned char *secret, size_t secret_len, const char *id,
                    int64_t timestamp, const char *body, size_t body_len,
                    char out[WL_WEBHOOK_SIGNATURE_SIZE])
{
    char stamp[24];
    int stamp_len = snprintf(stamp, sizeof(stamp), ".%lld.", (long long)timestamp);
    size_t id_len = strlen(id);
    unsigned char *input = malloc(id_len + (size_t)stamp_len + body_len + 1);
    if (input == NULL)
        return WL_ENOMEM;
    memcpy(input, id, id_len);
    memcpy(input + id_len, stamp, (size_t)stamp_len);
    memcpy(input + id_len + (size_t)stamp_len, body, body_len);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    bool ok = HMAC(EVP_sha256(), secret, (int)secret_len, input,
                   id_len + (size_t)stamp_len + body_len, mac, &mac_len) != NULL &&
              mac_len == 32;
    free(input);
    if (!ok)
        return WL_EINTERNAL;
    memcpy(out, "v1,", 3);
    wl_base64_encode(mac, mac_len, WL_BASE64_STANDARD, true, out + 3);
    return 0;
}
