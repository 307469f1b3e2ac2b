/* Finding where the statements of a text of SQL end happens here. */
#include "domain/sql_split.h"

#include <string.h>

static bool is_ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           (unsigned char)c >= 0x80;
}

/* Past the quoted text opening at i (quote at s[i]); backslashes escape in E'..' strings. */
static size_t skip_quoted(const char *s, size_t len, size_t i, char quote, bool backslashes)
{
    for (i++; i < len; i++) {
        if (backslashes && s[i] == '\\') {
            i++;
        } else if (s[i] == quote) {
            if (i + 1 < len && s[i + 1] == quote)
                i++; /* a doubled quote stands for one */
            else
                return i + 1;
        }
    }
    return len;
}

/* Past the dollar-quoted body opening at i, or i + 1 when s[i] opens none (a parameter $1). */
static size_t skip_dollar_quoted(const char *s, size_t len, size_t i)
{
    size_t tag_end = i + 1;
    if (tag_end < len && s[tag_end] >= '0' && s[tag_end] <= '9')
        return i + 1;
    while (tag_end < len && s[tag_end] != '$' && is_ident_char(s[tag_end]))
        tag_end++;
    if (tag_end >= len || s[tag_end] != '$')
        return i + 1;
    size_t tag_len = tag_end - i + 1; /* "$tag$" */
    for (size_t j = tag_end + 1; j + tag_len <= len; j++)
        if (s[j] == '$' && memcmp(s + j, s + i, tag_len) == 0)
            return j + tag_len;
    return len;
}

/* Past the comment opening at i ("--" or a nested block). */
static size_t skip_comment(const char *s, size_t len, size_t i)
{
    if (s[i] == '-') {
        while (i < len && s[i] != '\n')
            i++;
        return i;
    }
    int depth = 0;
    while (i < len) {
        if (i + 1 < len && s[i] == '/' && s[i + 1] == '*') {
            depth++;
            i += 2;
        } else if (i + 1 < len && s[i] == '*' && s[i + 1] == '/') {
            i += 2;
            if (--depth == 0)
                return i;
        } else {
            i++;
        }
    }
    return len;
}

bool wl_sql_next_statement(wl_span_t sql, size_t *pos, wl_span_t *statement)
{
    const char *s = sql.base;
    size_t len = sql.len;
    while (*pos < len) {
        size_t start = *pos, i = *pos;
        bool content = false; /* anything but blanks and comments since start */
        while (i < len && s[i] != ';') {
            char c = s[i];
            if ((c == '-' && i + 1 < len && s[i + 1] == '-') ||
                (c == '/' && i + 1 < len && s[i + 1] == '*')) {
                i = skip_comment(s, len, i);
                continue;
            }
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f')
                content = true;
            if (c == '\'') {
                bool escapes = i > 0 && (s[i - 1] == 'E' || s[i - 1] == 'e') &&
                               (i < 2 || !is_ident_char(s[i - 2]));
                i = skip_quoted(s, len, i, '\'', escapes);
            } else if (c == '"') {
                i = skip_quoted(s, len, i, '"', false);
            } else if (c == '$' && (i == 0 || !is_ident_char(s[i - 1]))) {
                i = skip_dollar_quoted(s, len, i);
            } else {
                i++;
            }
        }
        *pos = i < len ? i + 1 : len;
        if (content) {
            *statement = wl_span(s + start, i - start);
            return true;
        }
    }
    return false;
}
