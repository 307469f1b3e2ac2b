/* Issuing, checking and revoking API keys happens here. */
#include "store/keys.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "walklist/random.h"
#include "walklist/scopes.h"

static bool is_base62(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

bool wl_keys_parse(wl_span_t token, char prefix[WL_KEY_PREFIX_LEN + 1])
{
    const size_t head = 4 + WL_KEY_PREFIX_LEN + 1;
    if (token.len < head + WL_KEY_SECRET_MIN || token.len > WL_KEY_TOKEN_MAX)
        return false;
    if (memcmp(token.base, "wlk_", 4) != 0 || token.base[head - 1] != '_')
        return false;
    for (size_t i = 4; i < token.len; i++) {
        if (i != head - 1 && !is_base62(token.base[i]))
            return false;
    }
    memcpy(prefix, token.base + 4, WL_KEY_PREFIX_LEN);
    prefix[WL_KEY_PREFIX_LEN] = '\0';
    return true;
}

static EVP_MD *sha256;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

/* OpenSSL 3's one-shot SHA256() looks the algorithm up on every call, which showed in the
 * profile of every request; fetched once, it is only hashing. */
static void fetch_sha256(void)
{
    sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
}

void wl_keys_digest(wl_span_t token, unsigned char digest[WL_KEY_DIGEST_SIZE])
{
    pthread_once(&sha256_once, fetch_sha256);
    if (sha256 == NULL || !EVP_Digest(token.base, token.len, digest, NULL, sha256, NULL))
        SHA256((const unsigned char *)token.base, token.len, digest);
}

static void hash_hex(wl_span_t token, char hex[65])
{
    unsigned char digest[WL_KEY_DIGEST_SIZE];
    wl_keys_digest(token, digest);
    for (size_t i = 0; i < sizeof(digest); i++)
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
}

static void scopes_array(unsigned scopes, char *buf, size_t size)
{
    char list[128];
    wl_scopes_format(scopes, list, sizeof(list));
    snprintf(buf, size, "{%s}", list);
}

int wl_keys_create(PGconn *conn, int64_t org_id, unsigned scopes, const char *name,
                   char token[WL_KEY_TOKEN_SIZE], wl_error_t *err)
{
    char prefix[WL_KEY_PREFIX_LEN + 1], secret[WL_KEY_SECRET_LEN + 1], hex[65], org[24],
        scope_text[160];
    snprintf(org, sizeof(org), "%lld", (long long)org_id);
    scopes_array(scopes, scope_text, sizeof(scope_text));
    /* A prefix collision (47 bits) is improbable; retry a few times rather than fail. */
    for (int attempt = 0; attempt < 5; attempt++) {
        if (wl_random_base62(prefix, WL_KEY_PREFIX_LEN) != 0 ||
            wl_random_base62(secret, WL_KEY_SECRET_LEN) != 0)
            return wl_error_set(err, WL_EINTERNAL, "no randomness available");
        snprintf(token, WL_KEY_TOKEN_SIZE, "wlk_%s_%s", prefix, secret);
        hash_hex(wl_span_str(token), hex);
        const char *params[] = {prefix, org, hex, scope_text, name ? name : ""};
        PGresult *res =
            PQexecParams(conn,
                         "INSERT INTO api_keys (prefix, org_id, token_hash, scopes, name)"
                         " VALUES ($1, $2, decode($3, 'hex'), $4::text[], $5)"
                         " ON CONFLICT (prefix) DO NOTHING",
                         5, NULL, params, NULL, NULL, 0);
        if (PQresultStatus(res) != PGRES_COMMAND_OK) {
            int rc = wl_db_fail(conn, res, err);
            PQclear(res);
            return rc;
        }
        bool inserted = strcmp(PQcmdTuples(res), "1") == 0;
        PQclear(res);
        if (inserted)
            return 0;
    }
    return wl_error_set(err, WL_EINTERNAL, "could not find a free key prefix");
}

void wl_keys_scope_bits(const char *scopes, unsigned *bits)
{
    wl_error_t ignored;
    wl_error_init(&ignored);
    /* Stored scopes were validated when the key was created; unknown ones (from a
     * newer version) are simply not granted. */
    char one[64];
    *bits = 0;
    while (*scopes != '\0') {
        size_t n = strcspn(scopes, ",");
        snprintf(one, sizeof(one), "%.*s", (int)n, scopes);
        unsigned bit = 0;
        if (wl_scopes_parse(one, &bit, &ignored) == 0)
            *bits |= bit;
        scopes += n + (scopes[n] == ',');
    }
}

int wl_keys_authenticate(PGconn *conn, wl_span_t token, wl_principal_t *out, wl_error_t *err)
{
    char prefix[WL_KEY_PREFIX_LEN + 1], hex[65];
    if (!wl_keys_parse(token, prefix))
        return wl_error_set(err, WL_EUNAUTHENTICATED, "invalid API key");
    hash_hex(token, hex);
    /* The digests are compared by PostgreSQL, never the secret itself: timing says nothing
     * about the secret. The same lookup as an admission's (wl_admit), through the key's index. */
    const char *params[] = {prefix, hex};
    PGresult *res = NULL;
    int rc = wl_db_exec(conn,
                        "SELECT ak.org_id, o.slug, array_to_string(ak.scopes, ',')"
                        " FROM api_keys ak JOIN organizations o ON o.org_id = ak.org_id"
                        " WHERE ak.prefix = $1 AND ak.token_hash = decode($2, 'hex')"
                        " AND ak.revoked_at IS NULL",
                        2, params, &res, err);
    if (rc != 0)
        return rc;
    if (PQntuples(res) != 1) {
        PQclear(res);
        return wl_error_set(err, WL_EUNAUTHENTICATED, "invalid API key");
    }
    memset(out, 0, sizeof(*out));
    out->org_id = wl_db_int64(res, 0, 0);
    snprintf(out->key_prefix, sizeof(out->key_prefix), "%s", prefix);
    snprintf(out->org_slug, sizeof(out->org_slug), "%s", PQgetvalue(res, 0, 1));
    wl_keys_scope_bits(PQgetvalue(res, 0, 2), &out->scopes);
    PQclear(res);
    return 0;
}

/* The revocation and its announcement commit together: every process that keeps checked keys
 * (services/key_cache.c) forgets the key when it arrives. The announcement is sent here rather
 * than by a trigger, which a distributed database (Citus) refuses on its reference tables. */
/* bytea as PostgreSQL prints it ("\\x" and hex) into out; false when it is not size bytes. */
static bool hex_bytes(const char *text, unsigned char *out, size_t size)
{
    if (strncmp(text, "\\x", 2) != 0 || strlen(text + 2) != 2 * size)
        return false;
    for (size_t i = 0; i < size; i++) {
        unsigned value = 0;
        if (sscanf(text + 2 + 2 * i, "%2x", &value) != 1)
            return false;
        out[i] = (unsigned char)value;
    }
    return true;
}

int wl_keys_of_prefixes(PGconn *conn, const char (*prefixes)[WL_KEY_PREFIX_LEN + 1], size_t count,
                        wl_key_of_prefix_t *keys, wl_error_t *err)
{
    memset(keys, 0, count * sizeof(*keys));
    if (count == 0)
        return 0;
    /* A text array literal: prefixes are base62 (wl_keys_parse), nothing to quote. */
    size_t size = count * (WL_KEY_PREFIX_LEN + 1) + 2;
    char *array = malloc(size);
    if (array == NULL)
        return wl_error_set(err, WL_ENOMEM, "out of memory for key prefixes");
    size_t len = 0;
    array[len++] = '{';
    for (size_t i = 0; i < count; i++) {
        if (i > 0)
            array[len++] = ',';
        size_t n = strnlen(prefixes[i], WL_KEY_PREFIX_LEN);
        memcpy(array + len, prefixes[i], n);
        len += n;
    }
    array[len++] = '}';
    array[len] = '\0';
    const char *params[] = {array};
    PGresult *res = NULL;
    /* Each prefix through the key's index (a lateral lookup), as the admission's own check. */
    int rc =
        wl_db_exec_hot(conn,
                       "SELECT u.i, k.org_id, k.token_hash, array_to_string(k.scopes, ','),"
                       " k.slug FROM unnest($1::text[]) WITH ORDINALITY AS u(prefix, i)"
                       " JOIN LATERAL (SELECT ak.org_id, ak.token_hash, ak.scopes, o.slug"
                       " FROM api_keys ak JOIN organizations o ON o.org_id = ak.org_id"
                       " WHERE ak.prefix = u.prefix AND ak.revoked_at IS NULL LIMIT 1) k ON true",
                       1, params, &res, err);
    free(array);
    if (rc != 0)
        return rc;
    for (int row = 0; row < PQntuples(res); row++) {
        int64_t i = wl_db_int64(res, row, 0);
        if (i < 1 || (size_t)i > count)
            continue;
        wl_key_of_prefix_t *key = &keys[i - 1];
        if (!hex_bytes(PQgetvalue(res, row, 2), key->digest, sizeof(key->digest)))
            continue; /* not a digest this version makes: the admission's check refuses it */
        key->principal.org_id = wl_db_int64(res, row, 1);
        wl_keys_scope_bits(PQgetvalue(res, row, 3), &key->principal.scopes);
        snprintf(key->principal.org_slug, sizeof(key->principal.org_slug), "%s",
                 PQgetvalue(res, row, 4));
        snprintf(key->principal.key_prefix, sizeof(key->principal.key_prefix), "%s",
                 prefixes[i - 1]);
    }
    PQclear(res);
    return 0;
}

int wl_keys_revoke(PGconn *conn, const char *prefix, wl_error_t *err)
{
    const char *params[] = {prefix};
    PGresult *res = NULL;
    int rc = wl_db_begin(conn, err);
    if (rc == 0)
        rc = wl_db_exec(conn,
                        "UPDATE api_keys SET revoked_at = now()"
                        " WHERE prefix = $1 AND revoked_at IS NULL",
                        1, params, NULL, err);
    if (rc == 0)
        rc = wl_db_exec(conn, "SELECT 1 FROM api_keys WHERE prefix = $1", 1, params, &res, err);
    if (rc == 0 && PQntuples(res) != 1)
        rc = wl_error_set(err, WL_ENOTFOUND, "no key with prefix '%s'", prefix);
    PQclear(res);
    if (rc == 0)
        rc = wl_db_exec(conn, "SELECT pg_notify('wl_keys_changed', $1)", 1, params, NULL, err);
    if (rc == 0)
        rc = wl_db_commit(conn, err);
    if (rc != 0)
        wl_db_rollback(conn);
    return rc;
}

int wl_keys_list(PGconn *conn, int64_t org_id, void (*each)(const wl_key_info_t *, void *),
                 void *data, wl_error_t *err)
{
    char org[24];
    snprintf(org, sizeof(org), "%lld", (long long)org_id);
    const char *params[] = {org};
    PGresult *res = NULL;
    int rc = wl_db_exec(conn,
                        "SELECT prefix, name, array_to_string(scopes, ','),"
                        " to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
                        " to_char(revoked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
                        " FROM api_keys WHERE org_id = $1 ORDER BY created_at, prefix",
                        1, params, &res, err);
    if (rc != 0)
        return rc;
    for (int i = 0; i < PQntuples(res); i++) {
        wl_key_info_t info = {
            .prefix = PQgetvalue(res, i, 0),
            .name = PQgetvalue(res, i, 1),
            .scopes = PQgetvalue(res, i, 2),
            .created_at = PQgetvalue(res, i, 3),
            .revoked_at = PQgetisnull(res, i, 4) ? NULL : PQgetvalue(res, i, 4),
        };
        each(&info, data);
    }
    PQclear(res);
    return 0;
}
