/* Page tokens are sealed with an HMAC and opened again here. */
#include "domain/page_token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "walklist/base64.h"

#define TOKEN_VERSION 1
#define MAC_SIZE      32

/* Separates these MACs from any other use the secret might get one day. */
static const char mac_domain[] = "walklist page token v1";

static void put_u32(unsigned char *p, size_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/*
 * MAC over the domain, the scope and the payload. Every scope string is
 * length-prefixed so that ("ab", "c") and ("a", "bc") are different scopes.
 */
static int compute_mac(const unsigned char secret[WL_PAGE_SECRET_SIZE], const wl_span_t *scope,
                       size_t scope_count, const unsigned char *payload, size_t payload_len,
                       wl_arena_t *arena, unsigned char mac[MAC_SIZE])
{
    size_t len = sizeof(mac_domain) + 4 + payload_len;
    for (size_t i = 0; i < scope_count; i++) {
        if (scope[i].len > SIZE_MAX / 2 - len - 4)
            return WL_EINVAL;
        len += 4 + scope[i].len;
    }
    unsigned char *input = wl_arena_alloc(arena, len);
    if (input == NULL)
        return WL_ENOMEM;
    unsigned char *p = input;
    memcpy(p, mac_domain, sizeof(mac_domain)); /* with its NUL, which ends the domain */
    p += sizeof(mac_domain);
    put_u32(p, scope_count);
    p += 4;
    for (size_t i = 0; i < scope_count; i++) {
        put_u32(p, scope[i].len);
        p += 4;
        if (scope[i].len > 0)
            memcpy(p, scope[i].base, scope[i].len);
        p += scope[i].len;
    }
    memcpy(p, payload, payload_len);
    unsigned int mac_len = 0;
    if (HMAC(EVP_sha256(), secret, WL_PAGE_SECRET_SIZE, input, len, mac, &mac_len) == NULL ||
        mac_len != MAC_SIZE)
        return WL_EINTERNAL;
    return 0;
}

int wl_page_token_encode(const unsigned char secret[WL_PAGE_SECRET_SIZE], const wl_span_t *scope,
                         size_t scope_count, const wl_span_t *keys, size_t key_count,
                         wl_arena_t *arena, char **out)
{
    if (key_count > WL_PAGE_KEYS_MAX)
        return WL_EINVAL;
    size_t payload_len = 1;
    for (size_t i = 0; i < key_count; i++) {
        if (keys[i].len > WL_PAGE_KEY_MAX)
            return WL_EINVAL;
        payload_len += 2 + keys[i].len;
    }
    unsigned char *sealed = wl_arena_alloc(arena, payload_len + MAC_SIZE);
    if (sealed == NULL)
        return WL_ENOMEM;
    unsigned char *p = sealed;
    *p++ = TOKEN_VERSION;
    for (size_t i = 0; i < key_count; i++) {
        *p++ = (unsigned char)(keys[i].len >> 8);
        *p++ = (unsigned char)keys[i].len;
        if (keys[i].len > 0)
            memcpy(p, keys[i].base, keys[i].len);
        p += keys[i].len;
    }
    int rc = compute_mac(secret, scope, scope_count, sealed, payload_len, arena, p);
    if (rc != 0)
        return rc;

    size_t sealed_len = payload_len + MAC_SIZE;
    char *text = wl_arena_alloc(arena, wl_base64_encoded_len(sealed_len, false) + 1);
    if (text == NULL)
        return WL_ENOMEM;
    wl_base64_encode(sealed, sealed_len, WL_BASE64_URL, false, text);
    *out = text;
    return 0;
}

int wl_page_token_decode(const unsigned char secret[WL_PAGE_SECRET_SIZE], const wl_span_t *scope,
                         size_t scope_count, wl_span_t token, size_t key_count, wl_arena_t *arena,
                         wl_span_t *keys)
{
    if (token.len == 0 || token.len > WL_PAGE_TOKEN_MAX || key_count > WL_PAGE_KEYS_MAX)
        return WL_EINVAL;
    unsigned char *sealed = wl_arena_alloc(arena, token.len);
    size_t sealed_len = 0;
    if (sealed == NULL)
        return WL_ENOMEM;
    if (!wl_base64_decode(token.base, token.len, WL_BASE64_DECODE_URL_CANONICAL, sealed,
                          &sealed_len) ||
        sealed_len < 1 + MAC_SIZE)
        return WL_EINVAL;
    size_t payload_len = sealed_len - MAC_SIZE;
    unsigned char mac[MAC_SIZE];
    int rc = compute_mac(secret, scope, scope_count, sealed, payload_len, arena, mac);
    if (rc != 0)
        return rc;
    if (CRYPTO_memcmp(mac, sealed + payload_len, MAC_SIZE) != 0)
        return WL_EINVAL;

    /* Authentic from here on; the layout is still checked, as a later version may differ. */
    if (sealed[0] != TOKEN_VERSION)
        return WL_EINVAL;
    size_t pos = 1;
    for (size_t i = 0; i < key_count; i++) {
        if (payload_len - pos < 2)
            return WL_EINVAL;
        size_t len = (size_t)sealed[pos] << 8 | sealed[pos + 1];
        pos += 2;
        if (len > WL_PAGE_KEY_MAX || len > payload_len - pos)
            return WL_EINVAL;
        char *copy = wl_arena_strndup(arena, (const char *)sealed + pos, len);
        if (copy == NULL)
            return WL_ENOMEM;
        keys[i] = wl_span(copy, len);
        pos += len;
    }
    return pos == payload_len ? 0 : WL_EINVAL;
}
