/* cmd.h — the commands of the report room, for the dispatcher (attnconf.c). */
#ifndef ATTNCONF_REPORT_CMD_H
#define ATTNCONF_REPORT_CMD_H

#define REPORT_USAGE                                                                               \
    "attnconf report [--out FILE] [--title TITLE] [--command CMD] [--chart PATH]\n"                \
    "                    RESULTS.json...\n"                                                        \
    "       attnconf report --diff OLD.json NEW.json [--out FILE]\n"

/* `attnconf report [--out FILE] RESULTS.json...`: results -> REPORT.md (report.c); with --diff,
 * report_diff.c's comparison of two runs.
 * Returns the process exit status: 0 ok, 1 bad input, 2 usage (an --out FILE that is not a
 * regular file included); with --diff 0 nothing newly failing, 1 a case newly failing, 2 usage
 * or bad input. */
int cmd_report(const char *argv0, int argc, char **argv);

#endif
