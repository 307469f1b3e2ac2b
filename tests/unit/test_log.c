/* Diagnostic lines: JSON lines that parse, whatever the detail holds, and plain text. */
#include "test.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "walklist/log.h"

/* Runs the logging calls with stderr sent to a file, and returns what was written. */
static char *captured(void (*emit)(void))
{
    char path[] = "/tmp/wl-test-log-XXXXXX";
    int fd = mkstemp(path);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    emit();
    dup2(saved, STDERR_FILENO);
    close(saved);
    static char text[8192];
    ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return text;
}

static void emit_json(void)
{
    wl_log_use_json(true);
    wl_log("error", "database error", "%s: %s", "XX000",
           "FATAL:  \"quoted\" \\ back\tslash\nsecond line\n");
}

static void emit_long(void)
{
    wl_log_use_json(true);
    char *big = malloc(5000);
    memset(big, '"', 4999);
    big[4999] = '\0';
    wl_log("warn", "libmicrohttpd", "%s", big);
    free(big);
}

static void emit_plain(void)
{
    wl_log_use_json(false);
    wl_log("warn", "database notice", "%s", "NOTICE:  relation exists\n");
}

static void test_json_line(void)
{
    const char *text = captured(emit_json);
    /* One line, ending in a single newline. */
    CHECK(strchr(text, '\n') == text + strlen(text) - 1);
    json_error_t error;
    json_t *line = json_loads(text, 0, &error);
    CHECK(line != NULL);
    /* The first field: the time, RFC 3339 in UTC with milliseconds. */
    CHECK(strncmp(text, "{\"time\":\"", 9) == 0);
    const char *time_text = json_string_value(json_object_get(line, "time"));
    struct tm parsed;
    memset(&parsed, 0, sizeof(parsed));
    const char *rest = time_text ? strptime(time_text, "%Y-%m-%dT%H:%M:%S", &parsed) : NULL;
    CHECK(rest != NULL && strlen(rest) == 5 && rest[0] == '.' &&
          strspn(rest + 1, "0123456789") == 3 && rest[4] == 'Z');
    time_t logged = timegm(&parsed), now = time(NULL);
    CHECK(logged <= now && now - logged < 3600); /* UTC, not local time shifted */
    CHECK_STR(json_string_value(json_object_get(line, "level")), "error");
    CHECK_STR(json_string_value(json_object_get(line, "msg")), "database error");
    /* The detail intact, its trailing line break dropped. */
    CHECK_STR(json_string_value(json_object_get(line, "detail")),
              "XX000: FATAL:  \"quoted\" \\ back\tslash\nsecond line");
    json_decref(line);
}

static void test_long_detail_stays_json(void)
{
    const char *text = captured(emit_long);
    json_error_t error;
    json_t *line = json_loads(text, 0, &error);
    CHECK(line != NULL);
    const char *detail = json_string_value(json_object_get(line, "detail"));
    CHECK(detail != NULL && strlen(detail) > 500 && strspn(detail, "\"") == strlen(detail));
    json_decref(line);
}

static void test_plain_line(void)
{
    CHECK_STR(captured(emit_plain), "walklist: database notice: NOTICE:  relation exists\n");
}

static void emit_fields(void)
{
    wl_log_line_t line;
    wl_log_line_begin(&line, "info", "request");
    /* Invalid UTF-8, a C1 control, DEL and a NUL amid valid UTF-8. */
    const char path[] = "/a\xC3\xA9\xFF\xC2\x85\x7f\0z";
    wl_log_line_str(&line, "path", path, sizeof(path) - 1);
    wl_log_line_int(&line, "status", 201);
    wl_log_line_ms(&line, "durationMs", 1.23456);
    wl_log_line_bool(&line, "completed", true);
    wl_log_line_end(&line);
}

static void emit_overlong_field(void)
{
    wl_log_line_t line;
    wl_log_line_begin(&line, "info", "request");
    char big[3000];
    memset(big, '\x01', sizeof(big)); /* six bytes each once escaped */
    wl_log_line_str(&line, "path", big, sizeof(big));
    wl_log_line_int(&line, "status", 200);
    wl_log_line_end(&line);
}

static void test_fields(void)
{
    const char *text = captured(emit_fields);
    CHECK(strchr(text, '\n') == text + strlen(text) - 1);
    json_error_t error;
    json_t *line = json_loads(text, JSON_ALLOW_NUL, &error);
    CHECK(line != NULL);
    CHECK_STR(json_string_value(json_object_get(line, "msg")), "request");
    /* Valid UTF-8 passes; every control is escaped by its code point, every byte that is not
     * UTF-8 by its value. */
    CHECK(strstr(text, "\"path\":\"/a\xC3\xA9\\u00FF\\u0085\\u007F\\u0000z\"") != NULL);
    CHECK_INT(json_integer_value(json_object_get(line, "status")), 201);
    CHECK(strstr(text, "\"durationMs\":1.235") != NULL);
    CHECK(json_is_true(json_object_get(line, "completed")));
    json_decref(line);
}

static void test_overlong_field_is_cut(void)
{
    const char *text = captured(emit_overlong_field);
    json_error_t error;
    json_t *line = json_loads(text, 0, &error);
    CHECK(line != NULL);
    const char *path = json_string_value(json_object_get(line, "path"));
    /* Cut at a whole escape, the line closed; the fields after it dropped. */
    CHECK(path != NULL && strlen(path) > 200 && strspn(path, "\x01") == strlen(path));
    CHECK(json_object_get(line, "status") == NULL);
    CHECK(strlen(text) <= sizeof(((wl_log_line_t *)0)->text));
    json_decref(line);
}

/* Durations are written by hand: the same text as snprintf's "%.3f" away from a tie, and
 * negative or huge values through snprintf itself. */
static const double durations[] = {0,       0.0004,   0.0006,     0.9996,       1.23456, 7.5,
                                   12.3404, 999.9999, 25000.0001, 86399999.123, 1e13,    -2.5};
static size_t duration_index;

static void emit_duration(void)
{
    wl_log_line_t line;
    wl_log_line_begin(&line, "info", "request");
    wl_log_line_ms(&line, "durationMs", durations[duration_index]);
    wl_log_line_end(&line);
}

static void test_durations(void)
{
    for (duration_index = 0; duration_index < sizeof(durations) / sizeof(durations[0]);
         duration_index++) {
        char expected[64];
        snprintf(expected, sizeof(expected), "\"durationMs\":%.3f}", durations[duration_index]);
        const char *text = captured(emit_duration);
        if (strstr(text, expected) == NULL)
            FAIL("%.6f: expected %s in %s", durations[duration_index], expected, text);
        else
            CHECK(1);
    }
}

int main(void)
{
    test_json_line();
    test_long_detail_stays_json();
    test_plain_line();
    test_fields();
    test_overlong_field_is_cut();
    test_durations();
    return test_exit();
}
