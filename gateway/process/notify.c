/* Readiness and stopping are told to systemd here (sd_notify), when built with libsystemd. */
#include "process/notify.h"

#ifdef WL_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>

void wl_notify_ready(void)
{
    sd_notify(0, "READY=1\nSTATUS=serving");
}

void wl_notify_stopping(void)
{
    sd_notify(0, "STOPPING=1\nSTATUS=draining requests in flight");
}
#else
void wl_notify_ready(void)
{
}

void wl_notify_stopping(void)
{
}
#endif
