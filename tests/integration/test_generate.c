/*
 * walklistctl generate (src/cli/generate.c): the benchmark catalogue at a small size. Counts,
 * the distribution src/cli/generate.h describes, the same catalogue for the same seed (in the
 * database and as CSV files), and an export refreshed exactly as the rules compute it.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "cli/generate.h"
#include "test.h"
#include "testdb.h"

#define SKUS 2000

static PGconn *conn;
static wl_admin_t *admin; /* the catalogue goes in through the admin API, as walklistctl's */

static long long count_for(const char *sql_format, long long org)
{
    char sql[2048];
    snprintf(sql, sizeof(sql), sql_format, org, org, org, org);
    return testdb_count(conn, sql);
}

static void load(int64_t org, uint64_t seed)
{
    wl_generate_options_t options = {.skus = SKUS, .seed = seed};
    wl_generate_counts_t counts;
    wl_error_t err;
    wl_error_init(&err);
    int rc = wl_generate_load(admin, org, &options, NULL, &counts, &err);
    if (rc != 0)
        FAIL("generate: %s", err.message);
    CHECK_INT(counts.rows[0], 4);
    CHECK_INT(counts.rows[2], SKUS);
}

/* The export as the stock export's rules compute it from the raw tables. */
static const char *const expected_export =
    "WITH own AS (SELECT code FROM warehouses WHERE org_id = %1$lld AND kind = 'own'),"
    " on_hand AS (SELECT sku, sum(on_hand) AS n FROM stock WHERE org_id = %1$lld"
    "   AND warehouse IN (SELECT code FROM own) GROUP BY sku),"
    " reserved AS (SELECT sku, sum(quantity) AS n FROM reservations WHERE org_id = %1$lld"
    "   AND status = 'active' AND warehouse IN (SELECT code FROM own) GROUP BY sku),"
    " racks AS (SELECT DISTINCT ON (ls.sku) ls.sku, ls.location FROM location_stock ls"
    "   JOIN locations l ON l.org_id = ls.org_id AND l.warehouse = ls.warehouse"
    "   AND l.code = ls.location AND NOT l.staging"
    "   WHERE ls.org_id = %1$lld AND ls.warehouse IN (SELECT code FROM own)"
    "   ORDER BY ls.sku, ls.quantity DESC, l.sort_key, ls.location, ls.warehouse)"
    " SELECT p.sku, greatest(0, coalesce(o.n, 0) - coalesce(r.n, 0)) AS qty, k.location"
    " FROM products p LEFT JOIN on_hand o USING (sku) LEFT JOIN reserved r USING (sku)"
    " LEFT JOIN racks k USING (sku)"
    " WHERE p.org_id = %1$lld AND (o.sku IS NOT NULL OR k.sku IS NOT NULL)";

static void check_export(int64_t org)
{
    char sql[4096], expected[3000];
    snprintf(expected, sizeof(expected), expected_export, (long long)org);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM ((%s) EXCEPT ALL (SELECT sku, qty, location"
             " FROM stock_availability WHERE org_id = %lld)) d",
             expected, (long long)org);
    CHECK_INT(testdb_count(conn, sql), 0);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM ((SELECT sku, qty, location FROM stock_availability"
             " WHERE org_id = %lld) EXCEPT ALL (%s)) d",
             (long long)org, expected);
    CHECK_INT(testdb_count(conn, sql), 0);
}

static void check_distribution(int64_t org)
{
    long long o = (long long)org;
    CHECK_INT(count_for("SELECT count(*) FROM warehouses WHERE org_id = %lld AND kind = 'own'", o),
              3);
    CHECK_INT(count_for("SELECT count(*) FROM warehouses WHERE org_id = %lld"
                        " AND kind = 'supplier'",
                        o),
              1);
    CHECK_INT(count_for("SELECT count(*) FROM products WHERE org_id = %lld", o), SKUS);

    /* 1-4 rack assignments per SKU, about 2 on average; about 10% staging bins. */
    CHECK_INT(count_for("SELECT min(n) FROM (SELECT count(*) n FROM location_stock"
                        " WHERE org_id = %lld GROUP BY sku) c",
                        o),
              1);
    CHECK_INT(count_for("SELECT max(n) FROM (SELECT count(*) n FROM location_stock"
                        " WHERE org_id = %lld GROUP BY sku) c",
                        o),
              4);
    CHECK_INT(count_for("SELECT count(DISTINCT sku) FROM location_stock WHERE org_id = %lld", o),
              SKUS);
    long long racks = count_for("SELECT count(*) FROM location_stock WHERE org_id = %lld", o);
    CHECK(racks > SKUS * 17 / 10 && racks < SKUS * 23 / 10);
    long long staging = count_for("SELECT count(*) FROM location_stock ls JOIN locations l"
                                  " ON l.org_id = ls.org_id AND l.warehouse = ls.warehouse"
                                  " AND l.code = ls.location WHERE ls.org_id = %lld"
                                  " AND l.staging",
                                  o);
    CHECK(staging * 100 > racks * 6 && staging * 100 < racks * 14);

    /* Stock records in 1-3 warehouses. */
    CHECK_INT(count_for("SELECT min(n) FROM (SELECT count(*) n FROM stock WHERE org_id = %lld"
                        " GROUP BY sku) c",
                        o),
              1);
    CHECK_INT(count_for("SELECT max(n) FROM (SELECT count(*) n FROM stock WHERE org_id = %lld"
                        " GROUP BY sku) c",
                        o),
              3);
    CHECK_INT(count_for("SELECT count(DISTINCT sku) FROM stock WHERE org_id = %lld", o), SKUS);

    /* 0-2 EANs per product, some products without, a few EANs shared by two products. */
    CHECK_INT(count_for("SELECT max(n) FROM (SELECT count(*) n FROM product_eans"
                        " WHERE org_id = %lld GROUP BY sku) c",
                        o),
              2);
    long long without = count_for("SELECT count(*) FROM products p WHERE org_id = %lld AND NOT"
                                  " EXISTS (SELECT 1 FROM product_eans e WHERE e.org_id = %lld"
                                  " AND e.sku = p.sku)",
                                  o);
    CHECK(without > SKUS / 10 && without < SKUS * 3 / 10);
    long long shared = count_for("SELECT count(*) FROM (SELECT ean FROM product_eans"
                                 " WHERE org_id = %lld GROUP BY ean HAVING count(*) > 1) s",
                                 o);
    CHECK(shared >= 1 && shared <= SKUS / 100);

    /* Active reservations on about 20% of SKUs. */
    long long reserved = count_for("SELECT count(DISTINCT sku) FROM reservations"
                                   " WHERE org_id = %lld AND status = 'active'",
                                   o);
    CHECK(reserved > SKUS * 15 / 100 && reserved < SKUS * 25 / 100);

    /* The export is refreshed: most SKUs are in it (the rest have only supplier stock). */
    long long exported =
        count_for("SELECT count(*) FROM stock_availability WHERE org_id = %lld", o);
    CHECK(exported > SKUS * 8 / 10 && exported <= SKUS);
    CHECK(count_for("SELECT count(*) FROM stock_availability WHERE org_id = %lld"
                    " AND location IS NOT NULL",
                    o) > SKUS / 2);
    check_export(org);
}

static char *slurp(const char *path)
{
    FILE *in = fopen(path, "rb");
    if (in == NULL)
        return NULL;
    fseek(in, 0, SEEK_END);
    long size = ftell(in);
    fseek(in, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    size_t got = text ? fread(text, 1, (size_t)size, in) : 0;
    fclose(in);
    if (text)
        text[got] = '\0';
    return text;
}

/* The CSV files: the same for the same seed, different for another; the import reads them. */
static void check_csv(int64_t org)
{
    char dirs[3][64];
    wl_generate_options_t options[3] = {{SKUS, 7}, {SKUS, 7}, {SKUS, 8}};
    for (int i = 0; i < 3; i++) {
        snprintf(dirs[i], sizeof(dirs[i]), "/tmp/wl-generate-XXXXXX");
        if (mkdtemp(dirs[i]) == NULL) {
            FAIL("mkdtemp");
            return;
        }
        wl_generate_counts_t counts;
        wl_error_t err;
        wl_error_init(&err);
        if (wl_generate_csv(dirs[i], &options[i], &counts, &err) != 0)
            FAIL("generate --csv: %s", err.message);
    }
    for (int k = 0; k < 6; k++) {
        char path[3][128];
        char *text[3];
        for (int i = 0; i < 3; i++) {
            snprintf(path[i], sizeof(path[i]), "%s/%s.csv", dirs[i], wl_admin_kind_name(k));
            text[i] = slurp(path[i]);
        }
        CHECK(text[0] != NULL && text[1] != NULL && text[2] != NULL);
        if (text[0] && text[1] && text[2]) {
            CHECK(strcmp(text[0], text[1]) == 0);
            if (k >= 3) /* stock onwards depend on the seed */
                CHECK(strcmp(text[0], text[2]) != 0);
            /* The files import: the organization gets the same catalogue as in the database. */
            fixture_import(conn, org, wl_admin_kind_name(k), text[0]);
        }
        for (int i = 0; i < 3; i++) {
            free(text[i]);
            unlink(path[i]);
        }
    }
    for (int i = 0; i < 3; i++)
        rmdir(dirs[i]);
}

typedef struct {
    int count;
    size_t row;
    char column[32];
    char description[256];
} problems_t;

static void note_problem(size_t row, const char *column, const char *description, void *data)
{
    problems_t *problems = data;
    if (problems->count++ == 0) {
        problems->row = row;
        snprintf(problems->column, sizeof(problems->column), "%s", column);
        snprintf(problems->description, sizeof(problems->description), "%s", description);
    }
}

/* The admin API's batches, which the generator writes through: a kind past the last is refused
 * before anything starts; a batch with a bad row reports it by the caller's row number and
 * writes none of its rows; an aborted batch writes nothing either. */
static void check_batches(int64_t org)
{
    wl_error_t err;
    wl_error_init(&err);
    wl_admin_batch_t *batch = NULL;
    CHECK_INT(wl_admin_batch_begin(admin, org, WL_ADMIN_KIND_COUNT, NULL, NULL, &batch, &err),
              WL_EINVAL);
    CHECK(batch == NULL);
    /* The admin API's count is the CSV kinds' (store/import.c). */
    CHECK(wl_admin_kind_name(WL_ADMIN_KIND_COUNT - 1) != NULL);
    CHECK(wl_admin_kind_name(WL_ADMIN_KIND_COUNT) == NULL);
    CHECK_INT(wl_admin_kind_column_count(3), 3);
    CHECK_STR(wl_admin_kind_column(3, 2), "on_hand");
    CHECK_STR(wl_admin_kind_column(3, 3), "");

    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM warehouses WHERE org_id = %lld",
             (long long)org);
    long long before = testdb_count(conn, sql);
    problems_t problems = {0};
    wl_error_init(&err);
    CHECK_INT(wl_admin_batch_begin(admin, org, 0, note_problem, &problems, &batch, &err), 0);
    const wl_span_t good[] = {wl_span_str("WH-NEW"), wl_span_str("New"), wl_span_str("own")};
    const wl_span_t bad[] = {wl_span_str("WH-BAD"), wl_span_str("Bad"), wl_span_str("elsewhere")};
    int rc = wl_admin_batch_add(batch, 7, good, &err);
    if (rc == 0)
        rc = wl_admin_batch_add(batch, 8, bad, &err);
    size_t rows = 99;
    if (rc == 0)
        rc = wl_admin_batch_finish(batch, &rows, &err);
    else
        wl_admin_batch_abort(batch);
    CHECK_INT(rc, WL_EINVAL);
    CHECK_INT(problems.count, 1);
    CHECK_INT(problems.row, 8);
    CHECK_STR(problems.column, "kind");
    CHECK_INT(testdb_count(conn, sql), before);

    wl_error_init(&err);
    CHECK_INT(wl_admin_batch_begin(admin, org, 0, NULL, NULL, &batch, &err), 0);
    CHECK_INT(wl_admin_batch_add(batch, 1, good, &err), 0);
    wl_admin_batch_abort(batch);
    CHECK_INT(testdb_count(conn, sql), before);
}

int main(void)
{
    const char *conninfo = testdb_create("integration_generate");
    conn = testdb_connect(conninfo);
    wl_error_t connect_err;
    wl_error_init(&connect_err);
    if (wl_admin_connect(conninfo, "test_generate", &admin, &connect_err) != 0)
        FAIL("admin: %s", connect_err.message);
    int64_t a = fixture_org(conn, "gen-a");
    int64_t b = fixture_org(conn, "gen-b");
    int64_t c = fixture_org(conn, "gen-c");

    load(a, 7);
    check_distribution(a);

    /* Again with the same seed: nothing changes, so the export's version stays. */
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT version FROM export_versions WHERE org_id = %lld",
             (long long)a);
    long long version = testdb_count(conn, sql);
    CHECK(version > 0);
    load(a, 7);
    CHECK_INT(testdb_count(conn, sql), version);

    /* The same seed in another organization gives the same catalogue and export. */
    load(b, 7);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM ((SELECT sku, qty, location FROM stock_availability"
             " WHERE org_id = %lld) EXCEPT ALL (SELECT sku, qty, location FROM stock_availability"
             " WHERE org_id = %lld)) d",
             (long long)a, (long long)b);
    CHECK_INT(testdb_count(conn, sql), 0);
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM stock_availability WHERE org_id = %lld",
             (long long)b);
    CHECK_INT(testdb_count(conn, sql),
              count_for("SELECT count(*) FROM stock_availability WHERE org_id = %lld", a));

    /* The CSV form, imported file by file, makes the same export as the direct load. */
    check_csv(c);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM ((SELECT sku, qty, location FROM stock_availability"
             " WHERE org_id = %lld) EXCEPT ALL (SELECT sku, qty, location FROM stock_availability"
             " WHERE org_id = %lld)) d",
             (long long)a, (long long)c);
    CHECK_INT(testdb_count(conn, sql), 0);

    check_batches(c);

    /* The command itself: loads, and refuses what it cannot make. */
    const char *walklistctl = getenv("WALKLISTCTL");
    if (walklistctl == NULL) {
        FAIL("WALKLISTCTL is not set");
    } else {
        fixture_org(conn, "gen-d");
        setenv("WALKLIST_DATABASE_URL", conninfo, 1);
        CHECK_INT(system("\"$WALKLISTCTL\" generate --org gen-d --skus 100 --seed 3"
                         " 2>/dev/null"),
                  0);
        CHECK_INT(count_for("SELECT count(*) FROM products p JOIN organizations o USING (org_id)"
                            " WHERE o.slug = 'gen-d' AND %lld > 0",
                            1),
                  100);
        CHECK(system("\"$WALKLISTCTL\" generate --org gen-d --skus 0 2>/dev/null") != 0);
        CHECK(system("\"$WALKLISTCTL\" generate --org gen-d 2>/dev/null") != 0);
        CHECK(system("\"$WALKLISTCTL\" generate --org nobody --skus 5 2>/dev/null") != 0);
    }

    wl_admin_close(admin);
    PQfinish(conn);
    return test_exit();
}
