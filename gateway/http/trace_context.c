/* Reading a W3C traceparent header happens here. */
#include "http/trace_context.h"

#include <string.h>

/* Whether len characters at text are lower-case hex digits, and (nonzero) not all '0'. */
static bool lower_hex(const char *text, size_t len, bool nonzero)
{
    bool any_nonzero = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
        any_nonzero = any_nonzero || c != '0';
    }
    return any_nonzero || !nonzero;
}

bool wl_trace_context_parse(const char *header, wl_trace_context_t *out)
{
    /* version "-" trace-id "-" parent-id "-" flags: 2 + 1 + 32 + 1 + 16 + 1 + 2 */
    enum { VERSION_00_LEN = 55 };
    if (header == NULL)
        return false;
    size_t len = strlen(header);
    if (len < VERSION_00_LEN || !lower_hex(header, 2, false) || strncmp(header, "ff", 2) == 0)
        return false;
    bool version_00 = strncmp(header, "00", 2) == 0;
    if (version_00 ? len != VERSION_00_LEN : len > VERSION_00_LEN && header[VERSION_00_LEN] != '-')
        return false;
    if (header[2] != '-' || header[35] != '-' || header[52] != '-' ||
        !lower_hex(header + 3, 32, true) || !lower_hex(header + 36, 16, true) ||
        !lower_hex(header + 53, 2, false))
        return false;
    memcpy(out->trace_id, header + 3, 32);
    out->trace_id[32] = '\0';
    memcpy(out->parent_id, header + 36, 16);
    out->parent_id[16] = '\0';
    memcpy(out->flags, header + 53, 2);
    out->flags[2] = '\0';
    return true;
}
