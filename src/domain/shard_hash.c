/* PostgreSQL's hash of a bigint, as Citus places rows by it, is computed here. */
#include "domain/shard_hash.h"

static uint32_t rotate_left(uint32_t x, int k)
{
    return (x << k) | (x >> (32 - k));
}

/* Bob Jenkins' lookup3 final mix, as PostgreSQL's hash_bytes_uint32 ends with it
 * (src/common/hashfn.c). */
static uint32_t hash_uint32(uint32_t k)
{
    uint32_t a, b, c;
    a = b = c = 0x9e3779b9u + (uint32_t)sizeof(uint32_t) + 3923095u;
    a += k;
    c ^= b;
    c -= rotate_left(b, 14);
    a ^= c;
    a -= rotate_left(c, 11);
    b ^= a;
    b -= rotate_left(a, 25);
    c ^= b;
    c -= rotate_left(b, 16);
    a ^= c;
    a -= rotate_left(c, 4);
    b ^= a;
    b -= rotate_left(a, 14);
    c ^= b;
    c -= rotate_left(b, 24);
    return c;
}

int32_t wl_shard_hash_int8(int64_t value)
{
    /* hashint8: both halves folded so that a bigint holding an int4's value hashes as that
     * int4 does (cross-type hash joins); the high half inverted for negative values. */
    uint32_t low = (uint32_t)value;
    uint32_t high = (uint32_t)((uint64_t)value >> 32);
    low ^= value >= 0 ? high : ~high;
    return (int32_t)hash_uint32(low);
}
