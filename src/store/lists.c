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

/*
 * A text[] value as PostgreSQL writes it ({a,"b c","d\"e"}) into arena
 * strings. Elements are never NULL here (list codes).
 */
static int parse_text_array(const char *text, wl_arena_t *arena, char ***out, size_t *count)
{
    size_t n = 0, capacity = 0;
    char **items = NULL;
    const char *p = text + (*text == '{');
    char *buf = wl_arena_alloc(arena, strlen(text) + 1);
    if (buf == NULL)
        return WL_ENOMEM;
    while (*p != '\0' && *p != '}') {
        char *item = buf;
        if (*p == '"') {
            for (p++; *p != '\0' && *p != '"'; p++) {
                if (*p == '\\' && p[1] != '\0')
                    p++;
                *buf++ = *p;
            }
            p += *p == '"';
        } else {
            while (*p != '\0' && *p != ',' && *p != '}')
                *buf++ = *p++;
        }
        *buf++ = '\0';
        if (n == capacity) {
            capacity = capacity ? capacity * 2 : 16;
            char **grown = wl_arena_alloc(arena, capacity * sizeof(*grown));
            if (grown == NULL)
                return WL_ENOMEM;
            if (n > 0)
                memcpy(grown, items, n * sizeof(*grown));
            items = grown;
        }
        items[n++] = item;
        p += *p == ',';
    }
    *out = items;
    *count = n;
    return 0;
}

/* The work's columns of wl_admit's rows, from the first: list_name, list_state,
 * list_created_ms, list_loaded_ms, list_codes. */
enum { COLUMN_NAME, COLUMN_STATE, COLUMN_CREATED_MS, COLUMN_LOADED_MS, COLUMN_CODES };

static int read_created(wl_admit_work_t *base, const PGresult *res, int row, int column)
{
    wl_list_work_t *work = (wl_list_work_t *)base;
    work->list.created_ms = wl_db_int64(res, row, column + COLUMN_CREATED_MS);
    return 0;
}

static int read_list(wl_admit_work_t *base, const PGresult *res, int row, int column)
{
    wl_list_work_t *work = (wl_list_work_t *)base;
    wl_list_record_t *list = &work->list;
    list->name = wl_arena_strdup(work->arena, PQgetvalue(res, row, column + COLUMN_NAME));
    list->state = wl_arena_strdup(work->arena, PQgetvalue(res, row, column + COLUMN_STATE));
    list->created_ms = wl_db_int64(res, row, column + COLUMN_CREATED_MS);
    list->loaded_ms = PQgetisnull(res, row, column + COLUMN_LOADED_MS)
                          ? -1
                          : wl_db_int64(res, row, column + COLUMN_LOADED_MS);
    if (list->name == NULL || list->state == NULL)
        return WL_ENOMEM;
    return parse_text_array(PQgetvalue(res, row, column + COLUMN_CODES), work->arena, &list->codes,
                            &list->codes_count);
}

void wl_lists_create_work(wl_list_work_t *work, int64_t org_id, const char *id, const char *name,
                          const wl_span_t *codes, size_t codes_count)
{
    memset(work, 0, sizeof(*work));
    snprintf(work->id, sizeof(work->id), "%s", id);
    work->work = (wl_admit_work_t){.kind = "create",
                                   .org_id = org_id,
                                   .subject = work->id,
                                   .label = name,
                                   .values = codes,
                                   .value_count = codes_count,
                                   .read_answer = read_created};
}

void wl_lists_get_work(wl_list_work_t *work, int64_t org_id, const char *id, wl_arena_t *arena)
{
    memset(work, 0, sizeof(*work));
    snprintf(work->id, sizeof(work->id), "%s", id);
    work->arena = arena;
    work->work = (wl_admit_work_t){
        .kind = "get", .org_id = org_id, .subject = work->id, .read_answer = read_list};
}

wl_list_work_t *wl_lists_work_of(wl_admit_work_t *work, const char *kind)
{
    bool ours =
        work != NULL && (work->read_answer == read_created || work->read_answer == read_list);
    return ours && strcmp(work->kind, kind) == 0 ? (wl_list_work_t *)work : NULL;
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
