/* Drawing identifiers and key material from the OS CSPRNG happens here. */
#include "walklist/random.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>

#include "walklist/base64.h"

static const char base62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/* Fills buf from the OS CSPRNG. */
static int draw(unsigned char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return WL_EINTERNAL;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Each thread keeps a block of CSPRNG output and hands it out in pieces, so that a request's
 * identifiers cost no system call of their own. Bytes are never handed out twice. */
#define BLOCK 512

static _Thread_local unsigned char block[BLOCK];
static _Thread_local size_t block_left;

int wl_random_bytes(void *buf, size_t len)
{
    if (len > BLOCK / 4)
        return draw(buf, len);
    if (block_left < len) {
        int rc = draw(block, BLOCK);
        if (rc != 0)
            return rc;
        block_left = BLOCK;
    }
    unsigned char *from = block + BLOCK - block_left;
    memcpy(buf, from, len);
    explicit_bzero(from, len);
    block_left -= len;
    return 0;
}

int wl_random_base62(char *out, size_t len)
{
    size_t written = 0;
    unsigned char pool[64];
    while (written < len) {
        int rc = wl_random_bytes(pool, sizeof(pool));
        if (rc != 0)
            return rc;
        for (size_t i = 0; i < sizeof(pool) && written < len; i++) {
            /* Reject 248..255 so that every character is equally likely. */
            if (pool[i] < 248)
                out[written++] = base62[pool[i] % 62];
        }
    }
    out[len] = '\0';
    return 0;
}

int wl_random_id(char out[23])
{
    unsigned char bytes[18]; /* 22 characters of 6 bits: 132 random bits */
    int rc = wl_random_bytes(bytes, sizeof(bytes));
    if (rc != 0)
        return rc;
    char text[25]; /* 18 bytes are 24 characters; the first 22 hold the 132 bits */
    wl_base64_encode(bytes, sizeof(bytes), WL_BASE64_URL, false, text);
    memcpy(out, text, 22);
    out[22] = '\0';
    return 0;
}
