/* Counting requests against the rate-limit buckets in the database happens here. */
#include "store/rate_limits.h"

#include <stdio.h>
#include <stdlib.h>

#include "store/db.h"

int wl_rate_take(PGconn *conn, int64_t org_id, const char *bucket, int limit, int window_ms,
                 const wl_rate_ask_t *ask, wl_rate_grant_t *out, wl_error_t *err)
{
    char org[24], limit_text[16], window[16], want[16], hold[16], returned[16];
    snprintf(org, sizeof(org), "%lld", (long long)org_id);
    snprintf(limit_text, sizeof(limit_text), "%d", limit);
    snprintf(window, sizeof(window), "%d", window_ms);
    snprintf(want, sizeof(want), "%d", ask->want);
    snprintf(hold, sizeof(hold), "%d", ask->hold_ms);
    snprintf(returned, sizeof(returned), "%d", ask->return_at ? ask->return_count : 0);
    const char *params[] = {org, bucket, limit_text, window, want, hold, ask->return_at, returned};
    PGresult *res = NULL;
    int rc = wl_db_exec_hot(conn,
                            "SELECT granted, used, reset_ms, counted_at"
                            " FROM wl_rate_take($1, $2, $3, $4, $5, $6, $7, $8)",
                            8, params, &res, err);
    if (rc != 0)
        return rc;
    if (PQntuples(res) != 1) {
        PQclear(res);
        return wl_error_set(err, WL_EINTERNAL, "rate limit: no decision");
    }
    out->granted = atoi(PQgetvalue(res, 0, 0));
    out->used = atoi(PQgetvalue(res, 0, 1));
    out->reset_ms = wl_db_int64(res, 0, 2);
    snprintf(out->counted_at, sizeof(out->counted_at), "%s", PQgetvalue(res, 0, 3));
    PQclear(res);
    return 0;
}
