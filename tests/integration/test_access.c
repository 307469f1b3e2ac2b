/*
 * The key cache and the rate-limit permit leases, with two cores standing for two walklistd
 * processes on one database: revoked keys are refused once announced, and leased permits never
 * let more than the limit through, in total or in any rolling window.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fixture.h"
#include "test.h"
#include "testdb.h"
#include "walklist/admin.h"
#include "walklist/core.h"
#include "walklist/v1/locate_list.pb-c.h"
#include "walklist/v1/stock.pb-c.h"

static const char *conninfo;
static PGconn *db;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static wl_core_t *core_new(int window_ms, int limit, int lease_ms)
{
    wl_core_config_t config = {.database_url = conninfo,
                               .db_pool_size = 4,
                               .rate_window_ms = window_ms,
                               .rate_locate_lists = limit,
                               .rate_lease_ms = lease_ms};
    return fixture_core(&config);
}

static int authenticate(wl_core_t *core, const char *token)
{
    wl_principal_t principal;
    wl_error_t err;
    wl_error_init(&err);
    return wl_core_authenticate(core, wl_span_str(token), &principal, &err);
}

/* The key watch connects in the background; keys are kept only once it listens. */
static void wait_listening(wl_core_t *core)
{
    wl_core_access_stats_t stats;
    int64_t give_up = now_ns() + 5000000000LL;
    do {
        wl_core_access_stats(core, &stats);
        if (stats.key_watch_listening)
            return;
        struct timespec pause = {0, 10000000};
        nanosleep(&pause, NULL);
    } while (now_ns() < give_up);
    FAIL("the key watch never listened");
}

static void test_revoked_key_leaves_the_cache(int64_t org)
{
    char token[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org, "lists:write", token);
    wl_core_t *a = core_new(0, 0, 0), *b = core_new(0, 0, 0);
    wait_listening(a);
    wait_listening(b);

    wl_core_access_stats_t before, after;
    CHECK_INT(authenticate(a, token), 0); /* read from the database, then kept */
    CHECK_INT(authenticate(b, token), 0);
    wl_core_access_stats(a, &before);
    CHECK_INT(authenticate(a, token), 0);
    wl_core_access_stats(a, &after);
    CHECK_INT(after.key_cache_hits, before.key_cache_hits + 1);

    /* The same prefix with another secret is refused, cached or not. */
    char forged[WL_KEY_TOKEN_SIZE];
    snprintf(forged, sizeof(forged), "%s", token);
    forged[strlen(forged) - 1] = forged[strlen(forged) - 1] == 'a' ? 'b' : 'a';
    CHECK_INT(authenticate(a, forged), WL_EUNAUTHENTICATED);
    CHECK_INT(authenticate(a, token), 0);

    /* Revoked from elsewhere (walklistctl, another process): both cores learn of it. */
    char prefix[9];
    snprintf(prefix, sizeof(prefix), "%.8s", token + 4);
    wl_admin_t *admin = NULL;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_admin_connect(conninfo, "test_access", &admin, &err), 0);
    CHECK_INT(wl_admin_key_revoke(admin, prefix, &err), 0);
    wl_admin_close(admin);
    int64_t give_up = now_ns() + 3000000000LL;
    int rc_a = 0, rc_b = 0;
    while (now_ns() < give_up && (rc_a == 0 || rc_b == 0)) {
        rc_a = authenticate(a, token);
        rc_b = authenticate(b, token);
    }
    CHECK_INT(rc_a, WL_EUNAUTHENTICATED);
    CHECK_INT(rc_b, WL_EUNAUTHENTICATED);
    wl_core_destroy(a);
    wl_core_destroy(b);
}

typedef struct {
    wl_core_t *core;
    const char *token;
    int64_t stop_ns;   /* hammer until then, or */
    int stop_refusals; /* until this many refusals in a row */
    pthread_mutex_t *lock;
    int64_t *starts, *ends; /* of accepted requests */
    int *accepted, capacity;
} hammer_t;

static void *hammer(void *arg)
{
    hammer_t *h = arg;
    int refusals = 0;
    while ((h->stop_ns == 0 || now_ns() < h->stop_ns) &&
           (h->stop_refusals == 0 || refusals < h->stop_refusals)) {
        wl_principal_t principal;
        wl_rate_t rate;
        wl_error_t err;
        wl_error_init(&err);
        int64_t start = now_ns();
        int rc = wl_core_authorize(h->core, wl_span_str(h->token), "locate-lists", &principal,
                                   &rate, &err);
        int64_t end = now_ns();
        if (rc == WL_EEXHAUSTED) {
            refusals++;
            continue;
        }
        if (rc != 0) {
            FAIL("authorize: %s", err.message);
            return NULL;
        }
        refusals = 0;
        pthread_mutex_lock(h->lock);
        if (*h->accepted < h->capacity) {
            h->starts[*h->accepted] = start;
            h->ends[*h->accepted] = end;
        }
        (*h->accepted)++;
        pthread_mutex_unlock(h->lock);
    }
    return NULL;
}

enum { THREADS = 6, CAPACITY = 100000 };

typedef struct {
    pthread_mutex_t lock;
    int64_t starts[CAPACITY], ends[CAPACITY];
    int accepted;
} record_t;

static void run_hammers(wl_core_t *cores[2], const char *token, int64_t stop_ns, int stop_refusals,
                        record_t *record)
{
    pthread_t threads[THREADS];
    hammer_t hammers[THREADS];
    pthread_mutex_init(&record->lock, NULL);
    record->accepted = 0;
    for (int i = 0; i < THREADS; i++) {
        hammers[i] = (hammer_t){cores[i % 2],  token,          stop_ns,      stop_refusals,
                                &record->lock, record->starts, record->ends, &record->accepted,
                                CAPACITY};
        pthread_create(&threads[i], NULL, hammer, &hammers[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    pthread_mutex_destroy(&record->lock);
}

/* Two processes hammering one bucket until it is full: exactly the limit is let in, the
 * database counted exactly that (no leased permit lost, none spent twice), and most decisions
 * cost no round trip. */
static void test_leases_fill_the_bucket_exactly(int64_t org)
{
    enum { LIMIT = 640 };
    char token[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org, "lists:write", token);
    wl_core_t *cores[2] = {core_new(60000, LIMIT, 500), core_new(60000, LIMIT, 500)};
    static record_t record;
    run_hammers(cores, token, 0, 20, &record);
    CHECK_INT(record.accepted, LIMIT);
    CHECK_INT(fixture_counted(db, org, "locate-lists"), LIMIT);

    uint64_t round_trips = 0, local = 0, refills = 0;
    for (int i = 0; i < 2; i++) {
        wl_core_access_stats_t stats;
        wl_core_access_stats(cores[i], &stats);
        round_trips += stats.rate_round_trips;
        refills += stats.rate_refills;
        local += stats.rate_local;
        wl_core_destroy(cores[i]);
    }
    /* Leases of up to LIMIT / 16 permits: far fewer round trips than requests. */
    CHECK(round_trips * 4 < (uint64_t)LIMIT);
    CHECK(local > round_trips);
    /* Whether the refill threads asked ahead depends on scheduling (on a busy machine the
     * requests may run a lease dry first); whatever they asked went into the exact counts
     * above. */
    (void)refills;
}

/* Over several windows, with permits leased, expiring and returned: no rolling window ever
 * holds more than the limit, and the limit is reached (the leases waste nothing for long). */
static void test_leases_keep_every_rolling_window(int64_t org)
{
    enum { LIMIT = 96, WINDOW_MS = 1000, LEASE_MS = 300, RUN_MS = 3500 };
    char token[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org, "lists:write", token);
    wl_core_t *cores[2] = {core_new(WINDOW_MS, LIMIT, LEASE_MS),
                           core_new(WINDOW_MS, LIMIT, LEASE_MS)};
    static record_t record;
    run_hammers(cores, token, now_ns() + (int64_t)RUN_MS * 1000000, 0, &record);
    int n = record.accepted < CAPACITY ? record.accepted : CAPACITY;
    int worst = 0;
    /* A request was decided between its start and end: those starting at or after request i's
     * start and ending within one window of it were all decided inside one window. */
    for (int i = 0; i < n; i++) {
        int inside = 0;
        for (int j = 0; j < n; j++)
            if (record.starts[j] >= record.starts[i] &&
                record.ends[j] < record.starts[i] + (int64_t)WINDOW_MS * 1000000)
                inside++;
        if (inside > worst)
            worst = inside;
    }
    CHECK(worst <= LIMIT);
    CHECK(worst >= LIMIT / 2);
    /* Three and a half windows: at least three windows' worth, give or take the lease time. */
    CHECK(record.accepted >= 2 * LIMIT);
    if (worst > LIMIT || record.accepted < 2 * LIMIT)
        fprintf(stderr, "accepted %d, at most %d in one window\n", record.accepted, worst);
    wl_core_destroy(cores[0]);
    wl_core_destroy(cores[1]);
}

/* A full bucket is remembered for a moment: hammering it costs no round trips. */
static void test_full_bucket_is_remembered(int64_t org)
{
    char token[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org, "lists:write", token);
    wl_core_t *core = core_new(60000, 3, 0);
    wl_principal_t principal;
    wl_rate_t rate;
    wl_error_t err;
    for (int i = 0; i < 3; i++) {
        wl_error_init(&err);
        CHECK_INT(
            wl_core_authorize(core, wl_span_str(token), "locate-lists", &principal, &rate, &err),
            0);
        CHECK_INT(rate.remaining, 2 - i);
    }
    wl_core_access_stats_t before, after;
    wl_core_access_stats(core, &before);
    for (int i = 0; i < 50; i++) {
        wl_error_init(&err);
        CHECK_INT(
            wl_core_authorize(core, wl_span_str(token), "locate-lists", &principal, &rate, &err),
            WL_EEXHAUSTED);
        CHECK_INT(rate.remaining, 0);
        CHECK(rate.reset_s >= 59 && rate.reset_s <= 60);
    }
    wl_core_access_stats(core, &after);
    CHECK(after.rate_round_trips - before.rate_round_trips <= 1);
    CHECK_INT(fixture_counted(db, org, "locate-lists"), 3);
    wl_core_destroy(core);
}

/* What a completion saw: that it ran, and on which thread. */
typedef struct {
    sem_t done;
    pthread_t thread;
} completion_seen_t;

static void completed(void *data)
{
    completion_seen_t *seen = data;
    seen->thread = pthread_self();
    sem_post(&seen->done);
}

static void wait_completed(completion_seen_t *seen)
{
    while (sem_wait(&seen->done) != 0)
        ;
}

/* A stand-in for a server's request threads: each job on a thread of its own. */
typedef struct {
    pthread_t thread;
    wl_job_t *job;
    int jobs;
} thread_executor_t;

static void *run_job(void *data)
{
    thread_executor_t *executor = data;
    executor->job->run(executor->job);
    return NULL;
}

static void run_on_thread(wl_job_t *job, void *data)
{
    thread_executor_t *executor = data;
    executor->job = job;
    executor->jobs++;
    if (pthread_create(&executor->thread, NULL, run_job, executor) != 0)
        FAIL("pthread_create");
}

/* A completion whose waits run on threads of their own (executor) and which reports to seen
 * (sem_destroy(&seen->done) after). */
static wl_completion_t threaded_completion(thread_executor_t *executor, completion_seen_t *seen)
{
    *executor = (thread_executor_t){0};
    sem_init(&seen->done, 0, 0);
    return (wl_completion_t){run_on_thread, executor, completed, seen};
}

/*
 * An admission decided asynchronously (as libmicrohttpd's threads decide them): what the
 * process knows is decided at once, without the completion; the rest goes to the database in a
 * group and the completion runs on the committer once it is decided. A permit fetch is settled
 * there too, whether or not its request looks at the decision again, so the next request of the
 * bucket goes to the database instead of finding the bucket busy for ever.
 */
static void test_admission_decided_asynchronously(int64_t org)
{
    char token[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org, "lists:write", token);
    wl_core_t *core = core_new(60000, 30, 0);
    wait_listening(core); /* so that the key is known after its first check */
    const wl_method_policy_t policy = {WL_SCOPE_LISTS_WRITE, "locate-lists", false};
    thread_executor_t executor;
    completion_seen_t seen;
    const wl_completion_t completion = threaded_completion(&executor, &seen);
    wl_error_t err;

    /* A key seen for the first time: decided in a group, on the committer. */
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    wl_admission_t *first = wl_core_admission(core, &arena, wl_span_str(token), &policy);
    CHECK(!wl_admission_decide_async(core, first, &completion));
    wait_completed(&seen);
    CHECK(!pthread_equal(seen.thread, pthread_self()));
    CHECK(!wl_admission_pending(first));
    CHECK_INT(fixture_counted(db, org, "locate-lists"), 1);
    wl_error_init(&err);
    CHECK_INT(wl_admission_decide(core, first, &err), 0);
    CHECK_INT(wl_admission_principal(first)->org_id, org);
    CHECK_INT(wl_admission_rate(first)->remaining, 29);
    wl_arena_dispose(&arena);

    /* The key is known now: its bucket's permit is fetched. The request never looks again. */
    wl_arena_init(&arena, 0);
    wl_admission_t *left = wl_core_admission(core, &arena, wl_span_str(token), &policy);
    CHECK(!wl_admission_decide_async(core, left, &completion));
    wait_completed(&seen);
    wl_arena_dispose(&arena);
    CHECK_INT(fixture_counted(db, org, "locate-lists"), 2);

    /* So the next request goes to the database too, not stopped by a busy bucket. */
    wl_arena_init(&arena, 0);
    wl_admission_t *next = wl_core_admission(core, &arena, wl_span_str(token), &policy);
    CHECK(!wl_admission_decide_async(core, next, &completion));
    wait_completed(&seen);
    wl_error_init(&err);
    CHECK_INT(wl_admission_decide(core, next, &err), 0);
    CHECK_INT(wl_admission_rate(next)->remaining, 27);
    wl_arena_dispose(&arena);

    /* What needs no database is decided at once: no completion, nothing counted. */
    wl_arena_init(&arena, 0);
    wl_admission_t *malformed = wl_core_admission(core, &arena, wl_span_str("not-a-key"), &policy);
    CHECK(wl_admission_decide_async(core, malformed, &completion));
    CHECK_INT(wl_admission_result(malformed), WL_EUNAUTHENTICATED);
    wl_arena_dispose(&arena);
    CHECK_INT(fixture_counted(db, org, "locate-lists"), 3);
    CHECK_INT(sem_trywait(&seen.done), -1);
    CHECK_INT(executor.jobs, 0); /* nothing here waited anywhere but in a group */
    sem_destroy(&seen.done);
    wl_core_destroy(core);
}

/* One call of a method of a core service, started asynchronously. */
typedef struct {
    wl_arena_t arena;
    wl_error_t err;
    wl_call_t call;
    bool finished;
} async_call_t;

static void start_call(async_call_t *ctx, wl_core_t *core, const char *token,
                       const char *service_name, const char *method_name,
                       const ProtobufCMessage *input, const wl_completion_t *completion)
{
    wl_arena_init(&ctx->arena, 0);
    wl_error_init(&ctx->err);
    const wl_service_entry_t *service = wl_core_find_service(core, service_name);
    const ProtobufCMethodDescriptor *method =
        protobuf_c_service_descriptor_get_method_by_name(service->descriptor, method_name);
    unsigned index = (unsigned)(method - service->descriptor->methods);
    ctx->call = (wl_call_t){.core = core,
                            .arena = &ctx->arena,
                            .err = &ctx->err,
                            .admission = wl_core_admission(core, &ctx->arena, wl_span_str(token),
                                                           wl_core_method_policy(service, index))};
    ctx->finished = wl_core_invoke_async(&ctx->call, service, index, input, completion);
}

/*
 * A call run asynchronously: a creation travels in its admission's group and finishes on the
 * committer (no other thread); its refusal of a bad list writes nothing; a method that waits
 * otherwise runs on the executor's thread; without an executor it finishes before its start
 * returns.
 */
static void test_call_runs_asynchronously(int64_t org)
{
    char token[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org, "lists:write,stock:read", token);
    wl_core_t *core = core_new(60000, 30, 0);
    thread_executor_t executor;
    completion_seen_t seen;
    const wl_completion_t completion = threaded_completion(&executor, &seen);
    char *codes[] = {"SKU-1", "SKU-2"};
    Walklist__V1__CreateLocateListRequest create = WALKLIST__V1__CREATE_LOCATE_LIST_REQUEST__INIT;
    create.name = "Async";
    create.codes = codes;
    create.n_codes = 2;
    char count_sql[128];
    snprintf(count_sql, sizeof(count_sql), "SELECT count(*) FROM locate_lists WHERE org_id = %lld",
             (long long)org);

    async_call_t ctx;
    start_call(&ctx, core, token, "walklist.v1.LocateListService", "CreateLocateList", &create.base,
               &completion);
    CHECK(!ctx.finished);
    wait_completed(&seen);
    CHECK(!pthread_equal(seen.thread, pthread_self()));
    CHECK_INT(ctx.err.code, 0);
    CHECK(ctx.call.reply != NULL);
    const Walklist__V1__CreateLocateListResponse *created = (const void *)ctx.call.reply;
    CHECK_INT(created != NULL ? created->codes_count : -1, 2);
    CHECK_INT(testdb_count(db, count_sql), 1);
    CHECK_INT(executor.jobs, 0);
    wl_arena_dispose(&ctx.arena);

    /* A bad list: refused after its admission, nothing written. */
    codes[1] = "";
    start_call(&ctx, core, token, "walklist.v1.LocateListService", "CreateLocateList", &create.base,
               &completion);
    if (!ctx.finished)
        wait_completed(&seen);
    CHECK_INT(ctx.err.code, WL_EINVAL);
    CHECK(ctx.call.reply == NULL);
    CHECK_INT(testdb_count(db, count_sql), 1);
    wl_arena_dispose(&ctx.arena);

    /* A method whose statements wait: on the executor's thread. */
    Walklist__V1__ExportStockRequest export_request = WALKLIST__V1__EXPORT_STOCK_REQUEST__INIT;
    start_call(&ctx, core, token, "walklist.v1.StockService", "ExportStock", &export_request.base,
               &completion);
    CHECK(!ctx.finished);
    wait_completed(&seen);
    CHECK_INT(executor.jobs, 1);
    CHECK(pthread_equal(seen.thread, executor.thread));
    pthread_join(executor.thread, NULL);
    CHECK_INT(ctx.err.code, 0);
    CHECK(ctx.call.reply != NULL);
    wl_arena_dispose(&ctx.arena);

    /* Without an executor, it waits where it started. */
    const wl_completion_t here = {NULL, NULL, completed, &seen};
    start_call(&ctx, core, token, "walklist.v1.StockService", "ExportStock", &export_request.base,
               &here);
    CHECK(ctx.finished);
    CHECK_INT(ctx.err.code, 0);
    CHECK(ctx.call.reply != NULL);
    CHECK_INT(sem_trywait(&seen.done), -1);
    wl_arena_dispose(&ctx.arena);
    sem_destroy(&seen.done);
    wl_core_destroy(core);
}

/* One export admission asking for the version, decided now; whether the version came, in out. */
static bool export_version_read(wl_core_t *core, const char *token, int expected_result,
                                int64_t *out)
{
    const wl_method_policy_t policy = {WL_SCOPE_STOCK_READ, "stock-export", false};
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    wl_admission_t *admission = wl_core_admission(core, &arena, wl_span_str(token), &policy);
    wl_admission_read_export_version(core, admission);
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_admission_decide(core, admission, &err), expected_result);
    *out = -1;
    bool read = wl_admission_export_version(admission, out);
    wl_arena_dispose(&arena);
    return read;
}

/*
 * An export's admission reads the organization's export version in its group when asked (the
 * conditional export's one statement): 0 before any change, the current one after, decided
 * here or on a committer, for a key checked by the statement or one the process knows; nothing
 * for a refused request, and nothing asked where exports are read from a replica, whose
 * version may lag the primary's.
 */
static void test_admission_reads_export_version(int64_t org)
{
    char token[WL_KEY_TOKEN_SIZE], lists_only[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org, "stock:read", token);
    fixture_key(db, org, "lists:write", lists_only);
    wl_core_t *core = core_new(60000, 30, 0);
    wait_listening(core);
    int64_t version = -1;
    CHECK(export_version_read(core, token, 0, &version)); /* the key checked by the statement */
    CHECK_INT(version, 0);

    char sql[192];
    snprintf(sql, sizeof(sql), "INSERT INTO export_versions (org_id, version) VALUES (%lld, 4242)",
             (long long)org);
    testdb_exec(db, sql);
    CHECK(export_version_read(core, token, 0, &version)); /* the key known by now */
    CHECK_INT(version, 4242);

    /* On a committer, as libmicrohttpd's threads decide admissions. */
    const wl_method_policy_t policy = {WL_SCOPE_STOCK_READ, "stock-export", false};
    thread_executor_t executor;
    completion_seen_t seen;
    const wl_completion_t completion = threaded_completion(&executor, &seen);
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    wl_admission_t *deferred = wl_core_admission(core, &arena, wl_span_str(token), &policy);
    wl_admission_read_export_version(core, deferred);
    if (!wl_admission_decide_async(core, deferred, &completion))
        wait_completed(&seen);
    CHECK_INT(wl_admission_result(deferred), 0);
    version = -1;
    CHECK(wl_admission_export_version(deferred, &version));
    CHECK_INT(version, 4242);
    wl_arena_dispose(&arena);
    if (executor.jobs > 0)
        pthread_join(executor.thread, NULL);
    sem_destroy(&seen.done);

    /* Refused: a key without the scope, a key that is no key. */
    CHECK(!export_version_read(core, lists_only, WL_EPERMISSION, &version));
    CHECK_INT(version, -1);
    CHECK(!export_version_read(core, "wlk_nothing_nothing", WL_EUNAUTHENTICATED, &version));
    wl_core_destroy(core);

    /* A replica for exports (here the same database under another pool): never asked. */
    wl_core_config_t config = {.database_url = conninfo,
                               .read_database_url = conninfo,
                               .db_pool_size = 4,
                               .rate_window_ms = 60000,
                               .rate_locate_lists = 30};
    wl_core_t *replicated = fixture_core(&config);
    CHECK(!export_version_read(replicated, token, 0, &version));
    wl_core_destroy(replicated);
}

int main(void)
{
    conninfo = testdb_create("integration_access");
    db = testdb_connect(conninfo);
    test_revoked_key_leaves_the_cache(fixture_org(db, "access-keys"));
    test_leases_fill_the_bucket_exactly(fixture_org(db, "access-fill"));
    test_leases_keep_every_rolling_window(fixture_org(db, "access-window"));
    test_full_bucket_is_remembered(fixture_org(db, "access-full"));
    test_admission_decided_asynchronously(fixture_org(db, "access-deferred"));
    test_call_runs_asynchronously(fixture_org(db, "access-async"));
    test_admission_reads_export_version(fixture_org(db, "access-export-version"));
    PQfinish(db);
    return test_exit();
}
