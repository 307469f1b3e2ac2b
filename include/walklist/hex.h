/* Hexadecimal digits, for percent-encoding and hex-encoded secrets. */
#ifndef WALKLIST_HEX_H
#define WALKLIST_HEX_H

/** The value of a hexadecimal digit (either case), or -1 when c is none. */
static inline int wl_hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

#endif
