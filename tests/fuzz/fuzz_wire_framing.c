/*
 * The framing tracker in front of libmicrohttpd (gateway/http/wire_framing.c): the input is what
 * a client sends on one connection, its first byte how the kernel cuts it into reads. What must
 * hold: the verdict (and its reason) does not depend on how the bytes were cut, since a client
 * controls that; a refusal is a sentence; the tracker never reads past what it is given.
 */
#include <string.h>

#include "fuzz.h"
#include "http/wire_framing.h"

/* Feeds data in reads of at most piece bytes; the reason of the first refusal, or NULL. */
static const char *verdict(const uint8_t *data, size_t size, size_t piece, size_t *refused_at)
{
    wl_wire_framing_t framing;
    memset(&framing, 0, sizeof(framing));
    for (size_t at = 0; at < size; at += piece) {
        size_t n = size - at < piece ? size - at : piece;
        const char *why = wl_wire_framing_feed(&framing, data + at, n);
        if (why != NULL) {
            *refused_at = at;
            return why;
        }
    }
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t piece = (size_t)data[0] % 17 + 1;
    data++, size--;
    size_t whole_at = 0, cut_at = 0;
    const char *whole = verdict(data, size, size > 0 ? size : 1, &whole_at);
    const char *cut = verdict(data, size, piece, &cut_at);
    FUZZ_CHECK((whole == NULL) == (cut == NULL));
    if (whole != NULL) {
        FUZZ_CHECK(strcmp(whole, cut) == 0);
        FUZZ_CHECK(whole[0] != '\0' && strlen(whole) < 200);
    }
    /* One byte at a time is the finest cut of all. */
    size_t byte_at = 0;
    const char *bytewise = verdict(data, size, 1, &byte_at);
    FUZZ_CHECK((bytewise == NULL) == (whole == NULL));
    return 0;
}
