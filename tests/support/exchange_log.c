/* Recording the REST exchanges of a test program for the check against the API description. */
#include "exchange_log.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gunzip.h"
#include "walklist/base64.h"

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t log_mutex = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = -1;
static char log_path[1024];
static char program[256] = "unknown";
static atomic_long log_seq;

/* The test program's name: the last component of its argv[0]. */
static void read_program_name(void)
{
    FILE *in = fopen("/proc/self/cmdline", "rb");
    if (in == NULL)
        return;
    char argv0[1024];
    size_t n = fread(argv0, 1, sizeof(argv0) - 1, in);
    fclose(in);
    argv0[n] = '\0';
    const char *base = strrchr(argv0, '/');
    base = base ? base + 1 : argv0;
    size_t len = strnlen(base, sizeof(program) - 1);
    if (len > 0) {
        memcpy(program, base, len);
        program[len] = '\0';
    }
}

static void open_log(void)
{
    read_program_name();
    const char *dir = getenv("WALKLIST_TEST_EXCHANGES");
    if (dir == NULL || dir[0] == '\0')
        dir = EXCHANGE_LOG_DIR;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "exchange_log: cannot make %s: %s\n", dir, strerror(errno));
        exit(1);
    }
    snprintf(log_path, sizeof(log_path), "%s/%s.jsonl", dir, program);
    /* Emptied once a run: the file holds this program's last run. */
    log_fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    if (log_fd < 0) {
        fprintf(stderr, "exchange_log: cannot open %s: %s\n", log_path, strerror(errno));
        exit(1);
    }
}

/* Method and target of the request line "METHOD SP target SP HTTP/1.x" when the target is under
 * /api/v1; false otherwise (another path, or a request line a test malformed on purpose). */
static bool parse_request_line(const char *request, size_t len, char *method, size_t method_size,
                               char **target)
{
    size_t m = 0;
    while (m < len && m + 1 < method_size && request[m] >= 'A' && request[m] <= 'Z')
        m++;
    if (m == 0 || m >= len || request[m] != ' ')
        return false;
    size_t start = m + 1, end = start;
    while (end < len && request[end] != ' ' && request[end] != '\r' && request[end] != '\n')
        end++;
    if (end + 8 > len || memcmp(request + end, " HTTP/1.", 8) != 0)
        return false;
    size_t target_len = end - start;
    static const char prefix[] = "/api/v1";
    size_t prefix_len = sizeof(prefix) - 1;
    if (target_len < prefix_len || memcmp(request + start, prefix, prefix_len) != 0 ||
        (target_len > prefix_len && request[start + prefix_len] != '/' &&
         request[start + prefix_len] != '?'))
        return false;
    memcpy(method, request, m);
    method[m] = '\0';
    *target = strndup(request + start, target_len);
    return *target != NULL;
}

/* Replaces the value of every api_key query parameter with REDACTED (keys stay out of files). */
static char *redact_target(const char *target)
{
    static const char redacted[] = "REDACTED";
    size_t len = strlen(target);
    char *out = malloc(len * 2 + sizeof(redacted) * 8 + 1);
    if (out == NULL)
        return NULL;
    const char *query = strchr(target, '?');
    size_t o = 0;
    if (query == NULL) {
        memcpy(out, target, len + 1);
        return out;
    }
    memcpy(out, target, (size_t)(query - target) + 1);
    o = (size_t)(query - target) + 1;
    const char *p = query + 1;
    while (*p != '\0') {
        size_t piece = strcspn(p, "&");
        if (piece >= 8 && strncmp(p, "api_key=", 8) == 0) {
            memcpy(out + o, "api_key=", 8);
            o += 8;
            memcpy(out + o, redacted, sizeof(redacted) - 1);
            o += sizeof(redacted) - 1;
        } else {
            memcpy(out + o, p, piece);
            o += piece;
        }
        p += piece;
        if (*p == '&')
            out[o++] = *p++;
    }
    out[o] = '\0';
    return out;
}

/* The response's header lines as [name, value] pairs, in order (repeated names kept). */
static json_t *header_pairs(const char *head)
{
    json_t *pairs = json_array();
    const char *line = head ? strstr(head, "\r\n") : NULL;
    while (line != NULL && line[2] != '\0') {
        line += 2;
        size_t len = strcspn(line, "\r\n");
        const char *colon = memchr(line, ':', len);
        if (colon != NULL) {
            const char *value = colon + 1;
            while (value < line + len && (*value == ' ' || *value == '\t'))
                value++;
            size_t value_len = (size_t)(line + len - value);
            while (value_len > 0 && (value[value_len - 1] == ' ' || value[value_len - 1] == '\t'))
                value_len--;
            json_t *name_json = json_stringn(line, (size_t)(colon - line));
            json_t *value_json = json_stringn(value, value_len);
            if (name_json != NULL && value_json != NULL)
                json_array_append_new(pairs, json_pack("[oo]", name_json, value_json));
            else {
                json_decref(name_json);
                json_decref(value_json);
            }
        }
        line = strstr(line, "\r\n");
    }
    return pairs;
}

/* Cuts every array of json to its first EXCHANGE_LOG_ARRAY_ITEMS entries; whether it cut. */
static bool cut_arrays(json_t *json)
{
    bool cut = false;
    if (json_is_array(json)) {
        while (json_array_size(json) > EXCHANGE_LOG_ARRAY_ITEMS) {
            json_array_remove(json, json_array_size(json) - 1);
            cut = true;
        }
        size_t i;
        json_t *item;
        json_array_foreach(json, i, item) cut |= cut_arrays(item);
    } else if (json_is_object(json)) {
        const char *key;
        json_t *value;
        json_object_foreach(json, key, value) cut |= cut_arrays(value);
    }
    return cut;
}

/* Sets "body" (UTF-8 text) or "bodyBase64" (other bytes) of record. */
static void set_body_bytes(json_t *record, const char *body, size_t len)
{
    json_t *text = json_stringn(body, len);
    if (text != NULL) {
        json_object_set_new(record, "body", text);
        return;
    }
    char *encoded = malloc(wl_base64_encoded_len(len, true) + 1);
    if (encoded != NULL) {
        wl_base64_encode((const unsigned char *)body, len, WL_BASE64_STANDARD, true, encoded);
        json_object_set_new(record, "bodyBase64", json_string(encoded));
        free(encoded);
    }
}

/* The body of record as the client reads it, within the size limits of exchange_log.h. */
static void set_body(json_t *record, const char *body, size_t len)
{
    json_object_set_new(record, "bodyBytes", json_integer((json_int_t)len));
    if (len <= EXCHANGE_LOG_WHOLE_BYTES) {
        set_body_bytes(record, body, len);
        return;
    }
    json_t *json = json_loadb(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    char *cut = NULL;
    if (json != NULL) {
        cut_arrays(json);
        cut = json_dumps(json, JSON_COMPACT | JSON_ENCODE_ANY);
        json_decref(json);
    }
    if (cut != NULL && strlen(cut) <= EXCHANGE_LOG_MAX_BYTES) {
        json_object_set_new(record, "body", json_string(cut));
        json_object_set_new(record, "truncated", json_true());
    } else {
        json_object_set_new(record, "omitted", json_true());
    }
    free(cut);
}

static bool base62(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

/* Overwrites the secret of every key-shaped token (wlk_ + 8 + _ + 20 or more base62 characters)
 * in line with as many 'x': a key a test sent in a path, or one echoed in X-Request-Id, stays out
 * of the record, and every length and character class is kept. */
static void mask_keys(char *line, size_t len)
{
    for (size_t i = 0; i + 13 < len; i++) {
        if (memcmp(line + i, "wlk_", 4) != 0 || (i > 0 && base62(line[i - 1])))
            continue;
        size_t p = i + 4;
        while (p < len && p < i + 12 && base62(line[p]))
            p++;
        if (p != i + 12 || line[p] != '_')
            continue;
        size_t end = p + 1;
        while (end < len && base62(line[end]))
            end++;
        if (end - (p + 1) >= 20)
            memset(line + p + 1, 'x', end - (p + 1));
        i = end - 1;
    }
}

void exchange_log_record(const char *request, size_t request_len, const http_response_t *res,
                         bool complete, bool raw)
{
    char method[17];
    char *target = NULL;
    if (res->status == 0 ||
        !parse_request_line(request, request_len, method, sizeof(method), &target))
        return;
    pthread_once(&log_once, open_log);
    char *redacted = redact_target(target);
    free(target);
    json_t *record = json_object();
    json_object_set_new(record, "test", json_string(program));
    json_object_set_new(record, "seq", json_integer((json_int_t)atomic_fetch_add(&log_seq, 1)));
    json_object_set_new(record, "method", json_string(method));
    json_object_set_new(record, "target", redacted ? json_string(redacted) : json_null());
    free(redacted);
    json_object_set_new(record, "raw", json_boolean(raw));
    json_object_set_new(record, "status", json_integer(res->status));
    json_object_set_new(record, "headers", header_pairs(res->head));
    json_object_set_new(record, "complete", json_boolean(complete));

    const char *body = res->body ? res->body : "";
    size_t body_len = res->body_len;
    char value[64];
    /* Bytes after a Content-Length body belong to the next answer (a pipelining test). */
    if (http_header(res, "Transfer-Encoding", value, sizeof(value)) == NULL &&
        http_header(res, "Content-Length", value, sizeof(value)) != NULL &&
        strcmp(method, "HEAD") != 0 && res->status != 204 && res->status != 304) {
        size_t declared = (size_t)strtoull(value, NULL, 10);
        if (body_len > declared) {
            json_object_set_new(record, "trailingBytes",
                                json_integer((json_int_t)(body_len - declared)));
            body_len = declared;
        }
    }
    if (http_header(res, "Content-Encoding", value, sizeof(value)) != NULL &&
        strcasecmp(value, "gzip") == 0 && body_len > 0) {
        json_object_set_new(record, "encodedBytes", json_integer((json_int_t)body_len));
        size_t inflated_len = 0;
        char *inflated = gunzip(body, body_len, true, &inflated_len);
        if (inflated != NULL) {
            set_body(record, inflated, inflated_len);
            free(inflated);
        } else {
            json_object_set_new(record, "bodyError",
                                json_string("Content-Encoding: gzip, but the body does not "
                                            "inflate as one whole gzip member"));
        }
    } else {
        set_body(record, body, body_len);
    }

    char *line = json_dumps(record, JSON_COMPACT);
    json_decref(record);
    if (line == NULL) {
        fprintf(stderr, "exchange_log: cannot encode the record of %s %s\n", method, log_path);
        exit(1);
    }
    size_t line_len = strlen(line);
    mask_keys(line, line_len);
    line[line_len++] = '\n'; /* json_dumps' NUL becomes the newline; written by length */
    pthread_mutex_lock(&log_mutex);
    size_t written = 0;
    while (written < line_len) {
        ssize_t n = write(log_fd, line + written, line_len - written);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        written += (size_t)n;
    }
    pthread_mutex_unlock(&log_mutex);
    free(line);
    if (written != line_len) {
        fprintf(stderr, "exchange_log: cannot write to %s: %s\n", log_path, strerror(errno));
        exit(1);
    }
}
