/* cpu_kern.h — the cpu plugin's micro-kernels: one table per instruction set, chosen at run time.
 *
 * The driver (cpu_sdpa.c) owns the algorithm (tiling, masks, the online softmax, splits); a
 * kernel table holds only the dense inner loops, on f32 tiles the driver packed:
 *   - Q rows: q[r * ldq + d], d < D;
 *   - K tile transposed: kt[d * ldk + c] = K[key c][d], ldk a multiple of CPU_NR;
 *   - V tile: v[c * ldv + e] = V[key c][e], ldv a multiple of CPU_NR, columns Dv..ldv-1 zero;
 *   - O accumulator rows: o[r * ldo + e], the same padded width;
 *   - scores / probabilities: s[r * lds + c].
 * Every pointer to a tile is aligned to 64 bytes (cpu_sdpa.c allocates them so) and every leading
 * dimension is a multiple of 16 floats, so a kernel may use aligned vector loads there.  Source
 * rows (pack_kt / load_row / store_row) have no alignment.
 *
 * Three tables: cpu_kernels_portable (plain C17, any machine) and, on x86-64, cpu_kernels_avx2
 * (AVX2 + FMA + F16C, its own translation unit compiled with those flags; never called unless
 * the CPU reports all three) and cpu_kernels_avx512() (AVX-512 F/BW/DQ/VL, its own translation
 * unit too: a copy of the AVX2 table with the prefill entries replaced, made on first use; never
 * called unless the CPU reports AVX-512 and the AVX2 set).  All must give results within the
 * same error model (SPEC.md clause 13); they need not be bit-identical (FMA contraction,
 * summation order).
 */
#ifndef ATTNCONF_CPU_KERN_H
#define ATTNCONF_CPU_KERN_H

#include <stddef.h>
#include <stdint.h>

#define CPU_MR 6  /* rows per micro-tile (scores and P.V) */
#define CPU_NR 16 /* columns per micro-tile: keys for scores, V columns for P.V */
#define CPU_DR 4  /* rows per call of the unpacked (decode) kernels */

/* Element types of the source tensors (the attnconf / attnref dtype values). */
enum { CPU_F32 = 1, CPU_F16 = 2, CPU_BF16 = 3 };

/* Not a source dtype: what scores_runs is told where runs_q returned it (bf16 K rows, the query
 * rows in that table's bf16 pairs layout).  Nothing else takes it. */
enum { CPU_BF16P = 4 };

/* A run of key rows for the decode kernels' run form: row t (< n) starts at element
 * t * rstride of src (contiguous: the rest of a tile; paged: the rows of one page). */
typedef struct cpu_run {
    const void *src;
    int64_t rstride;
    int n;
} cpu_run;

typedef struct cpu_kernels {
    const char *name; /* "avx512", "avx2", "portable" */

    /* s[r*lds + c] = sigma * (sum over d < D of q[r*ldq + d] * kt[d*ldk + c]) for r < nrows
     * (1..CPU_MR) and c < ncols (a multiple of CPU_NR, <= ldk).  The scale multiplies the
     * finished f32 dot product (never q or k before it: SPEC.md clause 12). */
    void (*scores)(const float *q, size_t ldq, int nrows, const float *kt, size_t ldk, int ncols,
                   int64_t D, float sigma, float *s, size_t lds);

    /* o[r*ldo + e] = o[r*ldo + e] * corr[r] + sum over c < nkeys of p[r*ldp + c] * v[c*ldv + e]
     * for r < nrows (1..CPU_MR) and e < ncols (a multiple of CPU_NR).  Keys c >= nkeys are
     * never read. */
    void (*pv)(const float *p, size_t ldp, int nrows, const float *v, size_t ldv, int nkeys,
               int ncols, const float *corr, float *o, size_t ldo);

    /* x[c] = exp(x[c] - m) for c < n (cpu_exp.h; -inf gives 0), returning their f32 sum. */
    float (*exp_sum)(float *x, int n, float m);

    /* The same scores with K read straight from its source rows (no packing), for work items
     * with few query rows (decode): K row c starts at element c * rstride of src (dtype
     * CPU_F32 / CPU_F16 / CPU_BF16, D contiguous elements), c < nk (any count); nrows is
     * 1..CPU_DR.  Writes s[r*lds + c] for c < nk only. */
    void (*scores_rows)(const float *q, size_t ldq, int nrows, const void *src, int dtype,
                        int64_t rstride, int nk, int64_t D, float sigma, float *s, size_t lds);

    /* The same P.V with V read straight from its source rows: V row c at element c * rstride
     * of src (Dv contiguous elements of dtype), c < nkeys; updates o[r*ldo + e] for e < Dv
     * only; nrows is 1..CPU_DR. */
    void (*pv_rows)(const float *p, size_t ldp, int nrows, const void *src, int dtype,
                    int64_t rstride, int nkeys, int64_t Dv, const float *corr, float *o,
                    size_t ldo);

    /* s[c] = cpu_softcapf(s[c], cap, rcap) for c < n (cpu_exp.h: c * tanh(s / c)). */
    void (*softcap)(float *s, int n, float cap, float rcap);

    /* s[c] -= slope * |base - c| for c < n (ALiBi, SPEC clause 21: base is the query's position
     * minus the tile's first key, the distance formed in f32, exact below 2^24). */
    void (*alibi)(float *s, int n, float slope, int64_t base);

    /* 1 if every x[0..n) is finite, else 0 (n >= 0). */
    int (*finite)(const float *x, int n);

    /* The largest of x[0..n) ignoring NaN; -inf when n == 0 or every element is -inf or NaN. */
    float (*max)(const float *x, int n);

    /* dst[d] = src[d] widened exactly to f32, d < n, src contiguous elements of dtype (CPU_F32,
     * CPU_F16, CPU_BF16).  Returns 1 if any value is NaN or infinite, else 0. */
    int (*load_row)(const void *src, int dtype, int64_t n, float *dst);

    /* Pack nk keys transposed: dst[d*ldk + c] = K[c][d] widened exactly to f32, for c < nk and
     * d < D, where key c starts at element c * rstride of src and its D elements are contiguous.
     * Columns nk..ldk-1 are left as they are. */
    void (*pack_kt)(const void *src, int dtype, int64_t rstride, int nk, int64_t D, float *dst,
                    size_t ldk);

    /* dst[e] = src[e] rounded once to dtype, to nearest even (f16 and bf16 keep subnormals,
     * overflow to inf, NaN stays NaN), e < n, dst contiguous. */
    void (*store_row)(const float *src, int64_t n, int dtype, void *dst);

    /* ---- the decode kernels over runs of rows (optional: NULL in a table that lacks them;
     * the driver then calls scores_rows / pv_rows once per run) ---- */

    /* scores_rows over the keys of runs[0..nruns) in order (key c of the tile = the c-th row
     * of the runs, nk = their total), writing s[r*lds + c]; the same values as scores_rows
     * per run (CPU_BF16P: within the same error bound).  While it computes, the kernel
     * prefetches the first D elements of the rows of pf[0..npf) (the next tile's K rows),
     * spread over the call so the loads of this tile and the requests for the next overlap;
     * npf may be 0.  A prefetch never faults.  q is in the layout runs_q wrote where it
     * returned a dtype, and dtype is then the one it returned; else q as scores_rows reads it. */
    void (*scores_runs)(const float *q, size_t ldq, int nrows, const cpu_run *runs, int nruns,
                        int dtype, int64_t D, float sigma, float *s, size_t lds, const cpu_run *pf,
                        int npf);

    /* The query rows as this table's scores_runs reads them (optional: NULL where it reads
     * q[r*ldq + d] for every dtype, as scores_rows does).  For the rows q[r*D .. r*D + D),
     * r < nrows, of a work item (all of them) with K/V dtype dtype and scale sigma, either
     * writes them into dst[r*2D .. r*2D + 2D) in a layout of scores_runs' own and returns the
     * dtype to call scores_runs with for those rows (ldq = 2D), or returns 0 and writes
     * nothing (this dtype's scores_runs reads q as it is).  Called once per work item, not per
     * tile: a call of scores_runs covers one page where pages are small, and would repeat it per
     * page.  The AVX-512 layouts (cpu_kern_avx512_runs.c): for f16/bf16, each chunk of eight
     * elements d..d+7 (d a multiple of 8, d + 8 <= D) twice in a row at dst[2d .. 2d+16),
     * each of the last D % 8 elements twice at dst[2d], dst[2d + 1], returning dtype; for bf16
     * rows that allow it (AVX512_BF16 on the CPU, D a multiple of 16, q's values and sigma
     * within the bounds given there), each chunk of 16 elements twice as bf16 values, returning
     * CPU_BF16P: scores_runs then adds pairs of products with VDPBF16PS, within the same error
     * bound (SPEC.md clause 13) but not bit for bit the other layout's values. */
    int (*runs_q)(const float *q, int nrows, int64_t D, int dtype, float sigma, float *dst);

    /* pv_rows over the V rows of runs[0..nruns) (key c = the c-th row of the runs), corr applied
     * once, the accumulators kept in registers across runs; the same values as pv_rows on the
     * first run followed by pv_rows with corr = 1 on each later one.  corr may be NULL: O is
     * taken as it is, the same values as corr = 1 (x * 1 = x exactly) without the multiplies
     * (bundle_tile's pages after a tile's first: 32 of them per 512 FMAs at pages of 16, D 128).
     * Prefetches the first Dv elements of the rows of pf[0..npf), spread over the call. */
    void (*pv_runs)(const float *p, size_t ldp, int nrows, const cpu_run *runs, int nruns,
                    int dtype, int64_t Dv, const float *corr, float *o, size_t ldo,
                    const cpu_run *pf, int npf);

    /* ---- the fused online-softmax step of a row group (optional: NULL in a table that lacks
     * it; the driver then calls finite, max and exp_sum per row, cpu_sdpa.c softmax_step) ---- */

    /* For each row r < nrows (1..CPU_MR) of the score block s[r*lds + c], c < n (1..tile_keys: a
     * tile), of which the keys [a[r], z[r]) are kept (0 <= a[r] < z[r] <= n; a
     * row with a[r] >= z[r] keeps none; the other keys are excluded whatever they hold): when a
     * kept score is NaN or infinite, bad[r] = 1 (bad[r] is never cleared); then, as the
     * driver's softmax_step with the excluded scores -inf: m_new = max(m[r], the largest kept
     * score ignoring NaN); if m_new is -inf the row keeps nothing finite (P = 0, corr[r] = 1,
     * l[r] = NaN if a kept score is NaN, else unchanged); otherwise s becomes
     * P = exp(s - m_new) (excluded keys +0), corr[r] = exp(m[r] - m_new),
     * l[r] = l[r] * corr[r] + sum P, m[r] = m_new.  A row that keeps no key gets P = 0 and
     * corr[r] = 1, m[r] and l[r] untouched.  The results are bit for bit those of this table's
     * finite, max and exp_sum (and cpu_expf for corr); columns n up to the next multiple of
     * CPU_NR may be overwritten with 0, none past it.  One pass per row over scores that are
     * still in the L1 cache, in place of three. */
    void (*softmax_rows)(float *s, size_t lds, int nrows, int n, const int *a, const int *z,
                         float *m, float *l, float *corr, unsigned char *bad);

    /* ---- scores and softmax_rows in one call (optional: NULL in a table that lacks it; the
     * driver then calls scores and softmax_rows) ---- */

    /* scores (ncols = n rounded up to CPU_NR, <= ldk) followed by softmax_rows on the same
     * block (n in 1..tile_keys, the same a, z, m, l, corr, bad), bit for bit, including what is left
     * in columns n up to ncols: the softmax step runs on the scores while they are still in
     * registers, and only P is stored.  For blocks with no score term (softcap, ALiBi) between
     * the two. */
    void (*scores_softmax)(const float *q, size_t ldq, int nrows, const float *kt, size_t ldk,
                           int n, int64_t D, float sigma, float *s, size_t lds, const int *a,
                           const int *z, float *m, float *l, float *corr, unsigned char *bad);

    /* Keys per tile the driver gives this table (a multiple of CPU_NR, at most cpu_plan.h's
     * CPU_BC): the most the score blocks above hold, and the step of the driver's key loop.
     * Larger tiles share each row's per-tile work (the max, the sum, the rescale, the O rows'
     * reload) among more keys; the fused AVX-512 kernel holds a row's 64 scores in registers.
     * Chosen per table by measurement (README, "The AVX2 prefill on a Zen 3").  A decode plan
     * (the run kernels) takes CPU_BC keys per tile in every table, and gives softmax_rows and
     * scores_softmax none of its blocks longer than this. */
    int tile_keys;
} cpu_kernels;

extern const cpu_kernels cpu_kernels_portable;
#if defined(CPU_HAVE_AVX2_TU) && CPU_HAVE_AVX2_TU
/* The decode run kernels of cpu_kernels_avx2 ask for the next tile's rows into the L1
 * (PREFETCHT0), those of cpu_kernels_avx2_l2 into the L2 (PREFETCHT1); the two tables are
 * otherwise the same and give the same values (cpu_options.h, prefetch=). */
extern const cpu_kernels cpu_kernels_avx2;
extern const cpu_kernels cpu_kernels_avx2_l2;
#endif
#if defined(CPU_HAVE_AVX512_TU) && CPU_HAVE_AVX512_TU
/* The AVX-512 table: cpu_kernels_avx2 with the entries cpu_kern_avx512.c specialises replaced
 * (built once, thread-safely, on the first call; call it only on a CPU with AVX-512).  pf_l1:
 * its decode run kernels ask for the next tile's K/V rows into the L1 (1) or the L2 (0); the
 * two tables give the same values (cpu_options.h, prefetch=). */
const cpu_kernels *cpu_kernels_avx512(int pf_l1);
#endif

#endif
