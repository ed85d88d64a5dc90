/* misbehave.c — TEST-ONLY backends that misbehave on purpose, to prove the harness survives
 * untrusted code (worker isolation, guard pages, canaries, read-only inputs).  Each is the
 * reference backend (so every other call passes) except on its 2nd sdpa call in a process,
 * where it does what MISBEHAVE_MODE says:
 *   1 segv        write through a NULL pointer            -> CRASH, signal 11
 *   2 abort       abort()                                  -> CRASH, signal 6
 *   3 hang        loop forever                             -> TIMEOUT
 *   4 past_small  write 4 bytes just past the output       -> FAIL, canary, "+0..+3"
 *   5 before_small write 4 bytes just before the output    -> FAIL, canary, "-4..-1"
 *   6 past_far    write 4 KiB + 200 bytes past the output end (the guard page) -> CRASH
 *   7 before_far  write a page before the output start (the guard page)    -> CRASH
 *   8 write_q     write into the q input (read-only)       -> CRASH naming "input q"
 *   9 alloc       allocate and touch 64 MiB blocks until malloc fails (bounded at 64 GiB by
 *                 the harness's --memory-limit in the test), then free and return ENOMEM
 *                                                          -> ERROR, the run goes on
 *  10 exit3       exit(3)                                  -> CRASH, "exited with status 3"
 *  11 stack_overflow recurse until the stack runs out      -> CRASH, signal 11 and the note
 *                 "overflowed the stack" (the fault handler's alternate stack)
 *  12 closefds_hang close every descriptor above 2 (the worker's socket included), then hang
 *                                                          -> TIMEOUT, not a harness hang
 *  13 fork_segv   fork a child that sleeps 60 s (its pid written to $MISBEHAVE_PIDFILE), then
 *                 segfault: the child holds the socket open -> CRASH, signal 11, at once, and
 *                 the child is killed with the worker's process group
 *  14 fork_return fork, and both copies return the reference's result (two replies to one
 *                 request)                                 -> results stay with their cases
 *  15 past_result write one element just past the result, inside the buffer's slack (the
 *                 buffer has room for a wider dtype)       -> FAIL, "+0..+3" from the result
 *  16 past_100k   write 100 KB past the output buffer      -> CRASH naming the guard region
 *  17 close_segv  every call correct; close() segfaults   -> all PASS, a warning on stderr
 *  18 setsid_segv like fork_segv, but the child leaves the worker's process group (setsid)
 *                 first                                    -> CRASH, and the child is killed
 *  19 exit0       exit(0)                                  -> CRASH, "exited with status 0";
 *                 --in-process: exit 1 and the message of the exit guard
 *                 (harness/backend/plugin.h), never a silent exit 0
 *  20 out_bool    the reference's result, its dtype named ATTNCONF_BOOL
 *                                                          -> INCORRECT_DTYPE "output dtype
 *                 bool, expected ...", not a write past the end of a bool-sized output
 *  21 zero_strides the reference's result, its strides set to 0 (every element at offset 0)
 *                                                          -> FAIL naming the strides, as an
 *                 exec: reply with them is refused, not a write past the end
 *  22 printf      print to stdout (printf, left in the buffer, and write(1)), then the
 *                 reference's result            -> PASS; with --in-process the text lands on
 *                 attnconf's stderr, never in its stdout (TAP, JSON), as in a worker
 * The reference's entry point is renamed so this file's is the one exported.
 */
#define _POSIX_C_SOURCE 200809L /* fork, pause, sleep */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "faults.h"

#define attnconf_backend_entry mb_reference_entry
#include "../../backends/reference/reference_backend.c"
#undef attnconf_backend_entry

#ifndef MISBEHAVE_MODE
#define MISBEHAVE_MODE 1
#endif

static unsigned long mb_calls; /* per process: a fresh worker starts again at 0 */

static int mb_sdpa(void *ctx, const attnconf_sdpa_args *a)
{
    if (++mb_calls != 2)
        return rb_sdpa(ctx, a);
    unsigned char *out = a->out->data;
    long page = sysconf(_SC_PAGESIZE);
    switch (MISBEHAVE_MODE) {
    case 1: tf_write((volatile unsigned char *)(uintptr_t)0, 1); break;
    case 2: abort();
    case 3:
        for (;;)
            pause();
    case 4: {
        int rc = rb_sdpa(ctx, a);
        tf_write(out + a->out_capacity, 4);
        return rc;
    }
    case 5: {
        int rc = rb_sdpa(ctx, a);
        tf_write(out - 4, 4);
        return rc;
    }
    case 6: tf_write(out + a->out_capacity + (size_t)page + 200, 4); break;
    case 7: tf_write(out - page, 4); break;
    case 8: tf_write((unsigned char *)a->q->data, 4); break;
    case 9: {
        void *blocks[1024];
        size_t n = 0;
        while (n < 1024) { /* 64 GiB at most, should the limit be missing */
            void *b = malloc((size_t)64 << 20);
            if (!b)
                break;
            memset(b, 1, (size_t)64 << 20);
            blocks[n++] = b;
        }
        while (n)
            free(blocks[--n]);
        return ATTNCONF_ENOMEM;
    }
    case 10: exit(3);
    case 19: exit(0);
    case 11:
        if (tf_recurse(0) == 1)
            return ATTNCONF_EBACKEND; /* uses the result; not reached with a stack limit */
        break;
    case 12:
        for (int fd = 3; fd < 4096; fd++)
            close(fd);
        for (;;)
            pause();
    case 13:
    case 18: {
        /* The parent crashes only once the child is on its own (out of the worker's process
         * group, for 18), so the harness meets the situation the mode is about. */
        int ready[2];
        if (pipe(ready) != 0)
            abort();
        pid_t child = fork();
        if (child == 0) {
            if (MISBEHAVE_MODE == 18)
                setsid();
            char one = 1;
            if (write(ready[1], &one, 1) != 1)
                _exit(1);
            sleep(60);
            _exit(0);
        }
        char got;
        if (child > 0 && read(ready[0], &got, 1) != 1)
            abort();
        const char *pf = getenv("MISBEHAVE_PIDFILE");
        FILE *f = pf && child > 0 ? fopen(pf, "a") : NULL;
        if (f) {
            fprintf(f, "%ld\n", (long)child);
            fclose(f);
        }
        tf_write((volatile unsigned char *)(uintptr_t)0, 1);
        break;
    }
    case 14: fork(); return rb_sdpa(ctx, a);
    case 15: {
        int rc = rb_sdpa(ctx, a);
        size_t numel = 1;
        for (int d = 0; d < a->out->ndim; d++)
            numel *= (size_t)a->out->shape[d];
        tf_write(out + numel * (a->out->dtype == ATTNCONF_F32 ? 4 : 2), 4);
        return rc;
    }
    case 16: tf_write(out + a->out_capacity + 100000, 4); break;
    case 20: {
        int rc = rb_sdpa(ctx, a);
        a->out->dtype = ATTNCONF_BOOL;
        return rc;
    }
    case 21: {
        int rc = rb_sdpa(ctx, a);
        memset(a->out->strides, 0, sizeof a->out->strides);
        return rc;
    }
    case 22: {
        static const char raw[] = "misbehave: written to fd 1 by sdpa\n";
        printf("misbehave: printf by sdpa\n"); /* stays in stdout's buffer: no fflush */
        if (write(STDOUT_FILENO, raw, sizeof raw - 1) < 0)
            return ATTNCONF_EBACKEND;
        break;
    }
    default: break;
    }
    return rb_sdpa(ctx, a);
}

static void mb_close(void *ctx)
{
    if (MISBEHAVE_MODE == 17)
        tf_write((volatile unsigned char *)(uintptr_t)0, 1);
    rb_close(ctx);
}

static const attnconf_backend mb_table = {
    .abi_version = ATTNCONF_ABI_VERSION,
    .struct_size = sizeof(attnconf_backend),
    .name = "misbehave",
    .version = "0",
    .open = rb_open,
    .close = mb_close,
    .capabilities = rb_capabilities,
    .sdpa = mb_sdpa,
    .build_mask = rb_build_mask,
    .last_error = rb_last_error,
    RC_TABLE_MEMBERS, /* the reference's capabilities include its caches */
    RP_TABLE_MEMBERS, /* and its paged members (sixth revision) */
};

__attribute__((visibility("default"))) const attnconf_backend *
attnconf_backend_entry(uint32_t host_abi_version)
{
    (void)mb_reference_entry;
    return host_abi_version == ATTNCONF_ABI_VERSION ? &mb_table : NULL;
}
