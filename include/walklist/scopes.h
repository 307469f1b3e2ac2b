/*
 * API key scopes (a key without the scope a method needs gets 403): their names and bits,
 * one X-macro for both, the "a,b" text form keys are created with and stored in, and the principal
 * a key stands for. Pure: no I/O, no allocation. The store (keys, admissions), the services (method
 * policies) and the programs all take them from here.
 */
#ifndef WALKLIST_SCOPES_H
#define WALKLIST_SCOPES_H

#include <stddef.h>
#include <stdint.h>

#include "walklist/error.h"

#define WL_SCOPE_MAP(XX)                                                                           \
    XX(LISTS_WRITE, 1u << 0, "lists:write")                                                        \
    XX(STOCK_READ, 1u << 1, "stock:read")                                                          \
    XX(SCANNER, 1u << 2, "scanner")                                                                \
    XX(INVENTORY_WRITE, 1u << 3, "inventory:write")

enum {
#define XX(name, bit, text) WL_SCOPE_##name = bit,
    WL_SCOPE_MAP(XX)
#undef XX
};

/**
 * Parses "a,b,c" into scope bits. WL_EINVAL with a violation for the field "scopes" for an
 * empty entry, an unknown scope (named) or no scope at all.
 */
int wl_scopes_parse(const char *text, unsigned *scopes, wl_error_t *err) WL_CHECK_RESULT;

/** Writes "a,b" for the scope bits into buf (size >= 1 bytes; cut short when it is too small). */
void wl_scopes_format(unsigned scopes, char *buf, size_t size);

/** The caller an API key stands for. */
typedef struct {
    int64_t org_id;
    char org_slug[64];
    char key_prefix[16];
    unsigned scopes;
} wl_principal_t;

#endif
