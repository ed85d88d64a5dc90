/* cli.h — the one option parser of every attnconf command, its exit statuses and its usage
 * errors.
 *
 * A command declares its options as a table of cli_opt (name, kind, destination, help) and
 * calls cli_parse.  Accepted: `--name VALUE` and `--name=VALUE`; `--` ends the options; an
 * argument that does not start with '-' (or is exactly "-") is a positional one.  Refused, each
 * with one message and the command's usage on stderr (exit CLI_EXIT_USAGE): an unknown option,
 * a missing or empty value, a value for a flag, an option given twice (unless repeatable), a
 * value its kind does not accept, a positional argument the command does not take.  The
 * validators are shared, so one option spelled the same way is refused the same way by every
 * command: `--timeout 5x` is "--timeout: expected a positive number of seconds: 5x" wherever
 * --timeout exists.
 */
#ifndef ATTNCONF_COMMON_CLI_H
#define ATTNCONF_COMMON_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The exit statuses of every command (the automake/CTest convention; 77 is CTest's
 * SKIP_RETURN_CODE).  Which ones a command uses is in its cmd.h. */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAIL = 1,       /* the thing checked failed, or the harness could not do its job */
    CLI_EXIT_USAGE = 2,      /* a usage error or bad input */
    CLI_EXIT_CASE_ERROR = 3, /* run: a case file could not be read (the suite's problem) */
    CLI_EXIT_SKIP = 77       /* run, fuzz: nothing checked (every case or call NOT_SUPPORTED) */
};

/* cli_parse's result besides 0 and CLI_EXIT_USAGE: --help was given and the usage printed on
 * stdout; the command returns CLI_EXIT_OK. */
#define CLI_HELP (-1)

typedef enum cli_kind {
    CLI_FLAG,    /* no value; dest int *, set to 1 */
    CLI_STRING,  /* dest const char **, pointing into argv */
    CLI_STRINGS, /* repeatable; dest const char *[max], count in *count */
    CLI_SECONDS, /* dest double *: a number of seconds in (0, 1e7] */
    CLI_COUNT,   /* dest int64_t *: an integer from 1 to hi (no bound when hi is 0) */
    CLI_UINT64,  /* dest uint64_t *: an unsigned decimal integer */
    CLI_MIB,     /* dest uint64_t *: MiB, an integer from lo to 2^40 */
    CLI_NUMBER,  /* dest double *: a number in [lo, hi], or [lo, hi) with hi_open */
    CLI_CALL     /* repeatable; fn(ud, value) does what the option means (dest unused) */
} cli_kind;

struct cli_cmd;

typedef struct cli_opt {
    const char *name; /* "--timeout" */
    cli_kind kind;
    void *dest;
    const char *help; /* one line for the usage's option list; NULL: the command's usage text
                         documents it already */
    double lo, hi;    /* CLI_COUNT, CLI_MIB, CLI_NUMBER */
    int hi_open;      /* CLI_NUMBER: hi excluded */
    size_t max;       /* CLI_STRINGS: at most this many */
    size_t *count;    /* CLI_STRINGS: how many were given */
    const char **raw; /* optional, any valued kind: the value as given (e.g. for a re-run
                         command), NULL when the option is absent */
    /* CLI_CALL: returns 0, or an exit status after printing why (cli_usage_error). */
    int (*fn)(const struct cli_cmd *c, void *ud, const char *value);
} cli_opt;

typedef struct cli_cmd {
    const char *name;       /* "bench": messages read "attnconf bench: ..."; NULL: "attnconf" */
    void (*usage)(FILE *f); /* the command's usage text */
    const cli_opt *opts;
    size_t nopts;
    const char **pos; /* positional arguments go here, at most maxpos of them... */
    size_t *npos;     /* ...counted here; pos NULL: the command takes none */
    size_t maxpos;
    void *ud; /* passed to every CLI_CALL option */
} cli_cmd;

/* Parse argv[1..argc) (argv[0] is the command's name) into the table's destinations; a
 * destination not given keeps what the caller put there (its default).  Returns 0, CLI_HELP
 * (usage on stdout), or CLI_EXIT_USAGE (message and usage on stderr) or the status a CLI_CALL
 * option returned. */
int cli_parse(const cli_cmd *c, int argc, char **argv);

/* Print "attnconf CMD: WHAT: ARG" (": ARG" only when arg is non-NULL) and the command's usage
 * on stderr.  Returns CLI_EXIT_USAGE, for `return cli_usage_error(...)`. */
int cli_usage_error(const cli_cmd *c, const char *what, const char *arg);

/* A number of seconds (CLI_SECONDS's range) as a re-run command should repeat it: the fewest
 * significant digits (%.1g to %.17g) that strtod reads back as exactly x, so a value given with
 * many leading zeros or digits comes back short and the same.  out holds at least 32 bytes. */
void cli_seconds_text(double x, char *out, size_t n);

/* Print the command's usage on f: its text, then "options:" and each option whose help is
 * non-NULL. */
void cli_usage(const cli_cmd *c, FILE *f);

/* --adapter-stderr FILE: the one definition of the option, for every command that opens
 * backends (run, backend-info, fuzz, bench).  The value is stored as given into *dest (NULL when
 * absent) and handed to the exec: bridge (backend_load.h hb_open_opts.adapter_stderr), which
 * appends every byte an adapter writes to its stderr to FILE, or to attnconf's own stderr for
 * "-" (PROTOCOL.md "Process").  The help is one line, for option lists and usage texts. */
#define CLI_ADAPTER_STDERR_HELP                                                                    \
    "append all of each exec: adapter's stderr to FILE ('-': attnconf's stderr)"
cli_opt cli_opt_adapter_stderr(const char **dest);
/* The usage error of --adapter-stderr with no exec: backend to apply to. */
#define CLI_ADAPTER_STDERR_NOT_EXEC                                                                \
    "--adapter-stderr applies to exec: adapters (a plugin writes to attnconf's own stderr)"

/* Check --adapter-stderr FILE before any backend starts: open it for appending (creating it,
 * as the exec: bridge would) and close it again.  A FILE that cannot be opened is bad input,
 * exit CLI_EXIT_USAGE like every other bad option value, and not a backend that failed to load
 * (exit 1) once an adapter is on its way.  Returns 0 (also for NULL and "-"), or
 * CLI_EXIT_USAGE after printing "attnconf CMD: --adapter-stderr FILE: strerror" (no usage: the
 * command line is well formed, as for an unwritable --out). */
int cli_adapter_stderr_check(const char *cmd, const char *path);

/* 1 when the digits at s start with a 0 that is not the whole number ("00", "03", not "0" or
 * "0/3"): --shard, --seed-range and GTEST_* refuse such a number rather than read past the
 * zero, since the tools around attnconf disagree on it (C's strtol(s, 0, 0) and a shell's
 * $((010)) read 010 as 8) and --seed-range is recorded as given, so "01..3" and "1..3" would
 * be two spellings of one campaign. */
int cli_leading_zero(const char *s);

/* The number of elements of a static table, for cli_cmd.nopts. */
#define CLI_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

#endif
