/* Deciding which origins browsers may call walklistd from happens here. */
#include "http/cors.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

struct wl_cors {
    bool any;
    size_t count;
    char **origins; /* lower-case scheme and host */
};

/* scheme://host[:port] with scheme http or https, the host of letters, digits, '-', '.', or an
 * IPv6 literal in brackets, and nothing after the port. */
static bool valid_origin(const char *origin)
{
    const char *host = NULL;
    if (strncmp(origin, "https://", 8) == 0)
        host = origin + 8;
    else if (strncmp(origin, "http://", 7) == 0)
        host = origin + 7;
    if (host == NULL)
        return false;
    size_t len = host[0] == '[' ? strcspn(host, "]") + 1
                                : strspn(host, "abcdefghijklmnopqrstuvwxyz"
                                               "0123456789-.");
    if (len == 0 || (host[0] == '[' && (host[len - 1] != ']' || len < 4)))
        return false;
    if (host[0] == '[' && strspn(host + 1, "0123456789abcdef:.") != len - 2)
        return false;
    const char *rest = host + len;
    if (*rest == '\0')
        return true;
    if (*rest != ':')
        return false;
    size_t digits = strspn(rest + 1, "0123456789");
    if (digits == 0 || digits > 5 || rest[1 + digits] != '\0')
        return false;
    long port = strtol(rest + 1, NULL, 10);
    return port >= 1 && port <= 65535;
}

void wl_cors_destroy(wl_cors_t *cors)
{
    if (cors == NULL)
        return;
    for (size_t i = 0; i < cors->count; i++)
        free(cors->origins[i]);
    free(cors->origins);
    free(cors);
}

int wl_cors_create(const char *origins, wl_cors_t **out, wl_error_t *err)
{
    *out = NULL;
    if (origins == NULL || origins[strspn(origins, " \t")] == '\0')
        return 0;
    wl_cors_t *cors = calloc(1, sizeof(*cors));
    size_t entries = 1;
    for (const char *p = origins; *p; p++)
        entries += *p == ',';
    if (cors == NULL || (cors->origins = calloc(entries, sizeof(char *))) == NULL) {
        wl_cors_destroy(cors);
        return wl_error_set(err, WL_ENOMEM, NULL);
    }
    const char *p = origins;
    for (size_t i = 0; i < entries; i++) {
        p += strspn(p, " \t");
        size_t len = strcspn(p, ",");
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        char *origin = strndup(p, len);
        if (origin == NULL) {
            wl_cors_destroy(cors);
            return wl_error_set(err, WL_ENOMEM, NULL);
        }
        for (char *c = origin; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        bool star = strcmp(origin, "*") == 0;
        if ((star && entries > 1) || (!star && !valid_origin(origin))) {
            wl_error_set(err, WL_EINVAL,
                         "--cors-origin: '%.*s' is not an origin: give '*' alone, or "
                         "comma-separated origins such as https://app.example.com "
                         "(http or https, a host, an optional port, no path)",
                         (int)len, p);
            free(origin);
            wl_cors_destroy(cors);
            return WL_EINVAL;
        }
        cors->any = star;
        cors->origins[cors->count++] = origin;
        p += strcspn(p, ",");
        if (*p == ',')
            p++;
    }
    *out = cors;
    return 0;
}

const char *wl_cors_allow_origin(const wl_cors_t *cors, const char *origin)
{
    if (cors == NULL || origin == NULL)
        return NULL;
    if (cors->any)
        return "*";
    /* Browsers send the origin serialised: scheme and host in lower case, as kept. */
    for (size_t i = 0; i < cors->count; i++) {
        if (strcmp(cors->origins[i], origin) == 0)
            return origin;
    }
    return NULL;
}
