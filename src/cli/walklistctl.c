/* walklistctl: migrations, organizations, API keys, webhooks, CSV imports and demo data from the
 * command line happen here. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distribute.h"
#include "generate.h"
#include "walklist/admin.h"
#include "walklist/delivery_target.h"
#include "walklist/scopes.h"
#include "walklist/version.h"

#define MAX_POSITIONAL 4

typedef struct {
    const char *database_url;
    const char *org;
    const char *name;
    const char *scopes;
    const char *skus;
    const char *seed;
    const char *csv_dir;
    const char *url;
    const char *events;
    const char *endpoint;
    const char *limit;
    const char *shards;
    const char *positional[MAX_POSITIONAL];
    int positional_count;
    bool help;
    bool allow_private; /* --webhook-allow-private */
} args_t;

/* --- CSV formats: the in-product reference (walklistctl formats, import KIND --help) -------- */

typedef struct {
    const char *kind;
    const char *summary;
    const char *columns[5][2]; /* name, what it holds */
    const char *natural_key;
    const char *example; /* one data row */
} csv_format_t;

#define CODE_RULE     "1-64 characters, exact: case-sensitive, never trimmed"
#define QUANTITY_RULE "whole number, 0 to 999999999999999999 (at most 18 digits)"

/* The order of imports: later kinds refer to earlier ones. */
static const csv_format_t csv_formats[] = {
    {"warehouses",
     "Warehouses. Supplier warehouses count in the breakdown, never in the stock export.",
     {{"code", "warehouse code, " CODE_RULE},
      {"name", "1-200 characters"},
      {"kind", "own or supplier"}},
     "code",
     "MAIN,Main warehouse,own"},
    {"locations",
     "Bins (rack locations) of a warehouse; staging areas are never a product's primary rack.",
     {{"warehouse", "code of a warehouse already imported"},
      {"code", "bin code, " CODE_RULE},
      {"staging", "true or false"}},
     "warehouse+code",
     "MAIN,A-10,false"},
    {"products",
     "Products with their EANs; a product's EANs are replaced by the file's list.",
     {{"sku", "SKU, " CODE_RULE},
      {"name", "1-200 characters"},
      {"eans", "EANs separated by |, may be empty; one EAN may belong to several products"}},
     "sku",
     "SKU-1001,Cordless drill 18V,4006381333931|4006381333948"},
    {"stock",
     "Physical stock of a product in a warehouse.",
     {{"sku", "SKU of a product already imported"},
      {"warehouse", "code of a warehouse already imported"},
      {"on_hand", QUANTITY_RULE}},
     "sku+warehouse",
     "SKU-1001,MAIN,12"},
    {"location-stock",
     "Rack assignments: the quantity of a product held in a bin (0 still assigns the bin).",
     {{"sku", "SKU of a product already imported"},
      {"warehouse", "code of a warehouse already imported"},
      {"location", "bin code of a location already imported in that warehouse"},
      {"quantity", QUANTITY_RULE}},
     "sku+warehouse+location",
     "SKU-1001,MAIN,A-10,8"},
    {"reservations",
     "Reservations; active ones in own warehouses are subtracted in the stock export.",
     {{"ref", "reservation reference, " CODE_RULE},
      {"sku", "SKU of a product already imported"},
      {"warehouse", "code of a warehouse already imported"},
      {"quantity", QUANTITY_RULE},
      {"status", "active, released or consumed"}},
     "ref",
     "SO-5001,SKU-1001,MAIN,2,active"},
};

#define FORMAT_COUNT (sizeof(csv_formats) / sizeof(csv_formats[0]))

static const char csv_rules[] =
    "Every file: UTF-8, a header row with exactly these columns in this order, RFC 4180\n"
    "quoting (\"Work light, LED\"; a quote inside is doubled). A row upserts the record of its\n"
    "natural key; a natural key twice in one file is an error. A file imports in one\n"
    "transaction: any bad row and nothing is imported, and every problem is reported as\n"
    "FILE:LINE: column: problem, by line (the first 50, then how many more).\n"
    "Limits: codes 1-64 characters, names up to 200, quantities at most 18 digits; a SKU's\n"
    "available quantity (on_hand over own warehouses minus active reservations in them) must\n"
    "stay at most 9223372036854775807: a file that would exceed it is refused, naming its\n"
    "lines of that SKU.\n";

static const csv_format_t *find_format(const char *kind)
{
    for (size_t i = 0; kind != NULL && i < FORMAT_COUNT; i++)
        if (strcmp(csv_formats[i].kind, kind) == 0)
            return &csv_formats[i];
    return NULL;
}

static void print_format(FILE *out, const csv_format_t *format)
{
    fprintf(out, "%s: %s\ncolumns:\n", format->kind, format->summary);
    for (size_t c = 0; c < 5 && format->columns[c][0] != NULL; c++)
        fprintf(out, "  %-10s %s\n", format->columns[c][0], format->columns[c][1]);
    fprintf(out, "natural key: %s\nexample:\n  ", format->natural_key);
    for (size_t c = 0; c < 5 && format->columns[c][0] != NULL; c++)
        fprintf(out, "%s%s", c ? "," : "", format->columns[c][0]);
    fprintf(out, "\n  %s\n", format->example);
}

/* --- Commands ----------------------------------------------------------------------------- */

typedef struct command command_t;
struct command {
    const char *words[2]; /* "key", "create"; words[1] NULL for one-word commands */
    int operands;         /* positional arguments after the words */
    const char *synopsis; /* after "walklistctl " */
    const char *summary;
    const char *details; /* more for its --help, or NULL */
    bool needs_database;
    int (*run)(wl_admin_t *admin, const args_t *args, wl_error_t *err);
};

static void command_usage(FILE *out, const command_t *command, const args_t *args)
{
    const csv_format_t *format =
        command->words[0] != NULL && strcmp(command->words[0], "import") == 0
            ? find_format(args->positional[1])
            : NULL;
    if (format != NULL) {
        fprintf(out, "usage: walklistctl import %s FILE.csv --org SLUG\n", format->kind);
        print_format(out, format);
        fprintf(out,
                "FILE.csv may be - for stdin. walklistctl formats: every format and the rules.\n");
        return;
    }
    fprintf(out, "usage: walklistctl %s\n  %s\n", command->synopsis, command->summary);
    if (command->details != NULL)
        fputs(command->details, out);
    if (command->needs_database)
        fprintf(out, "Needs --database-url URL (or WALKLIST_DATABASE_URL).\n");
}

static int fail(const wl_error_t *err)
{
    fprintf(stderr, "walklistctl: %s\n", err->message);
    for (size_t i = 0; i < err->violation_count; i++)
        fprintf(stderr, "  %s: %s\n", err->violations[i].field, err->violations[i].description);
    return 1;
}

static int need_org(wl_admin_t *admin, const args_t *args, int64_t *org_id, wl_error_t *err)
{
    if (args->org == NULL)
        return wl_error_set(err, WL_EINVAL, "--org SLUG is required");
    return wl_admin_org_find(admin, args->org, org_id, err);
}

static int cmd_migrate(wl_admin_t *admin, const args_t *args, wl_error_t *err)
{
    (void)args;
    int applied = 0;
    int rc = wl_admin_migrate(admin, &applied, err);
    if (rc == 0)
        fprintf(stderr, "walklistctl: %d migration(s) applied, schema is current\n", applied);
    return rc;
}

static int parse_count(const char *text, const char *name, uint64_t min, uint64_t max,
                       uint64_t *out, wl_error_t *err);

/* The most shard groups --shards takes: the admission's shard-direct form holds a copy of each
 * of its marked statements per group (store/shard_direct.h). */
#define DISTRIBUTE_SHARDS_MAX 256

/* The help's numbers come from the values the command uses. */
#define STRINGIFY(x) #x
#define STRING_OF(x) STRINGIFY(x)
// clang-format off
#define DISTRIBUTE_HELP                                                                            \
    "  Run once after migrate, on the coordinator (CREATE EXTENSION citus and the workers\n"       \
    "  added first): reference tables for organizations and keys, every tenant table in N\n"      \
    "  colocated shards by organization (1 to " STRING_OF(DISTRIBUTE_SHARDS_MAX) ", default "     \
    STRING_OF(WL_DISTRIBUTE_DEFAULT_SHARDS) ").\n"                                               \
    "  Fewer shards per worker cost less per request; the count is the most workers a\n"        \
    "  rebalance alone spreads them over (beyond it, split shards). Running it again\n"         \
    "  changes nothing; a --shards other than the distributed tables' count is refused.\n"      \
    "  See docs/scaling-out.md.\n"
// clang-format on

static int cmd_distribute(wl_admin_t *admin, const args_t *args, wl_error_t *err)
{
    (void)admin;
    int changed = 0;
    size_t direct_groups = 0;
    uint64_t shards = 0;
    int rc = 0;
    if (args->shards != NULL)
        rc = parse_count(args->shards, "--shards", 1, DISTRIBUTE_SHARDS_MAX, &shards, err);
    if (rc == 0)
        rc = wl_distribute(args->database_url, (int)shards, &changed, err);
    /* Then the admission's statements name the shards distributing made (after a split, the
     * new ones): walklist_core's, on a connection of its own too. */
    wl_admin_t *own = NULL;
    if (rc == 0)
        rc = wl_admin_connect(args->database_url, "walklistctl", &own, err);
    if (rc == 0)
        rc = wl_admin_shard_direct(own, &direct_groups, err);
    wl_admin_close(own);
    if (rc == 0)
        fprintf(stderr,
                "walklistctl: %d table(s) distributed, the schema is spread over the "
                "cluster; admissions name the shards of %zu shard group(s) directly\n",
                changed, direct_groups);
    return rc;
}

static int cmd_org_create(wl_admin_t *admin, const args_t *args, wl_error_t *err)
{
    const char *slug = args->positional[2];
    int64_t org_id = 0;
    int rc = wl_admin_org_create(admin, slug, args->name ? args->name : slug, &org_id, err);
    if (rc == 0)
        fprintf(stderr, "walklistctl: organization %s created\n", slug);
    return rc;
}

static void print_org(const wl_admin_org_t *org, void *data)
{
    (void)data;
    printf("%s\t%s\t%lld\t%s\n", org->slug, org->created_at, (long long)org->active_keys,
           org->name);
}

static int cmd_org_list(wl_admin_t *admin, const args_t *args, wl_error_t *err)
{
    (void)args;
    printf("SLUG\tCREATED\tACTIVE KEYS\tNAME\n");
    return wl_admin_org_list(admin, print_org, NULL, err);
}

static int cmd_key_create(wl_admin_t *admin, const args_t *args, wl_error_t *err)
{
    int64_t org_id = 0;
    unsigned scopes = 0;
    int rc = need_org(admin, args, &org_id, err);
    if (rc == 0 && args->scopes == NULL)
        rc = wl_error_set(err, WL_EINVAL, "--scopes is required (e.g. lists:write,stock:read)");
    if (rc == 0)
        rc = wl_scopes_parse(args->scopes, &scopes, err);
    char token[WL_ADMIN_KEY_TOKEN_SIZE];
    if (rc == 0)
        rc = wl_admin_key_create(admin, org_id, scopes, args->name ? args->name : "", token, err);
    if (rc == 0)
        printf("%s\n", token);
    return rc;
}

static void print_key(const wl_admin_key_t *key, void *data)
{
    (void)data;
    printf("%s\t%s\t%s\t%s\t%s\n", key->prefix, key->scopes, key->created_at,
           key->revoked_at ? key->revoked_at : "active", key->name);
}

static int cmd_key_list(wl_admin_t *admin, const args_t *args, wl_error_t *err)
{
    int64_t org_id = 0;
    int rc = need_org(admin, args, &org_id, err);
    if (rc == 0) {
        printf("PREFIX\tSCOPES\tCREATED\tREVOKED\tNAME\n");
        rc = wl_admin_key_list(admin, org_id, print_key, NULL, err);
    }
    return rc;
}

static int cmd_key_revoke(wl_admin_t *admin, const args_t *args, wl_error_t *err)
{
    int rc = wl_admin_key_revoke(admin, args->positional[2], err);
    if (rc == 0)
        fprintf(stderr, "walklistctl: key %s revoked\n", args->positional[2]);
    return rc;
}

/* webhook add's check of the URL: walklistd's own (wl_admin_url_check_t over
 * wl_delivery_target_check), data the --webhook-allow-private flag. */
static int check_target(const char *url, void *data, wl_error_t *err)
{
    const bool *allow_private = data;
    return wl_delivery_target_check(url, *allow_private, err);
}

static int cmd_webhook_add(wl_admin_t *admin, const args_t *args, wl_error_t *err)
{
    int64_t org_id = 0;
    int rc = need_org(admin, args, &org_id, err);
    if (rc == 0 && args->url == NULL)
        rc = wl_error_set(err, WL_EINVAL, "--url URL is required");
    if (rc == 0 && args->events == NULL)
        rc = wl_error_set(err, WL_EINVAL,
                          "--events is required (e.g. locate_list.loaded,stock.changed)");
    char id[WL_ADMIN_WEBHOOK_ID_SIZE], secret[WL_ADMIN_WEBHOOK_SECRET_SIZE];
    bool allow_private = args->allow_private;
    if (rc == 0)
        rc = wl_admin_webhook_add(admin, org_id, args->url, args->events, check_target,
                                  &allow_private, id, secret, err);
    if (rc == 0) {
        printf("%s\t%s\n", id, secret);
        fprintf(stderr,
                "walklistctl: webhook endpoint %s added; its signing secret is shown "
                "this once\n",
                id);
        explicit_bzero(secret, sizeof(secret));
    }
    return rc;
}

static void print_webhook(const wl_admin_webhook_t *endpoint, void *data)
{
    (void)data;
    char state[64];
    if (endpoint->disabled_at != NULL)
        snprintf(state, sizeof(state), "disabled %s", endpoint->disabled_at);
    else if (endpoint->failing_since != NULL)
        snprintf(state, sizeof(state), "failing since %s", endpoint->failing_since);
    else
        snprintf(state, sizeof(state), "active");
    printf("%s\t%s\t%s\t%s\t%lld\t%s\n", endpoint->id, endpoint->events, endpoint->created_at,
           state, (long long)endpoint->pending, endpoint->url);
}

static int cmd_webhook_list(wl_admin_t *admin, const args_t *args, wl_error_t *err)
{
    int64_t org_id = 0;
    int rc = need_org(admin, args, &org_id, err);
    if (rc == 0) {
        printf("ID\tEVENTS\tCREATED\tSTATE\tPENDING\tURL\n");
        rc = wl_admin_webhook_list(admin, org_id, print_webhook, NULL, err);
    }
    return rc;
}

static int cmd_webhook_remove(wl_admin_t *admin, const args_t *args, wl_error_t *err)
{
    int64_t org_id = 0;
    int rc = need_org(admin, args, &org_id, err);
    if (rc == 0)
        rc = wl_admin_webhook_remove(admin, org_id, args->positional[2], err);
    if (rc == 0)
        fprintf(stderr, "walklistctl: webhook endpoint %s removed\n", args->positional[2]);
    return rc;
}

static int cmd_webhook_enable(wl_admin_t *admin, const args_t *args, wl_error_t *err)
{
    int64_t org_id = 0;
    int rc = need_org(admin, args, &org_id, err);
    if (rc == 0)
        rc = wl_admin_webhook_enable(admin, org_id, args->positional[2], err);
    if (rc == 0)
        fprintf(stderr, "walklistctl: webhook endpoint %s enabled\n", args->positional[2]);
    return rc;
}

static const char *or_dash(const char *text)
{
    return text != NULL && text[0] != '\0' ? text : "-";
}

static void print_delivery(const wl_admin_webhook_delivery_t *delivery, void *data)
{
    (void)data;
    printf("%s\t%s\t%s\t%s\t%lld\t%s\t%s\t%s\t%s\t%s\n", delivery->event_id, delivery->type,
           delivery->endpoint_id, delivery->state, (long long)delivery->attempts,
           or_dash(delivery->last_status), or_dash(delivery->last_error),
           or_dash(delivery->next_attempt_at), or_dash(delivery->delivered_at),
           delivery->created_at);
}

/* Enough for "what happened lately"; --limit shows more. */
#define DELIVERIES_SHOWN 50

static int cmd_webhook_deliveries(wl_admin_t *admin, const args_t *args, wl_error_t *err)
{
    int64_t org_id = 0;
    uint64_t limit = DELIVERIES_SHOWN;
    int rc = need_org(admin, args, &org_id, err);
    if (rc == 0 && args->limit != NULL)
        rc = parse_count(args->limit, "--limit", 0, 100000, &limit, err);
    if (rc == 0) {
        printf("EVENT\tTYPE\tENDPOINT\tSTATE\tATTEMPTS\tLAST STATUS\tLAST ERROR\t"
               "NEXT ATTEMPT\tDELIVERED\tCREATED\n");
        rc = wl_admin_webhook_deliveries(admin, org_id, args->endpoint, (int)limit, print_delivery,
                                         NULL, err);
    }
    return rc;
}

/* --- Import problems: sorted by line, the first PROBLEMS_SHOWN of them -------------------- */

/* Enough to fix a file by; a file of 200,000 bad rows then says so in 51 lines. */
#define PROBLEMS_SHOWN 50

typedef struct {
    size_t line, order; /* order: as reported, for problems of one line */
    char *text;         /* "FILE:LINE: column: description", malloc'd */
} problem_t;

/* The problems with the smallest lines, at most PROBLEMS_SHOWN, in memory that does not grow
 * with the file; the rest are counted. */
typedef struct {
    const char *file;
    problem_t kept[PROBLEMS_SHOWN];
    size_t kept_count, total;
    bool out_of_memory;
} problems_t;

static int problem_cmp(const void *a, const void *b)
{
    const problem_t *x = a, *y = b;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static void keep_problem(size_t line, const char *column, const char *description, void *data)
{
    problems_t *problems = data;
    problem_t problem = {line, problems->total++, NULL};
    problem_t *slot = NULL;
    if (problems->kept_count < PROBLEMS_SHOWN) {
        slot = &problems->kept[problems->kept_count];
    } else {
        problem_t *last = &problems->kept[0];
        for (size_t i = 1; i < PROBLEMS_SHOWN; i++)
            if (problem_cmp(&problems->kept[i], last) > 0)
                last = &problems->kept[i];
        if (problem_cmp(&problem, last) > 0)
            return;
        free(last->text);
        last->text = NULL;
        slot = last;
        problems->kept_count--;
    }
    int len =
        column[0] != '\0'
            ? asprintf(&problem.text, "%s:%zu: %s: %s", problems->file, line, column, description)
            : asprintf(&problem.text, "%s:%zu: %s", problems->file, line, description);
    if (len < 0) {
        problem.text = NULL;
        problems->out_of_memory = true;
    }
    *slot = problem;
    problems->kept_count++;
}

/* 199950 as "199,950". */
static void with_separators(size_t n, char *buf, size_t size)
{
    char digits[32];
    int len = snprintf(digits, sizeof(digits), "%zu", n);
    size_t at = 0;
    for (int i = 0; i < len && at + 2 < size; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            buf[at++] = ',';
        buf[at++] = digits[i];
    }
    buf[at] = '\0';
}

static void print_problems(problems_t *problems)
{
    qsort(problems->kept, problems->kept_count, sizeof(problem_t), problem_cmp);
    for (size_t i = 0; i < problems->kept_count; i++) {
        if (problems->kept[i].text != NULL)
            fprintf(stderr, "%s\n", problems->kept[i].text);
        free(problems->kept[i].text);
        problems->kept[i].text = NULL;
    }
    if (problems->total > problems->kept_count) {
        char more[40];
        with_separators(problems->total - problems->kept_count, more, sizeof(more));
        fprintf(stderr, "%s: ... and %s more\n", problems->file, more);
    }
    if (problems->out_of_memory)
        fprintf(stderr, "walklistctl: out of memory: some problems are not shown\n");
    problems->kept_count = 0;
}

static int import_file(wl_admin_t *admin, int64_t org_id, const char *kind, const char *path,
                       FILE *in, wl_error_t *err)
{
    size_t rows = 0;
    problems_t *problems = calloc(1, sizeof(*problems));
    if (problems == NULL)
        return wl_error_set(err, WL_ENOMEM, NULL);
    problems->file = path;
    int rc = wl_admin_import_csv(admin, org_id, kind, in, keep_problem, problems, &rows, err);
    print_problems(problems);
    free(problems);
    if (rc == 0)
        fprintf(stderr, "walklistctl: %s: %zu %s row(s) imported\n", path, rows, kind);
    return rc;
}

/* The pseudo-kind of `import catalogue DIR`: every kind's file of DIR in one transaction. */
#define CATALOGUE "catalogue"

static void keep_catalogue_problem(size_t kind, size_t line, const char *column,
                                   const char *description, void *data)
{
    problems_t *problems = data;
    keep_problem(line, column, description, &problems[kind]);
}

/*
 * DIR must be a directory whose .csv files are all named after a kind: a misspelt one
 * (location_stock.csv) would otherwise be left out in silence, and the catalogue imported
 * without it. Other files (a README) are no concern of the import.
 */
static int check_catalogue_dir(const char *dir, wl_error_t *err)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return wl_error_set(err, WL_EINVAL, "cannot read %s: %s", dir, strerror(errno));
    int rc = 0;
    struct dirent *entry;
    while (rc == 0 && (entry = readdir(d)) != NULL) {
        size_t len = strlen(entry->d_name);
        if (len < 4 || strcmp(entry->d_name + len - 4, ".csv") != 0)
            continue;
        bool known = false;
        for (size_t i = 0; !known && i < WL_ADMIN_KIND_COUNT; i++) {
            const char *kind = wl_admin_kind_name(i);
            known = len == strlen(kind) + 4 && strncmp(entry->d_name, kind, len - 4) == 0;
        }
        if (!known)
            rc = wl_error_set(err, WL_EINVAL,
                              "%s holds %s, which names no kind (warehouses.csv, locations.csv, "
                              "products.csv, stock.csv, location-stock.csv, reservations.csv): "
                              "rename or remove it; nothing was imported",
                              dir, entry->d_name);
    }
    closedir(d);
    return rc;
}

/* DIR/<kind>.csv of each kind that has one, in one transaction. */
static int import_catalogue(wl_admin_t *admin, int64_t org_id, const char *dir, wl_error_t *err)
{
    int checked = check_catalogue_dir(dir, err);
    if (checked != 0)
        return checked;
    FILE *files[WL_ADMIN_KIND_COUNT] = {0};
    char *paths[WL_ADMIN_KIND_COUNT] = {0};
    size_t rows[WL_ADMIN_KIND_COUNT] = {0};
    problems_t *problems = calloc(WL_ADMIN_KIND_COUNT, sizeof(*problems));
    int rc = problems == NULL ? wl_error_set(err, WL_ENOMEM, NULL) : 0;
    size_t found = 0, dir_len = strlen(dir);
    while (dir_len > 1 && dir[dir_len - 1] == '/')
        dir_len--; /* "DIR/" names its files DIR/stock.csv, not DIR//stock.csv */
    for (size_t i = 0; rc == 0 && i < WL_ADMIN_KIND_COUNT; i++) {
        if (asprintf(&paths[i], "%.*s/%s.csv", (int)dir_len, dir, wl_admin_kind_name(i)) < 0) {
            paths[i] = NULL;
            rc = wl_error_set(err, WL_ENOMEM, NULL);
            break;
        }
        problems[i].file = paths[i];
        files[i] = fopen(paths[i], "rb");
        if (files[i] != NULL)
            found++;
        else if (errno != ENOENT)
            rc = wl_error_set(err, WL_EINVAL, "cannot open %s: %s", paths[i], strerror(errno));
    }
    if (rc == 0 && found == 0)
        rc = wl_error_set(err, WL_EINVAL,
                          "%s holds no catalogue file (warehouses.csv, locations.csv, "
                          "products.csv, stock.csv, location-stock.csv, reservations.csv)",
                          dir);
    if (rc == 0)
        rc = wl_admin_import_catalogue(admin, org_id, files, keep_catalogue_problem, problems, rows,
                                       err);
    for (size_t i = 0; problems != NULL && i < WL_ADMIN_KIND_COUNT; i++)
        print_problems(&problems[i]);
    for (size_t i = 0; rc == 0 && i < WL_ADMIN_KIND_COUNT; i++)
        if (files[i] != NULL)
            fprintf(stderr, "walklistctl: %s: %zu %s row(s) imported\n", paths[i], rows[i],
                    wl_admin_kind_name(i));
    if (rc == 0)
        fprintf(stderr, "walklistctl: %s: catalogue imported in one transaction\n", dir);
    for (size_t i = 0; i < WL_ADMIN_KIND_COUNT; i++) {
        if (files[i] != NULL)
            fclose(files[i]);
        free(paths[i]);
    }
    free(problems);
    return rc;
}

static int cmd_import(wl_admin_t *admin, const args_t *args, wl_error_t *err)
{
    const char *kind = args->positional[1], *path = args->positional[2];
    int64_t org_id = 0;
    int rc = need_org(admin, args, &org_id, err);
    if (rc != 0)
        return rc;
    if (strcmp(kind, CATALOGUE) == 0)
        return import_catalogue(admin, org_id, path, err);
    FILE *in = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (in == NULL)
        return wl_error_set(err, WL_EINVAL, "cannot open %s: %s", path, strerror(errno));
    rc = import_file(admin, org_id, kind, path, in, err);
    if (in != stdin)
        fclose(in);
    return rc;
}

/* Demo inventory: two own warehouses and a supplier, bins that show natural order,
 * a staging area, a shared EAN, reservations, and a product with no rack yet. */
static const struct {
    const char *kind;
    const char *csv;
} demo_files[] = {
    {"warehouses", "code,name,kind\n"
                   "MAIN,Main warehouse,own\n"
                   "EAST,East depot,own\n"
                   "SUPP,Supplier consignment,supplier\n"},
    {"locations", "warehouse,code,staging\n"
                  "MAIN,A-2,false\nMAIN,A-10,false\nMAIN,A-02,false\nMAIN,B-1,false\n"
                  "MAIN,DOCK,true\nEAST,E-1,false\nSUPP,S-1,false\n"},
    {"products", "sku,name,eans\n"
                 "SKU-1001,Cordless drill 18V,4006381333931\n"
                 "SKU-1002,Drill bit set 10 pcs,4006381333948|4006381333955\n"
                 "SKU-1003,Safety gloves L,5901234123457\n"
                 "SKU-1004,Safety gloves XL,5901234123457\n"
                 "SKU-1005,\"Work light, LED\",\n"
                 "SKU-1006,Extension cord 10 m,4012345678901\n"},
    {"stock", "sku,warehouse,on_hand\n"
              "SKU-1001,MAIN,12\nSKU-1001,EAST,3\nSKU-1001,SUPP,100\n"
              "SKU-1002,MAIN,40\nSKU-1003,MAIN,5\nSKU-1004,EAST,0\nSKU-1005,MAIN,7\n"},
    {"location-stock", "sku,warehouse,location,quantity\n"
                       "SKU-1001,MAIN,A-10,8\nSKU-1001,MAIN,A-2,4\nSKU-1001,EAST,E-1,3\n"
                       "SKU-1002,MAIN,A-02,40\nSKU-1003,MAIN,B-1,5\nSKU-1003,MAIN,DOCK,20\n"
                       "SKU-1004,EAST,E-1,0\nSKU-1006,SUPP,S-1,9\n"},
    {"reservations", "ref,sku,warehouse,quantity,status\n"
                     "SO-5001,SKU-1001,MAIN,2,active\nSO-5002,SKU-1002,MAIN,5,released\n"
                     "SO-5003,SKU-1003,MAIN,9,active\nSO-5004,SKU-1001,SUPP,50,active\n"},
};

static int cmd_demo(wl_admin_t *admin, const args_t *args, wl_error_t *err)
{
    int64_t org_id = 0;
    int rc = need_org(admin, args, &org_id, err);
    for (size_t i = 0; rc == 0 && i < sizeof(demo_files) / sizeof(demo_files[0]); i++) {
        FILE *in = fmemopen((void *)demo_files[i].csv, strlen(demo_files[i].csv), "rb");
        if (in == NULL)
            return wl_error_set(err, WL_ENOMEM, NULL);
        rc = import_file(admin, org_id, demo_files[i].kind, demo_files[i].kind, in, err);
        fclose(in);
    }
    return rc;
}

static int parse_count(const char *text, const char *name, uint64_t min, uint64_t max,
                       uint64_t *out, wl_error_t *err)
{
    char *end = NULL;
    errno = 0;
    unsigned long long value = text ? strtoull(text, &end, 10) : 0;
    if (text == NULL || end == text || *end != '\0' || errno != 0 || text[0] == '-' ||
        value < min || value > max)
        return wl_error_set(err, WL_EINVAL, "%s must be a whole number from %llu to %llu", name,
                            (unsigned long long)min, (unsigned long long)max);
    *out = value;
    return 0;
}

static int generate_options(const args_t *args, wl_generate_options_t *options, wl_error_t *err)
{
    uint64_t skus = 0, seed = 1;
    if (args->skus == NULL)
        return wl_error_set(err, WL_EINVAL, "--skus N is required");
    int rc = parse_count(args->skus, "--skus", 1, 100000000, &skus, err);
    if (rc == 0 && args->seed != NULL)
        rc = parse_count(args->seed, "--seed", 0, UINT64_MAX, &seed, err);
    options->skus = (int64_t)skus;
    options->seed = seed;
    return rc;
}

static void print_counts(const char *what, const wl_generate_counts_t *counts)
{
    size_t total = 0;
    for (size_t i = 0; i < WL_ADMIN_KIND_COUNT; i++)
        total += counts->rows[i];
    fprintf(stderr, "walklistctl: generate: %zu rows %s (", total, what);
    for (size_t i = 0; i < WL_ADMIN_KIND_COUNT; i++)
        fprintf(stderr, "%s%zu %s", i ? ", " : "", counts->rows[i], wl_admin_kind_name(i));
    fprintf(stderr, ")\n");
}

/* --csv DIR writes the files; --org SLUG loads the organization; both do both. */
static int cmd_generate(wl_admin_t *admin, const args_t *args, wl_error_t *err)
{
    wl_generate_options_t options;
    wl_generate_counts_t counts;
    int64_t org_id = 0;
    int rc = generate_options(args, &options, err);
    if (rc == 0 && args->org == NULL && args->csv_dir == NULL)
        rc = wl_error_set(err, WL_EINVAL, "--org SLUG or --csv DIR (or both) is required");
    if (rc == 0 && args->org != NULL)
        rc = need_org(admin, args, &org_id, err);
    if (rc == 0 && args->csv_dir != NULL) {
        rc = wl_generate_csv(args->csv_dir, &options, &counts, err);
        if (rc == 0)
            print_counts("written to the CSV files", &counts);
    }
    if (rc == 0 && args->org != NULL) {
        rc = wl_generate_load(admin, org_id, &options, stderr, &counts, err);
        if (rc == 0)
            print_counts("loaded", &counts);
    }
    return rc;
}

static int cmd_formats(wl_admin_t *admin, const args_t *args, wl_error_t *err)
{
    (void)admin, (void)args, (void)err;
    fputs(csv_rules, stdout);
    for (size_t i = 0; i < FORMAT_COUNT; i++) {
        putchar('\n');
        print_format(stdout, &csv_formats[i]);
    }
    return 0;
}

static const command_t commands[] = {
    {{"migrate", NULL},
     0,
     "migrate",
     "apply pending schema migrations, then every SQL function",
     "  Safe to run again and from several processes; run it before starting a new walklistd.\n",
     true,
     cmd_migrate},
    {{"distribute", NULL},
     0,
     "distribute [--shards N]",
     "on a Citus coordinator: spread the schema over the cluster, sharded by organization",
     DISTRIBUTE_HELP,
     true,
     cmd_distribute},
    {{"org", "create"},
     1,
     "org create SLUG [--name NAME]",
     "create an organization",
     "  SLUG: 1-63 characters of a-z, 0-9 and '-'; NAME defaults to SLUG.\n",
     true,
     cmd_org_create},
    {{"org", "list"},
     0,
     "org list",
     "list organizations (slug, created, active keys, name)",
     NULL,
     true,
     cmd_org_list},
    {{"key", "create"},
     0,
     "key create --org SLUG --scopes a,b [--name N]",
     "create an API key; prints the token alone on stdout",
     "  Scopes: lists:write, stock:read, scanner, inventory:write. The token is shown once.\n",
     true,
     cmd_key_create},
    {{"key", "list"},
     0,
     "key list --org SLUG",
     "list an organization's keys (never secrets)",
     NULL,
     true,
     cmd_key_list},
    {{"key", "revoke"},
     1,
     "key revoke PREFIX",
     "revoke a key by its prefix",
     NULL,
     true,
     cmd_key_revoke},
    {{"webhook", "add"},
     0,
     "webhook add --org SLUG --url URL --events a,b [--webhook-allow-private]",
     "add a webhook endpoint; prints its id and signing secret (once) on stdout",
     "  Events: locate_list.loaded, stock.changed. URL: http:// or https://, no credentials.\n"
     "  A host resolving to a private, loopback, link-local, multicast or unspecified address\n"
     "  is refused unless --webhook-allow-private (walklistd checks again at each delivery,\n"
     "  with its own --webhook-allow-private). Output: ID<TAB>SECRET; the secret (whsec_...)\n"
     "  verifies signatures (docs/change-feeds.md, Webhooks) and is never shown again.\n",
     true,
     cmd_webhook_add},
    {{"webhook", "list"},
     0,
     "webhook list --org SLUG",
     "list an organization's webhook endpoints (never secrets)",
     "  Columns: id, events, created, state (active, failing since, disabled), pending\n"
     "  deliveries, URL.\n",
     true,
     cmd_webhook_list},
    {{"webhook", "remove"},
     1,
     "webhook remove ID --org SLUG",
     "remove a webhook endpoint and its deliveries",
     NULL,
     true,
     cmd_webhook_remove},
    {{"webhook", "enable"},
     1,
     "webhook enable ID --org SLUG",
     "enable a webhook endpoint that was disabled for failing too long",
     "  Its pending deliveries are attempted again; events written while it was disabled were\n"
     "  not recorded for it (a receiver catches up with GET /api/v1/stock-export and the lists).\n",
     true,
     cmd_webhook_enable},
    {{"webhook", "deliveries"},
     0,
     "webhook deliveries --org SLUG [--endpoint ID] [--limit N]",
     "recent webhook deliveries, newest event first (50 unless --limit)",
     "  Columns: event id (the webhook-id header), type, endpoint, state (pending, delivered,\n"
     "  coalesced: sent within an earlier stock.changed), attempts, last HTTP status, last\n"
     "  error, next attempt, delivered at, event time; - when empty.\n",
     true,
     cmd_webhook_deliveries},
    {{"import", NULL},
     2,
     "import KIND FILE.csv --org SLUG",
     "import one CSV file: warehouses, locations, products, stock, location-stock, reservations",
     "  Import in that order (later kinds refer to earlier ones). FILE.csv may be - for stdin.\n"
     "  walklistctl import KIND --help: the columns of KIND and an example row;\n"
     "  walklistctl formats: every format and the rules.\n"
     "  walklistctl import catalogue DIR --org SLUG imports DIR/KIND.csv of every kind DIR\n"
     "  has, in that order, in one transaction: any problem in any file and nothing is\n"
     "  imported (it stops at the first file with problems); the stock export changes once,\n"
     "  from the old catalogue to the new, and is computed once instead of after each file.\n"
     "  A .csv file of DIR named after no kind is refused.\n",
     true,
     cmd_import},
    {{"formats", NULL},
     0,
     "formats",
     "the CSV formats of import, with an example row each",
     NULL,
     false,
     cmd_formats},
    {{"demo", NULL}, 0, "demo --org SLUG", "load demo inventory", NULL, true, cmd_demo},
    {{"generate", NULL},
     0,
     "generate (--org SLUG | --csv DIR) --skus N [--seed S]",
     "load a reproducible benchmark catalogue, or write it as the six CSV files",
     "  --csv DIR writes DIR/<kind>.csv (DIR is created) and needs no database; with --org too\n"
     "  it also loads the organization. The same --skus and --seed give the same rows.\n",
     false,
     cmd_generate},
};
static const size_t command_count = sizeof(commands) / sizeof(commands[0]);

static void usage(FILE *out)
{
    fprintf(out, "usage: walklistctl [--database-url URL] COMMAND [ARGS]\n");
    for (size_t i = 0; i < command_count; i++) {
        if (strlen(commands[i].synopsis) <= 32)
            fprintf(out, "  %-32s %s\n", commands[i].synopsis, commands[i].summary);
        else
            fprintf(out, "  %s\n  %-32s %s\n", commands[i].synopsis, "", commands[i].summary);
    }
    fprintf(out, "Global: --database-url URL (or WALKLIST_DATABASE_URL), --help, --version.\n"
                 "walklistctl COMMAND --help (or walklistctl help COMMAND) shows one command;\n"
                 "walklistctl import KIND --help one CSV format.\n");
}

/* --- Command line ------------------------------------------------------------------------- */

static int parse_args(int argc, char **argv, args_t *args)
{
    memset(args, 0, sizeof(*args));
    args->database_url = getenv("WALKLIST_DATABASE_URL");
    for (int i = 1; i < argc; i++) {
        const char **target = NULL;
        if (strcmp(argv[i], "--database-url") == 0)
            target = &args->database_url;
        else if (strcmp(argv[i], "--org") == 0)
            target = &args->org;
        else if (strcmp(argv[i], "--name") == 0)
            target = &args->name;
        else if (strcmp(argv[i], "--scopes") == 0)
            target = &args->scopes;
        else if (strcmp(argv[i], "--skus") == 0)
            target = &args->skus;
        else if (strcmp(argv[i], "--seed") == 0)
            target = &args->seed;
        else if (strcmp(argv[i], "--csv") == 0)
            target = &args->csv_dir;
        else if (strcmp(argv[i], "--url") == 0)
            target = &args->url;
        else if (strcmp(argv[i], "--events") == 0)
            target = &args->events;
        else if (strcmp(argv[i], "--endpoint") == 0)
            target = &args->endpoint;
        else if (strcmp(argv[i], "--limit") == 0)
            target = &args->limit;
        else if (strcmp(argv[i], "--shards") == 0)
            target = &args->shards;
        else if (strcmp(argv[i], "--webhook-allow-private") == 0) {
            args->allow_private = true;
            continue;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            args->help = true;
            continue;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("walklistctl %s (commit %s)\n", WL_VERSION, WL_COMMIT);
            exit(0);
        } else if (strncmp(argv[i], "--", 2) == 0) {
            fprintf(stderr, "walklistctl: unknown option %s\n", argv[i]);
            return -1;
        } else if (args->positional_count < MAX_POSITIONAL) {
            args->positional[args->positional_count++] = argv[i];
            continue;
        } else {
            fprintf(stderr, "walklistctl: unexpected argument '%s'\n", argv[i]);
            return -1;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "walklistctl: %s needs a value\n", argv[i]);
            return -1;
        }
        *target = argv[++i];
    }
    return 0;
}

/* The command the positional words name; NULL with *known_first set when only the first word
 * is known (org, key), so that the error can say which words may follow. */
static const command_t *find_command(const args_t *args, bool *known_first)
{
    *known_first = false;
    const char *word = args->positional_count > 0 ? args->positional[0] : NULL;
    const char *next = args->positional_count > 1 ? args->positional[1] : NULL;
    for (size_t i = 0; word != NULL && i < command_count; i++) {
        if (strcmp(commands[i].words[0], word) != 0)
            continue;
        *known_first = true;
        if (commands[i].words[1] == NULL ||
            (next != NULL && strcmp(commands[i].words[1], next) == 0))
            return &commands[i];
    }
    return NULL;
}

/* "org create, org list" for an unknown or missing second word. */
static void print_second_words(FILE *out, const char *first)
{
    for (size_t i = 0, shown = 0; i < command_count; i++)
        if (strcmp(commands[i].words[0], first) == 0 && commands[i].words[1] != NULL)
            fprintf(out, "%s%s %s", shown++ ? ", " : "", first, commands[i].words[1]);
}

/* Names what is wrong with the words, then shows the usage: exit status 2. */
static int refuse_words(const args_t *args, const command_t *command, bool known_first)
{
    if (command == NULL && args->positional_count == 0) {
        fprintf(stderr, "walklistctl: no command given\n");
    } else if (command == NULL && !known_first) {
        fprintf(stderr, "walklistctl: unknown command '%s'\n", args->positional[0]);
    } else if (command == NULL) {
        const char *first = args->positional[0];
        if (args->positional_count > 1)
            fprintf(stderr, "walklistctl: unknown command '%s %s' (", first, args->positional[1]);
        else
            fprintf(stderr, "walklistctl: '%s' needs one more word (", first);
        print_second_words(stderr, first);
        fprintf(stderr, ")\n");
    }
    if (command == NULL) {
        usage(stderr);
        return 2;
    }
    int words = command->words[1] != NULL ? 2 : 1;
    int given = args->positional_count - words;
    if (given > command->operands)
        fprintf(stderr, "walklistctl: unexpected argument '%s' after '%s'\n",
                args->positional[words + command->operands], command->synopsis);
    else
        fprintf(stderr, "walklistctl: missing arguments: walklistctl %s\n", command->synopsis);
    command_usage(stderr, command, args);
    return 2;
}

int main(int argc, char **argv)
{
    args_t args;
    if (parse_args(argc, argv, &args) != 0) {
        usage(stderr);
        return 2;
    }
    /* "help WORDS" is "WORDS --help". */
    if (args.positional_count > 0 && strcmp(args.positional[0], "help") == 0) {
        args.help = true;
        args.positional_count--;
        memmove(args.positional, args.positional + 1,
                (size_t)args.positional_count * sizeof(args.positional[0]));
    }
    bool known_first = false;
    const command_t *command = find_command(&args, &known_first);
    if (args.help) {
        if (command != NULL) {
            command_usage(stdout, command, &args);
            return 0;
        }
        if (args.positional_count == 0) {
            usage(stdout);
            return 0;
        }
        if (known_first && args.positional_count == 1) { /* "key --help" */
            for (size_t i = 0; i < command_count; i++)
                if (strcmp(commands[i].words[0], args.positional[0]) == 0)
                    command_usage(stdout, &commands[i], &args);
            return 0;
        }
        return refuse_words(&args, NULL, known_first);
    }
    int words = command != NULL && command->words[1] != NULL ? 2 : 1;
    if (command == NULL || args.positional_count - words != command->operands)
        return refuse_words(&args, command, known_first);

    wl_error_t err;
    wl_error_init(&err);
    if (command->run == cmd_import && find_format(args.positional[1]) == NULL &&
        strcmp(args.positional[1], CATALOGUE) != 0) {
        fprintf(stderr, "walklistctl: unknown import kind '%s' (", args.positional[1]);
        for (size_t i = 0; i < FORMAT_COUNT; i++)
            fprintf(stderr, "%s%s", i ? ", " : "", csv_formats[i].kind);
        fprintf(stderr, "; or " CATALOGUE " DIR)\n");
        return 2;
    }
    bool needs_database =
        command->needs_database || (command->run == cmd_generate && args.org != NULL);
    if (needs_database && args.database_url == NULL) {
        fprintf(stderr, "walklistctl: --database-url (or WALKLIST_DATABASE_URL) is required\n");
        command_usage(stderr, command, &args);
        return 2;
    }
    /* distribute runs its DDL on a connection of its own (distribute.h): no admin for it. */
    bool needs_admin = needs_database && command->run != cmd_distribute;
    wl_admin_t *admin = NULL;
    if (needs_admin && wl_admin_connect(args.database_url, "walklistctl", &admin, &err) != 0)
        return fail(&err);
    int rc = command->run(admin, &args, &err);
    wl_admin_close(admin);
    return rc == 0 ? 0 : fail(&err);
}
