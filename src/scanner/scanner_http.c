/* Building the device request and parsing its HTTP/1.1 response, fragment by fragment, happens
 * here. */
#include "walklist/scanner_http.h"

#include <string.h>

enum {
    S_VERSION, /* "HTTP/1." then the minor digit */
    S_MINOR,
    S_STATUS_SP,
    S_CODE,
    S_AFTER_CODE,
    S_REASON,
    S_LF, /* a CR was read: LF must follow, then http->next */
    S_FIELD_START,
    S_NAME,
    S_VALUE,
    S_HEAD_END, /* pseudo-states: entering them acts (enter()) */
    S_CHUNK_START,
    S_CHUNK_LINE_END,
    S_CHUNK_SIZE,
    S_CHUNK_EXT,
    S_CHUNK_DATA,
    S_CHUNK_DATA_END,
    S_TRAILER_START,
    S_TRAILER_LINE,
    S_BODY_LENGTH,
    S_BODY_UNTIL_CLOSE,
    S_DONE,
    S_FAILED,
};

/* The fields the parser reads; a field's number is its index + 1 (0: any other field). */
enum { F_CONTENT_LENGTH = 1, F_TRANSFER_ENCODING, F_CONTENT_TYPE, F_RETRY_AFTER };
static const char *const field_names[] = {"content-length", "transfer-encoding", "content-type",
                                          "retry-after"};
#define FIELD_COUNT (sizeof(field_names) / sizeof(field_names[0]))
#define ALL_FIELDS  ((1u << FIELD_COUNT) - 1)

/* value_state of a number field (Content-Length, Retry-After) and of a text field. */
enum { V_LEADING, V_DIGITS, V_TRAILING, V_INVALID, V_PARAMETERS = V_TRAILING };

/* --- the request ----------------------------------------------------------------------------- */

typedef struct {
    uint8_t *buf;
    size_t size, len;
    bool overflow; /* sticky: checked once at the end */
} writer_t;

static void put(writer_t *w, const void *data, size_t len)
{
    if (w->overflow || len > w->size - w->len) {
        w->overflow = true;
        return;
    }
    memcpy(w->buf + w->len, data, len);
    w->len += len;
}

static void put_str(writer_t *w, const char *s)
{
    put(w, s, strlen(s));
}

static void put_decimal(writer_t *w, size_t value)
{
    char digits[24];
    size_t n = sizeof(digits);
    do {
        digits[--n] = (char)('0' + value % 10);
        value /= 10;
    } while (value > 0);
    put(w, digits + n, sizeof(digits) - n);
}

/* Visible ASCII only: anything else could end the line or the field early. */
static bool visible(const char *s, bool may_be_empty)
{
    if (s == NULL)
        return may_be_empty;
    if (*s == '\0')
        return may_be_empty;
    for (; *s != '\0'; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
            return false;
    return true;
}

int wl_scanner_http_request(const wl_scanner_server_t *server, const char *path,
                            const uint8_t *body, size_t body_len, uint8_t *buf, size_t size,
                            size_t *len)
{
    const char *base = server->base_path != NULL ? server->base_path : "";
    if (!visible(server->host, false) || !visible(server->key, false) || !visible(base, true) ||
        (base[0] != '\0' && base[0] != '/') || !visible(path, false) || path[0] != '/' ||
        (body_len > 0 && body == NULL))
        return WL_SCANNER_EARGUMENT;
    writer_t w = {buf, size, 0, false};
    put_str(&w, "POST ");
    put_str(&w, base);
    put_str(&w, path);
    put_str(&w, " HTTP/1.1\r\nHost: ");
    put_str(&w, server->host);
    put_str(&w, "\r\nAuthorization: Bearer ");
    put_str(&w, server->key);
    put_str(&w, "\r\nContent-Type: " WL_SCANNER_CONTENT_TYPE "\r\nAccept: " WL_SCANNER_CONTENT_TYPE
                ", application/json\r\nContent-Length: ");
    put_decimal(&w, body_len);
    put_str(&w, server->keep_alive ? "\r\n\r\n" : "\r\nConnection: close\r\n\r\n");
    if (body_len > 0)
        put(&w, body, body_len);
    if (w.overflow)
        return WL_SCANNER_EBUFFER;
    *len = w.len;
    return WL_SCANNER_OK;
}

/* --- the response ---------------------------------------------------------------------------- */

void wl_scanner_http_init(wl_scanner_http_t *http, uint64_t body_limit)
{
    memset(http, 0, sizeof(*http));
    http->body_limit = body_limit ? body_limit : UINT64_MAX;
    http->state = S_VERSION;
}

static int fail(wl_scanner_http_t *http, int code)
{
    http->state = S_FAILED;
    http->error = (int8_t)code;
    return code;
}

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool is_digit(uint8_t c)
{
    return c >= '0' && c <= '9';
}

/* RFC 9110 tchar: what a field name is made of. */
static bool is_tchar(uint8_t c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c))
        return true;
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Control bytes other than HTAB never belong in a status line, field value or chunk line. */
static bool is_control(uint8_t c)
{
    return (c < 0x20 && c != '\t') || c == 0x7f;
}

static int hex_value(uint8_t c)
{
    if (is_digit(c))
        return c - '0';
    c = (uint8_t)lower((char)c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static bool value_is(const wl_scanner_http_t *http, const char *text)
{
    size_t n = strlen(text);
    return http->value_len == n && memcmp(http->value, text, n) == 0;
}

/* A field value ended: act on the fields the parser reads. */
static int end_field(wl_scanner_http_t *http)
{
    switch (http->field) {
    case F_CONTENT_LENGTH:
        if (http->value_state != V_DIGITS && http->value_state != V_TRAILING)
            return WL_SCANNER_EHTTP;
        /* Repeated with one value is allowed (RFC 9110 8.6); two values are not. */
        if (http->has_content_length && http->content_length != http->number)
            return WL_SCANNER_EHTTP;
        http->has_content_length = true;
        http->content_length = http->number;
        break;
    case F_RETRY_AFTER:
        if (http->value_state == V_DIGITS || http->value_state == V_TRAILING)
            http->retry_after = http->number > UINT32_MAX ? UINT32_MAX : (uint32_t)http->number;
        break;
    case F_TRANSFER_ENCODING:
        while (http->value_len > 0 && (http->value[http->value_len - 1] == ' ' ||
                                       http->value[http->value_len - 1] == '\t'))
            http->value_len--;
        /* Only chunked, once: any other coding would need a decoder the device lacks. */
        if (!value_is(http, "chunked") || http->chunked)
            return WL_SCANNER_EHTTP;
        http->chunked = true;
        break;
    case F_CONTENT_TYPE:
        while (http->value_len > 0 && (http->value[http->value_len - 1] == ' ' ||
                                       http->value[http->value_len - 1] == '\t'))
            http->value_len--;
        http->proto = value_is(http, WL_SCANNER_CONTENT_TYPE);
        http->json = value_is(http, "application/json");
        break;
    default:
        break;
    }
    return 0;
}

static int field_value_byte(wl_scanner_http_t *http, uint8_t c)
{
    bool space = c == ' ' || c == '\t';
    switch (http->field) {
    case F_CONTENT_LENGTH:
    case F_RETRY_AFTER:
        if (space) {
            if (http->value_state == V_DIGITS)
                http->value_state = V_TRAILING;
        } else if (is_digit(c) && http->value_state <= V_DIGITS) {
            if (http->number > (UINT64_MAX - 9) / 10) /* absurd, and would wrap */
                http->value_state = V_INVALID;
            else
                http->number = http->number * 10 + (c - '0');
            if (http->value_state != V_INVALID)
                http->value_state = V_DIGITS;
        } else {
            http->value_state = V_INVALID;
        }
        if (http->field == F_CONTENT_LENGTH && http->value_state == V_INVALID)
            return WL_SCANNER_EHTTP;
        return 0;
    case F_TRANSFER_ENCODING:
    case F_CONTENT_TYPE:
        if (http->value_state == V_LEADING && space)
            return 0;
        if (http->value_state == V_PARAMETERS) /* only the media type is compared */
            return 0;
        if (c == ';' && http->field == F_CONTENT_TYPE) {
            http->value_state = V_PARAMETERS;
            return 0;
        }
        http->value_state = V_DIGITS; /* in the value */
        /* A longer value keeps its start only, and so matches nothing we know. */
        if (http->value_len < sizeof(http->value))
            http->value[http->value_len++] = lower((char)c);
        return 0;
    default:
        return 0;
    }
}

static int enter(wl_scanner_http_t *http, uint8_t state);

static int head_complete(wl_scanner_http_t *http)
{
    if (http->status >= 100 && http->status < 200) {
        if (http->status == 101) /* no protocol was offered to switch to */
            return WL_SCANNER_EHTTP;
        uint64_t limit = http->body_limit; /* an interim answer: the real one follows */
        wl_scanner_http_init(http, limit);
        return 0;
    }
    http->head_bytes = 0;
    if (http->status == 204 || http->status == 304) {
        http->state = S_DONE;
    } else if (http->chunked) {
        http->has_content_length = false; /* chunked framing wins (RFC 9112 6.3) */
        enter(http, S_CHUNK_START);
    } else if (http->has_content_length) {
        if (http->content_length > http->body_limit)
            return WL_SCANNER_ETOO_LARGE;
        http->remaining = http->content_length;
        http->state = S_BODY_LENGTH;
    } else {
        http->state = S_BODY_UNTIL_CLOSE;
    }
    return WL_SCANNER_HTTP_HEAD;
}

/* Enters state after a line ended; some states act on entry. */
static int enter(wl_scanner_http_t *http, uint8_t state)
{
    switch (state) {
    case S_HEAD_END:
        return head_complete(http);
    case S_CHUNK_START:
        http->state = S_CHUNK_SIZE;
        http->number = 0;
        http->name_len = 0;
        http->head_bytes = 0;
        return 0;
    case S_CHUNK_LINE_END:
        if (http->number == 0) {
            http->state = S_TRAILER_START;
            return 0;
        }
        if (http->number > http->body_limit - http->body_bytes)
            return WL_SCANNER_ETOO_LARGE;
        http->body_bytes += http->number;
        http->remaining = http->number;
        http->state = S_CHUNK_DATA;
        return 0;
    default:
        http->state = state;
        return 0;
    }
}

/* CR or LF ends the line, then state `next` begins. */
static int line_end(wl_scanner_http_t *http, uint8_t c, uint8_t next)
{
    if (c == '\n')
        return enter(http, next);
    http->state = S_LF;
    http->next = next;
    return 0;
}

/* One byte of the head, a chunk line or the trailer: 0, WL_SCANNER_HTTP_HEAD or an error. */
static int step(wl_scanner_http_t *http, uint8_t c)
{
    static const char version[] = "HTTP/1.";
    if (http->head_bytes >= WL_SCANNER_HTTP_HEAD_MAX)
        return WL_SCANNER_EHTTP;
    http->head_bytes++;
    bool eol = c == '\r' || c == '\n';
    switch (http->state) {
    case S_VERSION:
        if (c != (uint8_t)version[http->name_len])
            return WL_SCANNER_EHTTP;
        if (++http->name_len == sizeof(version) - 1)
            http->state = S_MINOR;
        return 0;
    case S_MINOR:
        if (c != '0' && c != '1')
            return WL_SCANNER_EHTTP;
        http->state = S_STATUS_SP;
        return 0;
    case S_STATUS_SP:
        if (c != ' ')
            return WL_SCANNER_EHTTP;
        http->state = S_CODE;
        http->status = 0;
        http->name_len = 0;
        return 0;
    case S_CODE:
        if (!is_digit(c))
            return WL_SCANNER_EHTTP;
        http->status = http->status * 10 + (c - '0');
        if (++http->name_len == 3) {
            if (http->status < 100)
                return WL_SCANNER_EHTTP;
            http->state = S_AFTER_CODE;
        }
        return 0;
    case S_AFTER_CODE:
        if (eol)
            return line_end(http, c, S_FIELD_START);
        if (c != ' ')
            return WL_SCANNER_EHTTP;
        http->state = S_REASON;
        return 0;
    case S_REASON:
        if (eol)
            return line_end(http, c, S_FIELD_START);
        return is_control(c) ? WL_SCANNER_EHTTP : 0;
    case S_LF:
        return c == '\n' ? enter(http, http->next) : WL_SCANNER_EHTTP;
    case S_FIELD_START:
        if (eol)
            return line_end(http, c, S_HEAD_END);
        if (!is_tchar(c)) /* obs-fold (a leading space) included */
            return WL_SCANNER_EHTTP;
        http->name_len = 0;
        http->candidates = ALL_FIELDS;
        http->state = S_NAME; /* and the byte is the name's first: */
        /* fall through */
    case S_NAME:
        if (c == ':') {
            http->field = 0;
            for (unsigned i = 0; i < FIELD_COUNT; i++)
                if ((http->candidates & (1u << i)) && strlen(field_names[i]) == http->name_len)
                    http->field = (uint8_t)(i + 1);
            http->value_state = V_LEADING;
            http->value_len = 0;
            http->number = 0;
            http->state = S_VALUE;
            return 0;
        }
        if (!is_tchar(c))
            return WL_SCANNER_EHTTP;
        for (unsigned i = 0; i < FIELD_COUNT; i++)
            if (http->name_len >= strlen(field_names[i]) ||
                field_names[i][http->name_len] != lower((char)c))
                http->candidates &= (uint8_t) ~(1u << i);
        http->name_len++;
        return 0;
    case S_VALUE:
        if (eol) {
            int rc = end_field(http);
            return rc < 0 ? rc : line_end(http, c, S_FIELD_START);
        }
        if (is_control(c))
            return WL_SCANNER_EHTTP;
        return field_value_byte(http, c);
    case S_CHUNK_SIZE: {
        int digit = hex_value(c);
        if (digit >= 0) {
            if (http->number > (UINT64_MAX >> 4))
                return WL_SCANNER_ETOO_LARGE;
            http->number = http->number << 4 | (uint64_t)digit;
            http->name_len++;
            return 0;
        }
        if (http->name_len == 0)
            return WL_SCANNER_EHTTP;
        if (eol)
            return line_end(http, c, S_CHUNK_LINE_END);
        if (c != ';' && c != ' ' && c != '\t')
            return WL_SCANNER_EHTTP;
        http->state = S_CHUNK_EXT;
        return 0;
    }
    case S_CHUNK_EXT:
        if (eol)
            return line_end(http, c, S_CHUNK_LINE_END);
        return is_control(c) ? WL_SCANNER_EHTTP : 0;
    case S_CHUNK_DATA_END: /* the chunk's data must end exactly at its size */
        return eol ? line_end(http, c, S_CHUNK_START) : WL_SCANNER_EHTTP;
    case S_TRAILER_START:
        if (eol)
            return line_end(http, c, S_DONE);
        if (!is_tchar(c))
            return WL_SCANNER_EHTTP;
        http->state = S_TRAILER_LINE;
        return 0;
    case S_TRAILER_LINE:
        if (eol)
            return line_end(http, c, S_TRAILER_START);
        return is_control(c) ? WL_SCANNER_EHTTP : 0;
    default:
        return WL_SCANNER_EHTTP;
    }
}

/* The body states hand out as many bytes as they can at once. */
static int body_piece(wl_scanner_http_t *http, const uint8_t *data, size_t len,
                      wl_scanner_span_t *body)
{
    size_t n = len;
    if (http->state != S_BODY_UNTIL_CLOSE && http->remaining < n)
        n = (size_t)http->remaining;
    if (http->state == S_BODY_UNTIL_CLOSE) {
        if (n > http->body_limit - http->body_bytes)
            return WL_SCANNER_ETOO_LARGE;
        http->body_bytes += n;
    } else {
        http->remaining -= n;
        if (http->state == S_CHUNK_DATA && http->remaining == 0)
            http->state = S_CHUNK_DATA_END;
    }
    body->base = data;
    body->len = n;
    return (int)n;
}

int wl_scanner_http_parse(wl_scanner_http_t *http, const uint8_t *data, size_t len,
                          size_t *consumed, wl_scanner_span_t *body)
{
    size_t pos = 0;
    *consumed = 0;
    body->base = NULL;
    body->len = 0;
    for (;;) {
        switch (http->state) {
        case S_FAILED:
            return http->error;
        case S_DONE:
            *consumed = pos;
            return WL_SCANNER_HTTP_DONE;
        case S_BODY_LENGTH:
            if (http->remaining == 0) {
                http->state = S_DONE;
                continue;
            }
            /* fall through */
        case S_CHUNK_DATA:
        case S_BODY_UNTIL_CLOSE: {
            if (pos == len) {
                *consumed = pos;
                return WL_SCANNER_HTTP_MORE;
            }
            int n = body_piece(http, data + pos, len - pos, body);
            if (n < 0)
                return fail(http, n);
            *consumed = pos + (size_t)n;
            return WL_SCANNER_HTTP_BODY;
        }
        default:
            break;
        }
        if (pos == len) {
            *consumed = pos;
            return WL_SCANNER_HTTP_MORE;
        }
        int rc = step(http, data[pos++]);
        if (rc < 0)
            return fail(http, rc);
        if (rc == WL_SCANNER_HTTP_HEAD) {
            *consumed = pos;
            return WL_SCANNER_HTTP_HEAD;
        }
    }
}

int wl_scanner_http_finish(wl_scanner_http_t *http)
{
    switch (http->state) {
    case S_FAILED:
        return http->error;
    case S_BODY_UNTIL_CLOSE:
        http->state = S_DONE;
        /* fall through */
    case S_DONE:
        return WL_SCANNER_HTTP_DONE;
    case S_BODY_LENGTH:
        if (http->remaining == 0) {
            http->state = S_DONE;
            return WL_SCANNER_HTTP_DONE;
        }
        /* fall through */
    default:
        return fail(http, WL_SCANNER_ECLOSED);
    }
}
