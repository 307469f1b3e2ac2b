/*
 * Native TLS (--tls-cert, --tls-key and their env twins): with a self-signed certificate made
 * by the openssl CLI for 127.0.0.1, curl (--cacert, so the chain and the name are verified)
 * creates a walk list (201), reads it back and fetches the stock export over https; plain HTTP
 * to the TLS port gets no HTTP answer, and the server keeps serving after it. walklistd refuses
 * to start, with a clear message, when the certificate or key is missing, unreadable, not PEM,
 * not a matching pair, or only one of the two is given. The suites (openssl s_client): TLS 1.3,
 * and TLS 1.2 with ECDHE and AEAD only (no RSA key exchange, no CBC, no SHA-1), for an ECDSA
 * and an RSA certificate; --tls-min-version 1.3 refuses TLS 1.2.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"
#include "fixture.h"
#include "service.h"
#include "testdb.h"

static char dir[256], cert[320], key_pem[320], other_key[320], key_path_dir[320];
static char rsa_cert[320], rsa_key[320];
static char headers_file[320], body_file[320], out_file[320];
static char conninfo[1200];
static service_t service;
static char key[WL_KEY_TOKEN_SIZE];

static void remove_dir(void)
{
    if (service.pid > 0)
        service_stop(&service);
    if (dir[0] != '\0') {
        char command[400];
        snprintf(command, sizeof(command), "rm -rf -- '%s'", dir);
        if (system(command) != 0)
            fprintf(stderr, "could not remove %s\n", dir);
    }
}

static int run(const char *command)
{
    int status = system(command);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return strdup("");
    char *text = calloc(1, 1 << 20);
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/*
 * Runs curl against https://127.0.0.1:port with the key in a header file (never on the
 * command line); returns the HTTP status curl saw (0 when none) and the body in *body.
 */
static int curl(const char *scheme, const char *method, const char *path, const char *json_body,
                const char *extra_args, char **body, int *curl_exit)
{
    char headers[512];
    snprintf(headers, sizeof(headers), "Authorization: Bearer %s\nContent-Type: application/json\n",
             key);
    write_file(headers_file, headers);
    if (json_body != NULL)
        write_file(body_file, json_body);
    unlink(out_file);
    char command[2048];
    snprintf(command, sizeof(command),
             "curl -sS --max-time 10 %s -o '%s' -w '%%{http_code}' -H @'%s' -X %s %s%s%s "
             "'%s://127.0.0.1:%u%s'",
             extra_args, out_file, headers_file, method, json_body ? "--data-binary @'" : "",
             json_body ? body_file : "", json_body ? "'" : "", scheme, (unsigned)service.port,
             path);
    FILE *p = popen(command, "r");
    char code[16] = "";
    if (p == NULL || fgets(code, sizeof(code), p) == NULL)
        code[0] = '\0';
    int status = p ? pclose(p) : -1;
    *curl_exit = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    *body = read_file(out_file);
    return atoi(code);
}

/* Runs walklistd with args (and the environment as set), expecting it to refuse to start:
 * returns its exit status, with its stderr in *log. */
static int refused_start(const char *args, char **log)
{
    char log_path[400], command[2048];
    snprintf(log_path, sizeof(log_path), "%s/refused.log", dir);
    snprintf(command, sizeof(command),
             "timeout 10 '%s' --database-url \"$WL_TLS_TEST_DB\" --listen 127.0.0.1:0 %s "
             ">'%s' 2>&1",
             getenv("WALKLISTD"), args, log_path);
    setenv("WL_TLS_TEST_DB", conninfo, 1);
    int rc = run(command);
    *log = read_file(log_path);
    return rc;
}

static void test_refusals(void)
{
    char args[1200], *log;
    snprintf(args, sizeof(args), "--tls-cert '%s/missing.pem' --tls-key '%s'", dir, key_pem);
    CHECK_INT(refused_start(args, &log), 2);
    CHECK(strstr(log, "cannot read --tls-cert") != NULL && strstr(log, "missing.pem") != NULL &&
          strstr(log, "No such file or directory") != NULL);
    free(log);

    /* A directory opens but cannot be read: the key is unreadable. */
    snprintf(args, sizeof(args), "--tls-cert '%s' --tls-key '%s'", cert, key_path_dir);
    CHECK_INT(refused_start(args, &log), 2);
    CHECK(strstr(log, "cannot read --tls-key") != NULL && strstr(log, "Is a directory") != NULL);
    free(log);

    snprintf(args, sizeof(args), "--tls-cert '%s' --tls-key '%s'", cert, headers_file);
    write_file(headers_file, "not a key\n");
    CHECK_INT(refused_start(args, &log), 2);
    CHECK(strstr(log, "is not a PEM file") != NULL);
    free(log);

    snprintf(args, sizeof(args), "--tls-cert '%s' --tls-key '%s' --tls-min-version 1.1", cert,
             key_pem);
    CHECK_INT(refused_start(args, &log), 2);
    CHECK(strstr(log, "--tls-min-version") != NULL && strstr(log, "'1.1'") != NULL);
    free(log);

    snprintf(args, sizeof(args), "--tls-cert '%s'", cert);
    CHECK_INT(refused_start(args, &log), 2);
    CHECK(strstr(log, "--tls-cert and --tls-key") != NULL && strstr(log, "both") != NULL);
    free(log);

    /* The env twin alone is the same mistake. */
    setenv("WALKLIST_TLS_KEY", key_pem, 1);
    CHECK_INT(refused_start("", &log), 2);
    CHECK(strstr(log, "--tls-cert and --tls-key") != NULL);
    free(log);
    unsetenv("WALKLIST_TLS_KEY");

    /* PEM, but not a matching pair: GnuTLS refuses them when the daemon starts. */
    snprintf(args, sizeof(args), "--tls-cert '%s' --tls-key '%s'", cert, other_key);
    CHECK_INT(refused_start(args, &log), 1);
    CHECK(strstr(log, "cannot start the HTTPS server") != NULL);
    free(log);
}

/* Whether openssl s_client agrees on a suite with the service, given its options. */
static bool handshake(const service_t *to, const char *options)
{
    char command[600];
    snprintf(command, sizeof(command),
             "echo | timeout 10 openssl s_client -connect 127.0.0.1:%u %s 2>&1 "
             "| grep -qE 'Cipher is [A-Za-z]'",
             (unsigned)to->port, options);
    return run(command) == 0;
}

static void test_suites(void)
{
    /* The ECDSA certificate (the service running) ... */
    CHECK(handshake(&service, "-tls1_3"));
    CHECK(handshake(&service, "-tls1_2 -cipher ECDHE-ECDSA-AES128-GCM-SHA256"));
    CHECK(handshake(&service, "-tls1_2 -cipher ECDHE-ECDSA-CHACHA20-POLY1305"));
    CHECK(!handshake(&service, "-tls1_2 -cipher ECDHE-ECDSA-AES128-SHA"));
    CHECK(!handshake(&service, "-tls1_2 -cipher ECDHE-ECDSA-AES256-SHA384"));
    CHECK(!handshake(&service, "-tls1_1"));

    /* ... an RSA one: no RSA key exchange, no finite-field DHE, no CBC ... */
    const char *args[] = {"--tls-cert", rsa_cert, "--tls-key", rsa_key, NULL};
    service_t rsa;
    service_start(&rsa, conninfo, args);
    CHECK(handshake(&rsa, "-tls1_2 -cipher ECDHE-RSA-AES256-GCM-SHA384"));
    CHECK(!handshake(&rsa, "-tls1_2 -cipher AES128-GCM-SHA256"));
    CHECK(!handshake(&rsa, "-tls1_2 -cipher AES128-SHA"));
    CHECK(!handshake(&rsa, "-tls1_2 -cipher DHE-RSA-AES128-GCM-SHA256"));
    CHECK(!handshake(&rsa, "-tls1_2 -cipher ECDHE-RSA-AES128-SHA"));
    CHECK_INT(service_stop(&rsa), 0);

    /* ... and TLS 1.3 alone when asked for (the environment twin). */
    setenv("WALKLIST_TLS_MIN_VERSION", "1.3", 1);
    service_t strict;
    service_start(&strict, conninfo, args);
    unsetenv("WALKLIST_TLS_MIN_VERSION");
    CHECK(handshake(&strict, "-tls1_3"));
    CHECK(!handshake(&strict, "-tls1_2 -cipher ECDHE-RSA-AES256-GCM-SHA384"));
    CHECK_INT(service_stop(&strict), 0);
}

static void test_https(void)
{
    char tls_args[512], *body = NULL;
    int curl_exit = 0;
    snprintf(tls_args, sizeof(tls_args), "--cacert '%s'", cert);

    int status = curl("https", "POST", "/api/v1/locate-lists",
                      "{\"name\":\"over TLS\",\"codes\":[\"SKU-1\",\"4006381333931\"]}", tls_args,
                      &body, &curl_exit);
    CHECK_INT(curl_exit, 0);
    CHECK_INT(status, 201);
    json_t *created = json_loads(body, 0, NULL);
    const char *id = e2e_str(created, "id", NULL);
    CHECK(id != NULL);
    CHECK_INT(json_integer_value(json_object_get(created, "codesCount")), 2);
    free(body);

    char path[128];
    snprintf(path, sizeof(path), "/api/v1/locate-lists/%s", id ? id : "none");
    status = curl("https", "GET", path, NULL, tls_args, &body, &curl_exit);
    CHECK_INT(status, 200);
    json_t *list = json_loads(body, 0, NULL);
    CHECK_STR(e2e_str(list, "name", NULL), "over TLS");
    json_decref(list);
    json_decref(created);
    free(body);

    status = curl("https", "GET", "/api/v1/stock-export", NULL, tls_args, &body, &curl_exit);
    CHECK_INT(curl_exit, 0);
    CHECK_INT(status, 200);
    json_t *export = json_loads(body, 0, NULL);
    json_t *items = json_object_get(export, "items");
    CHECK_INT(json_array_size(items), 1);
    CHECK_STR(e2e_str(json_array_get(items, 0), "sku", NULL), "SKU-1");
    CHECK_INT(json_integer_value(json_object_get(json_array_get(items, 0), "qty")), 7);
    CHECK(e2e_str(export, "generatedAt", NULL) != NULL);
    json_decref(export);
    free(body);

    /* Without our certificate as the trust anchor, curl refuses the self-signed one. */
    status = curl("https", "GET", "/healthz", NULL, "", &body, &curl_exit);
    CHECK_INT(status, 0);
    CHECK(curl_exit != 0);
    free(body);

    /* Plain HTTP to the TLS port: no HTTP answer at all (the TLS handshake fails). */
    status = curl("http", "GET", "/healthz", NULL, "", &body, &curl_exit);
    CHECK_INT(status, 0);
    CHECK(curl_exit != 0);
    free(body);
    http_response_t res = e2e_request(service.port, "GET", "/healthz", NULL, NULL, NULL);
    CHECK_INT(res.status, 0);
    http_response_free(&res);

    /* And the server keeps serving TLS. */
    status = curl("https", "GET", "/healthz", NULL, tls_args, &body, &curl_exit);
    CHECK_INT(status, 200);
    free(body);
}

int main(void)
{
    snprintf(dir, sizeof(dir), "tls-%d", (int)getpid());
    atexit(remove_dir);
    if (mkdir(dir, 0700) != 0) {
        fprintf(stderr, "cannot make %s\n", dir);
        return 1;
    }
    char cwd[200];
    if (getcwd(cwd, sizeof(cwd)) == NULL)
        return 1;
    snprintf(dir, sizeof(dir), "%s/tls-%d", cwd, (int)getpid());
    snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
    snprintf(key_pem, sizeof(key_pem), "%s/key.pem", dir);
    snprintf(other_key, sizeof(other_key), "%s/other-key.pem", dir);
    snprintf(rsa_cert, sizeof(rsa_cert), "%s/rsa-cert.pem", dir);
    snprintf(rsa_key, sizeof(rsa_key), "%s/rsa-key.pem", dir);
    snprintf(key_path_dir, sizeof(key_path_dir), "%s/a-directory", dir);
    snprintf(headers_file, sizeof(headers_file), "%s/headers", dir);
    snprintf(body_file, sizeof(body_file), "%s/body.json", dir);
    snprintf(out_file, sizeof(out_file), "%s/out", dir);
    mkdir(key_path_dir, 0700);

    /* A P-256 certificate for the address curl will use, valid for a day. */
    char command[2400];
    snprintf(command, sizeof(command),
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
             "-keyout '%s' -out '%s' -days 1 -subj /CN=127.0.0.1 "
             "-addext subjectAltName=IP:127.0.0.1 2>/dev/null && "
             "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out '%s' "
             "2>/dev/null && "
             "openssl req -x509 -newkey rsa:2048 -nodes -keyout '%s' -out '%s' -days 1 "
             "-subj /CN=127.0.0.1 2>/dev/null",
             key_pem, cert, other_key, rsa_key, rsa_cert);
    if (run(command) != 0) {
        fprintf(stderr, "openssl could not make the test certificate (is openssl installed?)\n");
        return 1;
    }

    snprintf(conninfo, sizeof(conninfo), "%s", testdb_create("e2e_tls"));
    PGconn *db = testdb_connect(conninfo);
    int64_t org = fixture_org(db, "tls");
    fixture_key(db, org, "lists:write,stock:read", key);
    fixture_import(db, org, "warehouses", "code,name,kind\nWH,Main,own\n");
    fixture_import(db, org, "products", "sku,name,eans\nSKU-1,Widget,4006381333931\n");
    fixture_import(db, org, "stock", "sku,warehouse,on_hand\nSKU-1,WH,7\n");
    PQfinish(db);

    test_refusals();

    const char *args[] = {"--tls-cert", cert, "--tls-key", key_pem, NULL};
    service_start(&service, conninfo, args);
    char *log = service_log(&service);
    CHECK(strstr(log, "\"tls\":true") != NULL);
    free(log);
    test_https();
    test_suites();
    CHECK_INT(service_stop(&service), 0);
    return test_exit();
}
