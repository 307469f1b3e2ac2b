/*
 * Shared helpers of the end-to-end tests: requests with a key, JSON field
 * access, and the checks every error answer must pass (status, Google API
 * error shape, the field named in a BadRequest violation).
 */
#ifndef WALKLIST_E2E_H
#define WALKLIST_E2E_H

#include <jansson.h>
#include <protobuf-c/protobuf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "google/rpc/error_details.pb-c.h"
#include "http_client.h"
#include "test.h"
#include "walklist/base64.h"

static inline http_response_t e2e_request(uint16_t port, const char *method, const char *target,
                                          const char *key, const char *content_type,
                                          const char *body)
{
    char headers[512] = "";
    size_t used = 0;
    if (key != NULL)
        used += (size_t)snprintf(headers + used, sizeof(headers) - used,
                                 "Authorization: Bearer %s\r\n", key);
    if (content_type != NULL)
        snprintf(headers + used, sizeof(headers) - used, "Content-Type: %s\r\n", content_type);
    http_response_t res;
    if (http_request(port, method, target, headers, body, body ? strlen(body) : 0, &res) != 0)
        fprintf(stderr, "request %s %s failed\n", method, target);
    return res;
}

/** The value of a series of the service's /metrics at port (its whole name, labels included),
 * or -1 when it has none. */
static inline long long e2e_metric(uint16_t port, const char *series)
{
    http_response_t res = e2e_request(port, "GET", "/metrics", NULL, NULL, NULL);
    char needle[256];
    snprintf(needle, sizeof(needle), "\n%s ", series);
    const char *at = res.body ? strstr(res.body, needle) : NULL;
    long long value = at == NULL ? -1 : atoll(at + strlen(needle));
    http_response_free(&res);
    return value;
}

/** A Connect call with a JSON body (procedure like "walklist.v1.StockService/ExportStock"), with
 * key; the caller frees. */
static inline http_response_t e2e_connect_json(uint16_t port, const char *procedure,
                                               const char *key, const char *body)
{
    char target[256], headers[1024];
    snprintf(target, sizeof(target), "/%s", procedure);
    snprintf(headers, sizeof(headers),
             "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
             "Connect-Protocol-Version: 1\r\n",
             key);
    http_response_t res;
    if (http_request(port, "POST", target, headers, body, strlen(body), &res) != 0)
        fprintf(stderr, "POST %s failed\n", target);
    return res;
}

static inline const char *e2e_str(json_t *json, const char *path_a, const char *path_b)
{
    json_t *v = json_object_get(json, path_a);
    if (path_b != NULL)
        v = json_object_get(v, path_b);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/**
 * Applies a delta export's (or a WatchStock message's) items to model, an object sku -> item:
 * replaces each item, deletes each removed one, checking SKU order (each once) and the shape
 * of removed items (qty 0, location null). Counts items and removed ones into the counters
 * that are not NULL.
 */
static inline void e2e_apply_delta(json_t *model, json_t *items, int *items_seen, int *removed_seen)
{
    const char *previous = NULL;
    size_t i;
    json_t *item;
    json_array_foreach(items, i, item)
    {
        const char *sku = e2e_str(item, "sku", NULL);
        if (sku == NULL) {
            FAIL("delta item without sku");
            continue;
        }
        if (previous != NULL && strcmp(previous, sku) >= 0)
            FAIL("delta items not in SKU order, or repeated: %s then %s", previous, sku);
        previous = sku;
        if (items_seen != NULL)
            (*items_seen)++;
        if (json_is_true(json_object_get(item, "removed"))) {
            if (removed_seen != NULL)
                (*removed_seen)++;
            CHECK_INT(json_integer_value(json_object_get(item, "qty")), 0);
            CHECK(json_is_null(json_object_get(item, "location")));
            json_object_del(model, sku);
        } else {
            CHECK(json_object_get(item, "removed") == NULL);
            json_object_set(model, sku, item);
        }
    }
}

/** True when the response carries a BadRequest violation for field. */
static inline int e2e_has_violation(const http_response_t *res, const char *field)
{
    json_t *details = json_object_get(json_object_get(res->json, "error"), "details");
    size_t i, j;
    json_t *detail, *violation;
    json_array_foreach(details, i, detail)
    {
        json_array_foreach(json_object_get(detail, "fieldViolations"), j, violation)
        {
            const char *f = json_string_value(json_object_get(violation, "field"));
            if (f != NULL && strcmp(f, field) == 0)
                return 1;
        }
    }
    return 0;
}

/** The error body's google.rpc.ErrorInfo detail, or NULL. */
static inline json_t *e2e_error_info(const http_response_t *res)
{
    json_t *details = json_object_get(json_object_get(res->json, "error"), "details");
    size_t i;
    json_t *detail;
    json_array_foreach(details, i, detail)
    {
        const char *type = json_string_value(json_object_get(detail, "@type"));
        if (type != NULL && strcmp(type, "type.googleapis.com/google.rpc.ErrorInfo") == 0)
            return detail;
    }
    return NULL;
}

/** The ErrorInfo's reason, or "" when there is none. */
static inline const char *e2e_reason(const http_response_t *res)
{
    const char *reason = json_string_value(json_object_get(e2e_error_info(res), "reason"));
    return reason ? reason : "";
}

/** The ErrorInfo's metadata value of key, or "" when there is none. */
static inline const char *e2e_reason_metadata(const http_response_t *res, const char *key)
{
    json_t *metadata = json_object_get(e2e_error_info(res), "metadata");
    const char *value = json_string_value(json_object_get(metadata, key));
    return value ? value : "";
}

/** True when the error body has an ErrorInfo with a reason in walklist's domain. */
static inline int e2e_has_error_info(const http_response_t *res)
{
    const char *domain = json_string_value(json_object_get(e2e_error_info(res), "domain"));
    return domain != NULL && strcmp(domain, "walklist.dev") == 0 && e2e_reason(res)[0] != '\0';
}

/** Checks the error body's ErrorInfo: the last detail, in walklist's domain, with reason. */
#define CHECK_REASON(res, expected)                                                                \
    do {                                                                                           \
        json_t *details_ = json_object_get(json_object_get((res).json, "error"), "details");       \
        json_t *info_ = e2e_error_info(&(res));                                                    \
        CHECK(info_ != NULL && info_ == json_array_get(details_, json_array_size(details_) - 1));  \
        CHECK_STR(json_string_value(json_object_get(info_, "domain")), "walklist.dev");            \
        CHECK(json_is_object(json_object_get(info_, "metadata")));                                 \
        CHECK_STR(e2e_reason(&(res)), expected);                                                   \
    } while (0)

/** Checks status, the error body's code and status name, its ErrorInfo (a reason in walklist's
 * domain), and (when field is set) a violation. */
#define CHECK_ERROR(res, http_status, grpc_name, field)                                            \
    do {                                                                                           \
        CHECK_INT((res).status, http_status);                                                      \
        json_t *error_ = json_object_get((res).json, "error");                                     \
        CHECK(error_ != NULL);                                                                     \
        CHECK_INT(json_integer_value(json_object_get(error_, "code")), http_status);               \
        CHECK_STR(json_string_value(json_object_get(error_, "status")), grpc_name);                \
        CHECK(json_is_string(json_object_get(error_, "message")));                                 \
        CHECK(json_is_array(json_object_get(error_, "details")));                                  \
        if (!e2e_has_error_info(&(res))) {                                                         \
            FAIL("no ErrorInfo of walklist.dev in %s", (res).body);                                \
        }                                                                                          \
        if ((field) != NULL && !e2e_has_violation(&(res), field)) {                                \
            FAIL("no violation for field %s in %s", (const char *)(field), (res).body);            \
        }                                                                                          \
    } while (0)

/**
 * The detail of a Connect error body whose "type" is desc's name, unpacked from its base64
 * "value" (unpadded, as the protocol says); NULL when there is none or it does not decode.
 * Free with protobuf_c_message_free_unpacked(message, NULL).
 */
static inline ProtobufCMessage *e2e_connect_detail(const http_response_t *res,
                                                   const ProtobufCMessageDescriptor *desc)
{
    size_t i;
    json_t *detail;
    json_array_foreach(json_object_get(res->json, "details"), i, detail)
    {
        const char *type = json_string_value(json_object_get(detail, "type"));
        const char *value = json_string_value(json_object_get(detail, "value"));
        if (type == NULL || value == NULL || strcmp(type, desc->name) != 0 ||
            strchr(value, '=') != NULL)
            continue;
        size_t len = strlen(value), bytes_len = 0;
        unsigned char *bytes = malloc(len + 1);
        ProtobufCMessage *message = NULL;
        if (bytes != NULL &&
            wl_base64_decode(value, len, WL_BASE64_DECODE_LENIENT, bytes, &bytes_len))
            message = protobuf_c_message_unpack(desc, NULL, bytes_len, bytes);
        free(bytes);
        return message;
    }
    return NULL;
}

/** Checks a Connect error's ErrorInfo (its last detail, in walklist's domain): its reason, and
 * the value of metadata key when key is set. */
static inline void e2e_check_connect_reason(const http_response_t *res, const char *reason,
                                            const char *key, const char *value, int line)
{
    json_t *details = json_object_get(res->json, "details");
    json_t *last = json_array_get(details, json_array_size(details) - 1);
    Google__Rpc__ErrorInfo *info =
        (Google__Rpc__ErrorInfo *)e2e_connect_detail(res, &google__rpc__error_info__descriptor);
    const char *last_type = json_string_value(json_object_get(last, "type"));
    if (info == NULL || last_type == NULL || strcmp(last_type, "google.rpc.ErrorInfo") != 0) {
        FAIL("line %d: no ErrorInfo as the last detail of %s", line, res->body);
    } else {
        CHECK_STR(info->domain, "walklist.dev");
        CHECK_STR(info->reason, reason);
        const char *found = NULL;
        for (size_t i = 0; key != NULL && i < info->n_metadata; i++) {
            if (strcmp(info->metadata[i]->key, key) == 0)
                found = info->metadata[i]->value;
        }
        if (key != NULL)
            CHECK_STR(found, value);
        /* The debug copy says the same. */
        CHECK_STR(json_string_value(json_object_get(json_object_get(last, "debug"), "reason")),
                  reason);
    }
    if (info != NULL)
        protobuf_c_message_free_unpacked(&info->base, NULL);
}

#define CHECK_CONNECT_REASON(res, reason, key, value)                                              \
    e2e_check_connect_reason(&(res), reason, key, value, __LINE__)

#endif
