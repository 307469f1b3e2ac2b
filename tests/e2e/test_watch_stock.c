/*
 * End to end: StockService.WatchStock as a Connect server stream over HTTP/1.1, against a real
 * walklistd and PostgreSQL. Changes made through the InventoryService arrive exactly once, in
 * commit order, each message being the delta export between its cursors; the messages applied
 * to the full export at the starting cursor give the current full export; an idle stream gets
 * heartbeats and counts once in the stock-export bucket; another organization's changes never
 * appear; idle streams hold no request
 * thread (more streams than --threads, and the server still answers at once); the binary codec
 * works; an expired cursor ends the stream with out_of_range / CURSOR_EXPIRED; a client too
 * slow to take a message ends with resource_exhausted; SIGTERM ends every stream with an
 * end-stream message (unavailable). gzip: a compressed request envelope, messages of 1 KiB and
 * more compressed for a client whose Connect-Accept-Encoding takes gzip; a request that
 * inflates past the limit, corrupt gzip, a compressed flag without a coding and an unknown
 * coding each end the stream with their error.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "fixture.h"
#include "gunzip.h"
#include "service.h"
#include "testdb.h"
#include "walklist/v1/stock.pb-c.h"

#define THREADS 2
#define STREAMS 6 /* more than THREADS: idle streams must hold none */
#define STALL_S 2
#define BIG     40000 /* SKUs of the slow consumer's organization: about 4 MB as one delta */
#define CHANGED 4900  /* of them changed in one write (5000 and more replace the history) */
#define WRITES  10    /* such writes, over every SKU */

static service_t service;
static PGconn *db;
static uint16_t port;
static const char *conninfo;
static char key_read[WL_KEY_TOKEN_SIZE], key_write[WL_KEY_TOKEN_SIZE];
static char key_other_read[WL_KEY_TOKEN_SIZE], key_other_write[WL_KEY_TOKEN_SIZE];
static int receive_buffer; /* SO_RCVBUF of the next stream's socket; 0: the system's */
static bool gzip_stream;   /* the next stream's request gzip'd, its messages taken in gzip */

/* --- A streaming client: the chunked body de-chunked, then split into envelopes. --------- */

typedef struct {
    int fd;
    int status;
    char *raw; /* bytes read and not yet de-chunked */
    size_t raw_len, raw_cap;
    char *body; /* de-chunked bytes not yet taken as envelopes */
    size_t body_len, body_cap;
    bool chunks_done;
    bool binary;  /* application/connect+proto */
    bool chunked; /* else Content-Length (an error answered before the stream started) */
    size_t remaining;
    bool coded;        /* the answer said Connect-Content-Encoding: gzip */
    size_t compressed; /* messages that came compressed (flag 0x01), inflated */
} watch_t;

typedef struct {
    int flags;                             /* -1: nothing came in time, or the stream broke */
    json_t *json;                          /* JSON codec or the end-stream message */
    Walklist__V1__WatchStockResponse *msg; /* binary codec */
} envelope_t;

static void append(char **buf, size_t *len, size_t *cap, const char *data, size_t n)
{
    if (*len + n + 1 > *cap) {
        *cap = (*len + n + 1) * 2;
        *buf = realloc(*buf, *cap);
    }
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = '\0';
}

static void consume(char *buf, size_t *len, size_t n)
{
    memmove(buf, buf + n, *len - n);
    *len -= n;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads more from the socket until deadline; false on timeout or end. */
static bool read_more(watch_t *w, long long deadline)
{
    long long left = deadline - now_ms();
    if (left <= 0)
        return false;
    struct pollfd pfd = {.fd = w->fd, .events = POLLIN};
    if (poll(&pfd, 1, (int)left) <= 0)
        return false;
    char buf[16384];
    ssize_t n = read(w->fd, buf, sizeof(buf));
    if (n <= 0)
        return false;
    append(&w->raw, &w->raw_len, &w->raw_cap, buf, (size_t)n);
    return true;
}

/* Moves whole chunks from raw to body. */
static void dechunk(watch_t *w)
{
    if (!w->chunked) {
        size_t n = w->raw_len < w->remaining ? w->raw_len : w->remaining;
        append(&w->body, &w->body_len, &w->body_cap, w->raw, n);
        consume(w->raw, &w->raw_len, w->raw_len);
        w->remaining -= n;
        w->chunks_done = w->remaining == 0;
        return;
    }
    for (;;) {
        char *eol = w->raw_len ? strstr(w->raw, "\r\n") : NULL;
        if (eol == NULL)
            return;
        size_t size = strtoul(w->raw, NULL, 16);
        size_t head = (size_t)(eol - w->raw) + 2;
        if (w->raw_len < head + size + 2)
            return;
        if (size == 0) {
            w->chunks_done = true;
            consume(w->raw, &w->raw_len, w->raw_len);
            return;
        }
        append(&w->body, &w->body_len, &w->body_cap, w->raw + head, size);
        consume(w->raw, &w->raw_len, head + size + 2);
    }
}

/* Starts a stream of key from since ("" for none) in the JSON or binary codec. */
static bool watch_open(watch_t *w, const char *key, const char *since, bool binary)
{
    memset(w, 0, sizeof(*w));
    w->binary = binary;
    w->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (receive_buffer > 0)
        setsockopt(w->fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(w->fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        FAIL("cannot connect");
        return false;
    }
    char message[512];
    size_t len;
    char *coded = NULL;
    if (binary) {
        Walklist__V1__WatchStockRequest req = WALKLIST__V1__WATCH_STOCK_REQUEST__INIT;
        req.since = (char *)since;
        len = walklist__v1__watch_stock_request__pack(&req, (uint8_t *)message);
    } else {
        len = (size_t)snprintf(message, sizeof(message), "{\"since\":\"%s\"}", since);
    }
    if (gzip_stream) {
        size_t coded_len = 0;
        coded = gzip_encode(message, len, &coded_len);
        memcpy(message, coded, coded_len);
        len = coded_len;
        free(coded);
    }
    char request[2048];
    int head = snprintf(request, sizeof(request),
                        "POST /walklist.v1.StockService/WatchStock HTTP/1.1\r\nHost: x\r\n"
                        "Authorization: Bearer %s\r\nContent-Type: application/connect+%s\r\n"
                        "Connect-Protocol-Version: 1\r\nContent-Length: %zu\r\n%s\r\n",
                        key, binary ? "proto" : "json", len + 5,
                        gzip_stream ? "Connect-Content-Encoding: gzip\r\n"
                                      "Connect-Accept-Encoding: gzip\r\n"
                                    : "");
    char envelope[5] = {gzip_stream ? 1 : 0, (char)(len >> 24), (char)(len >> 16), (char)(len >> 8),
                        (char)len};
    memcpy(request + head, envelope, 5);
    memcpy(request + head + 5, message, len);
    if (write(w->fd, request, (size_t)head + 5 + len) != (ssize_t)(head + 5 + len)) {
        FAIL("cannot send");
        return false;
    }
    long long deadline = now_ms() + 10000;
    char *end;
    while ((end = w->raw_len ? strstr(w->raw, "\r\n\r\n") : NULL) == NULL)
        if (!read_more(w, deadline)) {
            FAIL("no response head");
            return false;
        }
    w->status = atoi(w->raw + 9);
    *end = '\0';
    w->chunked = strcasestr(w->raw, "Transfer-Encoding: chunked") != NULL;
    w->coded = strcasestr(w->raw, "Connect-Content-Encoding: gzip") != NULL;
    const char *length = strcasestr(w->raw, "Content-Length:");
    w->remaining = length != NULL ? strtoul(length + 15, NULL, 10) : 0;
    CHECK(w->chunked || length != NULL);
    CHECK(strstr(w->raw, binary ? "application/connect+proto" : "application/connect+json") !=
          NULL);
    consume(w->raw, &w->raw_len, (size_t)(end - w->raw) + 4);
    return true;
}

/* The next envelope within timeout_ms. */
static envelope_t watch_next(watch_t *w, int timeout_ms)
{
    envelope_t e = {.flags = -1};
    long long deadline = now_ms() + timeout_ms;
    for (;;) {
        dechunk(w);
        if (w->body_len >= 5) {
            const unsigned char *b = (const unsigned char *)w->body;
            size_t len = (size_t)b[1] << 24 | (size_t)b[2] << 16 | (size_t)b[3] << 8 | b[4];
            if (w->body_len >= 5 + len) {
                /* A compressed message is inflated, and shows as any other. */
                size_t text_len = len;
                char *text = b[0] & 1 ? gunzip(b + 5, len, true, &text_len) : NULL;
                const char *message = text ? text : w->body + 5;
                w->compressed += text != NULL;
                e.flags = b[0] & ~1;
                if (e.flags == 0 && w->binary)
                    e.msg = walklist__v1__watch_stock_response__unpack(NULL, text_len,
                                                                       (const uint8_t *)message);
                else
                    e.json = json_loadb(message, text_len, 0, NULL);
                free(text);
                consume(w->body, &w->body_len, 5 + len);
                return e;
            }
        }
        if (w->chunks_done || !read_more(w, deadline))
            return e;
    }
}

static void envelope_free(envelope_t *e)
{
    json_decref(e->json);
    if (e->msg != NULL)
        walklist__v1__watch_stock_response__free_unpacked(e->msg, NULL);
}

static void watch_close(watch_t *w)
{
    close(w->fd);
    free(w->raw);
    free(w->body);
}

/* The next message that is not a heartbeat (items), skipping heartbeats; flags -1 on none. */
static envelope_t watch_next_items(watch_t *w, int timeout_ms)
{
    long long deadline = now_ms() + timeout_ms;
    for (;;) {
        envelope_t e = watch_next(w, (int)(deadline - now_ms()));
        if (e.flags != 0 || json_array_size(json_object_get(e.json, "items")) > 0)
            return e;
        envelope_free(&e);
        if (now_ms() >= deadline)
            return (envelope_t){.flags = -1};
    }
}

/* --- Calls -------------------------------------------------------------------------------- */

static http_response_t connect_post(const char *procedure, const char *key, const char *body)
{
    return e2e_connect_json(port, procedure, key, body);
}

static void set_stock(const char *key, const char *sku, int on_hand)
{
    char body[256];
    snprintf(body, sizeof(body), "{\"items\":[{\"sku\":\"%s\",\"warehouse\":\"W\",\"onHand\":%d}]}",
             sku, on_hand);
    http_response_t res = connect_post("walklist.v1.InventoryService/SetStock", key, body);
    if (res.status != 200)
        FAIL("SetStock %s: %d %s", sku, res.status, res.body ? res.body : "");
    http_response_free(&res);
}

static http_response_t rest_export(const char *since)
{
    char target[512], headers[512];
    snprintf(target, sizeof(target), "/api/v1/stock-export%s%s", since ? "?since=" : "",
             since ? since : "");
    snprintf(headers, sizeof(headers), "Authorization: Bearer %s\r\n", key_read);
    http_response_t res;
    if (http_request(port, "GET", target, headers, NULL, 0, &res) != 0)
        FAIL("GET %s failed", target);
    return res;
}

/* RateLimit-Remaining of the stock-export bucket after one more export. */
static int export_remaining(void)
{
    http_response_t res = rest_export(NULL);
    char value[32] = "-1";
    http_header(&res, "RateLimit-Remaining", value, sizeof(value));
    http_response_free(&res);
    return atoi(value);
}

static void apply(json_t *model, json_t *items)
{
    e2e_apply_delta(model, items, NULL, NULL);
}

static void check_model(json_t *model, json_t *full_items)
{
    json_t *expected = json_object();
    apply(expected, full_items);
    if (!json_equal(expected, model)) {
        char *a = json_dumps(expected, JSON_COMPACT | JSON_SORT_KEYS);
        char *b = json_dumps(model, JSON_COMPACT | JSON_SORT_KEYS);
        FAIL("full export %s, messages applied %s", a, b);
        free(a);
        free(b);
    }
    json_decref(expected);
}

/* The end-stream message's error code, ErrorInfo reason and a word of its message. */
static void check_end(envelope_t *e, const char *code, const char *reason, const char *says)
{
    CHECK_INT(e->flags, 2);
    json_t *error = json_object_get(e->json, "error");
    CHECK_STR(e2e_str(error, "code", NULL), code);
    CHECK(json_is_object(json_object_get(e->json, "metadata")));
    const char *message = e2e_str(error, "message", NULL);
    if (message == NULL || strstr(message, says) == NULL)
        FAIL("end-stream message '%s' does not say '%s'", message ? message : "", says);
    bool found = false;
    size_t i;
    json_t *detail;
    json_array_foreach(json_object_get(error, "details"), i, detail)
    {
        const char *r = e2e_str(detail, "debug", "reason");
        if (r != NULL && strcmp(r, reason) == 0)
            found = true;
    }
    if (!found)
        FAIL("end-stream without reason %s: %s", reason, json_dumps(e->json, JSON_COMPACT));
}

/* --- Tests -------------------------------------------------------------------------------- */

/* Two organizations with the same warehouse and SKUs: "watch" and "watch-other". */
static void setup(void)
{
    static const char *const slugs[] = {"watch", "watch-other"};
    char *const reads[] = {key_read, key_other_read}, *const writes[] = {key_write,
                                                                         key_other_write};
    const char *warehouses =
        "{\"warehouses\":[{\"code\":\"W\",\"name\":\"Main\",\"kind\":\"own\"}]}";
    const char *products = "{\"products\":[{\"sku\":\"P00\",\"name\":\"a\"},{\"sku\":\"P01\","
                           "\"name\":\"b\"},{\"sku\":\"P02\",\"name\":\"c\"},{\"sku\":\"P03\","
                           "\"name\":\"d\"},{\"sku\":\"Q00\",\"name\":\"q\"}]}";
    for (int i = 0; i < 2; i++) {
        int64_t org = fixture_org(db, slugs[i]);
        fixture_key(db, org, "stock:read", reads[i]);
        fixture_key(db, org, "inventory:write", writes[i]);
        http_response_t res =
            connect_post("walklist.v1.InventoryService/UpsertWarehouses", writes[i], warehouses);
        CHECK_INT(res.status, 200);
        http_response_free(&res);
        res = connect_post("walklist.v1.InventoryService/UpsertProducts", writes[i], products);
        CHECK_INT(res.status, 200);
        http_response_free(&res);
    }
    set_stock(key_write, "P00", 5);
    set_stock(key_write, "P01", 3);
}

/* One change at a time: each message is exactly the delta export between its cursors; then a
 * burst, coalesced; the model follows the full export throughout. */
static void test_changes_in_order(void)
{
    http_response_t full = rest_export(NULL);
    CHECK_INT(full.status, 200);
    json_t *model = json_object();
    apply(model, json_object_get(full.json, "items"));
    char cursor[256];
    snprintf(cursor, sizeof(cursor), "%s", e2e_str(full.json, "cursor", NULL));
    http_response_free(&full);

    watch_t w;
    if (!watch_open(&w, key_read, cursor, false))
        return;
    CHECK_INT(w.status, 200);
    envelope_t first = watch_next(&w, 5000);
    CHECK_INT(first.flags, 0);
    CHECK_INT(json_array_size(json_object_get(first.json, "items")), 0);
    CHECK_STR(e2e_str(first.json, "cursor", NULL), cursor);
    envelope_free(&first);

    static const struct {
        const char *sku;
        int on_hand;
    } steps[] = {{"P02", 7}, {"P00", 0}, {"P03", 2}, {"P02", 8}, {"P01", 0}, {"P03", 9}};
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        set_stock(key_write, steps[i].sku, steps[i].on_hand);
        envelope_t e = watch_next_items(&w, 5000);
        CHECK_INT(e.flags, 0);
        json_t *items = json_object_get(e.json, "items");
        /* Exactly this change: one item, this SKU. */
        CHECK_INT(json_array_size(items), 1);
        CHECK_STR(e2e_str(json_array_get(items, 0), "sku", NULL), steps[i].sku);
        /* The message is the delta export between the two cursors, byte for byte in JSON. */
        http_response_t delta = rest_export(cursor);
        CHECK_INT(delta.status, 200);
        CHECK(json_equal(json_object_get(delta.json, "items"), items));
        CHECK_STR(e2e_str(delta.json, "cursor", NULL), e2e_str(e.json, "cursor", NULL));
        http_response_free(&delta);
        apply(model, items);
        snprintf(cursor, sizeof(cursor), "%s", e2e_str(e.json, "cursor", NULL));
        envelope_free(&e);
    }

    /* A burst: however the messages split it, they cover it once, up to the current cursor. */
    for (int i = 0; i < 8; i++)
        set_stock(key_write, i % 2 ? "P01" : "P02", 20 + i);
    full = rest_export(NULL);
    const char *current = e2e_str(full.json, "cursor", NULL);
    while (strcmp(cursor, current) != 0) {
        envelope_t e = watch_next_items(&w, 5000);
        if (e.flags != 0) {
            FAIL("the burst did not arrive (flags %d)", e.flags);
            break;
        }
        apply(model, json_object_get(e.json, "items"));
        snprintf(cursor, sizeof(cursor), "%s", e2e_str(e.json, "cursor", NULL));
        envelope_free(&e);
    }
    check_model(model, json_object_get(full.json, "items"));
    http_response_free(&full);
    json_decref(model);
    watch_close(&w);
}

/* An idle stream gets heartbeats (--watch-heartbeat-s 1): no items, the same cursor. Another
 * organization's changes never appear in it. */
static void test_heartbeat_and_isolation(void)
{
    int remaining = export_remaining();
    watch_t w;
    if (!watch_open(&w, key_read, "", false))
        return;
    envelope_t first = watch_next(&w, 5000);
    CHECK_INT(first.flags, 0);
    CHECK_INT(json_array_size(json_object_get(first.json, "items")), 0);
    char cursor[256];
    snprintf(cursor, sizeof(cursor), "%s", e2e_str(first.json, "cursor", NULL));
    envelope_free(&first);
    long long started = now_ms();
    for (int i = 0; i < 3; i++) {
        set_stock(key_other_write, "Q00", 100 + i); /* the other organization */
        set_stock(key_other_write, "P00", 100 + i);
        envelope_t beat = watch_next(&w, 3000);
        CHECK_INT(beat.flags, 0);
        CHECK_INT(json_array_size(json_object_get(beat.json, "items")), 0);
        CHECK_STR(e2e_str(beat.json, "cursor", NULL), cursor);
        envelope_free(&beat);
    }
    CHECK(now_ms() - started >= 1500); /* heartbeats, not a burst */
    /* One admission per stream, in ExportStock's bucket, whatever it sends: with the export
     * that reads the count, two. */
    CHECK_INT(export_remaining(), remaining - 2);
    set_stock(key_write, "P03", 33);
    envelope_t e = watch_next_items(&w, 5000);
    CHECK_INT(e.flags, 0);
    json_t *items = json_object_get(e.json, "items");
    CHECK_INT(json_array_size(items), 1);
    CHECK_STR(e2e_str(json_array_get(items, 0), "sku", NULL), "P03");
    CHECK_INT(json_integer_value(json_object_get(json_array_get(items, 0), "qty")), 33);
    envelope_free(&e);
    watch_close(&w);
}

/* More idle streams than request threads: /healthz and a write are answered at once, and every
 * stream, binary ones too, gets the write. */
static void test_idle_streams_hold_no_thread(watch_t streams[STREAMS])
{
    for (int i = 0; i < STREAMS; i++) {
        if (!watch_open(&streams[i], key_read, "", i % 2 == 1))
            return;
        envelope_t first = watch_next(&streams[i], 5000);
        CHECK_INT(first.flags, 0);
        envelope_free(&first);
    }
    long long started = now_ms();
    http_response_t health = e2e_request(port, "GET", "/healthz", NULL, NULL, NULL);
    CHECK_INT(health.status, 200);
    http_response_free(&health);
    set_stock(key_write, "P00", 44);
    long long took = now_ms() - started;
    if (took > 1000)
        FAIL("with %d idle streams and %d threads, /healthz and a write took %lld ms", STREAMS,
             THREADS, took);
    for (int i = 0; i < STREAMS; i++) {
        bool binary = i % 2 == 1;
        bool seen = false;
        for (int tries = 0; tries < 5 && !seen; tries++) {
            envelope_t e = watch_next(&streams[i], 5000);
            CHECK_INT(e.flags, 0);
            if (binary && e.msg != NULL && e.msg->n_items == 1) {
                CHECK_STR(e.msg->items[0]->sku, "P00");
                CHECK_INT(e.msg->items[0]->qty, 44);
                seen = true;
            } else if (!binary && json_array_size(json_object_get(e.json, "items")) == 1) {
                CHECK_STR(e2e_str(json_array_get(json_object_get(e.json, "items"), 0), "sku", NULL),
                          "P00");
                seen = true;
            }
            if (e.flags != 0)
                tries = 5;
            envelope_free(&e);
        }
        if (!seen)
            FAIL("stream %d did not get the write", i);
    }
}

/* Errors before the stream starts: 200 with the end-stream message only (Connect's rule for
 * streams); a cursor whose changes were pruned ends with out_of_range / CURSOR_EXPIRED. */
static void test_refusals_and_expired_cursor(void)
{
    watch_t w;
    if (watch_open(&w, "wlk_AAAAAAAA_BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", "", false)) {
        CHECK_INT(w.status, 200);
        envelope_t e = watch_next(&w, 5000);
        CHECK_INT(e.flags, 2);
        CHECK_STR(e2e_str(json_object_get(e.json, "error"), "code", NULL), "unauthenticated");
        envelope_free(&e);
        watch_close(&w);
    }
    if (watch_open(&w, key_write, "", false)) { /* no stock:read */
        envelope_t e = watch_next(&w, 5000);
        CHECK_INT(e.flags, 2);
        CHECK_STR(e2e_str(json_object_get(e.json, "error"), "code", NULL), "permission_denied");
        envelope_free(&e);
        watch_close(&w);
    }
    if (watch_open(&w, key_read, "not-a-cursor", false)) {
        envelope_t e = watch_next(&w, 5000);
        CHECK_INT(e.flags, 2);
        CHECK_STR(e2e_str(json_object_get(e.json, "error"), "code", NULL), "invalid_argument");
        envelope_free(&e);
        watch_close(&w);
    }

    http_response_t old = rest_export(NULL);
    char cursor[256];
    snprintf(cursor, sizeof(cursor), "%s", e2e_str(old.json, "cursor", NULL));
    http_response_free(&old);
    set_stock(key_write, "P01", 61);
    /* A write whose transaction keeps 0 hours of history prunes the changes since cursor. */
    char command[1024], path[] = "/tmp/wl_watch_XXXXXX";
    int fd = mkstemp(path);
    const char *csv = "sku,warehouse,on_hand\nP02,W,62\n";
    CHECK(fd >= 0 && write(fd, csv, strlen(csv)) == (ssize_t)strlen(csv));
    close(fd);
    snprintf(command, sizeof(command),
             "PGOPTIONS='-c walklist.export_history_hours=0' WALKLIST_DATABASE_URL='%s' '%s' "
             "import stock '%s' --org watch >/dev/null",
             conninfo, getenv("WALKLISTCTL"), path);
    CHECK_INT(system(command), 0);
    unlink(path);
    if (watch_open(&w, key_read, cursor, false)) {
        CHECK_INT(w.status, 200);
        envelope_t e = watch_next(&w, 5000);
        check_end(&e, "out_of_range", "CURSOR_EXPIRED", "no longer kept");
        envelope_free(&e);
        watch_close(&w);
    }
}

/* A client too slow to take one message within --watch-stall-s: once it reads again, the rest
 * of that message, then the end-stream message (resource_exhausted, STREAM_STALLED). */
static void test_slow_consumer(void)
{
    int64_t org = fixture_org(db, "watch-big");
    char key[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org, "stock:read", key);
    fixture_import(db, org, "warehouses", "code,name,kind\nW,Main,own\n");
    /* The catalogue first (a first fill starts the history anew), then writes of CHANGED SKUs
     * each, fewer than 5000 so that each is recorded as a delta: with SKUs of 60 characters,
     * more than the socket's buffers hold while the client reads nothing. */
    size_t size = 96 * (size_t)BIG;
    char *products = malloc(size), *stock = malloc(size);
    size_t p = (size_t)snprintf(products, size, "sku,name,eans\n");
    size_t q = (size_t)snprintf(stock, size, "sku,warehouse,on_hand\n");
    for (int i = 0; i < BIG; i++) {
        p += (size_t)snprintf(products + p, size - p, "%054d-%05d,Big %d,\n", 0, i, i);
        q += (size_t)snprintf(stock + q, size - q, "%054d-%05d,W,%d\n", 0, i, 1 + i % 7);
    }
    fixture_import(db, org, "products", products);
    fixture_import(db, org, "stock", stock);
    watch_t w;
    receive_buffer = 4096;
    bool opened = watch_open(&w, key, "", false);
    receive_buffer = 0;
    if (opened) {
        envelope_t first = watch_next(&w, 5000);
        CHECK_INT(first.flags, 0);
        envelope_free(&first);
        for (int j = 0; j < WRITES; j++) {
            q = (size_t)snprintf(stock, size, "sku,warehouse,on_hand\n");
            for (int i = 0; i < CHANGED; i++)
                q += (size_t)snprintf(stock + q, size - q, "%054d-%05d,W,%d\n", 0,
                                      (j * BIG / WRITES + i) % BIG, 100 + j);
            fixture_import(db, org, "stock", stock);
        }
    }
    free(products);
    free(stock);
    if (!opened)
        return;
    sleep(2 * STALL_S); /* reading nothing */
    size_t items = 0;
    envelope_t e;
    long long deadline = now_ms() + 30000;
    for (;;) {
        e = watch_next(&w, 10000);
        if (e.flags != 0 || now_ms() > deadline)
            break;
        items += json_array_size(json_object_get(e.json, "items"));
        envelope_free(&e);
    }
    CHECK(items >= CHANGED); /* the message under way is finished first */
    check_end(&e, "resource_exhausted", "STREAM_STALLED", "resume from the last cursor");
    envelope_free(&e);
    watch_close(&w);
}

/* SIGTERM: every open stream ends with the end-stream message (unavailable), then the process
 * exits 0. */
static void test_shutdown(watch_t streams[STREAMS])
{
    kill(service.pid, SIGTERM);
    for (int i = 0; i < STREAMS; i++) {
        envelope_t e;
        do {
            e = watch_next(&streams[i], 10000);
            if (e.flags == 0)
                envelope_free(&e);
        } while (e.flags == 0);
        check_end(&e, "unavailable", "SHUTTING_DOWN", "resume from the last cursor");
        envelope_free(&e);
        /* The chunked body ends too. */
        while (!streams[i].chunks_done && read_more(&streams[i], now_ms() + 5000))
            dechunk(&streams[i]);
        CHECK(streams[i].chunks_done);
        watch_close(&streams[i]);
    }
    CHECK_INT(service_stop(&service), 0);
}

/* A Connect stream request to WatchStock with extra headers and the enveloped body as given:
 * the end-stream message it is answered with (flags -1 when there is none). */
static envelope_t stream_refused(const char *extra, const void *body, size_t len)
{
    char headers[1024];
    snprintf(headers, sizeof(headers),
             "Authorization: Bearer %s\r\nContent-Type: application/connect+json\r\n"
             "Connect-Protocol-Version: 1\r\n%s",
             key_read, extra);
    http_response_t res;
    envelope_t e = {.flags = -1};
    if (http_request(port, "POST", "/walklist.v1.StockService/WatchStock", headers, body, len,
                     &res) != 0) {
        FAIL("WatchStock request failed");
        return e;
    }
    CHECK_INT(res.status, 200);
    const unsigned char *b = (const unsigned char *)res.body;
    if (res.body_len >= 5 && (size_t)b[1] << 24 | (size_t)b[2] << 16 | (size_t)b[3] << 8 | b[4]) {
        e.flags = b[0];
        e.json = json_loadb(res.body + 5, res.body_len - 5, 0, NULL);
    }
    http_response_free(&res);
    return e;
}

/* An enveloped message (flags, then data) in buf; its length. */
static size_t envelope(char *buf, int flags, const void *data, size_t len)
{
    buf[0] = (char)flags;
    buf[1] = (char)(len >> 24);
    buf[2] = (char)(len >> 16);
    buf[3] = (char)(len >> 8);
    buf[4] = (char)len;
    memcpy(buf + 5, data, len);
    return len + 5;
}

/* gzip both ways on a stream: the request's message compressed, a large delta (40 SKUs, over
 * 1 KiB) compressed, a small message not; then the refusals, each an end-stream error. */
static void test_compression(void)
{
    const char *products_head = "{\"products\":[";
    char body[8192];
    size_t used = (size_t)snprintf(body, sizeof(body), "%s", products_head);
    for (int i = 0; i < 40; i++)
        used += (size_t)snprintf(body + used, sizeof(body) - used,
                                 "%s{\"sku\":\"ZIP-%02d\",\"name\":\"Zipped %02d\"}", i ? "," : "",
                                 i, i);
    snprintf(body + used, sizeof(body) - used, "]}");
    http_response_t res =
        connect_post("walklist.v1.InventoryService/UpsertProducts", key_write, body);
    CHECK_INT(res.status, 200);
    http_response_free(&res);

    watch_t w;
    gzip_stream = true;
    bool opened = watch_open(&w, key_read, "", false);
    gzip_stream = false;
    if (!opened)
        return;
    CHECK_INT(w.status, 200);
    CHECK(w.coded);
    envelope_t first = watch_next(&w, 5000);
    CHECK_INT(first.flags, 0);
    CHECK_INT(w.compressed, 0); /* a cursor alone: not worth coding */
    envelope_free(&first);
    used = (size_t)snprintf(body, sizeof(body), "{\"items\":[");
    for (int i = 0; i < 40; i++)
        used += (size_t)snprintf(body + used, sizeof(body) - used,
                                 "%s{\"sku\":\"ZIP-%02d\",\"warehouse\":\"W\",\"onHand\":%d}",
                                 i ? "," : "", i, 100 + i);
    snprintf(body + used, sizeof(body) - used, "]}");
    res = connect_post("walklist.v1.InventoryService/SetStock", key_write, body);
    CHECK_INT(res.status, 200);
    http_response_free(&res);
    size_t items = 0;
    while (items < 40) {
        envelope_t e = watch_next_items(&w, 5000);
        if (e.flags != 0) {
            FAIL("the 40 changes did not arrive (flags %d)", e.flags);
            envelope_free(&e);
            break;
        }
        items += json_array_size(json_object_get(e.json, "items"));
        envelope_free(&e);
    }
    CHECK(w.compressed >= 1);
    watch_close(&w);

    /* Refusals: each a 200 whose end-stream message carries the error. */
    char request[256];
    const char *since = "{\"since\":\"\"}";
    size_t len = envelope(request, 1, since, strlen(since));
    envelope_t e = stream_refused("", request, len); /* flagged, but no coding named */
    check_end(&e, "invalid_argument", "INVALID_REQUEST", "Connect-Content-Encoding");
    envelope_free(&e);
    e = stream_refused("Connect-Content-Encoding: gzip\r\n", request, len); /* not gzip */
    check_end(&e, "invalid_argument", "INVALID_REQUEST", "not valid gzip");
    envelope_free(&e);
    e = stream_refused("Connect-Content-Encoding: br\r\n", request, len);
    check_end(&e, "unimplemented", "CONTENT_ENCODING_UNSUPPORTED", "gzip");
    envelope_free(&e);
    /* 8 MiB of blanks after the request, gzip'd: past the limit once inflated. */
    size_t bomb_len = 8u * 1024 * 1024, coded_len = 0;
    char *bomb = malloc(bomb_len);
    memset(bomb, ' ', bomb_len);
    memcpy(bomb, since, strlen(since));
    char *coded = gzip_encode(bomb, bomb_len, &coded_len);
    free(bomb);
    char *big = malloc(coded_len + 5);
    len = envelope(big, 1, coded, coded_len);
    e = stream_refused("Connect-Content-Encoding: gzip\r\n", big, len);
    check_end(&e, "resource_exhausted", "BODY_TOO_LARGE", "inflates");
    envelope_free(&e);
    free(big);
    free(coded);
}

int main(void)
{
    conninfo = testdb_create("e2e_watch_stock");
    db = testdb_connect(conninfo);
    char stall[16];
    snprintf(stall, sizeof(stall), "%d", STALL_S);
    const char *args[] = {"--threads", "2", "--watch-heartbeat-s", "1", "--watch-stall-s",
                          stall,       NULL};
    service_start(&service, conninfo, args);
    port = service.port;

    setup();
    test_changes_in_order();
    test_heartbeat_and_isolation();
    test_compression();
    watch_t streams[STREAMS];
    test_idle_streams_hold_no_thread(streams);
    test_refusals_and_expired_cursor();
    test_slow_consumer();
    test_shutdown(streams);

    PQfinish(db);
    return test_exit();
}
