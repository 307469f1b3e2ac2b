/*
 * Runs a real walklistd for end-to-end tests: started on a free loopback
 * port against a test database, logs captured to a file, stopped with
 * SIGTERM (or killed) at the end.
 */
#ifndef WALKLIST_SERVICE_H
#define WALKLIST_SERVICE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct {
    pid_t pid;
    uint16_t port;
    char log_path[1024];
} service_t;

/** Starts walklistd ($WALKLISTD) with --database-url conninfo and extra args (NULL-terminated);
 * exits the test on failure. */
void service_start(service_t *service, const char *conninfo, const char *const *extra_args);

/** Runs walklistd ($WALKLISTD) with args (NULL-terminated; at most 14) and one environment
 * variable ("NAME=value", or NULL) until it exits: its exit status, and what it wrote to stderr
 * and stdout in out. For a walklistd that refuses to start. */
int service_run(const char *const *args, const char *env, char *out, size_t size);

/** Writes into url (size >= 128) the conninfo of a database that cannot be reached: a loopback
 * port nothing listens on (connections are refused). */
void service_unreachable_database(char *url, size_t size);

/** Sends SIGTERM and waits; returns the exit status (or -1). */
int service_stop(service_t *service);

/** Whole log so far (malloc'd). */
char *service_log(const service_t *service);

#endif
