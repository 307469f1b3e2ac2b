/*
 * The Authorization header (wl_access_bearer_token in gateway/protocols/access.c, for every
 * transport): the input is the header's value. An accepted credential is one non-empty run of
 * non-blank bytes inside the header, after "Bearer" and blanks, with only blanks after it.
 */
#include <string.h>
#include <strings.h>

#include "protocols/access.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *header = fuzz_cstring(data, size);
    size_t len = strlen(header);
    wl_span_t token = {NULL, 0};
    if (wl_access_bearer_token(header, &token)) {
        FUZZ_CHECK(token.len > 0 && token.base >= header + 7 &&
                   token.base + token.len <= header + len);
        FUZZ_CHECK(strncasecmp(header + strspn(header, " \t"), "Bearer", 6) == 0);
        for (size_t i = 0; i < token.len; i++)
            FUZZ_CHECK(token.base[i] != ' ' && token.base[i] != '\t' && token.base[i] != '\0');
        const char *rest = token.base + token.len;
        FUZZ_CHECK(rest[strspn(rest, " \t")] == '\0');
        FUZZ_CHECK(token.base[-1] == ' ' || token.base[-1] == '\t');
    }
    free(header);
    return 0;
}
