/* cpu_plan.c — structural masks as key intervals, and work items (cpu_plan.h). */
#include "cpu_plan.h"

#include <stdlib.h>
#include <string.h>

/* Query rows per work item that the plan aims for: enough to reuse each packed K/V tile many
 * times, few enough to keep the item's Q and O rows in the level-2 cache and give the threads
 * several items each. */
#define CPU_ROWS_TARGET 256
/* A flash-decoding part has at least this many keys: below, the merge costs more than the
 * parallelism gains. */
#define CPU_SPLIT_MIN_KEYS (2 * CPU_BC)
#define CPU_SPLIT_MAX 64

void cpu_row_interval(const attnref_sdpa_params *p, int64_t lq, int64_t lk, int64_t b, int64_t i,
                      int64_t *lo_out, int64_t *hi_out)
{
    int64_t lo = 0, hi = lk;
    if (p && p->lengths && p->lengths[b] < hi)
        hi = p->lengths[b];
    if (p && p->left_padding && p->left_padding[b] > lo)
        lo = p->left_padding[b];
    if (p && p->causal && lo < hi) {
        const int64_t off = p->has_causal_offset ? p->causal_offset : lk - lq;
        /* Causal keeps j - i <= off.  j - i ranges over -i .. lk-1-i (small), so compare off
         * with those bounds instead of forming off + i. */
        if (off < -i) {
            hi = lo; /* not even key 0 */
        } else if (off < lk - 1 - i) {
            const int64_t c = off + i + 1; /* 0 < c < lk: no overflow (off < lk) */
            if (c < hi)
                hi = c;
        }
        /* Window keeps off - (j - i) < W, i.e. j - i > off - W, i.e. j >= off - W + 1 + i.
         * off >= -i here (else the row is empty), so off - W overflows only for a very
         * negative off with a huge W, where every j - i >= -i > off - W: nothing is dropped. */
        int64_t t;
        if (p->window > 0 && lo < hi && !__builtin_sub_overflow(off, p->window, &t)) {
            /* The first kept j - i is t + 1 (no overflow: t < off).  Compared with the range
             * of j - i, -i .. lk-1-i, it drops every key, a prefix, or nothing. */
            if (t + 1 > lk - 1 - i) {
                hi = lo; /* every key is too old */
            } else if (t + 1 > -i) {
                const int64_t w = t + 1 + i; /* 0 < w < lk */
                if (w > lo)
                    lo = w;
            }
        }
    }
    if (hi < lo)
        hi = lo;
    *lo_out = lo;
    *hi_out = hi;
}

static int by_cost_desc(const void *a, const void *b)
{
    const cpu_item *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost > y->cost ? -1 : 1;
    /* Ties in the natural order, so a plan is deterministic. */
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    return x->split - y->split;
}

int cpu_plan_make(cpu_plan *pl, const attnref_sdpa_params *p, int64_t B, int64_t Hq, int64_t Hkv,
                  int64_t Lq, int64_t Lk, int64_t D, int64_t Dv, int threads)
{
    memset(pl, 0, sizeof *pl);
    pl->B = B;
    pl->Hq = Hq;
    pl->Hkv = Hkv;
    pl->G = Hq / Hkv;
    pl->Lq = Lq;
    pl->Lk = Lk;
    pl->D = D;
    pl->Dv = Dv;
    int64_t bq = (CPU_ROWS_TARGET + pl->G - 1) / pl->G;
    if (bq > Lq)
        bq = Lq;
    if (bq < 1)
        bq = 1;
    pl->bq = bq;
    pl->nqb = (Lq + bq - 1) / bq;
    pl->ngroups = B * Hkv * pl->nqb;
    if (pl->ngroups == 0)
        return 0;

    /* Each group's key range: the union of its positions' intervals.  Positions are shared by
     * every (kv head) of a batch row, so compute per (b, query block) once. */
    const int64_t nbq = B * pl->nqb;
    int64_t *ulo = malloc((size_t)nbq * 2 * sizeof *ulo);
    if (!ulo)
        return -1;
    int64_t *uhi = ulo + nbq, maxlen = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t qb = 0; qb < pl->nqb; qb++) {
            int64_t lo = Lk, hi = 0;
            const int64_t i1 = (qb + 1) * bq < Lq ? (qb + 1) * bq : Lq;
            for (int64_t i = qb * bq; i < i1; i++) {
                int64_t a, z;
                cpu_row_interval(p, Lq, Lk, b, i, &a, &z);
                if (a < z) {
                    lo = a < lo ? a : lo;
                    hi = z > hi ? z : hi;
                }
            }
            if (hi < lo)
                hi = lo;
            ulo[b * pl->nqb + qb] = lo;
            uhi[b * pl->nqb + qb] = hi;
            if (hi - lo > maxlen)
                maxlen = hi - lo;
        }

    /* Flash-decoding: aim for four items per thread, each part at least CPU_SPLIT_MIN_KEYS. */
    int64_t ns = 1;
    const int64_t want = 4 * (int64_t)threads;
    if (threads > 1 && pl->ngroups < want) {
        ns = (want + pl->ngroups - 1) / pl->ngroups;
        const int64_t by_len = maxlen / CPU_SPLIT_MIN_KEYS;
        if (ns > by_len)
            ns = by_len;
        if (ns > CPU_SPLIT_MAX)
            ns = CPU_SPLIT_MAX;
        if (ns < 1)
            ns = 1;
    }
    pl->nsplit = (int)ns;
    pl->nitems = pl->ngroups * ns;
    pl->items = malloc((size_t)pl->nitems * sizeof *pl->items);
    if (!pl->items) {
        free(ulo);
        return -1;
    }
    int64_t n = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t hk = 0; hk < Hkv; hk++)
            for (int64_t qb = 0; qb < pl->nqb; qb++) {
                const int64_t lo = ulo[b * pl->nqb + qb], hi = uhi[b * pl->nqb + qb];
                const int64_t rows = pl->G * ((qb + 1) * bq < Lq ? bq : Lq - qb * bq);
                /* Parts of whole tiles, as equal as the tiles allow. */
                const int64_t tiles = (hi - lo + CPU_BC - 1) / CPU_BC;
                for (int64_t s = 0; s < ns; s++) {
                    cpu_item *it = &pl->items[n++];
                    it->group = (b * Hkv + hk) * pl->nqb + qb;
                    it->split = (int32_t)s;
                    int64_t a = lo + (tiles * s / ns) * CPU_BC,
                            z = lo + (tiles * (s + 1) / ns) * CPU_BC;
                    it->klo = a < hi ? a : hi;
                    it->khi = z < hi ? z : hi;
                    /* Under causal masks the visible keys of a block grow with its position;
                     * the union length is a good enough proxy for ordering. */
                    it->cost = (double)rows * (double)(it->khi - it->klo + CPU_BC);
                }
            }
    free(ulo);
    qsort(pl->items, (size_t)pl->nitems, sizeof *pl->items, by_cost_desc);
    return 0;
}

void cpu_plan_free(cpu_plan *pl)
{
    free(pl->items);
    pl->items = NULL;
}
