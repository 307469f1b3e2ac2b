/*
 * Unguessable identifiers from the operating system's CSPRNG: list ids and
 * API key material.
 */
#ifndef WALKLIST_RANDOM_H
#define WALKLIST_RANDOM_H

#include <stddef.h>

#include "walklist/error.h"

/**
 * Fills buf with len bytes from getrandom(2). Small requests are served from
 * a block each thread draws at once (every byte handed out once, then
 * wiped), so a process must not fork between draws: the child would repeat
 * the parent's block.
 */
int wl_random_bytes(void *buf, size_t len) WL_CHECK_RESULT;

/** Writes len random base62 characters and a NUL (out holds len + 1 bytes). */
int wl_random_base62(char *out, size_t len) WL_CHECK_RESULT;

/** Writes an id of 132 random bits as 22 base64url characters and a NUL (out holds 23). */
int wl_random_id(char out[23]) WL_CHECK_RESULT;

#endif
