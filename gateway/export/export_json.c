/* Writing the stock export's JSON text, in the JSON codec's exact form, happens here. */
#include "export/export_json.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "walklist/json_writer.h"

static size_t string_bound(const char *s)
{
    size_t len = strlen(s);
    return len > (SIZE_MAX - 2) / WL_JSON_ESCAPE_GROWTH ? SIZE_MAX
                                                        : len * WL_JSON_ESCAPE_GROWTH + 2;
}

size_t wl_export_json_item_bound(const wl_export_item_t *item)
{
    /* {"sku":,"qty":-9223372036854775808,"location":,"removed":true} is 63 bytes; null fits in
     * a bound. */
    size_t sku = string_bound(item->sku);
    size_t location = item->location != NULL ? string_bound(item->location) : 4;
    if (sku == SIZE_MAX || location == SIZE_MAX || sku > SIZE_MAX - location - 64)
        return SIZE_MAX;
    return sku + location + 80;
}

/* The caller gave room for the item's bound: the writer's own limit is never reached. */
#define ROOM_GIVEN (SIZE_MAX / 2)

char *wl_export_json_item(char *out, const wl_export_item_t *item)
{
    wl_json_writer_t w;
    wl_json_writer_init(&w, out, ROOM_GIVEN, 0);
    wl_json_open_object(&w);
    WL_JSON_KEY(&w, "sku");
    wl_json_cstring(&w, item->sku);
    WL_JSON_KEY(&w, "qty");
    wl_json_int(&w, item->qty);
    WL_JSON_KEY(&w, "location");
    if (item->location != NULL)
        wl_json_cstring(&w, item->location);
    else
        wl_json_null(&w);
    if (item->removed) {
        WL_JSON_KEY(&w, "removed");
        wl_json_bool(&w, true);
    }
    wl_json_close_object(&w);
    return out + w.len;
}

size_t wl_export_json_close(int64_t generated_ms, const char *cursor, char *buf, size_t size)
{
    int64_t seconds = generated_ms / 1000, millis = generated_ms % 1000;
    if (millis < 0) {
        millis += 1000;
        seconds--;
    }
    time_t t = (time_t)seconds;
    struct tm tm;
    if (gmtime_r(&t, &tm) == NULL)
        memset(&tm, 0, sizeof(tm));
    char when[64]; /* years 1 to 9999: 24 bytes */
    snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)millis);
    /* The items' array and the body's object were opened by WL_EXPORT_JSON_OPEN. */
    wl_json_writer_t w;
    wl_json_writer_init(&w, buf, size > 0 ? size - 1 : 0, 0);
    wl_json_close_array(&w);
    wl_json_key(&w, "generatedAt");
    wl_json_cstring(&w, when);
    wl_json_key(&w, "cursor");
    wl_json_cstring(&w, cursor);
    wl_json_close_object(&w);
    if (!wl_json_ok(&w))
        w.len = 0;
    if (size > 0)
        buf[w.len] = '\0';
    return w.len;
}
