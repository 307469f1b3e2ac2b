/* Driving a test's own PostgreSQL through tests/pg_cluster.sh happens here. */
#include "private_pg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

int private_pg(const char *state_dir, const char *action)
{
    char command[1400];
    snprintf(command, sizeof(command), "%s/tests/pg_cluster.sh %s %s %s >&2",
             getenv("WALKLIST_SOURCE_DIR"), action, state_dir,
             strcmp(action, "create") == 0 ? getenv("WALKLISTCTL") : "");
    int status = system(command);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool private_pg_conninfo(const char *state_dir, char *buf, size_t size)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/conninfo", state_dir);
    FILE *f = fopen(path, "r");
    bool ok = f != NULL && fgets(buf, (int)size, f) != NULL;
    if (f != NULL)
        fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

double test_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
