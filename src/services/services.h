/*
 * The core's protobuf-c services and the state they share. Every method
 * receives a wl_call_t as closure data (see walklist/core.h): it allocates its
 * reply from call->arena, reports failures in call->err, and calls the closure
 * with the reply, or with NULL on failure.
 */
#ifndef WALKLIST_SERVICES_H
#define WALKLIST_SERVICES_H

#include <pthread.h>
#include <stdatomic.h>

#include "services/key_cache.h"
#include "services/admissions.h"
#include "services/rate_lease.h"
#include "store/pool.h"
#include "store/secrets.h"
#include "walklist/core.h"
#include "walklist/v1/inventory.pb-c.h"
#include "walklist/v1/locate_list.pb-c.h"
#include "walklist/v1/scanner.pb-c.h"
#include "walklist/v1/stock.pb-c.h"

typedef struct {
    Walklist__V1__LocateListService_Service base;
    wl_core_t *core;
} wl_locate_list_service_t;

/*
 * The page-token key, read from the database once and then kept: state goes
 * 0 (empty) -> 1 (one thread filling bytes) -> 2 (bytes final). Zero memory
 * is the empty state (the core is calloc'ed).
 */
typedef struct {
    atomic_int state;
    unsigned char bytes[WL_SECRET_SIZE];
} wl_secret_cache_t;

typedef struct {
    Walklist__V1__StockService_Service base;
    wl_core_t *core;
    wl_secret_cache_t page_secret;
} wl_stock_service_t;

typedef struct {
    Walklist__V1__ScannerService_Service base;
    wl_core_t *core;
} wl_scanner_service_t;

typedef struct {
    Walklist__V1__InventoryService_Service base;
    wl_core_t *core;
} wl_inventory_service_t;

struct wl_core {
    char *database_url; /* the primary's, for connections outside the pool (export watch) */
    wl_pool_t *pool;
    wl_pool_t *read_pool; /* a replica for the export and the breakdown; NULL: use pool */
    int rate_window_ms;
    int rate_locate_lists, rate_stock_export, rate_shared;
    wl_key_cache_t *keys; /* NULL: every key checked in the database */
    wl_rate_leases_t *leases;
    wl_admissions_t *admissions;
    pthread_mutex_t hook_lock;  /* the hook may be set while requests are served */
    pthread_mutex_t ready_lock; /* the readiness check, at most one a second */
    int64_t ready_checked_ms;   /* monotonic; 0: never */
    int ready_rc;
    wl_error_t ready_err;
    void (*export_changed)(int64_t org_id, void *data); /* see wl_core_on_export_change */
    void *export_changed_data;
    wl_locate_list_service_t locate_list;
    wl_stock_service_t stock;
    wl_scanner_service_t scanner;
    wl_inventory_service_t inventory;
    wl_service_entry_t services[4];
};

void wl__locate_list_service_init(wl_locate_list_service_t *service, wl_core_t *core);
void wl__stock_service_init(wl_stock_service_t *service, wl_core_t *core);
void wl__scanner_service_init(wl_scanner_service_t *service, wl_core_t *core);
void wl__inventory_service_init(wl_inventory_service_t *service, wl_core_t *core);

extern const wl_method_policy_t wl__locate_list_policies[];
extern const wl_method_policy_t wl__stock_policies[];
extern const wl_method_policy_t wl__scanner_policies[];
extern const wl_method_policy_t wl__inventory_policies[];

/**
 * Lets a request in (see wl_admission_t), with work when not NULL: the work
 * then travels in the same statement, and is done only when the request is
 * let in. A decided admission (or none: NULL) only sends the work, for the
 * organization already known. Returns the admission's refusal, or else
 * work's rc (0: work->done and its answers are set).
 */
int wl__admit(wl_core_t *core, wl_admission_t *admission, wl_admit_t *work,
              wl_error_t *err) WL_CHECK_RESULT;

/** After a commit that may have changed the organization's export, before the answer. */
void wl__core_export_may_have_changed(wl_core_t *core, int64_t org_id);

/** The pool for stock reads: the replica's when configured, else the primary's. */
wl_pool_t *wl__core_read_pool(wl_core_t *core);

/** Timestamp message for milliseconds since the epoch, from the call's arena (NULL on ENOMEM). */
Google__Protobuf__Timestamp *wl__timestamp_from_ms(wl_arena_t *arena, int64_t ms);

#endif
