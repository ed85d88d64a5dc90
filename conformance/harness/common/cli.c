/* cli.c — the table-driven option parser, the shared value validators and the usage-error
 * helper of every attnconf command (cli.h). */
#define _POSIX_C_SOURCE 200809L /* O_CLOEXEC */

#include "common/cli.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* More options than any command has; the parser keeps one "seen" flag per table row. */
#define CLI_MAX_OPTS 64

/* Seconds above this are a typo (115 days), and would overflow the milliseconds the waits
 * are computed in. */
#define CLI_MAX_SECONDS 1e7

#define CLI_MAX_MIB (1ull << 40) /* over 2^40 MiB overflows rlim_t in bytes */

int cli_usage_error(const cli_cmd *c, const char *what, const char *arg)
{
    fprintf(stderr, "attnconf%s%s: %s%s%s\n", c->name ? " " : "", c->name ? c->name : "", what,
            arg ? ": " : "", arg ? arg : "");
    cli_usage(c, stderr);
    return CLI_EXIT_USAGE;
}

void cli_usage(const cli_cmd *c, FILE *f)
{
    c->usage(f);
    int any = 0;
    for (size_t k = 0; k < c->nopts; k++) {
        const cli_opt *o = &c->opts[k];
        if (!o->help)
            continue;
        if (!any++)
            fputs("options:\n", f);
        fprintf(f, "  %-16s %s\n", o->name, o->help);
    }
}

cli_opt cli_opt_adapter_stderr(const char **dest)
{
    return (cli_opt){.name = "--adapter-stderr",
                     .kind = CLI_STRING,
                     .dest = dest,
                     .help = CLI_ADAPTER_STDERR_HELP};
}

int cli_adapter_stderr_check(const char *cmd, const char *path)
{
    if (!path || strcmp(path, "-") == 0)
        return 0;
    /* The flags the exec: bridge opens FILE with (exec_backend.c), so what passes here opens
     * there; created now as it would be then. */
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0666);
    if (fd < 0) {
        fprintf(stderr, "attnconf%s%s: --adapter-stderr %s: %s\n", cmd ? " " : "", cmd ? cmd : "",
                path, strerror(errno));
        return CLI_EXIT_USAGE;
    }
    close(fd);
    return 0;
}

int cli_leading_zero(const char *s)
{
    return s[0] == '0' && isdigit((unsigned char)s[1]);
}

/* Only the characters of a decimal number ("2", "-0.25", "1e-3", all digits when digits_only):
 * strtod and strtoull would also take leading white space, and strtod hexadecimal ("0x0.4p0")
 * and "infinity", none of which an option means. */
static int decimal_text(const char *v, int digits_only)
{
    if (!*v)
        return 0;
    for (const char *c = v; *c; c++)
        if (!isdigit((unsigned char)*c) && (digits_only || !strchr("+-.eE", *c)))
            return 0;
    return 1;
}

/* strtod that refuses trailing text, overflow, non-finite values and anything but decimal. */
static int full_double(const char *v, double *out)
{
    char *end;
    errno = 0;
    if (!decimal_text(v, 0))
        return -1;
    double x = strtod(v, &end);
    if (end == v || *end || errno == ERANGE || !isfinite(x))
        return -1;
    *out = x == 0.0 ? 0.0 : x; /* "-0" is 0: never echoed back as a negative zero */
    return 0;
}

/* strtoull that refuses trailing text, overflow, white space and a sign (strtoull negates
 * "-1"). */
static int full_u64(const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!decimal_text(v, 1))
        return -1;
    unsigned long long x = strtoull(v, &end, 10);
    if (end == v || *end || errno == ERANGE)
        return -1;
    *out = (uint64_t)x;
    return 0;
}

void cli_seconds_text(double x, char *out, size_t n)
{
    for (int p = 1; p <= 17; p++) {
        snprintf(out, n, "%.*g", p, x);
        if (strtod(out, NULL) == x)
            return;
    }
}

/* Check and store one value; returns 0, or -1 with the kind's message in why. */
static int store(const cli_opt *o, const char *v, char *why, size_t n)
{
    double x;
    uint64_t u;
    switch (o->kind) {
    case CLI_STRING: *(const char **)o->dest = v; return 0;
    case CLI_SECONDS:
        if (full_double(v, &x) || !(x > 0) || x > CLI_MAX_SECONDS) {
            snprintf(why, n, "%s: expected a positive number of seconds, at most %.0f", o->name,
                     CLI_MAX_SECONDS);
            return -1;
        }
        *(double *)o->dest = x;
        return 0;
    case CLI_COUNT:
        if (full_u64(v, &u) || u < 1 || u > INT64_MAX || (o->hi > 0 && (double)u > o->hi)) {
            if (o->hi > 0)
                snprintf(why, n, "%s: expected a positive integer, at most %.0f", o->name, o->hi);
            else
                snprintf(why, n, "%s: expected a positive integer", o->name);
            return -1;
        }
        *(int64_t *)o->dest = (int64_t)u;
        return 0;
    case CLI_UINT64:
        if (full_u64(v, &u)) {
            snprintf(why, n, "%s: expected an unsigned integer", o->name);
            return -1;
        }
        *(uint64_t *)o->dest = u;
        return 0;
    case CLI_MIB:
        if (full_u64(v, &u) || (double)u < o->lo || u > CLI_MAX_MIB) {
            snprintf(why, n, "%s: expected MiB, from %.0f to %llu", o->name, o->lo,
                     (unsigned long long)CLI_MAX_MIB);
            return -1;
        }
        *(uint64_t *)o->dest = u;
        return 0;
    case CLI_NUMBER:
        if (full_double(v, &x) || x < o->lo || x > o->hi || (o->hi_open && x == o->hi)) {
            snprintf(why, n, "%s: expected a number in [%g, %g%c", o->name, o->lo, o->hi,
                     o->hi_open ? ')' : ']');
            return -1;
        }
        *(double *)o->dest = x;
        return 0;
    case CLI_FLAG:
    case CLI_STRINGS:
    case CLI_CALL: break; /* handled by the caller: they need the count or the command */
    }
    return 0;
}

/* The table row an option argument names ("--name" or "--name=value"), or NULL. */
static const cli_opt *find(const cli_cmd *c, const char *a, size_t *row)
{
    const char *eq = strchr(a, '=');
    size_t nl = eq ? (size_t)(eq - a) : strlen(a);
    for (size_t k = 0; k < c->nopts; k++)
        if (strlen(c->opts[k].name) == nl && strncmp(a, c->opts[k].name, nl) == 0) {
            *row = k;
            return &c->opts[k];
        }
    return NULL;
}

int cli_parse(const cli_cmd *c, int argc, char **argv)
{
    unsigned char seen[CLI_MAX_OPTS] = {0};
    if (c->nopts > CLI_MAX_OPTS)
        return cli_usage_error(c, "internal error: too many options in the table", NULL);
    int opts_done = 0;
    for (int i = 1; i < argc && argv[i]; i++) {
        const char *a = argv[i];
        if (opts_done || a[0] != '-' || !a[1]) {
            if (!c->pos || *c->npos == c->maxpos)
                return cli_usage_error(c, "unexpected argument", a);
            c->pos[(*c->npos)++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            opts_done = 1;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            cli_usage(c, stdout);
            return CLI_HELP;
        }
        size_t row;
        const cli_opt *o = find(c, a, &row);
        if (!o)
            return cli_usage_error(c, "unknown option", a);
        const int repeatable = o->kind == CLI_STRINGS || o->kind == CLI_CALL;
        /* last-one-wins would silently run something else than asked */
        if (seen[row] && !repeatable)
            return cli_usage_error(c, "option given twice", o->name);
        seen[row] = 1;
        const char *eq = strchr(a, '=');
        if (o->kind == CLI_FLAG) {
            if (eq)
                return cli_usage_error(c, "option takes no value", o->name);
            *(int *)o->dest = 1;
            continue;
        }
        const char *v = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
        if (!v)
            return cli_usage_error(c, "missing value for option", o->name);
        if (!v[0])
            return cli_usage_error(c, "empty value for option", o->name);
        if (o->raw)
            *o->raw = v;
        if (o->kind == CLI_CALL) {
            int rc = o->fn(c, c->ud, v);
            if (rc)
                return rc;
            continue;
        }
        if (o->kind == CLI_STRINGS) {
            if (*o->count == o->max) {
                char what[96];
                snprintf(what, sizeof what, "too many %s (at most %zu)", o->name, o->max);
                return cli_usage_error(c, what, v);
            }
            ((const char **)o->dest)[(*o->count)++] = v;
            continue;
        }
        char why[160];
        if (store(o, v, why, sizeof why) != 0)
            return cli_usage_error(c, why, v);
    }
    return 0;
}
