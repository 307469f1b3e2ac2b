/* Creating test organizations, keys and inventory happens here. */
#include "fixture.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/import.h"
#include "store/orgs.h"

int64_t fixture_org(PGconn *conn, const char *slug)
{
    wl_error_t err;
    wl_error_init(&err);
    int64_t org_id = 0;
    if (wl_orgs_create(conn, slug, slug, &org_id, &err) != 0) {
        fprintf(stderr, "fixture_org %s: %s\n", slug, err.message);
        exit(1);
    }
    return org_id;
}

void fixture_key(PGconn *conn, int64_t org_id, const char *scopes, char token[WL_KEY_TOKEN_SIZE])
{
    wl_error_t err;
    wl_error_init(&err);
    unsigned bits = 0;
    if (wl_scopes_parse(scopes, &bits, &err) != 0 ||
        wl_keys_create(conn, org_id, bits, "test", token, &err) != 0) {
        fprintf(stderr, "fixture_key: %s\n", err.message);
        exit(1);
    }
    fixture_record_token(token);
}

void fixture_record_token(const char *token)
{
    const char *path = getenv("WALKLIST_TEST_TOKENS");
    char line[WL_KEY_TOKEN_SIZE + 1];
    int len = snprintf(line, sizeof(line), "%s\n", token);
    /* One write with O_APPEND: lines of concurrent test processes never interleave. */
    int fd = open(path && path[0] ? path : FIXTURE_TOKENS_FILE,
                  O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || len <= 0 || len >= (int)sizeof(line) || write(fd, line, (size_t)len) != len) {
        fprintf(stderr, "fixture_key: cannot record the token in %s\n",
                path && path[0] ? path : FIXTURE_TOKENS_FILE);
        exit(1);
    }
    close(fd);
}

static void print_problem(size_t line, const char *column, const char *description, void *data)
{
    fprintf(stderr, "%s:%zu: %s: %s\n", (const char *)data, line, column, description);
}

void fixture_import(PGconn *conn, int64_t org_id, const char *kind, const char *csv)
{
    wl_error_t err;
    wl_error_init(&err);
    FILE *in = fmemopen((void *)csv, strlen(csv), "rb");
    size_t rows = 0;
    if (in == NULL ||
        wl_import_csv(conn, org_id, kind, in, print_problem, (void *)kind, &rows, &err) != 0) {
        fprintf(stderr, "fixture_import %s: %s\n", kind, err.message);
        exit(1);
    }
    fclose(in);
}
