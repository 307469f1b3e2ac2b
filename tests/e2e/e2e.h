/*
 * Shared helpers of the end-to-end tests: requests with a key, JSON field
 * access, and the checks every error answer must pass (status, Google API
 * error shape, the field named in a BadRequest violation).
 */
#ifndef WALKLIST_E2E_H
#define WALKLIST_E2E_H

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "http_client.h"
#include "test.h"

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

static inline const char *e2e_str(json_t *json, const char *path_a, const char *path_b)
{
    json_t *v = json_object_get(json, path_a);
    if (path_b != NULL)
        v = json_object_get(v, path_b);
    return json_is_string(v) ? json_string_value(v) : NULL;
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

/** Checks status, the error body's code and status name, and (when field is set) a violation. */
#define CHECK_ERROR(res, http_status, grpc_name, field)                                            \
    do {                                                                                           \
        CHECK_INT((res).status, http_status);                                                      \
        json_t *error_ = json_object_get((res).json, "error");                                     \
        CHECK(error_ != NULL);                                                                     \
        CHECK_INT(json_integer_value(json_object_get(error_, "code")), http_status);               \
        CHECK_STR(json_string_value(json_object_get(error_, "status")), grpc_name);                \
        CHECK(json_is_string(json_object_get(error_, "message")));                                 \
        CHECK(json_is_array(json_object_get(error_, "details")));                                  \
        if ((field) != NULL && !e2e_has_violation(&(res), field)) {                                \
            FAIL("no violation for field %s in %s", (const char *)(field), (res).body);            \
        }                                                                                          \
    } while (0)

#endif
