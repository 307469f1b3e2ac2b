/* Storing and reading walk lists happens here. */
#include "store/lists.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"

char *wl_db_text_array(wl_arena_t *arena, const wl_span_t *items, size_t count)
{
    size_t size = 3;
    for (size_t i = 0; i < count; i++)
        size += 2 * items[i].len + 3;
    char *out = wl_arena_alloc(arena, size);
    if (out == NULL)
        return NULL;
    char *p = out;
    *p++ = '{';
    for (size_t i = 0; i < count; i++) {
        if (i > 0)
            *p++ = ',';
        /* Every element quoted, so that NULL, braces, commas and spaces stay data. */
        *p++ = '"';
        for (size_t j = 0; j < items[i].len; j++) {
            char c = items[i].base[j];
            if (c == '"' || c == '\\')
                *p++ = '\\';
            *p++ = c;
        }
        *p++ = '"';
    }
    *p++ = '}';
    *p = '\0';
    return out;
}

static const char insert_sql[] = "INSERT INTO locate_lists (org_id, id, name, codes, created_at)"
                                 " VALUES ($1, $2, $3, $4::text[], now())"
                                 " RETURNING created_at";

/* Inserts one pending list; *created_ms receives its creation time (ms since the epoch). */
static int insert_list(PGconn *conn, int64_t org_id, const char *id, const char *name,
                       const wl_span_t *codes, size_t codes_count, wl_arena_t *arena,
                       int64_t *created_ms, wl_error_t *err)
{
    char org[24];
    snprintf(org, sizeof(org), "%lld", (long long)org_id);
    const char *params[] = {org, id, name, wl_db_text_array(arena, codes, codes_count)};
    if (params[3] == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    PGresult *res = NULL;
    int rc = wl_db_exec_hot(conn, insert_sql, 4, params, &res, err);
    if (rc == 0) {
        *created_ms = wl_db_timestamp_ms(res, 0, 0);
        PQclear(res);
    }
    return rc;
}

/* Claims the key for a new list, or takes it over when its first use is over 24 h old. The
 * times are this process's clock, passed in: a distributed database (Citus) refuses functions
 * that are not immutable in ON CONFLICT, and a day's window does not mind a clock's skew. */
static int claim_key(PGconn *conn, const char *const key_params[4], bool *claimed, wl_error_t *err)
{
    char now[64], expired[64];
    int64_t now_ms = wl_db_wall_clock_ms();
    wl_db_format_timestamp(now_ms, now);
    wl_db_format_timestamp(now_ms - 24 * 3600 * 1000, expired);
    const char *params[] = {key_params[0], key_params[1], key_params[2],
                            key_params[3], now,           expired};
    PGresult *res = NULL;
    int rc = wl_db_exec_hot(
        conn,
        "INSERT INTO idempotency_keys AS k (org_id, key, request_hash, list_id, created_at)"
        " VALUES ($1, $2, decode($3, 'hex'), $4, $5::timestamptz)"
        " ON CONFLICT (org_id, key) DO UPDATE"
        " SET request_hash = excluded.request_hash, list_id = excluded.list_id,"
        " created_at = excluded.created_at"
        " WHERE k.created_at <= $6::timestamptz"
        " RETURNING 1",
        6, params, &res, err);
    if (rc != 0)
        return rc;
    *claimed = PQntuples(res) == 1;
    PQclear(res);
    return 0;
}

/* The list a key was first used for, when the request matches; WL_EIDEMPOTENCY otherwise. */
static int replay(PGconn *conn, const char *const params[4], wl_arena_t *arena,
                  wl_list_created_t *out, wl_error_t *err)
{
    PGresult *res = NULL;
    int rc = wl_db_exec_hot(conn,
                            "SELECT k.request_hash = decode($3, 'hex'), l.id, l.name,"
                            " cardinality(l.codes)"
                            " FROM idempotency_keys k JOIN locate_lists l"
                            " ON l.org_id = k.org_id AND l.id = k.list_id"
                            " WHERE k.org_id = $1 AND k.key = $2",
                            3, params, &res, err);
    if (rc != 0)
        return rc;
    if (PQntuples(res) != 1) {
        PQclear(res);
        return wl_error_set(err, WL_EINTERNAL, "idempotency key without its list");
    }
    if (PQgetvalue(res, 0, 0)[0] != 't') {
        PQclear(res);
        return wl_error_set(err, WL_EIDEMPOTENCY,
                            "the Idempotency-Key was already used for a different list");
    }
    out->id = wl_arena_strdup(arena, PQgetvalue(res, 0, 1));
    out->name = wl_arena_strdup(arena, PQgetvalue(res, 0, 2));
    out->codes_count = (size_t)wl_db_int64(res, 0, 3);
    out->replayed = true;
    PQclear(res);
    return out->id && out->name ? 0 : wl_error_set(err, WL_ENOMEM, NULL);
}

int wl_lists_insert_idempotent(PGconn *conn, int64_t org_id, const char *key,
                               const char *request_hash_hex, const char *id, const char *name,
                               const wl_span_t *codes, size_t codes_count, wl_arena_t *arena,
                               wl_list_created_t *out, wl_error_t *err)
{
    char org[24];
    snprintf(org, sizeof(org), "%lld", (long long)org_id);
    const char *params[] = {org, key, request_hash_hex, id};
    memset(out, 0, sizeof(*out));
    bool claimed = false;
    int rc = wl_db_begin(conn, err);
    if (rc != 0)
        return rc;
    /* A concurrent request with the same key waits here until the first commits. */
    rc = claim_key(conn, params, &claimed, err);
    if (rc == 0 && !claimed) {
        rc = replay(conn, params, arena, out, err);
    } else if (rc == 0) {
        int64_t created_ms = 0;
        rc = insert_list(conn, org_id, id, name, codes, codes_count, arena, &created_ms, err);
        out->id = id;
        out->name = name;
        out->codes_count = codes_count;
    }
    if (rc == 0)
        rc = wl_db_commit(conn, err);
    if (rc != 0)
        wl_db_rollback(conn);
    return rc;
}

int wl_lists_get(PGconn *conn, int64_t org_id, const char *id, wl_arena_t *arena,
                 wl_list_record_t *out, wl_error_t *err)
{
    char org[24];
    snprintf(org, sizeof(org), "%lld", (long long)org_id);
    const char *params[] = {org, id};
    PGresult *res = NULL;
    int rc = wl_db_exec_hot(conn,
                            "SELECT l.name, l.state,"
                            " floor(extract(epoch FROM l.created_at) * 1000)::bigint,"
                            " floor(extract(epoch FROM l.loaded_at) * 1000)::bigint, c.code"
                            " FROM locate_lists l, unnest(l.codes) WITH ORDINALITY AS c(code, n)"
                            " WHERE l.org_id = $1 AND l.id = $2 ORDER BY c.n",
                            2, params, &res, err);
    if (rc != 0)
        return rc;
    int rows = PQntuples(res);
    if (rows == 0) {
        PQclear(res);
        return wl_error_set(err, WL_ENOTFOUND, "no walk list with that id");
    }
    memset(out, 0, sizeof(*out));
    out->name = wl_arena_strdup(arena, PQgetvalue(res, 0, 0));
    out->state = wl_arena_strdup(arena, PQgetvalue(res, 0, 1));
    out->created_ms = wl_db_int64(res, 0, 2);
    out->loaded_ms = PQgetisnull(res, 0, 3) ? -1 : wl_db_int64(res, 0, 3);
    out->codes = wl_arena_alloc(arena, sizeof(char *) * (size_t)rows);
    bool ok = out->name != NULL && out->state != NULL && out->codes != NULL;
    for (int i = 0; ok && i < rows; i++) {
        out->codes[i] =
            wl_arena_strndup(arena, PQgetvalue(res, i, 4), (size_t)PQgetlength(res, i, 4));
        ok = out->codes[i] != NULL;
    }
    out->codes_count = (size_t)rows;
    PQclear(res);
    return ok ? 0 : wl_error_set(err, WL_ENOMEM, NULL);
}
