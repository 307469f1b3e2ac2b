/* Letting a group of requests in with one statement happens here. */
#include "store/admit.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "walklist/decimal.h"
#include "walklist/scopes.h"

/* An array literal being written; failed is sticky and checked once, when it is sent. */
typedef struct {
    char *text;
    size_t len, size;
    bool failed;
} literal_t;

/* Room for n more bytes, a closing brace and a NUL; false (and failed, for good) when there is
 * no memory for it. */
static bool reserve(literal_t *lit, size_t n)
{
    if (lit->failed)
        return false;
    if (lit->len + n + 2 > lit->size) {
        size_t size = lit->size ? lit->size : 256;
        while (lit->len + n + 2 > size)
            size *= 2;
        char *text = realloc(lit->text, size);
        if (text == NULL) {
            lit->failed = true;
            return false;
        }
        lit->text = text;
        lit->size = size;
    }
    return true;
}

static void put(literal_t *lit, const char *bytes, size_t n)
{
    if (!reserve(lit, n))
        return;
    memcpy(lit->text + lit->len, bytes, n);
    lit->len += n;
    lit->text[lit->len] = '\0';
}

/* One element: NULL when value is NULL, else quoted, so that any byte but NUL stays data.
 * Written in place after one reservation for the worst case (every byte escaped): a group
 * writes a few dozen elements per request. */
static void element(literal_t *lit, const char *value, size_t n)
{
    if (n > (SIZE_MAX - 8) / 2 || !reserve(lit, 2 * n + 4))
        return;
    char *out = lit->text + lit->len;
    *out++ = lit->len == 0 ? '{' : ',';
    if (value == NULL) {
        memcpy(out, "NULL", 4);
        out += 4;
    } else {
        *out++ = '"';
        for (size_t i = 0; i < n; i++) {
            if (value[i] == '"' || value[i] == '\\')
                *out++ = '\\';
            *out++ = value[i];
        }
        *out++ = '"';
    }
    *out = '\0';
    lit->len = (size_t)(out - lit->text);
}

static void string_element(literal_t *lit, const char *value)
{
    element(lit, value, value ? strlen(value) : 0);
}

static void int_element(literal_t *lit, bool present, long long value)
{
    if (!present) {
        string_element(lit, NULL);
        return;
    }
    char text[WL_DECIMAL_SIZE];
    element(lit, text, wl_decimal(value, text));
}

/* Closes the literal; an empty one is "{}". */
static const char *finish(literal_t *lit)
{
    put(lit, lit->len == 0 ? "{}" : "}", lit->len == 0 ? 2 : 1);
    return lit->failed ? NULL : lit->text;
}

enum {
    P_PREFIX,
    P_HASH,
    P_ORG,
    P_SCOPE,
    P_BUCKET,
    P_LIMIT,
    P_WANT,
    P_HOLD,
    P_RETURN_AT,
    P_RETURN,
    P_KIND,
    P_SUBJECT,
    P_LABEL,
    P_VALUE_COUNT,
    P_VALUES,
    P_COUNT
};

#define ADMIT_COLUMNS                                                                              \
    "SELECT i, org_id, slug, scopes, granted, used, reset_ms, counted_at, done, list_name,"        \
    " list_state, list_created_ms, list_loaded_ms, list_codes"
static const char admit_sql[] =
    ADMIT_COLUMNS " FROM wl_admit($1, $2, $3::bytea[], $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,"
                  " $14, $15, $16)";
/* The same, run on the node of organization $17 (distributed by it on Citus). */
static const char admit_at_sql[] =
    ADMIT_COLUMNS " FROM wl_admit_at($17, $1, $2, $3::bytea[], $4, $5, $6, $7, $8, $9, $10, $11,"
                  " $12, $13, $14, $15, $16)";

/* The first of the work's columns in the statement's rows (wl_admit_work_t.read_answer). */
#define WORK_COLUMN 9

static void write_request(literal_t *lits, const wl_admit_t *r)
{
    bool key_known = r->org_id != 0;
    string_element(&lits[P_PREFIX], key_known ? NULL : r->prefix);
    if (key_known) {
        string_element(&lits[P_HASH], NULL);
    } else {
        static const char hex[] = "0123456789abcdef";
        char hash[2 + 2 * WL_KEY_DIGEST_SIZE] = "\\x";
        for (size_t i = 0; i < WL_KEY_DIGEST_SIZE; i++) {
            hash[2 + 2 * i] = hex[r->digest[i] >> 4];
            hash[3 + 2 * i] = hex[r->digest[i] & 0xf];
        }
        element(&lits[P_HASH], hash, sizeof(hash));
    }
    int_element(&lits[P_ORG], key_known, r->org_id);
    char scope[64];
    wl_scopes_format(r->scope, scope, sizeof(scope));
    string_element(&lits[P_SCOPE], scope);
    string_element(&lits[P_BUCKET], r->bucket);
    int_element(&lits[P_LIMIT], true, r->limit);
    int_element(&lits[P_WANT], r->ask != NULL, r->ask ? r->ask->want : 0);
    int_element(&lits[P_HOLD], true, r->ask ? r->ask->hold_ms : 0);
    string_element(&lits[P_RETURN_AT], r->ask ? r->ask->return_at : NULL);
    int_element(&lits[P_RETURN], true, r->ask && r->ask->return_at ? r->ask->return_count : 0);
    const wl_admit_work_t *work = r->work;
    string_element(&lits[P_KIND], work != NULL ? work->kind : "take");
    string_element(&lits[P_SUBJECT], work != NULL ? work->subject : NULL);
    string_element(&lits[P_LABEL], work != NULL ? work->label : NULL);
    size_t values = work != NULL && work->values != NULL ? work->value_count : 0;
    int_element(&lits[P_VALUE_COUNT], true, (long long)values);
    for (size_t i = 0; i < values; i++)
        element(&lits[P_VALUES], work->values[i].base, work->values[i].len);
}

static int read_answer(const PGresult *res, int row, wl_admit_t *r)
{
    r->key_valid = !PQgetisnull(res, row, 1);
    r->asked = !PQgetisnull(res, row, 4);
    bool done = PQgetvalue(res, row, 8)[0] == 't';
    if (!r->key_valid)
        return 0;
    bool key_known = r->org_id != 0;
    r->principal.org_id = wl_db_int64(res, row, 1);
    snprintf(r->principal.key_prefix, sizeof(r->principal.key_prefix), "%s", r->prefix);
    if (!key_known) {
        snprintf(r->principal.org_slug, sizeof(r->principal.org_slug), "%s",
                 PQgetvalue(res, row, 2));
        wl_keys_scope_bits(PQgetvalue(res, row, 3), &r->principal.scopes);
    } else if (r->key_checked) {
        memcpy(r->principal.org_slug, r->checked.org_slug, sizeof(r->principal.org_slug));
        r->principal.scopes = r->checked.scopes;
    }
    if (r->asked) {
        r->grant.granted = atoi(PQgetvalue(res, row, 4));
        r->grant.used = atoi(PQgetvalue(res, row, 5));
        r->grant.reset_ms = wl_db_int64(res, row, 6);
        snprintf(r->grant.counted_at, sizeof(r->grant.counted_at), "%s", PQgetvalue(res, row, 7));
    }
    if (r->work == NULL || !done)
        return 0;
    r->work->done = true;
    return r->work->read_answer(r->work, res, row, WORK_COLUMN);
}

/* The group's statement: 0 with every request answered, or the failure in err. */
static int run(PGconn *conn, int window_ms, wl_admit_t *const *requests, int count, wl_error_t *err)
{
    literal_t lits[P_COUNT];
    memset(lits, 0, sizeof(lits));
    for (int i = 0; i < count; i++)
        write_request(lits, requests[i]);
    char window[16], node_org[24];
    snprintf(window, sizeof(window), "%d", window_ms);
    snprintf(node_org, sizeof(node_org), "%lld", (long long)requests[0]->node_org);
    const char *params[P_COUNT + 2] = {window};
    bool built = true;
    for (int p = 0; p < P_COUNT; p++) {
        params[p + 1] = finish(&lits[p]);
        built = built && params[p + 1] != NULL;
    }
    params[P_COUNT + 1] = node_org;
    bool at_node = requests[0]->node_org != 0;
    PGresult *res = NULL;
    int rc = !built    ? wl_error_set(err, WL_ENOMEM, NULL)
             : at_node ? wl_db_exec_hot(conn, admit_at_sql, P_COUNT + 2, params, &res, err)
                       : wl_db_exec_hot(conn, admit_sql, P_COUNT + 1, params, &res, err);
    for (int p = 0; p < P_COUNT; p++)
        free(lits[p].text);
    if (rc != 0)
        return rc;
    if (PQntuples(res) != count) {
        PQclear(res);
        return wl_error_set(err, WL_EINTERNAL, "admission: %d answers for %d requests",
                            PQntuples(res), count);
    }
    for (int row = 0; row < count; row++) {
        int i = atoi(PQgetvalue(res, row, 0)) - 1;
        wl_admit_t *r = i >= 0 && i < count ? requests[i] : NULL;
        int answer_rc = r != NULL ? read_answer(res, row, r) : WL_EINTERNAL;
        if (r != NULL)
            r->rc = answer_rc != 0 ? wl_error_set(r->err, answer_rc, NULL) : 0;
    }
    PQclear(res);
    return 0;
}

void wl_admit_batch(PGconn *conn, int window_ms, wl_admit_t *const *requests, int count)
{
    for (int i = 0; i < count; i++) {
        wl_admit_t *r = requests[i];
        r->rc = 0;
        r->key_valid = r->asked = false;
        if (r->work != NULL)
            r->work->done = false;
        memset(&r->principal, 0, sizeof(r->principal));
        r->principal.org_id = r->org_id;
    }
    wl_error_t err;
    wl_error_init(&err);
    int rc = run(conn, window_ms, requests, count, &err);
    if (rc == 0)
        return;
    /* Nothing was committed. One request's failure must stay its own, so each runs alone; a
     * lost connection (which may have committed) fails them all instead of running twice. */
    for (int i = 0; i < count; i++) {
        if (count == 1 || rc == WL_EUNAVAILABLE || rc == WL_ETIMEDOUT)
            requests[i]->rc = wl_error_set(requests[i]->err, rc, "%s", err.message);
        else
            wl_admit_batch(conn, window_ms, &requests[i], 1);
    }
}
