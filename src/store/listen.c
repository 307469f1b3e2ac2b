/* Listening for announcements from other processes happens here. */
#include "store/listen.h"

#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "store/db.h"

/* How long a listener waits for its server before calling the connection lost. */
#define LISTEN_LIVENESS_MS 3000

int wl_listen_open(const char *conninfo, const char *const *channels, const char *application,
                   PGconn **out, wl_error_t *err)
{
    *out = NULL;
    /* A listener that went silent must be noticed: what it would have heard is then
     * assumed (wl_listen_wait's caller distrusts its cache until it listens again). */
    wl_db_connect_t how = {.conninfo = conninfo,
                           .application = application,
                           .liveness_timeout_ms = LISTEN_LIVENESS_MS};
    PGconn *conn = wl_db_connect(&how, wl_db_clock_ms() + LISTEN_LIVENESS_MS, err, NULL, 0);
    if (conn == NULL)
        return wl_error_set(err, WL_EUNAVAILABLE, "%s: cannot connect", application);
    char sql[512] = "";
    size_t used = 0;
    bool fits = true;
    for (size_t i = 0; channels[i] != NULL && fits; i++) {
        char *quoted = PQescapeIdentifier(conn, channels[i], strlen(channels[i]));
        int n = snprintf(sql + used, sizeof(sql) - used, "LISTEN %s;", quoted ? quoted : "");
        fits = quoted != NULL && n > 0 && (size_t)n < sizeof(sql) - used;
        used += fits ? (size_t)n : 0;
        PQfreemem(quoted);
    }
    PGresult *res = fits ? PQexec(conn, sql) : NULL;
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    if (!ok) {
        PQfinish(conn);
        return wl_error_set(err, WL_EUNAVAILABLE, "%s: LISTEN failed", application);
    }
    *out = conn;
    return 0;
}

int wl_listen_wait(PGconn *conn, int wake_fd, int timeout_ms,
                   void (*each)(const char *channel, const char *payload, void *data), void *data,
                   wl_error_t *err)
{
    struct pollfd fds[2] = {{.fd = PQsocket(conn), .events = POLLIN},
                            {.fd = wake_fd, .events = POLLIN}};
    if (fds[0].fd < 0)
        return wl_error_set(err, WL_EUNAVAILABLE, "listen: no connection");
    int ready = poll(fds, wake_fd >= 0 ? 2 : 1, timeout_ms);
    if (ready < 0)
        return 0; /* interrupted: nothing read, nothing missed */
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) && PQconsumeInput(conn) == 0)
        return wl_error_set(err, WL_EUNAVAILABLE, "listen: connection lost");
    if (ready == 0) {
        PGresult *res = PQexec(conn, "SELECT 1");
        bool alive = PQresultStatus(res) == PGRES_TUPLES_OK;
        PQclear(res);
        if (!alive)
            return wl_error_set(err, WL_EUNAVAILABLE, "listen: connection lost");
    }
    PGnotify *notice;
    while ((notice = PQnotifies(conn)) != NULL) {
        each(notice->relname, notice->extra, data);
        PQfreemem(notice);
    }
    if (PQstatus(conn) != CONNECTION_OK)
        return wl_error_set(err, WL_EUNAVAILABLE, "listen: connection lost");
    return 0;
}
