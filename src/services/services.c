/* What the services share at run time (services.h): the pool of stock reads, the hook of
 * export changes, timestamps. */
#include <pthread.h>

#include "services/services.h"

void wl__core_export_may_have_changed(wl_core_t *core, int64_t org_id)
{
    pthread_mutex_lock(&core->hook_lock);
    if (core->export_changed != NULL)
        core->export_changed(org_id, core->export_changed_data);
    pthread_mutex_unlock(&core->hook_lock);
}

wl_pool_t *wl__core_read_pool(wl_core_t *core)
{
    return core->read_pool != NULL ? core->read_pool : core->pool;
}

Google__Protobuf__Timestamp *wl__timestamp_from_ms(wl_arena_t *arena, int64_t ms)
{
    Google__Protobuf__Timestamp *ts = wl_arena_alloc(arena, sizeof(*ts));
    if (ts == NULL)
        return NULL;
    google__protobuf__timestamp__init(ts);
    int64_t seconds = ms / 1000, millis = ms % 1000;
    if (millis < 0) {
        millis += 1000;
        seconds--;
    }
    ts->seconds = seconds;
    ts->nanos = (int32_t)(millis * 1000000);
    return ts;
}
