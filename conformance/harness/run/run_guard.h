/* run_guard.h — the guarded buffers of run.c (private to the run room): every buffer a backend
 * sees lives in its own mapping between PROT_NONE guards, with canaries on both sides; inputs
 * are made read-only.  run_paged.c lays a paged case's pool, table and lengths out with them. */
#ifndef ATTNCONF_RUN_GUARD_H
#define ATTNCONF_RUN_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "attncase/case.h"
#include "attnconf/backend.h"
#include "results/result.h"

/* Bytes of canary before the data (after it: at least this many, up to the end of the page).
 * 64 keeps the data 64-byte aligned, as SIMD kernels like. */
#define HR_CANARY 64

/* PROT_NONE bytes on each side of a buffer: address space only.  A write up to this far
 * outside a buffer faults and is named (the fault note); one page would let a write 100 KB
 * past the end land, unseen, in the next mapping. */
#define HR_GUARD_BYTES ((size_t)1 << 20)

typedef struct run_guarded {
    unsigned char *map; /* the whole mapping, guard pages included; NULL = none */
    size_t map_len;
    unsigned char *data; /* what the backend gets */
    size_t len;
    unsigned char *lo, *hi; /* the canaries span [lo, data) and [data + len, hi) */
    const char *name;       /* "output buffer", "input q", ... for messages */
    int readonly;
} run_guarded;

/* Map a guarded buffer of len bytes (>= 1), read-write.  Returns 0, or -1 (out of memory, or
 * more than HR_MAX_GUARDED live buffers). */
int run_guarded_alloc(run_guarded *g, size_t len, const char *name);
/* Unmap (g zeroed; a zeroed g is a no-op). */
void run_guarded_free(run_guarded *g);
/* The whole body read-only / read-write again (0, or -1 when mprotect fails). */
int run_guarded_readonly(run_guarded *g);
int run_guarded_writable(run_guarded *g);
/* After a call: 1 (and a FAIL in r) if a canary changed, else 0. */
int run_guarded_check(const run_guarded *g, hr_result *r);
/* A case input in a read-only guarded copy laid out in its physical order (BHLD, BLHD,
 * stride0, row_pad), described in *out.  Returns 0, or -1. */
int run_describe(const acase_tensor *t, attnconf_tensor *out, run_guarded *owned, const char *name);
/* A read-only guarded copy of n int64 entries; *out NULL when src is NULL.  0, or -1. */
int run_readonly_ints(const int64_t *src, size_t n, run_guarded *g, const char *name,
                      const int64_t **out);

#endif
