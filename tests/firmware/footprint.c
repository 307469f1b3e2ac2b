/*
 * The smallest firmware that uses all of the scanner library (requests, both answers, error
 * codes), so that its linked size is what the library costs in flash: a 2-entry vector table,
 * a transport that reads a device register, no C runtime start files.
 */
#include <stdint.h>

#include "walklist/scanner_exchange.h"

#define RX_REGISTER (*(volatile uint8_t *)0x40004000u) /* the board's UART0 data register */

static int uart_recv(void *io, uint8_t *buf, size_t size)
{
    (void)io;
    for (size_t i = 0; i < size; i++)
        buf[i] = RX_REGISTER;
    return (int)size;
}

static bool on_stop(void *context, const walklist_scanner_v1_Stop *stop)
{
    *(volatile uint32_t *)context += stop->quantity;
    return true;
}

void wl_fw_reset(void);

void wl_fw_reset(void)
{
    static volatile uint32_t sink;
    uint8_t request[WL_SCANNER_REQUEST_SIZE], rx[256];
    size_t len;
    wl_scanner_server_t server = {.host = "walklist.local", .key = "wlk_example"};
    sink = (uint32_t)wl_scanner_request_load_list(&server, "list", request, sizeof(request), &len);
    sink = (uint32_t)wl_scanner_request_list_pending(&server, request, sizeof(request), &len);
    wl_scanner_exchange_t ex;
    wl_scanner_error_t err = {0};
    wl_scanner_walk_handler_t handler = {.stop = on_stop, .context = (void *)&sink};
    walklist_scanner_v1_LoadListResponse walk;
    wl_scanner_exchange_init(&ex, uart_recv, NULL, rx, sizeof(rx), 0);
    sink = (uint32_t)wl_scanner_receive_load_list(&ex, &handler, &walk, &err);
    walklist_scanner_v1_ListPendingResponse queue;
    wl_scanner_exchange_init(&ex, uart_recv, NULL, rx, sizeof(rx), 0);
    sink = (uint32_t)wl_scanner_receive_list_pending(&ex, &queue, &err);
    sink = (uint32_t)(uintptr_t)wl_scanner_strerror((int)sink);
    for (;;) {
    }
}

extern uint32_t __stack_top;
__attribute__((section(".vectors"), used)) static void (*const vectors[2])(void) = {
    (void (*)(void))(uintptr_t)&__stack_top,
    wl_fw_reset,
};
