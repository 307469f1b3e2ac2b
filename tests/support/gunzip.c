/* Inflating gzip-coded bodies, and coding request bodies, for the tests happens here. */
#include "gunzip.h"

#include <stdlib.h>
#include <zlib.h>

char *gunzip(const void *data, size_t len, bool whole, size_t *out_len)
{
    z_stream z = {0};
    if (inflateInit2(&z, 15 + 16) != Z_OK)
        return NULL;
    size_t cap = len * 8 + 1024, used = 0;
    char *out = malloc(cap);
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)len;
    int rc;
    do {
        if (cap - used < 65536) {
            cap *= 2;
            out = realloc(out, cap);
        }
        z.next_out = (Bytef *)out + used;
        z.avail_out = (uInt)(cap - used - 1);
        rc = inflate(&z, Z_SYNC_FLUSH);
        used = (size_t)((char *)z.next_out - out);
    } while (rc == Z_OK && (z.avail_in > 0 || z.avail_out == 0));
    inflateEnd(&z);
    bool inflated = whole ? rc == Z_STREAM_END && z.avail_in == 0 : rc == Z_OK || rc == Z_BUF_ERROR;
    if (!inflated) {
        free(out);
        return NULL;
    }
    out[used] = '\0';
    *out_len = used;
    return out;
}

char *gzip_encode(const void *data, size_t len, size_t *out_len)
{
    z_stream z = {0};
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return NULL;
    size_t cap = deflateBound(&z, (uLong)len);
    char *out = malloc(cap);
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)len;
    z.next_out = (Bytef *)out;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    *out_len = cap - z.avail_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    return out;
}
