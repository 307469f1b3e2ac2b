/* gzip as a filter: a generator's pieces and a whole body decode to what went in; a gzip body
 * inflates under its limit, and a corrupt or truncated one is refused. */
#include "http/gzip_filter.h"

#include <stdlib.h>
#include <string.h>

#include "gunzip.h"
#include "test.h"

/* A generator of a text in pieces: MORE, MORE, IDLE, then DONE; counts its stops. */
typedef struct {
    wl_generator_t base;
    const char *text;
    size_t pos, calls;
    int *stops;
} pieces_t;

static wl_generator_next_t pieces_proceed(wl_generator_t *gen, wl_piece_t *out, size_t want,
                                          wl_error_t *err)
{
    (void)err;
    pieces_t *p = (pieces_t *)gen;
    size_t left = strlen(p->text) - p->pos;
    size_t n = left < want ? left : want;
    wl_piece_append(out, p->text + p->pos, n);
    p->pos += n;
    p->calls++;
    if (p->pos == strlen(p->text))
        return WL_GENERATOR_DONE;
    return p->calls == 3 ? WL_GENERATOR_IDLE : WL_GENERATOR_MORE;
}

static void pieces_park(wl_generator_t *gen, void (*wake)(void *ctx), void *ctx)
{
    (void)gen;
    wake(ctx);
}

static void pieces_stop(wl_generator_t *gen)
{
    (*((pieces_t *)gen)->stops)++;
}

static void test_filter(void)
{
    static char text[200000];
    for (size_t i = 0; i + 1 < sizeof(text); i++)
        text[i] = (char)('a' + (i * 7 + i / 13) % 26);
    int stops = 0;
    pieces_t inner = {.base = {.proceed = pieces_proceed,
                               .stop = pieces_stop,
                               .park = pieces_park,
                               .waits = true},
                      .text = text,
                      .stops = &stops};
    wl_generator_t *gz = wl_gzip_filter(&inner.base);
    CHECK(gz != NULL && gz->waits && gz->park != NULL);
    wl_piece_t out = {0};
    wl_error_t err;
    wl_error_init(&err);
    wl_generator_next_t next;
    int idles = 0;
    do {
        next = gz->proceed(gz, &out, 16 * 1024, &err);
        if (next == WL_GENERATOR_IDLE) {
            /* What came before the idle reaches the client whole: it was flushed. */
            idles++;
            size_t len = 0;
            char *part = gunzip(out.base, out.len, false, &len);
            CHECK(part != NULL && len == inner.pos && memcmp(part, text, len) == 0);
            free(part);
        }
    } while (next == WL_GENERATOR_MORE || next == WL_GENERATOR_IDLE);
    CHECK_INT(next, WL_GENERATOR_DONE);
    CHECK_INT(idles, 1);
    CHECK(!out.failed);
    size_t len = 0;
    char *all = gunzip(out.base, out.len, true, &len);
    CHECK(all != NULL && len == strlen(text) && memcmp(all, text, len) == 0);
    free(all);
    CHECK(out.len < strlen(text) / 2);
    wl_piece_dispose(&out);
    CHECK_INT(stops, 0);
    gz->stop(gz);
    CHECK_INT(stops, 1); /* the filter stops what it wraps, once */
}

static void test_body(void)
{
    const char *cases[] = {"", "{}", "{\"codes\":[\"A-1\",\"A-2\",\"A-3\",\"A-4\",\"A-5\"]}"};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        wl_arena_t arena;
        wl_arena_init(&arena, 0);
        wl_error_t err;
        wl_error_init(&err);
        char *coded = NULL;
        size_t coded_len = 0, len = 0;
        CHECK_INT(wl_gzip_body(cases[i], strlen(cases[i]), &arena, &coded, &coded_len, &err), 0);
        char *plain = coded ? gunzip(coded, coded_len, true, &len) : NULL;
        CHECK(plain != NULL && len == strlen(cases[i]) && memcmp(plain, cases[i], len) == 0);
        free(plain);
        wl_arena_dispose(&arena);
    }
}

/* Round trips at and over the limit, a bomb, and bodies that are not one whole gzip member. */
static void test_gunzip(void)
{
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    wl_error_t err;
    wl_error_init(&err);
    char *coded = NULL, *plain = NULL;
    size_t coded_len = 0, len = 0;
    const char *text = "{\"codes\":[\"A-1\",\"A-2\"]}";
    CHECK_INT(wl_gzip_body(text, strlen(text), &arena, &coded, &coded_len, &err), 0);
    CHECK_INT(wl_gunzip_body(coded, coded_len, strlen(text), &arena, &plain, &len, &err), 0);
    CHECK(len == strlen(text) && strcmp(plain, text) == 0);
    CHECK_INT(wl_gunzip_body(coded, coded_len, strlen(text) - 1, &arena, &plain, &len, &err),
              WL_EEXHAUSTED);
    /* Truncated, damaged, followed by more bytes, not gzip at all. */
    wl_error_init(&err);
    CHECK_INT(wl_gunzip_body(coded, coded_len - 3, 1024, &arena, &plain, &len, &err), WL_EINVAL);
    CHECK(strstr(err.message, "gzip") != NULL);
    char damaged[256];
    memcpy(damaged, coded, coded_len);
    damaged[coded_len - 6] ^= 0x55; /* the CRC */
    wl_error_init(&err);
    CHECK_INT(wl_gunzip_body(damaged, coded_len, 1024, &arena, &plain, &len, &err), WL_EINVAL);
    memcpy(damaged, coded, coded_len);
    damaged[coded_len] = 'x';
    wl_error_init(&err);
    CHECK_INT(wl_gunzip_body(damaged, coded_len + 1, 1024, &arena, &plain, &len, &err), WL_EINVAL);
    wl_error_init(&err);
    CHECK_INT(wl_gunzip_body("{}", 2, 1024, &arena, &plain, &len, &err), WL_EINVAL);
    wl_error_init(&err);
    CHECK_INT(wl_gunzip_body("", 0, 1024, &arena, &plain, &len, &err), WL_EINVAL);
    /* 64 MiB of zeros against a 4 MiB limit: refused without inflating all of it. */
    size_t zeros_len = 64u * 1024 * 1024;
    char *zeros = calloc(1, zeros_len);
    CHECK_INT(wl_gzip_body(zeros, zeros_len, &arena, &coded, &coded_len, &err), 0);
    free(zeros);
    CHECK(coded_len < 512 * 1024);
    wl_error_init(&err);
    CHECK_INT(wl_gunzip_body(coded, coded_len, 4u * 1024 * 1024, &arena, &plain, &len, &err),
              WL_EEXHAUSTED);
    wl_arena_dispose(&arena);
}

int main(void)
{
    test_filter();
    test_body();
    test_gunzip();
    return test_exit();
}
