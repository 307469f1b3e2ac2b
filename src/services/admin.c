/* The operators' administration of a database (walklist/admin.h) is handed to the store here. */
#include "walklist/admin.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/citus.h"
#include "store/import.h"
#include "store/inventory.h"
#include "store/keys.h"
#include "store/migrate.h"
#include "store/orgs.h"
#include "store/shard_direct.h"
#include "store/webhooks.h"

/* The public sizes are written out so that walklist/admin.h needs no store header. */
_Static_assert(WL_ADMIN_KEY_TOKEN_SIZE == WL_KEY_TOKEN_SIZE, "key token size");
_Static_assert(WL_ADMIN_WEBHOOK_ID_SIZE == WL_WEBHOOK_ID_SIZE, "webhook id size");
_Static_assert(WL_ADMIN_WEBHOOK_SECRET_SIZE == WL_WEBHOOK_SECRET_TEXT_SIZE, "webhook secret size");

struct wl_admin {
    PGconn *conn;
};

int wl_admin_connect(const char *database_url, const char *application, wl_admin_t **out,
                     wl_error_t *err)
{
    *out = NULL;
    wl_admin_t *admin = calloc(1, sizeof(*admin));
    if (admin == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    /* expand_dbname: the URL may be a conninfo string or a URI, and what it says wins over
     * the keywords before it (libpq reads them in order), application_name included. */
    const char *keys[] = {"application_name", "dbname", NULL};
    const char *values[] = {application, database_url, NULL};
    admin->conn = PQconnectdbParams(keys, values, 1);
    if (PQstatus(admin->conn) != CONNECTION_OK) {
        const char *reason = PQerrorMessage(admin->conn);
        size_t len = strlen(reason);
        while (len > 0 && reason[len - 1] == '\n')
            len--;
        int rc = wl_error_set(err, WL_EUNAVAILABLE, "cannot connect to the database: %.*s",
                              (int)len, reason);
        wl_admin_close(admin);
        return rc;
    }
    /* Migrations raise NOTICEs (an index that exists already, ...) that tell an operator
     * nothing. */
    PQclear(PQexec(admin->conn, "SET client_min_messages = warning"));
    *out = admin;
    return 0;
}

void wl_admin_close(wl_admin_t *admin)
{
    if (admin == NULL)
        return;
    PQfinish(admin->conn);
    free(admin);
}

int wl_admin_migrate(wl_admin_t *admin, int *applied, wl_error_t *err)
{
    return wl_migrate(admin->conn, applied, err);
}

int wl_admin_shard_direct(wl_admin_t *admin, size_t *groups, wl_error_t *err)
{
    return wl_shard_direct_install(admin->conn, groups, err);
}

/*
 * Organizations and keys are reference tables on Citus, written on every node at once: with a
 * worker unreachable they cannot be written, whatever organization they are for. Says which
 * node, instead of libpq's "database unavailable" alone.
 */
static int needs_every_node(wl_admin_t *admin, int rc, wl_error_t *err)
{
    if (rc != WL_EUNAVAILABLE || PQstatus(admin->conn) != CONNECTION_OK)
        return rc;
    wl_citus_node_t nodes[16];
    size_t count = 0;
    wl_error_t check;
    wl_error_init(&check);
    if (wl_citus_nodes_check(admin->conn, 2000, nodes, 16, &count, &check) != 0)
        return rc;
    for (size_t i = 0; i < count && i < 16; i++) {
        if (!nodes[i].reachable) {
            char cause[sizeof(err->message)];
            snprintf(cause, sizeof(cause), "%s", err->message);
            err->code = 0; /* sticky: said again, with the node */
            return wl_error_set(err, rc,
                                "%s: organizations and keys are written on every node of the "
                                "cluster, and node %s is unreachable",
                                cause, nodes[i].address);
        }
    }
    return rc;
}

int wl_admin_org_create(wl_admin_t *admin, const char *slug, const char *name, int64_t *org_id,
                        wl_error_t *err)
{
    return needs_every_node(admin, wl_orgs_create(admin->conn, slug, name, org_id, err), err);
}

int wl_admin_org_find(wl_admin_t *admin, const char *slug, int64_t *org_id, wl_error_t *err)
{
    return wl_orgs_find(admin->conn, slug, org_id, err);
}

typedef struct {
    void (*each)(const wl_admin_org_t *org, void *data);
    void *data;
} org_listing_t;

static void list_org(const wl_org_info_t *info, void *data)
{
    const org_listing_t *listing = data;
    wl_admin_org_t org = {info->slug, info->name, info->created_at, info->active_keys};
    listing->each(&org, listing->data);
}

int wl_admin_org_list(wl_admin_t *admin, void (*each)(const wl_admin_org_t *org, void *data),
                      void *data, wl_error_t *err)
{
    org_listing_t listing = {each, data};
    return wl_orgs_list(admin->conn, list_org, &listing, err);
}

int wl_admin_key_create(wl_admin_t *admin, int64_t org_id, unsigned scopes, const char *name,
                        char token[WL_ADMIN_KEY_TOKEN_SIZE], wl_error_t *err)
{
    return needs_every_node(admin, wl_keys_create(admin->conn, org_id, scopes, name, token, err),
                            err);
}

typedef struct {
    void (*each)(const wl_admin_key_t *key, void *data);
    void *data;
} key_listing_t;

static void list_one(const wl_key_info_t *info, void *data)
{
    const key_listing_t *listing = data;
    wl_admin_key_t key = {
        .prefix = info->prefix,
        .name = info->name,
        .scopes = info->scopes,
        .created_at = info->created_at,
        .revoked_at = info->revoked_at,
    };
    listing->each(&key, listing->data);
}

int wl_admin_key_list(wl_admin_t *admin, int64_t org_id,
                      void (*each)(const wl_admin_key_t *key, void *data), void *data,
                      wl_error_t *err)
{
    key_listing_t listing = {each, data};
    return wl_keys_list(admin->conn, org_id, list_one, &listing, err);
}

int wl_admin_key_revoke(wl_admin_t *admin, const char *prefix, wl_error_t *err)
{
    return wl_keys_revoke(admin->conn, prefix, err);
}

int wl_admin_webhook_add(wl_admin_t *admin, int64_t org_id, const char *url, const char *events,
                         wl_admin_url_check_t check_url, void *check_data,
                         char id[WL_ADMIN_WEBHOOK_ID_SIZE],
                         char secret[WL_ADMIN_WEBHOOK_SECRET_SIZE], wl_error_t *err)
{
    size_t event_count = 0;
    int rc = wl_webhook_events_check(events, &event_count, err);
    if (rc == 0 && check_url == NULL)
        rc = wl_error_set(err, WL_EINVAL,
                          "wl_admin_webhook_add needs a check of the URL (check_url)");
    if (rc == 0)
        rc = check_url(url, check_data, err);
    unsigned char bytes[WL_WEBHOOK_SECRET_SIZE];
    if (rc == 0)
        rc = wl_webhooks_endpoint_add(admin->conn, org_id, url, events, id, bytes, err);
    if (rc == 0)
        wl_webhook_secret_format(bytes, secret);
    explicit_bzero(bytes, sizeof(bytes));
    return rc;
}

int wl_admin_webhook_list(wl_admin_t *admin, int64_t org_id,
                          void (*each)(const wl_admin_webhook_t *endpoint, void *data), void *data,
                          wl_error_t *err)
{
    return wl_webhooks_endpoint_list(admin->conn, org_id, each, data, err);
}

int wl_admin_webhook_remove(wl_admin_t *admin, int64_t org_id, const char *id, wl_error_t *err)
{
    return wl_webhooks_endpoint_remove(admin->conn, org_id, id, err);
}

int wl_admin_webhook_enable(wl_admin_t *admin, int64_t org_id, const char *id, wl_error_t *err)
{
    return wl_webhooks_endpoint_enable(admin->conn, org_id, id, err);
}

int wl_admin_webhook_deliveries(wl_admin_t *admin, int64_t org_id, const char *endpoint_id,
                                int limit,
                                void (*each)(const wl_admin_webhook_delivery_t *delivery,
                                             void *data),
                                void *data, wl_error_t *err)
{
    return wl_webhooks_delivery_list(admin->conn, org_id, endpoint_id, limit, each, data, err);
}

const char *wl_admin_kind_name(size_t i)
{
    return wl_import_kind_name(i);
}

bool wl_admin_kind_valid(const char *kind)
{
    return wl_import_kind_valid(kind) != 0;
}

int wl_admin_import_csv(wl_admin_t *admin, int64_t org_id, const char *kind, FILE *in,
                        wl_admin_report_fn report, void *report_data, size_t *rows, wl_error_t *err)
{
    return wl_import_csv(admin->conn, org_id, kind, in, report, report_data, rows, err);
}

int wl_admin_import_catalogue(wl_admin_t *admin, int64_t org_id,
                              FILE *const files[WL_ADMIN_KIND_COUNT],
                              wl_admin_catalogue_report_fn report, void *report_data,
                              size_t rows[WL_ADMIN_KIND_COUNT], wl_error_t *err)
{
    return wl_import_catalogue(admin->conn, org_id, files, report, report_data, rows, err);
}

struct wl_admin_batch {
    wl_inventory_batch_t batch;
    wl_admin_report_fn report;
    void *report_data;
};

size_t wl_admin_kind_column_count(size_t kind)
{
    return kind < WL_ADMIN_KIND_COUNT ? wl_inventory_column_count(wl_import_kind(kind)) : 0;
}

const char *wl_admin_kind_column(size_t kind, size_t index)
{
    return kind < WL_ADMIN_KIND_COUNT ? wl_inventory_column(wl_import_kind(kind), index) : "";
}

static void report_row(size_t row, const char *column, const char *description, void *data)
{
    const wl_admin_batch_t *batch = data;
    if (batch->report != NULL)
        batch->report(row, column, description, batch->report_data);
}

static void name_row(size_t row, char *buf, size_t size, void *data)
{
    (void)data;
    snprintf(buf, size, "row %zu", row);
}

int wl_admin_batch_begin(wl_admin_t *admin, int64_t org_id, size_t kind, wl_admin_report_fn report,
                         void *report_data, wl_admin_batch_t **out, wl_error_t *err)
{
    *out = NULL;
    if (kind >= WL_ADMIN_KIND_COUNT)
        return wl_error_set(err, WL_EINVAL, "no inventory kind %zu", kind);
    wl_admin_batch_t *batch = calloc(1, sizeof(*batch));
    if (batch == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    batch->report = report;
    batch->report_data = report_data;
    wl_inventory_reporter_t reporter = {report_row, name_row, batch};
    int rc = wl_inventory_batch_begin(&batch->batch, admin->conn, org_id, wl_import_kind(kind),
                                      &reporter, err);
    if (rc != 0) {
        free(batch);
        return rc;
    }
    *out = batch;
    return 0;
}

int wl_admin_batch_add(wl_admin_batch_t *batch, size_t row, const wl_span_t *values,
                       wl_error_t *err)
{
    return wl_inventory_batch_add(&batch->batch, row, values, err);
}

int wl_admin_batch_finish(wl_admin_batch_t *batch, size_t *rows, wl_error_t *err)
{
    int rc = wl_inventory_batch_finish(&batch->batch, rows, err);
    free(batch);
    return rc;
}

void wl_admin_batch_abort(wl_admin_batch_t *batch)
{
    if (batch == NULL)
        return;
    wl_inventory_batch_abort(&batch->batch);
    free(batch);
}
