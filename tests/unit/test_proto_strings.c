/* The wire-level string check of binary protobuf requests (gateway/codec/proto_strings.c), by
 * table. */
#include "test.h"

#include "codec/proto_strings.h"
#include "walklist/v1/inventory.pb-c.h"
#include "walklist/v1/locate_list.pb-c.h"
#include "walklist/v1/stock.pb-c.h"

/* Wire bytes written as a string literal, and their length (NULs inside allowed). */
#define WIRE(literal) (const uint8_t *)literal, sizeof(literal) - 1

typedef struct {
    const char *what;
    const ProtobufCMessageDescriptor *desc;
    const uint8_t *data;
    size_t len;
    const char *violation; /* the first field named, NULL when the message passes */
    size_t violations;
} case_t;

int main(void)
{
    const ProtobufCMessageDescriptor *list = &walklist__v1__create_locate_list_request__descriptor;
    const ProtobufCMessageDescriptor *products = &walklist__v1__upsert_products_request__descriptor;
    const ProtobufCMessageDescriptor *stock = &walklist__v1__list_stock_request__descriptor;
    /* CreateLocateListRequest: name = 1, codes = 2. UpsertProductsRequest: products = 1
     * (Product: sku = 1, name = 2, eans = 3). ListStockRequest: page_size = 1 (varint),
     * page_token = 2, sku = 3, warehouse = 4. */
    const case_t cases[] = {
        {"plain strings", list,
         WIRE("\x0a\x02ok\x12\x01"
              "A\x12\x01"
              "B"),
         NULL, 0},
        {"emoji", list,
         WIRE("\x0a\x04\xF0\x9F\x98\x80\x12\x01"
              "A"),
         NULL, 0},
        {"empty message", list, WIRE(""), NULL, 0},
        {"NUL inside a name", list,
         WIRE("\x0a\x03"
              "a\0b\x12\x01"
              "A"),
         "name", 1},
        {"a name of one NUL", list, WIRE("\x0a\x01\0"), "name", 1},
        {"invalid UTF-8 in the second code", list,
         WIRE("\x12\x01"
              "A\x12\x02\xFF\xFE"),
         "codes[1]", 1},
        {"overlong encoding", list, WIRE("\x0a\x02\xC0\xAF"), "name", 1},
        {"surrogate", list, WIRE("\x0a\x03\xED\xA0\x80"), "name", 1},
        {"cut sequence", list, WIRE("\x0a\x02\xE2\x82"), "name", 1},
        {"two bad strings", list, WIRE("\x0a\x01\0\x12\x01\xFF"), "name", 2},
        {"nested: second product's name", products,
         WIRE("\x0a\x05\x0a\x03SKU\x0a\x07\x0a\x01X\x12\x02\0a"), "products[1].name", 1},
        {"nested: first product's third EAN", products,
         WIRE("\x0a\x0a\x1a\x01"
              "1\x1a\x01"
              "2\x1a\x02\x80\x80"),
         "products[0].eans[2]", 1},
        {"a number, then a filter with NUL", stock,
         WIRE("\x08\x0a\x1a\x02"
              "a\0"),
         "sku", 1},
        {"page token lower camel case", stock, WIRE("\x12\x01\0"), "pageToken", 1},
        /* An unknown field holds no string of ours; protobuf-c keeps or drops it. */
        {"unknown field with NUL", list, WIRE("\x7a\x02\0\0"), NULL, 0},
        /* Not a message: left for protobuf-c to refuse. */
        {"length past the end", list,
         WIRE("\x0a\x09"
              "a\0"),
         NULL, 0},
        {"truncated varint", list, WIRE("\x08\xFF"), NULL, 0},
        {"a group", list, WIRE("\x0b\x0c"), NULL, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const case_t *c = &cases[i];
        wl_error_t err;
        wl_error_init(&err);
        int rc = wl_proto_check_strings(c->desc, c->data, c->len, &err);
        if (c->violation == NULL) {
            if (rc != 0)
                FAIL("%s: refused (%s)", c->what,
                     err.violation_count ? err.violations[0].field : err.message);
            CHECK_INT(err.violation_count, 0);
            continue;
        }
        if (rc != WL_EINVAL || err.violation_count == 0) {
            FAIL("%s: not refused", c->what);
            continue;
        }
        CHECK_STR(err.violations[0].field, c->violation);
        CHECK_INT(err.violation_count, c->violations);
        CHECK(strlen(err.violations[0].description) > 0);
    }
    return test_exit();
}
