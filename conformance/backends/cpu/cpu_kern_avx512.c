/* cpu_kern_avx512.c — the cpu plugin's micro-kernels for x86-64 with AVX-512 (F, BW, DQ, VL)
 * (cpu_kern.h).  This translation unit alone is compiled with -mavx512f -mavx512bw -mavx512dq
 * -mavx512vl (and the AVX2 flags, since the table reuses the AVX2 entries it does not
 * specialise); nothing here runs unless cpu_options.c found all of them on the CPU, with the OS
 * saving the ZMM state (__builtin_cpu_supports checks XCR0).
 *
 * What is specialised: the dense prefill loops (scores, P.V), the per-row passes the driver
 * makes over every score row (max, exp_sum, finite, and softmax_rows, which does them for a
 * whole row group in one call; scores_softmax, the scores and softmax_rows in one; the two
 * share the row passes row_scan and row_exp), the widening of K/V tiles (load_row, pack_kt) and
 * the decode run kernels (scores_runs, pv_runs: cpu_kern_avx512_runs.c, same flags).
 * Everything else (the per-run decode kernels scores_rows / pv_rows, store_row, softcap, ALiBi)
 * is the AVX2 table's entry:
 * cpu_kernels_avx512() starts from a copy of cpu_kernels_avx2 and overwrites the specialised
 * members, so an entry added to cpu_kern.h later is filled from the AVX2 table without a change
 * here.
 *
 * Register blocking (32 ZMM registers): a score tile is up to CPU_MR = 6 query rows x 64 keys
 * (four 16-lane vectors per row: 24 accumulators), fed per d by four loads of the transposed K
 * tile and six broadcasts of q (10 loads per 24 FMAs); P.V is the same shape with 64 V columns
 * per pass and the probabilities broadcast.  The AVX2 tile (6 x 16, 12 accumulators of 8 lanes)
 * has half the lanes per accumulator: at 512 bits the same 24 FMAs do four times its work per
 * load of q.  A narrower last tile (16, 32 or 48 columns) takes the 1-, 2- or 3-vector
 * instantiation.  Numerics: the same operations as the AVX2 kernels per lane (an FMA per
 * product, the scale after the dot product), only in another order of d-independent lanes, so
 * results are bit-identical to the AVX2 table's on scores and P.V.  No VDPBF16PS (it flushes
 * subnormal inputs and rounds its products differently): bf16 is widened by a shift, in packing.
 *
 * exp: cpu_expf (cpu_exp.h) operation for operation, except that the final y * 2^(n>>1) *
 * 2^(n - (n>>1)) is one VSCALEFPS y * 2^n: that rounds the exact product once, as the two
 * multiplies do (the first is exact: y is in [0.7, 1.5) and 2^(n>>1) >= 2^-80), so every lane
 * is bit-identical to the scalar function (test_cpu_kernels.c checks a sweep of the range).
 */
#include <immintrin.h>
#include <math.h>
#include <pthread.h>

#include "cpu_exp.h"
#include "cpu_kern.h"
#include "cpu_kern_avx512_runs.h"

#define AI static inline __attribute__((always_inline))

/* The lanes of the last partial vector of n elements (n % 16 of them; none when n % 16 == 0). */
AI __mmask16 tail_mask(int n)
{
    return (__mmask16)((1u << (n & 15)) - 1u);
}

/* ---- scores ------------------------------------------------------------------------------- */

/* R rows x C vectors of 16 keys. */
AI void sc_tile(const float *q, size_t ldq, const float *kt, size_t ldk, int64_t D, __m512 sv,
                float *s, size_t lds, const int R, const int C)
{
    __m512 a[CPU_MR][4];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            a[r][c] = _mm512_setzero_ps();
    for (int64_t d = 0; d < D; d++) {
        const float *k = kt + (size_t)d * ldk;
        __m512 kv[4];
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            kv[c] = _mm512_load_ps(k + 16 * c);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            const __m512 qb = _mm512_set1_ps(q[(size_t)r * ldq + (size_t)d]);
#pragma GCC unroll 4
            for (int c = 0; c < C; c++)
                a[r][c] = _mm512_fmadd_ps(qb, kv[c], a[r][c]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            _mm512_store_ps(s + (size_t)r * lds + 16 * c, _mm512_mul_ps(a[r][c], sv));
}

#define SC_ROWS(C)                                                                                 \
    switch (nrows) {                                                                               \
    case 1: sc_tile(q, ldq, k, ldk, D, sv, sc, lds, 1, C); break;                                  \
    case 2: sc_tile(q, ldq, k, ldk, D, sv, sc, lds, 2, C); break;                                  \
    case 3: sc_tile(q, ldq, k, ldk, D, sv, sc, lds, 3, C); break;                                  \
    case 4: sc_tile(q, ldq, k, ldk, D, sv, sc, lds, 4, C); break;                                  \
    case 5: sc_tile(q, ldq, k, ldk, D, sv, sc, lds, 5, C); break;                                  \
    default: sc_tile(q, ldq, k, ldk, D, sv, sc, lds, 6, C); break;                                 \
    }

static void z_scores(const float *q, size_t ldq, int nrows, const float *kt, size_t ldk, int ncols,
                     int64_t D, float sigma, float *s, size_t lds)
{
    const __m512 sv = _mm512_set1_ps(sigma);
    for (int c0 = 0; c0 < ncols;) {
        const float *k = kt + c0;
        float *sc = s + c0;
        const int nv = (ncols - c0) / 16;
        switch (nv >= 4 ? 4 : nv) {
        case 1: SC_ROWS(1) break;
        case 2: SC_ROWS(2) break;
        case 3: SC_ROWS(3) break;
        default: SC_ROWS(4) break;
        }
        c0 += 16 * (nv >= 4 ? 4 : nv);
    }
}

/* ---- P.V ---------------------------------------------------------------------------------- */

/* R rows x C vectors of 16 columns. */
AI void pv_tile(const float *p, size_t ldp, const float *v, size_t ldv, int nkeys,
                const float *corr, float *o, size_t ldo, const int R, const int C)
{
    __m512 a[CPU_MR][4];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
        const __m512 cr = _mm512_set1_ps(corr[r]);
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            a[r][c] = _mm512_mul_ps(_mm512_load_ps(o + (size_t)r * ldo + 16 * c), cr);
    }
    for (int k = 0; k < nkeys; k++) {
        const float *vr = v + (size_t)k * ldv;
        __m512 vv[4];
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            vv[c] = _mm512_load_ps(vr + 16 * c);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            const __m512 pb = _mm512_set1_ps(p[(size_t)r * ldp + (size_t)k]);
#pragma GCC unroll 4
            for (int c = 0; c < C; c++)
                a[r][c] = _mm512_fmadd_ps(pb, vv[c], a[r][c]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            _mm512_store_ps(o + (size_t)r * ldo + 16 * c, a[r][c]);
}

#define PV_ROWS(C)                                                                                 \
    switch (nrows) {                                                                               \
    case 1: pv_tile(p, ldp, ve, ldv, nkeys, corr, oe, ldo, 1, C); break;                           \
    case 2: pv_tile(p, ldp, ve, ldv, nkeys, corr, oe, ldo, 2, C); break;                           \
    case 3: pv_tile(p, ldp, ve, ldv, nkeys, corr, oe, ldo, 3, C); break;                           \
    case 4: pv_tile(p, ldp, ve, ldv, nkeys, corr, oe, ldo, 4, C); break;                           \
    case 5: pv_tile(p, ldp, ve, ldv, nkeys, corr, oe, ldo, 5, C); break;                           \
    default: pv_tile(p, ldp, ve, ldv, nkeys, corr, oe, ldo, 6, C); break;                          \
    }

static void z_pv(const float *p, size_t ldp, int nrows, const float *v, size_t ldv, int nkeys,
                 int ncols, const float *corr, float *o, size_t ldo)
{
    for (int e0 = 0; e0 < ncols;) {
        const float *ve = v + e0;
        float *oe = o + e0;
        const int nv = (ncols - e0) / 16;
        switch (nv >= 4 ? 4 : nv) {
        case 1: PV_ROWS(1) break;
        case 2: PV_ROWS(2) break;
        case 3: PV_ROWS(3) break;
        default: PV_ROWS(4) break;
        }
        e0 += 16 * (nv >= 4 ? 4 : nv);
    }
}

/* ---- exp, max, finite ----------------------------------------------------------------------- */

/* cpu_expf on 16 lanes (see the file comment for the one VSCALEFPS).  The clamps keep a NaN:
 * MINPS/MAXPS return their second operand when either is NaN.  clamp 0: for x in
 * [CPU_EXP_LO, 0] or NaN (a softmax step whose row spans less than -CPU_EXP_LO), where neither
 * clamp changes anything; the same values in two operations fewer. */
AI __m512 exp512_c(__m512 x, const int clamp)
{
    if (clamp) {
        x = _mm512_min_ps(_mm512_set1_ps(CPU_EXP_HI), x);
        x = _mm512_max_ps(_mm512_set1_ps(CPU_EXP_LO), x);
    }
    const __m512 magic = _mm512_set1_ps(CPU_EXP_MAGIC);
    const __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(CPU_EXP_LOG2E), magic);
    const __m512 fn = _mm512_sub_ps(t, magic);
    __m512 r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(CPU_EXP_C1), x);
    r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(CPU_EXP_C2), r);
    const __m512 r2 = _mm512_mul_ps(r, r);
    const __m512 a = _mm512_fmadd_ps(_mm512_set1_ps(CPU_EXP_P4), r, _mm512_set1_ps(CPU_EXP_P5));
    const __m512 b = _mm512_fmadd_ps(_mm512_set1_ps(CPU_EXP_P2), r, _mm512_set1_ps(CPU_EXP_P3));
    const __m512 c = _mm512_fmadd_ps(_mm512_set1_ps(CPU_EXP_P0), r, _mm512_set1_ps(CPU_EXP_P1));
    const __m512 p = _mm512_fmadd_ps(_mm512_mul_ps(r2, r2), c, _mm512_fmadd_ps(r2, b, a));
    const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, r2, r), _mm512_set1_ps(1.0f));
    /* fn is an integer (in [-159, 129]): scalef multiplies by exactly 2^fn, rounding once. */
    return _mm512_scalef_ps(y, fn);
}

AI __m512 exp512(__m512 x)
{
    return exp512_c(x, 1);
}

static float z_exp_sum(float *x, int n, float m)
{
    const __m512 mv = _mm512_set1_ps(m);
    __m512 acc = _mm512_setzero_ps();
    int c = 0;
    for (; c + 16 <= n; c += 16) {
        const __m512 y = exp512(_mm512_sub_ps(_mm512_loadu_ps(x + c), mv));
        _mm512_storeu_ps(x + c, y);
        acc = _mm512_add_ps(acc, y);
    }
    if (c < n) {
        /* The tail in masked lanes: the same operations as a full vector (masked-off lanes
         * compute exp(0 - m) and are neither stored nor summed). */
        const __mmask16 k = tail_mask(n);
        const __m512 y = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + c), mv));
        _mm512_mask_storeu_ps(x + c, k, y);
        acc = _mm512_add_ps(acc, _mm512_maskz_mov_ps(k, y));
    }
    return _mm512_reduce_add_ps(acc);
}

static float z_max(const float *x, int n)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    __m512 acc = ninf;
    int c = 0;
    for (; c + 16 <= n; c += 16)
        acc = _mm512_max_ps(_mm512_loadu_ps(x + c), acc); /* a NaN in x yields acc */
    if (c < n)
        acc = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, tail_mask(n), x + c), acc);
    return _mm512_reduce_max_ps(acc); /* acc holds no NaN */
}

static int z_finite(const float *x, int n)
{
    const __m512i expo = _mm512_set1_epi32(0x7f800000);
    __mmask16 bad = 0;
    int c = 0;
    for (; c + 16 <= n; c += 16) {
        const __m512i e = _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(x + c)), expo);
        bad |= _mm512_cmpeq_epi32_mask(e, expo);
    }
    if (c < n) {
        const __mmask16 k = tail_mask(n);
        const __m512i e =
            _mm512_and_si512(_mm512_castps_si512(_mm512_maskz_loadu_ps(k, x + c)), expo);
        bad |= _mm512_mask_cmpeq_epi32_mask(k, e, expo);
    }
    return bad == 0;
}

/* The lanes of vector v (keys 16v..16v+15) inside [a, z). */
AI __mmask16 range_mask(int v, int a, int z)
{
    const int lo = a - 16 * v, hi = z - 16 * v;
    const unsigned below = hi <= 0 ? 0u : hi >= 16 ? 0xffffu : (1u << hi) - 1u;
    const unsigned from = lo <= 0 ? 0xffffu : lo >= 16 ? 0u : 0xffffu & ~((1u << lo) - 1u);
    return (__mmask16)(below & from);
}

/* The first pass of one row of a softmax step (sm_rows, ssm_tile) over its nv vectors of scores
 * x (an excluded lane 0): the finite check (bad), then the running max.  Returns 1 with *mnew
 * set when the row goes on to row_exp; 0 when it keeps no key, or nothing above -inf (its P in
 * sr stored as 0 then, a kept NaN poisoning *l: the max skipped it). */
AI int row_scan(const __m512 *x, const int nv, int a, int z, float m, float *sr, float *l,
                unsigned char *bad, float *mnew)
{
    const __m512i expo = _mm512_set1_epi32(0x7f800000);
    __mmask16 nonfin = 0, nan = 0;
    __m512 mx = _mm512_set1_ps(-INFINITY);
    float mn = -INFINITY;
    if (a < z) {
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            const __mmask16 keep = range_mask(v, a, z);
            nonfin |= _mm512_mask_cmpeq_epi32_mask(
                keep, _mm512_and_si512(_mm512_castps_si512(x[v]), expo), expo);
            nan |= _mm512_mask_cmp_ps_mask(keep, x[v], x[v], _CMP_UNORD_Q);
            mx = _mm512_mask_max_ps(mx, keep, x[v], mx); /* a NaN lane keeps mx */
        }
        if (nonfin)
            *bad = 1;
        const float mb = _mm512_reduce_max_ps(mx);
        mn = mb > m ? mb : m;
    }
    if (mn == -INFINITY) {
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            _mm512_store_ps(sr + 16 * v, _mm512_setzero_ps());
        if (nan)
            *l = NAN;
        return 0;
    }
    *mnew = mn;
    return 1;
}

/* The second pass of a live row: P = exp(x - mnew) on its kept lanes (0 on the others, as
 * exp(-inf) gives) into sr; returns their sum in exp_sum's order (the vectors in turn into one
 * 16-lane accumulator).  range: ROW_KEEP, the lanes of [a, z) kept, any x; ROW_WHOLE, every lane
 * kept (a, z unused), x - mnew <= 0 or NaN; ROW_NARROW, the same with x - mnew in
 * [CPU_EXP_LO, 0] or NaN, where the exp's clamps are moot.  The same values in each case. */
enum { ROW_KEEP, ROW_WHOLE, ROW_NARROW };

AI float row_exp(const __m512 *x, const int nv, int a, int z, float mnew, float *sr,
                 const int range)
{
    const __m512 mv = _mm512_set1_ps(mnew);
    __m512 acc = _mm512_setzero_ps();
#pragma GCC unroll 4
    for (int v = 0; v < nv; v++) {
        __m512 y = exp512_c(_mm512_sub_ps(x[v], mv), range != ROW_NARROW);
        if (range == ROW_KEEP)
            y = _mm512_maskz_mov_ps(range_mask(v, a, z), y);
        _mm512_store_ps(sr + 16 * v, y);
        acc = _mm512_add_ps(acc, y);
    }
    return _mm512_reduce_add_ps(acc);
}

/* softmax_rows (cpu_kern.h) in two passes over the group, so that no row waits on its own
 * reductions: first each row's kept scores are loaded once for the finite check and the max
 * (the rows' reductions independent of each other), then the factors of all rows are one
 * 16-lane exp, then every row's exp and sum run back to back (the sum in exp_sum's order: the
 * vectors in turn into one 16-lane accumulator, excluded lanes adding +0 as exp(-inf) does).
 * Per row the same operations as finite, max, exp_sum and cpu_expf. */
AI void sm_rows(float *s, size_t lds, int nrows, const int nv, const int *a, const int *z, float *m,
                float *l, float *corr, unsigned char *bad)
{
    float mo[16], mn[16];
    int live[CPU_MR];
    for (int r = 0; r < 16; r++)
        mo[r] = mn[r] = 0.0f; /* lanes of no live row: exp(0), unused */
    for (int r = 0; r < nrows; r++) {
        float *sr = s + (size_t)r * lds;
        __m512 x[4];
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            x[v] = _mm512_maskz_load_ps(range_mask(v, a[r], z[r]), sr + 16 * v);
        live[r] = row_scan(x, nv, a[r], z[r], m[r], sr, &l[r], &bad[r], &mn[r]);
        mo[r] = live[r] ? m[r] : 0.0f;
        mn[r] = live[r] ? mn[r] : 0.0f;
    }
    float cf[16];
    _mm512_storeu_ps(cf, exp512(_mm512_sub_ps(_mm512_loadu_ps(mo), _mm512_loadu_ps(mn))));
    for (int r = 0; r < nrows; r++) {
        if (!live[r]) {
            corr[r] = 1.0f;
            continue;
        }
        float *sr = s + (size_t)r * lds;
        __m512 x[4];
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            x[v] = _mm512_maskz_load_ps(range_mask(v, a[r], z[r]), sr + 16 * v);
        const float sum = row_exp(x, nv, a[r], z[r], mn[r], sr, ROW_KEEP);
        corr[r] = cf[r];
        l[r] = l[r] * cf[r] + sum;
        m[r] = mn[r];
    }
}

static void z_softmax_rows(float *s, size_t lds, int nrows, int n, const int *a, const int *z,
                           float *m, float *l, float *corr, unsigned char *bad)
{
    switch ((n + 15) / 16) {
    case 1: sm_rows(s, lds, nrows, 1, a, z, m, l, corr, bad); break;
    case 2: sm_rows(s, lds, nrows, 2, a, z, m, l, corr, bad); break;
    case 3: sm_rows(s, lds, nrows, 3, a, z, m, l, corr, bad); break;
    default: sm_rows(s, lds, nrows, 4, a, z, m, l, corr, bad); break;
    }
}

/* ---- scores and softmax_rows fused ------------------------------------------------------- */

/* scores_softmax (cpu_kern.h) for R rows x C vectors: sc_tile's accumulation and scaling, then
 * sm_rows' two passes on the scores while they are still in the accumulators, so the block is
 * stored once (as P) instead of stored as scores, loaded twice and stored again.  The same
 * operations in the same order as sc_tile followed by sm_rows: a kept lane holds the stored
 * score's bits, an excluded lane 0 as sm_rows' masked load gives. */
AI void ssm_tile(const float *q, size_t ldq, const float *kt, size_t ldk, int64_t D, __m512 sv,
                 float *s, size_t lds, const int *a, const int *z, float *m, float *l, float *corr,
                 unsigned char *bad, const int R, const int C, const int whole)
{
    __m512 acc[CPU_MR][4];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            acc[r][c] = _mm512_setzero_ps();
    for (int64_t d = 0; d < D; d++) {
        const float *k = kt + (size_t)d * ldk;
        __m512 kv[4];
#pragma GCC unroll 4
        for (int c = 0; c < C; c++)
            kv[c] = _mm512_load_ps(k + 16 * c);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            const __m512 qb = _mm512_set1_ps(q[(size_t)r * ldq + (size_t)d]);
#pragma GCC unroll 4
            for (int c = 0; c < C; c++)
                acc[r][c] = _mm512_fmadd_ps(qb, kv[c], acc[r][c]);
        }
    }
    float mo[16], mn[16];
    int live[CPU_MR], range[CPU_MR]; /* row_exp's range per row */
    for (int r = 0; r < 16; r++)
        mo[r] = mn[r] = 0.0f; /* lanes of no live row: exp(0), unused */
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
        range[r] = ROW_KEEP;
        if (whole) {
            /* Every row keeps the whole tile: its max (row_scan's steps and reduction, so the
             * same value) and least score straight from the registers.  With no -inf score and
             * one above -inf, the finite check's NaN and +inf show as a NaN sum below (a NaN
             * exp, or +inf - +inf once mnew is +inf; finite x - mnew <= 0 give a finite sum). */
            __m512 hv = _mm512_set1_ps(-INFINITY), lv = _mm512_set1_ps(INFINITY);
#pragma GCC unroll 4
            for (int c = 0; c < C; c++) {
                acc[r][c] = _mm512_mul_ps(acc[r][c], sv);
                hv = _mm512_max_ps(acc[r][c], hv);
                lv = _mm512_min_ps(acc[r][c], lv);
            }
            const float hi = _mm512_reduce_max_ps(hv), lo = _mm512_reduce_min_ps(lv);
            if (hi > -INFINITY && lo > -INFINITY) {
                mn[r] = hi > m[r] ? hi : m[r];
                /* x - mnew >= lo - mnew for every score (f32 subtraction is monotonic) */
                range[r] = lo - mn[r] >= CPU_EXP_LO ? ROW_NARROW : ROW_WHOLE;
                live[r] = 1;
                mo[r] = m[r];
                continue;
            }
        } else {
#pragma GCC unroll 4
            for (int c = 0; c < C; c++)
                acc[r][c] = _mm512_maskz_mul_ps(range_mask(c, a[r], z[r]), acc[r][c], sv);
        }
        live[r] =
            row_scan(acc[r], C, a[r], z[r], m[r], s + (size_t)r * lds, &l[r], &bad[r], &mn[r]);
        mo[r] = live[r] ? m[r] : 0.0f;
        mn[r] = live[r] ? mn[r] : 0.0f;
    }
    float cf[16];
    _mm512_storeu_ps(cf, exp512(_mm512_sub_ps(_mm512_loadu_ps(mo), _mm512_loadu_ps(mn))));
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
        if (!live[r]) {
            corr[r] = 1.0f;
            continue;
        }
        float sum;
        if (range[r] != ROW_KEEP) {
            /* One call per range, each with a constant: row_exp's tests on it fold away. */
            sum = range[r] == ROW_NARROW
                      ? row_exp(acc[r], C, 0, 0, mn[r], s + (size_t)r * lds, ROW_NARROW)
                      : row_exp(acc[r], C, 0, 0, mn[r], s + (size_t)r * lds, ROW_WHOLE);
            if (sum != sum)
                bad[r] = 1;
        } else {
            sum = row_exp(acc[r], C, a[r], z[r], mn[r], s + (size_t)r * lds, ROW_KEEP);
        }
        corr[r] = cf[r];
        l[r] = l[r] * cf[r] + sum;
        m[r] = mn[r];
    }
}

#define SSM_ROWS(C)                                                                                \
    switch (nrows) {                                                                               \
    case 1: ssm_tile(q, ldq, kt, ldk, D, sv, s, lds, a, z, m, l, corr, bad, 1, C, whole); break;   \
    case 2: ssm_tile(q, ldq, kt, ldk, D, sv, s, lds, a, z, m, l, corr, bad, 2, C, whole); break;   \
    case 3: ssm_tile(q, ldq, kt, ldk, D, sv, s, lds, a, z, m, l, corr, bad, 3, C, whole); break;   \
    case 4: ssm_tile(q, ldq, kt, ldk, D, sv, s, lds, a, z, m, l, corr, bad, 4, C, whole); break;   \
    case 5: ssm_tile(q, ldq, kt, ldk, D, sv, s, lds, a, z, m, l, corr, bad, 5, C, whole); break;   \
    default: ssm_tile(q, ldq, kt, ldk, D, sv, s, lds, a, z, m, l, corr, bad, 6, C, whole); break;  \
    }

static void z_scores_softmax(const float *q, size_t ldq, int nrows, const float *kt, size_t ldk,
                             int n, int64_t D, float sigma, float *s, size_t lds, const int *a,
                             const int *z, float *m, float *l, float *corr, unsigned char *bad)
{
    const __m512 sv = _mm512_set1_ps(sigma);
    int whole = n % 16 == 0;
    for (int r = 0; r < nrows; r++)
        whole &= a[r] == 0 && z[r] == n;
    switch ((n + 15) / 16) {
    case 1: SSM_ROWS(1) break;
    case 2: SSM_ROWS(2) break;
    case 3: SSM_ROWS(3) break;
    default: SSM_ROWS(4) break;
    }
}

/* ---- conversions, packing ------------------------------------------------------------------ */

/* 16 elements of dtype at element i of src (unaligned; lanes outside k are neither read nor
 * set: 0) widened exactly to f32: F16 by VCVTPH2PS (exact, subnormals included, the MXCSR's
 * DAZ not applying to it), BF16 by a 16-bit shift. */
AI __m512 load16(const void *src, int dtype, int64_t i, __mmask16 k)
{
    switch (dtype) {
    case CPU_F16: return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(k, (const uint16_t *)src + i));
    case CPU_BF16:
        return _mm512_castsi512_ps(_mm512_slli_epi32(
            _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, (const uint16_t *)src + i)), 16));
    default: return _mm512_maskz_loadu_ps(k, (const float *)src + i);
    }
}

AI int load_row_dt(const void *src, const int dtype, int64_t n, float *dst)
{
    const __m512i expo = _mm512_set1_epi32(0x7f800000);
    __mmask16 bad = 0;
    int64_t d = 0;
    for (; d + 16 <= n; d += 16) {
        const __m512 x = load16(src, dtype, d, 0xffff);
        _mm512_storeu_ps(dst + d, x);
        bad |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(x), expo), expo);
    }
    if (d < n) {
        const __mmask16 k = tail_mask((int)(n - d));
        const __m512 x = load16(src, dtype, d, k);
        _mm512_mask_storeu_ps(dst + d, k, x);
        bad |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(_mm512_castps_si512(x), expo), expo);
    }
    return bad != 0;
}

static int z_load_row(const void *src, int dtype, int64_t n, float *dst)
{
    switch (dtype) {
    case CPU_F16: return load_row_dt(src, CPU_F16, n, dst);
    case CPU_BF16: return load_row_dt(src, CPU_BF16, n, dst);
    default: return load_row_dt(src, CPU_F32, n, dst);
    }
}

/* r[t] = lane t of each r: a 16 x 16 transpose in four rounds of shuffles (32-bit, 64-bit
 * within 128-bit lanes, then 128-bit lanes twice). */
AI void transpose16(__m512 r[16])
{
    __m512 t[16];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
        const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    /* r[4i + j] now holds, in 128-bit lane l, elements 4l..4l+3's column j of rows 4i..4i+3. */
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        const __m512 a = r[j], b = r[4 + j], c = r[8 + j], d = r[12 + j];
        const __m512 ab0 = _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0));
        const __m512 ab1 = _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1));
        const __m512 cd0 = _mm512_shuffle_f32x4(c, d, _MM_SHUFFLE(2, 0, 2, 0));
        const __m512 cd1 = _mm512_shuffle_f32x4(c, d, _MM_SHUFFLE(3, 1, 3, 1));
        t[j] = _mm512_shuffle_f32x4(ab0, cd0, _MM_SHUFFLE(2, 0, 2, 0));
        t[8 + j] = _mm512_shuffle_f32x4(ab0, cd0, _MM_SHUFFLE(3, 1, 3, 1));
        t[4 + j] = _mm512_shuffle_f32x4(ab1, cd1, _MM_SHUFFLE(2, 0, 2, 0));
        t[12 + j] = _mm512_shuffle_f32x4(ab1, cd1, _MM_SHUFFLE(3, 1, 3, 1));
    }
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++)
        r[i] = t[i];
}

AI void pack_kt_dt(const void *src, const int dtype, int64_t rstride, int nk, int64_t D, float *dst,
                   size_t ldk)
{
    int c = 0;
    for (; c + 16 <= nk; c += 16) {
        int64_t d = 0;
        for (; d + 16 <= D; d += 16) {
            __m512 r[16];
#pragma GCC unroll 16
            for (int t = 0; t < 16; t++)
                r[t] = load16(src, dtype, (int64_t)(c + t) * rstride + d, 0xffff);
            transpose16(r);
#pragma GCC unroll 16
            for (int t = 0; t < 16; t++)
                _mm512_storeu_ps(dst + (size_t)(d + t) * ldk + (size_t)c, r[t]);
        }
        if (d < D) {
            /* The last D % 16 dimensions: masked loads (never past a key's row), and only
             * their rows of the transpose stored. */
            const __mmask16 k = tail_mask((int)(D - d));
            __m512 r[16];
#pragma GCC unroll 16
            for (int t = 0; t < 16; t++)
                r[t] = load16(src, dtype, (int64_t)(c + t) * rstride + d, k);
            transpose16(r);
            for (int t = 0; t < (int)(D - d); t++)
                _mm512_storeu_ps(dst + (size_t)(d + t) * ldk + (size_t)c, r[t]);
        }
    }
    if (c < nk) /* fewer than 16 keys left: the AVX2 packing (8 at a time, then one by one) */
        cpu_kernels_avx2.pack_kt((const char *)src +
                                     (size_t)((int64_t)c * rstride) * (dtype == CPU_F32 ? 4 : 2),
                                 dtype, rstride, nk - c, D, dst + c, ldk);
}

static void z_pack_kt(const void *src, int dtype, int64_t rstride, int nk, int64_t D, float *dst,
                      size_t ldk)
{
    switch (dtype) {
    case CPU_F16: pack_kt_dt(src, CPU_F16, rstride, nk, D, dst, ldk); break;
    case CPU_BF16: pack_kt_dt(src, CPU_BF16, rstride, nk, D, dst, ldk); break;
    default: pack_kt_dt(src, CPU_F32, rstride, nk, D, dst, ldk); break;
    }
}

/* ---- the table ------------------------------------------------------------------------------ */

/* Two tables, the same but for where the decode run kernels ask for the next tile's rows
 * (cpu_kern_avx512_runs.c): [1] into the L1, [0] into the L2. */
static cpu_kernels tables[2];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void tables_make(void)
{
    cpu_kernels t = cpu_kernels_avx2; /* every entry not specialised below, present or future */
    t.name = "avx512";
    t.scores = z_scores;
    t.pv = z_pv;
    t.exp_sum = z_exp_sum;
    t.max = z_max;
    t.finite = z_finite;
    t.load_row = z_load_row;
    t.pack_kt = z_pack_kt;
    t.softmax_rows = z_softmax_rows;
    t.scores_softmax = z_scores_softmax;
    t.tile_keys = 64; /* z_scores_softmax holds a row's scores in four registers */
    t.scores_runs = cpu_avx512_scores_runs_l2;
    t.pv_runs = cpu_avx512_pv_runs_l2;
    t.runs_q = cpu_avx512_runs_q;
    tables[0] = t;
    t.scores_runs = cpu_avx512_scores_runs_l1;
    t.pv_runs = cpu_avx512_pv_runs_l1;
    tables[1] = t;
}

const cpu_kernels *cpu_kernels_avx512(int pf_l1)
{
    pthread_once(&tables_once, tables_make);
    return &tables[pf_l1 ? 1 : 0];
}
