/* Webhooks' pure rules: event lists, endpoint URLs, the addresses deliveries may not go to,
 * and the Standard Webhooks signature (its published example). */
#include "test.h"

#include <arpa/inet.h>
#include <string.h>

#include "domain/webhook.h"
#include "walklist/delivery_target.h"

/* NULL when allowed, else a word the refusal must contain. */
static void check_address(const char *text, const char *refused)
{
    struct sockaddr_storage storage;
    memset(&storage, 0, sizeof(storage));
    if (strchr(text, ':') != NULL) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&storage;
        a->sin6_family = AF_INET6;
        CHECK_INT(inet_pton(AF_INET6, text, &a->sin6_addr), 1);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&storage;
        a->sin_family = AF_INET;
        CHECK_INT(inet_pton(AF_INET, text, &a->sin_addr), 1);
    }
    const char *why = wl_delivery_address_refusal((struct sockaddr *)&storage);
    if (refused == NULL && why != NULL)
        FAIL("%s refused: %s", text, why);
    if (refused != NULL && (why == NULL || strstr(why, refused) == NULL))
        FAIL("%s: expected a refusal with '%s', got %s", text, refused, why ? why : "none");
}

static void check_url(const char *url, bool ok, const char *host, unsigned port, bool https)
{
    wl_error_t err;
    wl_error_init(&err);
    wl_delivery_target_t target;
    int rc = wl_delivery_url_parse(url, &target, &err);
    if (!ok) {
        if (rc != WL_EINVAL || err.violation_count != 1 ||
            strcmp(err.violations[0].field, "url") != 0)
            FAIL("%s: expected a violation of url, got %d", url, rc);
        return;
    }
    if (rc != 0) {
        FAIL("%s refused: %s", url,
             err.violation_count ? err.violations[0].description : err.message);
        return;
    }
    CHECK_STR(target.host, host);
    CHECK_INT(target.port, port);
    CHECK_INT(target.https, https);
}

static void check_events(const char *events, size_t expected_count)
{
    wl_error_t err;
    wl_error_init(&err);
    size_t count = 99;
    int rc = wl_webhook_events_check(events, &count, &err);
    if (expected_count == 0) {
        CHECK_INT(rc, WL_EINVAL);
        CHECK_INT(err.violation_count, 1);
        CHECK_STR(err.violations[0].field, "events");
    } else {
        CHECK_INT(rc, 0);
        CHECK_INT(count, expected_count);
    }
}

int main(void)
{
    check_address("93.184.216.34", NULL);
    check_address("8.8.8.8", NULL);
    check_address("0.0.0.0", "unspecified");
    check_address("0.1.2.3", "unspecified");
    check_address("10.0.0.1", "private");
    check_address("172.16.0.1", "private");
    check_address("172.31.255.255", "private");
    check_address("172.32.0.1", NULL);
    check_address("192.168.1.1", "private");
    check_address("100.64.0.1", "shared");
    check_address("127.0.0.1", "loopback");
    check_address("127.255.255.254", "loopback");
    check_address("169.254.169.254", "link-local");
    check_address("224.0.0.1", "multicast");
    check_address("239.255.255.250", "multicast");
    check_address("255.255.255.255", "broadcast");
    check_address("2606:2800:220:1:248:1893:25c8:1946", NULL);
    check_address("::", "unspecified");
    check_address("::1", "loopback");
    check_address("fe80::1", "link-local");
    check_address("febf::1", "link-local");
    check_address("fc00::1", "private");
    check_address("fd12:3456::1", "private");
    check_address("ff02::1", "multicast");
    check_address("::ffff:127.0.0.1", "loopback");
    check_address("::ffff:10.0.0.1", "private");
    check_address("::ffff:93.184.216.34", NULL);
    check_address("::127.0.0.1", "loopback");
    check_address("64:ff9b::a9fe:a9fe", "link-local");
    check_address("2002:7f00:1::", "loopback");
    check_address("2002:5db8:d822::", NULL);

    check_url("http://example.com/hook", true, "example.com", 80, false);
    check_url("https://example.com:8443/a/b?c=d", true, "example.com", 8443, true);
    check_url("HTTPS://Example.COM/", true, "Example.COM", 443, true);
    check_url("http://[2001:db8::1]:8080/", true, "2001:db8::1", 8080, false);
    check_url("http://192.0.2.1/", true, "192.0.2.1", 80, false);
    check_url("", false, NULL, 0, false);
    check_url("ftp://example.com/", false, NULL, 0, false);
    check_url("file:///etc/passwd", false, NULL, 0, false);
    check_url("gopher://example.com/", false, NULL, 0, false);
    check_url("example.com/hook", false, NULL, 0, false);
    check_url("http://", false, NULL, 0, false);
    check_url("http://user:secret@example.com/", false, NULL, 0, false);
    check_url("http://user@example.com/", false, NULL, 0, false);
    check_url("http://example.com/#frag", false, NULL, 0, false);
    check_url("http://exa mple.com/", false, NULL, 0, false);
    check_url("http://example.com/\r\nX: y", false, NULL, 0, false);
    check_url("http://example.com:0/", false, NULL, 0, false);
    check_url("http://example.com:99999/", false, NULL, 0, false);
    check_url("http://[fe80::1%25eth0]/", false, NULL, 0, false);

    check_events("locate_list.loaded", 1);
    check_events("stock.changed,locate_list.loaded", 2);
    check_events("", 0);
    check_events("stock.changed,", 0);
    check_events("stock.changed, locate_list.loaded", 0);
    check_events("Stock.Changed", 0);
    check_events("stock.changed,stock.changed", 0);
    CHECK(wl_webhook_event_known("stock.changed"));
    CHECK(!wl_webhook_event_known("stock"));

    /* Standard Webhooks' example (its specification and reference libraries). */
    /* whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw */
    static const unsigned char secret[] = {0x31, 0xf2, 0x90, 0xf6, 0xbf, 0x06, 0x29, 0x8a,
                                           0xab, 0x4f, 0x08, 0xd4, 0x3c, 0x3f, 0x08, 0x2c,
                                           0xf6, 0x48, 0xa3, 0x62, 0xda, 0x2d, 0xa4, 0xb0};
    char signature[WL_WEBHOOK_SIGNATURE_SIZE];
    const char body[] = "{\"test\": 2432232314}";
    CHECK_INT(wl_webhook_sign(secret, sizeof(secret), "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
                              body, strlen(body), signature),
              0);
    CHECK_STR(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");

    unsigned char bytes[WL_WEBHOOK_SECRET_SIZE];
    for (size_t i = 0; i < sizeof(bytes); i++)
        bytes[i] = (unsigned char)i;
    char text[WL_WEBHOOK_SECRET_TEXT_SIZE];
    wl_webhook_secret_format(bytes, text);
    CHECK_STR(text, "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=");
    return test_exit();
}
