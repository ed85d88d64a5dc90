/* perf_cli.h — the perf subcommands of the attnconf CLI (main.c dispatches to them).
 * Both read bench result files (perf_json.h) and write Markdown. */
#ifndef ATTNCONF_PERF_CLI_H
#define ATTNCONF_PERF_CLI_H

/* `attnconf perf-compare BASE.json NEW.json [--threshold T] [--alpha A] [--out FILE.md]`
 * (perf_compare.c).  argv[0] is "perf-compare".  Returns the exit status: 0 nothing regressed,
 * 1 a regression, 2 usage or bad input (message on stderr). */
int pc_compare_main(int argc, char **argv);

/* `attnconf perf-report FILE.json... [--baseline FILE.json]... [--plot PATH]... [--note TEXT]
 * [--hyperfine FILE.json] [--out FILE.md]` (perf_report.c).  argv[0] is "perf-report".
 * Returns 0, or 2 for usage or bad input (message on stderr). */
int pr_report_main(int argc, char **argv);

#endif
