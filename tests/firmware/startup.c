/* Starting the test image on a Cortex-M4 (vector table, .data and .bss, main) happens here. */
#include <stdint.h>
#include <string.h>

#include "semihost.h"

extern uint32_t __stack_top, __data_load, __data_start, __data_end, __bss_start, __bss_end;
int main(void);
void wl_fw_reset(void);
void wl_fw_fault(void);

void wl_fw_reset(void)
{
    memcpy(&__data_start, &__data_load, (size_t)((char *)&__data_end - (char *)&__data_start));
    memset(&__bss_start, 0, (size_t)((char *)&__bss_end - (char *)&__bss_start));
    sh_exit(main());
}

/* Any fault ends the run with a failure instead of locking the core up (and the test with it). */
void wl_fw_fault(void)
{
    static const char text[] = "firmware: fault\n";
    sh_write(text, sizeof(text) - 1);
    sh_exit(70);
}

/* Initial stack, reset, then the fault vectors (NMI, HardFault, MemManage, BusFault, Usage). */
__attribute__((section(".vectors"), used)) static void (*const vectors[8])(void) = {
    (void (*)(void))(uintptr_t)&__stack_top,
    wl_fw_reset,
    wl_fw_fault,
    wl_fw_fault,
    wl_fw_fault,
    wl_fw_fault,
    wl_fw_fault,
    0,
};
