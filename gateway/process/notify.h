/*
 * Telling the service manager how walklistd is doing (systemd's Type=notify): ready once it
 * listens, stopping once a signal came. Without libsystemd at build time, or outside systemd
 * (no NOTIFY_SOCKET), these do nothing; the unit is then Type=exec.
 */
#ifndef WALKLIST_GATEWAY_NOTIFY_H
#define WALKLIST_GATEWAY_NOTIFY_H

/** READY=1 with a status line: every listener is open. */
void wl_notify_ready(void);

/** STOPPING=1: the drain started (systemd then waits up to TimeoutStopSec). */
void wl_notify_stopping(void);

#endif
