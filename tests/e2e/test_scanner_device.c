/*
 * End to end: the device transport (nanopb payloads, application/proto) through the real
 * walklist-scanner against a running walklistd: the queue and Check location screens,
 * payload sizes of a 200-code list, bounds, and bad device input changing nothing.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "protocols/device.h"
#include "e2e.h"
#include "fixture.h"
#include "walklist/scanner_client.h"
#include "service.h"
#include "testdb.h"

/* A LoadListResponse for a 200-code list with three bins per product and 48-byte names
 * stays under this (measured: see test_payload_size). */
#define LOAD_200_CODES_BOUND (56u * 1024)

static service_t service;
static PGconn *db;
static uint16_t port;
static char url[64];
static char key_a[WL_KEY_TOKEN_SIZE], key_a_no_scanner[WL_KEY_TOKEN_SIZE], key_b[WL_KEY_TOKEN_SIZE];

typedef struct {
    int status; /* exit status, or -1 */
    char *out;
    char *err;
} run_t;

static char *slurp(int fd)
{
    size_t cap = 4096, len = 0;
    char *text = malloc(cap);
    lseek(fd, 0, SEEK_SET);
    ssize_t n;
    while ((n = read(fd, text + len, cap - len - 1)) > 0) {
        len += (size_t)n;
        if (cap - len < 2)
            text = realloc(text, cap *= 2);
    }
    text[len] = '\0';
    close(fd);
    return text;
}

/* Runs walklist-scanner --url URL --key key args... and captures stdout and stderr. */
static run_t scanner(const char *key, const char *command, const char *id)
{
    const char *binary = getenv("WALKLIST_SCANNER");
    run_t run = {-1, NULL, NULL};
    if (binary == NULL) {
        FAIL("WALKLIST_SCANNER is not set: run under ctest");
        run.out = strdup("");
        run.err = strdup("");
        return run;
    }
    char out_path[] = "/tmp/wl-scanner-out-XXXXXX", err_path[] = "/tmp/wl-scanner-err-XXXXXX";
    int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
    unlink(out_path);
    unlink(err_path);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out_fd, STDOUT_FILENO);
        dup2(err_fd, STDERR_FILENO);
        const char *argv[] = {binary, "--url", url, "--key", key, command, id, NULL};
        execv(binary, (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    run.out = slurp(out_fd);
    run.err = slurp(err_fd);
    return run;
}

static void run_free(run_t *run)
{
    free(run->out);
    free(run->err);
}

static void create_list(const char *key, const char *name, const char *codes_json, char *id,
                        size_t size)
{
    char *body = malloc(strlen(name) + strlen(codes_json) + 64);
    sprintf(body, "{\"name\":\"%s\",\"codes\":%s}", name, codes_json);
    http_response_t res =
        e2e_request(port, "POST", "/api/v1/locate-lists", key, "application/json", body);
    CHECK_INT(res.status, 201);
    snprintf(id, size, "%s", e2e_str(res.json, "id", NULL) ? e2e_str(res.json, "id", NULL) : "");
    http_response_free(&res);
    free(body);
}

/* POSTs raw bytes to a device method. */
static http_response_t device_post(const char *method, const char *key, const char *content_type,
                                   const void *body, size_t len)
{
    char target[128], headers[512] = "";
    snprintf(target, sizeof(target), "/walklist.scanner.v1.DeviceService/%s", method);
    size_t used = 0;
    if (key != NULL)
        used += (size_t)snprintf(headers, sizeof(headers), "Authorization: Bearer %s\r\n", key);
    if (content_type != NULL)
        snprintf(headers + used, sizeof(headers) - used, "Content-Type: %s\r\n", content_type);
    http_response_t res;
    if (http_request(port, "POST", target, headers, body, len, &res) != 0)
        FAIL("POST %s failed", target);
    return res;
}

/* Every list's id, state and loadedAt, to show that nothing changed. */
static char *lists_snapshot(void)
{
    static char buf[1 << 16];
    return strdup(testdb_value(db,
                               "SELECT string_agg(id || ':' || state || ':' || "
                               "coalesce(loaded_at::text, '-'), ',' ORDER BY org_id, id) "
                               "FROM locate_lists",
                               buf, sizeof(buf)));
}

static const char *list_state(const char *id, char *buf, size_t size)
{
    char sql[256];
    snprintf(sql, sizeof(sql), "SELECT state FROM locate_lists WHERE id = '%s'", id);
    return testdb_value(db, sql, buf, size);
}

/* "  ID\tCREATED\tCODES\tNAME\n" as walklist-scanner list prints it. */
static void queue_line(char *out, size_t size, const char *id, int codes, const char *name)
{
    char sql[256], epoch[32];
    snprintf(sql, sizeof(sql),
             "SELECT floor(extract(epoch FROM created_at))::bigint FROM locate_lists "
             "WHERE id = '%s'",
             id);
    time_t t = (time_t)strtoll(testdb_value(db, sql, epoch, sizeof(epoch)), NULL, 10);
    struct tm tm;
    char created[32];
    strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    size_t used = strlen(out);
    snprintf(out + used, size - used, "  %s\t%s\t%d\t%s\n", id, created, codes, name);
}

static void import_inventory(int64_t org)
{
    fixture_import(db, org, "warehouses",
                   "code,name,kind\nWH1,Main,own\nWH2,Annex,own\nSUP,Supplier,supplier\n");
    fixture_import(db, org, "locations",
                   "warehouse,code,staging\nWH1,A-2,false\nWH1,A-10,false\nWH1,A-02,false\n"
                   "WH2,A-2,false\nWH1,B-1,false\nWH1,STAGE,true\nSUP,S-1,false\n");
    fixture_import(db, org, "products",
                   "sku,name,eans\n"
                   "SKU-1,Blue widget,4006381333931\n"
                   "SKU-2,Red widget,5000000000001\n"
                   "SKU-3,Green widget,5000000000001|5000000000002\n"
                   "SKU-4,Gadget without a rack,\n"
                   "SKU-5,Schraubendreher Kreuzschlitz gehärtet — Größe №2 für Profis,\n");
    fixture_import(db, org, "location-stock",
                   "sku,warehouse,location,quantity\n"
                   "SKU-1,WH1,A-10,5\nSKU-1,WH2,A-2,3\nSKU-2,WH1,A-2,7\nSKU-3,WH1,A-02,0\n"
                   "SKU-5,WH1,B-1,1\nSKU-1,WH1,STAGE,9\nSKU-2,SUP,S-1,4\n");
}

static const char walk_screen[] =
    "Check location: Aisle 3 recount\n"
    "Stops (bin, warehouse, SKU, quantity, name):\n"
    "  A-2\tWH1\tSKU-2\t7\tRed widget\n"
    "  A-2\tWH2\tSKU-1\t3\tBlue widget\n"
    "  A-02\tWH1\tSKU-3\t0\tGreen widget\n"
    "  A-10\tWH1\tSKU-1\t5\tBlue widget\n"
    "  B-1\tWH1\tSKU-5\t1\tSchraubendreher Kreuzschlitz gehärtet — Grö\n"
    "Ambiguous codes (code, SKUs):\n"
    "  5000000000001\tSKU-2\tSKU-3\n"
    "Not found:\n"
    "  NOPE-1\n"
    "  nope-2\n"
    "Without location (SKU, name):\n"
    "  SKU-4\tGadget without a rack\n";

static char walk_id[64], second_id[64];

static void test_queue_and_walk(void)
{
    run_t run = scanner(key_a, "list", NULL);
    CHECK_INT(run.status, 0);
    CHECK_STR(run.out, "Pending lists (id, created, codes, name):\n  (none)\n");
    run_free(&run);

    create_list(key_a, "Aisle 3 recount",
                "[\"SKU-1\",\"5000000000001\",\"NOPE-1\",\"SKU-4\",\"SKU-5\",\"nope-2\",\"SKU-1\"]",
                walk_id, sizeof(walk_id));
    create_list(key_a, "Inventur Gang 3 – Überprüfung der Regale und Fächer — Größen XL/XXL €",
                "[\"SKU-4\"]", second_id, sizeof(second_id));
    char expected[2048] = "Pending lists (id, created, codes, name):\n";
    queue_line(expected, sizeof(expected), walk_id, 6, "Aisle 3 recount");
    /* Cut to 64 bytes on a UTF-8 boundary. */
    queue_line(expected, sizeof(expected), second_id, 1,
               "Inventur Gang 3 – Überprüfung der Regale und Fächer — Gr");
    run = scanner(key_a, "list", NULL);
    CHECK_INT(run.status, 0);
    CHECK_STR(run.out, expected);
    CHECK_STR(run.err, "");
    run_free(&run);

    run = scanner(key_a, "load", walk_id);
    CHECK_INT(run.status, 0);
    CHECK_STR(run.out, walk_screen);
    CHECK_STR(run.err, "");
    run_free(&run);
    char state[32];
    CHECK_STR(list_state(walk_id, state, sizeof(state)), "loaded");

    /* Gone from the queue. */
    expected[0] = '\0';
    strcat(expected, "Pending lists (id, created, codes, name):\n");
    queue_line(expected, sizeof(expected), second_id, 1,
               "Inventur Gang 3 – Überprüfung der Regale und Fächer — Gr");
    run = scanner(key_a, "list", NULL);
    CHECK_STR(run.out, expected);
    run_free(&run);

    /* Empty sections are shown as such. */
    run = scanner(key_a, "load", second_id);
    CHECK_INT(run.status, 0);
    CHECK_STR(run.out, "Check location: Inventur Gang 3 – Überprüfung der Regale und Fächer — Gr\n"
                       "Stops (bin, warehouse, SKU, quantity, name):\n"
                       "  (none)\n"
                       "Ambiguous codes (code, SKUs):\n"
                       "  (none)\n"
                       "Not found:\n"
                       "  (none)\n"
                       "Without location (SKU, name):\n"
                       "  SKU-4\tGadget without a rack\n");
    run_free(&run);

    /* Another organization's queue is its own. */
    run = scanner(key_b, "list", NULL);
    CHECK_INT(run.status, 0);
    CHECK_STR(run.out, "Pending lists (id, created, codes, name):\n  (none)\n");
    run_free(&run);
}

static void test_queue_page(int64_t org)
{
    char key[WL_KEY_TOKEN_SIZE], id[64];
    fixture_key(db, org, "lists:write,scanner", key);
    char expected[4096] = "Pending lists (id, created, codes, name):\n";
    for (int i = 0; i < 11; i++) {
        char name[32];
        snprintf(name, sizeof(name), "List %02d", i);
        create_list(key, name, "[\"A\",\"B\"]", id, sizeof(id));
        if (i < 10)
            queue_line(expected, sizeof(expected), id, 2, name);
    }
    strcat(expected, "More lists are waiting.\n");
    run_t run = scanner(key, "list", NULL);
    CHECK_INT(run.status, 0);
    CHECK_STR(run.out, expected);
    run_free(&run);
}

typedef struct {
    size_t stops, ambiguous, not_found, unlocated;
} walk_count_t;

static bool count_stop(void *context, const walklist_scanner_v1_Stop *stop)
{
    (void)stop;
    ((walk_count_t *)context)->stops++;
    return true;
}

static bool count_ambiguous(void *context, const walklist_scanner_v1_AmbiguousMatch *match)
{
    (void)match;
    ((walk_count_t *)context)->ambiguous++;
    return true;
}

static bool count_not_found(void *context, const char *code)
{
    (void)code;
    ((walk_count_t *)context)->not_found++;
    return true;
}

static bool count_unlocated(void *context, const walklist_scanner_v1_Unlocated *product)
{
    (void)product;
    ((walk_count_t *)context)->unlocated++;
    return true;
}

/* An organization with `products` products of `bins` bins each; returns a key with scanner. */
static void big_inventory(int64_t org, int products, int bins, char key[WL_KEY_TOKEN_SIZE],
                          char *codes_json, size_t size)
{
    fixture_key(db, org, "lists:write,scanner", key);
    fixture_walk_t walk = {products,
                           bins,
                           "Heavy duty shelf bracket galvanised steel 300 mm type %04d",
                           "R%02d-%04d-%d",
                           10,
                           1,
                           0};
    fixture_walk_inventory(db, org, &walk, codes_json, size);
}

static bool starts_with(const char *text, const char *prefix)
{
    return strncmp(text, prefix, strlen(prefix)) == 0;
}

static size_t count_lines(const char *text, const char *prefix)
{
    size_t n = 0;
    for (const char *line = text; *line != '\0';) {
        if (strncmp(line, prefix, strlen(prefix)) == 0)
            n++;
        const char *next = strchr(line, '\n');
        if (next == NULL)
            break;
        line = next + 1;
    }
    return n;
}

static void test_payload_size(int64_t org)
{
    char key[WL_KEY_TOKEN_SIZE], id[64], cli_id[64];
    static char codes[200 * 16];
    big_inventory(org, 200, 3, key, codes, sizeof(codes));
    create_list(key, "Full list", codes, id, sizeof(id));
    create_list(key, "Full list again", codes, cli_id, sizeof(cli_id));

    uint8_t request[WL_SCANNER_LOAD_LIST_REQUEST_SIZE];
    size_t request_len = 0;
    CHECK_INT(wl_scanner_encode_load_list(id, request, sizeof(request), &request_len), 0);
    http_response_t res = device_post("LoadList", key, "application/proto", request, request_len);
    CHECK_INT(res.status, 200);
    char type[64];
    CHECK_STR(http_header(&res, "Content-Type", type, sizeof(type)), "application/proto");
    fprintf(stderr, "LoadList of 200 codes x 3 bins: %zu bytes (bound %u)\n", res.body_len,
            LOAD_200_CODES_BOUND);
    CHECK(res.body_len < LOAD_200_CODES_BOUND);
    walk_count_t count = {0};
    wl_scanner_walk_handler_t handler = {count_stop, count_ambiguous, count_not_found,
                                         count_unlocated, &count};
    walklist_scanner_v1_LoadListResponse walk;
    pb_istream_t stream = pb_istream_from_buffer((const pb_byte_t *)res.body, res.body_len);
    CHECK_INT(wl_scanner_decode_load_list(&stream, &handler, &walk), WL_SCANNER_OK);
    CHECK_INT(count.stops, 600);
    CHECK_INT(count.ambiguous + count.not_found + count.unlocated, 0);
    CHECK(!walk.truncated);
    CHECK_STR(walk.name, "Full list");
    http_response_free(&res);

    /* The real client, with its 512-byte receive buffer, shows all of it. */
    run_t run = scanner(key, "load", cli_id);
    CHECK_INT(run.status, 0);
    CHECK_INT(count_lines(run.out, "  R"), 600);
    CHECK(strstr(run.out, "  R00-0000-0\tWH1\tSKU-0000\t10\t"
                          "Heavy duty shelf bracket galvanised steel 300 mm\n") != NULL);
    CHECK(strstr(run.out, "Truncated") == NULL);
    CHECK_STR(run.err, "");
    run_free(&run);
}

static void test_truncated_walk(int64_t org)
{
    char key[WL_KEY_TOKEN_SIZE], id[64];
    static char codes[200 * 16];
    big_inventory(org, 200, 6, key, codes, sizeof(codes));
    create_list(key, "Too many stops", codes, id, sizeof(id));
    run_t run = scanner(key, "load", id);
    CHECK_INT(run.status, 0);
    /* 1200 stops: the first WL_DEVICE_MAX_STOPS in walk order, then the flag. */
    CHECK_INT(count_lines(run.out, "  R"), WL_DEVICE_MAX_STOPS);
    CHECK(strstr(run.out, "  R00-0000-0\tWH1\t") != NULL);
    CHECK(strstr(run.out, "  R05-0000-5\tWH1\t") == NULL); /* R05 sorts after R00..R04 */
    const char *tail = "Truncated: the list has more entries than a device is sent; the first are "
                       "shown.\n";
    size_t len = strlen(run.out);
    CHECK(len > strlen(tail) && strcmp(run.out + len - strlen(tail), tail) == 0);
    run_free(&run);
}

typedef struct {
    const char *label;
    const char *method;
    const char *key;
    const char *content_type;
    const char *body;
    size_t len;
    int status;
    const char *grpc;
    const char *field;
} bad_case_t;

static void test_bad_input(void)
{
    char pending_id[64], loaded_other[64], other_org_id[64];
    create_list(key_a, "Still pending", "[\"SKU-1\"]", pending_id, sizeof(pending_id));
    create_list(key_b, "Org B list", "[\"SKU-1\"]", other_org_id, sizeof(other_org_id));
    snprintf(loaded_other, sizeof(loaded_other), "%s", walk_id); /* loaded by test_queue_and_walk */

    uint8_t good[64], loaded[64], other[64];
    size_t good_len = 0, loaded_len = 0, other_len = 0;
    CHECK_INT(wl_scanner_encode_load_list(pending_id, good, sizeof(good), &good_len), 0);
    CHECK_INT(wl_scanner_encode_load_list(loaded_other, loaded, sizeof(loaded), &loaded_len), 0);
    CHECK_INT(wl_scanner_encode_load_list(other_org_id, other, sizeof(other), &other_len), 0);

    char cut[64], nul[64], long_id[64];
    memcpy(cut, good, good_len - 5); /* the id's length says more than follows */
    size_t nul_len = 0;
    nul[nul_len++] = 0x0a;
    nul[nul_len++] = (char)(strlen(pending_id) + 2);
    memcpy(nul + nul_len, pending_id, strlen(pending_id));
    nul_len += strlen(pending_id);
    nul[nul_len++] = '\0';
    nul[nul_len++] = 'x';
    long_id[0] = 0x0a;
    long_id[1] = 41;
    memset(long_id + 2, 'A', 41);
    static char big[WL_DEVICE_BODY_LIMIT + 1];
    memset(big, 0, sizeof(big));
    const char unknown[] = "\x0a\x16"
                           "AAAAAAAAAAAAAAAAAAAAAA";

    const bad_case_t cases[] = {
        {"truncated protobuf", "LoadList", key_a, "application/proto", cut, good_len - 5, 400,
         "INVALID_ARGUMENT", NULL},
        {"garbage", "LoadList", key_a, "application/proto", "\xff\xff\xff\xff\xff", 5, 400,
         "INVALID_ARGUMENT", NULL},
        {"garbage (ListPending)", "ListPending", key_a, "application/proto", "\x0a\x05xy", 4, 400,
         "INVALID_ARGUMENT", NULL},
        {"id with a NUL", "LoadList", key_a, "application/proto", nul, nul_len, 400,
         "INVALID_ARGUMENT", "id"},
        {"id over its bound", "LoadList", key_a, "application/proto", long_id, 43, 400,
         "INVALID_ARGUMENT", NULL},
        {"JSON content type", "LoadList", key_a, "application/json", (const char *)good, good_len,
         415, "INVALID_ARGUMENT", NULL},
        {"no content type", "LoadList", key_a, NULL, (const char *)good, good_len, 415,
         "INVALID_ARGUMENT", NULL},
        {"content type with a parameter", "LoadList", key_a, "application/proto; x=y",
         (const char *)good, good_len, 415, "INVALID_ARGUMENT", NULL},
        {"oversized body", "LoadList", key_a, "application/proto", big, sizeof(big), 413,
         "INVALID_ARGUMENT", NULL},
        {"unknown id", "LoadList", key_a, "application/proto", unknown, sizeof(unknown) - 1, 404,
         "NOT_FOUND", NULL},
        {"empty id", "LoadList", key_a, "application/proto", "", 0, 404, "NOT_FOUND", NULL},
        {"another organization's list", "LoadList", key_a, "application/proto", (const char *)other,
         other_len, 404, "NOT_FOUND", NULL},
        {"key without scanner", "LoadList", key_a_no_scanner, "application/proto",
         (const char *)good, good_len, 403, "PERMISSION_DENIED", NULL},
        {"key without scanner (ListPending)", "ListPending", key_a_no_scanner, "application/proto",
         "", 0, 403, "PERMISSION_DENIED", NULL},
        {"no key", "LoadList", NULL, "application/proto", (const char *)good, good_len, 401,
         "UNAUTHENTICATED", NULL},
        {"second load", "LoadList", key_a, "application/proto", (const char *)loaded, loaded_len,
         400, "FAILED_PRECONDITION", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *before = lists_snapshot();
        http_response_t res = device_post(cases[i].method, cases[i].key, cases[i].content_type,
                                          cases[i].body, cases[i].len);
        if (res.status != cases[i].status)
            fprintf(stderr, "case '%s': status %d body %s\n", cases[i].label, res.status,
                    res.body ? res.body : "");
        CHECK_ERROR(res, cases[i].status, cases[i].grpc, cases[i].field);
        char *after = lists_snapshot();
        if (strcmp(before, after) != 0)
            FAIL("case '%s' changed the lists", cases[i].label);
        free(before);
        free(after);
        http_response_free(&res);
    }

    /* An oversized chunked body is drained and refused too. */
    char *before = lists_snapshot();
    char *request = malloc(sizeof(big) + 512);
    int n = sprintf(request,
                    "POST /walklist.scanner.v1.DeviceService/LoadList HTTP/1.1\r\nHost: x\r\n"
                    "Connection: close\r\nAuthorization: Bearer %s\r\n"
                    "Content-Type: application/proto\r\nTransfer-Encoding: chunked\r\n\r\n%zx\r\n",
                    key_a, sizeof(big));
    memcpy(request + n, big, sizeof(big));
    n += (int)sizeof(big);
    n += sprintf(request + n, "\r\n0\r\n\r\n");
    http_response_t res;
    http_raw(port, request, (size_t)n, &res);
    CHECK_ERROR(res, 413, "INVALID_ARGUMENT", NULL);
    http_response_free(&res);
    free(request);

    /* Wrong method: 405 before authentication. */
    res = e2e_request(port, "GET", "/walklist.scanner.v1.DeviceService/LoadList", NULL, NULL, NULL);
    CHECK_ERROR(res, 405, "UNIMPLEMENTED", NULL);
    char allow[32];
    CHECK_STR(http_header(&res, "Allow", allow, sizeof(allow)), "POST");
    http_response_free(&res);
    res = device_post("Nothing", key_a, "application/proto", "", 0);
    CHECK_ERROR(res, 404, "NOT_FOUND", NULL);
    http_response_free(&res);
    char *after = lists_snapshot();
    CHECK_STR(after, before);
    free(before);
    free(after);

    /* The client shows the error and fails; the list stays loaded, the other pending. */
    run_t run = scanner(key_a, "load", loaded_other);
    CHECK_INT(run.status, 1);
    CHECK_STR(run.out, "");
    CHECK(starts_with(run.err, "walklist-scanner: HTTP 400: {\"error\":{\"code\":400,"
                               "\"status\":\"FAILED_PRECONDITION\""));
    run_free(&run);
    run = scanner(key_a, "load", other_org_id);
    CHECK_INT(run.status, 1);
    CHECK(starts_with(run.err, "walklist-scanner: HTTP 404: "));
    run_free(&run);
    run = scanner(key_a_no_scanner, "list", NULL);
    CHECK_INT(run.status, 1);
    CHECK(starts_with(run.err, "walklist-scanner: HTTP 403: "));
    run_free(&run);
    char state[32];
    CHECK_STR(list_state(pending_id, state, sizeof(state)), "pending");
    CHECK_STR(list_state(other_org_id, state, sizeof(state)), "pending");
    CHECK_STR(list_state(loaded_other, state, sizeof(state)), "loaded");

    /* Finally the pending list loads fine. */
    res = device_post("LoadList", key_a, "application/proto", good, good_len);
    CHECK_INT(res.status, 200);
    CHECK_STR(list_state(pending_id, state, sizeof(state)), "loaded");
    http_response_free(&res);
}

int main(void)
{
    const char *conninfo = testdb_create("e2e_scanner_device");
    db = testdb_connect(conninfo);
    int64_t org_a = fixture_org(db, "org-a");
    int64_t org_b = fixture_org(db, "org-b");
    fixture_key(db, org_a, "lists:write,scanner", key_a);
    fixture_key(db, org_a, "lists:write", key_a_no_scanner);
    fixture_key(db, org_b, "lists:write,scanner", key_b);
    import_inventory(org_a);
    service_start(&service, conninfo, NULL);
    port = service.port;
    snprintf(url, sizeof(url), "http://127.0.0.1:%u", (unsigned)port);

    test_queue_and_walk();
    test_queue_page(fixture_org(db, "org-queue"));
    test_payload_size(fixture_org(db, "org-big"));
    test_truncated_walk(fixture_org(db, "org-huge"));
    test_bad_input();

    CHECK_INT(service_stop(&service), 0);
    PQfinish(db);
    return test_exit();
}
