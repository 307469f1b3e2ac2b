/* Pointing a database URL at another node of the cluster happens here. */
#include "store/node_conninfo.h"

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"

/* Appends key='value' to buf (quotes and backslashes escaped, as libpq reads them). */
static int append_setting(char **buf, size_t *len, size_t *cap, const char *key, const char *value)
{
    size_t need = *len + strlen(key) + 2 * strlen(value) + 5;
    if (need > *cap) {
        size_t cap2 = need * 2;
        char *grown = realloc(*buf, cap2);
        if (grown == NULL)
            return -1;
        *buf = grown;
        *cap = cap2;
    }
    char *out = *buf + *len;
    if (*len > 0)
        *out++ = ' ';
    out += sprintf(out, "%s='", key);
    for (const char *c = value; *c != '\0'; c++) {
        if (*c == '\'' || *c == '\\')
            *out++ = '\\';
        *out++ = *c;
    }
    *out++ = '\'';
    *out = '\0';
    *len = (size_t)(out - *buf);
    return 0;
}

int wl_node_conninfo(const char *conninfo, const char *host, int port, char **out, wl_error_t *err)
{
    *out = NULL;
    if (host == NULL || host[0] == '\0' || port < 1 || port > 65535)
        return wl_error_set(err, WL_EINVAL, "a node needs a host and a port (1-65535)");
    int rc = wl_db_check_conninfo(conninfo, err);
    if (rc != 0)
        return rc;
    PQconninfoOption *options = PQconninfoParse(conninfo != NULL ? conninfo : "", NULL);
    if (options == NULL)
        return wl_error_set(err, WL_ENOMEM, "out of memory reading the database URL");
    size_t len = 0, cap = 256;
    char *buf = malloc(cap);
    char port_text[8];
    snprintf(port_text, sizeof(port_text), "%d", port);
    bool failed = buf == NULL;
    if (!failed)
        buf[0] = '\0';
    for (PQconninfoOption *o = options; !failed && o->keyword != NULL; o++) {
        if (o->val == NULL || strcmp(o->keyword, "host") == 0 ||
            strcmp(o->keyword, "hostaddr") == 0 || strcmp(o->keyword, "port") == 0)
            continue;
        failed = append_setting(&buf, &len, &cap, o->keyword, o->val) != 0;
    }
    if (!failed)
        failed = append_setting(&buf, &len, &cap, "host", host) != 0 ||
                 append_setting(&buf, &len, &cap, "port", port_text) != 0;
    PQconninfoFree(options);
    if (failed) {
        free(buf);
        return wl_error_set(err, WL_ENOMEM, "out of memory for a node's database URL");
    }
    *out = buf;
    return 0;
}
