/*
 * ARM semihosting (the debugger's, here QEMU's, file and console services) for the test image:
 * the few calls it needs, on the bkpt 0xAB convention. Test harness only: the library does no
 * I/O of its own.
 */
#ifndef WALKLIST_FW_SEMIHOST_H
#define WALKLIST_FW_SEMIHOST_H

#include <stddef.h>
#include <stdint.h>

/** Opens a host file (relative to QEMU's working directory) for reading; -1 on failure. */
int sh_open(const char *path);
/** Reads up to size bytes: how many were read, 0 at the end, -1 on failure. */
int sh_read(int handle, void *buf, size_t size);
void sh_close(int handle);
/** Writes to QEMU's standard output. */
void sh_write(const void *data, size_t len);
/** Ends the emulation with this exit status. */
_Noreturn void sh_exit(int status);

#endif
