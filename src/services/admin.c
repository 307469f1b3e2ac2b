/* The operators' administration of a database (walklist/admin.h) is handed to the store here. */
#include "walklist/admin.h"

#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>

#include "store/distribute.h"
#include "store/generate.h"
#include "store/import.h"
#include "store/keys.h"
#include "store/migrate.h"
#include "store/orgs.h"
#include "store/webhooks.h"
#include "services/webhooks.h"

/* The public sizes are written out so that walklist/admin.h needs no store header. */
_Static_assert(WL_ADMIN_KEY_TOKEN_SIZE == WL_KEY_TOKEN_SIZE, "key token size");
_Static_assert(WL_ADMIN_WEBHOOK_ID_SIZE == WL_WEBHOOK_ID_SIZE, "webhook id size");
_Static_assert(WL_ADMIN_WEBHOOK_SECRET_SIZE == WL_WEBHOOK_SECRET_TEXT_SIZE, "webhook secret size");
_Static_assert(WL_ADMIN_KIND_COUNT == sizeof(wl_generate_kinds) / sizeof(wl_generate_kinds[0]),
               "inventory kinds");

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

int wl_admin_distribute(wl_admin_t *admin, int shard_count, int *changed, wl_error_t *err)
{
    return wl_distribute(admin->conn, shard_count, changed, err);
}

int wl_admin_org_create(wl_admin_t *admin, const char *slug, const char *name, int64_t *org_id,
                        wl_error_t *err)
{
    return wl_orgs_create(admin->conn, slug, name, org_id, err);
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
    return wl_keys_create(admin->conn, org_id, scopes, name, token, err);
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
                         bool allow_private, char id[WL_ADMIN_WEBHOOK_ID_SIZE],
                         char secret[WL_ADMIN_WEBHOOK_SECRET_SIZE], wl_error_t *err)
{
    size_t event_count = 0;
    int rc = wl_webhook_events_check(events, &event_count, err);
    if (rc == 0)
        rc = wl__webhook_target_check(url, allow_private, err);
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
    return i < WL_ADMIN_KIND_COUNT ? wl_generate_kinds[i] : NULL;
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

static wl_generate_options_t generate_options(const wl_admin_generate_options_t *options)
{
    wl_generate_options_t store = {.skus = options->skus, .seed = options->seed};
    return store;
}

static void copy_counts(const wl_generate_counts_t *store, wl_admin_generate_counts_t *counts)
{
    for (size_t i = 0; i < WL_ADMIN_KIND_COUNT; i++)
        counts->rows[i] = store->rows[i];
}

int wl_admin_generate_load(wl_admin_t *admin, int64_t org_id,
                           const wl_admin_generate_options_t *options, FILE *progress,
                           wl_admin_generate_counts_t *counts, wl_error_t *err)
{
    wl_generate_options_t store_options = generate_options(options);
    wl_generate_counts_t store_counts = {{0}};
    int rc = wl_generate_load(admin->conn, org_id, &store_options, progress, &store_counts, err);
    copy_counts(&store_counts, counts);
    return rc;
}

int wl_admin_generate_csv(const char *dir, const wl_admin_generate_options_t *options,
                          wl_admin_generate_counts_t *counts, wl_error_t *err)
{
    wl_generate_options_t store_options = generate_options(options);
    wl_generate_counts_t store_counts = {{0}};
    int rc = wl_generate_csv(dir, &store_options, &store_counts, err);
    copy_counts(&store_counts, counts);
    return rc;
}
