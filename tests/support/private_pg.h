/*
 * A PostgreSQL of one test's own (tests/pg_cluster.sh), for tests that stop, kill and restart
 * the database: the shared "pg" fixture cannot be touched, other tests use it in parallel.
 */
#ifndef WALKLIST_PRIVATE_PG_H
#define WALKLIST_PRIVATE_PG_H

#include <stdbool.h>
#include <stddef.h>

/** Runs `pg_cluster.sh ACTION STATE_DIR` (create also gets $WALKLISTCTL); its exit status. */
int private_pg(const char *state_dir, const char *action);

/** Reads the conninfo a cluster script wrote to STATE_DIR/conninfo into buf; false when there
 * is none. */
bool private_pg_conninfo(const char *state_dir, char *buf, size_t size);

/** Seconds on the monotonic clock. */
double test_now_s(void);

#endif
