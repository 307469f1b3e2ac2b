/*
 * A database URL pointed at another node (store/node_conninfo.h): every setting of the URL is
 * kept (user, password, database, TLS, options) whether it came as a URI or as key=value, the
 * host and port are the node's, a hostaddr that pinned the coordinator's address is dropped,
 * and values with quotes or backslashes survive; a URL libpq cannot read, and a node without a
 * host or with no port, are refused.
 */
#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>

#include "store/node_conninfo.h"
#include "test.h"

/* The value libpq reads for keyword from conninfo ("" when unset). */
static const char *setting(const char *conninfo, const char *keyword, char *buf, size_t size)
{
    buf[0] = '\0';
    PQconninfoOption *options = PQconninfoParse(conninfo, NULL);
    if (options == NULL) {
        FAIL("libpq cannot read %s", conninfo);
        return buf;
    }
    for (PQconninfoOption *o = options; o->keyword != NULL; o++)
        if (strcmp(o->keyword, keyword) == 0 && o->val != NULL)
            snprintf(buf, size, "%s", o->val);
    PQconninfoFree(options);
    return buf;
}

static void test_uri_keeps_its_settings(void)
{
    wl_error_t err;
    wl_error_init(&err);
    char *node = NULL;
    CHECK_INT(wl_node_conninfo("postgresql://walk:s%27cr%5Cet@coord.example:5433/shop"
                               "?sslmode=require&connect_timeout=3&application_name=wl",
                               "worker-1.example", 6432, &node, &err),
              0);
    char buf[128];
    CHECK_STR(setting(node, "host", buf, sizeof(buf)), "worker-1.example");
    CHECK_STR(setting(node, "port", buf, sizeof(buf)), "6432");
    CHECK_STR(setting(node, "user", buf, sizeof(buf)), "walk");
    CHECK_STR(setting(node, "password", buf, sizeof(buf)), "s'cr\\et");
    CHECK_STR(setting(node, "dbname", buf, sizeof(buf)), "shop");
    CHECK_STR(setting(node, "sslmode", buf, sizeof(buf)), "require");
    CHECK_STR(setting(node, "connect_timeout", buf, sizeof(buf)), "3");
    CHECK_STR(setting(node, "application_name", buf, sizeof(buf)), "wl");
    free(node);
}

static void test_keywords_lose_the_coordinators_address(void)
{
    wl_error_t err;
    wl_error_init(&err);
    char *node = NULL;
    CHECK_INT(wl_node_conninfo("host=coord hostaddr=10.0.0.1 port=5433 dbname=shop user=walk "
                               "options='-c search_path=public'",
                               "10.0.0.7", 5432, &node, &err),
              0);
    char buf[128];
    CHECK_STR(setting(node, "host", buf, sizeof(buf)), "10.0.0.7");
    CHECK_STR(setting(node, "hostaddr", buf, sizeof(buf)), "");
    CHECK_STR(setting(node, "port", buf, sizeof(buf)), "5432");
    CHECK_STR(setting(node, "dbname", buf, sizeof(buf)), "shop");
    CHECK_STR(setting(node, "options", buf, sizeof(buf)), "-c search_path=public");
    free(node);
}

static void test_refused(void)
{
    wl_error_t err;
    char *node = (char *)"untouched";
    wl_error_init(&err);
    CHECK_INT(wl_node_conninfo("host=coord port=5432 nonsense=1", "w1", 5432, &node, &err),
              WL_EINVAL);
    CHECK(node == NULL);
    wl_error_init(&err);
    CHECK_INT(wl_node_conninfo("host=coord", "", 5432, &node, &err), WL_EINVAL);
    wl_error_init(&err);
    CHECK_INT(wl_node_conninfo("host=coord", "w1", 0, &node, &err), WL_EINVAL);
    wl_error_init(&err);
    CHECK_INT(wl_node_conninfo("host=coord", "w1", 65536, &node, &err), WL_EINVAL);
    CHECK(node == NULL);
}

int main(void)
{
    test_uri_keeps_its_settings();
    test_keywords_lose_the_coordinators_address();
    test_refused();
    return test_exit();
}
