/* Reading the server's error JSON as it streams in, and naming its result code, happens here. */
#include "walklist/scanner_error.h"

#include <string.h>

enum { IN_STRING = 1, ESCAPE = 2, EXPECT_KEY = 4, IN_ERROR = 8, ERROR_NEXT = 16 };
enum { T_NONE, T_KEY, T_STATUS, T_MESSAGE };

#define MAX_TRACKED_DEPTH 32 /* deeper containers are scanned, never looked into */

void wl_scanner_error_init(wl_scanner_error_t *err, int http_status)
{
    char *body = err->body;
    size_t body_size = err->body_size;
    memset(err, 0, sizeof(*err));
    err->http_status = http_status;
    err->body = body;
    err->body_size = body_size;
    if (body != NULL && body_size > 0)
        body[0] = '\0';
}

static bool key_is(const wl_scanner_error_t *err, const char *name)
{
    size_t n = strlen(name);
    return err->key_len == n && memcmp(err->key, name, n) == 0;
}

static void append(wl_scanner_error_t *err, char c)
{
    char *text = err->target == T_STATUS ? err->status : err->message;
    size_t size = err->target == T_STATUS ? sizeof(err->status) : sizeof(err->message);
    switch (err->target) {
    case T_KEY:
        /* The keys we look for fit; a longer one is marked so that it matches none. */
        if (err->key_len < sizeof(err->key))
            err->key[err->key_len++] = c;
        else
            err->key_len = UINT8_MAX;
        return;
    case T_STATUS:
    case T_MESSAGE:
        if (err->target_len + 1 < size) {
            text[err->target_len++] = c;
            text[err->target_len] = '\0';
        }
        return;
    default:
        return;
    }
}

static char unescape(char c)
{
    switch (c) {
    case 'n':
        return '\n';
    case 't':
        return '\t';
    case 'r':
        return '\r';
    case 'b':
        return '\b';
    case 'f':
        return '\f';
    default: /* \" \\ \/ stand for themselves */
        return c;
    }
}

static bool in_object(const wl_scanner_error_t *err)
{
    return err->depth > 0 && err->depth <= MAX_TRACKED_DEPTH &&
           (err->containers & (1u << (err->depth - 1)));
}

static void scan(wl_scanner_error_t *err, char c)
{
    if (err->flags & IN_STRING) {
        if (err->hex_left > 0) { /* \uXXXX was shown as one '?' */
            err->hex_left--;
        } else if (err->flags & ESCAPE) {
            err->flags &= (uint8_t)~ESCAPE;
            if (c == 'u')
                err->hex_left = 4;
            append(err, c == 'u' ? '?' : unescape(c));
        } else if (c == '\\') {
            err->flags |= ESCAPE;
        } else if (c == '"') {
            err->flags &= (uint8_t)~IN_STRING;
            if (err->target != T_KEY) /* a key waits for its ':' */
                err->target = T_NONE;
        } else {
            append(err, c);
        }
        return;
    }
    switch (c) {
    case '"':
        err->flags |= IN_STRING;
        if (err->flags & EXPECT_KEY) {
            err->flags &= (uint8_t)~EXPECT_KEY;
            err->target = T_KEY;
            err->key_len = 0;
        } else if (err->target == T_STATUS || err->target == T_MESSAGE) {
            err->target_len = 0; /* a repeated key: the last value wins */
            (err->target == T_STATUS ? err->status : err->message)[0] = '\0';
        }
        return;
    case ':':
        if (err->target == T_KEY) {
            err->target = T_NONE;
            if (err->depth == 1 && key_is(err, "error"))
                err->flags |= ERROR_NEXT;
            else if (err->depth == 2 && (err->flags & IN_ERROR) && key_is(err, "status"))
                err->target = T_STATUS;
            else if (err->depth == 2 && (err->flags & IN_ERROR) && key_is(err, "message"))
                err->target = T_MESSAGE;
        }
        return;
    case '{':
    case '[':
        if (err->depth < UINT8_MAX)
            err->depth++;
        if (err->depth <= MAX_TRACKED_DEPTH) {
            if (c == '{')
                err->containers |= 1u << (err->depth - 1);
            else
                err->containers &= ~(1u << (err->depth - 1));
        }
        if (c == '{' && (err->flags & ERROR_NEXT) && err->depth == 2)
            err->flags |= IN_ERROR;
        err->flags &= (uint8_t)~ERROR_NEXT;
        if (c == '{')
            err->flags |= EXPECT_KEY;
        err->target = T_NONE;
        return;
    case '}':
    case ']':
        if (err->depth > 0)
            err->depth--;
        if (err->depth < 2)
            err->flags &= (uint8_t)~IN_ERROR;
        err->flags &= (uint8_t)~EXPECT_KEY;
        err->target = T_NONE;
        return;
    case ',':
        if (in_object(err))
            err->flags |= EXPECT_KEY;
        err->target = T_NONE;
        return;
    case ' ':
    case '\t':
    case '\r':
    case '\n':
        return;
    default: /* a number or a literal: not a value we keep */
        err->flags &= (uint8_t)~ERROR_NEXT;
        err->target = T_NONE;
        return;
    }
}

void wl_scanner_error_feed(wl_scanner_error_t *err, const uint8_t *data, size_t len)
{
    if (err->body != NULL && err->body_size > err->body_len + 1) {
        size_t n = err->body_size - 1 - err->body_len;
        if (n > len)
            n = len;
        memcpy(err->body + err->body_len, data, n);
        err->body_len += n;
        err->body[err->body_len] = '\0';
    }
    for (size_t i = 0; i < len; i++)
        scan(err, (char)data[i]);
}

int wl_scanner_error_code(const wl_scanner_error_t *err)
{
#define BY_NAME(name, value, http, text)                                                           \
    if (strcmp(err->status, #name) == 0 && (value) != WL_SCANNER_ESERVER)                          \
        return value;
    WL_SCANNER_SERVER_MAP(BY_NAME)
#undef BY_NAME
#define BY_STATUS(name, value, http, text)                                                         \
    if ((http) != 0 && err->http_status == (http))                                                 \
        return value;
    WL_SCANNER_SERVER_MAP(BY_STATUS)
#undef BY_STATUS
    return WL_SCANNER_ESERVER;
}
