/*
 * Server secrets are made by walklistctl migrate, never on a request's path: a database without
 * the page-token secret is not ready, its exports are refused with 503's code and nothing is
 * written, and migrate makes the secret once (a second migrate keeps it).
 */
#include <string.h>

#include "fixture.h"
#include "test.h"
#include "testdb.h"
#include "walklist/admin.h"
#include "walklist/core.h"
#include "walklist/v1/stock.pb-c.h"

static const char *conninfo;
static PGconn *db;

#define SECRET_HEX "SELECT encode(secret, 'hex') FROM server_secrets WHERE name = 'page_token'"

/* ExportStock for the key's organization, through the core as a transport calls it. */
static int export_stock(wl_core_t *core, const char *token, wl_error_t *err)
{
    wl_principal_t principal;
    int rc = wl_core_authenticate(core, wl_span_str(token), &principal, err);
    if (rc != 0)
        return rc;
    const wl_service_entry_t *service = wl_core_find_service(core, "walklist.v1.StockService");
    const ProtobufCMethodDescriptor *method =
        protobuf_c_service_descriptor_get_method_by_name(service->descriptor, "ExportStock");
    Walklist__V1__ExportStockRequest request = WALKLIST__V1__EXPORT_STOCK_REQUEST__INIT;
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    wl_call_t call = {.core = core, .arena = &arena, .principal = &principal, .err = err};
    rc = wl_core_invoke(&call, service, (unsigned)(method - service->descriptor->methods),
                        &request.base);
    wl_arena_dispose(&arena);
    return rc;
}

static void migrate(void)
{
    wl_admin_t *admin = NULL;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_admin_connect(conninfo, "test_secrets", &admin, &err), 0);
    int applied = -1;
    CHECK_INT(wl_admin_migrate(admin, &applied, &err), 0);
    CHECK_INT(applied, 0);
    wl_admin_close(admin);
}

int main(void)
{
    conninfo = testdb_create("integration_secrets");
    db = testdb_connect(conninfo);
    int64_t org = fixture_org(db, "secrets");
    char token[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org, "stock:read", token);

    /* The template was migrated: its secret is there before any request. */
    CHECK_INT(testdb_count(db, "SELECT count(*) FROM server_secrets"), 1);

    /* Without it: not ready, the export refused, and nothing written. */
    testdb_exec(db, "DELETE FROM server_secrets");
    wl_core_config_t config = {.database_url = conninfo};
    wl_core_t *core = fixture_core(&config);
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_core_ready(core, &err), WL_EUNAVAILABLE);
    CHECK(strstr(err.message, "walklistctl migrate") != NULL);
    wl_error_init(&err);
    CHECK_INT(export_stock(core, token, &err), WL_EUNAVAILABLE);
    CHECK(strstr(err.message, "walklistctl migrate") != NULL);
    CHECK_INT(testdb_count(db, "SELECT count(*) FROM server_secrets"), 0);

    /* migrate makes it; the same process serves from then on, and is ready (a new one at
     * once: readiness is checked once a second). */
    migrate();
    CHECK_INT(testdb_count(db, "SELECT count(*) FROM server_secrets"), 1);
    char made[80], kept[80];
    testdb_value(db, SECRET_HEX, made, sizeof(made));
    CHECK_INT((long long)strlen(made), 64);
    wl_error_init(&err);
    CHECK_INT(export_stock(core, token, &err), 0);
    wl_core_destroy(core);
    core = fixture_core(&config);
    wl_error_init(&err);
    CHECK_INT(wl_core_ready(core, &err), 0);

    /* A second migrate keeps the secret: cursors sealed with it stay valid. */
    migrate();
    testdb_value(db, SECRET_HEX, kept, sizeof(kept));
    CHECK_STR(kept, made);
    wl_core_destroy(core);
    PQfinish(db);
    return test_exit();
}
