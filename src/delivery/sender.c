/* A webhook attempt goes over HTTP here, with every address it connects to checked. */
#include "delivery/sender.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "walklist/delivery_target.h"

#define RESPONSE_LIMIT (64 * 1024) /* answer bytes read at most; the rest is not waited for */

typedef struct {
    const wl_send_t *send;
    size_t received;
    const char *refusal; /* why a connection was refused (not NULL: nothing was sent) */
    char refused_address[INET6_ADDRSTRLEN];
} attempt_t;

/* The answer's body is not kept: it is counted, and the transfer ends past RESPONSE_LIMIT. */
static size_t discard(char *data, size_t size, size_t count, void *context)
{
    (void)data;
    attempt_t *attempt = context;
    attempt->received += size * count;
    return attempt->received > RESPONSE_LIMIT ? 0 : size * count;
}

static int progress(void *context, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                    curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    const attempt_t *attempt = context;
    return atomic_load(attempt->send->stopping) ? 1 : 0;
}

/*
 * Every address libcurl is about to connect to is checked here, after its own resolution:
 * what the URL's host resolves to now is what counts (DNS may have changed since webhook add),
 * and nothing resolved separately can differ from what is connected to.
 */
static curl_socket_t open_checked(void *context, curlsocktype purpose,
                                  struct curl_sockaddr *address)
{
    (void)purpose;
    attempt_t *attempt = context;
    const char *refusal = wl_delivery_address_refusal(&address->addr);
    if (refusal != NULL) {
        attempt->refusal = refusal;
        const void *bytes = address->family == AF_INET6
                                ? (const void *)&((struct sockaddr_in6 *)&address->addr)->sin6_addr
                                : (const void *)&((struct sockaddr_in *)&address->addr)->sin_addr;
        if (inet_ntop(address->family, bytes, attempt->refused_address,
                      sizeof(attempt->refused_address)) == NULL)
            attempt->refused_address[0] = '\0';
        return CURL_SOCKET_BAD;
    }
    return socket(address->family, address->socktype, address->protocol);
}

void wl__sender_post(CURL *curl, const wl_send_t *send, wl_sent_t *sent)
{
    memset(sent, 0, sizeof(*sent));
    char id_header[128], timestamp_header[48], signature_header[80];
    snprintf(id_header, sizeof(id_header), "webhook-id: %s", send->webhook_id);
    snprintf(timestamp_header, sizeof(timestamp_header), "webhook-timestamp: %lld",
             send->timestamp);
    snprintf(signature_header, sizeof(signature_header), "webhook-signature: %s", send->signature);
    struct curl_slist *headers = NULL;
    const char *lines[] = {"Content-Type: application/json",
                           "User-Agent: walklist-webhooks",
                           "Expect:",
                           id_header,
                           timestamp_header,
                           signature_header};
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        struct curl_slist *more = curl_slist_append(headers, lines[i]);
        if (more == NULL) {
            curl_slist_free_all(headers);
            snprintf(sent->error, sizeof(sent->error), "out of memory");
            return;
        }
        headers = more;
    }
    attempt_t attempt = {.send = send};
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, send->url);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L); /* a redirect is a failed attempt */
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    /* A proxy from the environment would be connected to instead of the checked address. */
    curl_easy_setopt(curl, CURLOPT_PROXY, "");
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)send->connect_timeout_ms);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)send->timeout_ms);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, send->body);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(send->body));
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &attempt);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &attempt);
    if (!send->allow_private) {
        curl_easy_setopt(curl, CURLOPT_OPENSOCKETFUNCTION, open_checked);
        curl_easy_setopt(curl, CURLOPT_OPENSOCKETDATA, &attempt);
    }
    CURLcode result = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    sent->status = (int)status;
    if (attempt.refusal != NULL && status == 0) {
        sent->refused = true;
        snprintf(sent->error, sizeof(sent->error),
                 "refused: the host resolves to %s (%s); see --webhook-allow-private",
                 attempt.refused_address, attempt.refusal);
    } else if (status >= 200 && status <= 299) {
        /* Also when the transfer ended early: the answer said 2xx, and a long body is cut. */
        sent->delivered = true;
    } else if (status > 0) {
        snprintf(sent->error, sizeof(sent->error), "HTTP %ld", status);
    } else {
        snprintf(sent->error, sizeof(sent->error), "%s", curl_easy_strerror(result));
    }
}
