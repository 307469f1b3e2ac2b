/*
 * The core's one announcements connection (src/services/announcements.h): it hears key
 * revocations and export changes alike, tells export subscribers when it listens and when it
 * lost its connection, and once killed (pg_terminate_backend) it listens again and hears both
 * channels as before. Every wait polls for its condition with a deadline.
 */
#include <stdatomic.h>

#include "fixture.h"
#include "test.h"
#include "testdb.h"
#include "walklist/core.h"

static const char *conninfo;
static PGconn *db;

typedef struct {
    atomic_int listening, lost, changed;
    atomic_llong last_org;
    atomic_int changed_zero; /* changes announced for no organization */
} heard_t;

static void on_listening(void *data)
{
    atomic_fetch_add(&((heard_t *)data)->listening, 1);
}

static void on_lost(void *data)
{
    atomic_fetch_add(&((heard_t *)data)->lost, 1);
}

static void on_changed(int64_t org_id, void *data)
{
    heard_t *heard = data;
    if (org_id == 0)
        atomic_fetch_add(&heard->changed_zero, 1);
    atomic_store(&heard->last_org, org_id);
    atomic_fetch_add(&heard->changed, 1);
}

/* Polls until *counter reaches at_least, for 10 s at most. */
static bool reaches(atomic_int *counter, int at_least)
{
    return test_wait_for_count(counter, at_least, 10000);
}

static wl_core_t *core_new(int key_cache_ttl_ms)
{
    wl_core_config_t config = {
        .database_url = conninfo, .db_pool_size = 2, .key_cache_ttl_ms = key_cache_ttl_ms};
    return fixture_core(&config);
}

static wl_export_subscription_t *subscribe(wl_core_t *core, heard_t *heard)
{
    wl_export_changes_t hooks = {
        .listening = on_listening, .changed = on_changed, .lost = on_lost, .data = heard};
    wl_export_subscription_t *subscription = NULL;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_core_export_changes_subscribe(core, &hooks, &subscription, &err), 0);
    return subscription;
}

static long long announcement_connections(void)
{
    return testdb_count(db, "SELECT count(*) FROM pg_stat_activity WHERE datname ="
                            " current_database() AND application_name = 'walklistd-announcements'");
}

static bool no_connection(void *data)
{
    (void)data;
    return announcement_connections() == 0;
}

static int authenticate(wl_core_t *core, const char *token)
{
    wl_principal_t principal;
    wl_error_t err;
    wl_error_init(&err);
    return wl_core_authenticate(core, wl_span_str(token), &principal, &err);
}

/* Whether the key is answered from the cache: two checks, the second one a hit. */
static bool key_kept(wl_core_t *core, const char *token)
{
    wl_core_access_stats_t before, after;
    if (authenticate(core, token) != 0)
        return false;
    wl_core_access_stats(core, &before);
    if (authenticate(core, token) != 0)
        return false;
    wl_core_access_stats(core, &after);
    return after.key_cache_hits == before.key_cache_hits + 1;
}

static bool key_watch_listening(void *core)
{
    wl_core_access_stats_t stats;
    wl_core_access_stats(core, &stats);
    return stats.key_watch_listening;
}

static bool refused(void *data)
{
    void **core_and_token = data;
    return authenticate(core_and_token[0], core_and_token[1]) == WL_EUNAUTHENTICATED;
}

/* Changes org's export from this test's connection: another process, as the core sees it. */
static void change_export(int64_t org, int on_hand)
{
    char csv[128];
    snprintf(csv, sizeof(csv), "sku,warehouse,on_hand\nP1,W,%d\n", on_hand);
    fixture_import(db, org, "stock", csv);
}

static bool hears_change_of(heard_t *heard, int64_t org, int on_hand)
{
    int before = atomic_load(&heard->changed);
    change_export(org, on_hand);
    return reaches(&heard->changed, before + 1) && atomic_load(&heard->last_org) == org;
}

/* One connection, whoever listens: the key cache and two subscribers share it. */
static void test_one_connection_for_both(int64_t org)
{
    wl_core_t *core = core_new(0);
    heard_t first = {0}, second = {0};
    wl_export_subscription_t *a = subscribe(core, &first);
    CHECK(reaches(&first.listening, 1));
    wl_export_subscription_t *b = subscribe(core, &second); /* told at once: it listens already */
    CHECK(reaches(&second.listening, 1));
    CHECK(test_wait_for(key_watch_listening, core, 10000));
    CHECK_INT(announcement_connections(), 1);
    CHECK(hears_change_of(&first, org, 11));
    CHECK(reaches(&second.changed, 1));
    wl_core_export_changes_unsubscribe(core, a);
    CHECK(hears_change_of(&second, org, 12));
    CHECK_INT(atomic_load(&first.changed), 1); /* unsubscribed: told nothing more */
    wl_core_export_changes_unsubscribe(core, b);
    wl_core_destroy(core);
}

/* Without a key cache the connection waits for the first subscriber. */
static void test_connection_waits_for_a_user(int64_t org)
{
    /* The last test's connection leaves pg_stat_activity once its server process has gone. */
    CHECK(test_wait_for(no_connection, NULL, 10000));
    wl_core_t *core = core_new(-1);
    CHECK_INT(announcement_connections(), 0);
    heard_t heard = {0};
    wl_export_subscription_t *subscription = subscribe(core, &heard);
    CHECK(reaches(&heard.listening, 1));
    CHECK_INT(announcement_connections(), 1);
    CHECK(hears_change_of(&heard, org, 13));
    wl_core_export_changes_unsubscribe(core, subscription);
    wl_core_destroy(core);
}

/* Killed: subscribers are told lost, then listening again; the key cache forgets every key;
 * a revocation and an export change announced after the kill are both heard. */
static void test_killed_connection(int64_t org)
{
    char token[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org, "stock:read", token);
    wl_core_t *core = core_new(0);
    heard_t heard = {0};
    wl_export_subscription_t *subscription = subscribe(core, &heard);
    CHECK(reaches(&heard.listening, 1));
    CHECK(test_wait_for(key_watch_listening, core, 10000));
    CHECK(key_kept(core, token));

    CHECK_INT(testdb_count(db, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                               " WHERE datname = current_database()"
                               " AND application_name = 'walklistd-announcements'"),
              1);
    CHECK(reaches(&heard.lost, 1));
    CHECK(reaches(&heard.listening, 2));
    CHECK(test_wait_for(key_watch_listening, core, 10000));
    CHECK_INT(atomic_load(&heard.lost), 1); /* one loss, told once */

    CHECK(hears_change_of(&heard, org, 14));
    wl_core_access_stats_t before, after;
    wl_core_access_stats(core, &before);
    CHECK_INT(authenticate(core, token), 0);
    wl_core_access_stats(core, &after);
    CHECK_INT(after.key_cache_misses, before.key_cache_misses + 1); /* forgotten at the loss */
    CHECK(key_kept(core, token)); /* kept again, now that revocations are heard */
    fixture_revoke(db, token);
    void *core_and_token[] = {core, token};
    CHECK(test_wait_for(refused, core_and_token, 10000));
    CHECK_INT(atomic_load(&heard.changed_zero), 0); /* revocations are not export changes */
    wl_core_export_changes_unsubscribe(core, subscription);
    wl_core_destroy(core);
    CHECK(test_wait_for(no_connection, NULL, 10000));
}

int main(void)
{
    conninfo = testdb_create("integration_announcements");
    db = testdb_connect(conninfo);
    int64_t org = fixture_org(db, "announcements");
    fixture_import(db, org, "warehouses", "code,name,kind\nW,Main,own\n");
    fixture_import(db, org, "products", "sku,name,eans\nP1,One,\n");
    change_export(org, 10);
    test_one_connection_for_both(org);
    test_connection_waits_for_a_user(org);
    test_killed_connection(org);
    PQfinish(db);
    return test_exit();
}
