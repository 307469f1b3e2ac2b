/* W3C traceparent values: what a receiver takes and what it must ignore. */
#include <string.h>

#include "test.h"
#include "http/trace_context.h"

#define TRACE  "4bf92f3577b34da6a3ce929d0e0e4736"
#define PARENT "00f067aa0ba902b7"

int main(void)
{
    static const struct {
        const char *header;
        bool valid;
    } cases[] = {
        {"00-" TRACE "-" PARENT "-01", true},
        {"00-" TRACE "-" PARENT "-00", true},
        /* A later version is read as 00 from its first 55 characters. */
        {"01-" TRACE "-" PARENT "-01", true},
        {"cc-" TRACE "-" PARENT "-01-what-the-future-holds", true},
        {"cc-" TRACE "-" PARENT "-01x", false},
        {"00-" TRACE "-" PARENT "-01-", false}, /* version 00 is exactly 55 */
        {"ff-" TRACE "-" PARENT "-01", false},
        {"00-00000000000000000000000000000000-" PARENT "-01", false},
        {"00-" TRACE "-0000000000000000-01", false},
        {"00-4BF92F3577B34DA6A3CE929D0E0E4736-" PARENT "-01", false},
        {"00-" TRACE "-" PARENT "-0g", false},
        {"00_" TRACE "-" PARENT "-01", false},
        {"00-" TRACE "-" PARENT, false},
        {"0-" TRACE "-" PARENT "-01", false},
        {"00-" TRACE "-" PARENT "-01, 00-" TRACE "-" PARENT "-01", false},
        {"", false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        wl_trace_context_t trace;
        memset(&trace, 0, sizeof(trace));
        bool valid = wl_trace_context_parse(cases[i].header, &trace);
        if (valid != cases[i].valid)
            FAIL("%s: %s", cases[i].header, valid ? "taken" : "refused");
        if (valid) {
            CHECK_STR(trace.trace_id, TRACE);
            CHECK_STR(trace.parent_id, PARENT);
        }
    }
    wl_trace_context_t trace;
    CHECK(!wl_trace_context_parse(NULL, &trace));
    return test_exit();
}
