/* cmd.h — `attnconf bench`, for the dispatcher (attnconf.c). */
#ifndef ATTNCONF_BENCH_CMD_H
#define ATTNCONF_BENCH_CMD_H

#define BENCH_USAGE                                                                                \
    "attnconf bench --backend NAME|PATH.so|exec:CMD [--backend-option KEY=VALUE]...\n"             \
    "                    [--backend ...] --suite FILE [--filter GLOB]... [--out FILE.json]\n"      \
    "                    [--limits FILE.json] [--timeout SECONDS]\n"                               \
    "                    (time a perf suite; `attnconf bench --help`)\n"                           \
    "       attnconf bench --peak [--out FILE.json]   (this machine's limits)\n"

/* Time a perf suite (bench.c).  Exit 0 all OK, NOT_SUPPORTED or SKIPPED; 1 an INCORRECT or
 * ERROR; 2 usage or input errors. */
int cmd_bench(const char *argv0, int argc, char **argv);

#endif
