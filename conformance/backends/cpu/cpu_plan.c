/* cpu_plan.c — structural masks as key intervals, and work items (cpu_plan.h). */
#include "cpu_plan.h"

#include <stdlib.h>
#include <string.h>

/* Query rows per work item that the plan aims for: enough to reuse each packed K/V tile many
 * times.  1024 rather than 512 (rather than 256) halves the packing per product again; the
 * item's Q and O rows (512 KiB each at D = 128 in f32) then stream from the last-level cache
 * once per tile, which costs less: 2-3 % faster prefill on one thread (cpu/README.md).  Halved,
 * down to CPU_ROWS_MIN, while the threads would get fewer than four items each or the rows
 * would pass CPU_ROWS_BYTES (a head dimension above 128). */
#define CPU_ROWS_TARGET 1024
#define CPU_ROWS_MIN 128
#define CPU_ROWS_BYTES ((int64_t)1 << 20)
/* Flash-decoding parts per group, at most. */
#define CPU_SPLIT_MAX 64

/* ---- id runs ------------------------------------------------------------------------------ */

typedef struct run {
    int64_t id, start, end;
} run;

static int by_id_start(const void *a, const void *b)
{
    const run *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* The runs of ids[b*lk ..] for every row into r (cpu_runs); tmp holds lk runs. */
static void runs_fill(cpu_runs *r, const int64_t *ids, int64_t B, int64_t lk, run *tmp)
{
    for (int64_t b = 0; b < B; b++) {
        const int64_t *row = ids + b * lk;
        int64_t n = 0;
        for (int64_t j = 0; j < lk; j++) {
            if (j == 0 || row[j] != row[j - 1])
                tmp[n++] = (run){row[j], j, j + 1};
            else
                tmp[n - 1].end = j + 1;
        }
        /* Runs of one id next to each other, in position order: the first one's start and
         * the last one's end bound every position of that id. */
        qsort(tmp, (size_t)n, sizeof *tmp, by_id_start);
        for (int64_t g = 0; g < n;) {
            int64_t h = g + 1;
            while (h < n && tmp[h].id == tmp[g].id)
                h++;
            for (int64_t t = g; t < h; t++)
                for (int64_t j = tmp[t].start; j < tmp[t].end; j++) {
                    r->lo[b * lk + j] = tmp[g].start;
                    r->hi[b * lk + j] = tmp[h - 1].end;
                    r->one[b * lk + j] = h - g == 1;
                }
            g = h;
        }
    }
}

static int runs_make(cpu_runs *r, const int64_t *ids, int64_t B, int64_t lk, run *tmp)
{
    memset(r, 0, sizeof *r);
    if (!ids)
        return 0;
    const size_t n = (size_t)(B * lk) + 1;
    r->lo = malloc(n * sizeof *r->lo);
    r->hi = malloc(n * sizeof *r->hi);
    r->one = malloc(n);
    if (!r->lo || !r->hi || !r->one)
        return -1;
    runs_fill(r, ids, B, lk, tmp);
    return 0;
}

static void runs_free(cpu_runs *r)
{
    free(r->lo);
    free(r->hi);
    free(r->one);
    memset(r, 0, sizeof *r);
}

int cpu_keys_make(cpu_keys *ks, const attnref_sdpa_params *p, int64_t B, int64_t lq, int64_t lk)
{
    memset(ks, 0, sizeof *ks);
    ks->p = p;
    ks->lq = lq;
    ks->lk = lk;
    if (!p || (!p->segment_ids && !p->block_ids))
        return 0;
    run *tmp = malloc(((size_t)lk + 1) * sizeof *tmp);
    int rc = tmp ? 0 : -1;
    if (rc == 0)
        rc = runs_make(&ks->seg, p->segment_ids, B, lk, tmp);
    if (rc == 0)
        rc = runs_make(&ks->blk, p->block_ids, B, lk, tmp);
    free(tmp);
    if (rc != 0)
        cpu_keys_free(ks);
    return rc;
}

void cpu_keys_free(cpu_keys *ks)
{
    runs_free(&ks->seg);
    runs_free(&ks->blk);
}

/* ---- key ranges ----------------------------------------------------------------------------- */

/* x mod c in 0..c-1, c >= 1. */
static int64_t mod_pos(int64_t x, int64_t c)
{
    const int64_t r = x % c;
    return r < 0 ? r + c : r;
}

/* The causal keys of row i in [lo, hi): j <= off + i, the window and the chunk, into *lo, *hi
 * (emptied when none).  Only j - i and differences of small numbers are formed: the offset is
 * any int64. */
static void causal_range(const attnref_sdpa_params *p, int64_t lk, int64_t off, int64_t b,
                         int64_t i, int64_t *lo_io, int64_t *hi_io)
{
    int64_t lo = *lo_io, hi = *hi_io;
    /* Causal keeps j - i <= off.  j - i ranges over -i .. lk-1-i (small), so compare off with
     * those bounds instead of forming off + i. */
    if (off < -i) {
        hi = lo; /* not even key 0 */
    } else if (off < lk - 1 - i) {
        const int64_t c = off + i + 1; /* 0 < c < lk: no overflow (off < lk) */
        if (c < hi)
            hi = c;
    }
    /* Window keeps off - (j - i) < W, i.e. j - i > off - W, i.e. j >= off - W + 1 + i.
     * off >= -i here (else the row is empty), so off - W overflows only for a very negative
     * off with a huge W, where every j - i >= -i > off - W: nothing is dropped. */
    int64_t t;
    if (p->window > 0 && lo < hi && !__builtin_sub_overflow(off, p->window, &t)) {
        /* The first kept j - i is t + 1 (no overflow: t < off).  Compared with the range of
         * j - i, -i .. lk-1-i, it drops every key, a prefix, or nothing. */
        if (t + 1 > lk - 1 - i) {
            hi = lo; /* every key is too old */
        } else if (t + 1 > -i) {
            const int64_t w = t + 1 + i; /* 0 < w < lk */
            if (w > lo)
                lo = w;
        }
    }
    /* Chunk: the keys from the start of the query's chunk, p - ((p - lp) mod C) with
     * p = off + i >= 0 here.  The remainder is summed from its parts in unsigned arithmetic
     * (each below C <= INT64_MAX), and p - rem is formed only where it is near the keys. */
    if (p->chunk > 0 && lo < hi) {
        const int64_t C = p->chunk, lp = p->left_padding ? p->left_padding[b] : 0;
        uint64_t r = ((uint64_t)mod_pos(off, C) + (uint64_t)(i % C)) % (uint64_t)C;
        r = (r + (uint64_t)C - (uint64_t)(lp % C)) % (uint64_t)C;
        int64_t u; /* off - rem: the chunk starts at u + i */
        if (!__builtin_sub_overflow(off, (int64_t)r, &u)) {
            if (u > hi - 1 - i)
                hi = lo; /* the chunk starts after every key left */
            else if (u + i > lo)
                lo = u + i;
        } /* else the chunk starts far before key 0 */
    }
    if (hi < lo)
        hi = lo;
    *lo_io = lo;
    *hi_io = hi;
}

int cpu_row_keys(const cpu_keys *ks, int64_t b, int64_t i, int64_t *lo_out, int64_t *hi_out)
{
    const attnref_sdpa_params *p = ks->p;
    const int64_t lq = ks->lq, lk = ks->lk;
    int64_t lo = 0, hi = lk;
    int exact = 1;
    if (ks->rows.nq && i >= ks->rows.nq[b])
        hi = lo; /* a padding query row of a paged call */
    if (p && p->lengths && p->lengths[b] < hi)
        hi = p->lengths[b];
    if (p && p->left_padding && p->left_padding[b] > lo)
        lo = p->left_padding[b];
    if (p && lo < hi) {
        const int64_t off = ks->rows.off           ? ks->rows.off[b]
                            : p->has_causal_offset ? p->causal_offset
                                                   : lk - lq;
        /* The query's position as a key slot (off < lk bounds off + i). */
        const int in_slot = off < lk && off + i >= 0 && off + i < lk;
        const int64_t at = in_slot ? b * lk + off + i : 0, pos = in_slot ? off + i : 0;
        if (p->segment_ids) {
            if (!in_slot) {
                hi = lo;
            } else {
                lo = ks->seg.lo[at] > lo ? ks->seg.lo[at] : lo;
                hi = ks->seg.hi[at] < hi ? ks->seg.hi[at] : hi;
                exact &= ks->seg.one[at];
            }
        }
        if (p->causal && lo < hi) {
            int64_t clo = lo, chi = hi, elo = 0, ehi = 0;
            causal_range(p, lk, off, b, i, &clo, &chi);
            if (p->block_ids && in_slot && p->block_ids[at] >= 0) {
                /* The later keys of the query's block: inside every window, in its chunk. */
                elo = pos + 1 > lo ? pos + 1 : lo;
                ehi = ks->blk.hi[at] < hi ? ks->blk.hi[at] : hi;
                if (p->chunk > 0) {
                    const int64_t lp = p->left_padding ? p->left_padding[b] : 0;
                    const int64_t rest = p->chunk - mod_pos(pos - lp, p->chunk); /* 1..C */
                    if (rest < ehi - pos)
                        ehi = pos + rest;
                }
                if (elo < ehi)
                    exact &= ks->blk.one[at];
            }
            /* Both non-empty: the causal range ends at pos + 1 (the block reaches past it, so
             * lengths do not cut it earlier) and the block's part starts there. */
            if (elo < ehi) {
                lo = clo < chi ? clo : elo;
                hi = ehi;
            } else {
                lo = clo;
                hi = chi;
            }
        }
    }
    if (hi <= lo) {
        hi = lo;
        exact = 1;
    }
    *lo_out = lo;
    *hi_out = hi;
    return exact;
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
                  int64_t Lq, int64_t Lk, int64_t D, int64_t Dv, const cpu_rows *rows, int threads,
                  int hb, int bc)
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
    pl->bc = bc;
    int64_t bq = 1;
    for (int64_t target = CPU_ROWS_TARGET;; target /= 2) {
        bq = (target + pl->G - 1) / pl->G;
        if (bq > Lq)
            bq = Lq;
        if (bq < 1)
            bq = 1;
        if (target / 2 < CPU_ROWS_MIN)
            break;
        /* bq * G * D and bq * G * Dv are at most the q and output element counts: no overflow. */
        const int64_t rows_bytes = bq * pl->G * (D + Dv) * (int64_t)sizeof(float);
        if (B * Hkv * ((Lq + bq - 1) / bq) >= 4 * (int64_t)threads && rows_bytes <= CPU_ROWS_BYTES)
            break;
    }
    pl->bq = bq;
    pl->nqb = (Lq + bq - 1) / bq;
    pl->ngroups = B * Hkv * pl->nqb;
    if (pl->ngroups == 0)
        return 0;
    if (cpu_keys_make(&pl->keys, p, B, Lq, Lk) != 0)
        return -1;
    if (rows)
        pl->keys.rows = *rows;

    /* Each group's key range: the union of its positions' intervals.  Positions are shared by
     * every (kv head) of a batch row, so compute per (b, query block) once. */
    const int64_t nbq = B * pl->nqb;
    int64_t *ulo = malloc((size_t)nbq * 2 * sizeof *ulo);
    if (!ulo) {
        cpu_keys_free(&pl->keys);
        return -1;
    }
    int64_t *uhi = ulo + nbq, maxlen = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t qb = 0; qb < pl->nqb; qb++) {
            int64_t lo = Lk, hi = 0;
            const int64_t i1 = (qb + 1) * bq < Lq ? (qb + 1) * bq : Lq;
            for (int64_t i = qb * bq; i < i1; i++) {
                int64_t a, z;
                cpu_row_keys(&pl->keys, b, i, &a, &z);
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

    /* Flash-decoding: aim for four tasks per thread (a task: an item, or hb of them), each part
     * at least two tiles (below, the merge costs more than the parallelism gains). */
    int64_t ns = 1;
    const int64_t want = 4 * (int64_t)threads;
    const int64_t tasks = B * ((Hkv + hb - 1) / hb) * pl->nqb;
    if (threads > 1 && tasks < want) {
        ns = (want + tasks - 1) / tasks;
        const int64_t by_len = maxlen / (2 * (int64_t)bc);
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
        cpu_keys_free(&pl->keys);
        return -1;
    }
    int64_t n = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t hk = 0; hk < Hkv; hk++)
            for (int64_t qb = 0; qb < pl->nqb; qb++) {
                const int64_t lo = ulo[b * pl->nqb + qb], hi = uhi[b * pl->nqb + qb];
                const int64_t rows = pl->G * ((qb + 1) * bq < Lq ? bq : Lq - qb * bq);
                /* Parts of whole tiles, as equal as the tiles allow. */
                const int64_t tiles = (hi - lo + bc - 1) / bc;
                for (int64_t s = 0; s < ns; s++) {
                    cpu_item *it = &pl->items[n++];
                    it->group = (b * Hkv + hk) * pl->nqb + qb;
                    it->split = (int32_t)s;
                    int64_t a = lo + (tiles * s / ns) * bc, z = lo + (tiles * (s + 1) / ns) * bc;
                    it->klo = a < hi ? a : hi;
                    it->khi = z < hi ? z : hi;
                    /* Under causal masks the visible keys of a block grow with its position;
                     * the union length is a good enough proxy for ordering. */
                    it->cost = (double)rows * (double)(it->khi - it->klo + bc);
                }
            }
    free(ulo);
    qsort(pl->items, (size_t)pl->nitems, sizeof *pl->items, by_cost_desc);
    return 0;
}

void cpu_plan_free(cpu_plan *pl)
{
    cpu_keys_free(&pl->keys);
    free(pl->items);
    pl->items = NULL;
}
