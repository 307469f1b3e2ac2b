/*
 * A PostgreSQL of one test's own (tests/pg_cluster.sh), for tests that stop, kill and restart
 * the database: the shared "pg" fixture cannot be touched, other tests use it in parallel.
 */
#ifndef WALKLIST_PRIVATE_PG_H
#define WALKLIST_PRIVATE_PG_H

#include <stddef.h>

/** Runs `pg_cluster.sh ACTION STATE_DIR` (create also gets $WALKLISTCTL); its exit status. */
int private_pg(const char *state_dir, const char *action);

/** Seconds on the monotonic clock. */
double test_now_s(void);

#endif
