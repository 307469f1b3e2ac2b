/* Following the server's serving status for a Health/Watch stream happens here. */
#include "protocols/health_stream.h"

#include <stdlib.h>

#include "errors/error_info.h"
#include "grpc/health/v1/health.pb-c.h"

typedef Grpc__Health__V1__HealthCheckResponse__ServingStatus serving_status_t;

typedef struct {
    wl_generator_t base; /* first: the generator is the stream */
    wl_core_t *core;
    wl_stock_watch_t *watch;
    wl_stock_watcher_t *poller;
    wl_rpc_stream_wire_t wire;
    bool known;
    bool said;             /* a status went already */
    serving_status_t sent; /* the last status sent, once said */
} health_stream_t;

static serving_status_t status_now(health_stream_t *stream, bool stopping)
{
    if (!stream->known)
        return GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN;
    if (stopping || wl_core_ready_without_waiting(stream->core) != 0)
        return GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING;
    return GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
}

/* On a request thread (the readiness check may wait for the database): the status when it is
 * new to the client, and the end at the stop. */
static wl_generator_next_t health_proceed(wl_generator_t *gen, wl_piece_t *out, size_t want,
                                          wl_error_t *unused)
{
    (void)want;
    (void)unused;
    health_stream_t *stream = (health_stream_t *)gen;
    int64_t heard_ns = 0;
    unsigned what = wl_stock_watch_take(stream->watch, stream->poller, &heard_ns);
    bool stopping = (what & WL_STOCK_WATCH_STOPPING) != 0;
    if (what & WL_STOCK_WATCH_STALLED) {
        stream->wire.end(&stream->wire, WL_GRPC_RESOURCE_EXHAUSTED, WL_REASON_STREAM_STALLED,
                         "the client did not take the last message within the stall limit "
                         "(--watch-stall-s)",
                         out);
        return WL_GENERATOR_DONE;
    }
    serving_status_t status = status_now(stream, stopping);
    if (!stream->said || status != stream->sent) {
        Grpc__Health__V1__HealthCheckResponse reply = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
        reply.status = status;
        wl_arena_t scratch; /* the gzip-coded message, when it is */
        wl_arena_init(&scratch, 0);
        bool made = stream->wire.message(&stream->wire, &reply.base, &scratch, out);
        wl_arena_dispose(&scratch);
        if (!made) {
            stream->wire.end(&stream->wire, WL_GRPC_RESOURCE_EXHAUSTED, WL_REASON_INTERNAL,
                             "the next message could not be made (out of memory)", out);
            return WL_GENERATOR_DONE;
        }
        stream->said = true;
        stream->sent = status;
        wl_stock_watch_sent(stream->watch, stream->poller);
    }
    if (stopping) {
        stream->wire.end(&stream->wire, WL_GRPC_UNAVAILABLE, WL_REASON_SHUTTING_DOWN,
                         "the server is shutting down", out);
        return WL_GENERATOR_DONE;
    }
    return WL_GENERATOR_IDLE;
}

/* The last message has gone: the stall clock starts again, and the poller waits for the next
 * tick. */
static void health_park(wl_generator_t *gen, void (*wake)(void *ctx), void *ctx)
{
    health_stream_t *stream = (health_stream_t *)gen;
    wl_stock_watch_rest(stream->watch, stream->poller, wake, ctx);
}

static void health_stop(wl_generator_t *gen)
{
    health_stream_t *stream = (health_stream_t *)gen;
    wl_stock_watch_remove(stream->watch, stream->poller);
    free(stream);
}

wl_generator_t *wl_health_stream_create(wl_core_t *core, wl_stock_watch_t *watch, bool known,
                                        const wl_rpc_stream_wire_t *wire)
{
    health_stream_t *stream = calloc(1, sizeof(*stream));
    if (stream == NULL)
        return NULL;
    *stream = (health_stream_t){
        .base = {.proceed = health_proceed,
                 .stop = health_stop,
                 .park = health_park,
                 .waits = true},
        .core = core,
        .watch = watch,
        .wire = *wire,
        .known = known,
    };
    if ((stream->poller = wl_stock_watch_add_poller(watch)) == NULL) {
        free(stream);
        return NULL;
    }
    return &stream->base;
}
