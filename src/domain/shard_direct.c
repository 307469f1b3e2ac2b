/* Expanding an SQL function's shard-direct markers happens here. */
#include "domain/shard_direct.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "walklist/utf8.h"

#define SWITCH_MARKER    "-- shard-direct: true"
#define STATEMENT_MARKER "-- shard-direct: statement"
#define SHARDS_MARKER    "-- shard-direct: shards"
#define MINS_MARKER      "-- shard-direct: mins"

/* The text being made; failed once an allocation failed (every later write is dropped). */
typedef struct {
    char *base;
    size_t len, cap;
    bool failed;
} text_t;

static void put(text_t *t, const char *s, size_t n)
{
    if (t->failed)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap == 0 ? 4096 : t->cap;
        while (t->len + n + 1 > cap)
            cap *= 2;
        char *grown = realloc(t->base, cap);
        if (grown == NULL) {
            t->failed = true;
            return;
        }
        t->base = grown;
        t->cap = cap;
    }
    memcpy(t->base + t->len, s, n);
    t->len += n;
    t->base[t->len] = '\0';
}

static void put_str(text_t *t, const char *s)
{
    put(t, s, strlen(s));
}

static bool is_ident(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '$';
}

static bool ends_with(wl_span_t s, const char *suffix)
{
    size_t n = strlen(suffix);
    return s.len >= n && memcmp(s.base + s.len - n, suffix, n) == 0;
}

bool wl_shard_direct_marked(wl_span_t sql)
{
    for (size_t i = 0; i + sizeof(STATEMENT_MARKER) - 1 <= sql.len; i++) {
        if (memcmp(sql.base + i, STATEMENT_MARKER, sizeof(STATEMENT_MARKER) - 1) == 0)
            return true;
    }
    return false;
}

/* Whether a line ends a statement: its code, before a comment, ends with a semicolon. */
static bool ends_statement(wl_span_t line)
{
    bool quoted = false;
    size_t code = line.len;
    for (size_t i = 0; i < line.len; i++) {
        if (line.base[i] == '\'')
            quoted = !quoted;
        else if (!quoted && line.base[i] == '-' && i + 1 < line.len && line.base[i + 1] == '-') {
            code = i;
            break;
        }
    }
    return ends_with(wl_utf8_trim(wl_span(line.base, code)), ";");
}

/* The line starting at pos: its text without the newline; *next is where the next starts. */
static wl_span_t line_at(wl_span_t sql, size_t pos, size_t *next)
{
    const char *nl = memchr(sql.base + pos, '\n', sql.len - pos);
    size_t end = nl != NULL ? (size_t)(nl - sql.base) : sql.len;
    *next = nl != NULL ? end + 1 : sql.len;
    return wl_span(sql.base + pos, end - pos);
}

/* The table of the layout an identifier names: its index, and whether it names the table's
 * primary key (<table>_pkey) rather than the table; -1 when neither. */
static int named_table(const wl_shard_layout_t *layout, wl_span_t ident, bool *pkey)
{
    for (size_t t = 0; t < layout->table_count; t++) {
        size_t n = strlen(layout->tables[t]);
        if (ident.len < n || strncasecmp(ident.base, layout->tables[t], n) != 0)
            continue;
        if (ident.len == n) {
            *pkey = false;
            return (int)t;
        }
        if (ident.len == n + 5 && strncasecmp(ident.base + n, "_pkey", 5) == 0) {
            *pkey = true;
            return (int)t;
        }
    }
    return -1;
}

/* The statement with each table of the layout named by its shard of group g (quoted strings,
 * quoted identifiers and comments left as they are); how many names it changed. */
static size_t put_on_shards(text_t *t, wl_span_t stmt, const wl_shard_layout_t *layout, size_t g)
{
    size_t renamed = 0;
    size_t i = 0;
    while (i < stmt.len) {
        char c = stmt.base[i];
        size_t start = i;
        if (c == '\'' || c == '"') {
            i++;
            while (i < stmt.len && stmt.base[i] != c)
                i++;
            i += i < stmt.len; /* the closing quote; a doubled one starts the next run */
            put(t, stmt.base + start, i - start);
        } else if (c == '-' && i + 1 < stmt.len && stmt.base[i + 1] == '-') {
            while (i < stmt.len && stmt.base[i] != '\n')
                i++;
            put(t, stmt.base + start, i - start);
        } else if (is_ident(c) && !isdigit((unsigned char)c) && c != '$') {
            while (i < stmt.len && is_ident(stmt.base[i]))
                i++;
            wl_span_t ident = wl_span(stmt.base + start, i - start);
            bool pkey = false;
            int table = named_table(layout, ident, &pkey);
            put(t, ident.base, ident.len);
            if (table >= 0) {
                char suffix[32];
                snprintf(suffix, sizeof(suffix), "_%" PRId64,
                         layout->shards[g * layout->table_count + (size_t)table]);
                put_str(t, suffix);
                renamed++;
            }
        } else if (is_ident(c)) {
            while (i < stmt.len && is_ident(stmt.base[i]))
                i++;
            put(t, stmt.base + start, i - start);
        } else {
            put(t, &c, 1);
            i++;
        }
    }
    return renamed;
}

static void put_line(text_t *t, wl_span_t indent, const char *text)
{
    put(t, indent.base, indent.len);
    put_str(t, text);
    put(t, "\n", 1);
}

/* The groups' indexes ordered by their anchor shard, which the dispatch compares. */
static size_t *groups_by_anchor(const wl_shard_layout_t *layout)
{
    size_t *order = malloc(layout->group_count * sizeof(*order));
    if (order == NULL)
        return NULL;
    for (size_t i = 0; i < layout->group_count; i++) {
        size_t at = i;
        int64_t anchor = layout->shards[i * layout->table_count];
        while (at > 0 && layout->shards[order[at - 1] * layout->table_count] > anchor) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = i;
    }
    return order;
}

/* The statement on the shards of the groups order[lo..hi): halves compared by v_shard until
 * one is left, so that a row's dispatch evaluates about log2(groups) comparisons, and a group
 * transaction initializes only those its rows reach (PL/pgSQL prepares each expression once a
 * transaction); a CASE of every group evaluated up to one comparison per group. */
static int put_tree(text_t *t, wl_span_t indent, wl_span_t stmt, const wl_shard_layout_t *layout,
                    const size_t *order, size_t lo, size_t hi, wl_error_t *err)
{
    if (hi - lo == 1) {
        if (put_on_shards(t, stmt, layout, order[lo]) == 0)
            return wl_error_set(err, WL_EINVAL,
                                "a shard-direct statement names none of its tables: %.*s",
                                (int)wl_utf8_trim(stmt).len, wl_utf8_trim(stmt).base);
        put(t, "\n", 1);
        return 0;
    }
    size_t mid = lo + (hi - lo) / 2;
    char test[64];
    snprintf(test, sizeof(test), "IF v_shard < %" PRId64 " THEN",
             layout->shards[order[mid] * layout->table_count]);
    put_line(t, indent, test);
    int rc = put_tree(t, indent, stmt, layout, order, lo, mid, err);
    put_line(t, indent, "ELSE");
    if (rc == 0)
        rc = put_tree(t, indent, stmt, layout, order, mid, hi, err);
    put_line(t, indent, "END IF;");
    return rc;
}

/* The marked statement's dispatch: where v_direct, by v_shard to its shard group's statement
 * (the function sets v_direct only for a shard of this form: SHARDS_MARKER's list); the
 * statement as written otherwise. */
static int put_dispatch(text_t *t, wl_span_t indent, wl_span_t stmt,
                        const wl_shard_layout_t *layout, wl_error_t *err)
{
    size_t *order = groups_by_anchor(layout);
    if (order == NULL)
        return wl_error_set(err, WL_ENOMEM, "out of memory for the shard-direct form");
    put_line(t, indent, "IF v_direct THEN");
    int rc = put_tree(t, indent, stmt, layout, order, 0, layout->group_count, err);
    free(order);
    put_line(t, indent, "ELSE");
    put(t, stmt.base, stmt.len);
    put(t, "\n", 1);
    put_line(t, indent, "END IF;");
    return rc;
}

/* A line of a list marker with its last '{}' filled: the anchor shard of each group, or each
 * group's least hash value, in the layout's order (by hash range). */
static int put_list(text_t *t, wl_span_t line, const wl_shard_layout_t *layout, bool mins,
                    wl_error_t *err)
{
    const char *empty = NULL;
    for (const char *p = line.base; p + 4 <= line.base + line.len; p++) {
        if (memcmp(p, "'{}'", 4) == 0)
            empty = p;
    }
    if (empty == NULL)
        return wl_error_set(err, WL_EINVAL, "a shard-direct list without '{}': %.*s",
                            (int)wl_utf8_trim(line).len, wl_utf8_trim(line).base);
    put(t, line.base, (size_t)(empty - line.base));
    put_str(t, "'{");
    for (size_t g = 0; g < layout->group_count; g++) {
        char value[32];
        if (mins)
            snprintf(value, sizeof(value), "%s%" PRId32, g ? "," : "", layout->mins[g]);
        else
            snprintf(value, sizeof(value), "%s%" PRId64, g ? "," : "",
                     layout->shards[g * layout->table_count]);
        put_str(t, value);
    }
    put_str(t, "}'");
    put(t, empty + 4, (size_t)(line.base + line.len - (empty + 4)));
    return 0;
}

/* The switch line with its last "false" (before the marker) turned into "true". */
static int put_switch(text_t *t, wl_span_t line, wl_error_t *err)
{
    size_t code_len = line.len - (sizeof(SWITCH_MARKER) - 1);
    for (size_t end = code_len; end >= 5; end--) {
        const char *p = line.base + end - 5;
        if (memcmp(p, "false", 5) == 0 && (p == line.base || !is_ident(p[-1])) && !is_ident(p[5])) {
            put(t, line.base, (size_t)(p - line.base));
            put_str(t, "true");
            put(t, p + 5, (size_t)(line.base + line.len - (p + 5)));
            return 0;
        }
    }
    return wl_error_set(err, WL_EINVAL, "a shard-direct switch without false: %.*s",
                        (int)wl_utf8_trim(line).len, wl_utf8_trim(line).base);
}

int wl_shard_direct_expand(wl_span_t sql, const wl_shard_layout_t *layout, char **out,
                           wl_error_t *err)
{
    *out = NULL;
    if (layout->group_count == 0 || layout->table_count == 0)
        return wl_error_set(err, WL_EINVAL, "a shard-direct form needs at least one shard");
    text_t t = {0};
    put(&t, "", 0);
    int rc = 0;
    size_t pos = 0;
    while (rc == 0 && pos < sql.len) {
        size_t next = 0;
        wl_span_t line = line_at(sql, pos, &next);
        wl_span_t bare = wl_utf8_trim(line);
        if (ends_with(line, SWITCH_MARKER)) {
            rc = put_switch(&t, line, err);
        } else if (ends_with(line, SHARDS_MARKER) || ends_with(line, MINS_MARKER)) {
            rc = put_list(&t, line, layout, ends_with(line, MINS_MARKER), err);
        } else if (bare.len == sizeof(STATEMENT_MARKER) - 1 &&
                   memcmp(bare.base, STATEMENT_MARKER, bare.len) == 0) {
            put(&t, line.base, line.len);
            put(&t, "\n", 1);
            /* The statement: the lines up to the first that ends with a semicolon. */
            size_t start = next, end = next;
            bool ended = false;
            while (!ended && end < sql.len) {
                wl_span_t stmt_line = line_at(sql, end, &next);
                ended = ends_statement(stmt_line);
                end = stmt_line.base + stmt_line.len - sql.base;
                if (!ended)
                    end = next;
            }
            if (!ended)
                rc = wl_error_set(err, WL_EINVAL,
                                  "a shard-direct marker with no statement after it");
            else
                rc = put_dispatch(&t, wl_span(line.base, (size_t)(bare.base - line.base)),
                                  wl_span(sql.base + start, end - start), layout, err);
            pos = next;
            continue;
        } else {
            put(&t, line.base, line.len);
        }
        if (next > pos + line.len)
            put(&t, "\n", 1);
        pos = next;
    }
    if (rc == 0 && t.failed)
        rc = wl_error_set(err, WL_ENOMEM, "out of memory for the shard-direct form");
    if (rc != 0) {
        free(t.base);
        return rc;
    }
    *out = t.base;
    return 0;
}
