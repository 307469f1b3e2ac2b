/*
 * wl_shard_hash_int8 is PostgreSQL's hashint8, the hash Citus places an org_id's rows by:
 * checked against the database's own function for values of every kind (zero, small and large,
 * negative, the int64 limits, values past 32 bits).
 */
#include <stdio.h>
#include <stdlib.h>

#include "domain/shard_hash.h"
#include "test.h"
#include "testdb.h"

int main(void)
{
    PGconn *db = testdb_connect(testdb_create("integration_shard_hash"));
    int64_t values[200];
    int count = 0;
    const int64_t fixed[] = {0,
                             1,
                             -1,
                             2,
                             42,
                             123456789,
                             -123456789,
                             2147483647,
                             2147483648,
                             -2147483648LL,
                             -2147483649LL,
                             INT64_MAX,
                             INT64_MIN,
                             4294967296LL,
                             -4294967296LL};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        values[count++] = fixed[i];
    /* Organization ids as a sequence makes them, and a spread of 64-bit values. */
    uint64_t x = 0x9e3779b97f4a7c15u;
    while (count < 200) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        values[count] = count % 2 ? (int64_t)(count * 7919) : (int64_t)x;
        count++;
    }
    for (int i = 0; i < count; i++) {
        char sql[96];
        snprintf(sql, sizeof(sql), "SELECT hashint8('%lld'::bigint)", (long long)values[i]);
        long long expected = testdb_count(db, sql);
        int32_t got = wl_shard_hash_int8(values[i]);
        if (got != expected)
            fprintf(stderr, "hashint8(%lld): %d here, %lld in PostgreSQL\n", (long long)values[i],
                    got, expected);
        CHECK_INT(got, expected);
    }
    PQfinish(db);
    return test_exit();
}
