/*
 * Page tokens (src/domain/page_token.c). The first byte picks the number of keys expected; the
 * rest is taken twice: as a token sent by a client, which must be refused unless it is one the
 * secret sealed, and as the payload of a token the harness seals itself (the MAC layout of
 * page_token.c), so that the layout check behind the MAC is reached too. Keys that decode
 * encode back to the same token.
 */
#include <openssl/hmac.h>
#include <string.h>

#include "fuzz.h"
#include "domain/page_token.h"

static const unsigned char secret[WL_PAGE_SECRET_SIZE] = "fuzz fuzz fuzz fuzz fuzz fuzz!";
static const char domain[] = "walklist page token v1";

static void check(wl_span_t token, size_t key_count, wl_arena_t *arena)
{
    wl_span_t scope[] = {wl_span_str("ListStock"), wl_span_str("42")};
    wl_span_t keys[WL_PAGE_KEYS_MAX + 1];
    char *text = NULL;
    if (wl_page_token_decode(secret, scope, 2, token, key_count, arena, keys) == 0) {
        FUZZ_CHECK(wl_page_token_encode(secret, scope, 2, keys, key_count, arena, &text) == 0);
        FUZZ_CHECK(wl_span_eq(wl_span_str(text), token));
    }
}

/* base64url(payload || HMAC(secret, domain NUL || 2 || 9 "ListStock" || 2 "42" || payload)). */
static wl_span_t seal(const uint8_t *payload, size_t len, wl_arena_t *arena)
{
    unsigned char *in = wl_arena_alloc(arena, sizeof(domain) + 4 + 4 + 9 + 4 + 2 + len + 32);
    char *text = wl_arena_alloc(arena, (len + 32) * 2 + 4);
    FUZZ_CHECK(in != NULL && text != NULL);
    unsigned char *p = in;
    memcpy(p, domain, sizeof(domain));
    p += sizeof(domain);
    memcpy(p,
           "\0\0\0\2\0\0\0\x09ListStock\0\0\0\x02"
           "42",
           4 + 4 + 9 + 4 + 2);
    p += 4 + 4 + 9 + 4 + 2;
    memcpy(p, payload, len);
    unsigned char *sealed = p;
    unsigned int mac_len = 0;
    HMAC(EVP_sha256(), secret, sizeof(secret), in, (size_t)(p + len - in), p + len, &mac_len);
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t o = 0, bits = 0;
    uint32_t acc = 0;
    for (size_t i = 0; i < len + 32; i++) {
        acc = acc << 8 | sealed[i];
        for (bits += 8; bits >= 6; bits -= 6)
            text[o++] = b64[(acc >> (bits - 6)) & 63];
    }
    if (bits > 0)
        text[o++] = b64[(acc << (6 - bits)) & 63];
    return wl_span(text, o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    wl_arena_t arena;
    wl_arena_init(&arena, 1u << 20);
    size_t key_count = data[0] % (WL_PAGE_KEYS_MAX + 2);
    check(wl_span((const char *)data + 1, size - 1), key_count, &arena);
    if (size - 1 <= WL_PAGE_TOKEN_MAX)
        check(seal(data + 1, size - 1, &arena), key_count, &arena);
    wl_arena_dispose(&arena);
    return 0;
}
