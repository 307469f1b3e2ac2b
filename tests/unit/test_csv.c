/* The streaming CSV reader is checked here against inputs written to temporary files. */
#include "test.h"

#include <stdlib.h>

#include "domain/csv.h"

static FILE *input(const char *bytes, size_t len)
{
    FILE *f = tmpfile();
    if (f == NULL || fwrite(bytes, 1, len, f) != len || fseek(f, 0, SEEK_SET) != 0)
        abort();
    return f;
}

typedef struct {
    char text[8192];
    size_t len;
} render_t;

static void put_text(render_t *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len && out->len + 5 < sizeof(out->text); i++) {
        unsigned char b = (unsigned char)s[i];
        if (b == '\n')
            out->len += (size_t)snprintf(out->text + out->len, 5, "\\n");
        else if (b == '\r')
            out->len += (size_t)snprintf(out->text + out->len, 5, "\\r");
        else if (b < 0x20 || b >= 0x7F)
            out->len += (size_t)snprintf(out->text + out->len, 5, "\\x%02X", b);
        else
            out->text[out->len++] = (char)b;
    }
    out->text[out->len] = '\0';
}

/*
 * Reads every record as "line:count:field|field;" and ends with "!message"
 * on an error; after an error it also checks that the next call repeats it.
 */
static void render(const char *bytes, size_t len, render_t *out)
{
    out->len = 0;
    out->text[0] = '\0';
    FILE *f = input(bytes, len);
    wl_csv_reader_t *r = NULL;
    if (wl_csv_reader_create(f, &r) != 0)
        abort();
    for (;;) {
        wl_csv_record_t rec;
        wl_error_t err;
        wl_error_init(&err);
        int rc = wl_csv_next(r, &rec, &err);
        if (rc == 0)
            break;
        if (rc < 0) {
            put_text(out, "!", 1);
            put_text(out, err.message, strlen(err.message));
            wl_error_t again;
            wl_error_init(&again);
            CHECK_INT(wl_csv_next(r, &rec, &again), rc);
            CHECK_STR(again.message, err.message);
            break;
        }
        char head[48];
        int n = snprintf(head, sizeof(head), "%zu:%zu:", rec.line, rec.field_count);
        put_text(out, head, (size_t)n);
        for (size_t i = 0; i < rec.field_count; i++) {
            if (i > 0)
                put_text(out, "|", 1);
            put_text(out, rec.fields[i].base, rec.fields[i].len);
        }
        put_text(out, ";", 1);
    }
    wl_csv_reader_destroy(r);
    fclose(f);
}

#define S(lit) lit, sizeof(lit) - 1

static void test_table(void)
{
    static const struct {
        const char *what;
        const char *bytes;
        size_t len;
        const char *expected;
    } cases[] = {
        {"LF", S("a,b,c\n1,2,3\n"), "1:3:a|b|c;2:3:1|2|3;"},
        {"CRLF", S("a,b\r\n1,2\r\n"), "1:2:a|b;2:2:1|2;"},
        {"mixed line ends", S("a\r\nb\nc\r\n"), "1:1:a;2:1:b;3:1:c;"},
        {"no final newline", S("a,b\n1,2"), "1:2:a|b;2:2:1|2;"},
        {"final CR at end of input", S("a,b\r"), "1:2:a|b;"},
        {"empty input", S(""), ""},
        {"only newlines", S("\n\r\n\n"), ""},
        {"BOM", S("\xEF\xBB\xBFsku,name\nA,B\n"), "1:2:sku|name;2:2:A|B;"},
        {"BOM only", S("\xEF\xBB\xBF"), ""},
        {"partial BOM is data", S("\xEF\xBBx\n"), "1:1:\\xEF\\xBBx;"},
        {"BOM after the start is data",
         S("a\n\xEF\xBB\xBF"
           "b\n"),
         "1:1:a;2:1:\\xEF\\xBB\\xBFb;"},
        {"quoted comma and quote", S("\"a,b\",\"c\"\"d\"\n"), "1:2:a,b|c\"d;"},
        {"quoted newline", S("id,note\n1,\"line1\nline2\"\n2,x\n"),
         "1:2:id|note;2:2:1|line1\\nline2;4:2:2|x;"},
        {"quoted CRLF kept", S("\"a\r\nb\"\r\nc\r\n"), "1:1:a\\r\\nb;3:1:c;"},
        {"quoted blank lines", S("\"\n\n\",x\ny\n"), "1:2:\\n\\n|x;4:1:y;"},
        {"only escaped quotes", S("\"\"\"\"\"\"\n"), "1:1:\"\";"},
        {"empty quoted field", S("\"\"\n"), "1:1:;"},
        {"empty quoted at end of input", S("a,\"\""), "1:2:a|;"},
        {"empty middle field", S("a,,c\n"), "1:3:a||c;"},
        {"comma only", S(",\n"), "1:2:|;"},
        {"two commas", S(",,\n"), "1:3:||;"},
        {"trailing comma", S("a,\n"), "1:2:a|;"},
        {"trailing comma at end of input", S("a,"), "1:2:a|;"},
        {"blank lines skipped, lines counted", S("\n\na\n\r\n\nb\n\n"), "3:1:a;6:1:b;"},
        {"spaces are data", S(" a , b \n"), "1:2: a | b ;"},
        {"whitespace-only line is a record", S("  \n"), "1:1:  ;"},
        {"lone CR is data", S("a\rb,c\n"), "1:2:a\\rb|c;"},
        {"CR before CRLF", S("a\r\r\nb\n"), "1:1:a\\r;2:1:b;"},
        {"NUL is data", S("a\0b,\0\n"), "1:2:a\\x00b|\\x00;"},
        {"UTF-8 passes through", S("\xC3\xA9,\xE2\x82\xAC\n"), "1:2:\\xC3\\xA9|\\xE2\\x82\\xAC;"},
        {"invalid UTF-8 passes through", S("\xFF\n"), "1:1:\\xFF;"},
        /* errors */
        {"unterminated", S("a,\"b\n"), "!line 1: unterminated quoted field"},
        {"unterminated names the opening line", S("x\ny\n\"abc\ndef\n"),
         "1:1:x;2:1:y;!line 3: unterminated quoted field"},
        {"unterminated after an escaped quote", S("\"a\"\""), "!line 1: unterminated quoted field"},
        {"character after closing quote", S("\"a\"b\n"),
         "!line 1: unexpected character after closing quote"},
        {"space after closing quote", S("ok\n\"a\" ,b\n"),
         "1:1:ok;!line 2: unexpected character after closing quote"},
        {"after a multi-line field: its last line", S("\"multi\nline\"x\n"),
         "!line 2: unexpected character after closing quote"},
        {"lone CR after closing quote", S("\"a\"\rb\n"),
         "!line 1: unexpected character after closing quote"},
        {"quote inside unquoted field", S("a\"b\n"), "!line 1: quote in unquoted field"},
        {"space before quote", S("h\n \"a\"\n"), "1:1:h;!line 2: quote in unquoted field"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        render_t out;
        render(cases[i].bytes, cases[i].len, &out);
        if (strcmp(out.text, cases[i].expected) != 0)
            FAIL("%s: got \"%s\", expected \"%s\"", cases[i].what, out.text, cases[i].expected);
        else
            CHECK(1);
    }
}

/* Reads one record of a file and returns wl_csv_next's result, the error message in err. */
static int first_records(const char *bytes, size_t len, size_t skip, wl_csv_record_t *rec,
                         size_t *field_len, wl_error_t *err)
{
    FILE *f = input(bytes, len);
    wl_csv_reader_t *r = NULL;
    if (wl_csv_reader_create(f, &r) != 0)
        abort();
    int rc;
    do {
        wl_error_init(err);
        rc = wl_csv_next(r, rec, err);
    } while (rc == 1 && skip-- > 0);
    if (rc == 1)
        *field_len = rec->fields[0].len;
    wl_csv_reader_destroy(r);
    fclose(f);
    return rc;
}

static void test_field_limit(void)
{
    char line[512];
    for (size_t fields = 63; fields <= 66; fields++) {
        size_t len = (size_t)snprintf(line, sizeof(line), "header\n");
        for (size_t i = 0; i < fields; i++)
            len += (size_t)snprintf(line + len, sizeof(line) - len, i ? ",f%zu" : "f%zu", i);
        line[len++] = '\n';
        wl_csv_record_t rec;
        size_t first_len = 0;
        wl_error_t err;
        int rc = first_records(line, len, 1, &rec, &first_len, &err);
        if (fields <= WL_CSV_FIELDS_MAX) {
            CHECK_INT(rc, 1);
            CHECK_INT(rec.field_count, fields);
            CHECK_INT(rec.line, 2);
        } else {
            CHECK_INT(rc, WL_EINVAL);
            CHECK_INT(err.code, WL_EINVAL);
            CHECK_STR(err.message, "line 2: more than 64 fields");
        }
    }
}

static void test_record_limit(void)
{
    size_t cap = WL_CSV_RECORD_MAX + 64;
    char *buf = malloc(cap);
    if (buf == NULL)
        abort();
    static const struct {
        const char *what;
        const char *prefix; /* then 'x' up to raw bytes with the prefix, then suffix */
        size_t raw;
        const char *suffix;
        int rc;
        const char *message;
    } cases[] = {
        {"exactly the limit", "", WL_CSV_RECORD_MAX, "\r\n", 1, NULL},
        {"limit, commas count", "", WL_CSV_RECORD_MAX, ",\n", WL_EINVAL,
         "line 2: record longer than 1048576 bytes"},
        {"one byte over", "", WL_CSV_RECORD_MAX + 1, "\n", WL_EINVAL,
         "line 2: record longer than 1048576 bytes"},
        {"quoted, quotes count", "\"", WL_CSV_RECORD_MAX, "\"\n", WL_EINVAL,
         "line 2: record longer than 1048576 bytes (inside the quoted field opened on line 2)"},
        {"quoted at the limit", "\"", WL_CSV_RECORD_MAX - 1, "\"\n", 1, NULL},
        {"unclosed quote swallowing the file", "\"", WL_CSV_RECORD_MAX + 10, "", WL_EINVAL,
         "line 2: record longer than 1048576 bytes (inside the quoted field opened on line 2)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t len = (size_t)snprintf(buf, cap, "h\n%s", cases[i].prefix);
        size_t fill = cases[i].raw - strlen(cases[i].prefix);
        memset(buf + len, 'x', fill);
        len += fill;
        memcpy(buf + len, cases[i].suffix, strlen(cases[i].suffix));
        len += strlen(cases[i].suffix);
        wl_csv_record_t rec;
        size_t first_len = 0;
        wl_error_t err;
        int rc = first_records(buf, len, 1, &rec, &first_len, &err);
        if (rc != cases[i].rc) {
            FAIL("%s: rc %d, expected %d (%s)", cases[i].what, rc, cases[i].rc, err.message);
        } else if (rc == 1) {
            CHECK_INT(first_len, cases[i].raw - strlen(cases[i].prefix));
            CHECK_INT(rec.field_count, 1);
        } else {
            CHECK_STR(err.message, cases[i].message);
        }
    }
    free(buf);
}

/* Line ends and escaped quotes split across the reader's 64 KiB chunks. */
static void test_chunk_boundaries(void)
{
    size_t cap = 70000 + 64;
    char *buf = malloc(cap);
    if (buf == NULL)
        abort();
    for (size_t first = 65525; first <= 65540; first++) {
        memset(buf, 'x', first);
        static const char rest[] = "\r\n\"q\"\"\r\nq\",z\r\nlast";
        memcpy(buf + first, rest, sizeof(rest) - 1);
        FILE *f = input(buf, first + sizeof(rest) - 1);
        wl_csv_reader_t *r = NULL;
        if (wl_csv_reader_create(f, &r) != 0)
            abort();
        wl_csv_record_t rec;
        wl_error_t err;
        wl_error_init(&err);
        CHECK_INT(wl_csv_next(r, &rec, &err), 1);
        CHECK_INT(rec.fields[0].len, first);
        CHECK_INT(wl_csv_next(r, &rec, &err), 1);
        CHECK_INT(rec.line, 2);
        CHECK_INT(rec.field_count, 2);
        CHECK(wl_span_eq(rec.fields[0], wl_span_str("q\"\r\nq")));
        CHECK(wl_span_eq(rec.fields[1], wl_span_str("z")));
        CHECK_INT(wl_csv_next(r, &rec, &err), 1);
        CHECK_INT(rec.line, 4);
        CHECK(wl_span_eq(rec.fields[0], wl_span_str("last")));
        CHECK_INT(wl_csv_next(r, &rec, &err), 0);
        CHECK_INT(wl_csv_next(r, &rec, &err), 0);
        wl_csv_reader_destroy(r);
        fclose(f);
    }
    free(buf);
}

/* Many rows stream through; the line of the last one proves none was lost or merged. */
static void test_many_rows(void)
{
    enum { ROWS = 300000 };
    FILE *f = tmpfile();
    if (f == NULL)
        abort();
    fputs("\xEF\xBB\xBFsku,name,on_hand\r\n", f);
    for (int i = 0; i < ROWS; i++)
        fprintf(f, i % 1000 ? "SKU-%d,Name %d,%d\r\n" : "SKU-%d,\"Name\n%d\",%d\r\n", i, i, i);
    rewind(f);
    wl_csv_reader_t *r = NULL;
    CHECK_INT(wl_csv_reader_create(f, &r), 0);
    wl_csv_record_t rec;
    wl_error_t err;
    wl_error_init(&err);
    size_t records = 0, last_line = 0, bad = 0;
    int rc;
    while ((rc = wl_csv_next(r, &rec, &err)) == 1) {
        records++;
        last_line = rec.line;
        if (rec.field_count != 3)
            bad++;
    }
    CHECK_INT(rc, 0);
    CHECK_INT(records, ROWS + 1);
    CHECK_INT(bad, 0);
    CHECK_INT(last_line, 1 + ROWS + ROWS / 1000);
    wl_csv_reader_destroy(r);
    fclose(f);
}

static void test_read_error(void)
{
    FILE *f = fopen("/dev/null", "w"); /* reading a write-only stream fails */
    if (f == NULL)
        abort();
    wl_csv_reader_t *r = NULL;
    CHECK_INT(wl_csv_reader_create(f, &r), 0);
    wl_csv_record_t rec;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_csv_next(r, &rec, &err), WL_EINTERNAL);
    CHECK(strncmp(err.message, "line 1: read error: ", 20) == 0);
    CHECK_INT(wl_csv_next(r, &rec, &err), WL_EINTERNAL);
    wl_csv_reader_destroy(r);
    fclose(f);
    wl_csv_reader_destroy(NULL);
}

int main(void)
{
    test_table();
    test_field_limit();
    test_record_limit();
    test_chunk_boundaries();
    test_many_rows();
    test_read_error();
    return test_exit();
}
