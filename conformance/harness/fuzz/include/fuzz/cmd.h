/* cmd.h — `attnconf fuzz`, for the dispatcher (attnconf.c). */
#ifndef ATTNCONF_FUZZ_CMD_H
#define ATTNCONF_FUZZ_CMD_H

#define FUZZ_USAGE                                                                                 \
    "attnconf fuzz --backend NAME|PATH.so|exec:CMD\n"                                              \
    "                    [--seed S | --seed-range A..B [--shard K/N]]\n"                           \
    "                    [--count N | --seconds T] [--out-dir DIR] [--json FILE]\n"                \
    "                    (random calls against the reference; `attnconf fuzz --help`)\n"

/* Random calls against the reference (fuzz_session.c).  Exit 0 no failure, 1 a failure (or the backend
 * could not be loaded), 2 usage, 77 every call not supported (nothing checked). */
int cmd_fuzz(const char *argv0, int argc, char **argv);

#endif
