/* The page-token secret, and the export cursors sealed with it, are kept here. */
#include <assert.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "domain/page_token.h"
#include "services/services.h"
#include "store/secrets.h"

static_assert(WL_SECRET_SIZE == WL_PAGE_SECRET_SIZE, "the stored secret is the page-token key");

/*
 * The page-token key. Reading it is one query per process: after the first
 * success the bytes stay in the core. Threads that race on the first use
 * all read the same row, and exactly one of them fills the cache.
 */
int wl__page_secret(wl_core_t *core, PGconn *conn, unsigned char secret[WL_SECRET_SIZE],
                    wl_error_t *err)
{
    wl_secret_cache_t *cache = &core->page_secret;
    if (atomic_load_explicit(&cache->state, memory_order_acquire) == 2) {
        memcpy(secret, cache->bytes, WL_SECRET_SIZE);
        return 0;
    }
    int rc = wl_secrets_get(conn, WL_SECRET_PAGE_TOKEN, secret, err);
    if (rc != 0)
        return rc;
    int empty = 0;
    if (atomic_compare_exchange_strong_explicit(&cache->state, &empty, 1, memory_order_acquire,
                                                memory_order_relaxed)) {
        memcpy(cache->bytes, secret, WL_SECRET_SIZE);
        atomic_store_explicit(&cache->state, 2, memory_order_release);
    }
    return 0;
}

/*
 * An export cursor is a page token (sealed with the page-token secret) holding the export
 * version, bound to the organization: it cannot be made up, changed, or used by another one.
 */
void wl__export_cursor_scope(int64_t org_id, char org[24], wl_span_t scope[2])
{
    snprintf(org, 24, "%lld", (long long)org_id);
    scope[0] = wl_span_str("walklist.v1.StockService/ExportStock.cursor");
    scope[1] = wl_span_str(org);
}

int wl__export_cursor_seal(wl_core_t *core, PGconn *conn, int64_t org_id, int64_t version,
                           char out[WL_EXPORT_CURSOR_MAX], wl_error_t *err)
{
    unsigned char secret[WL_SECRET_SIZE];
    int rc = wl__page_secret(core, conn, secret, err);
    if (rc != 0)
        return rc;
    char org[24], version_text[24];
    wl_span_t scope[2];
    wl__export_cursor_scope(org_id, org, scope);
    snprintf(version_text, sizeof(version_text), "%lld", (long long)version);
    const wl_span_t keys[] = {wl_span_str(version_text)};
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    char *token = NULL;
    rc = wl_page_token_encode(secret, scope, 2, keys, 1, &arena, &token);
    if (rc == 0 && strlen(token) < WL_EXPORT_CURSOR_MAX)
        strcpy(out, token);
    else
        rc = wl_error_set(err, WL_EINTERNAL, "cannot seal the export cursor");
    wl_arena_dispose(&arena);
    return rc;
}
