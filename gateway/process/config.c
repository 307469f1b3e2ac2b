/* walklistd's settings are read here, from the option table in config.h: defaults, environment,
 * flags, bounds, and the two texts that describe them (--help and the configuration table of
 * docs/operations.md). */
#include "process/config.h"

#include <getopt.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum { KIND_INT, KIND_TEXT, KIND_CHOICE } kind_t;

typedef struct {
    kind_t kind;
    const char *flag; /* without the leading "--" */
    const char *env;
    const char *metavar; /* INT and TEXT; a CHOICE shows its choices */
    size_t offset;       /* of the field in wl_config_t */
    int min, max, int_default;
    const char *derived; /* INT: what a default of 0 stands for, or NULL */
    bool required;
    const char *text_default;
    const char *choices; /* CHOICE: "a|b" */
    const char *help, *doc;
} option_t;

/* The parameters are not named like the members: a designator would be replaced too. */
#define INT_ROW(name, long_flag, env_var, meta, lo, hi, def, derived_text, help_text, doc_text)    \
    {.kind = KIND_INT,                                                                             \
     .flag = long_flag,                                                                            \
     .env = env_var,                                                                               \
     .metavar = meta,                                                                              \
     .offset = offsetof(wl_config_t, name),                                                        \
     .min = lo,                                                                                    \
     .max = hi,                                                                                    \
     .int_default = def,                                                                           \
     .derived = derived_text,                                                                      \
     .help = help_text,                                                                            \
     .doc = doc_text},
#define TEXT_ROW(name, long_flag, env_var, meta, needed, def, help_text, doc_text)                 \
    {.kind = KIND_TEXT,                                                                            \
     .flag = long_flag,                                                                            \
     .env = env_var,                                                                               \
     .metavar = meta,                                                                              \
     .offset = offsetof(wl_config_t, name),                                                        \
     .required = needed,                                                                           \
     .text_default = def,                                                                          \
     .help = help_text,                                                                            \
     .doc = doc_text},
#define CHOICE_ROW(name, long_flag, env_var, choice_list, def, help_text, doc_text)                \
    {.kind = KIND_CHOICE,                                                                          \
     .flag = long_flag,                                                                            \
     .env = env_var,                                                                               \
     .offset = offsetof(wl_config_t, name),                                                        \
     .choices = choice_list,                                                                       \
     .text_default = def,                                                                          \
     .help = help_text,                                                                            \
     .doc = doc_text},
static const option_t options[] = {WL_CONFIG_OPTIONS(INT_ROW, TEXT_ROW, CHOICE_ROW)};
#undef INT_ROW
#undef TEXT_ROW
#undef CHOICE_ROW

#define OPTION_COUNT (sizeof(options) / sizeof(options[0]))

/* A default outside its own bounds would be refused if a user wrote it: catch it when building.
 * A default of 0 below min is a derived one (worked out in wl_config_read). */
#define CHECK_INT_DEFAULT(field, flag, env, metavar, min, max, def, ...)                           \
    _Static_assert(((min) <= (def) && (def) <= (max)) || ((def) == 0 && (min) > 0),                \
                   "the default of --" flag " is outside its bounds");
#define IGNORE(...)
WL_CONFIG_OPTIONS(CHECK_INT_DEFAULT, IGNORE, IGNORE)
#undef CHECK_INT_DEFAULT
#undef IGNORE

/* getopt_long values of the flags: the table's rows from here on, so that none is a character. */
enum { FLAG_HELP = 'h', FLAG_MARKDOWN = 256, FLAG_VERSION, FLAG_PROBE, FLAG_ROW0 };

#define HELP_HINT " (walklistd --help lists the options)"

typedef enum { FROM_ENV, FROM_FLAG } source_t;

static int *int_field(wl_config_t *config, const option_t *option)
{
    return (int *)((char *)config + option->offset);
}

static const char **text_field(wl_config_t *config, const option_t *option)
{
    return (const char **)((char *)config + option->offset);
}

static const char *text_value(const wl_config_t *config, const option_t *option)
{
    return *(const char *const *)((const char *)config + option->offset);
}

/* Bounds messages name the flag everywhere (it is what --help and docs/operations.md list), and the
 * environment variable too when the value came from there. */
static int refuse(const option_t *option, source_t source, const char *expected, const char *text,
                  wl_error_t *err)
{
    if (source == FROM_ENV)
        return wl_error_set(err, WL_EINVAL, "--%s (%s) must be %s, got '%s'", option->flag,
                            option->env, expected, text);
    return wl_error_set(err, WL_EINVAL, "--%s must be %s, got '%s'", option->flag, expected, text);
}

/* Whether text is one of the '|'-separated choices. */
static bool is_choice(const char *choices, const char *text)
{
    size_t len = strlen(text);
    for (const char *at = choices; *at != '\0';) {
        size_t choice_len = strcspn(at, "|");
        if (choice_len == len && strncmp(at, text, len) == 0)
            return true;
        at += choice_len + (at[choice_len] == '|');
    }
    return false;
}

/* "a|b|c" as "a, b or c", each choice between quotes. */
static void format_choices(const char *choices, const char *quote, char *buf, size_t size)
{
    size_t used = 0, count = 0, total = 1;
    for (const char *at = choices; *at != '\0'; at++)
        total += *at == '|';
    buf[0] = '\0';
    for (const char *at = choices; *at != '\0' && used < size;) {
        int len = (int)strcspn(at, "|");
        const char *separator = count == 0 ? "" : count + 1 == total ? " or " : ", ";
        used += (size_t)snprintf(buf + used, size - used, "%s%s%.*s%s", separator, quote, len, at,
                                 quote);
        count++;
        at += len + (at[len] == '|');
    }
}

/* "host:port" or "[v6]:port", the port a decimal number from 0 to 65535. */
static bool is_host_port(const char *text)
{
    const char *colon = strrchr(text, ':');
    if (colon == NULL || colon == text)
        return false;
    if (text[0] == '[' && colon[-1] != ']')
        return false;
    const char *port = colon + 1;
    size_t digits = strspn(port, "0123456789");
    return digits > 0 && digits <= 5 && port[digits] == '\0' && atol(port) <= 65535;
}

static int set_option(wl_config_t *config, const option_t *option, source_t source,
                      const char *text, wl_error_t *err)
{
    switch (option->kind) {
    case KIND_INT: {
        char *end = NULL, expected[64];
        long value = strtol(text, &end, 10);
        if (end == text || *end != '\0' || value < option->min || value > option->max) {
            snprintf(expected, sizeof(expected), "a number from %d to %d", option->min,
                     option->max);
            return refuse(option, source, expected, text, err);
        }
        *int_field(config, option) = (int)value;
        return 0;
    }
    case KIND_TEXT:
        /* getaddrinfo would read "99999" modulo 65536 and a name as a service: only numbers. */
        if (text[0] != '\0' && strcmp(option->metavar, "HOST:PORT") == 0 && !is_host_port(text))
            return refuse(option, source,
                          "host:port or [v6]:port with a port from 0 to 65535 (0: any free one)",
                          text, err);
        *text_field(config, option) = text[0] != '\0' ? text : option->text_default;
        return 0;
    case KIND_CHOICE:
        if (text[0] != '\0' && !is_choice(option->choices, text)) {
            char expected[128];
            format_choices(option->choices, "", expected, sizeof(expected));
            return refuse(option, source, expected, text, err);
        }
        *text_field(config, option) = text[0] != '\0' ? text : option->text_default;
        return 0;
    }
    return wl_error_set(err, WL_EINTERNAL, NULL);
}

void wl_config_defaults(wl_config_t *config)
{
    memset(config, 0, sizeof(*config));
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        if (options[i].kind == KIND_INT)
            *int_field(config, &options[i]) = options[i].int_default;
        else
            *text_field(config, &options[i]) = options[i].text_default;
    }
}

static int read_environment(wl_config_t *config, wl_error_t *err)
{
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        const char *text = getenv(options[i].env);
        if (text != NULL && set_option(config, &options[i], FROM_ENV, text, err) != 0)
            return err->code;
    }
    return 0;
}

/* How many long options arg ("--name" or "--name=value") abbreviates: getopt_long takes any
 * unambiguous prefix, so more than one is why it refused a known-looking name. */
static size_t prefix_matches(const struct option *long_options, const char *arg)
{
    const char *name = arg + 2;
    size_t len = strcspn(name, "="), count = 0;
    for (const struct option *option = long_options; option->name != NULL; option++)
        count += strncmp(option->name, name, len) == 0;
    return count;
}

static int read_flags(wl_config_t *config, int argc, char **argv, wl_config_action_t *action,
                      wl_error_t *err)
{
    struct option long_options[OPTION_COUNT + 5];
    for (size_t i = 0; i < OPTION_COUNT; i++)
        long_options[i] =
            (struct option){options[i].flag, required_argument, NULL, FLAG_ROW0 + (int)i};
    long_options[OPTION_COUNT] = (struct option){"help", no_argument, NULL, FLAG_HELP};
    long_options[OPTION_COUNT + 1] =
        (struct option){"print-config-markdown", no_argument, NULL, FLAG_MARKDOWN};
    long_options[OPTION_COUNT + 2] = (struct option){"version", no_argument, NULL, FLAG_VERSION};
    long_options[OPTION_COUNT + 3] = (struct option){"probe", required_argument, NULL, FLAG_PROBE};
    long_options[OPTION_COUNT + 4] = (struct option){NULL, 0, NULL, 0};

    /* Our own messages instead of getopt's (opterr, the leading ':'), so that they reach err;
     * optind 0 starts glibc's getopt afresh for each call (the tests call it many times). */
    opterr = 0;
    optind = 0;
    *action = WL_CONFIG_SERVE;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
        if (opt == FLAG_HELP) {
            *action = WL_CONFIG_HELP;
            return 0;
        }
        if (opt == FLAG_MARKDOWN) {
            *action = WL_CONFIG_MARKDOWN;
            return 0;
        }
        if (opt == FLAG_VERSION) {
            *action = WL_CONFIG_VERSION;
            return 0;
        }
        if (opt == FLAG_PROBE) {
            /* The probe needs no other setting: a container's health check has the
             * environment of the service, whatever it holds. */
            *action = WL_CONFIG_PROBE;
            config->probe_url = optarg;
            return 0;
        }
        if (opt == ':') {
            /* optopt is the missing argument's option: a row's value. */
            const char *flag = optopt == FLAG_PROBE ? "probe"
                               : optopt >= FLAG_ROW0 && (size_t)(optopt - FLAG_ROW0) < OPTION_COUNT
                                   ? options[optopt - FLAG_ROW0].flag
                                   : "?";
            return wl_error_set(err, WL_EINVAL, "option '--%s' requires an argument" HELP_HINT,
                                flag);
        }
        if (opt == '?') {
            /* optopt: a no-argument option given one ("--help=yes"), an unknown short option,
             * or 0 for an unknown long one. */
            if (optopt == FLAG_HELP || optopt == FLAG_MARKDOWN || optopt == FLAG_VERSION)
                return wl_error_set(err, WL_EINVAL, "option '%s' takes no argument" HELP_HINT,
                                    argv[optind - 1]);
            if (optopt != 0)
                return wl_error_set(err, WL_EINVAL, "unrecognized option '-%c'" HELP_HINT, optopt);
            if (prefix_matches(long_options, argv[optind - 1]) > 1)
                return wl_error_set(err, WL_EINVAL, "option '%s' is ambiguous" HELP_HINT,
                                    argv[optind - 1]);
            return wl_error_set(err, WL_EINVAL, "unrecognized option '%s'" HELP_HINT,
                                argv[optind - 1]);
        }
        if (set_option(config, &options[opt - FLAG_ROW0], FROM_FLAG, optarg, err) != 0)
            return err->code;
    }
    if (optind < argc)
        return wl_error_set(err, WL_EINVAL, "unexpected argument '%s'", argv[optind]);
    return 0;
}

/* Defaults that depend on the machine or on other settings, once every source is read. A row
 * given a derived default needs its line here: the check below says so instead of serving 0. */
static int derive_defaults(wl_config_t *config, wl_error_t *err)
{
    if (config->threads == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        config->threads = cores > 0 ? (int)(2 * cores) : 4;
    }
    if (config->db_pool_size == 0)
        config->db_pool_size = config->threads + 2;
    if (config->grpc_threads == 0)
        config->grpc_threads = config->threads;
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        if (options[i].derived != NULL && *int_field(config, &options[i]) == 0)
            return wl_error_set(err, WL_EINTERNAL,
                                "no value for --%s: its default (%s) is not "
                                "worked out",
                                options[i].flag, options[i].derived);
    }
    return 0;
}

static int check_together(const wl_config_t *config, wl_error_t *err)
{
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        if (options[i].required && text_value(config, &options[i]) == NULL)
            return wl_error_set(err, WL_EINVAL, "--%s (or %s) is required", options[i].flag,
                                options[i].env);
    }
    if ((config->tls_cert_path == NULL) != (config->tls_key_path == NULL))
        return wl_error_set(err, WL_EINVAL,
                            "--tls-cert and --tls-key (WALKLIST_TLS_CERT, WALKLIST_TLS_KEY) go "
                            "together: give both or neither");
    return 0;
}

int wl_config_read(wl_config_t *config, int argc, char **argv, wl_config_action_t *action,
                   wl_error_t *err)
{
    wl_config_defaults(config);
    *action = WL_CONFIG_SERVE;
    /* A bad environment does not stop --help, --version or --probe (a health check runs in
     * the service's environment): its error counts only when serving. */
    wl_error_t env_err;
    wl_error_init(&env_err);
    int env_rc = read_environment(config, &env_err);
    int rc = read_flags(config, argc, argv, action, err);
    if (rc != 0 || *action != WL_CONFIG_SERVE)
        return rc;
    if (env_rc != 0) {
        *err = env_err;
        return env_rc;
    }
    rc = derive_defaults(config, err);
    return rc != 0 ? rc : check_together(config, err);
}

/* The default as --help and docs/operations.md show it; Markdown adds code spans to texts. */
static void format_default(const option_t *option, bool markdown, char *buf, size_t size)
{
    if (option->kind == KIND_INT) {
        if (option->derived != NULL)
            snprintf(buf, size, "%s", option->derived);
        else
            snprintf(buf, size, "%d", option->int_default);
    } else if (option->required) {
        snprintf(buf, size, "(required)");
    } else if (option->text_default == NULL) {
        snprintf(buf, size, "(none)");
    } else {
        const char *quote = markdown && option->kind == KIND_TEXT ? "`" : "";
        snprintf(buf, size, "%s%s%s", quote, option->text_default, quote);
    }
}

/* Writes text from column indent on, broken at spaces so that lines end before column width;
 * the first line continues wherever the cursor is (column). */
static void write_wrapped(FILE *out, const char *text, int column, int indent, int width)
{
    while (*text != '\0') {
        int word = (int)strcspn(text, " ");
        if (column > indent && column + 1 + word > width) {
            fprintf(out, "\n%*s", indent, "");
            column = indent;
        } else if (column > indent) {
            fputc(' ', out);
            column++;
        }
        fprintf(out, "%.*s", word, text);
        column += word;
        text += word;
        text += strspn(text, " ");
    }
    fputc('\n', out);
}

#define USAGE_INDENT 32
#define USAGE_WIDTH  80

void wl_config_usage(FILE *out)
{
    fprintf(out, "usage: walklistd [options]\n"
                 "Every option can also be set by its environment variable; a flag wins over the\n"
                 "environment, which wins over the default.\n\n");
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        const option_t *option = &options[i];
        char synopsis[96];
        snprintf(synopsis, sizeof(synopsis), "  --%s %s", option->flag,
                 option->kind == KIND_CHOICE ? option->choices : option->metavar);
        fprintf(out, "%s", synopsis);
        int column = (int)strlen(synopsis);
        if (column + 2 > USAGE_INDENT) {
            fprintf(out, "\n");
            column = 0;
        }
        fprintf(out, "%*s", USAGE_INDENT - column, "");
        write_wrapped(out, option->help, USAGE_INDENT, USAGE_INDENT, USAGE_WIDTH);
        /* Where it comes from and what it may be, on lines of their own, each fact whole. */
        char env[64], range[64], shown_default[64], default_fact[80];
        snprintf(env, sizeof(env), "env %s", option->env);
        snprintf(range, sizeof(range), "%d to %d", option->min, option->max);
        format_default(option, false, shown_default, sizeof(shown_default));
        snprintf(default_fact, sizeof(default_fact), "default %s", shown_default);
        const char *facts[] = {env, option->kind == KIND_INT ? range : NULL,
                               option->required ? "required" : default_fact};
        column = USAGE_INDENT;
        fprintf(out, "%*s", USAGE_INDENT, "");
        for (size_t f = 0, shown = 0; f < sizeof(facts) / sizeof(facts[0]); f++) {
            if (facts[f] == NULL)
                continue;
            int len = (int)strlen(facts[f]);
            if (shown > 0 && column + 2 + len > USAGE_WIDTH) {
                fprintf(out, ";\n%*s", USAGE_INDENT, "");
                column = USAGE_INDENT;
            } else if (shown > 0) {
                fprintf(out, "; ");
                column += 2;
            }
            fprintf(out, "%s", facts[f]);
            column += len;
            shown++;
        }
        fputc('\n', out);
    }
    fprintf(out,
            "  --help, -h                    this text\n"
            "  --version                     the version and the git commit it was built from\n"
            "  --probe URL                   GET an http:// URL (/healthz, /readyz) and exit 0\n"
            "                                on a 2xx answer, 1 otherwise (a container's\n"
            "                                HEALTHCHECK); reads no other setting\n"
            "  --print-config-markdown       the table of these options in docs/operations.md\n");
}

void wl_config_markdown(FILE *out)
{
    fprintf(out, "| Flag | Environment | Default | Values | Meaning |\n"
                 "|---|---|---|---|---|\n");
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        const option_t *option = &options[i];
        char shown_default[64], values[128];
        format_default(option, true, shown_default, sizeof(shown_default));
        if (option->kind == KIND_INT) {
            snprintf(values, sizeof(values), "%d to %d", option->min, option->max);
        } else if (option->kind == KIND_CHOICE) {
            format_choices(option->choices, "`", values, sizeof(values));
        } else {
            snprintf(values, sizeof(values), "%s", option->metavar);
        }
        fprintf(out, "| `--%s` | `%s` | %s | %s | %s |\n", option->flag, option->env, shown_default,
                values, option->doc != NULL ? option->doc : option->help);
    }
}
