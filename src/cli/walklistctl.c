/* walklistctl: migrations, organizations, API keys, CSV imports and demo data from the command line
 * happen here. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "walklist/admin.h"
#include "walklist/scopes.h"

typedef struct {
    const char *database_url;
    const char *org;
    const char *name;
    const char *scopes;
    const char *skus;
    const char *seed;
    const char *csv_dir;
    const char *positional[4];
    int positional_count;
} args_t;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: walklistctl [--database-url URL] COMMAND\n"
            "  migrate                                   apply pending schema migrations\n"
            "  org create SLUG [--name NAME]             create an organization\n"
            "  key create --org SLUG --scopes a,b [--name N]\n"
            "                                            create an API key; prints the token\n"
            "  key list --org SLUG                       list an organization's keys\n"
            "  key revoke PREFIX                         revoke a key\n"
            "  import KIND FILE.csv --org SLUG           import warehouses, locations, products,\n"
            "                                            stock, location-stock or reservations\n"
            "  demo --org SLUG                           load demo inventory\n"
            "  generate --org SLUG --skus N --seed S     load a reproducible benchmark catalogue\n"
            "  generate --csv DIR --skus N --seed S      write it as the six CSV files instead\n"
            "scopes: lists:write, stock:read, scanner, inventory:write\n"
            "The database URL may also come from WALKLIST_DATABASE_URL.\n");
}

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
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strncmp(argv[i], "--", 2) == 0) {
            fprintf(stderr, "walklistctl: unknown option %s\n", argv[i]);
            return -1;
        } else if (args->positional_count < 4) {
            args->positional[args->positional_count++] = argv[i];
            continue;
        } else {
            fprintf(stderr, "walklistctl: too many arguments\n");
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

static bool command_is(const args_t *args, const char *first, const char *second, int count)
{
    return args->positional_count == count && strcmp(args->positional[0], first) == 0 &&
           (second == NULL || strcmp(args->positional[1], second) == 0);
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

static int cmd_migrate(wl_admin_t *admin, wl_error_t *err)
{
    int applied = 0;
    int rc = wl_admin_migrate(admin, &applied, err);
    if (rc == 0)
        fprintf(stderr, "walklistctl: %d migration(s) applied, schema is current\n", applied);
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

static void print_problem(size_t line, const char *column, const char *description, void *data)
{
    const char *file = data;
    if (column[0] != '\0')
        fprintf(stderr, "%s:%zu: %s: %s\n", file, line, column, description);
    else
        fprintf(stderr, "%s:%zu: %s\n", file, line, description);
}

static int import_file(wl_admin_t *admin, int64_t org_id, const char *kind, const char *path,
                       FILE *in, wl_error_t *err)
{
    size_t rows = 0;
    int rc = wl_admin_import_csv(admin, org_id, kind, in, print_problem, (void *)path, &rows, err);
    if (rc == 0)
        fprintf(stderr, "walklistctl: %s: %zu %s row(s) imported\n", path, rows, kind);
    return rc;
}

static int cmd_import(wl_admin_t *admin, const args_t *args, wl_error_t *err)
{
    const char *kind = args->positional[1], *path = args->positional[2];
    if (!wl_admin_kind_valid(kind))
        return wl_error_set(err, WL_EINVAL,
                            "unknown import kind '%s' (warehouses, locations, products, stock, "
                            "location-stock, reservations)",
                            kind);
    int64_t org_id = 0;
    int rc = need_org(admin, args, &org_id, err);
    if (rc != 0)
        return rc;
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

static int parse_count(const char *text, const char *name, uint64_t max, uint64_t *out,
                       wl_error_t *err)
{
    char *end = NULL;
    errno = 0;
    unsigned long long value = text ? strtoull(text, &end, 10) : 0;
    if (text == NULL || end == text || *end != '\0' || errno != 0 || text[0] == '-' || value > max)
        return wl_error_set(err, WL_EINVAL, "%s must be a whole number from 0 to %llu", name,
                            (unsigned long long)max);
    *out = value;
    return 0;
}

static int generate_options(const args_t *args, wl_admin_generate_options_t *options,
                            wl_error_t *err)
{
    uint64_t skus = 0, seed = 1;
    if (args->skus == NULL)
        return wl_error_set(err, WL_EINVAL, "--skus N is required");
    int rc = parse_count(args->skus, "--skus", 100000000, &skus, err);
    if (rc == 0 && args->seed != NULL)
        rc = parse_count(args->seed, "--seed", UINT64_MAX, &seed, err);
    if (rc == 0 && skus == 0)
        rc = wl_error_set(err, WL_EINVAL, "--skus must be at least 1");
    options->skus = (int64_t)skus;
    options->seed = seed;
    return rc;
}

static void print_counts(const wl_admin_generate_counts_t *counts)
{
    size_t total = 0;
    for (size_t i = 0; i < WL_ADMIN_KIND_COUNT; i++)
        total += counts->rows[i];
    fprintf(stderr, "walklistctl: generate: %zu rows (", total);
    for (size_t i = 0; i < WL_ADMIN_KIND_COUNT; i++)
        fprintf(stderr, "%s%zu %s", i ? ", " : "", counts->rows[i], wl_admin_kind_name(i));
    fprintf(stderr, ")\n");
}

static int cmd_generate(wl_admin_t *admin, const args_t *args, wl_error_t *err)
{
    wl_admin_generate_options_t options;
    int64_t org_id = 0;
    int rc = generate_options(args, &options, err);
    if (rc == 0)
        rc = need_org(admin, args, &org_id, err);
    wl_admin_generate_counts_t counts;
    if (rc == 0)
        rc = wl_admin_generate_load(admin, org_id, &options, stderr, &counts, err);
    if (rc == 0)
        print_counts(&counts);
    return rc;
}

/* generate --csv DIR needs no database. */
static int cmd_generate_csv(const args_t *args)
{
    wl_error_t err;
    wl_error_init(&err);
    wl_admin_generate_options_t options;
    wl_admin_generate_counts_t counts;
    int rc = generate_options(args, &options, &err);
    if (rc == 0)
        rc = wl_admin_generate_csv(args->csv_dir, &options, &counts, &err);
    if (rc != 0)
        return fail(&err);
    print_counts(&counts);
    return 0;
}

int main(int argc, char **argv)
{
    args_t args;
    if (parse_args(argc, argv, &args) != 0 || args.positional_count == 0) {
        usage(stderr);
        return 2;
    }
    if (command_is(&args, "generate", NULL, 1) && args.csv_dir != NULL)
        return cmd_generate_csv(&args);
    if (args.database_url == NULL) {
        fprintf(stderr, "walklistctl: --database-url (or WALKLIST_DATABASE_URL) is required\n");
        usage(stderr);
        return 2;
    }
    bool known = command_is(&args, "migrate", NULL, 1) || command_is(&args, "org", "create", 3) ||
                 command_is(&args, "key", "create", 2) || command_is(&args, "key", "list", 2) ||
                 command_is(&args, "key", "revoke", 3) || command_is(&args, "import", NULL, 3) ||
                 command_is(&args, "demo", NULL, 1) || command_is(&args, "generate", NULL, 1);
    if (!known) {
        usage(stderr);
        return 2;
    }
    wl_error_t err;
    wl_error_init(&err);
    wl_admin_t *admin = NULL;
    if (wl_admin_connect(args.database_url, "walklistctl", &admin, &err) != 0)
        return fail(&err);
    int rc;
    if (command_is(&args, "migrate", NULL, 1))
        rc = cmd_migrate(admin, &err);
    else if (command_is(&args, "org", "create", 3))
        rc = cmd_org_create(admin, &args, &err);
    else if (command_is(&args, "key", "create", 2))
        rc = cmd_key_create(admin, &args, &err);
    else if (command_is(&args, "key", "list", 2))
        rc = cmd_key_list(admin, &args, &err);
    else if (command_is(&args, "key", "revoke", 3))
        rc = cmd_key_revoke(admin, &args, &err);
    else if (command_is(&args, "import", NULL, 3))
        rc = cmd_import(admin, &args, &err);
    else if (command_is(&args, "generate", NULL, 1))
        rc = cmd_generate(admin, &args, &err);
    else
        rc = cmd_demo(admin, &args, &err);
    wl_admin_close(admin);
    return rc == 0 ? 0 : fail(&err);
}
