/* cmd.h — the commands of the run room, for the dispatcher (attnconf.c): run cases on a
 * backend, describe a backend, list cases.  Every command has the dispatcher's one signature:
 * argv0 is the harness as invoked (for the re-run commands it prints), argv[0] the command. */
#ifndef ATTNCONF_RUN_CMD_H
#define ATTNCONF_RUN_CMD_H

#include <stdio.h>

#define RUN_USAGE_RUN                                                                              \
    "attnconf run --backend NAME|PATH.so|exec:CMD [--cases DIR]\n"                                 \
    "                    [--filter GLOB]... [--exclude GLOB]...\n"                                 \
    "                    [--format text|tap|junit|json] [--out FILE]\n"                            \
    "                    [--backend-option KEY=VALUE]... [--timeout SECONDS]\n"                    \
    "                    [--expect FILE] [--case-timeout SECONDS] [--memory-limit MIB]\n"          \
    "                    [--in-process] [--resume] [--adapter-stderr FILE]\n"                      \
    "                    [--restart never|family|case] [--shard K/N]\n"
#define RUN_USAGE_BACKEND_INFO                                                                     \
    "attnconf backend-info --backend NAME|PATH.so|exec:CMD\n"                                      \
    "                    [--backend-option KEY=VALUE]... [--timeout SECONDS]\n"                    \
    "                    [--case-timeout SECONDS] [--adapter-stderr FILE]\n"
#define RUN_USAGE_LIST                                                                             \
    "attnconf list [--cases DIR] [--filter GLOB]... [--exclude GLOB]... [--shard K/N]\n"
#define RUN_USAGE_REPRO                                                                            \
    "attnconf repro --backend NAME|PATH.so|exec:CMD [--backend-option KEY=VALUE]...\n"             \
    "                    [--writer exec:CMD] [--cases DIR] --case ID [--out FILE]\n"               \
    "                    [--timeout SECONDS] [--case-timeout SECONDS]\n"

/* Each returns the process exit status (run: 0 ok, 1 failures, 2 usage, 3 case files
 * unreadable, 77 all NOT_SUPPORTED; see cmd_run.c's top comment). */
int cmd_run(const char *argv0, int argc, char **argv);
int cmd_backend_info(const char *argv0, int argc, char **argv);
int cmd_list(const char *argv0, int argc, char **argv);
/* repro: 0 the reproducer was written, 1 it could not be, 2 usage or an unusable case
 * (cmd_repro.c's top comment). */
int cmd_repro(const char *argv0, int argc, char **argv);

/* The options of these three commands and the exit status, as `attnconf --help` shows them. */
void run_usage_options(FILE *f);

#endif
