/* The device-side client: request encoding and streaming response decoding on hand-built payloads.
 */
#include <pb_common.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "walklist/scanner_client.h"
#include "test.h"

/* --- a tiny protobuf writer, so payloads are built by hand, not by the code under test ---- */

typedef struct {
    uint8_t bytes[1 << 20];
    size_t len;
} writer_t;

static void put_varint(writer_t *w, uint64_t value)
{
    do {
        uint8_t byte = value & 0x7f;
        value >>= 7;
        w->bytes[w->len++] = (uint8_t)(byte | (value ? 0x80 : 0));
    } while (value);
}

static void put_bytes(writer_t *w, unsigned field, const void *data, size_t len)
{
    put_varint(w, (uint64_t)field << 3 | 2);
    put_varint(w, len);
    memcpy(w->bytes + w->len, data, len);
    w->len += len;
}

static void put_string(writer_t *w, unsigned field, const char *text)
{
    put_bytes(w, field, text, strlen(text));
}

static void put_uint(writer_t *w, unsigned field, uint64_t value)
{
    put_varint(w, (uint64_t)field << 3);
    put_varint(w, value);
}

static void put_message(writer_t *w, unsigned field, const writer_t *inner)
{
    put_bytes(w, field, inner->bytes, inner->len);
}

static writer_t scratch; /* one submessage being built */

static void put_stop(writer_t *w, const char *bin, const char *warehouse, const char *sku,
                     uint32_t quantity, const char *name)
{
    scratch.len = 0;
    put_string(&scratch, 1, bin);
    put_string(&scratch, 2, warehouse);
    put_string(&scratch, 3, sku);
    put_uint(&scratch, 4, quantity);
    put_string(&scratch, 5, name);
    put_message(w, 2, &scratch);
}

static void put_pair(writer_t *w, unsigned field, const char *first, const char *second)
{
    scratch.len = 0;
    put_string(&scratch, 1, first);
    put_string(&scratch, 2, second);
    put_message(w, field, &scratch);
}

/* --- a handler that writes what it receives as text ------------------------------------- */

typedef struct {
    char text[8192];
    size_t len;
    int stop_after; /* entries; 0: never */
    int entries;
} record_t;

static bool note(record_t *r, const char *kind, const char *a, const char *b, const char *c)
{
    r->len += (size_t)snprintf(r->text + r->len, sizeof(r->text) - r->len, "%s %s%s%s%s%s\n", kind,
                               a, b ? "|" : "", b ? b : "", c ? "|" : "", c ? c : "");
    return r->stop_after == 0 || ++r->entries < r->stop_after;
}

static bool on_stop(void *context, const walklist_scanner_v1_Stop *stop)
{
    char where[600];
    snprintf(where, sizeof(where), "%s@%s", stop->bin, stop->warehouse);
    char quantity[16];
    snprintf(quantity, sizeof(quantity), "%u", (unsigned)stop->quantity);
    char rest[400];
    snprintf(rest, sizeof(rest), "%s x%s", stop->sku, quantity);
    return note(context, "stop", where, rest, stop->name);
}

static bool on_ambiguous(void *context, const walklist_scanner_v1_AmbiguousMatch *match)
{
    return note(context, "ambiguous", match->code, match->sku, NULL);
}

static bool on_not_found(void *context, const char *code)
{
    return note(context, "not_found", code, NULL, NULL);
}

static bool on_unlocated(void *context, const walklist_scanner_v1_Unlocated *product)
{
    return note(context, "unlocated", product->sku, product->name, NULL);
}

static int decode_walk(const writer_t *payload, size_t len, record_t *record,
                       walklist_scanner_v1_LoadListResponse *walk)
{
    wl_scanner_walk_handler_t handler = {on_stop, on_ambiguous, on_not_found, on_unlocated, record};
    pb_istream_t stream = pb_istream_from_buffer(payload->bytes, len);
    return wl_scanner_decode_load_list(&stream, &handler, walk);
}

static writer_t walk_payload;

static void build_walk(void)
{
    writer_t *w = &walk_payload;
    w->len = 0;
    put_string(w, 1, "Aisle 3");
    put_stop(w, "A-2", "WH1", "SKU-2", 7, "Red widget");
    put_stop(w, "A-10", "WH2", "SKU-1", 300000,
             "Gr\xc3\xb6\xc3\x9f"
             "e 2");
    put_pair(w, 3, "5000000000001", "SKU-2");
    put_pair(w, 3, "5000000000001", "SKU-3");
    put_string(w, 4, "NOPE-1");
    put_string(w, 4, "");
    put_pair(w, 5, "SKU-4", "Gadget");
    put_uint(w, 6, 1);
}

static const char walk_text[] = "stop A-2@WH1|SKU-2 x7|Red widget\n"
                                "stop A-10@WH2|SKU-1 x300000|Gr\xc3\xb6\xc3\x9f"
                                "e 2\n"
                                "ambiguous 5000000000001|SKU-2\n"
                                "ambiguous 5000000000001|SKU-3\n"
                                "not_found NOPE-1\n"
                                "not_found \n"
                                "unlocated SKU-4|Gadget\n";

static void test_walk(void)
{
    build_walk();
    record_t record = {0};
    walklist_scanner_v1_LoadListResponse walk;
    CHECK_INT(decode_walk(&walk_payload, walk_payload.len, &record, &walk), WL_SCANNER_OK);
    CHECK_STR(record.text, walk_text);
    CHECK_STR(walk.name, "Aisle 3");
    CHECK(walk.truncated);
    CHECK(walk.stops.funcs.decode == NULL && walk.stops.arg == NULL);

    /* NULL handlers skip their entries but the payload is still checked. */
    wl_scanner_walk_handler_t only_stops = {.stop = on_stop, .context = &record};
    record.len = 0;
    record.text[0] = '\0';
    pb_istream_t stream = pb_istream_from_buffer(walk_payload.bytes, walk_payload.len);
    CHECK_INT(wl_scanner_decode_load_list(&stream, &only_stops, &walk), WL_SCANNER_OK);
    CHECK_STR(record.text, "stop A-2@WH1|SKU-2 x7|Red widget\n"
                           "stop A-10@WH2|SKU-1 x300000|Gr\xc3\xb6\xc3\x9f"
                           "e 2\n");

    /* A handler may stop the decode. */
    record = (record_t){.stop_after = 2};
    CHECK_INT(decode_walk(&walk_payload, walk_payload.len, &record, &walk), WL_SCANNER_ESTOPPED);
    CHECK_STR(record.text, "stop A-2@WH1|SKU-2 x7|Red widget\n"
                           "stop A-10@WH2|SKU-1 x300000|Gr\xc3\xb6\xc3\x9f"
                           "e 2\n");

    /* Unknown fields (a newer server) are skipped. */
    writer_t *w = &walk_payload;
    put_uint(w, 15, 42);
    put_string(w, 16, "later");
    record = (record_t){0};
    CHECK_INT(decode_walk(w, w->len, &record, &walk), WL_SCANNER_OK);
    CHECK_STR(record.text, walk_text);

    /* An empty walk is an empty message. */
    writer_t *empty = calloc(1, sizeof(*empty));
    record = (record_t){0};
    CHECK_INT(decode_walk(empty, 0, &record, &walk), WL_SCANNER_OK);
    CHECK_STR(record.text, "");
    CHECK_STR(walk.name, "");
    CHECK(!walk.truncated);
    free(empty);
}

/* Every cut of the payload either ends between two top-level fields (a shorter valid walk)
 * or is refused; it never hands out a partial entry. */
static void test_truncated_input(void)
{
    build_walk();
    size_t boundaries[16], count = 0;
    {
        pb_istream_t s = pb_istream_from_buffer(walk_payload.bytes, walk_payload.len);
        boundaries[count++] = 0;
        pb_wire_type_t type;
        uint32_t tag;
        bool eof;
        while (pb_decode_tag(&s, &type, &tag, &eof) && pb_skip_field(&s, type))
            boundaries[count++] = walk_payload.len - s.bytes_left;
    }
    CHECK_INT(count, 10);
    for (size_t len = 0; len < walk_payload.len; len++) {
        bool boundary = false;
        for (size_t i = 0; i < count; i++)
            boundary |= boundaries[i] == len;
        record_t record = {0};
        walklist_scanner_v1_LoadListResponse walk;
        int rc = decode_walk(&walk_payload, len, &record, &walk);
        if (rc != (boundary ? WL_SCANNER_OK : WL_SCANNER_EDECODE))
            FAIL("cut at %zu of %zu: %s", len, walk_payload.len, wl_scanner_strerror(rc));
        /* What was delivered is a prefix of the whole walk. */
        if (strncmp(record.text, walk_text, record.len) != 0)
            FAIL("cut at %zu delivered \"%s\"", len, record.text);
    }
}

static void test_bounds(void)
{
    writer_t *w = calloc(1, sizeof(*w));
    record_t record = {0};
    walklist_scanner_v1_LoadListResponse walk;
    char text[400];

    /* 256 bytes is the most a code may have; 257 is over the bound. */
    memset(text, 'B', 256);
    text[256] = '\0';
    put_stop(w, text, "WH1", "SKU-1", 1, "n");
    CHECK_INT(decode_walk(w, w->len, &record, &walk), WL_SCANNER_OK);
    w->len = 0;
    strcat(text, "B");
    put_stop(w, text, "WH1", "SKU-1", 1, "n");
    CHECK_INT(decode_walk(w, w->len, &record, &walk), WL_SCANNER_EDECODE);
    w->len = 0;
    put_string(w, 4, text);
    CHECK_INT(decode_walk(w, w->len, &record, &walk), WL_SCANNER_EDECODE);

    /* Names: 48 bytes for products, 64 for the list. */
    memset(text, 'n', 49);
    text[49] = '\0';
    w->len = 0;
    put_pair(w, 5, "SKU-1", text);
    CHECK_INT(decode_walk(w, w->len, &record, &walk), WL_SCANNER_EDECODE);
    text[48] = '\0';
    w->len = 0;
    put_pair(w, 5, "SKU-1", text);
    CHECK_INT(decode_walk(w, w->len, &record, &walk), WL_SCANNER_OK);
    memset(text, 'n', 65);
    text[65] = '\0';
    w->len = 0;
    put_string(w, 1, text);
    CHECK_INT(decode_walk(w, w->len, &record, &walk), WL_SCANNER_EDECODE);

    /* Garbage: a bad wire type, an overlong varint, a length beyond the input. */
    const char *garbage[] = {"\x0f", "\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
                             "\x12\xff\xff\xff\xff\x0f", "\x12\x05\x0a\x01"};
    size_t garbage_len[] = {1, 12, 6, 4};
    for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
        memcpy(w->bytes, garbage[i], garbage_len[i]);
        CHECK_INT(decode_walk(w, garbage_len[i], &record, &walk), WL_SCANNER_EDECODE);
    }
    free(w);
}

static void test_queue(void)
{
    writer_t *w = calloc(1, sizeof(*w));
    for (int i = 0; i < 2; i++) {
        scratch.len = 0;
        put_string(&scratch, 1, i == 0 ? "aaaaaaaaaaaaaaaaaaaaaa" : "bbbbbbbbbbbbbbbbbbbbbb");
        put_string(&scratch, 2, i == 0 ? "Aisle 3" : "Aisle 4");
        put_uint(&scratch, 3, 12);
        put_uint(&scratch, 4, 1714557127);
        put_message(w, 1, &scratch);
    }
    put_uint(w, 2, 1);
    walklist_scanner_v1_ListPendingResponse queue;
    pb_istream_t stream = pb_istream_from_buffer(w->bytes, w->len);
    CHECK_INT(wl_scanner_decode_list_pending(&stream, &queue), WL_SCANNER_OK);
    CHECK_INT(queue.lists_count, 2);
    CHECK_STR(queue.lists[1].id, "bbbbbbbbbbbbbbbbbbbbbb");
    CHECK_STR(queue.lists[1].name, "Aisle 4");
    CHECK_INT(queue.lists[0].codes_count, 12);
    CHECK_INT(queue.lists[0].created_at, 1714557127);
    CHECK(queue.more);

    /* Eleven lists are one more than the device has room for. */
    w->len = 0;
    for (int i = 0; i < 11; i++) {
        scratch.len = 0;
        put_string(&scratch, 1, "x");
        put_message(w, 1, &scratch);
    }
    stream = pb_istream_from_buffer(w->bytes, w->len);
    CHECK_INT(wl_scanner_decode_list_pending(&stream, &queue), WL_SCANNER_EDECODE);
    stream = pb_istream_from_buffer(w->bytes, w->len - 1);
    CHECK_INT(wl_scanner_decode_list_pending(&stream, &queue), WL_SCANNER_EDECODE);
    free(w);
}

static void test_requests(void)
{
    uint8_t buf[64];
    size_t len = 99;
    CHECK_INT(wl_scanner_encode_list_pending(buf, sizeof(buf), &len), WL_SCANNER_OK);
    CHECK_INT(len, 0);
    CHECK_INT(wl_scanner_encode_load_list("abc", buf, sizeof(buf), &len), WL_SCANNER_OK);
    CHECK_INT(len, 5);
    CHECK(memcmp(buf,
                 "\x0a\x03"
                 "abc",
                 5) == 0);
    char id[42];
    memset(id, 'a', 40);
    id[40] = '\0';
    CHECK_INT(wl_scanner_encode_load_list(id, buf, WL_SCANNER_LOAD_LIST_REQUEST_SIZE, &len),
              WL_SCANNER_OK);
    CHECK_INT(len, 42);
    CHECK_INT(wl_scanner_encode_load_list(id, buf, 41, &len), WL_SCANNER_EBUFFER);
    strcat(id, "a");
    CHECK_INT(wl_scanner_encode_load_list(id, buf, sizeof(buf), &len), WL_SCANNER_EARGUMENT);
    CHECK_INT(wl_scanner_encode_load_list("", buf, sizeof(buf), &len), WL_SCANNER_EARGUMENT);
    CHECK_INT(wl_scanner_encode_load_list(NULL, buf, sizeof(buf), &len), WL_SCANNER_EARGUMENT);
}

/* nanopb allocates only for FT_POINTER fields: none means no heap on the device. */
static void test_no_pointer_fields(void)
{
    const pb_msgdesc_t *messages[] = {
        walklist_scanner_v1_ListPendingRequest_fields,
        walklist_scanner_v1_PendingList_fields,
        walklist_scanner_v1_ListPendingResponse_fields,
        walklist_scanner_v1_LoadListRequest_fields,
        walklist_scanner_v1_Stop_fields,
        walklist_scanner_v1_AmbiguousMatch_fields,
        walklist_scanner_v1_Unlocated_fields,
        walklist_scanner_v1_LoadListResponse_fields,
    };
    static uint8_t any_message[4096];
    for (size_t i = 0; i < sizeof(messages) / sizeof(messages[0]); i++) {
        pb_field_iter_t field;
        if (!pb_field_iter_begin(&field, messages[i], any_message))
            continue;
        do {
            CHECK(PB_ATYPE(field.type) != PB_ATYPE_POINTER);
        } while (pb_field_iter_next(&field));
    }
}

/* --- a 200-code walk through a small read buffer, on a measured stack --------------------- */

#define SOURCE_CHUNK 64 /* bytes handed over per read, as from a small UART or socket buffer */

typedef struct {
    const uint8_t *data;
    size_t len, pos;
} source_t;

/* A stream of unknown length that ends like a socket: bytes_left 0 when nothing is left. */
static bool read_source(pb_istream_t *stream, pb_byte_t *buf, size_t count)
{
    source_t *source = stream->state;
    while (count > 0) {
        if (source->pos == source->len) {
            stream->bytes_left = 0;
            return false;
        }
        size_t n = source->len - source->pos;
        if (n > count)
            n = count;
        if (n > SOURCE_CHUNK)
            n = SOURCE_CHUNK;
        memcpy(buf, source->data + source->pos, n);
        source->pos += n;
        buf += n;
        count -= n;
    }
    return true;
}

typedef struct {
    size_t stops;
    uint64_t quantity_sum;
} tally_t;

static bool tally_stop(void *context, const walklist_scanner_v1_Stop *stop)
{
    tally_t *tally = context;
    tally->stops++;
    tally->quantity_sum += stop->quantity;
    return true;
}

typedef struct {
    const writer_t *payload;
    uintptr_t entry_sp;
    int rc;
    tally_t tally;
} walk_job_t;

static void *decode_on_stack(void *arg)
{
    walk_job_t *job = arg;
    volatile char marker = 0;
    job->entry_sp = (uintptr_t)&marker;
    source_t source = {job->payload->bytes, job->payload->len, 0};
    pb_istream_t stream = {read_source, &source, SIZE_MAX, NULL};
    wl_scanner_walk_handler_t handler = {.stop = tally_stop, .context = &job->tally};
    walklist_scanner_v1_LoadListResponse walk;
    job->rc = wl_scanner_decode_load_list(&stream, &handler, &walk);
    return NULL;
}

static void test_big_walk_stack(void)
{
    writer_t *w = calloc(1, sizeof(*w));
    put_string(w, 1, "Full list");
    uint64_t expected_sum = 0;
    for (int p = 0; p < 200; p++) {
        for (int b = 0; b < 3; b++) {
            char bin[16], sku[16];
            snprintf(bin, sizeof(bin), "R%02d-%04d-%d", b, p, b);
            snprintf(sku, sizeof(sku), "SKU-%04d", p);
            put_stop(w, bin, "WH1", sku, (uint32_t)(10 + p),
                     "Heavy duty shelf bracket galvanised steel 300 mm");
            expected_sum += (uint64_t)(10 + p);
        }
    }
    fprintf(stderr, "600-stop walk: %zu bytes\n", w->len);

    enum { STACK_SIZE = 256 * 1024, PAINT = 0xA5 };
    uint8_t *stack = aligned_alloc(4096, STACK_SIZE);
    memset(stack, PAINT, STACK_SIZE);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, stack, STACK_SIZE);
    walk_job_t job = {.payload = w};
    pthread_t thread;
    CHECK_INT(pthread_create(&thread, &attr, decode_on_stack, &job), 0);
    pthread_join(thread, NULL);
    pthread_attr_destroy(&attr);
    size_t untouched = 0;
    while (untouched < STACK_SIZE && stack[untouched] == PAINT)
        untouched++;
    size_t used = job.entry_sp - ((uintptr_t)stack + untouched);
    fprintf(stderr, "decode stack (below the thread's entry, handler included): %zu bytes\n", used);
    CHECK_INT(job.rc, WL_SCANNER_OK);
    CHECK_INT(job.tally.stops, 600);
    CHECK_INT(job.tally.quantity_sum, expected_sum);
#if !defined(__SANITIZE_ADDRESS__) /* sanitizers add redzones to every frame */
    CHECK(used < 3 * 1024);
#endif
    free(stack);
    free(w);
}

int main(void)
{
    test_walk();
    test_truncated_input();
    test_bounds();
    test_queue();
    test_requests();
    test_no_pointer_fields();
    test_big_walk_stack();
    return test_exit();
}
