/*
 * The shard-direct form of an SQL function (domain/shard_direct.h): the switch turned on, the
 * lists of anchor shards and range minimums filled in range order, each marked statement
 * dispatched by v_shard, halving the groups ordered by anchor shard, to its shard group's copy,
 * with the layout's tables and primary keys renamed as Citus names a shard's, and the statement
 * as written where not direct; malformed markers refused. And the real wl_admit, expanded.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "domain/shard_direct.h"
#include "store/migrate.h"
#include "test.h"

static const char *const tables[] = {"rate_limits", "locate_lists"};
/* Three groups in range order, their anchor shards out of order (a split's new shards). */
static const int64_t shards[] = {13, 23, 11, 21, 12, 22};
static const int32_t mins[] = {-2147483647 - 1, -5, 1000};
static const wl_shard_layout_t layout = {tables, 2, shards, mins, 3};

static const char TEMPLATE[] =
    "DECLARE\n"
    "    v_on CONSTANT boolean := false; -- shard-direct: true\n"
    "    v_at bigint[] := '{}'; -- shard-direct: shards\n"
    "    v_from integer[] := coalesce('{}', '{}'::integer[]); -- shard-direct: mins\n"
    "    v_kept text[] := '{}';\n"
    "BEGIN\n"
    "    -- shard-direct: statement\n"
    "    SELECT rl.hits INTO v FROM rate_limits rl\n"
    "     WHERE rl.org_id = v_org AND rl.bucket = 'rate_limits';\n"
    "    INSERT INTO rate_limits_log VALUES (1);\n"
    "  -- shard-direct: statement\n"
    "  INSERT INTO Locate_Lists SELECT 1 FROM rate_limits ON CONFLICT ON CONSTRAINT "
    "rate_limits_pkey DO NOTHING; -- rate_limits\n"
    "END";

static const char EXPECTED[] =
    "DECLARE\n"
    "    v_on CONSTANT boolean := true; -- shard-direct: true\n"
    "    v_at bigint[] := '{13,11,12}'; -- shard-direct: shards\n"
    "    v_from integer[] := coalesce('{}', '{-2147483648,-5,1000}'::integer[]); -- shard-direct: "
    "mins\n"
    "    v_kept text[] := '{}';\n"
    "BEGIN\n"
    "    -- shard-direct: statement\n"
    "    IF v_direct THEN\n"
    "    IF v_shard < 12 THEN\n"
    "    SELECT rl.hits INTO v FROM rate_limits_11 rl\n"
    "     WHERE rl.org_id = v_org AND rl.bucket = 'rate_limits';\n"
    "    ELSE\n"
    "    IF v_shard < 13 THEN\n"
    "    SELECT rl.hits INTO v FROM rate_limits_12 rl\n"
    "     WHERE rl.org_id = v_org AND rl.bucket = 'rate_limits';\n"
    "    ELSE\n"
    "    SELECT rl.hits INTO v FROM rate_limits_13 rl\n"
    "     WHERE rl.org_id = v_org AND rl.bucket = 'rate_limits';\n"
    "    END IF;\n"
    "    END IF;\n"
    "    ELSE\n"
    "    SELECT rl.hits INTO v FROM rate_limits rl\n"
    "     WHERE rl.org_id = v_org AND rl.bucket = 'rate_limits';\n"
    "    END IF;\n"
    "    INSERT INTO rate_limits_log VALUES (1);\n"
    "  -- shard-direct: statement\n"
    "  IF v_direct THEN\n"
    "  IF v_shard < 12 THEN\n"
    "  INSERT INTO Locate_Lists_21 SELECT 1 FROM rate_limits_11 ON CONFLICT ON CONSTRAINT "
    "rate_limits_pkey_11 DO NOTHING; -- rate_limits\n"
    "  ELSE\n"
    "  IF v_shard < 13 THEN\n"
    "  INSERT INTO Locate_Lists_22 SELECT 1 FROM rate_limits_12 ON CONFLICT ON CONSTRAINT "
    "rate_limits_pkey_12 DO NOTHING; -- rate_limits\n"
    "  ELSE\n"
    "  INSERT INTO Locate_Lists_23 SELECT 1 FROM rate_limits_13 ON CONFLICT ON CONSTRAINT "
    "rate_limits_pkey_13 DO NOTHING; -- rate_limits\n"
    "  END IF;\n"
    "  END IF;\n"
    "  ELSE\n"
    "  INSERT INTO Locate_Lists SELECT 1 FROM rate_limits ON CONFLICT ON CONSTRAINT "
    "rate_limits_pkey DO NOTHING; -- rate_limits\n"
    "  END IF;\n"
    "END";

/* The expansion of sql must fail with WL_EINVAL and a message holding fragment. */
static void check_refused(const char *sql, const wl_shard_layout_t *l, const char *fragment)
{
    wl_error_t err;
    wl_error_init(&err);
    char *out = (char *)"untouched";
    CHECK_INT(wl_shard_direct_expand(wl_span_str(sql), l, &out, &err), WL_EINVAL);
    CHECK(out == NULL);
    if (strstr(err.message, fragment) == NULL)
        FAIL("message \"%s\" lacks \"%s\"\n", err.message, fragment);
}

static size_t count_of(const char *text, const char *piece)
{
    size_t n = 0;
    for (const char *p = strstr(text, piece); p != NULL; p = strstr(p + 1, piece))
        n++;
    return n;
}

/* wl_admit.sql as embedded: every marked statement dispatched over 32 groups of three tables. */
static void check_wl_admit(void)
{
    const char *sql = NULL;
    for (size_t i = 0; i < wl_function_count; i++) {
        if (strcmp(wl_functions[i].name, "wl_admit") == 0)
            sql = wl_functions[i].sql;
    }
    CHECK(sql != NULL);
    if (sql == NULL)
        return;
    CHECK(wl_shard_direct_marked(wl_span_str(sql)));
    size_t markers = count_of(sql, "-- shard-direct: statement");
    CHECK(markers >= 7);
    static const char *const admit_tables[] = {"rate_limits", "export_versions", "locate_lists"};
    int64_t ids[32 * 3];
    int32_t range_mins[32];
    for (int g = 0; g < 32; g++) {
        for (int t = 0; t < 3; t++)
            ids[g * 3 + t] = 102000 + 100 * t + g;
        range_mins[g] = (int32_t)(INT32_MIN + (int64_t)g * 134217728);
    }
    const wl_shard_layout_t admit = {admit_tables, 3, ids, range_mins, 32};
    wl_error_t err;
    wl_error_init(&err);
    char *out = NULL;
    CHECK_INT(wl_shard_direct_expand(wl_span_str(sql), &admit, &out, &err), 0);
    if (out == NULL)
        return;
    CHECK(strstr(out, "v_shard_direct CONSTANT boolean := true;") != NULL);
    CHECK(strstr(out, "v_shard_direct CONSTANT boolean := false;") == NULL);
    /* Per marked statement: the test of v_direct and 31 halvings, 5 deep, to 32 groups. */
    CHECK_INT(count_of(out, "IF v_direct THEN"), markers);
    CHECK_INT(count_of(out, "IF v_shard < "), markers * 31);
    CHECK_INT(count_of(out, " THEN\n") - count_of(sql, " THEN\n"), markers * 32);
    CHECK(strstr(out, "'{102000,102001,102002,") != NULL);
    CHECK(strstr(out, "'{-2147483648,-2013265920,-1879048192,") != NULL);
    /* Group 5's shards: the bucket's row (and its key), the list and the version. */
    CHECK(strstr(out, "FROM rate_limits_102005 rl") != NULL);
    CHECK(strstr(out, "ON CONSTRAINT rate_limits_pkey_102005") != NULL);
    CHECK(strstr(out, "FROM locate_lists_102205 l") != NULL);
    CHECK(strstr(out, "INTO locate_lists_102205 (") != NULL);
    CHECK(strstr(out, "FROM export_versions_102105 ev") != NULL);
    CHECK(strstr(out, "UPDATE rate_limits_102031 rl") != NULL);
    free(out);
}

int main(void)
{
    wl_error_t err;
    wl_error_init(&err);
    char *out = NULL;
    CHECK_INT(wl_shard_direct_expand(wl_span_str(TEMPLATE), &layout, &out, &err), 0);
    CHECK_STR(out, EXPECTED);
    free(out);

    CHECK(wl_shard_direct_marked(wl_span_str(TEMPLATE)));
    CHECK(!wl_shard_direct_marked(wl_span_str("SELECT 1 FROM rate_limits; -- shard-direct")));

    /* Text without markers comes back as it is, its last line with or without a newline. */
    const char *plain[] = {"SELECT 1 FROM rate_limits;\n", "SELECT 1 FROM rate_limits;", ""};
    for (size_t i = 0; i < sizeof(plain) / sizeof(*plain); i++) {
        CHECK_INT(wl_shard_direct_expand(wl_span_str(plain[i]), &layout, &out, &err), 0);
        CHECK_STR(out, plain[i]);
        free(out);
    }

    check_refused("x := 1; -- shard-direct: true\n", &layout, "switch without false");
    check_refused("v := falsehood; -- shard-direct: true\n", &layout, "switch without false");
    check_refused("v integer[] := NULL; -- shard-direct: mins\n", &layout,
                  "list without '{}': v integer[] := NULL;");
    check_refused("v bigint[] := '{1}'; -- shard-direct: shards\n", &layout, "list without '{}'");
    check_refused("-- shard-direct: statement\n", &layout, "no statement after it");
    check_refused("-- shard-direct: statement\nSELECT 1 FROM rate_limits\n", &layout,
                  "no statement after it");
    check_refused("-- shard-direct: statement\nSELECT 1 FROM products;\n", &layout,
                  "names none of its tables: SELECT 1 FROM products;");
    const wl_shard_layout_t empty = {tables, 2, shards, mins, 0};
    check_refused(TEMPLATE, &empty, "at least one shard");

    check_wl_admit();
    return test_exit();
}
