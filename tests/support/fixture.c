/* Creating test cores, organizations, keys and inventory happens here. */
#include "fixture.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/import.h"
#include "store/orgs.h"

wl_core_t *fixture_core(const wl_core_config_t *config)
{
    wl_core_t *core = NULL;
    wl_error_t err;
    wl_error_init(&err);
    if (wl_core_create(config, &core, &err) != 0) {
        fprintf(stderr, "fixture_core: %s\n", err.message);
        exit(1);
    }
    return core;
}

int64_t fixture_org(PGconn *conn, const char *slug)
{
    wl_error_t err;
    wl_error_init(&err);
    int64_t org_id = 0;
    if (wl_orgs_create(conn, slug, slug, &org_id, &err) != 0) {
        fprintf(stderr, "fixture_org %s: %s\n", slug, err.message);
        exit(1);
    }
    return org_id;
}

void fixture_key(PGconn *conn, int64_t org_id, const char *scopes, char token[WL_KEY_TOKEN_SIZE])
{
    wl_error_t err;
    wl_error_init(&err);
    unsigned bits = 0;
    if (wl_scopes_parse(scopes, &bits, &err) != 0 ||
        wl_keys_create(conn, org_id, bits, "test", token, &err) != 0) {
        fprintf(stderr, "fixture_key: %s\n", err.message);
        exit(1);
    }
    fixture_record_token(token);
}

void fixture_revoke(PGconn *conn, const char *token)
{
    char prefix[WL_KEY_PREFIX_LEN + 1];
    wl_error_t err;
    wl_error_init(&err);
    if (!wl_keys_parse(wl_span_str(token), prefix) || wl_keys_revoke(conn, prefix, &err) != 0) {
        fprintf(stderr, "fixture_revoke: %s\n", err.message);
        exit(1);
    }
}

long long fixture_counted(PGconn *conn, int64_t org_id, const char *bucket)
{
    char org[24];
    snprintf(org, sizeof(org), "%lld", (long long)org_id);
    const char *params[] = {org, bucket};
    PGresult *res = PQexecParams(conn,
                                 "SELECT coalesce(sum(u.c), 0) FROM rate_limits r,"
                                 " unnest(r.hits, coalesce(r.counts,"
                                 " array_fill(1, ARRAY[cardinality(r.hits)]))) AS u(h, c)"
                                 " WHERE r.org_id = $1 AND r.bucket = $2",
                                 2, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        fprintf(stderr, "fixture_counted: %s", PQerrorMessage(conn));
        exit(1);
    }
    long long counted = atoll(PQgetvalue(res, 0, 0));
    PQclear(res);
    return counted;
}

void fixture_record_token(const char *token)
{
    const char *path = getenv("WALKLIST_TEST_TOKENS");
    char line[WL_KEY_TOKEN_SIZE + 1];
    int len = snprintf(line, sizeof(line), "%s\n", token);
    /* One write with O_APPEND: lines of concurrent test processes never interleave. */
    int fd = open(path && path[0] ? path : FIXTURE_TOKENS_FILE,
                  O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || len <= 0 || len >= (int)sizeof(line) || write(fd, line, (size_t)len) != len) {
        fprintf(stderr, "fixture_key: cannot record the token in %s\n",
                path && path[0] ? path : FIXTURE_TOKENS_FILE);
        exit(1);
    }
    close(fd);
}

static void print_problem(size_t line, const char *column, const char *description, void *data)
{
    fprintf(stderr, "%s:%zu: %s: %s\n", (const char *)data, line, column, description);
}

void fixture_import(PGconn *conn, int64_t org_id, const char *kind, const char *csv)
{
    wl_error_t err;
    wl_error_init(&err);
    FILE *in = fmemopen((void *)csv, strlen(csv), "rb");
    size_t rows = 0;
    if (in == NULL ||
        wl_import_csv(conn, org_id, kind, in, print_problem, (void *)kind, &rows, &err) != 0) {
        fprintf(stderr, "fixture_import %s: %s\n", kind, err.message);
        exit(1);
    }
    fclose(in);
}

void fixture_walk_inventory(PGconn *conn, int64_t org_id, const fixture_walk_t *walk,
                            char *codes_json, size_t size)
{
    fixture_import(conn, org_id, "warehouses", "code,name,kind\nWH1,Main,own\n");
    size_t cap = (size_t)(walk->products * walk->bins) * 160 + (size_t)walk->products * 160 + 128;
    char *locations = malloc(cap), *catalogue = malloc(cap), *stock = malloc(cap);
    int l = sprintf(locations, "warehouse,code,staging\n");
    int c = sprintf(catalogue, "sku,name,eans\n");
    int s = sprintf(stock, "sku,warehouse,location,quantity\n");
    size_t used = (size_t)snprintf(codes_json, size, "[");
    for (int p = 0; p < walk->products; p++) {
        c += sprintf(catalogue + c, "SKU-%04d,", p);
        c += sprintf(catalogue + c, walk->name_format, p);
        c += sprintf(catalogue + c, ",\n");
        used += (size_t)snprintf(codes_json + used, size - used, "%s\"SKU-%04d\"", p ? "," : "", p);
        for (int b = 0; b < walk->bins; b++) {
            char bin[96];
            snprintf(bin, sizeof(bin), walk->bin_format, b, p, b);
            l += sprintf(locations + l, "WH1,%s,false\n", bin);
            s += sprintf(stock + s, "SKU-%04d,WH1,%s,%d\n", p, bin,
                         walk->base + walk->per_product * p + walk->per_bin * b);
        }
    }
    snprintf(codes_json + used, size - used, "]");
    fixture_import(conn, org_id, "locations", locations);
    fixture_import(conn, org_id, "products", catalogue);
    fixture_import(conn, org_id, "location-stock", stock);
    free(locations);
    free(catalogue);
    free(stock);
}
