/* replay_caselib.c — runs inputs through the case reader without libFuzzer: each argument is a
 * file that must be refused cleanly (acase_load_file returns -1, leaves no case, and the error
 * names the file with a line and column).  ctest runs it on every input the fuzzer ever found
 * crashing or hanging (conformance/fuzz/regressions/), under whatever sanitizer the build has. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "attncase/case.h"

int main(int argc, char **argv)
{
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        acase *c = NULL;
        char err[512] = "";
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int rc = acase_load_file(argv[i], &c, err, sizeof err);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        size_t n = strlen(argv[i]);
        int clean = rc == -1 && !c && strncmp(err, argv[i], n) == 0 && err[n] == ':';
        printf("%s %s (%.3f s): %s\n", clean ? "ok" : "NOT OK", argv[i], s,
               rc ? err : "loaded, but a refusal was expected");
        bad |= !clean;
        acase_free(c);
    }
    return bad;
}
