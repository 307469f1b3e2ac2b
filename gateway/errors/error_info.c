/* Naming the reason of every error answer and encoding its google.rpc.ErrorInfo happen here. */
#include "errors/error_info.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "google/rpc/error_details.pb-c.h"
#include "walklist/error.h"

static const char *const reason_names[] = {
#define XX(name) #name,
    WL_REASON_MAP(XX)
#undef XX
};

const char *wl_reason_name(wl_reason_t reason)
{
    return (unsigned)reason < WL_REASON_COUNT ? reason_names[reason] : "INTERNAL";
}

wl_reason_t wl_reason_of_error(int code)
{
    switch (code) {
    case WL_EINVAL:
        return WL_REASON_INVALID_REQUEST;
    case WL_ENOTFOUND:
        return WL_REASON_NOT_FOUND;
    case WL_EUNAUTHENTICATED:
        return WL_REASON_API_KEY_INVALID;
    case WL_EPERMISSION:
        return WL_REASON_SCOPE_MISSING;
    case WL_EPRECONDITION:
        return WL_REASON_FAILED_PRECONDITION;
    case WL_EEXISTS:
        return WL_REASON_ALREADY_EXISTS;
    case WL_EEXHAUSTED:
        return WL_REASON_RATE_LIMITED;
    case WL_EUNIMPLEMENTED:
        return WL_REASON_NOT_IMPLEMENTED;
    case WL_EUNAVAILABLE:
        return WL_REASON_DATABASE_UNAVAILABLE;
    case WL_ETIMEDOUT:
        return WL_REASON_DATABASE_TIMEOUT;
    case WL_ECANCELLED:
        return WL_REASON_CANCELLED;
    case WL_EIDEMPOTENCY:
        return WL_REASON_IDEMPOTENCY_KEY_REUSED;
    case WL_EHISTORY:
        return WL_REASON_CURSOR_EXPIRED;
    default:
        return WL_REASON_INTERNAL;
    }
}

void wl_error_info_add(wl_error_info_t *info, const char *key, const char *fmt, ...)
{
    if (info->metadata_count == WL_ERROR_INFO_MAX_METADATA)
        return;
    size_t n = info->metadata_count++;
    snprintf(info->metadata[n].key, sizeof(info->metadata[n].key), "%s", key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(info->metadata[n].value, sizeof(info->metadata[n].value), fmt, ap);
    va_end(ap);
}

json_t *wl_error_info_json(const wl_error_info_t *info)
{
    json_t *metadata = json_object();
    for (size_t i = 0; i < info->metadata_count; i++)
        json_object_set_new(metadata, info->metadata[i].key, json_string(info->metadata[i].value));
    return json_pack("{s:s, s:s, s:s, s:o}", "@type", "type.googleapis.com/google.rpc.ErrorInfo",
                     "reason", wl_reason_name(info->reason), "domain", WL_ERROR_DOMAIN, "metadata",
                     metadata);
}

uint8_t *wl_error_info_pack(const wl_error_info_t *info, wl_arena_t *arena, size_t *len)
{
    Google__Rpc__ErrorInfo message = GOOGLE__RPC__ERROR_INFO__INIT;
    Google__Rpc__ErrorInfo__MetadataEntry entries[WL_ERROR_INFO_MAX_METADATA];
    Google__Rpc__ErrorInfo__MetadataEntry *pointers[WL_ERROR_INFO_MAX_METADATA];
    for (size_t i = 0; i < info->metadata_count; i++) {
        google__rpc__error_info__metadata_entry__init(&entries[i]);
        entries[i].key = (char *)info->metadata[i].key;
        entries[i].value = (char *)info->metadata[i].value;
        pointers[i] = &entries[i];
    }
    message.reason = (char *)wl_reason_name(info->reason);
    message.domain = WL_ERROR_DOMAIN;
    message.n_metadata = info->metadata_count;
    message.metadata = pointers;
    *len = google__rpc__error_info__get_packed_size(&message);
    uint8_t *packed = wl_arena_alloc(arena, *len ? *len : 1);
    if (packed != NULL)
        google__rpc__error_info__pack(&message, packed);
    return packed;
}
