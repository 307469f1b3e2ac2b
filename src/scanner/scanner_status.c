/* Naming the scanner library's result codes happens here. */
#include "walklist/scanner_status.h"

const char *wl_scanner_strerror(int status)
{
    switch (status) {
    case WL_SCANNER_OK:
        return "ok";
#define LOCAL_TEXT(name, value, text)                                                              \
    case WL_SCANNER_##name:                                                                        \
        return text;
        WL_SCANNER_LOCAL_MAP(LOCAL_TEXT)
#undef LOCAL_TEXT
#define SERVER_TEXT(name, value, http, text)                                                       \
    case WL_SCANNER_E##name:                                                                       \
        return text;
        WL_SCANNER_SERVER_MAP(SERVER_TEXT)
#undef SERVER_TEXT
    default:
        return "unknown status";
    }
}
