/*
 * The export's snapshot cache (gateway/export/export_cache.h): an unchanged export is answered from
 * walklistd's cache, with no export query; any write that changes the export, made by any
 * process, is seen once announced (at once with WALKLIST_EXPORT_CACHE_TRUST_NOTIFY=0, which reads
 * the version on every request); by default the version is trusted from memory until a change
 * is announced.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"

static PGconn *db;
static int64_t org;
static char key[WL_KEY_TOKEN_SIZE], writer_key[WL_KEY_TOKEN_SIZE];

typedef struct {
    int status;
    char etag[128];
    char *body;
    size_t body_len;
} answer_t;

static answer_t export(uint16_t port, const char *extra_headers)
{
    char headers[768];
    snprintf(headers, sizeof(headers), "Authorization: Bearer %s\r\n%s", key,
             extra_headers ? extra_headers : "");
    http_response_t res;
    answer_t out = {0};
    if (http_request(port, "GET", "/api/v1/stock-export", headers, NULL, 0, &res) != 0) {
        FAIL("export request failed");
        return out;
    }
    out.status = res.status;
    http_header(&res, "ETag", out.etag, sizeof(out.etag));
    out.body = malloc(res.body_len + 1);
    memcpy(out.body, res.body, res.body_len);
    out.body[res.body_len] = '\0';
    out.body_len = res.body_len;
    http_response_free(&res);
    return out;
}

static bool same_body(const answer_t *a, const answer_t *b)
{
    return a->body_len == b->body_len && memcmp(a->body, b->body, a->body_len) == 0;
}

/* Changes the exported row behind the service's back: no version change, no announcement. */
static void tamper(int qty)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "UPDATE stock_availability SET qty = %d WHERE org_id = %lld AND sku = 'P1'", qty,
             (long long)org);
    testdb_exec(db, sql);
}

static void set_stock(int on_hand)
{
    char csv[128];
    snprintf(csv, sizeof(csv), "sku,warehouse,on_hand\nP1,W,%d\n", on_hand);
    fixture_import(db, org, "stock", csv);
}

static long long statement_calls(const char *piece)
{
    long long counts[2];
    testdb_statement_counts(db, piece, counts);
    return counts[0];
}

static void sleep_ms(long ms)
{
    struct timespec pause = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&pause, NULL);
}

int main(void)
{
    const char *conninfo = testdb_create("e2e_export_cache");
    db = testdb_connect(conninfo);
    testdb_exec(db, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    org = fixture_org(db, "cache");
    fixture_key(db, org, "stock:read", key);
    fixture_key(db, org, "inventory:write", writer_key);
    fixture_import(db, org, "warehouses", "code,name,kind\nW,Main,own\n");
    fixture_import(db, org, "products", "sku,name,eans\nP1,One,\nP2,Two,\n");
    set_stock(10);

    /* Reading the version on every request: a write elsewhere is seen at once. */
    setenv("WALKLIST_EXPORT_CACHE_TRUST_NOTIFY", "0", 1);
    service_t one, two;
    service_start(&one, conninfo, NULL);
    service_start(&two, conninfo, NULL);
    unsetenv("WALKLIST_EXPORT_CACHE_TRUST_NOTIFY");

    /* The second answer is the first's bytes: the cached body, read with no export query
     * (the tampered row would show otherwise). */
    answer_t first = export(one.port, NULL);
    CHECK_INT(first.status, 200);
    CHECK(strstr(first.body, "\"qty\":10") != NULL);
    tamper(777);
    answer_t again = export(one.port, NULL);
    CHECK_INT(again.status, 200);
    CHECK(same_body(&first, &again));
    CHECK_STR(again.etag, first.etag);
    char if_none_match[200];
    snprintf(if_none_match, sizeof(if_none_match), "If-None-Match: %s\r\n", first.etag);
    answer_t not_modified = export(one.port, if_none_match);
    CHECK_INT(not_modified.status, 304);
    CHECK_INT(not_modified.body_len, 0);

    /* The version of a conditional export is read in its admission's group, with the key's
     * check and its count, not in a statement of its own: for a key this process knows and for
     * one it has not seen (its organization known only once the group checked it). */
    static const char alone[] = "SELECT coalesce((SELECT version FROM export_versions";
    static const char grouped[] = "FROM export_versions ev WHERE ev.org_id";
    long long alone_before = statement_calls(alone), grouped_before = statement_calls(grouped);
    answer_t known_key = export(one.port, if_none_match);
    CHECK_INT(known_key.status, 304);
    char first_key[WL_KEY_TOKEN_SIZE];
    memcpy(first_key, key, sizeof(first_key));
    fixture_key(db, org, "stock:read", key); /* export() sends key */
    answer_t new_key = export(one.port, if_none_match);
    CHECK_INT(new_key.status, 304);
    memcpy(key, first_key, sizeof(key));
    CHECK_INT(statement_calls(alone) - alone_before, 0);
    CHECK_INT(statement_calls(grouped) - grouped_before, 2);
    free(known_key.body);
    free(new_key.body);

    /* gzip bodies are cached apart, byte for byte too. */
    answer_t gz1 = export(one.port, "Accept-Encoding: gzip\r\n");
    answer_t gz2 = export(one.port, "Accept-Encoding: gzip\r\n");
    CHECK_INT(gz1.status, 200);
    CHECK(same_body(&gz1, &gz2));
    CHECK(strcmp(gz1.etag, first.etag) != 0);

    /* A write by another process (this test's import) is seen at once by both services. */
    set_stock(25);
    answer_t after_one = export(one.port, NULL), after_two = export(two.port, NULL);
    CHECK(strstr(after_one.body, "\"qty\":25") != NULL);
    CHECK(strstr(after_two.body, "\"qty\":25") != NULL);
    CHECK(strcmp(after_one.etag, first.etag) != 0);
    CHECK_STR(after_two.etag, after_one.etag);
    answer_t stale = export(one.port, if_none_match);
    CHECK_INT(stale.status, 200);

    /* Trusting announcements (the default): versions come from memory, a write's NOTIFY
     * drops them. */
    setenv("WALKLIST_EXPORT_CACHE_TRUST_NOTIFY", "1", 1);
    service_t trusting;
    service_start(&trusting, conninfo, NULL);
    unsetenv("WALKLIST_EXPORT_CACHE_TRUST_NOTIFY");
    answer_t t1 = {0};
    /* The watch connects within a second or so; until then versions are read as usual. */
    for (int i = 0; i < 50; i++) {
        free(t1.body);
        t1 = export(trusting.port, NULL);
        sleep_ms(100);
    }
    CHECK(strstr(t1.body, "\"qty\":25") != NULL);
    char sql[256];
    snprintf(sql, sizeof(sql),
             "UPDATE export_versions SET version = version + 1 WHERE org_id = %lld",
             (long long)org);
    testdb_exec(db, sql); /* no announcement: the trusting service keeps its version */
    answer_t t2 = export(trusting.port, NULL);
    CHECK_STR(t2.etag, t1.etag);
    CHECK(same_body(&t1, &t2));
    set_stock(40); /* announced at commit */
    bool seen = false;
    for (int i = 0; i < 100 && !seen; i++) {
        answer_t t3 = export(trusting.port, NULL);
        seen = strstr(t3.body, "\"qty\":40") != NULL;
        free(t3.body);
        if (!seen)
            sleep_ms(20);
    }
    CHECK(seen);

    /* The service's own writes drop the version before they are answered: the very next export
     * shows them, whatever PostgreSQL's announcement is doing. */
    for (int on_hand = 41; on_hand <= 60; on_hand++) {
        char body[160], headers[256], expected[32];
        snprintf(body, sizeof(body),
                 "{\"items\":[{\"sku\":\"P1\",\"warehouse\":\"W\",\"onHand\":%d}]}", on_hand);
        snprintf(headers, sizeof(headers),
                 "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
                 "Connect-Protocol-Version: 1\r\n",
                 writer_key);
        http_response_t res;
        CHECK_INT(http_request(trusting.port, "POST", "/walklist.v1.InventoryService/SetStock",
                               headers, body, strlen(body), &res),
                  0);
        CHECK_INT(res.status, 200);
        http_response_free(&res);
        answer_t now = export(trusting.port, NULL);
        snprintf(expected, sizeof(expected), "\"qty\":%d", on_hand);
        CHECK(strstr(now.body, expected) != NULL);
        free(now.body);
    }

    answer_t *all[] = {&first,     &again,     &not_modified, &gz1, &gz2,
                       &after_one, &after_two, &stale,        &t1,  &t2};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        free(all[i]->body);
    CHECK_INT(service_stop(&trusting), 0);
    CHECK_INT(service_stop(&two), 0);
    CHECK_INT(service_stop(&one), 0);
    PQfinish(db);
    return test_exit();
}
