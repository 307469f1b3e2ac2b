/* Calling QEMU's semihosting services from the test image happens here. */
#include "semihost.h"

#include <string.h>

enum {
    SYS_OPEN = 0x01,
    SYS_CLOSE = 0x02,
    SYS_WRITE = 0x05,
    SYS_READ = 0x06,
    SYS_EXIT = 0x18,
    SYS_EXIT_EXTENDED = 0x20
};

static int call(int op, const void *args)
{
    register int r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = args;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

int sh_open(const char *path)
{
    uint32_t args[3] = {(uint32_t)path, 1 /* "rb" */, (uint32_t)strlen(path)};
    return call(SYS_OPEN, args);
}

int sh_read(int handle, void *buf, size_t size)
{
    uint32_t args[3] = {(uint32_t)handle, (uint32_t)buf, (uint32_t)size};
    int left = call(SYS_READ, args); /* the number of bytes NOT read */
    return left < 0 || (size_t)left > size ? -1 : (int)(size - (size_t)left);
}

void sh_close(int handle)
{
    uint32_t args[1] = {(uint32_t)handle};
    call(SYS_CLOSE, args);
}

void sh_write(const void *data, size_t len)
{
    static int out = -1; /* ":tt" opened for writing is the console */
    if (out < 0) {
        uint32_t args[3] = {(uint32_t) ":tt", 4 /* "w" */, 3};
        out = call(SYS_OPEN, args);
    }
    while (len > 0) {
        uint32_t args[3] = {(uint32_t)out, (uint32_t)data, (uint32_t)len};
        int left = call(SYS_WRITE, args);
        if (left < 0 || (size_t)left >= len)
            return;
        data = (const char *)data + (len - (size_t)left);
        len = (size_t)left;
    }
}

_Noreturn void sh_exit(int status)
{
    /* ADP_Stopped_ApplicationExit with a status; QEMU exits with that status. */
    uint32_t args[2] = {0x20026, (uint32_t)status};
    call(SYS_EXIT_EXTENDED, args);
    call(SYS_EXIT, (const void *)0x20026); /* without the extension: status 0 */
    for (;;) {
    }
}
