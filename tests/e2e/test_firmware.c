/*
 * End to end on the target: the scanner firmware library cross-built for a Cortex-M4
 * (tests/firmware) decodes answers recorded from a real walklistd, under QEMU (mps2-an386).
 * This test records them (a 200-code walk with three bins per product, a 600-stop walk with
 * long UTF-8 names, a walk with every kind of entry, a queue, an empty queue, errors), also
 * re-framed as chunked, decodes each on the host with protobuf-c (a decoder independent of
 * nanopb and of the library), runs the image, which reads each file in fragments of 4096, 1, 7
 * and 61 bytes, and compares what it printed with that. It checks the image's measured stack
 * (at most 4 KiB for any walk) and reports the instructions per stop of the 600-stop walk.
 * Skipped (77) when the image or qemu-system-arm is not there.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"
#include "walklist/scanner/v1/device.pb-c.h"
#include "walklist/scanner_exchange.h"

#define CASES_DIR     "firmware-cases"
#define FRAGMENTS     4 /* fragment sizes the image reads each file in */
#define RAM_BOUND     4096
#define MAX_CASES     32
#define MESSAGE_LIMIT (WL_SCANNER_ERROR_MESSAGE_SIZE - 1)

static service_t service;
static PGconn *db;

typedef struct {
    char file[64];
    const char *kind; /* "walk" or "queue" */
    char *expected;   /* entry lines and the result line */
    size_t stops;
    int blocks_seen;
} case_t;

static case_t cases[MAX_CASES];
static size_t case_count;

/* --- recording ------------------------------------------------------------------------------ */

/* Sends request and returns every byte of the answer, up to the server's close. */
static uint8_t *exchange(const uint8_t *request, size_t len, size_t *out_len)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(service.port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
        send(fd, request, len, 0) != (ssize_t)len) {
        FAIL("cannot send to walklistd");
        exit(1);
    }
    size_t cap = 1 << 16, used = 0;
    uint8_t *data = malloc(cap);
    ssize_t n;
    while ((n = recv(fd, data + used, cap - used, 0)) > 0) {
        used += (size_t)n;
        if (used == cap)
            data = realloc(data, cap *= 2);
    }
    close(fd);
    *out_len = used;
    return data;
}

static uint8_t *record(const char *key, const char *list_id, size_t *len)
{
    char host[32];
    snprintf(host, sizeof(host), "127.0.0.1:%u", (unsigned)service.port);
    wl_scanner_server_t server = {.host = host, .key = key};
    uint8_t request[WL_SCANNER_REQUEST_SIZE];
    size_t request_len = 0;
    int rc =
        list_id != NULL
            ? wl_scanner_request_load_list(&server, list_id, request, sizeof(request), &request_len)
            : wl_scanner_request_list_pending(&server, request, sizeof(request), &request_len);
    CHECK_INT(rc, 0);
    return exchange(request, request_len, len);
}

static void write_file(const char *name, const void *data, size_t len)
{
    char path[128];
    snprintf(path, sizeof(path), CASES_DIR "/%s", name);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        FAIL("cannot write %s", path);
        exit(1);
    }
}

/* --- the host's own reading of an answer (not the library's) ---------------------------------- */

typedef struct {
    int status;
    char *head; /* NUL-terminated, without the blank line */
    uint8_t *body;
    size_t body_len;
} answer_t;

static answer_t split_answer(const uint8_t *data, size_t len)
{
    answer_t a = {0};
    const uint8_t *end = memmem(data, len, "\r\n\r\n", 4);
    if (end == NULL || sscanf((const char *)data, "HTTP/1.1 %d", &a.status) != 1) {
        FAIL("not an HTTP answer");
        exit(1);
    }
    a.head = strndup((const char *)data, (size_t)(end - data));
    const uint8_t *body = end + 4, *stop = data + len;
    a.body = malloc(len + 1);
    if (strcasestr(a.head, "transfer-encoding: chunked") == NULL) {
        a.body_len = (size_t)(stop - body);
        memcpy(a.body, body, a.body_len);
        return a;
    }
    while (body < stop) {
        char *next;
        size_t size = strtoul((const char *)body, &next, 16);
        const uint8_t *chunk = memmem(body, (size_t)(stop - body), "\r\n", 2) + 2;
        if (size == 0)
            break;
        memcpy(a.body + a.body_len, chunk, size);
        a.body_len += size;
        body = chunk + size + 2;
    }
    return a;
}

static char *expected_walk(const answer_t *a, size_t *stops)
{
    Walklist__Scanner__V1__LoadListResponse *walk =
        walklist__scanner__v1__load_list_response__unpack(NULL, a->body_len, a->body);
    CHECK(walk != NULL);
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    for (size_t i = 0; i < walk->n_stops; i++) {
        const Walklist__Scanner__V1__Stop *s = walk->stops[i];
        fprintf(f, "stop %s\t%s\t%s\t%u\t%s\n", s->bin, s->warehouse, s->sku, s->quantity, s->name);
    }
    for (size_t i = 0; i < walk->n_ambiguous; i++)
        fprintf(f, "ambiguous %s\t%s\n", walk->ambiguous[i]->code, walk->ambiguous[i]->sku);
    for (size_t i = 0; i < walk->n_not_found; i++)
        fprintf(f, "not_found %s\n", walk->not_found[i]);
    for (size_t i = 0; i < walk->n_unlocated; i++)
        fprintf(f, "unlocated %s\t%s\n", walk->unlocated[i]->sku, walk->unlocated[i]->name);
    fprintf(f, "walk %s truncated=%d\nresult 0 ok\n", walk->name, walk->truncated ? 1 : 0);
    fclose(f);
    *stops = walk->n_stops;
    walklist__scanner__v1__load_list_response__free_unpacked(walk, NULL);
    return text;
}

static char *expected_queue(const answer_t *a)
{
    Walklist__Scanner__V1__ListPendingResponse *queue =
        walklist__scanner__v1__list_pending_response__unpack(NULL, a->body_len, a->body);
    CHECK(queue != NULL);
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    for (size_t i = 0; i < queue->n_lists; i++) {
        const Walklist__Scanner__V1__PendingList *l = queue->lists[i];
        fprintf(f, "list %s\t%llu\t%u\t%s\n", l->id, (unsigned long long)l->created_at,
                l->codes_count, l->name);
    }
    fprintf(f, "more %d\nresult 0 ok\n", queue->more ? 1 : 0);
    fclose(f);
    walklist__scanner__v1__list_pending_response__free_unpacked(queue, NULL);
    return text;
}

static char *expected_error(const answer_t *a, int code)
{
    json_error_t error;
    json_t *json = json_loadb((const char *)a->body, a->body_len, 0, &error);
    const char *status = e2e_str(json, "error", "status");
    const char *message = e2e_str(json, "error", "message");
    CHECK(status != NULL && message != NULL);
    char *text = NULL;
    if (asprintf(&text, "error http=%d status=%s retry_after=0 message=%.*s\nresult %d %s\n",
                 a->status, status ? status : "", MESSAGE_LIMIT, message ? message : "", code,
                 wl_scanner_strerror(code)) < 0)
        exit(1);
    json_decref(json);
    return text;
}

/* The same answer with its body in chunks of 1, 2, 3, ... 97 bytes, some with extensions. */
static uint8_t *rechunk(const answer_t *a, size_t *len)
{
    uint8_t *out = malloc(strlen(a->head) + a->body_len * 12 + 256);
    size_t n = 0;
    for (const char *line = a->head; *line != '\0';) {
        const char *end = strstr(line, "\r\n");
        size_t line_len = end ? (size_t)(end - line) : strlen(line);
        if (strncasecmp(line, "Content-Length:", 15) != 0) {
            memcpy(out + n, line, line_len);
            n += line_len;
            memcpy(out + n, "\r\n", 2);
            n += 2;
        }
        line += line_len + (end ? 2 : 0);
    }
    n += (size_t)sprintf((char *)out + n, "Transfer-Encoding: chunked\r\n\r\n");
    size_t chunk = 1;
    for (size_t pos = 0; pos < a->body_len; pos += chunk, chunk = chunk % 97 + 1) {
        size_t k = a->body_len - pos < chunk ? a->body_len - pos : chunk;
        n += (size_t)sprintf((char *)out + n, chunk % 5 == 0 ? "%zX;x=%zu\r\n" : "%zx\r\n", k, k);
        memcpy(out + n, a->body + pos, k);
        n += k;
        memcpy(out + n, "\r\n", 2);
        n += 2;
    }
    n += (size_t)sprintf((char *)out + n, "0\r\nX-Trailer: ignored\r\n\r\n");
    *len = n;
    return out;
}

/* Records one answer, writes it (and its chunked twin) and what the image must print. */
static void add_case(const char *name, const char *kind, const char *key, const char *list_id,
                     int expected_status, int code)
{
    size_t len;
    uint8_t *raw = record(key, list_id, &len);
    answer_t a = split_answer(raw, len);
    if (a.status != expected_status)
        FAIL("%s: HTTP %d, expected %d: %.*s", name, a.status, expected_status, (int)a.body_len,
             a.body);
    size_t stops = 0;
    char *expected = a.status != 200             ? expected_error(&a, code)
                     : strcmp(kind, "walk") == 0 ? expected_walk(&a, &stops)
                                                 : expected_queue(&a);
    for (int chunked = 0; chunked < 2; chunked++) {
        if (case_count == MAX_CASES) {
            FAIL("more than %d cases", MAX_CASES);
            exit(1);
        }
        case_t *c = &cases[case_count++];
        snprintf(c->file, sizeof(c->file), "%s%s.http", name, chunked ? ".chunked" : "");
        c->kind = kind;
        c->expected = strdup(expected);
        c->stops = stops;
        size_t framed_len = len;
        uint8_t *framed = chunked ? rechunk(&a, &framed_len) : raw;
        write_file(c->file, framed, framed_len);
        if (framed != raw)
            free(framed);
    }
    free(expected);
    free(raw);
    free(a.head);
    free(a.body);
}

/* --- the data --------------------------------------------------------------------------------- */

static void create_list(const char *key, const char *name, const char *codes_json, char *id)
{
    char *body = NULL;
    if (asprintf(&body, "{\"name\":\"%s\",\"codes\":%s}", name, codes_json) < 0)
        exit(1);
    http_response_t res =
        e2e_request(service.port, "POST", "/api/v1/locate-lists", key, "application/json", body);
    CHECK_INT(res.status, 201);
    const char *value = e2e_str(res.json, "id", NULL);
    snprintf(id, 64, "%s", value ? value : "");
    http_response_free(&res);
    free(body);
}

static void mixed_inventory(int64_t org)
{
    fixture_import(db, org, "warehouses", "code,name,kind\nWH1,Main,own\nWH2,Annex,own\n");
    fixture_import(db, org, "locations",
                   "warehouse,code,staging\nWH1,A-2,false\nWH1,A-10,false\nWH2,A-2,false\n"
                   "WH1,B-1,false\nWH1,STAGE,true\n");
    fixture_import(db, org, "products",
                   "sku,name,eans\nSKU-1,Blue widget,4006381333931\n"
                   "SKU-2,Red widget,5000000000001\n"
                   "SKU-3,Green widget,5000000000001|5000000000002\n"
                   "SKU-4,Gadget without a rack,\n"
                   "SKU-5,Schraubendreher Kreuzschlitz gehärtet — Größe №2 für Profis,\n");
    fixture_import(db, org, "location-stock",
                   "sku,warehouse,location,quantity\nSKU-1,WH1,A-10,5\nSKU-1,WH2,A-2,3\n"
                   "SKU-2,WH1,A-2,7\nSKU-3,WH1,A-2,0\nSKU-5,WH1,B-1,65535\n");
}

/* --- running the image ----------------------------------------------------------------------- */

static case_t *find_case(const char *file)
{
    for (size_t i = 0; i < case_count; i++)
        if (strcmp(cases[i].file, file) == 0)
            return &cases[i];
    return NULL;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return strdup("");
    char *text = NULL;
    size_t size = 0;
    FILE *m = open_memstream(&text, &size);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        fwrite(buf, 1, n, m);
    fclose(f);
    fclose(m);
    return text;
}

static void check_output(const char *output)
{
    case_t *current = NULL;
    char *block = NULL;
    size_t block_size = 0;
    FILE *collect = NULL;
    long fragment = 0;
    size_t walk_stack = 0, queue_stack = 0;
    bool bench_seen = false;
    for (const char *line = output; *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
        char *text = strndup(line, len);
        char file[64];
        if (sscanf(text, "== %63s %ld", file, &fragment) == 2) {
            current = find_case(file);
            CHECK(current != NULL);
            collect = open_memstream(&block, &block_size);
        } else if (strncmp(text, "stack ", 6) == 0 && current != NULL) {
            size_t used = 0, stops = 0;
            CHECK_INT(sscanf(text, "stack %zu stops=%zu", &used, &stops), 2);
            fclose(collect);
            if (strcmp(block, current->expected) != 0) {
                FAIL("%s in %ld-byte fragments: the image printed something else", current->file,
                     fragment);
                fprintf(stderr, "--- expected (head)\n%.600s\n--- printed (head)\n%.600s\n",
                        current->expected, block);
            }
            CHECK_INT(stops, current->stops);
            if (used > RAM_BOUND)
                FAIL("%s: the decoder used %zu bytes of stack (bound %d)", current->file, used,
                     RAM_BOUND);
            size_t *max = strcmp(current->kind, "walk") == 0 ? &walk_stack : &queue_stack;
            if (used > *max)
                *max = used;
            current->blocks_seen++;
            free(block);
            block = NULL;
            current = NULL;
        } else if (strncmp(text, "bench ", 6) == 0) {
            long rc, bytes, stops;
            unsigned long long ticks, cal_instructions, cal_ticks;
            CHECK_INT(sscanf(text,
                             "bench %63s result=%ld bytes=%ld stops=%ld ticks=%llu "
                             "calibration_instructions=%llu calibration_ticks=%llu",
                             file, &rc, &bytes, &stops, &ticks, &cal_instructions, &cal_ticks),
                      7);
            CHECK_INT(rc, 0);
            CHECK_INT(stops, 600);
            CHECK(cal_ticks > 0 && ticks > 0);
            double per_tick = (double)cal_instructions / (double)cal_ticks;
            double per_stop = (double)ticks * per_tick / (double)stops;
            fprintf(stderr,
                    "600-stop walk (%ld bytes, 1460-byte segments, from RAM): %.0f instructions "
                    "in all, %.0f per stop (QEMU -icount: %.1f instructions per timer tick)\n",
                    bytes, (double)ticks * per_tick, per_stop, per_tick);
            CHECK(per_stop > 100 && per_stop < 50000);
            bench_seen = true;
        } else if (current != NULL) {
            fputs(text, collect);
        }
        free(text);
        line += len;
    }
    if (current != NULL) {
        FAIL("the output ends inside %s", current->file);
        fclose(collect);
        free(block);
    }
    for (size_t i = 0; i < case_count; i++)
        if (cases[i].blocks_seen != FRAGMENTS)
            FAIL("%s was decoded %d times, expected %d", cases[i].file, cases[i].blocks_seen,
                 FRAGMENTS);
    CHECK(bench_seen);
    fprintf(stderr,
            "decoder stack, painted (state, 256-byte receive buffer, nanopb, handler): walk %zu "
            "bytes, queue %zu bytes; bound %d\n",
            walk_stack, queue_stack, RAM_BOUND);
}

int main(void)
{
    const char *firmware_dir = getenv("WALKLIST_FIRMWARE_DIR");
    char elf[512];
    snprintf(elf, sizeof(elf), "%s/fw_test.elf", firmware_dir ? firmware_dir : ".");
    if (firmware_dir == NULL || access(elf, R_OK) != 0 ||
        system("command -v qemu-system-arm >/dev/null") != 0) {
        printf("skipped: no firmware image (%s) or no qemu-system-arm: install "
               "gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm and rebuild\n",
               elf);
        return 77;
    }
    const char *conninfo = testdb_create("e2e_firmware");
    db = testdb_connect(conninfo);
    int64_t org_mixed = fixture_org(db, "fw-mixed"), org_200 = fixture_org(db, "fw-200");
    int64_t org_600 = fixture_org(db, "fw-600");
    char key_mixed[WL_KEY_TOKEN_SIZE], key_200[WL_KEY_TOKEN_SIZE], key_600[WL_KEY_TOKEN_SIZE];
    char key_no_scanner[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org_mixed, "lists:write,scanner", key_mixed);
    fixture_key(db, org_200, "lists:write,scanner", key_200);
    fixture_key(db, org_600, "lists:write,scanner", key_600);
    fixture_key(db, org_600, "lists:write", key_no_scanner);
    static char codes_200[200 * 16], codes_600[100 * 16];
    mixed_inventory(org_mixed);
    fixture_walk_t walk_200 = {
        200, 3, "Heavy duty shelf bracket galvanised steel 300 mm type %04d", "R%02d-%04d-%d", 0,
        7,   1};
    fixture_walk_inventory(db, org_200, &walk_200, codes_200, sizeof(codes_200));
    fixture_walk_t walk_600 = {100,
                               6,
                               "Schraubendreher Größe №%d für Profis — gehärtet und extra lang",
                               "Zone-%d/Aisle-%04d/Shelf-%02d",
                               0,
                               7,
                               1};
    fixture_walk_inventory(db, org_600, &walk_600, codes_600, sizeof(codes_600));
    service_start(&service, conninfo, NULL);
    mkdir(CASES_DIR, 0755);

    char mixed_id[64], id_200[64], id_600[64], id[64];
    create_list(key_mixed, "Aisle 3 recount",
                "[\"SKU-1\",\"5000000000001\",\"NOPE-1\",\"SKU-4\",\"SKU-5\",\"nope-2\"]",
                mixed_id);
    create_list(key_200, "Full list", codes_200, id_200);
    create_list(key_600, "Inventur Gang 3 – Überprüfung der Regale und Fächer — Größen XL/XXL €",
                codes_600, id_600);
    create_list(key_600, "Second", "[\"SKU-0001\"]", id);
    create_list(key_600, "Third", "[\"A\",\"B\",\"C\"]", id);

    add_case("queue", "queue", key_600, NULL, 200, 0);
    add_case("walk_mixed", "walk", key_mixed, mixed_id, 200, 0);
    add_case("walk_200_codes", "walk", key_200, id_200, 200, 0);
    add_case("walk_600_stops", "walk", key_600, id_600, 200, 0);
    add_case("queue_empty", "queue", key_200, NULL, 200, 0);
    add_case("error_loaded", "walk", key_mixed, mixed_id, 400, WL_SCANNER_EFAILED_PRECONDITION);
    add_case("error_unknown", "walk", key_mixed, "no-such-list", 404, WL_SCANNER_ENOT_FOUND);
    add_case("error_scope", "queue", key_no_scanner, NULL, 403, WL_SCANNER_EPERMISSION_DENIED);
    add_case("error_key", "queue", "not-a-key", NULL, 401, WL_SCANNER_EUNAUTHENTICATED);
    CHECK_INT(service_stop(&service), 0);
    PQfinish(db);

    CHECK(cases[4].stops == 600 && cases[6].stops == 600);
    FILE *manifest = fopen(CASES_DIR "/cases.txt", "w");
    for (size_t i = 0; i < case_count; i++)
        fprintf(manifest, "%s %s\n", cases[i].kind, cases[i].file);
    fprintf(manifest, "bench walk_600_stops.http\n");
    fclose(manifest);

    char command[1024];
    snprintf(command, sizeof(command),
             "cd " CASES_DIR " && timeout 100 qemu-system-arm -M mps2-an386 -nographic "
             "-monitor none -serial none -semihosting-config enable=on,target=native "
             "-icount shift=0 -kernel '%s' >firmware.out 2>firmware.err",
             elf);
    int status = system(command);
    char *output = slurp(CASES_DIR "/firmware.out");
    if (status != 0) {
        char *err = slurp(CASES_DIR "/firmware.err");
        FAIL("qemu-system-arm exited with %d: %s", status, err);
        free(err);
    }
    check_output(output);
    free(output);
    for (size_t i = 0; i < case_count; i++)
        free(cases[i].expected);
    return test_exit();
}
