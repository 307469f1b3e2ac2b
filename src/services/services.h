/*
 * The state the core's services share, and what they use of each other. Each service (one
 * .c each) is a table of plain functions, one row a method (services/registry.h): a method
 * allocates its reply from call->arena and returns 0, or a WL_E* code with call->err filled.
 */
#ifndef WALKLIST_SERVICES_H
#define WALKLIST_SERVICES_H

#include <pthread.h>
#include <stdatomic.h>

#include "services/key_cache.h"
#include "services/admissions.h"
#include "services/shard_placement.h"
#include "services/announcements.h"
#include "services/rate_lease.h"
#include "services/invoke.h"
#include "services/registry.h"
#include "store/pool.h"
#include "store/secrets.h"
#include "walklist/core.h"
#include "walklist/v1/inventory.pb-c.h"
#include "walklist/v1/locate_list.pb-c.h"
#include "walklist/v1/scanner.pb-c.h"
#include "walklist/v1/stock.pb-c.h"

/*
 * The page-token key, read from the database once and then kept: state goes
 * 0 (empty) -> 1 (one thread filling bytes) -> 2 (bytes final). Zero memory
 * is the empty state (the core is calloc'ed).
 */
typedef struct {
    atomic_int state;
    unsigned char bytes[WL_SECRET_SIZE];
} wl_secret_cache_t;

enum { WL_SERVICE_COUNT = 4 };

/* wl_core_t.ready_last_rc before the first readiness check (no error code is positive). */
#define READY_NEVER_CHECKED 1

struct wl_core {
    char *database_url; /* the primary's, for connections outside the pool (outboxes) */
    wl_pool_t *pool;
    wl_pool_t *read_pool; /* a replica for the export and the breakdown; NULL: use pool */
    int rate_window_ms;
    int rate_locate_lists, rate_stock_export, rate_shared;
    wl_key_cache_t *keys;              /* NULL: every key checked in the database */
    wl_announcements_t *announcements; /* key revocations and export changes, heard */
    wl_rate_leases_t *leases;
    wl_admissions_t *admissions;
    wl_shard_placement_t *shards; /* where admission groups go on a distributed database */
    wl_core_node_t nodes[WL_CORE_NODES_MAX]; /* as the last readiness check found them */
    size_t node_count;                       /* under ready_lock */
    /* Webhook attempts recorded through this process's outboxes, and its outboxes open (the
     * delivery workers): wl_core_webhook_stats. */
    atomic_uint_fast64_t webhook_delivered, webhook_failed, webhook_refused, webhook_disabled;
    atomic_int outboxes_open;
    pthread_mutex_t hook_lock;  /* the hook may be set while requests are served */
    pthread_mutex_t ready_lock; /* the readiness check, at most one a second */
    int64_t ready_checked_ms;   /* monotonic; 0: never */
    int ready_rc;
    wl_error_t ready_err;
    atomic_int ready_last_rc; /* ready_rc for readers that do not wait; READY_NEVER_CHECKED */
    void (*export_changed)(int64_t org_id, void *data); /* see wl_core_on_export_change */
    void *export_changed_data;
    wl_secret_cache_t page_secret; /* StockService's page tokens */
    wl_service_entry_t services[WL_SERVICE_COUNT];
    wl_protobuf_service_t protobuf_services[WL_SERVICE_COUNT]; /* services[i].service */
    const wl_method_t **methods[WL_SERVICE_COUNT];             /* services[i].methods; owned */
};

/* Each service's method table, defined with its methods. */
extern const wl_service_table_t wl__locate_list_service;
extern const wl_service_table_t wl__stock_service;
extern const wl_service_table_t wl__scanner_service;
extern const wl_service_table_t wl__inventory_service;

/**
 * Lets a request in (see wl_admission_t), with work when not NULL: the work
 * then travels in the same statement, and is done only when the request is
 * let in. A decided admission (or none: NULL, the work's org_id is then whose
 * it is) only sends the work. Returns the admission's refusal, or else the
 * statement's rc (0: work->done says whether it was done, and the work holds
 * its answers). A call that runs again after its admission's group passes the
 * work it sent then (wl__admit_sent), which holds that group's answers.
 */
int wl__admit(wl_core_t *core, wl_admission_t *admission, wl_admit_work_t *work,
              wl_error_t *err) WL_CHECK_RESULT;

/** Sends work (caller-owned, alive until the admission is decided) with the admission's
 * decision, done in its group once the request is let in (wl_admission_read_export_version). */
void wl__admission_attach(wl_admission_t *admission, wl_admit_work_t *work);
wl_admit_work_t *wl__admission_work(const wl_admission_t *admission);

/** The arena the admission lives in (the request's). */
wl_arena_t *wl__admission_arena(const wl_admission_t *admission);

/** The work a call sent with its admission when it stopped there (wl__admission_defer), as it
 * runs again: what it validated and computed then; NULL otherwise. */
wl_admit_work_t *wl__admit_sent(const wl_admission_t *admission);

/*
 * The steps under wl_admission_decide_async and wl_core_invoke_async: run where nothing may
 * wait, a step stops with WL__EWOULDWAIT where it would wait for the database, before it has
 * done anything that running it again would repeat, or at its admission, prepared for the
 * next group (wl__admission_prepared) and run again once that group is done.
 */
#define WL__EWOULDWAIT (WL__ERRNO_BASE - 1)

/** Whether the admission's decider may not wait (the step runs where nothing may wait). */
void wl__admission_defer(wl_admission_t *admission, bool defer);
bool wl__admission_defers(const wl_admission_t *admission);

/** True when a step that may not wait stopped at this admission: it is prepared for the
 * database and waits for wl__admission_queue. */
bool wl__admission_prepared(const wl_admission_t *admission);

/** Sends a prepared admission in the next group and returns at once; done(data) runs on a
 * committer when its group has committed or failed. */
void wl__admission_queue(wl_core_t *core, wl_admission_t *admission, void (*done)(void *data),
                         void *data);

/** After a commit that may have changed the organization's export, before the answer. */
void wl__core_export_may_have_changed(wl_core_t *core, int64_t org_id);

/** The pool for stock reads: the replica's when configured, else the primary's. */
wl_pool_t *wl__core_read_pool(wl_core_t *core);

/* Cursors are about 80 characters (a version of up to 19 digits and a MAC, base64url). */
#define WL_EXPORT_CURSOR_MAX 160

/**
 * The page-token key (page tokens and export cursors), into secret. Read from the database on
 * conn once per process, then kept in the core (conn may be NULL after that:
 * wl_core_export_since_waits says false). It may create the secret: not inside a read-only
 * transaction.
 */
int wl__page_secret(wl_core_t *core, PGconn *conn, unsigned char secret[WL_SECRET_SIZE],
                    wl_error_t *err) WL_CHECK_RESULT;

/** What an export cursor is bound to: the cursor's purpose and the organization (org holds its
 * digits), so that one organization's cursor cannot be used by another. */
void wl__export_cursor_scope(int64_t org_id, char org[24], wl_span_t scope[2]);

/**
 * The export cursor of an organization's export version (what ExportStock answers as
 * "cursor", and ?since= takes), into out. Reads the page-token secret on conn on the process's
 * first use (it may create it: not inside a read-only transaction).
 */
int wl__export_cursor_seal(wl_core_t *core, PGconn *conn, int64_t org_id, int64_t version,
                           char out[WL_EXPORT_CURSOR_MAX], wl_error_t *err) WL_CHECK_RESULT;

/** Timestamp message for milliseconds since the epoch, from the call's arena (NULL on ENOMEM). */
Google__Protobuf__Timestamp *wl__timestamp_from_ms(wl_arena_t *arena, int64_t ms);

#endif
