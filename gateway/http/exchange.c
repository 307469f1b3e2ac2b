/* Building a request's response (JSON bodies, errors, headers) happens here. */
#include "http/exchange.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "errors/status_map.h"
#include "walklist/decimal.h"

const char *wl_exchange_header(const wl_exchange_t *ex, const char *name)
{
    if (ex->connection != NULL)
        return MHD_lookup_connection_value(ex->connection, MHD_HEADER_KIND, name);
    for (size_t i = 0; i < ex->request_header_count; i++) {
        if (strcasecmp(ex->request_headers[i].name, name) == 0)
            return ex->request_headers[i].value;
    }
    return NULL;
}

const struct sockaddr *wl_exchange_client_addr(const wl_exchange_t *ex)
{
    if (ex->connection == NULL)
        return ex->client_addr;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(ex->connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info ? info->client_addr : NULL;
}

void wl_exchange_read_origin(wl_exchange_t *ex)
{
    const struct sockaddr *client = wl_exchange_client_addr(ex);
    ex->client[0] = '\0';
    if (client != NULL && client->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)client)->sin_addr, ex->client,
                  sizeof(ex->client));
    else if (client != NULL && client->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)client)->sin6_addr, ex->client,
                  sizeof(ex->client));
    /* Several field lines are joined with commas, which no valid value has: ignored too. */
    ex->traced = wl_trace_context_parse(wl_exchange_header_list(ex, "traceparent"), &ex->trace);
}

void wl_exchange_log_origin(const wl_exchange_t *ex, wl_log_line_t *line)
{
    wl_log_line_str(line, "client", ex->client, strlen(ex->client));
    if (!ex->traced)
        return;
    wl_log_line_str(line, "traceId", ex->trace.trace_id, strlen(ex->trace.trace_id));
    wl_log_line_str(line, "parentId", ex->trace.parent_id, strlen(ex->trace.parent_id));
}

void wl_exchange_add_header(wl_exchange_t *ex, const char *name, const char *value)
{
    if (ex->header_count == WL_EXCHANGE_MAX_HEADERS)
        return;
    wl_header_t *h = &ex->headers[ex->header_count];
    h->name = wl_arena_strdup(&ex->arena, name);
    h->value = wl_arena_strdup(&ex->arena, value);
    if (h->name != NULL && h->value != NULL)
        ex->header_count++;
}

/* A bucket's item of the RateLimit fields, "\"name\";a=1;b=2" (RFC 9651 structured fields),
 * written without snprintf as the numbers are: every answer with a key carries two. A name too
 * long for it is cut (bucket names are a few characters). */
#define RATE_NAME_MAX  64
#define RATE_ITEM_SIZE (RATE_NAME_MAX + 2 * (WL_DECIMAL_SIZE + 3) + 3)

static const char *rate_item(char out[RATE_ITEM_SIZE], const char *bucket, char a, int a_value,
                             char b, int b_value)
{
    size_t len = strnlen(bucket, RATE_NAME_MAX);
    out[0] = '"';
    memcpy(out + 1, bucket, len);
    char *p = out + 1 + len;
    *p++ = '"';
    *p++ = ';';
    *p++ = a;
    *p++ = '=';
    p += wl_decimal(a_value, p);
    *p++ = ';';
    *p++ = b;
    *p++ = '=';
    wl_decimal(b_value, p);
    return out;
}

void wl_exchange_rate_values(const wl_exchange_t *ex,
                             void (*add)(const char *name, const char *value, void *data),
                             void *data)
{
    const wl_rate_t *rate = &ex->rate;
    if (!ex->authenticated || rate->bucket == NULL)
        return;
    char value[WL_DECIMAL_SIZE];
    wl_decimal(rate->limit, value);
    add("RateLimit-Limit", value, data);
    wl_decimal(rate->remaining, value);
    add("RateLimit-Remaining", value, data);
    wl_decimal(rate->reset_s, value);
    add("RateLimit-Reset", value, data);
    char item[RATE_ITEM_SIZE];
    add("RateLimit-Policy", rate_item(item, rate->bucket, 'q', rate->limit, 'w', rate->window_s),
        data);
    add("RateLimit", rate_item(item, rate->bucket, 'r', rate->remaining, 't', rate->reset_s), data);
}

static void add_response_header(const char *name, const char *value, void *data)
{
    MHD_add_response_header(data, name, value);
}

void wl_exchange_rate_headers(const wl_exchange_t *ex, struct MHD_Response *response)
{
    wl_exchange_rate_values(ex, add_response_header, response);
}

typedef struct {
    const char *name;
    char *joined;
    size_t len;
    wl_arena_t *arena;
} header_list_t;

static enum MHD_Result join_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    header_list_t *list = cls;
    if (key == NULL || value == NULL || strcasecmp(key, list->name) != 0)
        return MHD_YES;
    size_t value_len = strlen(value);
    char *joined = wl_arena_alloc(list->arena, list->len + 2 + value_len + 1);
    if (joined == NULL)
        return MHD_NO;
    size_t used = 0;
    if (list->joined != NULL) {
        memcpy(joined, list->joined, list->len);
        memcpy(joined + list->len, ", ", 2);
        used = list->len + 2;
    }
    memcpy(joined + used, value, value_len + 1);
    list->joined = joined;
    list->len = used + value_len;
    return MHD_YES;
}

const char *wl_exchange_header_list(wl_exchange_t *ex, const char *name)
{
    header_list_t list = {.name = name, .arena = &ex->arena};
    if (ex->connection == NULL) {
        for (size_t i = 0; i < ex->request_header_count; i++)
            join_header(&list, MHD_HEADER_KIND, ex->request_headers[i].name,
                        ex->request_headers[i].value);
        return list.joined;
    }
    MHD_get_connection_values(ex->connection, MHD_HEADER_KIND, join_header, &list);
    return list.joined;
}

void wl_exchange_empty(wl_exchange_t *ex, unsigned status)
{
    wl_exchange_drop_generator(ex);
    ex->status = status;
    ex->content_type = NULL;
    ex->response = "";
    ex->response_len = 0;
}

void wl_exchange_generate(wl_exchange_t *ex, unsigned status, const char *content_type,
                          wl_generator_t *gen, wl_piece_t *first, wl_generator_next_t next)
{
    wl_exchange_drop_generator(ex);
    ex->status = status;
    ex->content_type = content_type;
    ex->response = "";
    ex->response_len = 0;
    ex->generator = gen;
    ex->generated_next = next;
    if (first != NULL) {
        ex->generated = *first;
        *first = (wl_piece_t){0};
    }
}

void wl_exchange_drop_generator(wl_exchange_t *ex)
{
    if (ex->generator != NULL)
        ex->generator->stop(ex->generator);
    ex->generator = NULL;
    wl_piece_dispose(&ex->generated);
}

/* The answer when not even an error body can be allocated: written once, kept. */
static char fallback[512];
static pthread_once_t fallback_once = PTHREAD_ONCE_INIT;

static void write_fallback(void)
{
    (void)wl_error_body_plain(fallback, sizeof(fallback), 500, WL_GRPC_INTERNAL, WL_REASON_INTERNAL,
                              "internal error");
}

void wl_exchange_json_text(wl_exchange_t *ex, unsigned status, char *text, size_t len)
{
    wl_exchange_drop_generator(ex); /* an answer set later replaces a stream set before */
    ex->content_type = "application/json";
    if (text == NULL) {
        pthread_once(&fallback_once, write_fallback);
        ex->status = 500;
        ex->response = fallback;
        ex->response_len = strlen(fallback);
        return;
    }
    ex->response = text;
    ex->response_len = len;
    ex->status = status;
}

void wl_exchange_json(wl_exchange_t *ex, unsigned status, json_t *body)
{
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(body);
    size_t len = text != NULL ? strlen(text) : 0;
    char *copy = text != NULL ? wl_arena_strndup(&ex->arena, text, len) : NULL;
    free(text);
    wl_exchange_json_text(ex, status, copy, len);
}

void wl_exchange_error(wl_exchange_t *ex, unsigned status, wl_grpc_code_t code, wl_reason_t reason,
                       const char *message, const wl_error_t *err)
{
    ex->error_info.reason = reason;
    wl_exchange_json(ex, status, wl_error_body(status, code, message, err, &ex->error_info));
}

void wl_exchange_core_error(wl_exchange_t *ex, const wl_error_t *err)
{
    wl_grpc_code_t code = wl_error_grpc_code(err->code);
    /* An Idempotency-Key reused for another list is answered with 422, where the standard
     * mapping of FAILED_PRECONDITION would say 400; a delta export whose history is gone is
     * 410 (Gone: export in full), where OUT_OF_RANGE would say 400. */
    unsigned status = err->code == WL_EIDEMPOTENCY ? 422
                      : err->code == WL_EHISTORY   ? 410
                                                   : wl_http_status_of(code);
    if (code == WL_GRPC_UNAVAILABLE)
        wl_exchange_add_header(ex, "Retry-After", "1");
    wl_exchange_error(ex, status, code, wl_reason_of_error(err->code), NULL, err);
}
