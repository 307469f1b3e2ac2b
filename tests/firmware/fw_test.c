/*
 * The test image: the scanner firmware library on a Cortex-M4 under QEMU (mps2-an386). It reads
 * answers recorded from a real walklistd (files named in cases.txt, read through semihosting),
 * decodes each with the library, delivered in fragments of several sizes, and prints every entry
 * so that the host test (tests/e2e/test_firmware.c) can compare them with what walklistd sent.
 * It also measures the stack the library needs (a painted stack) and the instructions it takes
 * per stop (QEMU's -icount clock through a CMSDK timer, calibrated on a loop of known length).
 *
 * cases.txt: one "walk FILE", "queue FILE" or "bench FILE" a line. Output, per case and
 * fragment size: "== FILE FRAGMENT", the entries, "result CODE TEXT"; then "stack BYTES" lines
 * and, for bench, "bench stops=N ticks=T calibration_instructions=I calibration_ticks=C".
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "semihost.h"
#include "walklist/scanner_exchange.h"

#define RECEIVE_BUFFER_SIZE 256 /* the library's receive buffer, as small firmware would use */
#define BODY_LIMIT          (2u << 20)

/* --- output, gathered in RAM and written once per case (semihosting calls are slow) ------------
 */

static char output[512 * 1024];
static size_t output_len;

static void out(const char *text, size_t len)
{
    if (len > sizeof(output) - output_len)
        len = sizeof(output) - output_len;
    memcpy(output + output_len, text, len);
    output_len += len;
}

static void out_str(const char *text)
{
    out(text, strlen(text));
}

static void out_int(long long value)
{
    char digits[24];
    size_t n = sizeof(digits);
    unsigned long long v = value < 0 ? (unsigned long long)-value : (unsigned long long)value;
    do {
        digits[--n] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    if (value < 0)
        digits[--n] = '-';
    out(digits + n, sizeof(digits) - n);
}

static void flush(void)
{
    sh_write(output, output_len);
    output_len = 0;
}

/* --- the walk's entries, printed as the decoder hands them over --------------------------------
 */

static bool print_stop(void *context, const walklist_scanner_v1_Stop *stop)
{
    (*(unsigned *)context)++;
    out_str("stop ");
    out_str(stop->bin);
    out_str("\t");
    out_str(stop->warehouse);
    out_str("\t");
    out_str(stop->sku);
    out_str("\t");
    out_int(stop->quantity);
    out_str("\t");
    out_str(stop->name);
    out_str("\n");
    return true;
}

static bool print_ambiguous(void *context, const walklist_scanner_v1_AmbiguousMatch *match)
{
    (void)context;
    out_str("ambiguous ");
    out_str(match->code);
    out_str("\t");
    out_str(match->sku);
    out_str("\n");
    return true;
}

static bool print_not_found(void *context, const char *code)
{
    (void)context;
    out_str("not_found ");
    out_str(code);
    out_str("\n");
    return true;
}

static bool print_unlocated(void *context, const walklist_scanner_v1_Unlocated *product)
{
    (void)context;
    out_str("unlocated ");
    out_str(product->sku);
    out_str("\t");
    out_str(product->name);
    out_str("\n");
    return true;
}

static bool count_stop(void *context, const walklist_scanner_v1_Stop *stop)
{
    (void)stop;
    (*(unsigned *)context)++;
    return true;
}

/* --- transports: a semihosted file in fragments, or RAM ----------------------------------------
 */

typedef struct {
    int handle;
    size_t fragment;
} file_wire_t;

static int file_recv(void *io, uint8_t *buf, size_t size)
{
    file_wire_t *wire = io;
    return sh_read(wire->handle, buf, size < wire->fragment ? size : wire->fragment);
}

typedef struct {
    const uint8_t *data;
    size_t len, pos, fragment;
} ram_wire_t;

static int ram_recv(void *io, uint8_t *buf, size_t size)
{
    ram_wire_t *wire = io;
    size_t n = wire->len - wire->pos;
    if (n > size)
        n = size;
    if (n > wire->fragment)
        n = wire->fragment;
    memcpy(buf, wire->data + wire->pos, n);
    wire->pos += n;
    return (int)n;
}

/* --- one case ----------------------------------------------------------------------------------
 */

enum { KIND_WALK, KIND_QUEUE };

static void print_error(const wl_scanner_error_t *err)
{
    out_str("error http=");
    out_int(err->http_status);
    out_str(" status=");
    out_str(err->status);
    out_str(" retry_after=");
    out_int(err->retry_after);
    out_str(" message=");
    out_str(err->message);
    out_str("\n");
}

static void print_queue(const walklist_scanner_v1_ListPendingResponse *queue)
{
    for (pb_size_t i = 0; i < queue->lists_count; i++) {
        out_str("list ");
        out_str(queue->lists[i].id);
        out_str("\t");
        out_int((long long)queue->lists[i].created_at);
        out_str("\t");
        out_int(queue->lists[i].codes_count);
        out_str("\t");
        out_str(queue->lists[i].name);
        out_str("\n");
    }
    out_str("more ");
    out_int(queue->more);
    out_str("\n");
}

/* Each answer's decoder state lives in its own frame, so the painted stack counts it. */
__attribute__((noinline)) static int run_walk(wl_scanner_recv_t recv, void *io,
                                              const wl_scanner_walk_handler_t *handler)
{
    uint8_t rx[RECEIVE_BUFFER_SIZE];
    wl_scanner_exchange_t ex;
    wl_scanner_exchange_init(&ex, recv, io, rx, sizeof(rx), BODY_LIMIT);
    wl_scanner_error_t err = {0};
    walklist_scanner_v1_LoadListResponse walk;
    int rc = wl_scanner_receive_load_list(&ex, handler, &walk, &err);
    if (rc == WL_SCANNER_OK) {
        out_str("walk ");
        out_str(walk.name);
        out_str(" truncated=");
        out_int(walk.truncated);
        out_str("\n");
    }
    if (wl_scanner_is_server_error(rc))
        print_error(&err);
    return rc;
}

__attribute__((noinline)) static int run_queue(wl_scanner_recv_t recv, void *io)
{
    uint8_t rx[RECEIVE_BUFFER_SIZE];
    wl_scanner_exchange_t ex;
    wl_scanner_exchange_init(&ex, recv, io, rx, sizeof(rx), BODY_LIMIT);
    wl_scanner_error_t err = {0};
    walklist_scanner_v1_ListPendingResponse queue; /* ten lists: 1.2 KiB */
    int rc = wl_scanner_receive_list_pending(&ex, &queue, &err);
    if (rc == WL_SCANNER_OK)
        print_queue(&queue);
    if (wl_scanner_is_server_error(rc))
        print_error(&err);
    return rc;
}

static int run_case(int kind, wl_scanner_recv_t recv, void *io,
                    const wl_scanner_walk_handler_t *handler)
{
    return kind == KIND_WALK ? run_walk(recv, io, handler) : run_queue(recv, io);
}

/* --- measuring: a painted stack, and QEMU's instruction clock ----------------------------------
 */

extern uint32_t __stack_bottom;
#define PAINT 0xA5A5A5A5u

static inline __attribute__((always_inline)) uintptr_t stack_pointer(void)
{
    uintptr_t sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    return sp;
}

/* Paints the free stack below this function's own frame. */
__attribute__((noinline)) static void paint_stack(void)
{
    uintptr_t sp = stack_pointer();
    for (uint32_t *p = &__stack_bottom; (uintptr_t)p < sp - 64; p++)
        *p = PAINT;
}

static size_t stack_used(uintptr_t top)
{
    const uint32_t *p = &__stack_bottom;
    while (*p == PAINT)
        p++;
    return (size_t)(top - (uintptr_t)p);
}

/* CMSDK APB timer 0 of the board, counting down at the 25 MHz system clock. */
#define TIMER_CTRL  (*(volatile uint32_t *)0x40000000u)
#define TIMER_VALUE (*(volatile uint32_t *)0x40000004u)
#define TIMER_LOAD  (*(volatile uint32_t *)0x40000008u)

static void timer_start(void)
{
    TIMER_CTRL = 0;
    TIMER_LOAD = 0xFFFFFFFFu;
    TIMER_VALUE = 0xFFFFFFFFu;
    TIMER_CTRL = 1;
}

static uint32_t timer_ticks(void)
{
    return 0xFFFFFFFFu - TIMER_VALUE;
}

#define CALIBRATION_LOOPS 1000000u

/* 2 instructions a turn (subs, bne), so the clock's instructions per tick can be read off. */
static uint32_t calibrate(void)
{
    uint32_t n = CALIBRATION_LOOPS;
    timer_start();
    uint32_t start = timer_ticks();
    __asm__ volatile("1: subs %0, %0, #1\n bne 1b" : "+r"(n) : : "cc");
    return timer_ticks() - start;
}

static uint8_t bench_body[256 * 1024];

static int bench(const char *file)
{
    int handle = sh_open(file);
    if (handle < 0)
        return -1;
    size_t len = 0;
    int n;
    while ((n = sh_read(handle, bench_body + len, sizeof(bench_body) - len)) > 0)
        len += (size_t)n;
    sh_close(handle);
    unsigned stops = 0;
    wl_scanner_walk_handler_t handler = {.stop = count_stop, .context = &stops};
    ram_wire_t wire = {bench_body, len, 0, 1460}; /* one TCP segment at a time */
    uint32_t calibration = calibrate();
    timer_start();
    uint32_t start = timer_ticks();
    int rc = run_case(KIND_WALK, ram_recv, &wire, &handler);
    uint32_t ticks = timer_ticks() - start;
    out_str("bench ");
    out_str(file);
    out_str(" result=");
    out_int(rc);
    out_str(" bytes=");
    out_int((long long)len);
    out_str(" stops=");
    out_int(stops);
    out_str(" ticks=");
    out_int(ticks);
    out_str(" calibration_instructions=");
    out_int(2ll * CALIBRATION_LOOPS);
    out_str(" calibration_ticks=");
    out_int(calibration);
    out_str("\n");
    flush();
    return rc;
}

/* --- cases.txt ---------------------------------------------------------------------------------
 */

static const size_t fragments[] = {4096, 1, 7, 61};

static int run_file(int kind, const char *file)
{
    int failures = 0;
    for (size_t f = 0; f < sizeof(fragments) / sizeof(fragments[0]); f++) {
        file_wire_t wire = {sh_open(file), fragments[f]};
        if (wire.handle < 0) {
            out_str("cannot open ");
            out_str(file);
            out_str("\n");
            flush();
            return 1;
        }
        unsigned stops = 0;
        wl_scanner_walk_handler_t handler = {print_stop, print_ambiguous, print_not_found,
                                             print_unlocated, &stops};
        out_str("== ");
        out_str(file);
        out_str(" ");
        out_int((long long)fragments[f]);
        out_str("\n");
        uintptr_t top = stack_pointer(); /* run_walk's or run_queue's frame starts here */
        paint_stack();
        int rc = run_case(kind, file_recv, &wire, &handler);
        size_t used = stack_used(top);
        sh_close(wire.handle);
        out_str("result ");
        out_int(rc);
        out_str(" ");
        out_str(wl_scanner_strerror(rc));
        out_str("\nstack ");
        out_int((long long)used);
        out_str(" stops=");
        out_int(stops);
        out_str("\n");
        flush();
        failures += rc < 0 && !wl_scanner_is_server_error(rc);
    }
    return failures;
}

int main(void)
{
    static char manifest[4096];
    int handle = sh_open("cases.txt");
    if (handle < 0) {
        sh_write("cannot open cases.txt\n", 22);
        return 1;
    }
    int len = sh_read(handle, manifest, sizeof(manifest) - 1);
    sh_close(handle);
    if (len <= 0)
        return 1;
    manifest[len] = '\0';
    int failures = 0;
    for (char *line = manifest; *line != '\0';) {
        char *end = strchr(line, '\n');
        if (end != NULL)
            *end = '\0';
        char *file = strchr(line, ' ');
        if (file != NULL) {
            *file++ = '\0';
            if (strcmp(line, "walk") == 0)
                failures += run_file(KIND_WALK, file);
            else if (strcmp(line, "queue") == 0)
                failures += run_file(KIND_QUEUE, file);
            else if (strcmp(line, "bench") == 0)
                failures += bench(file) != 0;
        }
        if (end == NULL)
            break;
        line = end + 1;
    }
    return failures == 0 ? 0 : 1;
}
