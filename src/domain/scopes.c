/* API key scopes are parsed and formatted here. */
#include "walklist/scopes.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int wl_scopes_parse(const char *text, unsigned *scopes, wl_error_t *err)
{
    static const struct {
        const char *name;
        unsigned bit;
    } known[] = {
#define XX(name, bit, text) {text, bit},
        WL_SCOPE_MAP(XX)
#undef XX
    };
    *scopes = 0;
    while (*text != '\0') {
        size_t n = strcspn(text, ",");
        if (n == 0 || (text[n] == ',' && text[n + 1] == '\0'))
            return wl_error_add_violation(err, "scopes", "has an empty entry");
        bool found = false;
        for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
            if (strlen(known[i].name) == n && strncmp(known[i].name, text, n) == 0) {
                *scopes |= known[i].bit;
                found = true;
            }
        }
        if (!found)
            return wl_error_add_violation(err, "scopes", "unknown scope '%.*s'", (int)n, text);
        text += n + (text[n] == ',');
    }
    if (*scopes == 0)
        return wl_error_add_violation(err, "scopes", "at least one scope is required");
    return 0;
}

void wl_scopes_format(unsigned scopes, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
#define XX(name, bit, text)                                                                        \
    if ((scopes & (bit)) && used < size)                                                           \
        used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? "," : "", text);
    WL_SCOPE_MAP(XX)
#undef XX
}
