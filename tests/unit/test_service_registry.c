/* Method tables bound to their service descriptors by name: the core's own tables, and tables
 * that are wrong in each way wl_core_create must refuse. */
#include <string.h>

#include "services/services.h"
#include "test.h"

static int no_method(wl_call_t *call, const ProtobufCMessage *input, const ProtobufCMessage **reply)
{
    (void)call;
    (void)input;
    (void)reply;
    return WL_EUNIMPLEMENTED;
}

#define ROW(method_name)                                                                           \
    {                                                                                              \
        .name = method_name, .run = no_method, .policy = {.scope = WL_SCOPE_SCANNER }              \
    }

/* Binds rows against ScannerService (ListPendingLists, LoadLocateList); the error goes to err. */
static int bind(const wl_method_t *rows, size_t count, const wl_method_t *by_index[2],
                wl_error_t *err)
{
    wl_service_table_t table = {&walklist__v1__scanner_service__descriptor, rows, count};
    wl_error_init(err);
    return wl__service_table_bind(&table, by_index, err);
}

static void test_core_tables(void)
{
    const wl_service_table_t *tables[] = {&wl__locate_list_service, &wl__stock_service,
                                          &wl__scanner_service, &wl__inventory_service};
    for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
        const wl_method_t *by_index[16];
        wl_error_t err;
        wl_error_init(&err);
        CHECK(tables[i]->descriptor->n_methods <= 16);
        CHECK_INT(wl__service_table_bind(tables[i], by_index, &err), 0);
        CHECK_STR(err.message, "");
        for (unsigned m = 0; m < tables[i]->descriptor->n_methods; m++)
            CHECK_STR(by_index[m]->name, tables[i]->descriptor->methods[m].name);
    }
    /* The hot path's two methods admit with their work; they are found by name, not place. */
    const wl_method_t *create =
        wl__service_table_find(&wl__locate_list_service, "CreateLocateList");
    const wl_method_t *get = wl__service_table_find(&wl__locate_list_service, "GetLocateList");
    CHECK(create != NULL && create->policy.admits_with_work);
    CHECK(get != NULL && get->policy.admits_with_work);
    CHECK(wl__service_table_find(&wl__stock_service, "CreateLocateList") == NULL);
}

static void test_any_order(void)
{
    const wl_method_t rows[] = {ROW("LoadLocateList"), ROW("ListPendingLists")};
    const wl_method_t *by_index[2];
    wl_error_t err;
    CHECK_INT(bind(rows, 2, by_index, &err), 0);
    CHECK(by_index[0] == &rows[1]);
    CHECK(by_index[1] == &rows[0]);
}

static void test_wrong_tables(void)
{
    const wl_method_t missing[] = {ROW("ListPendingLists")};
    const wl_method_t unknown[] = {ROW("ListPendingLists"), ROW("LoadList")};
    const wl_method_t extra[] = {ROW("ListPendingLists"), ROW("LoadLocateList"), ROW("LoadList")};
    const wl_method_t twice[] = {ROW("ListPendingLists"), ROW("ListPendingLists")};
    const wl_method_t unnamed[] = {ROW("ListPendingLists"), ROW(NULL)};
    wl_method_t no_function[] = {ROW("ListPendingLists"), ROW("LoadLocateList")};
    no_function[1].run = NULL;
    const struct {
        const char *what;
        const wl_method_t *rows;
        size_t count;
        const char *message;
    } cases[] = {
        {"a method without a row", missing, 1,
         "walklist.v1.ScannerService: method LoadLocateList has no row in the method table, so "
         "no policy (2 methods, 1 rows)"},
        {"a row naming no method", unknown, 2,
         "walklist.v1.ScannerService: the method table's row 1 (LoadList) names no method of "
         "the service (2 methods, 2 rows)"},
        {"one row too many", extra, 3,
         "walklist.v1.ScannerService: the method table's row 2 (LoadList) names no method of "
         "the service (2 methods, 3 rows)"},
        {"two rows for one method", twice, 2,
         "walklist.v1.ScannerService: the method table has two rows for ListPendingLists (2 "
         "methods, 2 rows)"},
        {"a row without a name", unnamed, 2,
         "walklist.v1.ScannerService: the method table's row 1 (no name) names no method of the "
         "service (2 methods, 2 rows)"},
        {"a row without a function", no_function, 2,
         "walklist.v1.ScannerService: the method table's row for LoadLocateList has no "
         "function"},
        {"no rows at all", missing, 0,
         "walklist.v1.ScannerService: method ListPendingLists has no row in the method table, "
         "so no policy (2 methods, 0 rows)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const wl_method_t *by_index[2];
        wl_error_t err;
        int rc = bind(cases[i].rows, cases[i].count, by_index, &err);
        if (rc != WL_EINTERNAL)
            FAIL("%s: bound (%d)", cases[i].what, rc);
        CHECK_STR(err.message, cases[i].message);
    }
}

int main(void)
{
    test_core_tables();
    test_any_order();
    test_wrong_tables();
    return test_exit();
}
