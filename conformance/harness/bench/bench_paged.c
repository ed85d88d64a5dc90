/* bench_paged.c — the paged form of a perf shape (bench.h bb_pool_*): K and V copied into a
 * pool of P-slot pages whose physical order is a shuffle of the pool (never the identity for
 * more than one page), as a serving engine's allocator leaves it after many sequences came and
 * went, and the paged_sdpa call over it.  Every row holds lk keys; its last page's slots past lk
 * are NaN (a kernel that reads them is INCORRECT, not merely slow). */
#define _POSIX_C_SOURCE 200809L /* posix_memalign */

#include "bench.h"

#include <stdlib.h>
#include <string.h>

#include "backend/call.h"

static void *alloc64(size_t bytes)
{
    void *p = NULL;
    return posix_memalign(&p, 64, bytes ? bytes : 64) == 0 ? p : NULL;
}

/* Copy rows of (B, Hkv, lk, d) contiguous src into the pool through the table. */
static void scatter(const bs_shape *s, const bb_pool *p, const void *src, void *pool, int64_t d,
                    size_t es)
{
    const int64_t P = s->page_size, n = p->tw;
    for (int64_t b = 0; b < s->b; b++)
        for (int64_t h = 0; h < s->hkv; h++)
            for (int64_t e = 0; e < n; e++) {
                const int64_t j0 = e * P, rows = s->lk - j0 < P ? s->lk - j0 : P;
                const int64_t page = p->table[b * n + e];
                const char *from =
                    (const char *)src + (size_t)(((b * s->hkv + h) * s->lk + j0) * d) * es;
                char *to = (char *)pool + (size_t)(((page * s->hkv + h) * P) * d) * es;
                memcpy(to, from, (size_t)(rows * d) * es);
                /* The free tail of a last page: NaN in every dtype. */
                memset(to + (size_t)(rows * d) * es, 0xFF, (size_t)((P - rows) * d) * es);
            }
}

int bb_pool_make(const bs_shape *s, attnref_dtype dt, const void *k, const void *v, uint64_t seed,
                 bb_pool *p)
{
    memset(p, 0, sizeof *p);
    const int64_t P = s->page_size, n = (s->lk + P - 1) / P;
    const size_t es = attnref_dtype_size(dt);
    p->tw = n;
    p->np = s->b * n;
    p->table = malloc((size_t)p->np * sizeof *p->table);
    p->seq_lens = malloc((size_t)s->b * sizeof *p->seq_lens);
    p->k = alloc64((size_t)(p->np * s->hkv * P * s->d) * es);
    p->v = alloc64((size_t)(p->np * s->hkv * P * s->dv) * es);
    if (!p->table || !p->seq_lens || !p->k || !p->v) {
        bb_pool_free(p);
        return -1;
    }
    /* A shuffle (Fisher-Yates on SplitMix64) of the pages, handed out row by row. */
    for (int64_t x = 0; x < p->np; x++)
        p->table[x] = (int32_t)x;
    for (int64_t x = p->np - 1; x > 0; x--) {
        const int64_t y = (int64_t)(acase_splitmix64_next(&seed) % (uint64_t)(x + 1));
        const int32_t t = p->table[x];
        p->table[x] = p->table[y];
        p->table[y] = t;
    }
    for (int64_t b = 0; b < s->b; b++)
        p->seq_lens[b] = s->lk;
    scatter(s, p, k, p->k, s->d, es);
    scatter(s, p, v, p->v, s->dv, es);
    /* (num_pages, Hkv, P, d) contiguous: each page of one kv head is P contiguous rows. */
    hb_tensor4(&p->kp, p->k, (int32_t)dt, p->np, s->hkv, P, s->d);
    hb_tensor4(&p->vp, p->v, (int32_t)dt, p->np, s->hkv, P, s->dv);
    return 0;
}

void bb_pool_free(bb_pool *p)
{
    free(p->k);
    free(p->v);
    free(p->table);
    free(p->seq_lens);
    memset(p, 0, sizeof *p);
}

void bb_paged_args(const bs_shape *s, bb_pool *p, const attnconf_tensor *q, attnconf_tensor *out,
                   size_t capacity, attnconf_paged_args *a)
{
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->q = q;
    a->k_pages = &p->kp;
    a->v_pages = &p->vp;
    a->block_table = p->table;
    a->table_width = p->tw;
    a->seq_lens = p->seq_lens;
    a->query_lens = NULL; /* lq queries in every row, at its end */
    a->causal = s->causal;
    a->window = s->window;
    a->softcap = s->softcap;
    a->alibi_max_bias = s->alibi_max_bias;
    a->sinks = s->sinks_f32;
    a->chunk = s->chunk;
    a->out = out;
    a->out_capacity = capacity;
}
