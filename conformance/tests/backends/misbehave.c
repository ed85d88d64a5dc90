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
 * The reference's entry point is renamed so this file's is the one exported.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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
    case 11:
        if (tf_recurse(0) == 1)
            return ATTNCONF_EBACKEND; /* uses the result; not reached with a stack limit */
        break;
    default: break;
    }
    return rb_sdpa(ctx, a);
}

static const attnconf_backend mb_table = {
    .abi_version = ATTNCONF_ABI_VERSION,
    .struct_size = sizeof(attnconf_backend),
    .name = "misbehave",
    .version = "0",
    .open = rb_open,
    .close = rb_close,
    .capabilities = rb_capabilities,
    .sdpa = mb_sdpa,
    .build_mask = rb_build_mask,
    .last_error = rb_last_error,
};

__attribute__((visibility("default"))) const attnconf_backend *
attnconf_backend_entry(uint32_t host_abi_version)
{
    (void)mb_reference_entry;
    return host_abi_version == ATTNCONF_ABI_VERSION ? &mb_table : NULL;
}
