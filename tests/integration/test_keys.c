/*
 * API keys against a real PostgreSQL: token shape (wlk_ + prefix + _ + secret), what the
 * database keeps (prefix and SHA-256 only), authentication, revocation, organizations and
 * scopes.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "store/keys.h"
#include "test.h"
#include "testdb.h"

static PGconn *conn;

#define SECRET32 "0123456789abcdefghijABCDEFGHIJxy"
#define SECRET40 "0123456789abcdefghijABCDEFGHIJKLMNOPQRST"

static bool is_base62(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

typedef struct {
    const char *what;
    const char *token;
    size_t len;         /* 0: strlen(token) */
    const char *prefix; /* expected prefix when accepted, NULL when rejected */
} parse_case_t;

static void test_parse(void)
{
    /* The longest accepted token: 128 characters, a secret of 115. */
    static char longest[128 + 1], too_long[129 + 1];
    memcpy(longest, "wlk_Abc12345_", 13);
    memset(longest + 13, 'z', 115);
    longest[128] = '\0';
    memcpy(too_long, longest, 128);
    too_long[128] = 'z';
    too_long[129] = '\0';

    const parse_case_t cases[] = {
        {"32-character secret", "wlk_Abc12345_" SECRET32, 0, "Abc12345"},
        {"40-character secret", "wlk_zzzzzzzz_" SECRET40, 0, "zzzzzzzz"},
        {"128 characters", longest, 0, "Abc12345"},
        {"129 characters", too_long, 0, NULL},
        {"31-character secret", "wlk_Abc12345_0123456789abcdefghijABCDEFGHIJx", 0, NULL},
        {"empty", "", 0, NULL},
        {"prefix only", "wlk_", 0, NULL},
        {"no secret", "wlk_Abc12345_", 0, NULL},
        {"upper-case marker", "WLK_Abc12345_" SECRET32, 0, NULL},
        {"other marker", "wlx_Abc12345_" SECRET32, 0, NULL},
        {"dash after marker", "wlk-Abc12345_" SECRET32, 0, NULL},
        {"dash before secret", "wlk_Abc12345-" SECRET32, 0, NULL},
        {"7-character prefix", "wlk_Abc1234_" SECRET32 "z", 0, NULL},
        {"9-character prefix", "wlk_Abc123456_" SECRET32, 0, NULL},
        {"dash in prefix", "wlk_Abc-2345_" SECRET32, 0, NULL},
        {"underscore in secret", "wlk_Abc12345_" SECRET32 "_x", 0, NULL},
        {"dash in secret", "wlk_Abc12345_" SECRET32 "-x", 0, NULL},
        {"plus in secret", "wlk_Abc12345_" SECRET32 "+", 0, NULL},
        {"slash in secret", "wlk_Abc12345_" SECRET32 "/", 0, NULL},
        {"space in secret", "wlk_Abc12345_0123456789 abcdefghijABCDEFGHIJxy", 0, NULL},
        {"trailing newline", "wlk_Abc12345_" SECRET32 "\n", 0, NULL},
        {"leading space", " wlk_Abc12345_" SECRET32, 0, NULL},
        {"non-ASCII in secret", "wlk_Abc12345_" SECRET32 "\xC3\xA9", 0, NULL},
        {"NUL in secret", "wlk_Abc12345_0123456789\0bcdefghijABCDEFGHIJxy", 45, NULL},
        {"Bearer scheme left in", "Bearer wlk_Abc12345_" SECRET32, 0, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const parse_case_t *c = &cases[i];
        char prefix[WL_KEY_PREFIX_LEN + 1] = "unset";
        wl_span_t token = wl_span(c->token, c->len ? c->len : strlen(c->token));
        bool accepted = wl_keys_parse(token, prefix);
        int failures = test_failures;
        CHECK_INT(accepted, c->prefix != NULL);
        if (accepted && c->prefix != NULL)
            CHECK_STR(prefix, c->prefix);
        if (test_failures != failures)
            fprintf(stderr, "  in parse case \"%s\"\n", c->what);
    }
}

typedef struct {
    const char *text;
    unsigned scopes; /* 0: rejected */
} scopes_case_t;

static void test_scopes(void)
{
    const scopes_case_t cases[] = {
        {"lists:write", WL_SCOPE_LISTS_WRITE},
        {"stock:read", WL_SCOPE_STOCK_READ},
        {"scanner", WL_SCOPE_SCANNER},
        {"inventory:write", WL_SCOPE_INVENTORY_WRITE},
        {"lists:write,stock:read", WL_SCOPE_LISTS_WRITE | WL_SCOPE_STOCK_READ},
        {"scanner,lists:write,inventory:write,stock:read",
         WL_SCOPE_LISTS_WRITE | WL_SCOPE_STOCK_READ | WL_SCOPE_SCANNER | WL_SCOPE_INVENTORY_WRITE},
        {"stock:read,stock:read", WL_SCOPE_STOCK_READ},
        {"", 0},
        {",", 0},
        {"admin", 0},
        {"lists:write,admin", 0},
        {"lists:write,,stock:read", 0},
        {"LISTS:WRITE", 0},
        {"lists:read", 0},
        {" lists:write", 0},
        {"lists:write ", 0},
        {"lists", 0},
        {"lists:write;stock:read", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        wl_error_t err;
        wl_error_init(&err);
        unsigned scopes = 12345;
        int rc = wl_scopes_parse(cases[i].text, &scopes, &err);
        int failures = test_failures;
        if (cases[i].scopes != 0) {
            CHECK_INT(rc, 0);
            CHECK_INT(scopes, cases[i].scopes);
        } else {
            CHECK_INT(rc, WL_EINVAL);
            CHECK_INT(err.violation_count, 1);
            CHECK_STR(err.violations[0].field, "scopes");
        }
        if (test_failures != failures)
            fprintf(stderr, "  in scopes case \"%s\"\n", cases[i].text);
    }
    /* The message names the unknown scope. */
    wl_error_t err;
    wl_error_init(&err);
    unsigned scopes = 0;
    CHECK_INT(wl_scopes_parse("stock:read,admin", &scopes, &err), WL_EINVAL);
    CHECK(strstr(err.violations[0].description, "admin") != NULL);

    char text[128];
    wl_scopes_format(WL_SCOPE_LISTS_WRITE | WL_SCOPE_STOCK_READ, text, sizeof(text));
    CHECK_STR(text, "lists:write,stock:read");
}

static void create_key(int64_t org, unsigned scopes, const char *name,
                       char token[WL_KEY_TOKEN_SIZE])
{
    wl_error_t err;
    wl_error_init(&err);
    int rc = wl_keys_create(conn, org, scopes, name, token, &err);
    CHECK_INT(rc, 0);
    if (rc != 0) {
        fprintf(stderr, "  wl_keys_create: %s\n", err.message);
        exit(1);
    }
}

static int authenticate(const char *token, wl_principal_t *principal)
{
    wl_error_t err;
    wl_error_init(&err);
    wl_principal_t ignored;
    return wl_keys_authenticate(conn, wl_span_str(token), principal ? principal : &ignored, &err);
}

/* How many api_keys rows have text (as the whole row prints) containing needle. */
static long long rows_containing(const char *needle)
{
    const char *params[] = {needle};
    PGresult *res = PQexecParams(conn,
                                 "SELECT count(*) FROM api_keys k"
                                 " WHERE strpos(k::text, $1) > 0"
                                 " OR strpos(encode(k.token_hash, 'escape'), $1) > 0",
                                 1, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "rows_containing: %s", PQresultErrorMessage(res));
        exit(1);
    }
    long long count = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    return count;
}

static void test_create_and_store(void)
{
    int64_t org = fixture_org(conn, "store");
    char token[WL_KEY_TOKEN_SIZE], other[WL_KEY_TOKEN_SIZE];
    create_key(org, WL_SCOPE_LISTS_WRITE | WL_SCOPE_STOCK_READ, "ci-key-name", token);
    create_key(org, WL_SCOPE_SCANNER, "", other);

    /* wlk_ + 8 base62 + _ + at least 32 base62. */
    size_t len = strlen(token);
    CHECK(len >= 4 + 8 + 1 + 32);
    CHECK_INT(len, 4 + WL_KEY_PREFIX_LEN + 1 + WL_KEY_SECRET_LEN);
    CHECK(strncmp(token, "wlk_", 4) == 0);
    CHECK(token[12] == '_');
    bool base62 = true;
    for (size_t i = 4; i < len; i++) {
        if (i != 12 && !is_base62(token[i]))
            base62 = false;
    }
    CHECK(base62);
    char prefix[WL_KEY_PREFIX_LEN + 1];
    CHECK(wl_keys_parse(wl_span_str(token), prefix));
    CHECK(strncmp(prefix, token + 4, 8) == 0);
    /* Two keys share nothing. */
    CHECK(strncmp(token + 4, other + 4, 8) != 0);
    CHECK(strcmp(token + 13, other + 13) != 0);

    /* The database keeps the prefix and the SHA-256 of the whole token, nothing of the secret. */
    const char *secret = token + 13;
    CHECK_INT(testdb_count(conn, "SELECT count(*) FROM api_keys"), 2);
    CHECK_INT(rows_containing(prefix), 1);
    CHECK_INT(rows_containing(secret), 0);
    CHECK_INT(rows_containing(token), 0);
    char half[17];
    memcpy(half, secret, 16);
    half[16] = '\0';
    CHECK_INT(rows_containing(half), 0);
    CHECK_INT(rows_containing(secret + 24), 0);
    /* The check above would see a secret that was there. */
    CHECK_INT(rows_containing("ci-key-name"), 1);

    const char *params[] = {prefix, token};
    PGresult *res = PQexecParams(conn,
                                 "SELECT token_hash = sha256(convert_to($2, 'UTF8')),"
                                 " array_to_string(scopes, ','), name, revoked_at IS NULL,"
                                 " (SELECT count(*) FROM information_schema.columns"
                                 "  WHERE table_name = 'api_keys')"
                                 " FROM api_keys WHERE prefix = $1",
                                 2, NULL, params, NULL, NULL, 0);
    CHECK(PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1);
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
        CHECK_STR(PQgetvalue(res, 0, 0), "t");
        CHECK_STR(PQgetvalue(res, 0, 1), "lists:write,stock:read");
        CHECK_STR(PQgetvalue(res, 0, 2), "ci-key-name");
        CHECK_STR(PQgetvalue(res, 0, 3), "t");
        /* A new column would need a look at what it stores. */
        CHECK_STR(PQgetvalue(res, 0, 4), "7");
    }
    PQclear(res);
}

typedef struct {
    char prefixes[8][WL_KEY_PREFIX_LEN + 1];
    char scopes[8][64];
    bool revoked[8];
    size_t count;
} key_listing_t;

static void collect_key(const wl_key_info_t *info, void *data)
{
    key_listing_t *listing = data;
    if (listing->count < 8) {
        snprintf(listing->prefixes[listing->count], WL_KEY_PREFIX_LEN + 1, "%s", info->prefix);
        snprintf(listing->scopes[listing->count], 64, "%s", info->scopes);
        listing->revoked[listing->count] = info->revoked_at != NULL;
    }
    listing->count++;
}

static void test_authenticate(void)
{
    int64_t north = fixture_org(conn, "north");
    int64_t south = fixture_org(conn, "south");
    CHECK(north != south);
    char north_key[WL_KEY_TOKEN_SIZE], north_key2[WL_KEY_TOKEN_SIZE], south_key[WL_KEY_TOKEN_SIZE];
    create_key(north, WL_SCOPE_LISTS_WRITE | WL_SCOPE_STOCK_READ, "north", north_key);
    create_key(north, WL_SCOPE_SCANNER | WL_SCOPE_INVENTORY_WRITE, "north 2", north_key2);
    create_key(south, WL_SCOPE_STOCK_READ, "south", south_key);

    wl_principal_t who;
    memset(&who, 0xAB, sizeof(who));
    CHECK_INT(authenticate(north_key, &who), 0);
    CHECK_INT(who.org_id, north);
    CHECK_STR(who.org_slug, "north");
    CHECK(strncmp(who.key_prefix, north_key + 4, 8) == 0 && strlen(who.key_prefix) == 8);
    CHECK_INT(who.scopes, WL_SCOPE_LISTS_WRITE | WL_SCOPE_STOCK_READ);

    CHECK_INT(authenticate(north_key2, &who), 0);
    CHECK_INT(who.org_id, north);
    CHECK_INT(who.scopes, WL_SCOPE_SCANNER | WL_SCOPE_INVENTORY_WRITE);

    CHECK_INT(authenticate(south_key, &who), 0);
    CHECK_INT(who.org_id, south);
    CHECK_STR(who.org_slug, "south");
    CHECK_INT(who.scopes, WL_SCOPE_STOCK_READ);

    /* Wrong secret: last character changed, or the secret of another key with this prefix. */
    char wrong[WL_KEY_TOKEN_SIZE + 8];
    snprintf(wrong, sizeof(wrong), "%s", north_key);
    size_t last = strlen(wrong) - 1;
    wrong[last] = wrong[last] == 'a' ? 'b' : 'a';
    CHECK_INT(authenticate(wrong, NULL), WL_EUNAUTHENTICATED);
    snprintf(wrong, sizeof(wrong), "%.13s%s", north_key, south_key + 13);
    CHECK_INT(authenticate(wrong, NULL), WL_EUNAUTHENTICATED);
    /* A longer secret that starts with the right one. */
    snprintf(wrong, sizeof(wrong), "%sA", north_key);
    CHECK_INT(authenticate(wrong, NULL), WL_EUNAUTHENTICATED);
    /* Unknown prefix, right secret. */
    snprintf(wrong, sizeof(wrong), "%s", north_key);
    wrong[4] = wrong[4] == 'a' ? 'b' : 'a';
    CHECK_INT(authenticate(wrong, NULL), WL_EUNAUTHENTICATED);
    /* Malformed. */
    CHECK_INT(authenticate("", NULL), WL_EUNAUTHENTICATED);
    CHECK_INT(authenticate("wlk_", NULL), WL_EUNAUTHENTICATED);
    snprintf(wrong, sizeof(wrong), "%.45s", north_key); /* 32-character secret */
    CHECK_INT(authenticate(wrong, NULL), WL_EUNAUTHENTICATED);

    /* Revoking one key leaves the others working; revoking twice is fine. */
    char prefix[WL_KEY_PREFIX_LEN + 1];
    CHECK(wl_keys_parse(wl_span_str(north_key), prefix));
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_keys_revoke(conn, prefix, &err), 0);
    CHECK_INT(authenticate(north_key, NULL), WL_EUNAUTHENTICATED);
    CHECK_INT(authenticate(north_key2, NULL), 0);
    CHECK_INT(authenticate(south_key, NULL), 0);
    wl_error_init(&err);
    CHECK_INT(wl_keys_revoke(conn, prefix, &err), 0);
    CHECK_INT(authenticate(north_key, NULL), WL_EUNAUTHENTICATED);
    wl_error_init(&err);
    CHECK_INT(wl_keys_revoke(conn, "nosuchpx", &err), WL_ENOTFOUND);

    /* Listing shows prefix, scopes and revocation; the struct has no place for a secret. */
    key_listing_t listing;
    memset(&listing, 0, sizeof(listing));
    wl_error_init(&err);
    CHECK_INT(wl_keys_list(conn, north, collect_key, &listing, &err), 0);
    CHECK_INT(listing.count, 2);
    CHECK_STR(listing.prefixes[0], prefix);
    CHECK_STR(listing.scopes[0], "lists:write,stock:read");
    CHECK(listing.revoked[0]);
    CHECK(strncmp(listing.prefixes[1], north_key2 + 4, 8) == 0);
    CHECK_STR(listing.scopes[1], "scanner,inventory:write");
    CHECK(!listing.revoked[1]);
    memset(&listing, 0, sizeof(listing));
    CHECK_INT(wl_keys_list(conn, south, collect_key, &listing, &err), 0);
    CHECK_INT(listing.count, 1);
}

/* Where a request of an unchecked key will go (admission groups of one node), and what checks it
 * there: each active key's organization, slug, scopes and secret's digest; nothing for a revoked
 * or unknown prefix; in the order asked. */
static void test_keys_of_prefixes(void)
{
    int64_t east = fixture_org(conn, "east");
    int64_t west = fixture_org(conn, "west");
    char east_key[WL_KEY_TOKEN_SIZE], west_key[WL_KEY_TOKEN_SIZE], gone_key[WL_KEY_TOKEN_SIZE];
    create_key(east, WL_SCOPE_LISTS_WRITE, "east", east_key);
    create_key(west, WL_SCOPE_LISTS_WRITE | WL_SCOPE_STOCK_READ, "west", west_key);
    create_key(west, WL_SCOPE_LISTS_WRITE, "gone", gone_key);
    char prefixes[5][WL_KEY_PREFIX_LEN + 1];
    CHECK(wl_keys_parse(wl_span_str(west_key), prefixes[0]));
    CHECK(wl_keys_parse(wl_span_str(gone_key), prefixes[1]));
    snprintf(prefixes[2], sizeof(prefixes[2]), "nosuchpx");
    CHECK(wl_keys_parse(wl_span_str(east_key), prefixes[3]));
    CHECK(wl_keys_parse(wl_span_str(west_key), prefixes[4])); /* asked twice */
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_keys_revoke(conn, prefixes[1], &err), 0);
    wl_key_of_prefix_t keys[5];
    memset(keys, 0xAB, sizeof(keys));
    CHECK_INT(
        wl_keys_of_prefixes(conn, (const char(*)[WL_KEY_PREFIX_LEN + 1]) prefixes, 5, keys, &err),
        0);
    CHECK_INT(keys[0].principal.org_id, west);
    CHECK_INT(keys[1].principal.org_id, 0);
    CHECK_INT(keys[2].principal.org_id, 0);
    CHECK_INT(keys[3].principal.org_id, east);
    CHECK_INT(keys[4].principal.org_id, west);
    CHECK_STR(keys[0].principal.org_slug, "west");
    CHECK_STR(keys[3].principal.org_slug, "east");
    CHECK_STR(keys[0].principal.key_prefix, prefixes[0]);
    CHECK_INT(keys[0].principal.scopes, WL_SCOPE_LISTS_WRITE | WL_SCOPE_STOCK_READ);
    CHECK_INT(keys[3].principal.scopes, WL_SCOPE_LISTS_WRITE);
    unsigned char digest[WL_KEY_DIGEST_SIZE];
    wl_keys_digest(wl_span_str(west_key), digest);
    CHECK(memcmp(keys[0].digest, digest, sizeof(digest)) == 0);
    CHECK(memcmp(keys[4].digest, digest, sizeof(digest)) == 0);
    wl_keys_digest(wl_span_str(east_key), digest);
    CHECK(memcmp(keys[3].digest, digest, sizeof(digest)) == 0);
    CHECK_INT(wl_keys_of_prefixes(conn, NULL, 0, keys, &err), 0);
}

int main(void)
{
    conn = testdb_connect(testdb_create("wl_test_keys"));
    test_parse();
    test_scopes();
    test_create_and_store();
    test_authenticate();
    test_keys_of_prefixes();
    PQfinish(conn);
    return test_exit();
}
