/*
 * The walklist core as the transports see it: create it over a database,
 * authenticate API keys, and invoke the protobuf-c services (walk lists,
 * stock) through one registry that also says which scope each method needs.
 * The core knows nothing of HTTP; it returns WL_E* codes that map to gRPC
 * status codes.
 */
#ifndef WALKLIST_CORE_H
#define WALKLIST_CORE_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "walklist/arena.h"
#include "walklist/error.h"
#include "walklist/scopes.h"
#include "walklist/span.h"

typedef struct wl_core wl_core_t;

/* What wl_core_create takes for a number left 0. walklistd's options (gateway/process/config.h)
 * start from the same values, named here so that each is written once. */
#define WL_CORE_DEFAULT_DB_POOL_SIZE         8
#define WL_CORE_DEFAULT_DB_TIMEOUT_MS        5000
#define WL_CORE_DEFAULT_STATEMENT_TIMEOUT_MS 30000
#define WL_CORE_DEFAULT_RATE_WINDOW_MS       60000
#define WL_CORE_DEFAULT_RATE_LOCATE_LISTS    30
#define WL_CORE_DEFAULT_RATE_STOCK_EXPORT    30
#define WL_CORE_DEFAULT_RATE_SHARED          60
#define WL_CORE_DEFAULT_KEY_CACHE_TTL_MS     600000
#define WL_CORE_DEFAULT_RATE_LEASE_MS        10000
#define WL_CORE_DEFAULT_COMMIT_GROUPS        2

/* Every number left 0 takes its WL_CORE_DEFAULT_ value. */
typedef struct {
    const char *database_url;      /* libpq conninfo or URI */
    const char *read_database_url; /* optional replica for the export and breakdown (NULL: none) */
    int db_pool_size;
    /* how long a request waits to reach the database (a free connection, a new one, a server
     * gone silent) before WL_EUNAVAILABLE */
    int db_timeout_ms;
    int statement_timeout_ms;
    int rate_window_ms;    /* the rolling window of every bucket */
    int rate_locate_lists; /* requests per window */
    int rate_stock_export; /* requests per window */
    int rate_shared;       /* requests per window */
    int key_cache_ttl_ms;  /* checked keys are kept this long; < 0: no cache */
    int rate_lease_ms;     /* leased permits are held this long; < 0: no leases */
    /* admissions in flight at once (at most db_pool_size), each for every request that needs
     * the database meanwhile (group commit); < 0: each request commits alone */
    int commit_groups;
    /* on a distributed database (Citus), admissions of one worker's organizations go through
     * the coordinator instead of straight to that worker */
    bool workers_through_coordinator;
} wl_core_config_t;

/**
 * WL_EINVAL, saying why (its secrets redacted), when url is neither a libpq conninfo nor a
 * postgres:// URI that libpq can read: such a URL never connects, so a program refuses it at
 * startup instead of serving 503 (wl_core_create refuses it too).
 */
int wl_core_check_database_url(const char *url, wl_error_t *err) WL_CHECK_RESULT;

/**
 * Creates the core. Before anything else it matches each service's method table with the
 * service's descriptor by name: a method without a row (so without a policy) or a row naming
 * no method fails with WL_EINTERNAL naming them, so a proto change cannot ship a method that
 * nothing guards.
 */
int wl_core_create(const wl_core_config_t *config, wl_core_t **out,
                   wl_error_t *err) WL_CHECK_RESULT;
void wl_core_destroy(wl_core_t *core);

/** Database pool figures for metrics: the size, connections lent out, connections open, and
 * whether the database is reachable (false from a failed connection until the pool's prober
 * connects again; requests meanwhile are refused WL_EUNAVAILABLE at once). */
/** Connections lent by the primary's pool and by the read replica's (0 without one) since the
 * core was made: what requests cost the pools, for metrics and tests. */
void wl_core_pool_borrows(wl_core_t *core, uint64_t *primary, uint64_t *read);

void wl_core_pool_stats(wl_core_t *core, int *size, int *in_use, int *open, bool *reachable);

/**
 * Registers the function called after this process commits a write that may
 * have changed an organization's export (before the write is answered), so
 * that a cache of exports in this process never outlives it, even before
 * PostgreSQL's announcement arrives. Call it once, before serving.
 */
void wl_core_on_export_change(wl_core_t *core, void (*changed)(int64_t org_id, void *data),
                              void *data);

/**
 * Shutdown: from now on no request reaches the database, a distributed database's workers
 * included (requests that would are refused WL_EUNAVAILABLE, "shutting down"); those already at
 * it finish. Returns at once.
 */
void wl_core_close_database(wl_core_t *core);

/** Database connections lent out to requests right now, a distributed database's workers'
 * included (0: none is at the database). */
int wl_core_database_busy(wl_core_t *core);

/** Admission commits so far (group commit), the requests they held, and the commits sent
 * straight to a distributed database's worker (not through its coordinator). */
void wl_core_admission_stats(wl_core_t *core, uint64_t *commits, uint64_t *requests,
                             uint64_t *on_workers);

/** How requests were let in: keys from the cache or the database, rate decisions from leased
 * permits or a round trip (a key checked in the database counts its request there too). */
typedef struct {
    uint64_t key_cache_hits, key_cache_misses;
    uint64_t rate_local, rate_round_trips;
    uint64_t rate_refills; /* permits asked for ahead, off the requests' path */
    bool key_watch_listening;
} wl_core_access_stats_t;

void wl_core_access_stats(wl_core_t *core, wl_core_access_stats_t *out);

/** Webhook delivery attempts of this process, by how they ended (as its deliverers recorded
 * them: walklist/outbox.h). */
typedef struct {
    uint64_t delivered; /* a 2xx answer */
    uint64_t failed;    /* another answer, none in time, or no connection */
    uint64_t refused;   /* the URL's host resolved to an address deliveries may not go to */
    uint64_t disabled;  /* endpoints disabled after failing for too long */
    int workers;        /* outboxes open: one per delivery thread */
} wl_core_webhook_stats_t;

void wl_core_webhook_stats(wl_core_t *core, wl_core_webhook_stats_t *out);

/** 0 when the database answers and its schema is current; WL_EUNAVAILABLE otherwise. */
int wl_core_ready(wl_core_t *core, wl_error_t *err) WL_CHECK_RESULT;

/**
 * As wl_core_ready, but while another caller is checking, the last check's answer at once
 * instead of waiting for the check in flight: for callers that look often and must not pile up
 * on a database that does not answer (gRPC health Watch streams). Before any check, it checks.
 */
int wl_core_ready_without_waiting(wl_core_t *core) WL_CHECK_RESULT;

/*
 * The nodes beyond the database walklistd connects to (a Citus coordinator's workers), as the
 * last readiness check (wl_core_ready) found them. An unreachable worker does not make the
 * process not ready: every process of the deployment sees the same cluster, and taking them
 * all out of service would stop the organizations on the healthy workers too; its own
 * organizations get 503 with Retry-After at once.
 */
#define WL_CORE_NODES_MAX 64
typedef struct {
    char address[280]; /* host:port as the coordinator names it */
    bool reachable;
} wl_core_node_t;

/** Copies up to max nodes into out and returns how many there are (0: one server). */
size_t wl_core_nodes(wl_core_t *core, wl_core_node_t *out, size_t max);

/** The workers this process sends admissions to itself (--db-workers direct), as up to max
 * nodes: reachable false from a failed connection until one works (their groups then go
 * through the coordinator). 0: none (one server, or through the coordinator). */
size_t wl_core_worker_routes(wl_core_t *core, wl_core_node_t *out, size_t max);

/**
 * Checks an API key (the whole "wlk_..." token). WL_EUNAUTHENTICATED for a
 * malformed, unknown or revoked key; WL_EUNAVAILABLE when the database is down.
 * Keys are compared by their SHA-256, so timing tells nothing about the secret.
 */
int wl_core_authenticate(wl_core_t *core, wl_span_t token, wl_principal_t *out,
                         wl_error_t *err) WL_CHECK_RESULT;

/** A rate-limit decision for one request (per organization and bucket, rolling window). */
typedef struct {
    const char *bucket; /* "locate-lists", "stock-export" or "shared" */
    int limit;          /* requests per window */
    int window_s;
    int remaining; /* after this request */
    int reset_s;   /* until the oldest counted request leaves the window */
    bool accepted;
} wl_rate_t;

/** Requests per window of a bucket (0 for an unknown bucket). */
int wl_core_rate_limit(const wl_core_t *core, const char *bucket);

/**
 * Checks an API key and counts the request against the organization's bucket,
 * in one database round trip. WL_EUNAUTHENTICATED as wl_core_authenticate;
 * WL_EEXHAUSTED (principal and rate filled) when the bucket is full, in which
 * case the request was not counted.
 */
int wl_core_authorize(wl_core_t *core, wl_span_t token, const char *bucket, wl_principal_t *out,
                      wl_rate_t *rate, wl_error_t *err) WL_CHECK_RESULT;

/** Per-method policy: the scope a key needs and the rate-limit bucket it counts in. */
typedef struct {
    unsigned scope;
    const char *rate_bucket;
    /* The method lets its request in itself, together with its own database work: a request
     * the process cannot decide alone then costs one round trip in all (see wl_admission_t). */
    bool admits_with_work;
    /* The method answers with a stream of messages (rpc ... returns (stream ...)); protobuf-c's
     * descriptors do not say so. Its run checks the request and answers where the stream
     * starts (a message of the stream's type that is never sent); transports that stream make
     * every message themselves (from wl_core_export_open_since), the others refuse it. */
    bool server_streaming;
} wl_method_policy_t;

/**
 * A request's admission: its API key checked (of its organization, hashed), its
 * method's scope, and the request counted against the method's rate-limit
 * bucket. What this process knows (keys it checked lately, permits it
 * leased, a bucket it saw full) is decided at once, without the database;
 * the rest is decided there, in one statement shared with the other requests
 * in flight (one round trip, one durable commit), and, for methods that admit
 * with their work, together with that work. Arena memory: lives as long as
 * the request.
 *
 *     wl_admission_t *admission = wl_core_admission(core, arena, token, policy);
 *     // ...read the body; a method that admits with its work decides it then:
 *     call.admission = admission;
 *     rc = wl_core_invoke(&call, service, method, input);
 *     if (wl_admission_refused(admission))
 *         answer_refusal(wl_admission_result(admission), ...); // 401, 403, 429, 503
 */
typedef struct wl_admission wl_admission_t;

/**
 * Starts the admission of a request with token for a method of policy
 * (policy->rate_bucket NULL: the key is only checked, nothing counted). Never
 * waits for the database. NULL when out of memory.
 */
wl_admission_t *wl_core_admission(wl_core_t *core, wl_arena_t *arena, wl_span_t token,
                                  const wl_method_policy_t *policy);

/** True until the admission is decided. */
bool wl_admission_pending(const wl_admission_t *admission);

/**
 * A piece of work handed to another thread: its owner embeds it and keeps it alive until run
 * returns.
 */
typedef struct wl_job {
    void (*run)(struct wl_job *job);
    struct wl_job *next;
} wl_job_t;

/**
 * How an asynchronous step of the core (wl_admission_decide_async, wl_core_invoke_async) ends.
 * The core waits for the database where it can without a thread (an admission's group on a
 * committer); every other wait runs on run_elsewhere's threads. done(data) runs once, on the
 * thread that finished the step (a committer, or one of run_elsewhere's), possibly before the
 * step's start has returned; it must not wait for anything.
 */
typedef struct {
    /* Runs job on a thread that may wait for the database; NULL: such a wait happens in the
     * starting thread, and the step finishes before its start returns. */
    void (*run_elsewhere)(wl_job_t *job, void *executor);
    void *executor;
    void (*done)(void *data);
    void *data;
} wl_completion_t;

/**
 * Decides the admission (as wl_admission_decide) without waiting in the calling thread: true
 * when it is decided on return (from what the process knows, or it was decided already), and
 * completion->done is not called; false when it went to the database, and completion->done
 * runs once it is decided. The caller keeps the admission (its arena) alive until then; then
 * wl_admission_decide gives the decision at once.
 */
bool wl_admission_decide_async(wl_core_t *core, wl_admission_t *admission,
                               const wl_completion_t *completion);

/**
 * Decides the admission now when it is pending (one round trip at most),
 * and returns the decision: 0 let in; WL_EUNAUTHENTICATED (malformed,
 * unknown or revoked key: nothing counted); WL_EEXHAUSTED (the bucket is
 * full: not counted); WL_EPERMISSION (the key lacks the method's scope: the
 * request was counted); WL_EUNAVAILABLE and others when the database
 * failed. err receives the decision's message. Deciding again repeats it.
 */
int wl_admission_decide(wl_core_t *core, wl_admission_t *admission,
                        wl_error_t *err) WL_CHECK_RESULT;

/** The decision (as wl_admission_decide returned it); 0 while pending. */
int wl_admission_result(const wl_admission_t *admission);

/** True when decided and refused. */
bool wl_admission_refused(const wl_admission_t *admission);

/** Who the key stands for: from the start for a key this process knows, else once decided and
 * the key is valid (zeroed before). */
const wl_principal_t *wl_admission_principal(const wl_admission_t *admission);

/** The rate-limit decision, once decided with a valid key and a bucket. */
const wl_rate_t *wl_admission_rate(const wl_admission_t *admission);

/**
 * Asks a pending admission of the export (ExportStock) to read the organization's export
 * version in its group, in the statement that decides it, where exports are read from the
 * database admissions use (no separate read database): a conditional export of an
 * organization this process holds no version of then costs one grouped statement, not that
 * and one of its own. Nothing when the admission is decided, or exports come from a replica
 * (whose version may lag the primary's).
 */
void wl_admission_read_export_version(wl_core_t *core, wl_admission_t *admission);

/** The version wl_admission_read_export_version asked for, once the admission let the request
 * in: false when it was not read (not asked, refused, or a database without the read). */
bool wl_admission_export_version(const wl_admission_t *admission, int64_t *version);

/** A method of a core service (its policy: wl_core_method_policy). */
typedef struct wl_method wl_method_t;

/** A core service: its protobuf-c descriptor and its methods. */
typedef struct {
    const ProtobufCServiceDescriptor *descriptor;
    /* The service for protobuf-c RPC users (a gRPC transport): its invoke takes a wl_call_t as
     * closure data and goes through wl_core_invoke, so the same checks apply. */
    ProtobufCService *service;
    /* One per descriptor->methods, in its order: wl_core_create matched each method with its
     * row by name and fails when a method has no row or a row no method. */
    const wl_method_t *const *methods;
} wl_service_entry_t;

/** Every core service; valid while the core lives. */
size_t wl_core_services(wl_core_t *core, const wl_service_entry_t **out);

/** Finds a service by full name ("walklist.v1.StockService"); NULL when unknown. */
const wl_service_entry_t *wl_core_find_service(wl_core_t *core, const char *full_name);

/** The policy of method method_index of service (as in its descriptor); NULL when the service
 * has no such method. */
const wl_method_policy_t *wl_core_method_policy(const wl_service_entry_t *service,
                                                unsigned method_index);

/**
 * One method call: the method allocates its reply and anything else from arena and reports
 * failures in err.
 */
typedef struct {
    wl_core_t *core;
    wl_arena_t *arena;
    /* How the request is let in. Pending, the method decides it before anything else, or with
     * its work when its policy says so; NULL: principal was let in by the caller. */
    wl_admission_t *admission;
    const wl_principal_t *principal; /* with an admission: wl_admission_principal's */
    wl_error_t *err;
    /* Transport metadata in: the Idempotency-Key header (NULL when absent). */
    const char *idempotency_key;
    /* The client may give up on the call (its deadline passed, it cancelled): gave_up(data) is
     * then true, and the call's statements are given up too (WL_ECANCELLED), rolled back. A
     * request counted in a group admission is not: the group commits together. NULL: never. */
    bool (*gave_up)(void *data);
    void *gave_up_data;
    /* Out: the reply repeats the first response to this idempotency key. */
    bool replayed;
    const ProtobufCMessage *reply; /* set on success; arena memory */
} wl_call_t;

/**
 * Decides the call's admission unless the method admits with its work, checks
 * the principal's scope for the method, then invokes it. Returns 0 with
 * call->reply set, or a WL_E* code with call->err filled (the admission's
 * refusal when it was refused).
 */
int wl_core_invoke(wl_call_t *call, const wl_service_entry_t *service, unsigned method_index,
                   const ProtobufCMessage *input) WL_CHECK_RESULT;

/**
 * Runs the call (as wl_core_invoke) without waiting in the calling thread: true when it
 * finished on return (refused from what the process knows, say), and completion->done is not
 * called; false when it waits for the database, and completion->done runs once it finished.
 * Either way call->reply or call->err then says how it ended. A method that admits with its
 * work sends it in its admission's group and finishes on the committer; any other wait runs on
 * completion->run_elsewhere's threads. The caller keeps call, its arena and input alive until
 * the call finished.
 */
bool wl_core_invoke_async(wl_call_t *call, const wl_service_entry_t *service, unsigned method_index,
                          const ProtobufCMessage *input, const wl_completion_t *completion);

/** One SKU of the stock export: its available quantity and primary rack location. */
typedef struct {
    const char *sku;
    int64_t qty;
    const char *location; /* NULL when the SKU has no primary rack */
    bool removed;         /* in a delta: the SKU left the export (qty 0, location NULL) */
} wl_export_item_t;

/**
 * The stock export of one organization, read row by row from one snapshot
 * (a REPEATABLE READ, READ ONLY transaction), so a transport can stream it
 * with flat memory. It holds one pooled database connection from open to
 * close; close it on every path (finished, abandoned, failed).
 */
typedef struct wl_export_cursor wl_export_cursor_t;

/**
 * Opens the export for the principal's organization: checks the scope
 * (stock:read, else WL_EPERMISSION), borrows a connection and takes the
 * snapshot, reading its data version and time. No row is read until the
 * first wl_export_cursor_next, so a conditional request whose version
 * matches costs one short query. WL_EUNAVAILABLE when the database is down.
 *
 *     wl_export_cursor_t *cursor;
 *     if (wl_core_export_open(core, &principal, &cursor, &err) != 0)
 *         return answer_error(&err);
 *     if (wl_export_cursor_version(cursor) == cached_version) {
 *         wl_export_cursor_close(cursor);
 *         return answer_not_modified();
 *     }
 *     wl_export_item_t item;
 *     while ((rc = wl_export_cursor_next(cursor, &item, &err)) == 1)
 *         write_item(&item);
 *     wl_export_cursor_close(cursor); // rc < 0: the export broke off half way
 */
int wl_core_export_open(wl_core_t *core, const wl_principal_t *principal, wl_export_cursor_t **out,
                        wl_error_t *err) WL_CHECK_RESULT;

/**
 * The delta export: as wl_core_export_open, but the items are the SKUs whose
 * exported values changed after the version since (wl_core_export_since of a
 * cursor), each once, in byte order, with its current values or removed.
 * WL_EHISTORY when the changes since then are no longer kept (the client
 * exports in full).
 */
int wl_core_export_open_since(wl_core_t *core, const wl_principal_t *principal, int64_t since,
                              wl_export_cursor_t **out, wl_error_t *err) WL_CHECK_RESULT;

/**
 * Checks a cursor (the opaque text of an export's "cursor") and gives the
 * version it stands for. A cursor is sealed for its organization (HMAC with
 * the page-token secret), so one that is garbage, altered, or another
 * organization's is WL_EINVAL with a violation of field. Reads the database
 * only on a process's first use of the secret.
 */
int wl_core_export_since(wl_core_t *core, const wl_principal_t *principal, const char *cursor,
                         const char *field, int64_t *since, wl_error_t *err) WL_CHECK_RESULT;

/** True while wl_core_export_since would read the database (the secret is not in memory yet). */
bool wl_core_export_since_waits(wl_core_t *core);

/**
 * The cursor of the snapshot (NUL-terminated, valid until close): a delta
 * from it gives every change after this export (or this delta).
 */
const char *wl_export_cursor_token(const wl_export_cursor_t *cursor);

/**
 * The organization's current export data version (as wl_export_cursor_version
 * would read it now), in one single-row statement, with the scope check of
 * wl_core_export_open: what a cache of export bodies keyed by version needs.
 */
int wl_core_export_version(wl_core_t *core, const wl_principal_t *principal, int64_t *version,
                           wl_error_t *err) WL_CHECK_RESULT;

/**
 * The organization's export data version in the snapshot: it changes exactly
 * when an exported value (a SKU's presence, qty or location) changes, and
 * only grows. 0 for an organization whose export never had a row.
 */
int64_t wl_export_cursor_version(const wl_export_cursor_t *cursor);

/** The snapshot's time, milliseconds since the epoch (the export's generatedAt). */
int64_t wl_export_cursor_generated_ms(const wl_export_cursor_t *cursor);

/**
 * The next SKU, in byte order: 1 with *item set (its strings are valid until
 * the next call or close), 0 after the last one, or a negative WL_E* code.
 */
int wl_export_cursor_next(wl_export_cursor_t *cursor, wl_export_item_t *item,
                          wl_error_t *err) WL_CHECK_RESULT;

/** Ends the read and gives the connection back; NULL is fine. */
void wl_export_cursor_close(wl_export_cursor_t *cursor);

/**
 * Notice of export changes made by other processes: each write that changes an organization's
 * export (and so its version) announces the organization at commit (NOTIFY wl_export_changed,
 * wl__export_bump). The core hears every announcement on one connection of its own (the same
 * one that hears key revocations), opened with the core (without a key cache, when the first
 * subscriber comes) and reopened after a failure, and tells each subscriber, on its one
 * listener thread:
 * - listening(data): announcements are heard from now on. Called first, as soon as the
 *   connection is up (at once when it already is), and again after each lost.
 * - changed(org_id, data): another process committed a change of org_id's export.
 * - lost(data): the connection was lost: announcements may have been missed, so whatever was
 *   derived from earlier ones must be dropped, until the next listening.
 * The functions are called under the core's lock of subscribers: they must not subscribe or
 * unsubscribe. This process's own writes are not announced here (wl_core_on_export_change).
 *
 *     wl_export_changes_t hooks = {.listening = trust, .changed = forget_org,
 *                                  .lost = forget_all, .data = cache};
 *     wl_export_subscription_t *subscription;
 *     if (wl_core_export_changes_subscribe(core, &hooks, &subscription, &err) != 0)
 *         return err.code;
 *     ...
 *     wl_core_export_changes_unsubscribe(core, subscription); // no call after it returns
 */
typedef struct {
    void (*listening)(void *data);
    void (*changed)(int64_t org_id, void *data);
    void (*lost)(void *data);
    void *data;
} wl_export_changes_t;

typedef struct wl_export_subscription wl_export_subscription_t;

/** Subscribes hooks (copied) to other processes' export changes; *out until unsubscribed. */
int wl_core_export_changes_subscribe(wl_core_t *core, const wl_export_changes_t *hooks,
                                     wl_export_subscription_t **out,
                                     wl_error_t *err) WL_CHECK_RESULT;

/** Ends a subscription: none of its functions runs after this returns. NULL is fine. */
void wl_core_export_changes_unsubscribe(wl_core_t *core, wl_export_subscription_t *subscription);

#endif
