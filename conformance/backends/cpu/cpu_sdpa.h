/* cpu_sdpa.h — the cpu plugin's SDPA: FlashAttention-2-style tiled online softmax on a thread
 * pool, with the semantics of attnref_sdpa (reference/include/attnref/sdpa.h, SPEC.md clauses
 * 1-13 and 19-22) and its error model (clause 13: f32 accumulation, exp within 2 ulp, the output
 * rounded once to nearest even).
 *
 * Algorithm (one work item = the rows of a GQA group at a block of query positions, cpu_plan.h):
 * Q rows are widened to f32 once; then for each 64-key tile of the item's key range, K is packed
 * transposed and V row-major, both widened to f32 (F16C / a shift for bf16 on the AVX2 path),
 * and every group of 6 rows computes its scores S = scale * (q . k) in f32, excludes keys (the
 * row's structural interval, then the mask tensor: a false boolean or a -inf additive value
 * excludes, other additive values are added in f32), and updates its running max m, sum l and
 * f32 accumulator O (O, l rescaled by exp(m_old - m_new); O += P . V).  The output is O / l,
 * rounded once to the q dtype.  Memory: O(tile x threads) plus, when splitting, the partial
 * (m, l, O) of each part; never O(Lq x Lk).
 *
 * Edge semantics kept exactly (the reference is normative):
 *   - a row that keeps no key is +0 (l stays 0), whatever its scores;
 *   - an excluded key contributes nothing even if its K or V holds NaN or inf: its score is
 *     replaced (never added to), and a V tile holding a non-finite value takes a path that
 *     skips excluded keys instead of multiplying them by 0 (0 * inf = NaN);
 *   - a tile in which a row keeps no key leaves that row's m, l, O untouched (no exp(-inf+inf));
 *   - a NaN score of a kept key makes the row NaN, also when it is the row's only key in a tile;
 *   - tiles and query blocks no row can see are skipped (never read);
 *   - the terms (softcap, ALiBi, sinks; chunk, documents and blocks as key ranges) in the
 *     kernels, in SPEC order; a sink never makes a row that keeps no key non-zero;
 *   - a row with a kept score that is not finite in f32, or a result that is not, is computed
 *     again in double as attnref_sdpa does (f32 overflow from finite inputs: issue 20).
 */
#ifndef ATTNCONF_CPU_SDPA_H
#define ATTNCONF_CPU_SDPA_H

#include <stddef.h>

#include "attnref/sdpa.h"
#include "attnref/tensor.h"
#include "cpu_kern.h"
#include "cpu_pool.h"

typedef struct cpu_engine {
    cpu_pool pool;
    const cpu_kernels *k;
    int threads;
    /* Scratch kept between calls (grown on demand): one block per thread, and the partial
     * states of a split call. */
    void **ws;
    size_t *ws_bytes;
    float *partials;
    size_t partials_bytes;
} cpu_engine;

/* Set up an engine for `threads` threads (>= 1) and kernel table k.  Starts no thread yet.
 * Returns 0, or -1 when memory or the pool's synchronisation cannot be set up. */
int cpu_engine_init(cpu_engine *e, int threads, const cpu_kernels *k);
void cpu_engine_free(cpu_engine *e);

/* out = attnref_sdpa(q, k, v, mask, p) computed by the engine, written through out's strides
 * in q's dtype.  The arguments must have passed attnref_sdpa_check (shapes, dtypes, parameter
 * ranges); p must not be NULL.  Returns 0; 1 (nothing written) when the shape would need more
 * than 256 MiB of scratch per thread (a head dimension or GQA group in the millions: the caller
 * computes such a call with attnref_sdpa instead); -1 when the scratch memory cannot be
 * allocated (nothing written; a reason in err). */
int cpu_sdpa_run(cpu_engine *e, const attnref_tensor *q, const attnref_tensor *k,
                 const attnref_tensor *v, const attnref_tensor *mask, const attnref_sdpa_params *p,
                 const attnref_tensor *out, char *err, size_t errlen);

/* A paged call's keys (SPEC.md clause 23; attnconf_paged_args), validated by the caller
 * (cpu_paged.c): pools k_pages (num_pages, Hkv, P, D) and v_pages (num_pages, Hkv, P, Dv), any
 * strides, in q's dtype; row b's key p in page table[b * tw + p / P], slot p % P. */
typedef struct cpu_paged_keys {
    const attnref_tensor *k_pages, *v_pages;
    const int32_t *table;      /* [B * tw]: entries below ceil(L_b / P) hold valid pages */
    int64_t tw;                /* table_width */
    const int64_t *seq_lens;   /* [B] L_b */
    const int64_t *query_lens; /* [B] q_b (never NULL here): query i < q_b of row b sits at
                                  position L_b - q_b + i; rows i >= q_b are written +0 */
} cpu_paged_keys;

/* out = paged attention (design: the contiguous SDPA of each row over its gathered keys
 * 0..L_b-1) computed by the same kernels as cpu_sdpa_run, reading each page's rows in place
 * through the block table: slots past L_b, table entries at or past ceil(L_b / P) and pages no
 * row lists are never read.  p holds scale, causal, window and the terms (softcap, ALiBi,
 * sinks, chunk), validated; its lengths, left padding, offset, segment and block ids are
 * ignored (this function sets the lengths to seq_lens).  Returns as cpu_sdpa_run. */
int cpu_paged_run(cpu_engine *e, const attnref_tensor *q, const cpu_paged_keys *pk,
                  const attnref_sdpa_params *p, const attnref_tensor *out, char *err,
                  size_t errlen);

#endif
