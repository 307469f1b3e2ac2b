/* Diagnostic lines: JSON lines that parse, whatever the detail holds, and plain text. */
#include "test.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(void)
{
    test_json_line();
    test_long_detail_stays_json();
    test_plain_line();
    return test_exit();
}
