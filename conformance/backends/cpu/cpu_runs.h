/* cpu_runs.h — what the decode run kernels of the x86 tables share (cpu_kern_avx2.c,
 * cpu_kern_avx512_runs.c): the walk over a run list's keys, and the prefetch queue for the next
 * tile's rows.  Header-only and private to the cpu plugin; each file compiles it with its own
 * flags. */
#ifndef ATTNCONF_CPU_RUNS_H
#define ATTNCONF_CPU_RUNS_H

#include <stdint.h>
#include <xmmintrin.h>

#include "cpu_kern.h"

#define CPU_RUNS_AI static inline __attribute__((always_inline))

/* The keys of a run list in order: kit_next gives the next row's address (the caller never asks
 * past the total). */
typedef struct kit {
    const cpu_run *r;
    int u, t;
} kit;

/* Past the runs that are used up: it->r[it->u] holds the next row. */
CPU_RUNS_AI void kit_skip(kit *it)
{
    while (it->t >= it->r[it->u].n) {
        it->u++;
        it->t = 0;
    }
}

CPU_RUNS_AI const char *kit_next(kit *it, const size_t esz)
{
    kit_skip(it);
    const cpu_run *r = &it->r[it->u];
    return (const char *)r->src + (size_t)((int64_t)it->t++ * r->rstride) * esz;
}

/* Prefetch requests for the rows of a run list (the next tile's K or V), about a cache line per
 * step, the steps spread evenly over the call's loads (with at least as many steps as lines, a
 * step is the short path below).  Decode reads K and V once from memory, and a
 * core keeps only so many line requests in flight: asking for the next tile all at once
 * (hundreds of requests) stalls this tile's loads behind them, and a whole row per step (8
 * lines of an f32 row of 128) still comes in bursts that leave the queue idle in between (README,
 * "Since: the prefetch a cache line per step", and on a Zen 5, "A Zen 5 again").  Rows that
 * follow each other in memory (a contiguous tile, a page's run) are one range, so the
 * bookkeeping is a pointer compare per line. */
typedef struct pfq {
    const cpu_run *r;
    int nr, u, t;         /* the next run and row to take a range from */
    const char *p, *end;  /* the range being requested: lines p, p + 64, ... below end */
    int64_t lines, steps; /* lines to request over the caller's steps (lines 0: none left) */
    int64_t err;          /* lines owed times steps: a line is due each time it reaches steps */
    size_t rowbytes, esz; /* bytes of a row to request; of an element */
} pfq;

/* The next range of q's rows: the rest of a run whose rows are back to back, else one row.
 * 0 when none is left. */
CPU_RUNS_AI int pfq_range(pfq *q)
{
    while (q->u < q->nr && q->t >= q->r[q->u].n) {
        q->u++;
        q->t = 0;
    }
    if (q->u >= q->nr || q->rowbytes == 0)
        return 0;
    const cpu_run *r = &q->r[q->u];
    const char *row = (const char *)r->src + (size_t)((int64_t)q->t * r->rstride) * q->esz;
    const int rows = (size_t)r->rstride * q->esz == q->rowbytes ? r->n - q->t : 1;
    q->t += rows;
    q->p = (const char *)((uintptr_t)row & ~(uintptr_t)63); /* an unaligned row's first line */
    q->end = row + (size_t)rows * q->rowbytes;
    return 1;
}

/* One request for line p: into the L1 (PREFETCHT0) when L1, else into the L2 (PREFETCHT1).  L1
 * is a constant where the kernels are instantiated. */
CPU_RUNS_AI void pfq_line(const char *p, const int L1)
{
    if (L1)
        _mm_prefetch(p, _MM_HINT_T0);
    else
        _mm_prefetch(p, _MM_HINT_T1);
}

/* steps: how many times the caller will call pfq_step.  The lines are spread over them as evenly
 * as integers allow (a step's count differs from any other's by one at most), as a line-drawing
 * loop spreads pixels: a ratio of steps to lines that is not a whole number would otherwise
 * finish early and leave the queue idle for the rest of the call, or come in bursts of two. */
CPU_RUNS_AI void pfq_init(pfq *q, const cpu_run *r, int n, int64_t rowelems, size_t esz,
                          int64_t steps)
{
    *q = (pfq){.r = r, .nr = n, .esz = esz, .rowbytes = (size_t)rowelems * esz};
    int64_t lines = 0;
    for (int i = 0; i < n; i++)
        lines += (int64_t)r[i].n * (int64_t)((q->rowbytes + 63) / 64);
    q->lines = lines;
    q->steps = steps > 0 ? steps : 1;
    q->err = q->steps - lines; /* the first step requests a line, as the rest follow */
}

CPU_RUNS_AI void pfq_step(pfq *q, const int L1)
{
    q->err += q->lines;
    if (q->err < q->steps)
        return;
    /* One line inside the current range: the common step, kept short (it runs once per key
     * and column block in P.V, where the data in cache leaves little room around the FMAs). */
    q->err -= q->steps;
    if (q->err < q->steps && q->p < q->end) {
        pfq_line(q->p, L1);
        q->p += 64;
        return;
    }
    for (;;) {
        if (q->p >= q->end && !pfq_range(q)) {
            q->lines = 0; /* all requested: the later steps return at once */
            q->err = 0;
            return;
        }
        pfq_line(q->p, L1);
        q->p += 64;
        if (q->err < q->steps)
            return;
        q->err -= q->steps;
    }
}

/* Whatever is left (a call shorter than its step count, a one-key call). */
CPU_RUNS_AI void pfq_rest(pfq *q, const int L1)
{
    for (;;) {
        if (q->p >= q->end && !pfq_range(q))
            return;
        pfq_line(q->p, L1);
        q->p += 64;
    }
}

#endif
