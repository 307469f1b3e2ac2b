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

/* conninfo pointed at host:port must read back with each of expected's keyword=value pairs
 * (value "" for a keyword that must be unset). */
static void check_pointed(const char *conninfo, const char *host, int port,
                          const char *const (*expected)[2], size_t count)
{
    wl_error_t err;
    wl_error_init(&err);
    char *node = NULL;
    CHECK_INT(wl_node_conninfo(conninfo, host, port, &node, &err), 0);
    char buf[128];
    for (size_t i = 0; node != NULL && i < count; i++)
        CHECK_STR(setting(node, expected[i][0], buf, sizeof(buf)), expected[i][1]);
    free(node);
}

static void test_uri_keeps_its_settings(void)
{
    static const char *const expected[][2] = {
        {"host", "worker-1.example"}, {"port", "6432"},          {"user", "walk"},
        {"password", "s'cr\\et"},     {"dbname", "shop"},        {"sslmode", "require"},
        {"connect_timeout", "3"},     {"application_name", "wl"}};
    check_pointed("postgresql://walk:s%27cr%5Cet@coord.example:5433/shop"
                  "?sslmode=require&connect_timeout=3&application_name=wl",
                  "worker-1.example", 6432, expected, sizeof(expected) / sizeof(expected[0]));
}

static void test_keywords_lose_the_coordinators_address(void)
{
    static const char *const expected[][2] = {{"host", "10.0.0.7"},
                                              {"hostaddr", ""},
                                              {"port", "5432"},
                                              {"dbname", "shop"},
                                              {"options", "-c search_path=public"}};
    check_pointed("host=coord hostaddr=10.0.0.1 port=5433 dbname=shop user=walk "
                  "options='-c search_path=public'",
                  "10.0.0.7", 5432, expected, sizeof(expected) / sizeof(expected[0]));
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
