/* The scanner's queue and loading a walk list (walklist.v1.ScannerService) against PostgreSQL. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "store/scanner.h"
#include "test.h"
#include "testdb.h"
#include "walklist/core.h"
#include "walklist/v1/locate_list.pb-c.h"
#include "walklist/v1/scanner.pb-c.h"

#define SCANNER "walklist.v1.ScannerService"
#define THREADS 16

static wl_core_t *core;
static PGconn *db;
static const char *conninfo;

typedef struct {
    wl_arena_t arena;
    wl_error_t err;
    wl_call_t call;
} call_ctx_t;

static void call_begin(call_ctx_t *ctx, const wl_principal_t *principal)
{
    wl_arena_init(&ctx->arena, 0);
    wl_error_init(&ctx->err);
    ctx->call =
        (wl_call_t){.core = core, .arena = &ctx->arena, .principal = principal, .err = &ctx->err};
}

/* No CHECK inside: the concurrency test calls this from several threads. */
static int invoke(call_ctx_t *ctx, const char *service, const char *method,
                  const ProtobufCMessage *input)
{
    const wl_service_entry_t *entry = wl_core_find_service(core, service);
    if (entry == NULL)
        return WL_EUNIMPLEMENTED;
    const ProtobufCMethodDescriptor *m =
        protobuf_c_service_descriptor_get_method_by_name(entry->descriptor, method);
    if (m == NULL)
        return WL_EUNIMPLEMENTED;
    return wl_core_invoke(&ctx->call, entry, (unsigned)(m - entry->descriptor->methods), input);
}

static void principal_for(const char *token, wl_principal_t *out)
{
    wl_error_t err;
    wl_error_init(&err);
    CHECK_INT(wl_core_authenticate(core, wl_span_str(token), out, &err), 0);
}

/* Creates a list through LocateListService; its id goes to id. */
static void create_list(const wl_principal_t *who, const char *name, char **codes, size_t n,
                        char id[64])
{
    Walklist__V1__CreateLocateListRequest create = WALKLIST__V1__CREATE_LOCATE_LIST_REQUEST__INIT;
    create.name = (char *)name;
    create.codes = codes;
    create.n_codes = n;
    call_ctx_t ctx;
    call_begin(&ctx, who);
    CHECK_INT(invoke(&ctx, "walklist.v1.LocateListService", "CreateLocateList", &create.base), 0);
    const Walklist__V1__CreateLocateListResponse *created = (const void *)ctx.call.reply;
    snprintf(id, 64, "%s", created ? created->id : "");
    wl_arena_dispose(&ctx.arena);
}

static int list_pending(call_ctx_t *ctx, const wl_principal_t *who, int page_size,
                        const Walklist__V1__ListPendingListsResponse **out)
{
    Walklist__V1__ListPendingListsRequest request = WALKLIST__V1__LIST_PENDING_LISTS_REQUEST__INIT;
    request.page_size = page_size;
    call_begin(ctx, who);
    int rc = invoke(ctx, SCANNER, "ListPendingLists", &request.base);
    *out = (const void *)ctx->call.reply;
    return rc;
}

static int load(call_ctx_t *ctx, const wl_principal_t *who, const char *id,
                const Walklist__V1__LoadLocateListResponse **out)
{
    Walklist__V1__LoadLocateListRequest request = WALKLIST__V1__LOAD_LOCATE_LIST_REQUEST__INIT;
    request.id = (char *)id;
    call_begin(ctx, who);
    int rc = invoke(ctx, SCANNER, "LoadLocateList", &request.base);
    *out = (const void *)ctx->call.reply;
    return rc;
}

/* Whether the list id is in the first page of the organization's queue. */
static bool queued(const wl_principal_t *who, const char *id)
{
    call_ctx_t ctx;
    const Walklist__V1__ListPendingListsResponse *page = NULL;
    CHECK_INT(list_pending(&ctx, who, 200, &page), 0);
    bool found = false;
    for (size_t i = 0; page != NULL && i < page->n_lists; i++)
        found = found || strcmp(page->lists[i]->id, id) == 0;
    wl_arena_dispose(&ctx.arena);
    return found;
}

/* "state loaded_at_ms" of a list, read directly. */
static const char *list_row(const char *id, char *buf, size_t size)
{
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT state || ' ' || coalesce(floor(extract(epoch FROM loaded_at) * 1000)::text,"
             " '-') FROM locate_lists WHERE id = '%s'",
             id);
    return testdb_value(db, sql, buf, size);
}

static int64_t ms_of(const Google__Protobuf__Timestamp *ts)
{
    return ts ? ts->seconds * 1000 + ts->nanos / 1000000 : -1;
}

static void test_scope(const wl_principal_t *lists_only)
{
    call_ctx_t ctx;
    const Walklist__V1__ListPendingListsResponse *page;
    CHECK_INT(list_pending(&ctx, lists_only, 0, &page), WL_EPERMISSION);
    wl_arena_dispose(&ctx.arena);
    const Walklist__V1__LoadLocateListResponse *loaded;
    CHECK_INT(load(&ctx, lists_only, "abc", &loaded), WL_EPERMISSION);
    wl_arena_dispose(&ctx.arena);
    const wl_service_entry_t *entry = wl_core_find_service(core, SCANNER);
    CHECK(entry != NULL);
    for (size_t i = 0; entry != NULL && i < entry->descriptor->n_methods; i++) {
        CHECK_INT(wl_core_method_policy(entry, (unsigned)i)->scope, WL_SCOPE_SCANNER);
        CHECK_STR(wl_core_method_policy(entry, (unsigned)i)->rate_bucket, "shared");
    }
}

static void test_queue(PGconn *conn, int64_t org_id, int64_t other_org, const wl_principal_t *who)
{
    char sql[1024];
    /* Equal created_at goes by id; a loaded list and another organization's are not queued. */
    snprintf(sql, sizeof(sql),
             "INSERT INTO locate_lists (org_id, id, name, codes, state, created_at, loaded_at)"
             " VALUES (%lld, 'q-c', 'Third', '{X,Y,Z}', 'pending', '2024-01-01 10:00:00.123Z',"
             " NULL),"
             " (%lld, 'q-b', 'Second', '{X,Y}', 'pending', '2024-01-01 09:00:00Z', NULL),"
             " (%lld, 'q-a', 'First', '{X}', 'pending', '2024-01-01 09:00:00Z', NULL),"
             " (%lld, 'q-0', 'Loaded', '{X}', 'loaded', '2023-01-01Z', '2023-01-02Z'),"
             " (%lld, 'q-other', 'Other org', '{X}', 'pending', '2020-01-01Z', NULL)",
             (long long)org_id, (long long)org_id, (long long)org_id, (long long)org_id,
             (long long)other_org);
    testdb_exec(conn, sql);

    static const struct {
        int page_size;
        const char *ids;
        bool more;
    } pages[] = {
        {0, "q-a q-b q-c", false},   {1, "q-a", true},
        {2, "q-a q-b", true},        {3, "q-a q-b q-c", false},
        {200, "q-a q-b q-c", false},
    };
    for (size_t p = 0; p < sizeof(pages) / sizeof(pages[0]); p++) {
        call_ctx_t ctx;
        const Walklist__V1__ListPendingListsResponse *page = NULL;
        CHECK_INT(list_pending(&ctx, who, pages[p].page_size, &page), 0);
        char ids[256] = "";
        for (size_t i = 0; page != NULL && i < page->n_lists; i++)
            snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s%s", i ? " " : "",
                     page->lists[i]->id);
        CHECK_STR(ids, pages[p].ids);
        CHECK_INT(page ? page->more : -1, pages[p].more);
        if (page != NULL && page->n_lists == 3 && p == 0) {
            CHECK_STR(page->lists[0]->name, "First");
            CHECK_INT(page->lists[0]->codes_count, 1);
            CHECK_INT(page->lists[2]->codes_count, 3);
            CHECK_INT(page->lists[2]->created_at->seconds, 1704103200);
            CHECK_INT(page->lists[2]->created_at->nanos, 123000000);
        }
        wl_arena_dispose(&ctx.arena);
    }

    static const int invalid[] = {-1, 201, 100000};
    for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
        call_ctx_t ctx;
        const Walklist__V1__ListPendingListsResponse *page = NULL;
        CHECK_INT(list_pending(&ctx, who, invalid[i], &page), WL_EINVAL);
        CHECK_INT(wl_error_grpc_code(ctx.err.code), WL_GRPC_INVALID_ARGUMENT);
        CHECK_INT(ctx.err.violation_count, 1);
        CHECK_STR(ctx.err.violations[0].field, "pageSize");
        wl_arena_dispose(&ctx.arena);
    }
}

/* 0 means 50; 200 is the largest page. */
static void test_queue_default_page(PGconn *conn, int64_t org_id, const wl_principal_t *who)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "INSERT INTO locate_lists (org_id, id, name, codes, created_at)"
             " SELECT %lld, 'm-' || lpad(i::text, 3, '0'), 'List ' || i, '{X}',"
             " '2024-01-01Z'::timestamptz + i * interval '1 second'"
             " FROM generate_series(1, 251) AS i",
             (long long)org_id);
    testdb_exec(conn, sql);
    static const struct {
        int page_size;
        size_t count;
        bool more;
        const char *last;
    } pages[] = {{0, 50, true, "m-050"}, {200, 200, true, "m-200"}};
    for (size_t p = 0; p < sizeof(pages) / sizeof(pages[0]); p++) {
        call_ctx_t ctx;
        const Walklist__V1__ListPendingListsResponse *page = NULL;
        CHECK_INT(list_pending(&ctx, who, pages[p].page_size, &page), 0);
        CHECK_INT(page ? page->n_lists : 0, pages[p].count);
        CHECK_INT(page ? page->more : 0, pages[p].more);
        if (page != NULL && page->n_lists == pages[p].count) {
            CHECK_STR(page->lists[0]->id, "m-001");
            CHECK_STR(page->lists[pages[p].count - 1]->id, pages[p].last);
        }
        wl_arena_dispose(&ctx.arena);
    }
}

static void test_load_transitions(const wl_principal_t *a, const wl_principal_t *b)
{
    char id[64], row[64], before[64];
    char *codes[] = {"NOPE"};
    create_list(a, "Transitions", codes, 1, id);
    CHECK(queued(a, id));
    CHECK(!queued(b, id));
    list_row(id, before, sizeof(before));
    CHECK_STR(before, "pending -");

    /* Another organization's id, unknown and implausible ids: NOT_FOUND, nothing changes. */
    const char *missing[] = {id,    "nosuchlist000000000000",
                             "",    "../etc",
                             "a b", "0123456789012345678901234567890123456789X"};
    for (size_t i = 0; i < sizeof(missing) / sizeof(missing[0]); i++) {
        call_ctx_t ctx;
        const Walklist__V1__LoadLocateListResponse *reply = NULL;
        CHECK_INT(load(&ctx, i == 0 ? b : a, missing[i], &reply), WL_ENOTFOUND);
        CHECK_INT(wl_error_grpc_code(ctx.err.code), WL_GRPC_NOT_FOUND);
        CHECK(reply == NULL);
        wl_arena_dispose(&ctx.arena);
    }
    CHECK_STR(list_row(id, row, sizeof(row)), "pending -");
    CHECK(queued(a, id));

    call_ctx_t ctx;
    const Walklist__V1__LoadLocateListResponse *reply = NULL;
    CHECK_INT(load(&ctx, a, id, &reply), 0);
    CHECK(reply != NULL);
    int64_t loaded_ms = reply ? ms_of(reply->loaded_at) : -1;
    if (reply != NULL) {
        CHECK_STR(reply->id, id);
        CHECK_STR(reply->name, "Transitions");
        CHECK(reply->loaded_at != NULL && reply->loaded_at->nanos % 1000000 == 0);
        CHECK_INT(reply->n_codes, 1);
        CHECK_INT(reply->n_stops, 0);
        CHECK_INT(reply->n_unlocated, 0);
    }
    wl_arena_dispose(&ctx.arena);
    char expected[64];
    snprintf(expected, sizeof(expected), "loaded %lld", (long long)loaded_ms);
    CHECK_STR(list_row(id, row, sizeof(row)), expected);
    CHECK(!queued(a, id));

    /* GetLocateList shows the same state and loadedAt. */
    Walklist__V1__GetLocateListRequest get = WALKLIST__V1__GET_LOCATE_LIST_REQUEST__INIT;
    get.id = id;
    call_begin(&ctx, a);
    CHECK_INT(invoke(&ctx, "walklist.v1.LocateListService", "GetLocateList", &get.base), 0);
    const Walklist__V1__LocateList *list = (const void *)ctx.call.reply;
    CHECK_STR(list ? list->state : NULL, "loaded");
    CHECK_INT(list ? ms_of(list->loaded_at) : -1, loaded_ms);
    wl_arena_dispose(&ctx.arena);

    /* A second load: FAILED_PRECONDITION, loaded_at kept; another org still NOT_FOUND. */
    CHECK_INT(load(&ctx, a, id, &reply), WL_EPRECONDITION);
    CHECK_INT(wl_error_grpc_code(ctx.err.code), WL_GRPC_FAILED_PRECONDITION);
    CHECK_STR(ctx.err.message, "the walk list is already loaded");
    wl_arena_dispose(&ctx.arena);
    CHECK_INT(load(&ctx, b, id, &reply), WL_ENOTFOUND);
    wl_arena_dispose(&ctx.arena);
    CHECK_STR(list_row(id, row, sizeof(row)), expected);
}

/* A failure after the claim (here: the caller cannot build its answer) loads nothing. */
static void test_load_rolls_back(int64_t org_id, const wl_principal_t *a)
{
    char id[64], row[64];
    char *codes[] = {"Z-9", "NOPE"};
    create_list(a, "Rollback", codes, 2, id);
    PGconn *conn = testdb_connect(conninfo);
    wl_arena_t arena;
    wl_arena_init(&arena, 0);
    wl_error_t err;
    wl_error_init(&err);
    wl_loaded_list_t loaded;
    CHECK_INT(wl_scanner_load_begin(conn, org_id, id, &arena, &loaded, &err), 0);
    CHECK_INT(loaded.resolution.code_count, 2);
    CHECK_INT(PQtransactionStatus(conn), PQTRANS_INTRANS);
    CHECK_STR(list_row(id, row, sizeof(row)), "pending -"); /* others see nothing yet */
    wl_scanner_load_abandon(conn);
    CHECK_INT(PQtransactionStatus(conn), PQTRANS_IDLE);
    CHECK_STR(list_row(id, row, sizeof(row)), "pending -");
    CHECK(queued(a, id));
    wl_arena_dispose(&arena);
    PQfinish(conn);

    /* The list then loads normally. */
    call_ctx_t ctx;
    const Walklist__V1__LoadLocateListResponse *reply = NULL;
    CHECK_INT(load(&ctx, a, id, &reply), 0);
    wl_arena_dispose(&ctx.arena);
}

static const char *outcome_name(Walklist__V1__CodeOutcome outcome)
{
    switch (outcome) {
    case WALKLIST__V1__CODE_OUTCOME__CODE_OUTCOME_SKU:
        return "SKU";
    case WALKLIST__V1__CODE_OUTCOME__CODE_OUTCOME_EAN:
        return "EAN";
    case WALKLIST__V1__CODE_OUTCOME__CODE_OUTCOME_AMBIGUOUS:
        return "AMBIGUOUS";
    case WALKLIST__V1__CODE_OUTCOME__CODE_OUTCOME_NOT_FOUND:
        return "NOT_FOUND";
    default:
        return "?";
    }
}

/* Inventory of org A for the resolution test (CSV imports). */
static void import_inventory(int64_t org_id)
{
    fixture_import(db, org_id, "warehouses",
                   "code,name,kind\nW1,Main,own\nW2,Second,own\nSUP,Supplier,supplier\n");
    fixture_import(db, org_id, "locations",
                   "warehouse,code,staging\n"
                   "W1,A-10,false\nW1,A-02,false\nW1,A-2,false\nW1,STAGE-1,true\nW1,a-1,false\n"
                   "W2,A-2,false\nW2,A-10,false\nSUP,A-1,false\n");
    fixture_import(db, org_id, "products",
                   "sku,name,eans\n"
                   "SHARED-1,Shared,\n"
                   "R-1,Holds SHARED-1 as EAN,SHARED-1|4000000000099\n"
                   "P-10,Ten,4000000000010\n"
                   "AMB-B,Amb B,5000000000005\n"
                   "AMB-A,Amb A,5000000000005|4000000000098\n"
                   "LONELY,Lonely,\n"
                   "STAGED,Staged only,\n"
                   "Z-9,Zed,\n");
    fixture_import(db, org_id, "location-stock",
                   "sku,warehouse,location,quantity\n"
                   "SHARED-1,W2,A-2,5\n"
                   "SHARED-1,W1,A-10,1\n"
                   "R-1,W1,A-2,7\n"
                   "P-10,W1,A-02,0\n"
                   "P-10,W1,STAGE-1,3\n"
                   "P-10,SUP,A-1,9\n"
                   "AMB-B,W1,A-2,2\n"
                   "AMB-A,W1,A-2,4\n"
                   "AMB-A,W2,A-10,1\n"
                   "STAGED,W1,STAGE-1,5\n"
                   "STAGED,SUP,A-1,5\n"
                   "Z-9,W1,A-2,1\n"
                   "Z-9,W1,a-1,3\n");
}

static void test_resolution(const wl_principal_t *a)
{
    char id[64];
    char *codes[] = {"NOPE-1", "4000000000010", "STAGED", "SHARED-1", "5000000000005",
                     "LONELY", "P-10",          "Z-9",    "shared-1"};
    create_list(a, "Resolution", codes, 9, id);
    call_ctx_t ctx;
    const Walklist__V1__LoadLocateListResponse *reply = NULL;
    CHECK_INT(load(&ctx, a, id, &reply), 0);
    if (reply == NULL) {
        FAIL("no reply: %s", ctx.err.message);
        wl_arena_dispose(&ctx.arena);
        return;
    }

    /* Every code once, in list order. SHARED-1 is a SKU and R-1's EAN: the SKU wins. */
    static const char *expected_codes[] = {
        "NOPE-1 NOT_FOUND",
        "4000000000010 EAN P-10",
        "STAGED SKU STAGED",
        "SHARED-1 SKU SHARED-1",
        "5000000000005 AMBIGUOUS AMB-A,AMB-B",
        "LONELY SKU LONELY",
        "P-10 SKU P-10",
        "Z-9 SKU Z-9",
        "shared-1 NOT_FOUND", /* case-sensitive */
    };
    CHECK_INT(reply->n_codes, 9);
    for (size_t i = 0; i < reply->n_codes && i < 9; i++) {
        char got[128];
        const Walklist__V1__CodeResolution *c = reply->codes[i];
        snprintf(got, sizeof(got), "%s %s", c->code, outcome_name(c->outcome));
        for (size_t j = 0; j < c->n_skus; j++)
            snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", j ? "," : " ",
                     c->skus[j]);
        CHECK_STR(got, expected_codes[i]);
    }

    /*
     * Natural bin order (A-2 < A-02 < A-10 < a-1), then warehouse, then SKU. The
     * quantity-0 location counts; staging and supplier locations do not; R-1 is not walked.
     * P-10 is walked once, under the first code that matched it (its EAN).
     */
    static const char *expected_stops[] = {
        "A-2 W1 AMB-A 4 5000000000005 ambiguous Amb A",
        "A-2 W1 AMB-B 2 5000000000005 ambiguous Amb B",
        "A-2 W1 Z-9 1 Z-9 - Zed",
        "A-2 W2 SHARED-1 5 SHARED-1 - Shared",
        "A-02 W1 P-10 0 4000000000010 - Ten",
        "A-10 W1 SHARED-1 1 SHARED-1 - Shared",
        "A-10 W2 AMB-A 1 5000000000005 ambiguous Amb A",
        "a-1 W1 Z-9 3 Z-9 - Zed",
    };
    size_t n_expected = sizeof(expected_stops) / sizeof(expected_stops[0]);
    CHECK_INT(reply->n_stops, n_expected);
    for (size_t i = 0; i < reply->n_stops && i < n_expected; i++) {
        char got[160];
        const Walklist__V1__WalkStop *s = reply->stops[i];
        snprintf(got, sizeof(got), "%s %s %s %lld %s %s %s", s->bin_code, s->warehouse, s->sku,
                 (long long)s->quantity, s->code, s->ambiguous ? "ambiguous" : "-",
                 s->product_name);
        CHECK_STR(got, expected_stops[i]);
    }

    /* Matched products without a stop, in list order (STAGED before LONELY). */
    CHECK_INT(reply->n_unlocated, 2);
    if (reply->n_unlocated == 2) {
        CHECK_STR(reply->unlocated[0]->sku, "STAGED");
        CHECK_STR(reply->unlocated[0]->product_name, "Staged only");
        CHECK_STR(reply->unlocated[0]->code, "STAGED");
        CHECK(!reply->unlocated[0]->ambiguous);
        CHECK_STR(reply->unlocated[1]->sku, "LONELY");
    }
    wl_arena_dispose(&ctx.arena);
}

/* An unlocated product behind an ambiguous EAN keeps its flag. */
static void test_ambiguous_unlocated(int64_t org_id, const wl_principal_t *a)
{
    fixture_import(db, org_id, "products",
                   "sku,name,eans\nNOWHERE-1,Nowhere,7000000000007\nNOWHERE-2,Nowhere "
                   "too,7000000000007\n");
    char id[64];
    char *codes[] = {"7000000000007"};
    create_list(a, "Ambiguous unlocated", codes, 1, id);
    call_ctx_t ctx;
    const Walklist__V1__LoadLocateListResponse *reply = NULL;
    CHECK_INT(load(&ctx, a, id, &reply), 0);
    CHECK_INT(reply ? reply->n_unlocated : 0, 2);
    if (reply != NULL && reply->n_unlocated == 2) {
        CHECK_STR(reply->unlocated[0]->sku, "NOWHERE-1");
        CHECK_STR(reply->unlocated[1]->sku, "NOWHERE-2");
        CHECK(reply->unlocated[0]->ambiguous && reply->unlocated[1]->ambiguous);
        CHECK_STR(reply->unlocated[1]->code, "7000000000007");
        CHECK_INT(reply->n_stops, 0);
    }
    wl_arena_dispose(&ctx.arena);
}

/* The largest list: 200 codes, 150 products on 150 bins, 50 unknown codes. */
static void test_200_codes(int64_t org_id, const wl_principal_t *a)
{
    static char products[16384], locations[16384], stock[16384];
    size_t p = 0, l = 0, s = 0;
    p += (size_t)snprintf(products + p, sizeof(products) - p, "sku,name,eans\n");
    l += (size_t)snprintf(locations + l, sizeof(locations) - l, "warehouse,code,staging\n");
    s += (size_t)snprintf(stock + s, sizeof(stock) - s, "sku,warehouse,location,quantity\n");
    for (int i = 1; i <= 150; i++) {
        p += (size_t)snprintf(products + p, sizeof(products) - p, "BULK-%03d,Bulk %d,\n", i, i);
        l += (size_t)snprintf(locations + l, sizeof(locations) - l, "W1,R-%d,false\n", i);
        s += (size_t)snprintf(stock + s, sizeof(stock) - s, "BULK-%03d,W1,R-%d,%d\n", i, i, i);
    }
    fixture_import(db, org_id, "products", products);
    fixture_import(db, org_id, "locations", locations);
    fixture_import(db, org_id, "location-stock", stock);

    /* Products in reverse order, every fourth code unknown. */
    static char code_text[200][32];
    char *codes[200];
    int next_product = 150, next_missing = 1;
    for (int i = 0; i < 200; i++) {
        if (i % 4 == 3)
            snprintf(code_text[i], sizeof(code_text[i]), "MISSING-%d", next_missing++);
        else
            snprintf(code_text[i], sizeof(code_text[i]), "BULK-%03d", next_product--);
        codes[i] = code_text[i];
    }
    char id[64];
    create_list(a, "Two hundred", codes, 200, id);
    call_ctx_t ctx;
    const Walklist__V1__LoadLocateListResponse *reply = NULL;
    CHECK_INT(load(&ctx, a, id, &reply), 0);
    if (reply == NULL) {
        wl_arena_dispose(&ctx.arena);
        return;
    }
    CHECK_INT(reply->n_codes, 200);
    size_t in_order = 0, outcomes = 0;
    for (size_t i = 0; i < reply->n_codes && i < 200; i++) {
        in_order += strcmp(reply->codes[i]->code, code_text[i]) == 0;
        Walklist__V1__CodeOutcome expected =
            i % 4 == 3 ? WALKLIST__V1__CODE_OUTCOME__CODE_OUTCOME_NOT_FOUND
                       : WALKLIST__V1__CODE_OUTCOME__CODE_OUTCOME_SKU;
        outcomes += reply->codes[i]->outcome == expected;
    }
    CHECK_INT(in_order, 200);
    CHECK_INT(outcomes, 200);
    /* Bins in natural order, ..., R-10, ..., R-150 (not, ...). */
    CHECK_INT(reply->n_stops, 150);
    size_t natural = 0;
    for (size_t i = 0; i < reply->n_stops; i++) {
        char bin[32], sku[32];
        snprintf(bin, sizeof(bin), "R-%zu", i + 1);
        snprintf(sku, sizeof(sku), "BULK-%03zu", i + 1);
        natural +=
            strcmp(reply->stops[i]->bin_code, bin) == 0 && strcmp(reply->stops[i]->sku, sku) == 0 &&
            strcmp(reply->stops[i]->code, sku) == 0 && reply->stops[i]->quantity == (int64_t)i + 1;
    }
    CHECK_INT(natural, 150);
    CHECK_INT(reply->n_unlocated, 0);
    wl_arena_dispose(&ctx.arena);
}

typedef struct {
    const wl_principal_t *who;
    const char *id;
    pthread_barrier_t *start;
    int rc;
    size_t stops;
} racer_t;

static void *race(void *arg)
{
    racer_t *racer = arg;
    call_ctx_t ctx;
    Walklist__V1__LoadLocateListRequest request = WALKLIST__V1__LOAD_LOCATE_LIST_REQUEST__INIT;
    request.id = (char *)racer->id;
    call_begin(&ctx, racer->who);
    pthread_barrier_wait(racer->start);
    racer->rc = invoke(&ctx, SCANNER, "LoadLocateList", &request.base);
    const Walklist__V1__LoadLocateListResponse *reply = (const void *)ctx.call.reply;
    racer->stops = racer->rc == 0 && reply != NULL ? reply->n_stops : 0;
    wl_arena_dispose(&ctx.arena);
    return NULL;
}

/* 16 devices load the same list at once: exactly one wins. */
static void test_concurrent_load(const wl_principal_t *a)
{
    for (int round = 0; round < 3; round++) {
        char id[64];
        char *codes[] = {"Z-9", "5000000000005", "NOPE"};
        create_list(a, "Race", codes, 3, id);
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, THREADS);
        pthread_t threads[THREADS];
        racer_t racers[THREADS];
        for (int i = 0; i < THREADS; i++) {
            racers[i] = (racer_t){a, id, &start, -1, 0};
            CHECK_INT(pthread_create(&threads[i], NULL, race, &racers[i]), 0);
        }
        int won = 0, refused = 0, other = 0;
        for (int i = 0; i < THREADS; i++) {
            pthread_join(threads[i], NULL);
            if (racers[i].rc == 0) {
                won++;
                CHECK_INT(racers[i].stops, 5); /* Z-9 twice, AMB-A twice, AMB-B once */
            } else if (racers[i].rc == WL_EPRECONDITION) {
                refused++;
            } else {
                other++;
                FAIL("racer %d: rc %d", i, racers[i].rc);
            }
        }
        pthread_barrier_destroy(&start);
        CHECK_INT(won, 1);
        CHECK_INT(refused, THREADS - 1);
        CHECK_INT(other, 0);
        char row[64];
        CHECK(strncmp(list_row(id, row, sizeof(row)), "loaded ", 7) == 0);
    }
}

int main(void)
{
    conninfo = testdb_create("integration_scanner");
    db = testdb_connect(conninfo);
    int64_t org_a = fixture_org(db, "scan-a");
    int64_t org_b = fixture_org(db, "scan-b");
    int64_t org_queue = fixture_org(db, "scan-queue");
    int64_t org_many = fixture_org(db, "scan-many");
    char key_a[WL_KEY_TOKEN_SIZE], key_b[WL_KEY_TOKEN_SIZE], key_lists[WL_KEY_TOKEN_SIZE];
    char key_queue[WL_KEY_TOKEN_SIZE], key_many[WL_KEY_TOKEN_SIZE];
    fixture_key(db, org_a, "lists:write,scanner", key_a);
    fixture_key(db, org_b, "lists:write,scanner", key_b);
    fixture_key(db, org_a, "lists:write", key_lists);
    fixture_key(db, org_queue, "scanner", key_queue);
    fixture_key(db, org_many, "scanner", key_many);
    import_inventory(org_a);

    wl_error_t err;
    wl_error_init(&err);
    wl_core_config_t config = {.database_url = conninfo, .db_pool_size = THREADS + 2};
    if (wl_core_create(&config, &core, &err) != 0) {
        fprintf(stderr, "core: %s\n", err.message);
        return 1;
    }
    CHECK_INT(wl_core_ready(core, &err), 0);
    wl_principal_t a, b, lists_only, queue, many;
    principal_for(key_a, &a);
    principal_for(key_b, &b);
    principal_for(key_lists, &lists_only);
    principal_for(key_queue, &queue);
    principal_for(key_many, &many);

    test_scope(&lists_only);
    test_queue(db, org_queue, org_b, &queue);
    test_queue_default_page(db, org_many, &many);
    test_load_transitions(&a, &b);
    test_load_rolls_back(org_a, &a);
    test_resolution(&a);
    test_ambiguous_unlocated(org_a, &a);
    test_200_codes(org_a, &a);
    test_concurrent_load(&a);

    wl_core_destroy(core);
    PQfinish(db);
    return test_exit();
}
