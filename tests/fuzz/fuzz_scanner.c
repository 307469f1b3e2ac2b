/*
 * The device's side of the device transport (src/scanner/scanner_client.c): the input is a
 * response body from the network. Bit 0 of the first byte picks the response, the other bits
 * after how many walk entries a handler stops the decode (0: never). Every string handed out is
 * NUL-terminated within its bound, and a stop is reported as a stop.
 */
#include <string.h>

#include "fuzz.h"
#include "walklist/scanner_client.h"

typedef struct {
    unsigned entries, stop_after;
} walk_t;

static bool entry(walk_t *walk)
{
    return walk->stop_after == 0 || ++walk->entries < walk->stop_after;
}

#define BOUNDED(s) FUZZ_CHECK(memchr((s), '\0', sizeof(s)) != NULL)

static bool on_stop(void *context, const walklist_scanner_v1_Stop *stop)
{
    BOUNDED(stop->bin);
    BOUNDED(stop->warehouse);
    BOUNDED(stop->sku);
    BOUNDED(stop->name);
    return entry(context);
}

static bool on_ambiguous(void *context, const walklist_scanner_v1_AmbiguousMatch *match)
{
    BOUNDED(match->code);
    BOUNDED(match->sku);
    return entry(context);
}

static bool on_not_found(void *context, const char *code)
{
    FUZZ_CHECK(strlen(code) < WL_SCANNER_CODE_SIZE);
    return entry(context);
}

static bool on_unlocated(void *context, const walklist_scanner_v1_Unlocated *product)
{
    BOUNDED(product->sku);
    BOUNDED(product->name);
    return entry(context);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    pb_istream_t stream = pb_istream_from_buffer(data + 1, size - 1);
    if (data[0] % 2 == 0) {
        walklist_scanner_v1_ListPendingResponse pending;
        if (wl_scanner_decode_list_pending(&stream, &pending) == WL_SCANNER_OK) {
            FUZZ_CHECK(pending.lists_count <= sizeof(pending.lists) / sizeof(pending.lists[0]));
            for (pb_size_t i = 0; i < pending.lists_count; i++) {
                BOUNDED(pending.lists[i].id);
                BOUNDED(pending.lists[i].name);
            }
        }
        return 0;
    }
    walk_t walk = {0, data[0] / 2u};
    wl_scanner_walk_handler_t handler = {on_stop, on_ambiguous, on_not_found, on_unlocated, &walk};
    walklist_scanner_v1_LoadListResponse response;
    int rc = wl_scanner_decode_load_list(&stream, &handler, &response);
    FUZZ_CHECK(rc == WL_SCANNER_OK || rc == WL_SCANNER_EDECODE || rc == WL_SCANNER_ESTOPPED);
    FUZZ_CHECK((rc == WL_SCANNER_ESTOPPED) ==
               (walk.stop_after > 0 && walk.entries >= walk.stop_after));
    FUZZ_CHECK(response.stops.funcs.decode == NULL && response.unlocated.arg == NULL);
    if (rc == WL_SCANNER_OK)
        BOUNDED(response.name);
    return 0;
}
