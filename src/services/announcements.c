/* Hearing other processes' announcements on one connection, and handing them on, happens here. */
#include "services/announcements.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "services/services.h"
#include "store/listen.h"
#include "walklist/log.h"

#define WAIT_MS  1000 /* the longest quiet wait before the connection's liveness is checked */
#define RETRY_MS 1000 /* between failed attempts to connect */

#define KEYS_CHANNEL   "wl_keys_changed"   /* wl_keys_revoke; a key prefix or "*" */
#define EXPORT_CHANNEL "wl_export_changed" /* wl__export_bump; an organization id */

struct wl_export_subscription {
    wl_export_changes_t hooks;
    bool listening; /* what it was told last: listening (true) or lost */
    wl_export_subscription_t *next;
};

struct wl_announcements {
    /* Held while anyone is told anything, so that an unsubscribed hook is never called. */
    pthread_mutex_t lock;
    char *conninfo;
    wl_key_cache_t *keys; /* NULL: none */
    wl_export_subscription_t *subscribers;
    bool started, stop;
    pthread_t thread;
    int wake[2]; /* a pipe: a byte wakes the thread (stop, or a subscriber to tell) */
};

static void wake(wl_announcements_t *announcements)
{
    (void)!write(announcements->wake[1], "x", 1);
}

static void drain_wake(wl_announcements_t *announcements)
{
    char bytes[64];
    while (read(announcements->wake[0], bytes, sizeof(bytes)) > 0)
        ;
}

/* Tells the key cache and each subscriber not yet told whether announcements are heard (once
 * stopping, they are not); false once stopping. */
static bool set_listening(wl_announcements_t *announcements, bool listening)
{
    pthread_mutex_lock(&announcements->lock);
    listening = listening && !announcements->stop;
    if (announcements->keys != NULL)
        wl_key_cache_listening(announcements->keys, listening);
    for (wl_export_subscription_t *s = announcements->subscribers; s != NULL; s = s->next) {
        if (s->listening == listening)
            continue;
        s->listening = listening;
        void (*tell)(void *data) = listening ? s->hooks.listening : s->hooks.lost;
        if (tell != NULL)
            tell(s->hooks.data);
    }
    bool going_on = !announcements->stop;
    pthread_mutex_unlock(&announcements->lock);
    return going_on;
}

static void hand_on(const char *channel, const char *payload, void *data)
{
    wl_announcements_t *announcements = data;
    if (strcmp(channel, KEYS_CHANNEL) == 0) {
        if (announcements->keys != NULL)
            wl_key_cache_revoked(announcements->keys);
        return;
    }
    if (strcmp(channel, EXPORT_CHANNEL) != 0)
        return;
    int64_t org_id = strtoll(payload, NULL, 10);
    pthread_mutex_lock(&announcements->lock);
    for (wl_export_subscription_t *s = announcements->subscribers; s != NULL; s = s->next) {
        /* One not yet told it listens trusts nothing yet: it has nothing to drop. */
        if (s->listening && s->hooks.changed != NULL)
            s->hooks.changed(org_id, s->hooks.data);
    }
    pthread_mutex_unlock(&announcements->lock);
}

/* Waits ms for a wake-up; false once stopping. */
static bool pause_ms(wl_announcements_t *announcements, int ms)
{
    struct pollfd pfd = {.fd = announcements->wake[0], .events = POLLIN};
    (void)poll(&pfd, 1, ms);
    drain_wake(announcements);
    return set_listening(announcements, false);
}

static void *listen_main(void *arg)
{
    static const char *const channels[] = {KEYS_CHANNEL, EXPORT_CHANNEL, NULL};
    wl_announcements_t *announcements = arg;
    PGconn *conn = NULL;
    for (;;) {
        wl_error_t err;
        wl_error_init(&err);
        if (conn == NULL && wl_listen_open(announcements->conninfo, channels,
                                           "walklistd-announcements", &conn, &err) != 0) {
            if (!pause_ms(announcements, RETRY_MS))
                break;
            continue;
        }
        if (!set_listening(announcements, true))
            break;
        int rc =
            wl_listen_wait(conn, announcements->wake[0], WAIT_MS, hand_on, announcements, &err);
        drain_wake(announcements);
        if (rc != 0) {
            PQfinish(conn);
            conn = NULL;
            wl_log("warn", "announcements unheard",
                   "%s: until a new connection listens, checked keys are not kept and export "
                   "versions are not trusted from memory",
                   err.message);
            if (!set_listening(announcements, false))
                break;
        }
    }
    set_listening(announcements, false);
    PQfinish(conn);
    return NULL;
}

/* Starts the thread unless it runs (lock held). */
static int start_locked(wl_announcements_t *announcements, wl_error_t *err)
{
    if (announcements->started)
        return 0;
    if (pthread_create(&announcements->thread, NULL, listen_main, announcements) != 0)
        return wl_error_set(err, WL_EINTERNAL, "cannot start the announcements thread");
    announcements->started = true;
    return 0;
}

int wl_announcements_create(const char *conninfo, wl_key_cache_t *keys, wl_announcements_t **out,
                            wl_error_t *err)
{
    *out = NULL;
    wl_announcements_t *announcements = calloc(1, sizeof(*announcements));
    if (announcements == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    announcements->wake[0] = announcements->wake[1] = -1;
    announcements->keys = keys;
    pthread_mutex_init(&announcements->lock, NULL);
    int rc = 0;
    if ((announcements->conninfo = strdup(conninfo)) == NULL)
        rc = wl_error_set(err, WL_ENOMEM, NULL);
    else if (pipe2(announcements->wake, O_CLOEXEC | O_NONBLOCK) != 0)
        rc = wl_error_set(err, WL_EINTERNAL, "announcements: cannot create a pipe");
    else if (keys != NULL)
        rc = start_locked(announcements, err); /* no other thread knows it yet */
    if (rc != 0) {
        wl_announcements_destroy(announcements);
        return rc;
    }
    *out = announcements;
    return 0;
}

void wl_announcements_destroy(wl_announcements_t *announcements)
{
    if (announcements == NULL)
        return;
    pthread_mutex_lock(&announcements->lock);
    announcements->stop = true;
    bool started = announcements->started;
    pthread_mutex_unlock(&announcements->lock);
    if (started) {
        wake(announcements);
        pthread_join(announcements->thread, NULL);
    }
    if (announcements->wake[0] >= 0) {
        close(announcements->wake[0]);
        close(announcements->wake[1]);
    }
    pthread_mutex_destroy(&announcements->lock);
    free(announcements->conninfo);
    free(announcements);
}

int wl_core_export_changes_subscribe(wl_core_t *core, const wl_export_changes_t *hooks,
                                     wl_export_subscription_t **out, wl_error_t *err)
{
    *out = NULL;
    wl_announcements_t *announcements = core->announcements;
    wl_export_subscription_t *subscription = calloc(1, sizeof(*subscription));
    if (subscription == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    subscription->hooks = *hooks;
    pthread_mutex_lock(&announcements->lock);
    int rc = start_locked(announcements, err);
    if (rc == 0) {
        subscription->next = announcements->subscribers;
        announcements->subscribers = subscription;
    }
    pthread_mutex_unlock(&announcements->lock);
    if (rc != 0) {
        free(subscription);
        return rc;
    }
    wake(announcements); /* to be told it listens, at once when it does */
    *out = subscription;
    return 0;
}

void wl_core_export_changes_unsubscribe(wl_core_t *core, wl_export_subscription_t *subscription)
{
    if (subscription == NULL)
        return;
    wl_announcements_t *announcements = core->announcements;
    pthread_mutex_lock(&announcements->lock);
    wl_export_subscription_t **link = &announcements->subscribers;
    while (*link != NULL && *link != subscription)
        link = &(*link)->next;
    if (*link != NULL)
        *link = subscription->next;
    pthread_mutex_unlock(&announcements->lock);
    free(subscription);
}
