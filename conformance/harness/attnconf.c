/* attnconf.c — the attnconf command line: a table of commands, each a room's cmd_* function
 * (git's git.c).  Adding a command: see the recipe in README.md beside this file.
 *
 * Exit statuses are the commands' own (each cmd.h says which, from common/cli.h's set); this
 * file adds only CLI_EXIT_USAGE for an unknown or missing command.
 */
#include <stdio.h>
#include <string.h>

#include "attncase/case.h"
#include "attnconf/backend.h"
#include "bench/cmd.h"
#include "common/cli.h"
#include "fuzz/cmd.h"
#include "perf/cmd.h"
#include "report/cmd.h"
#include "run/cmd.h"

#ifndef ATTNCONF_VERSION
#define ATTNCONF_VERSION "0.0.0"
#endif

/* One row per command: its name, its function, its synopsis (one or more lines, each ending
 * in a newline, continuation lines indented under the first). */
static const struct command {
    const char *name;
    int (*fn)(const char *argv0, int argc, char **argv);
    const char *usage;
} commands[] = {
    {"run", cmd_run, RUN_USAGE_RUN},
    {"backend-info", cmd_backend_info, RUN_USAGE_BACKEND_INFO},
    {"list", cmd_list, RUN_USAGE_LIST},
    {"repro", cmd_repro, RUN_USAGE_REPRO},
    {"report", cmd_report, REPORT_USAGE},
    {"fuzz", cmd_fuzz, FUZZ_USAGE},
    {"bench", cmd_bench, BENCH_USAGE},
    {"perf-compare", cmd_perf_compare, PERF_USAGE_COMPARE},
    {"perf-report", cmd_perf_report, PERF_USAGE_REPORT},
};

static void usage(FILE *f)
{
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "%s%s", i == 0 ? "usage: " : "       ", commands[i].usage);
    fputs(
        "       attnconf --help | --version\n\n"
        "The options of run, backend-info and list (each other command's: attnconf CMD --help):\n",
        f);
    run_usage_options(f);
}

/* The dispatcher's usage errors: "attnconf: WHAT: ARG" and the usage (cli.h, no command). */
static int usage_error(const char *what, const char *arg)
{
    const cli_cmd c = {.name = NULL, .usage = usage};
    return cli_usage_error(&c, what, arg);
}

int main(int argc, char **argv)
{
    const char *argv0 = argc > 0 && argv[0] ? argv[0] : "attnconf";
    if (argc < 2)
        return usage_error("missing command", NULL);
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("attnconf %s (backend ABI %u, case format %d)\n", ATTNCONF_VERSION,
               ATTNCONF_ABI_VERSION, ACASE_FORMAT_VERSION);
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].fn(argv0, argc - 1, argv + 1);
    return usage_error(cmd[0] == '-' ? "unknown option" : "unknown command", cmd);
}
