/*
 * The messages of a gRPC answer, gzip-coded by walklistd when the call's coding is gzip:
 * zlib level 1 like every other answer of walklistd, where gRPC's core would code them at
 * zlib's default level, three times slower on a large export (docs/clients.md). The coding
 * itself stays the core's choice, made from the client's grpc-accept-encoding; the core tells
 * it only through grpc_call_compression_for_level, a function of its own without a C
 * declaration. The build binds it where it links (WL_GRPC_CODING_QUERY); where it does not,
 * messages go plain and the core codes them as it always did.
 */
#ifndef WALKLIST_GATEWAY_GRPC_CODING_H
#define WALKLIST_GATEWAY_GRPC_CODING_H

#include <grpc/grpc.h>
#include <stdbool.h>
#include <stddef.h>

/**
 * True when walklistd codes call's large messages itself: the call's answers are gzip-coded
 * (the client takes gzip) and the build could ask the core so.
 */
bool wl_grpc_codes_answers(grpc_call *call);

/**
 * The message whose bytes are plain (taken: unreferenced here), gzip-coded when coded
 * (wl_grpc_codes_answers) and worth it (wl_gzip_worth), else as it is (the core codes it when
 * worth it, as ever; also when coding ran out of memory). Owned by the caller
 * (grpc_byte_buffer_destroy).
 */
grpc_byte_buffer *wl_grpc_message(grpc_slice plain, bool coded);

#endif
