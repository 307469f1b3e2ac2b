/*
 * Administration of a walklist database, for operators' programs (walklistctl): the schema,
 * organizations, API keys and CSV imports (a file, or rows of values). An admin is one database
 * connection of its own (no pool, one thread at a time); nothing here serves requests, and
 * the programs reach the store only through it.
 *
 *     wl_admin_t *admin;
 *     int64_t org_id;
 *     char token[WL_ADMIN_KEY_TOKEN_SIZE];
 *     if (wl_admin_connect(url, "walklistctl", &admin, &err) != 0)
 *         return fail(&err);
 *     rc = wl_admin_org_find(admin, "acme", &org_id, &err);
 *     if (rc == 0)
 *         rc = wl_admin_key_create(admin, org_id, WL_SCOPE_STOCK_READ, "erp", token, &err);
 *     wl_admin_close(admin);
 */
#ifndef WALKLIST_ADMIN_H
#define WALKLIST_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "walklist/error.h"
#include "walklist/span.h"

typedef struct wl_admin wl_admin_t;

/**
 * Connects to database_url (libpq conninfo or URI) as application (application_name).
 * WL_EUNAVAILABLE with "cannot connect to the database: " and libpq's reason in err when it
 * cannot. The server's notices below WARNING (those of migrations) are not shown; the rest go
 * to stderr.
 */
int wl_admin_connect(const char *database_url, const char *application, wl_admin_t **out,
                     wl_error_t *err) WL_CHECK_RESULT;

/** Closes the connection; NULL is fine. */
void wl_admin_close(wl_admin_t *admin);

/**
 * Applies every schema migration not yet applied, then every SQL function again; *applied
 * (may be NULL) counts the migrations. WL_EPRECONDITION, changing nothing, when an applied
 * migration was edited since. Safe to run from several processes at once.
 */
int wl_admin_migrate(wl_admin_t *admin, int *applied, wl_error_t *err) WL_CHECK_RESULT;

/**
 * Where the tenant tables are distributed (Citus), makes the admission's statements name each
 * shard of this node directly (the shard-direct form of its functions, which migrate installs
 * too); *groups (may be NULL) is the number of shard groups named, 0 where nothing is
 * distributed (nothing changed). Run after distributing, and after splitting shards.
 */
int wl_admin_shard_direct(wl_admin_t *admin, size_t *groups, wl_error_t *err) WL_CHECK_RESULT;

/**
 * Creates an organization. The slug is 1-63 characters of a-z, 0-9 and '-', not starting with
 * '-'; the name 1-200 characters of valid UTF-8 without controls (WL_EINVAL with a violation
 * for "slug" or "name" otherwise). WL_EEXISTS when the slug is taken. org_id may be NULL.
 */
int wl_admin_org_create(wl_admin_t *admin, const char *slug, const char *name, int64_t *org_id,
                        wl_error_t *err) WL_CHECK_RESULT;

/** The organization of a slug; WL_ENOTFOUND ("no organization 'x'") when there is none. */
int wl_admin_org_find(wl_admin_t *admin, const char *slug, int64_t *org_id,
                      wl_error_t *err) WL_CHECK_RESULT;

/** One organization as listed; the strings are valid during the callback only. */
typedef struct {
    const char *slug;
    const char *name;
    const char *created_at; /* UTC, "2024-05-01T12:00:00Z" */
    int64_t active_keys;    /* keys not revoked */
} wl_admin_org_t;

/** Calls each(org, data) for every organization, by slug. */
int wl_admin_org_list(wl_admin_t *admin, void (*each)(const wl_admin_org_t *org, void *data),
                      void *data, wl_error_t *err) WL_CHECK_RESULT;

/* A whole API key: "wlk_", an 8-character prefix, "_", a 40-character secret, and a NUL. */
#define WL_ADMIN_KEY_TOKEN_SIZE 54

/**
 * Creates a key of the organization with scopes (WL_SCOPE_* bits, walklist/scopes.h) and a
 * name for people (may be ""). token receives the whole key, NUL-terminated: it is shown
 * once, only its prefix and digest are stored.
 */
int wl_admin_key_create(wl_admin_t *admin, int64_t org_id, unsigned scopes, const char *name,
                        char token[WL_ADMIN_KEY_TOKEN_SIZE], wl_error_t *err) WL_CHECK_RESULT;

/** One key as listed; the strings are valid during the callback only. */
typedef struct {
    const char *prefix;
    const char *name;
    const char *scopes;     /* "a,b" */
    const char *created_at; /* UTC, "2024-05-01T12:00:00Z" */
    const char *revoked_at; /* like created_at; NULL while active */
} wl_admin_key_t;

/** Calls each(key, data) for every key of the organization, oldest first. */
int wl_admin_key_list(wl_admin_t *admin, int64_t org_id,
                      void (*each)(const wl_admin_key_t *key, void *data), void *data,
                      wl_error_t *err) WL_CHECK_RESULT;

/** Revokes the key of a prefix; WL_ENOTFOUND when there is none. Revoking twice is fine. */
int wl_admin_key_revoke(wl_admin_t *admin, const char *prefix, wl_error_t *err) WL_CHECK_RESULT;

/* A webhook endpoint's id ("whe_" and 22 characters) and its signing secret ("whsec_" and
 * base64 of 32 bytes), with their NULs. */
#define WL_ADMIN_WEBHOOK_ID_SIZE     27
#define WL_ADMIN_WEBHOOK_SECRET_SIZE 51

/**
 * How wl_admin_webhook_add checks an endpoint's URL, after its events: 0, or WL_EINVAL with a
 * violation of "url". The core does not know where a delivery may go; the deliverer does
 * (walklistctl passes wl_delivery_target_check, walklist/delivery_target.h).
 */
typedef int (*wl_admin_url_check_t)(const char *url, void *data, wl_error_t *err);

/**
 * Adds a webhook endpoint of the organization (docs/change-feeds.md, "Webhooks"): events is a
 * comma-separated list of event names (locate_list.loaded, stock.changed), url one that
 * check_url(url, check_data) accepts (an http:// or https:// URL without credentials whose
 * host, unless private addresses are allowed, resolves to public addresses only). WL_EINVAL
 * with a violation of "events" or "url", or without check_url, nothing written, otherwise. id
 * and secret receive the endpoint's id and signing secret: the secret is shown once, and only
 * deliveries use it.
 */
int wl_admin_webhook_add(wl_admin_t *admin, int64_t org_id, const char *url, const char *events,
                         wl_admin_url_check_t check_url, void *check_data,
                         char id[WL_ADMIN_WEBHOOK_ID_SIZE],
                         char secret[WL_ADMIN_WEBHOOK_SECRET_SIZE],
                         wl_error_t *err) WL_CHECK_RESULT;

/** A webhook endpoint as listed (never its secret); strings valid during the callback only. */
typedef struct {
    const char *id;
    const char *url;
    const char *events;        /* "a,b" */
    const char *created_at;    /* UTC, "2024-05-01T12:00:00Z" */
    const char *failing_since; /* like created_at; NULL while healthy */
    const char *disabled_at;   /* like created_at; NULL while enabled */
    int64_t pending;           /* deliveries not yet done */
} wl_admin_webhook_t;

/** Calls each(endpoint, data) for every webhook endpoint of the organization, oldest first. */
int wl_admin_webhook_list(wl_admin_t *admin, int64_t org_id,
                          void (*each)(const wl_admin_webhook_t *endpoint, void *data), void *data,
                          wl_error_t *err) WL_CHECK_RESULT;

/** Removes an endpoint of the organization with its deliveries; WL_ENOTFOUND when it has
 * none of that id. */
int wl_admin_webhook_remove(wl_admin_t *admin, int64_t org_id, const char *id,
                            wl_error_t *err) WL_CHECK_RESULT;

/**
 * Enables a disabled endpoint of the organization again (it counts as healthy: a failing time
 * starts at its next failure); its pending deliveries are attempted again, the events written
 * while it was disabled are not. WL_ENOTFOUND when it has none of that id.
 */
int wl_admin_webhook_enable(wl_admin_t *admin, int64_t org_id, const char *id,
                            wl_error_t *err) WL_CHECK_RESULT;

/** A delivery (an event for an endpoint) as listed; strings valid during the callback only,
 * times like wl_admin_webhook_t's. */
typedef struct {
    const char *endpoint_id;
    const char *event_id; /* the webhook-id header of its attempts */
    const char *type;
    const char *state; /* pending, delivered, or coalesced (sent within an earlier one) */
    int64_t attempts;
    const char *last_status;     /* the last answer's HTTP status; NULL: none came */
    const char *last_error;      /* why the last attempt failed; NULL when none did */
    const char *next_attempt_at; /* NULL unless pending */
    const char *delivered_at;    /* NULL unless delivered */
    const char *created_at;      /* the event's time */
} wl_admin_webhook_delivery_t;

/** Calls each for the organization's latest deliveries (of one endpoint unless endpoint_id is
 * NULL), newest event first, at most limit. */
int wl_admin_webhook_deliveries(wl_admin_t *admin, int64_t org_id, const char *endpoint_id,
                                int limit,
                                void (*each)(const wl_admin_webhook_delivery_t *delivery,
                                             void *data),
                                void *data, wl_error_t *err) WL_CHECK_RESULT;

/* The kinds of inventory data, in the order they import (later kinds refer to earlier ones). */
#define WL_ADMIN_KIND_COUNT 6

/** The name of kind i < WL_ADMIN_KIND_COUNT: warehouses, locations, products, stock,
 * location-stock, reservations, in the order a whole catalogue is imported. */
const char *wl_admin_kind_name(size_t i);

/** Whether kind is one of those names. */
bool wl_admin_kind_valid(const char *kind);

/** Receives each problem of an import: the 1-based line, the column (may be ""), a
 * description. */
typedef void (*wl_admin_report_fn)(size_t line, const char *column, const char *description,
                                   void *data);

/**
 * Imports one CSV file of a kind (warehouses, locations, products, stock, location-stock,
 * reservations; rows upsert by their natural key) for the organization, all or nothing in
 * one transaction; *rows receives the rows imported. WL_EINVAL when the file has problems:
 * each is reported through report, and nothing is written. in stays open.
 */
int wl_admin_import_csv(wl_admin_t *admin, int64_t org_id, const char *kind, FILE *in,
                        wl_admin_report_fn report, void *report_data, size_t *rows,
                        wl_error_t *err) WL_CHECK_RESULT;

/** Receives each problem of a catalogue import: the kind of its file (below
 * WL_ADMIN_KIND_COUNT), then as wl_admin_report_fn. */
typedef void (*wl_admin_catalogue_report_fn)(size_t kind, size_t line, const char *column,
                                             const char *description, void *data);

/**
 * Imports a whole catalogue in one transaction: files[i] is the CSV file of kind i
 * (wl_admin_kind_name; NULL: none), imported in the kinds' order, and the export rows are
 * refreshed once, at the end, instead of after each file. Any problem in any file and nothing
 * is written; the import stops at the first file with problems. rows[i] receives the rows of
 * file i. The files stay open.
 */
int wl_admin_import_catalogue(wl_admin_t *admin, int64_t org_id,
                              FILE *const files[WL_ADMIN_KIND_COUNT],
                              wl_admin_catalogue_report_fn report, void *report_data,
                              size_t rows[WL_ADMIN_KIND_COUNT], wl_error_t *err) WL_CHECK_RESULT;

/** Number of values a row of kind i < WL_ADMIN_KIND_COUNT has. */
size_t wl_admin_kind_column_count(size_t kind);

/** Name of column index of kind i ("on_hand"), as the CSV header has it; "" past the last. */
const char *wl_admin_kind_column(size_t kind, size_t index);

/** Rows of one kind being imported as values (what wl_admin_import_csv makes of a file's
 * lines): one all-or-nothing transaction on the admin's connection. */
typedef struct wl_admin_batch wl_admin_batch_t;

/**
 * Starts a batch of kind i < WL_ADMIN_KIND_COUNT for the organization. Problems are reported
 * through report (NULL: not reported) with the caller's row numbers and described as "row N".
 * Until it is finished or aborted the admin serves nothing else.
 */
int wl_admin_batch_begin(wl_admin_t *admin, int64_t org_id, size_t kind, wl_admin_report_fn report,
                         void *report_data, wl_admin_batch_t **out,
                         wl_error_t *err) WL_CHECK_RESULT;

/** Adds a row: wl_admin_kind_column_count(kind) values, in the columns' order. */
int wl_admin_batch_add(wl_admin_batch_t *batch, size_t row, const wl_span_t *values,
                       wl_error_t *err) WL_CHECK_RESULT;

/** Checks and commits the batch, then frees it; *rows receives the rows written. WL_EINVAL when
 * rows have problems (each reported): nothing is written. */
int wl_admin_batch_finish(wl_admin_batch_t *batch, size_t *rows, wl_error_t *err) WL_CHECK_RESULT;

/** Rolls the batch back and frees it (NULL: nothing). */
void wl_admin_batch_abort(wl_admin_batch_t *batch);

#endif
