/* cmd.h — the perf commands, for the dispatcher (attnconf.c).  Both read bench result files
 * (perf_json.h) and write Markdown. */
#ifndef ATTNCONF_PERF_CMD_H
#define ATTNCONF_PERF_CMD_H

#define PERF_USAGE_COMPARE                                                                         \
    "attnconf perf-compare BASE.json NEW.json [--threshold 0.05] [--alpha 0.01]\n"                 \
    "                    [--out FILE.md]   (bench results: did NEW get slower?)\n"
#define PERF_USAGE_REPORT                                                                          \
    "attnconf perf-report FILE.json... [--baseline FILE.json]... [--plot PATH]...\n"               \
    "                    [--hyperfine FILE.json] [--note TEXT] [--out FILE.md]\n"                  \
    "                    [--cliff-drop 0.20] [--exponent-tolerance 0.25]\n"

/* `attnconf perf-compare BASE.json NEW.json [--threshold T] [--alpha A] [--out FILE.md]`
 * (perf_compare.c).  argv[0] is "perf-compare".  Returns the exit status: 0 nothing regressed,
 * 1 a regression, 2 usage or bad input (message on stderr). */
int cmd_perf_compare(const char *argv0, int argc, char **argv);

/* `attnconf perf-report FILE.json... [--baseline FILE.json]... [--plot PATH]... [--note TEXT]
 * [--hyperfine FILE.json] [--out FILE.md] [--cliff-drop D] [--exponent-tolerance T]`
 * (perf_report.c).  argv[0] is "perf-report".
 * Returns 0, or 2 for usage or bad input (message on stderr). */
int cmd_perf_report(const char *argv0, int argc, char **argv);

#endif
