/* replay_exec_reply.c — runs files through the exec: reply parser's fuzz target without
 * libFuzzer (each argument: one header line).  ctest runs it on every input that ever crashed
 * or hung the parser, plus hand-written hostile headers (conformance/fuzz/regressions/), under
 * whatever sanitizer the build has; the target aborts on any broken promise. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        unsigned char *buf = NULL;
        long n = -1;
        if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0)
            buf = malloc((size_t)n + 1);
        if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
            printf("NOT OK %s: cannot read\n", argv[i]);
            bad = 1;
        } else {
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            LLVMFuzzerTestOneInput(buf, (size_t)n);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
            /* Six parses of a header of at most 1 MiB: anything near a second is a hang. */
            int slow = s > 1.0;
            printf("%s %s (%.3f s)\n", slow ? "NOT OK (slow)" : "ok", argv[i], s);
            bad |= slow;
        }
        free(buf);
        if (f)
            fclose(f);
    }
    return bad;
}
