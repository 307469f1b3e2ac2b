/* Reading Accept-Encoding and If-None-Match (RFC 9110) happens here. */
#include "http/negotiate.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

static const char *skip_ows(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* tchar of RFC 9110 section 5.6.2. */
static bool is_tchar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/*
 * qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ), in thousandths;
 * -1 when the text is not one.
 */
static int parse_qvalue(const char *p, size_t len)
{
    if (len == 0 || (p[0] != '0' && p[0] != '1'))
        return -1;
    int value = (p[0] - '0') * 1000;
    if (len == 1)
        return value;
    if (p[1] != '.' || len > 5)
        return -1;
    int scale = 100;
    for (size_t i = 2; i < len; i++, scale /= 10) {
        if (p[i] < '0' || p[i] > '9' || (value == 1000 && p[i] != '0'))
            return -1;
        value += (p[i] - '0') * scale;
    }
    return value;
}

/*
 * Reads the parameters after a coding up to the element's end; returns the
 * q-value in thousandths (1000 when absent), or -1 when a parameter is
 * malformed. *p is left at the ',' or NUL that ends the element.
 */
static int element_weight(const char **p)
{
    int weight = 1000;
    const char *s = *p;
    for (;;) {
        s = skip_ows(s);
        if (*s != ';')
            break;
        s = skip_ows(s + 1);
        const char *name = s;
        while (is_tchar(*s))
            s++;
        size_t name_len = (size_t)(s - name);
        s = skip_ows(s);
        if (name_len == 0 || *s != '=') {
            weight = -1;
            break;
        }
        s = skip_ows(s + 1);
        const char *value = s;
        while (is_tchar(*s))
            s++;
        if (name_len == 1 && (name[0] == 'q' || name[0] == 'Q'))
            weight = parse_qvalue(value, (size_t)(s - value));
        if (weight < 0)
            break;
    }
    s = skip_ows(s);
    if (*s != ',' && *s != '\0')
        weight = -1;
    while (*s != ',' && *s != '\0')
        s++;
    *p = s;
    return weight;
}

static bool coding_is(const char *coding, size_t len, const char *name)
{
    return strlen(name) == len && strncasecmp(coding, name, len) == 0;
}

bool wl_negotiate_gzip(const char *accept_encoding)
{
    if (accept_encoding == NULL)
        return false;
    int gzip = -1, star = -1, identity = -1; /* thousandths; -1: not listed */
    const char *p = accept_encoding;
    while (*p != '\0') {
        p = skip_ows(p);
        const char *coding = p;
        while (is_tchar(*p))
            p++;
        size_t len = (size_t)(p - coding);
        int weight = element_weight(&p);
        if (*p == ',')
            p++;
        if (len == 0 || weight < 0)
            continue;
        if (coding_is(coding, len, "gzip") || coding_is(coding, len, "x-gzip"))
            gzip = weight > gzip ? weight : gzip;
        else if (coding_is(coding, len, "*"))
            star = weight;
        else if (coding_is(coding, len, "identity"))
            identity = weight;
    }
    int gzip_weight = gzip >= 0 ? gzip : star;
    if (gzip_weight <= 0)
        return false;
    /* An unlisted identity has no preference over gzip; a listed one may have. */
    return identity < 0 || gzip_weight >= identity;
}

/*
 * Reads one entity-tag at p: [ "W/" ] DQUOTE *etagc DQUOTE, etagc being
 * %x21 / %x23-7E / obs-text. Sets the opaque-tag (quotes included) and
 * returns the position after it, or NULL when there is none.
 */
static const char *entity_tag(const char *p, const char **opaque, size_t *opaque_len)
{
    if (p[0] == 'W' && p[1] == '/')
        p += 2;
    if (*p != '"')
        return NULL;
    const char *start = p++;
    while (*p == 0x21 || (*p >= 0x23 && *p <= 0x7e) || (unsigned char)*p >= 0x80)
        p++;
    if (*p != '"')
        return NULL;
    p++;
    *opaque = start;
    *opaque_len = (size_t)(p - start);
    return p;
}

bool wl_negotiate_none_match(const char *if_none_match, const char *etag)
{
    if (if_none_match == NULL)
        return false;
    const char *ours = etag;
    size_t ours_len = strlen(etag);
    if (ours_len > 2 && ours[0] == 'W' && ours[1] == '/') {
        ours += 2;
        ours_len -= 2;
    }
    bool matched = false, any = false;
    const char *p = if_none_match;
    for (;;) {
        p = skip_ows(p);
        if (*p == ',') { /* empty list elements are allowed (section 5.6.1) */
            p++;
            continue;
        }
        if (*p == '\0')
            break;
        if (*p == '*') {
            /* "*" matches any current representation, and the export always has one. */
            matched = true;
            p++;
        } else {
            const char *opaque;
            size_t len;
            p = entity_tag(p, &opaque, &len);
            if (p == NULL)
                return false;
            matched = matched || (len == ours_len && memcmp(opaque, ours, len) == 0);
        }
        any = true;
        p = skip_ows(p);
        if (*p != ',' && *p != '\0')
            return false;
    }
    return any && matched;
}

/* Reads one "; name=value" parameter (value a token or a quoted-string) at *p; false when
 * what is there is not one. */
static bool next_parameter(const char **p, const char **name, size_t *name_len, const char **value,
                           size_t *value_len)
{
    const char *s = *p + strspn(*p, " \t");
    if (*s != ';')
        return false;
    s += 1 + strspn(s + 1, " \t");
    *name = s;
    *name_len = strcspn(s, "=; \t");
    if (*name_len == 0 || s[*name_len] != '=')
        return false;
    s += *name_len + 1;
    if (*s == '"') {
        const char *end = strchr(s + 1, '"');
        if (end == NULL)
            return false;
        *value = s + 1;
        *value_len = (size_t)(end - s - 1);
        s = end + 1;
    } else {
        *value = s;
        *value_len = strcspn(s, "; \t");
        if (*value_len == 0)
            return false;
        s += *value_len;
    }
    *p = s;
    return true;
}

wl_media_t wl_negotiate_content_type(const char *content_type, bool *utf8_charset)
{
    static const char json[] = "application/json", proto[] = "application/proto";
    bool charset = false;
    if (utf8_charset != NULL)
        *utf8_charset = false;
    if (content_type == NULL)
        return WL_MEDIA_OTHER;
    const char *p = content_type + strspn(content_type, " \t");
    wl_media_t media;
    if (strncasecmp(p, json, sizeof(json) - 1) == 0) {
        media = WL_MEDIA_JSON;
        p += sizeof(json) - 1;
    } else if (strncasecmp(p, proto, sizeof(proto) - 1) == 0) {
        media = WL_MEDIA_PROTO;
        p += sizeof(proto) - 1;
    } else {
        return WL_MEDIA_OTHER;
    }
    for (;;) {
        const char *rest = p + strspn(p, " \t");
        if (*rest == '\0')
            break;
        const char *name, *value;
        size_t name_len, value_len;
        if (media == WL_MEDIA_PROTO || !next_parameter(&p, &name, &name_len, &value, &value_len))
            return WL_MEDIA_OTHER;
        if (name_len == 7 && strncasecmp(name, "charset", 7) == 0) {
            if (value_len != 5 || strncasecmp(value, "utf-8", 5) != 0)
                return WL_MEDIA_OTHER;
            charset = true;
        }
    }
    if (utf8_charset != NULL)
        *utf8_charset = charset;
    return media;
}
