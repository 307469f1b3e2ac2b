/* Connect's GET form: reading the query of a call, and the methods' idempotency levels as the
 * embedded descriptor set declares them. */
#include "test.h"

#include <string.h>

#include "protocols/connect_get.h"
#include "reflection/descriptor_index.h"

typedef struct {
    const char *query;
    wl_connect_get_result_t result;
    bool json, gzip;
    const char *message; /* NULL: not checked */
    size_t message_len;
} read_case_t;

#define READ(q, j, g, m)                                                                           \
    {                                                                                              \
        q, WL_CONNECT_GET_READ, j, g, m, sizeof(m) - 1                                             \
    }
#define REFUSED(q, result)                                                                         \
    {                                                                                              \
        q, result, false, false, NULL, 0                                                           \
    }

static const read_case_t cases[] = {
    READ("connect=v1&encoding=json&message=%7B%7D", true, false, "{}"),
    /* Any order, other parameters ignored. */
    READ("message=%7B%7D&x=1&encoding=json&api_key=k&connect=v1", true, false, "{}"),
    /* '+' is a space, as in any query. */
    READ("connect=v1&encoding=json&message=%7B%22a%22%3A+1%7D", true, false, "{\"a\": 1}"),
    /* base64=1: URL-safe, unpadded or padded ('=' percent-encoded), the standard alphabet too. */
    READ("connect=v1&encoding=proto&message=Zm9v&base64=1", false, false, "foo"),
    READ("connect=v1&encoding=proto&message=Zm8%3D&base64=1", false, false, "fo"),
    READ("connect=v1&encoding=proto&message=Zm8&base64=1", false, false, "fo"),
    READ("connect=v1&encoding=proto&message=-_8&base64=1", false, false, "\xfb\xff"),
    READ("connect=v1&encoding=proto&message=%2B%2F8%3D&base64=1", false, false, "\xfb\xff"),
    /* Another base64 value is ignored (the protocol's rule): the message as it is. */
    READ("connect=v1&encoding=json&message=Zm9v&base64=true", true, false, "Zm9v"),
    /* The empty message. */
    READ("connect=v1&encoding=proto&message=&base64=1", false, false, ""),
    READ("connect=v1&encoding=proto&message=", false, false, ""),
    READ("connect=v1&encoding=proto&message=H4s&base64=1&compression=gzip", false, true,
         "\x1f\x8b"),
    READ("connect=v1&encoding=json&message=%7B%7D&compression=identity", true, false, "{}"),
    /* The problems, in the order they are answered. */
    REFUSED("connect=v1&encoding=json&message=%7B%7D&message=%7B%7D", WL_CONNECT_GET_INVALID),
    REFUSED("connect=v1&connect=v1&encoding=json&message=%7B%7D", WL_CONNECT_GET_INVALID),
    REFUSED("connect=v1&encoding=json&message=%7B%G1", WL_CONNECT_GET_INVALID),
    REFUSED("connect=v1&message=%7B%7D", WL_CONNECT_GET_CODEC),
    REFUSED("connect=v1&encoding=JSON&message=%7B%7D", WL_CONNECT_GET_CODEC),
    REFUSED("connect=v1&encoding=xml&message=%7B%7D", WL_CONNECT_GET_CODEC),
    REFUSED("encoding=xml&message=%7B%7D", WL_CONNECT_GET_CODEC),
    REFUSED("encoding=json&message=%7B%7D", WL_CONNECT_GET_VERSION),
    REFUSED("connect=v2&encoding=json&message=%7B%7D", WL_CONNECT_GET_VERSION),
    REFUSED("connect=v1&encoding=json&message=%7B%7D&compression=br", WL_CONNECT_GET_COMPRESSION),
    REFUSED("connect=v1&encoding=json&compression=br", WL_CONNECT_GET_COMPRESSION),
    REFUSED("connect=v1&encoding=json", WL_CONNECT_GET_MESSAGE),
    REFUSED("connect=v1&encoding=proto&message=%21%21&base64=1", WL_CONNECT_GET_MESSAGE),
    REFUSED("connect=v1&encoding=proto&message=Z&base64=1", WL_CONNECT_GET_MESSAGE),
    REFUSED("connect=v1&encoding=proto&message=+_8%3D&base64=1", WL_CONNECT_GET_MESSAGE),
    REFUSED("", WL_CONNECT_GET_CODEC),
};

static void check_read(const read_case_t *c)
{
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    wl_connect_get_t get;
    wl_connect_get_result_t result = wl_connect_get_read(wl_span_str(c->query), &arena, &get);
    if (result != c->result)
        FAIL("%s: result %d, expected %d (%s)", c->query, (int)result, (int)c->result,
             get.problem ? get.problem : "");
    if (result == WL_CONNECT_GET_READ) {
        CHECK(get.json == c->json);
        CHECK(get.gzip == c->gzip);
        if (get.message.len != c->message_len ||
            memcmp(get.message.base, c->message, c->message_len) != 0)
            FAIL("%s: message of %zu bytes, expected %zu", c->query, get.message.len,
                 c->message_len);
    } else {
        CHECK(get.problem != NULL && get.problem[0] != '\0');
    }
    wl_arena_dispose(&arena);
}

/* Every method's level as proto/ declares it: the read-only ones NO_SIDE_EFFECTS (1). */
static void check_idempotency(void)
{
    wl_descriptor_index_t *index = NULL;
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_descriptor_index_create((const uint8_t *)wl_descriptor_set, wl_descriptor_set_len,
                                         &index, &err),
              0);
    static const struct {
        const char *service, *method;
        int level;
    } methods[] = {
        {"walklist.v1.LocateListService", "GetLocateList", 1},
        {"walklist.v1.LocateListService", "CreateLocateList", 0},
        {"walklist.v1.StockService", "ExportStock", 1},
        {"walklist.v1.StockService", "ListStock", 1},
        {"walklist.v1.StockService", "WatchStock", 0},
        {"walklist.v1.ScannerService", "ListPendingLists", 1},
        {"walklist.v1.ScannerService", "LoadLocateList", 0},
        {"walklist.v1.InventoryService", "SetStock", 0},
        {"walklist.v1.StockService", "Nope", -1},
        {"walklist.v1.NoService", "ExportStock", -1},
        {"walklist.v1.StockExportItem", "sku", -1},
    };
    for (size_t i = 0; index != NULL && i < sizeof(methods) / sizeof(methods[0]); i++) {
        int level = wl_descriptor_index_idempotency(index, methods[i].service, methods[i].method);
        if (level != methods[i].level)
            FAIL("%s.%s: level %d, expected %d", methods[i].service, methods[i].method, level,
                 methods[i].level);
    }
    wl_descriptor_index_destroy(index);
}

int main(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_read(&cases[i]);
    check_idempotency();
    return test_exit();
}
