/* Server-wide secrets are read, and made by migrate, here. */
#include "store/secrets.h"

#include <stdbool.h>
#include <string.h>

#include "store/db.h"
#include "walklist/random.h"
#include "walklist/hex.h"

static const char hex_digits[] = "0123456789abcdef";

/* Reads the stored secret; *found is false when there is none yet. */
static int read_secret(PGconn *conn, const char *name, unsigned char out[WL_SECRET_SIZE],
                       bool *found, wl_error_t *err)
{
    const char *params[] = {name};
    PGresult *res = NULL;
    int rc = wl_db_exec(conn, "SELECT encode(secret, 'hex') FROM server_secrets WHERE name = $1", 1,
                        params, &res, err);
    if (rc != 0)
        return rc;
    *found = PQntuples(res) == 1;
    if (*found) {
        const char *hex = PQgetvalue(res, 0, 0);
        if (strlen(hex) < 2 * WL_SECRET_SIZE) {
            PQclear(res);
            return wl_error_set(err, WL_EINTERNAL, "server secret %s is too short", name);
        }
        /* A longer secret is used by its first WL_SECRET_SIZE bytes. */
        for (size_t i = 0; i < WL_SECRET_SIZE; i++)
            out[i] = (unsigned char)(wl_hex_value(hex[2 * i]) << 4 | wl_hex_value(hex[2 * i + 1]));
    }
    PQclear(res);
    return 0;
}

int wl_secrets_get(PGconn *conn, const char *name, unsigned char out[WL_SECRET_SIZE],
                   wl_error_t *err)
{
    bool found = false;
    int rc = read_secret(conn, name, out, &found, err);
    if (rc == 0 && !found)
        rc =
            wl_error_set(err, WL_EUNAVAILABLE,
                         "the database has no server secret %s yet: run walklistctl migrate", name);
    return rc;
}

int wl_secrets_make(PGconn *conn, const char *name, wl_error_t *err)
{
    unsigned char fresh[WL_SECRET_SIZE];
    char hex[2 * WL_SECRET_SIZE + 1];
    if (wl_random_bytes(fresh, sizeof(fresh)) != 0)
        return wl_error_set(err, WL_EINTERNAL, "no randomness available");
    for (size_t i = 0; i < WL_SECRET_SIZE; i++) {
        hex[2 * i] = hex_digits[fresh[i] >> 4];
        hex[2 * i + 1] = hex_digits[fresh[i] & 0x0f];
    }
    hex[2 * WL_SECRET_SIZE] = '\0';
    const char *params[] = {name, hex};
    return wl_db_exec(conn,
                      "INSERT INTO server_secrets (name, secret) VALUES ($1, decode($2, 'hex'))"
                      " ON CONFLICT (name) DO NOTHING",
                      2, params, NULL, err);
}
