/* Where a webhook may go is decided here: endpoint URLs as libcurl reads them, the addresses
 * deliveries may not connect to, and webhook add's check of both. */
#include "walklist/delivery_target.h"

#include <curl/curl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

int wl_delivery_url_parse(const char *url, wl_delivery_target_t *out, wl_error_t *err)
{
    memset(out, 0, sizeof(*out));
    size_t len = url != NULL ? strlen(url) : 0;
    if (len == 0 || len > WL_DELIVERY_URL_MAX)
        return wl_error_add_violation(err, "url", "must be 1 to %d characters",
                                      WL_DELIVERY_URL_MAX);
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

const char *wl_delivery_address_refusal(const struct sockaddr *addr)
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

/* --- webhook add's check ------------------------------------------------------------------ */

int wl_delivery_target_check(const char *url, bool allow_private, wl_error_t *err)
{
    wl_delivery_target_t target;
    int rc = wl_delivery_url_parse(url, &target, err);
    if (rc != 0 || allow_private)
        return rc;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *found = NULL;
    int gai = getaddrinfo(target.host, NULL, &hints, &found);
    if (gai != 0)
        return wl_error_add_violation(err, "url", "the host '%.100s' does not resolve: %s",
                                      target.host, gai_strerror(gai));
    /* Every address, not only the first: a delivery may connect to any of them. */
    for (struct addrinfo *a = found; rc == 0 && a != NULL; a = a->ai_next) {
        const char *refusal = wl_delivery_address_refusal(a->ai_addr);
        if (refusal != NULL)
            rc = wl_error_add_violation(err, "url",
                                        "the host '%.100s' resolves to %s: refused unless "
                                        "--webhook-allow-private",
                                        target.host, refusal);
    }
    freeaddrinfo(found);
    return rc;
}
