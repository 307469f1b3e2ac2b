/* Creating and reading walk lists (walklist.v1.LocateListService) happens here. */
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "walklist/random.h"
#include "services/services.h"
#include "store/lists.h"
#include "walklist/codes.h"

/**
 * Validates and normalises a create request: the name as sent, the codes
 * trimmed and deduplicated. unique receives arena memory.
 */
static int normalize_request(const Walklist__V1__CreateLocateListRequest *input, wl_arena_t *arena,
                             wl_span_t **unique, size_t *unique_count, wl_error_t *err)
{
    int rc = wl_name_validate(wl_span_str(input->name), "name", err);
    size_t n = input->n_codes;
    wl_span_t *sent = wl_arena_alloc(arena, sizeof(*sent) * (n ? n : 1));
    *unique = wl_arena_alloc(arena, sizeof(**unique) * (n ? n : 1));
    if (sent == NULL || *unique == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    for (size_t i = 0; i < n; i++)
        sent[i] = wl_span_str(input->codes[i]);
    int codes_rc = wl_codes_normalize(sent, n, *unique, unique_count, err);
    return rc != 0 ? rc : codes_rc;
}

/* An Idempotency-Key is 1 to 255 printable ASCII characters. */
static int validate_idempotency_key(const char *key, wl_error_t *err)
{
    size_t len = strlen(key);
    bool ok = len >= 1 && len <= 255;
    for (size_t i = 0; ok && i < len; i++)
        ok = key[i] >= 0x20 && key[i] <= 0x7e;
    return ok ? 0
              : wl_error_add_violation(err, "Idempotency-Key",
                                       "must be 1 to 255 printable ASCII characters");
}

/* What makes two requests "the same list": the name and the normalised codes. */
static int request_hash(const char *name, const wl_span_t *codes, size_t count, char hex[65])
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int digest_len = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    bool ok = ctx != NULL && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
              EVP_DigestUpdate(ctx, name, strlen(name) + 1) == 1;
    for (size_t i = 0; ok && i < count; i++)
        ok = EVP_DigestUpdate(ctx, codes[i].base, codes[i].len) == 1 &&
             EVP_DigestUpdate(ctx, "", 1) == 1;
    ok = ok && EVP_DigestFinal_ex(ctx, digest, &digest_len) == 1 && digest_len == 32;
    EVP_MD_CTX_free(ctx);
    for (unsigned i = 0; ok && i < digest_len; i++)
        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
    return ok ? 0 : WL_EINTERNAL;
}

/* Sends the list work with the call's admission (or, decided, alone in a group): grouped with
 * the other requests in flight. 0 when the statement ran; work->work.done says whether it did
 * the work. */
static int admit_with(wl_core_t *core, wl_call_t *call, wl_list_work_t *work)
{
    return wl__admit(core, call->admission, &work->work, call->err);
}

/* The list work of kind the call sent with its admission, as it runs again after its group:
 * what it validated then, with the group's answers; NULL on its first run. */
static wl_list_work_t *sent_work(const wl_call_t *call, const char *kind)
{
    return wl_lists_work_of(wl__admit_sent(call->admission), kind);
}

/* A list without an Idempotency-Key: inserted in the request's admission, grouped with the
 * other requests in flight. */
static int insert(wl_core_t *core, wl_call_t *call, wl_list_work_t *work)
{
    int rc = admit_with(core, call, work);
    if (rc == 0 && !work->work.done)
        rc = wl_error_set(call->err, WL_EINTERNAL, "the list was not inserted");
    return rc;
}

static int insert_idempotent(wl_core_t *core, wl_call_t *call, const char *name,
                             const wl_span_t *codes, size_t codes_count, const char *id,
                             wl_list_created_t *created)
{
    if (wl__admit(core, call->admission, NULL, call->err) != 0)
        return call->err->code;
    char hash[65];
    int rc = request_hash(name, codes, codes_count, hash);
    if (rc != 0)
        return wl_error_set(call->err, rc, NULL);
    PGconn *conn = NULL;
    if (wl_pool_acquire(core->pool, &conn, call->err) != 0)
        return call->err->code;
    rc = wl_lists_insert_idempotent(conn, call->principal->org_id, call->idempotency_key, hash, id,
                                    name, codes, codes_count, call->arena, created, call->err);
    wl_pool_release(core->pool, conn);
    return rc;
}

static int reply_created(wl_call_t *call, const wl_list_created_t *created,
                         Walklist__V1__CreateLocateListResponse **out)
{
    call->replayed = created->replayed;
    Walklist__V1__CreateLocateListResponse *reply = wl_arena_alloc(call->arena, sizeof(*reply));
    if (reply == NULL)
        return wl_error_set(call->err, WL_ENOMEM, NULL);
    walklist__v1__create_locate_list_response__init(reply);
    reply->id = wl_arena_strdup(call->arena, created->id);
    reply->name = (char *)created->name;
    reply->codes_count = (int32_t)created->codes_count;
    if (reply->id == NULL)
        return wl_error_set(call->err, WL_ENOMEM, NULL);
    *out = reply;
    return 0;
}

static int create_locate_list(wl_call_t *call, const Walklist__V1__CreateLocateListRequest *input,
                              Walklist__V1__CreateLocateListResponse **out)
{
    wl_core_t *core = call->core;
    wl_span_t *codes = NULL;
    size_t codes_count = 0;
    char id[23];
    if (call->idempotency_key != NULL && wl__admission_defers(call->admission))
        return wl__would_wait(call); /* its insert waits for the database too */
    wl_list_work_t *sent = sent_work(call, "create");
    if (sent != NULL) {
        /* Running again after its admission's group: the list it validated and sent. */
        wl_list_created_t created = {sent->id, input->name, sent->work.value_count, false};
        int rc = insert(core, call, sent);
        return rc != 0 ? rc : reply_created(call, &created, out);
    }
    int invalid = normalize_request(input, call->arena, &codes, &codes_count, call->err);
    if (call->idempotency_key != NULL &&
        validate_idempotency_key(call->idempotency_key, call->err) != 0)
        invalid = WL_EINVAL;
    if (invalid != 0) {
        /* A refused admission answers before the request's content. */
        wl_error_t refusal;
        wl_error_init(&refusal);
        if (wl__admit(core, call->admission, NULL, &refusal) != 0)
            *call->err = refusal;
        return call->err->code;
    }
    if (wl_random_id(id) != 0)
        return wl_error_set(call->err, WL_EINTERNAL, "no randomness available");
    wl_list_created_t created = {id, input->name, codes_count, false};
    if (call->idempotency_key != NULL) {
        int rc = insert_idempotent(core, call, input->name, codes, codes_count, id, &created);
        return rc != 0 ? rc : reply_created(call, &created, out);
    }
    /* In the arena: a call that stops at its admission finds it again (sent_work). */
    wl_list_work_t *work = wl_arena_alloc(call->arena, sizeof(*work));
    if (work == NULL)
        return wl_error_set(call->err, WL_ENOMEM, NULL);
    wl_lists_create_work(work, call->principal->org_id, id, input->name, codes, codes_count);
    int rc = insert(core, call, work);
    return rc != 0 ? rc : reply_created(call, &created, out);
}

static int get_locate_list(wl_call_t *call, const Walklist__V1__GetLocateListRequest *input,
                           Walklist__V1__LocateList **out)
{
    wl_core_t *core = call->core;
    wl_list_record_t record;
    if (!wl_list_id_plausible(input->id)) {
        int rc = wl__admit(core, call->admission, NULL, call->err);
        return rc != 0 ? rc : wl_error_set(call->err, WL_ENOTFOUND, "no walk list with that id");
    }
    bool admits = call->admission != NULL && wl_admission_pending(call->admission);
    if (!admits && wl__admission_defers(call->admission))
        return wl__would_wait(call); /* the list is read on its own */
    if (admits) {
        wl_list_work_t *work = sent_work(call, "get");
        if (work == NULL && (work = wl_arena_alloc(call->arena, sizeof(*work))) != NULL)
            wl_lists_get_work(work, call->principal->org_id, input->id, call->arena);
        if (work == NULL)
            return wl_error_set(call->err, WL_ENOMEM, NULL);
        int rc = admit_with(core, call, work);
        if (rc != 0)
            return rc;
        if (!work->work.done)
            return wl_error_set(call->err, WL_ENOTFOUND, "no walk list with that id");
        record = work->list;
    } else {
        PGconn *conn = NULL;
        int rc = wl_pool_acquire(core->pool, &conn, call->err);
        if (rc != 0)
            return rc;
        rc =
            wl_lists_get(conn, call->principal->org_id, input->id, call->arena, &record, call->err);
        wl_pool_release(core->pool, conn);
        if (rc != 0)
            return rc;
    }

    Walklist__V1__LocateList *reply = wl_arena_alloc(call->arena, sizeof(*reply));
    if (reply == NULL)
        return wl_error_set(call->err, WL_ENOMEM, NULL);
    walklist__v1__locate_list__init(reply);
    reply->id = wl_arena_strdup(call->arena, input->id);
    reply->name = (char *)record.name;
    reply->state = (char *)record.state;
    reply->codes = record.codes;
    reply->n_codes = record.codes_count;
    reply->codes_count = (int32_t)record.codes_count;
    reply->created_at = wl__timestamp_from_ms(call->arena, record.created_ms);
    if (record.loaded_ms >= 0)
        reply->loaded_at = wl__timestamp_from_ms(call->arena, record.loaded_ms);
    if (reply->id == NULL || reply->created_at == NULL ||
        (record.loaded_ms >= 0 && reply->loaded_at == NULL))
        return wl_error_set(call->err, WL_ENOMEM, NULL);
    *out = reply;
    return 0;
}

WL_METHOD_RUN(create_locate_list, Walklist__V1__CreateLocateListRequest,
              Walklist__V1__CreateLocateListResponse)
WL_METHOD_RUN(get_locate_list, Walklist__V1__GetLocateListRequest, Walklist__V1__LocateList)

/* Both admit with their work: a request the process cannot let in alone costs one round trip
 * in all (the hot path). */
static const wl_method_t methods[] = {
    {.name = "CreateLocateList",
     .run = create_locate_list_run,
     .policy = {.scope = WL_SCOPE_LISTS_WRITE,
                .rate_bucket = "locate-lists",
                .admits_with_work = true}},
    {.name = "GetLocateList",
     .run = get_locate_list_run,
     .policy = {.scope = WL_SCOPE_LISTS_WRITE,
                .rate_bucket = "locate-lists",
                .admits_with_work = true}},
};

const wl_service_table_t wl__locate_list_service = {
    .descriptor = &walklist__v1__locate_list_service__descriptor,
    .methods = methods,
    .method_count = sizeof(methods) / sizeof(methods[0]),
};
