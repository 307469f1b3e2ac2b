/* gzip-coded gRPC messages: see grpc_coding.h for why walklistd codes them itself. */
#include "protocols/grpc_coding.h"

#include <grpc/byte_buffer.h>
#include <grpc/compression.h>
#include <stdlib.h>

#include "http/generator.h"
#include "http/gzip_filter.h"
#include "walklist/error.h"

#ifdef WL_GRPC_CODING_QUERY
/* The core's answer to "which coding does this call's level mean", declared in its private
 * call.h without extern "C": bound by its C++ name, which CMake checked links. */
grpc_compression_algorithm
wl_grpc_core_coding_for_level(grpc_call *call, grpc_compression_level level) __asm__(
    "_Z31grpc_call_compression_for_levelP9grpc_call22grpc_compression_level");
#endif

bool wl_grpc_codes_answers(grpc_call *call)
{
#ifdef WL_GRPC_CODING_QUERY
    /* GRPC_COMPRESS_LEVEL_LOW: the server's default level (grpc_server.c's channel). */
    return wl_grpc_core_coding_for_level(call, GRPC_COMPRESS_LEVEL_LOW) == GRPC_COMPRESS_GZIP;
#else
    (void)call;
    return false;
#endif
}

grpc_byte_buffer *wl_grpc_message(grpc_slice plain, bool coded)
{
    size_t len = GRPC_SLICE_LENGTH(plain);
    if (coded && wl_gzip_worth(len)) {
        wl_piece_t gz = {0};
        wl_error_t err;
        wl_error_init(&err);
        if (wl_gzip_append((const char *)GRPC_SLICE_START_PTR(plain), len, &gz, &err) == 0) {
            grpc_slice_unref(plain);
            /* The piece's memory becomes the slice's, freed by gRPC once sent. */
            grpc_slice slice = grpc_slice_new(gz.base, gz.len, free);
            /* Marked gzip, the core sends it as it is, flagged compressed. */
            grpc_byte_buffer *message =
                grpc_raw_compressed_byte_buffer_create(&slice, 1, GRPC_COMPRESS_GZIP);
            grpc_slice_unref(slice);
            return message;
        }
        wl_piece_dispose(&gz);
    }
    grpc_byte_buffer *message = grpc_raw_byte_buffer_create(&plain, 1);
    grpc_slice_unref(plain);
    return message;
}
