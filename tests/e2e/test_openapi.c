/*
 * The OpenAPI document of /api/v1 (gateway/openapi.json) against the gateway
 * and a running walklistd:
 *
 * - it is JSON, OpenAPI 3.1.0, and every "$ref" in it resolves;
 * - every /api/ route of the gateway's route table (wl_api_routes) is
 *   documented with its method, and every documented operation is a route (no
 *   phantom endpoints; GET /api/v1/openapi.json may be served outside the table);
 * - every parameter and request body has examples, every error response is
 *   the Error schema, and the api_key query scheme is offered where it works;
 * - every example is accepted: for each operation, one request per example
 *   name (a parameter's or body's example of that name, else the first example
 *   of a required parameter) sent with a key of an organization with demo
 *   inventory and all scopes answers 201 (creation) or 200;
 * - each such answer has the documented required headers, and its body has the
 *   required properties of the documented schema (objects and array elements,
 *   walked down), with the documented types and enums;
 * - the ErrorInfo schema's reason enum, the examples' reasons and the table of reasons of the
 *   API guide (docs/api.md, "Errors") are exactly the gateway's reasons (WL_REASON_MAP), in its
 *   order.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "protocols/api.h"
#include "e2e.h"
#include "errors/error_info.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"

static service_t service;
static PGconn *db;
static uint16_t port;
static json_t *doc;
static char key[WL_KEY_TOKEN_SIZE];
static char list_id[64];

static const char *const http_methods[] = {"get",     "put",  "post",  "delete",
                                           "options", "head", "patch", "trace"};
#define HTTP_METHOD_COUNT (sizeof(http_methods) / sizeof(http_methods[0]))

/* The document's own endpoint, which the server may answer outside the route table. */
#define DOC_PATH "/api/v1/openapi.json"

/*
 * The document covers the public REST API: the table's routes under /api/. Its other rows
 * (the device transport, POST /walklist.scanner.v1.DeviceService/..., protobuf bodies)
 * are not REST/JSON and are documented by their .proto files.
 */
static bool is_rest_route(const char *pattern)
{
    return strncmp(pattern, "/api/", 5) == 0;
}

/* ---------------------------------------------------------------- small helpers */

/* A growing NUL-terminated string. */
typedef struct {
    char *text;
    size_t len, cap;
} buf_t;

static void buf_add(buf_t *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->text = realloc(b->text, b->cap);
        if (b->text == NULL) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
    }
    memcpy(b->text + b->len, s, n);
    b->len += n;
    b->text[b->len] = '\0';
}

static void buf_str(buf_t *b, const char *s)
{
    buf_add(b, s, strlen(s));
}

static const char *buf_get(const buf_t *b)
{
    return b->text ? b->text : "";
}

static void buf_free(buf_t *b)
{
    free(b->text);
    memset(b, 0, sizeof(*b));
}

static void lowercase(const char *in, char *out, size_t size)
{
    size_t i = 0;
    for (; in[i] != '\0' && i + 1 < size; i++)
        out[i] = (char)(in[i] >= 'A' && in[i] <= 'Z' ? in[i] - 'A' + 'a' : in[i]);
    out[i] = '\0';
}

/* Follows local "$ref"s ("#/components/..."); NULL (and a failure) when one does not resolve. */
static json_t *resolve(json_t *node)
{
    for (int hops = 0; hops < 16; hops++) {
        json_t *ref = json_object_get(node, "$ref");
        if (!json_is_string(ref))
            return node;
        const char *pointer = json_string_value(ref);
        if (strncmp(pointer, "#/", 2) != 0) {
            FAIL("$ref %s is not local", pointer);
            return NULL;
        }
        json_t *target = doc;
        const char *p = pointer + 2;
        while (target != NULL && *p != '\0') {
            const char *slash = strchr(p, '/');
            size_t n = slash ? (size_t)(slash - p) : strlen(p);
            char token[256];
            size_t t = 0;
            for (size_t i = 0; i < n && t + 1 < sizeof(token); i++) {
                if (p[i] == '~' && i + 1 < n && (p[i + 1] == '0' || p[i + 1] == '1')) {
                    token[t++] = p[i + 1] == '0' ? '~' : '/';
                    i++;
                } else {
                    token[t++] = p[i];
                }
            }
            token[t] = '\0';
            target = json_object_get(target, token);
            p += n + (slash ? 1 : 0);
        }
        if (target == NULL) {
            FAIL("$ref %s does not resolve", pointer);
            return NULL;
        }
        node = target;
    }
    FAIL("$ref chain too long");
    return NULL;
}

/* Every "$ref" anywhere in the document resolves. */
static void check_refs(json_t *node)
{
    if (json_is_object(node)) {
        if (json_is_string(json_object_get(node, "$ref")))
            CHECK(resolve(node) != NULL);
        const char *name;
        json_t *child;
        json_object_foreach(node, name, child)
        {
            check_refs(child);
        }
    } else if (json_is_array(node)) {
        size_t i;
        json_t *child;
        json_array_foreach(node, i, child)
        {
            check_refs(child);
        }
    }
}

static json_t *operation(const char *pattern, const char *method)
{
    char lower[16];
    lowercase(method, lower, sizeof(lower));
    return json_object_get(json_object_get(json_object_get(doc, "paths"), pattern), lower);
}

static bool in_route_table(const char *path, const char *method)
{
    const char *const *methods;
    const char *const *patterns;
    size_t count = wl_api_routes(&methods, &patterns);
    for (size_t i = 0; i < count; i++) {
        if (strcmp(patterns[i], path) == 0 && strcasecmp(methods[i], method) == 0)
            return true;
    }
    return false;
}

/* The operation's security requirements (its own, else the document's). */
static json_t *security_of(json_t *op)
{
    json_t *security = json_object_get(op, "security");
    return security ? security : json_object_get(doc, "security");
}

static bool offers_scheme(json_t *op, const char *scheme)
{
    size_t i;
    json_t *requirement;
    json_array_foreach(security_of(op), i, requirement)
    {
        if (json_object_get(requirement, scheme) != NULL)
            return true;
    }
    return false;
}

/* The query parameter name of the apiKey security scheme ("api_key"). */
static const char *api_key_name(void)
{
    json_t *schemes = json_object_get(json_object_get(doc, "components"), "securitySchemes");
    return json_string_value(json_object_get(json_object_get(schemes, "apiKey"), "name"));
}

/* Value of the first example of an examples object, or of the one called name. */
static json_t *example_value(json_t *examples, const char *name)
{
    json_t *example = NULL;
    if (name != NULL) {
        example = json_object_get(examples, name);
    } else {
        void *it = json_object_iter(examples);
        example = it ? json_object_iter_value(it) : NULL;
    }
    example = resolve(example);
    if (example != NULL && json_object_get(example, "value") == NULL)
        FAIL("example %s has no inline value", name ? name : "(first)");
    return json_object_get(example, "value");
}

static json_t *body_examples(json_t *op)
{
    json_t *body = resolve(json_object_get(op, "requestBody"));
    return json_object_get(json_object_get(json_object_get(body, "content"), "application/json"),
                           "examples");
}

/* ---------------------------------------------------------------- (a) the document itself */

static void load_document(void)
{
    const char *source = getenv("WALKLIST_SOURCE_DIR");
    if (source == NULL) {
        fprintf(stderr, "WALKLIST_SOURCE_DIR is not set\n");
        exit(1);
    }
    char path[1024];
    snprintf(path, sizeof(path), "%s/gateway/openapi.json", source);
    json_error_t error;
    doc = json_load_file(path, JSON_REJECT_DUPLICATES, &error);
    if (doc == NULL) {
        FAIL("%s:%d:%d: %s", path, error.line, error.column, error.text);
        exit(test_exit());
    }
}

static void test_document(void)
{
    CHECK(json_is_object(doc));
    CHECK_STR(e2e_str(doc, "openapi", NULL), "3.1.0");
    CHECK_STR(e2e_str(doc, "info", "title"), "walklist");
    CHECK_STR(e2e_str(doc, "info", "version"), "1.0.0");
    CHECK_STR(e2e_str(json_array_get(json_object_get(doc, "servers"), 0), "url", NULL),
              "http://127.0.0.1:8080");
    json_t *schemes = json_object_get(json_object_get(doc, "components"), "securitySchemes");
    CHECK_STR(e2e_str(json_object_get(schemes, "bearer"), "type", NULL), "http");
    CHECK_STR(e2e_str(json_object_get(schemes, "bearer"), "scheme", NULL), "bearer");
    CHECK_STR(e2e_str(json_object_get(schemes, "apiKey"), "type", NULL), "apiKey");
    CHECK_STR(e2e_str(json_object_get(schemes, "apiKey"), "in", NULL), "query");
    CHECK_STR(api_key_name(), "api_key");
    check_refs(doc);
}

/* ---------------------------------------------------------------- (b) and (c): routes */

static void test_routes_documented(void)
{
    const char *const *methods;
    const char *const *patterns;
    size_t count = wl_api_routes(&methods, &patterns);
    CHECK(count > 0);
    for (size_t i = 0; i < count; i++) {
        if (!is_rest_route(patterns[i]))
            continue;
        if (operation(patterns[i], methods[i]) == NULL)
            FAIL("route %s %s is not documented in gateway/openapi.json", methods[i], patterns[i]);
    }
}

static void test_no_phantom_operations(void)
{
    const char *path;
    json_t *item;
    json_object_foreach(json_object_get(doc, "paths"), path, item)
    {
        CHECK(strncmp(path, "/api/v1/", 8) == 0);
        for (size_t m = 0; m < HTTP_METHOD_COUNT; m++) {
            if (json_object_get(item, http_methods[m]) == NULL)
                continue;
            if (in_route_table(path, http_methods[m]))
                continue;
            if (strcmp(path, DOC_PATH) == 0 && strcmp(http_methods[m], "get") == 0)
                continue;
            FAIL("documented operation %s %s is not in the gateway's route table", http_methods[m],
                 path);
        }
    }
}

/* Examples everywhere input is taken; errors in the Error shape; api_key where it works. */
static void test_operation_rules(void)
{
    json_t *error_schema =
        json_object_get(json_object_get(json_object_get(doc, "components"), "schemas"), "Error");
    CHECK(error_schema != NULL);
    json_t *seen_ids = json_object();
    const char *path;
    json_t *item;
    json_object_foreach(json_object_get(doc, "paths"), path, item)
    {
        for (size_t m = 0; m < HTTP_METHOD_COUNT; m++) {
            json_t *op = json_object_get(item, http_methods[m]);
            if (op == NULL)
                continue;
            const char *id = e2e_str(op, "operationId", NULL);
            if (id == NULL || json_object_get(seen_ids, id) != NULL)
                FAIL("%s %s: missing or repeated operationId", http_methods[m], path);
            else
                json_object_set_new(seen_ids, id, json_true());

            size_t i;
            json_t *param;
            json_array_foreach(json_object_get(op, "parameters"), i, param)
            {
                param = resolve(param);
                if (json_object_size(json_object_get(param, "examples")) == 0)
                    FAIL("%s %s: parameter %s has no examples", http_methods[m], path,
                         e2e_str(param, "name", NULL));
            }
            if (json_object_get(op, "requestBody") != NULL &&
                json_object_size(body_examples(op)) == 0)
                FAIL("%s %s: the request body has no examples", http_methods[m], path);

            const char *status;
            json_t *response;
            json_object_foreach(json_object_get(op, "responses"), status, response)
            {
                if (status[0] != '4' && status[0] != '5')
                    continue;
                json_t *schema = resolve(
                    json_object_get(json_object_get(json_object_get(resolve(response), "content"),
                                                    "application/json"),
                                    "schema"));
                if (schema != error_schema)
                    FAIL("%s %s: response %s is not the Error schema", http_methods[m], path,
                         status);
            }

            bool api_key_route =
                strcmp(path, "/api/v1/locate-lists") == 0 && strcmp(http_methods[m], "get") == 0;
            if (offers_scheme(op, "apiKey") != api_key_route)
                FAIL("%s %s: the apiKey scheme belongs to GET /api/v1/locate-lists only",
                     http_methods[m], path);
            if (strcmp(path, DOC_PATH) != 0 && !offers_scheme(op, "bearer"))
                FAIL("%s %s: no bearer security", http_methods[m], path);
        }
    }
    json_decref(seen_ids);
}

/* ---------------------------------------------------------------- (d) and (e): examples */

/* Appends a JSON scalar as text; false for objects and null. */
static bool scalar_text(json_t *value, buf_t *out)
{
    char number[64];
    switch (json_typeof(value)) {
    case JSON_STRING:
        buf_add(out, json_string_value(value), json_string_length(value));
        return true;
    case JSON_INTEGER:
        snprintf(number, sizeof(number), "%" JSON_INTEGER_FORMAT, json_integer_value(value));
        buf_str(out, number);
        return true;
    case JSON_REAL:
        snprintf(number, sizeof(number), "%.17g", json_real_value(value));
        buf_str(out, number);
        return true;
    case JSON_TRUE:
        buf_str(out, "true");
        return true;
    case JSON_FALSE:
        buf_str(out, "false");
        return true;
    default:
        return false;
    }
}

/* Query parameters of one request, as decoded name/value pairs. */
typedef struct {
    char *names[32];
    char *values[32];
    size_t count;
} query_t;

static void query_add(query_t *q, const char *name, const char *value)
{
    if (q->count == 32) {
        FAIL("too many query parameters");
        return;
    }
    q->names[q->count] = strdup(name);
    q->values[q->count] = strdup(value);
    q->count++;
}

static void query_free(query_t *q)
{
    for (size_t i = 0; i < q->count; i++) {
        free(q->names[i]);
        free(q->values[i]);
    }
    q->count = 0;
}

/* path + "?" + the percent-encoded query (parameters called skip left out). */
static void query_target(const char *path, const query_t *q, const char *skip, buf_t *out)
{
    buf_str(out, path);
    const char *sep = "?";
    for (size_t i = 0; i < q->count; i++) {
        if (skip != NULL && strcmp(q->names[i], skip) == 0)
            continue;
        size_t size = strlen(q->values[i]) * 3 + 8; /* http_escape wants room to spare */
        char *escaped = malloc(size);
        char name[256];
        buf_str(out, sep);
        buf_str(out, http_escape(q->names[i], name, sizeof(name)));
        buf_str(out, "=");
        buf_str(out, http_escape(q->values[i], escaped, size));
        free(escaped);
        sep = "&";
    }
}

/* A nextPageToken for a request on path with the query's filters: the first page of one item. */
static bool page_token(const char *path, const query_t *q, buf_t *token)
{
    query_t first = {0};
    for (size_t i = 0; i < q->count; i++) {
        if (strcmp(q->names[i], "pageToken") != 0 && strcmp(q->names[i], "pageSize") != 0)
            query_add(&first, q->names[i], q->values[i]);
    }
    query_add(&first, "pageSize", "1");
    buf_t target = {0};
    query_target(path, &first, NULL, &target);
    http_response_t res = e2e_request(port, "GET", buf_get(&target), key, NULL, NULL);
    const char *next = e2e_str(res.json, "nextPageToken", NULL);
    bool ok = res.status == 200 && next != NULL && next[0] != '\0';
    if (ok)
        buf_str(token, next);
    else
        FAIL("no pageToken to be had from GET %s (status %d)", buf_get(&target), res.status);
    http_response_free(&res);
    buf_free(&target);
    query_free(&first);
    return ok;
}

/* A cursor for a delta on path (the stock export's since): the cursor of its full answer. */
static bool export_cursor(const char *path, buf_t *cursor)
{
    http_response_t res = e2e_request(port, "GET", path, key, NULL, NULL);
    const char *text = e2e_str(res.json, "cursor", NULL);
    bool ok = res.status == 200 && text != NULL && text[0] != '\0';
    if (ok)
        buf_str(cursor, text);
    else
        FAIL("no cursor to be had from GET %s (status %d)", path, res.status);
    http_response_free(&res);
    return ok;
}

/* The body of a response, gunzipped when it is gzip-coded; NULL when it is not JSON. */
static json_t *response_json(const http_response_t *res)
{
    char encoding[64];
    if (http_header(res, "Content-Encoding", encoding, sizeof(encoding)) == NULL)
        return json_incref(res->json);
    if (strcasecmp(encoding, "gzip") != 0) {
        FAIL("unexpected Content-Encoding %s", encoding);
        return NULL;
    }
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
        return NULL;
    buf_t plain = {0};
    zs.next_in = (unsigned char *)res->body;
    zs.avail_in = (unsigned)res->body_len;
    int rc;
    do {
        char chunk[16384];
        zs.next_out = (unsigned char *)chunk;
        zs.avail_out = sizeof(chunk);
        rc = inflate(&zs, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END)
            break;
        buf_add(&plain, chunk, sizeof(chunk) - zs.avail_out);
    } while (rc != Z_STREAM_END);
    inflateEnd(&zs);
    json_t *json = NULL;
    if (rc == Z_STREAM_END)
        json = json_loadb(buf_get(&plain), plain.len, 0, NULL);
    else
        FAIL("the gzip-coded body does not inflate (zlib %d)", rc);
    buf_free(&plain);
    return json;
}

static bool type_matches(const char *type, json_t *value)
{
    if (strcmp(type, "object") == 0)
        return json_is_object(value);
    if (strcmp(type, "array") == 0)
        return json_is_array(value);
    if (strcmp(type, "string") == 0)
        return json_is_string(value);
    if (strcmp(type, "integer") == 0)
        return json_is_integer(value);
    if (strcmp(type, "number") == 0)
        return json_is_number(value);
    if (strcmp(type, "boolean") == 0)
        return json_is_boolean(value);
    if (strcmp(type, "null") == 0)
        return json_is_null(value);
    return false;
}

/*
 * The value has the schema's required properties (objects), type and enum; walked down
 * through properties and array elements (the first 1000).
 */
static void check_value(json_t *schema, json_t *value, const char *where, int depth)
{
    schema = resolve(schema);
    if (schema == NULL || depth > 8)
        return;
    json_t *type = json_object_get(schema, "type");
    bool typed = type == NULL;
    if (json_is_string(type))
        typed = type_matches(json_string_value(type), value);
    size_t i;
    json_t *entry;
    json_array_foreach(type, i, entry)
    {
        typed = typed || type_matches(json_string_value(entry), value);
    }
    if (!typed) {
        char *got = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
        FAIL("%s: %s does not have the documented type", where, got ? got : "?");
        free(got);
        return;
    }
    json_t *choices = json_object_get(schema, "enum");
    if (choices != NULL) {
        bool listed = false;
        json_array_foreach(choices, i, entry)
        {
            listed = listed || json_equal(entry, value);
        }
        if (!listed)
            FAIL("%s: value not in the documented enum", where);
    }
    char inner[512];
    if (json_is_object(value)) {
        json_array_foreach(json_object_get(schema, "required"), i, entry)
        {
            if (json_object_get(value, json_string_value(entry)) == NULL)
                FAIL("%s: required property %s is missing", where, json_string_value(entry));
        }
        const char *name;
        json_t *property;
        json_object_foreach(json_object_get(schema, "properties"), name, property)
        {
            json_t *member = json_object_get(value, name);
            if (member == NULL)
                continue;
            snprintf(inner, sizeof(inner), "%s.%s", where, name);
            check_value(property, member, inner, depth + 1);
        }
    } else if (json_is_array(value)) {
        json_t *items = json_object_get(schema, "items");
        json_array_foreach(value, i, entry)
        {
            if (i == 1000)
                break;
            snprintf(inner, sizeof(inner), "%s[%zu]", where, i);
            check_value(items, entry, inner, depth + 1);
        }
    }
}

/* Headers marked required are there; the body matches the documented schema. */
static void check_answer(json_t *op, const char *label, int status, const http_response_t *res,
                         const char *request_id)
{
    char code[8], value[256];
    snprintf(code, sizeof(code), "%d", status);
    json_t *documented = resolve(json_object_get(json_object_get(op, "responses"), code));
    if (documented == NULL) {
        FAIL("%s: status %d is not documented", label, status);
        return;
    }
    const char *name;
    json_t *header;
    json_object_foreach(json_object_get(documented, "headers"), name, header)
    {
        if (json_is_true(json_object_get(resolve(header), "required")) &&
            http_header(res, name, value, sizeof(value)) == NULL)
            FAIL("%s: required header %s is missing", label, name);
    }
    if (request_id != NULL)
        CHECK_STR(http_header(res, "X-Request-Id", value, sizeof(value)), request_id);

    json_t *media = json_object_get(json_object_get(documented, "content"), "application/json");
    if (media == NULL)
        return;
    const char *type = http_header(res, "Content-Type", value, sizeof(value));
    if (type == NULL || strncmp(type, "application/json", 16) != 0)
        FAIL("%s: Content-Type %s", label, type ? type : "(none)");
    json_t *body = response_json(res);
    if (body == NULL) {
        FAIL("%s: the body is not JSON", label);
        return;
    }
    check_value(json_object_get(media, "schema"), body, label, 0);
    json_decref(body);
}

/* The example names of an operation: those of its parameters, then those of its body. */
static json_t *example_names(json_t *op)
{
    json_t *names = json_array();
    json_t *seen = json_object();
    size_t i;
    json_t *param;
    const char *name;
    json_t *example;
    json_array_foreach(json_object_get(op, "parameters"), i, param)
    {
        json_object_foreach(json_object_get(resolve(param), "examples"), name, example)
        {
            if (json_object_get(seen, name) == NULL) {
                json_object_set_new(seen, name, json_true());
                json_array_append_new(names, json_string(name));
            }
        }
    }
    json_object_foreach(body_examples(op), name, example)
    {
        if (json_object_get(seen, name) == NULL) {
            json_object_set_new(seen, name, json_true());
            json_array_append_new(names, json_string(name));
        }
    }
    json_decref(seen);
    return names;
}

/* Builds and sends the request of one example name and checks the answer. */
static void run_example(const char *method, const char *pattern, json_t *op, const char *name)
{
    char label[512];
    snprintf(label, sizeof(label), "%s %s, example \"%s\"", method, pattern, name);
    buf_t path = {0}, headers = {0};
    query_t query = {0};
    bool header_key = json_array_size(security_of(op)) > 0;
    bool wants_token = false;
    const char *request_id = NULL;
    char request_id_buf[128];

    /* The path, with its parameters to fill in below. */
    buf_str(&path, pattern);
    size_t i;
    json_t *param;
    json_array_foreach(json_object_get(op, "parameters"), i, param)
    {
        param = resolve(param);
        const char *pname = e2e_str(param, "name", NULL);
        const char *in = e2e_str(param, "in", NULL);
        if (pname == NULL || in == NULL) {
            FAIL("%s: a parameter without name or in", label);
            continue;
        }
        json_t *examples = json_object_get(param, "examples");
        json_t *value = json_object_get(examples, name) ? example_value(examples, name) : NULL;
        if (value == NULL && json_is_true(json_object_get(param, "required")))
            value = example_value(examples, NULL);
        if (value == NULL)
            continue;

        buf_t text = {0};
        if (strcmp(in, "path") == 0 && strcmp(pname, "id") == 0 &&
            strncmp(pattern, "/api/v1/locate-lists/", 21) == 0) {
            /* A list's id: the example's cannot exist here, so the list made at the start. */
            buf_str(&text, list_id);
        } else if (strcmp(in, "query") == 0 && strcmp(pname, api_key_name()) == 0) {
            buf_str(&text, key);
            header_key = false;
        } else if (strcmp(in, "query") == 0 && strcmp(pname, "pageToken") == 0) {
            wants_token = true; /* a real one, taken with this request's filters below */
        } else if (strcmp(in, "query") == 0 && strcmp(pname, "since") == 0) {
            /* The example's cursor is sealed for no organization here: a real one. */
            if (!export_cursor(buf_get(&path), &text)) {
                buf_free(&text);
                continue;
            }
        } else if (json_is_array(value)) {
            json_t *explode = json_object_get(param, "explode");
            bool exploded = explode == NULL ? strcmp(in, "query") == 0 : json_is_true(explode);
            size_t j;
            json_t *element;
            json_array_foreach(value, j, element)
            {
                if (exploded && strcmp(in, "query") == 0) {
                    buf_t piece = {0};
                    if (!scalar_text(element, &piece))
                        FAIL("%s: parameter %s has a non-scalar array element", label, pname);
                    query_add(&query, pname, buf_get(&piece));
                    buf_free(&piece);
                } else {
                    if (j > 0)
                        buf_str(&text, ",");
                    if (!scalar_text(element, &text))
                        FAIL("%s: parameter %s has a non-scalar array element", label, pname);
                }
            }
            if (exploded && strcmp(in, "query") == 0) {
                buf_free(&text);
                continue;
            }
        } else if (!scalar_text(value, &text)) {
            FAIL("%s: parameter %s has an example that is not a scalar or array", label, pname);
        }

        if (strcmp(in, "path") == 0) {
            char placeholder[128], escaped[256];
            snprintf(placeholder, sizeof(placeholder), "{%s}", pname);
            char *at = strstr(path.text, placeholder);
            if (at == NULL) {
                FAIL("%s: no %s in the path", label, placeholder);
            } else {
                buf_t filled = {0};
                buf_add(&filled, path.text, (size_t)(at - path.text));
                buf_str(&filled, http_escape(buf_get(&text), escaped, sizeof(escaped)));
                buf_str(&filled, at + strlen(placeholder));
                buf_free(&path);
                path = filled;
            }
        } else if (strcmp(in, "query") == 0) {
            if (!wants_token || strcmp(pname, "pageToken") != 0)
                query_add(&query, pname, buf_get(&text));
        } else if (strcmp(in, "header") == 0) {
            buf_str(&headers, pname);
            buf_str(&headers, ": ");
            buf_str(&headers, buf_get(&text));
            buf_str(&headers, "\r\n");
            if (strcasecmp(pname, "X-Request-Id") == 0) {
                snprintf(request_id_buf, sizeof(request_id_buf), "%s", buf_get(&text));
                request_id = request_id_buf;
            }
        } else {
            FAIL("%s: parameter %s in %s is not supported by this test", label, pname, in);
        }
        buf_free(&text);
    }
    if (wants_token) {
        buf_t token = {0};
        if (page_token(buf_get(&path), &query, &token))
            query_add(&query, "pageToken", buf_get(&token));
        buf_free(&token);
    }

    char *body = NULL;
    if (json_object_get(op, "requestBody") != NULL) {
        json_t *examples = body_examples(op);
        json_t *value = example_value(examples, json_object_get(examples, name) ? name : NULL);
        body = value ? json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        if (body == NULL)
            FAIL("%s: no body example", label);
        buf_str(&headers, "Content-Type: application/json\r\n");
    }
    if (header_key) {
        buf_str(&headers, "Authorization: Bearer ");
        buf_str(&headers, key);
        buf_str(&headers, "\r\n");
    }

    buf_t target = {0};
    query_target(buf_get(&path), &query, NULL, &target);
    http_response_t res;
    http_request(port, method, buf_get(&target), buf_get(&headers), body, body ? strlen(body) : 0,
                 &res);
    int expected = strcmp(pattern, "/api/v1/locate-lists") == 0 ? 201 : 200;
    buf_t shown = {0}; /* the target without the key */
    query_target(buf_get(&path), &query, api_key_name(), &shown);
    if (res.status != expected) {
        FAIL("%s: %s %s answered %d, expected %d: %s", label, method, buf_get(&shown), res.status,
             expected, res.body ? res.body : "");
    } else {
        fprintf(stderr, "%s: %s %s%s -> %d\n", label, method, buf_get(&shown),
                header_key ? "" : " (key in the query)", res.status);
        check_answer(op, label, res.status, &res, request_id);
    }
    buf_free(&shown);
    http_response_free(&res);
    free(body);
    buf_free(&target);
    buf_free(&path);
    buf_free(&headers);
    query_free(&query);
}

static void test_examples(void)
{
    /* A list for the {id} examples. */
    http_response_t res = e2e_request(port, "POST", "/api/v1/locate-lists", key, "application/json",
                                      "{\"name\":\"Aisle 3 recount\",\"codes\":[\"SKU-1001\"]}");
    CHECK_INT(res.status, 201);
    const char *id = e2e_str(res.json, "id", NULL);
    snprintf(list_id, sizeof(list_id), "%s", id ? id : "");
    http_response_free(&res);

    const char *const *methods;
    const char *const *patterns;
    size_t count = wl_api_routes(&methods, &patterns);
    for (size_t r = 0; r < count; r++) {
        json_t *op = is_rest_route(patterns[r]) ? operation(patterns[r], methods[r]) : NULL;
        if (op == NULL)
            continue; /* reported by test_routes_documented */
        char code[8];
        snprintf(code, sizeof(code), "%d",
                 strcmp(patterns[r], "/api/v1/locate-lists") == 0 ? 201 : 200);
        if (json_object_get(json_object_get(op, "responses"), code) == NULL)
            FAIL("%s %s: status %s is not documented", methods[r], patterns[r], code);
        json_t *names = example_names(op);
        if (json_array_size(names) == 0)
            run_example(methods[r], patterns[r], op, "");
        size_t i;
        json_t *name;
        json_array_foreach(names, i, name)
        {
            run_example(methods[r], patterns[r], op, json_string_value(name));
        }
        json_decref(names);
    }
}

/* ---------------------------------------------------------------- served over HTTP */

/* needs the route: GET /api/v1/openapi.json serves this very document, without a key. */
static void test_served_document(void)
{
    http_response_t res = e2e_request(port, "GET", DOC_PATH, NULL, NULL, NULL);
    if (res.status != 200) {
        FAIL("GET " DOC_PATH " answered %d, expected 200 with gateway/openapi.json "
             "(needs the route)",
             res.status);
    } else {
        char type[128];
        const char *content_type = http_header(&res, "Content-Type", type, sizeof(type));
        CHECK(content_type != NULL && strstr(content_type, "json") != NULL);
        CHECK(json_equal(res.json, doc));
        json_t *op = operation(DOC_PATH, "GET");
        if (op != NULL)
            check_answer(op, "GET " DOC_PATH, 200, &res, NULL);
    }
    http_response_free(&res);
}

/* ---------------------------------------------------------------- setup */

/* The demo inventory of `walklistctl demo`. */
static void import_demo(int64_t org)
{
    fixture_import(db, org, "warehouses",
                   "code,name,kind\nMAIN,Main warehouse,own\nEAST,East depot,own\n"
                   "SUPP,Supplier consignment,supplier\n");
    fixture_import(db, org, "locations",
                   "warehouse,code,staging\nMAIN,A-2,false\nMAIN,A-10,false\nMAIN,A-02,false\n"
                   "MAIN,B-1,false\nMAIN,DOCK,true\nEAST,E-1,false\nSUPP,S-1,false\n");
    fixture_import(db, org, "products",
                   "sku,name,eans\nSKU-1001,Cordless drill 18V,4006381333931\n"
                   "SKU-1002,Drill bit set 10 pcs,4006381333948|4006381333955\n"
                   "SKU-1003,Safety gloves L,5901234123457\n"
                   "SKU-1004,Safety gloves XL,5901234123457\n"
                   "SKU-1005,\"Work light, LED\",\n"
                   "SKU-1006,Extension cord 10 m,4012345678901\n");
    fixture_import(db, org, "stock",
                   "sku,warehouse,on_hand\nSKU-1001,MAIN,12\nSKU-1001,EAST,3\nSKU-1001,SUPP,100\n"
                   "SKU-1002,MAIN,40\nSKU-1003,MAIN,5\nSKU-1004,EAST,0\nSKU-1005,MAIN,7\n");
    fixture_import(db, org, "location-stock",
                   "sku,warehouse,location,quantity\nSKU-1001,MAIN,A-10,8\nSKU-1001,MAIN,A-2,4\n"
                   "SKU-1001,EAST,E-1,3\nSKU-1002,MAIN,A-02,40\nSKU-1003,MAIN,B-1,5\n"
                   "SKU-1003,MAIN,DOCK,20\nSKU-1004,EAST,E-1,0\nSKU-1006,SUPP,S-1,9\n");
    fixture_import(db, org, "reservations",
                   "ref,sku,warehouse,quantity,status\nSO-5001,SKU-1001,MAIN,2,active\n"
                   "SO-5002,SKU-1002,MAIN,5,released\nSO-5003,SKU-1003,MAIN,9,active\n"
                   "SO-5004,SKU-1001,SUPP,50,active\n");
}

/* Every reason of the gateway, in order, in the ErrorInfo schema's enum and in docs/api.md's table;
 * every example's reason is one of them. */
static void test_reasons_documented(void)
{
    json_t *schemas = json_object_get(json_object_get(doc, "components"), "schemas");
    json_t *reasons = json_object_get(
        json_object_get(json_object_get(json_object_get(schemas, "ErrorInfo"), "properties"),
                        "reason"),
        "enum");
    CHECK_INT(json_array_size(reasons), WL_REASON_COUNT);
    for (int i = 0; i < WL_REASON_COUNT; i++)
        CHECK_STR(json_string_value(json_array_get(reasons, (size_t)i)), wl_reason_name(i));

    json_t *responses = json_object_get(json_object_get(doc, "components"), "responses");
    const char *name;
    json_t *response;
    json_object_foreach(responses, name, response)
    {
        json_t *examples = json_object_get(
            json_object_get(json_object_get(response, "content"), "application/json"), "examples");
        const char *example_name;
        json_t *example;
        json_object_foreach(examples, example_name, example)
        {
            json_t *details = json_object_get(
                json_object_get(json_object_get(example, "value"), "error"), "details");
            if (details == NULL)
                continue;
            json_t *info = json_array_get(details, json_array_size(details) - 1);
            const char *reason = json_string_value(json_object_get(info, "reason"));
            bool known = false;
            for (int i = 0; reason != NULL && i < WL_REASON_COUNT; i++)
                known = known || strcmp(reason, wl_reason_name(i)) == 0;
            if (!known)
                FAIL("example %s/%s ends without an ErrorInfo of a known reason", name,
                     example_name);
        }
    }

    /* The API guide's table: one row "| `REASON` |" a reason, in the gateway's order. */
    char path[1024];
    snprintf(path, sizeof(path), "%s/docs/api.md", getenv("WALKLIST_SOURCE_DIR"));
    FILE *guide = fopen(path, "r");
    CHECK(guide != NULL);
    char line[2048];
    int row = 0;
    while (guide != NULL && fgets(line, sizeof(line), guide) != NULL) {
        char reason[64];
        if (sscanf(line, "| `%63[A-Z_]` | ", reason) != 1 || strstr(line, "| HTTP") != NULL)
            continue;
        /* Only the rows of the reasons' table: the first column is a reason's shape. */
        if (row < WL_REASON_COUNT && strcmp(reason, wl_reason_name(row)) == 0) {
            row++;
        } else {
            for (int i = 0; i < WL_REASON_COUNT; i++) {
                if (strcmp(reason, wl_reason_name(i)) == 0)
                    FAIL("docs/api.md lists %s out of the gateway's order", reason);
            }
        }
    }
    if (guide != NULL)
        fclose(guide);
    if (row != WL_REASON_COUNT)
        FAIL("docs/api.md's table of reasons stops at %d of %d (%s missing)", row, WL_REASON_COUNT,
             row < WL_REASON_COUNT ? wl_reason_name(row) : "-");
}

int main(void)
{
    load_document();
    test_document();
    test_routes_documented();
    test_no_phantom_operations();
    test_operation_rules();
    test_reasons_documented();

    const char *conninfo = testdb_create("e2e_openapi");
    db = testdb_connect(conninfo);
    int64_t org = fixture_org(db, "openapi-demo");
    fixture_key(db, org, "lists:write,stock:read,scanner,inventory:write", key);
    import_demo(org);
    service_start(&service, conninfo, NULL);
    port = service.port;

    test_examples();
    test_served_document(); /* needs the route */

    CHECK_INT(service_stop(&service), 0);
    PQfinish(db);
    json_decref(doc);
    return test_exit();
}
