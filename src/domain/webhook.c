/* Webhooks' rules (events, endpoint URLs, allowed addresses) and their signatures live here. */
#include "domain/webhook.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
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

/* A part of a parsed URL into out (size bytes, NUL-terminated); false when it is absent or
 * does not fit. */
static bool url_part(CURLU *parsed, CURLUPart part, unsigned flags, char *out, size_t size)
{
    char *value = NULL;
    if (curl_url_get(parsed, part, &value, flags) != CURLUE_OK)
        return false;
    size_t len = strlen(value);
    bool fits = len < size;
    if (fits)
        memcpy(out, value, len + 1);
    curl_free(value);
    return fits;
}

static bool url_has(CURLU *parsed, CURLUPart part)
{
    char *value = NULL;
    bool has = curl_url_get(parsed, part, &value, 0) == CURLUE_OK;
    curl_free(value);
    return has;
}

int wl_webhook_url_parse(const char *url, wl_webhook_target_t *out, wl_error_t *err)
{
    memset(out, 0, sizeof(*out));
    size_t len = url != NULL ? strlen(url) : 0;
    if (len == 0 || len > WL_WEBHOOK_URL_MAX)
        return wl_error_add_violation(err, "url", "must be 1 to %d characters", WL_WEBHOOK_URL_MAX);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)url[i] <= 0x20 || url[i] == 0x7f)
            return wl_error_add_violation(err, "url",
                                          "must not hold blanks or control "
                                          "characters");
    /* Schemes are compared before libcurl sees the URL: it would accept ftp:// and others. */
    if (strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0)
        return wl_error_add_violation(err, "url", "must be an http:// or https:// URL");
    CURLU *parsed = curl_url();
    if (parsed == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    int rc = 0;
    char scheme[8], port[8];
    if (curl_url_set(parsed, CURLUPART_URL, url, 0) != CURLUE_OK ||
        !url_part(parsed, CURLUPART_SCHEME, 0, scheme, sizeof(scheme)))
        rc = wl_error_add_violation(err, "url", "is not a URL libcurl can read");
    else if (url_has(parsed, CURLUPART_USER) || url_has(parsed, CURLUPART_PASSWORD))
        rc = wl_error_add_violation(err, "url", "must not hold a user name or password");
    else if (url_has(parsed, CURLUPART_FRAGMENT))
        rc = wl_error_add_violation(err, "url", "must not have a fragment (#...)");
    else if (url_has(parsed, CURLUPART_ZONEID))
        rc = wl_error_add_violation(err, "url", "must not name an IPv6 zone");
    else if (!url_part(parsed, CURLUPART_HOST, 0, out->host, sizeof(out->host)) ||
             out->host[0] == '\0')
        rc = wl_error_add_violation(err, "url", "must name a host");
    else if (!url_part(parsed, CURLUPART_PORT, CURLU_DEFAULT_PORT, port, sizeof(port)))
        rc = wl_error_add_violation(err, "url", "has no usable port");
    if (rc == 0) {
        out->https = strcmp(scheme, "https") == 0;
        char *end = NULL;
        unsigned long number = strtoul(port, &end, 10);
        if (*end != '\0' || number == 0 || number > 65535)
            rc = wl_error_add_violation(err, "url", "has no usable port");
        out->port = (unsigned)number;
        size_t host_len = strlen(out->host);
        if (rc == 0 && out->host[0] == '[' && out->host[host_len - 1] == ']') {
            memmove(out->host, out->host + 1, host_len - 2);
            out->host[host_len - 2] = '\0';
        }
    }
    curl_url_cleanup(parsed);
    return rc;
}

/* Whether the first bits of addr (bytes, network order) are those of prefix. */
static bool in_prefix(const unsigned char *addr, const unsigned char *prefix, unsigned bits)
{
    unsigned whole = bits / 8, rest = bits % 8;
    if (memcmp(addr, prefix, whole) != 0)
        return false;
    if (rest == 0)
        return true;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (addr[whole] & mask) == (prefix[whole] & mask);
}

typedef struct {
    unsigned char prefix[16];
    unsigned bits;
    const char *why;
} range_t;

static const range_t v4_refused[] = {
    {{0}, 8, "an unspecified address (0.0.0.0/8)"},
    {{10}, 8, "a private address"},
    {{100, 64}, 10, "a shared (carrier-grade NAT) address"},
    {{127}, 8, "a loopback address"},
    {{169, 254}, 16, "a link-local address"},
    {{172, 16}, 12, "a private address"},
    {{192, 0, 0}, 24, "a reserved address (IETF protocol assignments)"},
    {{192, 168}, 16, "a private address"},
    {{198, 18}, 15, "a reserved address (benchmarking)"},
    {{224}, 4, "a multicast address"},
    {{240}, 4, "a reserved address (240.0.0.0/4, broadcast included)"},
};

static const range_t v6_refused[] = {
    {{0}, 128, "an unspecified address"},
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128, "a loopback address"},
    {{0xfe, 0x80}, 10, "a link-local address"},
    {{0xfe, 0xc0}, 10, "a site-local address"},
    {{0xfc}, 7, "a private (unique local) address"},
    {{0xff}, 8, "a multicast address"},
    {{0x01, 0x00}, 64, "a discard-only address"},
};

static const char *v4_refusal(const unsigned char addr[4])
{
    for (size_t i = 0; i < sizeof(v4_refused) / sizeof(v4_refused[0]); i++)
        if (in_prefix(addr, v4_refused[i].prefix, v4_refused[i].bits))
            return v4_refused[i].why;
    return NULL;
}

const char *wl_webhook_address_refusal(const struct sockaddr *addr)
{
    if (addr->sa_family == AF_INET)
        return v4_refusal((const unsigned char *)&((const struct sockaddr_in *)addr)->sin_addr);
    if (addr->sa_family != AF_INET6)
        return "not an IP address";
    const unsigned char *a = ((const struct sockaddr_in6 *)addr)->sin6_addr.s6_addr;
    for (size_t i = 0; i < sizeof(v6_refused) / sizeof(v6_refused[0]); i++)
        if (in_prefix(a, v6_refused[i].prefix, v6_refused[i].bits))
            return v6_refused[i].why;
    static const unsigned char mapped[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const unsigned char compatible[12] = {0};
    static const unsigned char nat64[] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
    static const unsigned char six_to_four[] = {0x20, 0x02};
    /* Addresses that carry an IPv4 address reach it: they are judged by it. */
    if (in_prefix(a, mapped, 96) || in_prefix(a, compatible, 96) || in_prefix(a, nat64, 96))
        return v4_refusal(a + 12);
    if (in_prefix(a, six_to_four, 16))
        return v4_refusal(a + 2);
    return NULL;
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
