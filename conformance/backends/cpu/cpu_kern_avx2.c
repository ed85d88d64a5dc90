/* cpu_kern_avx2.c — the cpu plugin's micro-kernels for x86-64 with AVX2, FMA and F16C
 * (cpu_kern.h).  This translation unit alone is compiled with -mavx2 -mfma -mf16c; nothing here
 * runs unless cpu_backend.c found all three on the CPU (__builtin_cpu_supports).
 *
 * Register blocking: a score tile is CPU_MR = 6 query rows x CPU_NR = 16 keys, 12 accumulators,
 * fed per d by two loads of the transposed K tile and six broadcasts of q (8 loads per 12 FMAs,
 * so the FMA ports, not the load ports, set the pace); P.V is the same shape with V rows in place
 * of K columns and the probabilities broadcast.  Each shape is instantiated for 1..6 rows from
 * one always-inline body; the row loops are unrolled by pragma so the accumulator arrays
 * become registers (GCC keeps an array indexed in a loop in memory otherwise).
 */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "attnref/dtype.h"
#include "cpu_exp.h"
#include "cpu_kern.h"

#include "cpu_runs.h"

#define AI static inline __attribute__((always_inline))

/* ---- conversions ----------------------------------------------------------------------- */

/* 8 elements of dtype at src (unaligned) widened exactly to f32. */
AI __m256 load8(const void *src, int dtype, int64_t i)
{
    switch (dtype) {
    case CPU_F16:
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)src + i)));
    case CPU_BF16:
        return _mm256_castsi256_ps(_mm256_slli_epi32(
            _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)src + i))),
            16));
    default: return _mm256_loadu_ps((const float *)src + i);
    }
}

AI float load1(const void *src, int dtype, int64_t i)
{
    switch (dtype) {
    case CPU_F16: return attnref_f16_to_f32(((const uint16_t *)src)[i]);
    case CPU_BF16: return attnref_bf16_to_f32(((const uint16_t *)src)[i]);
    default: return ((const float *)src)[i];
    }
}

AI size_t dt_size(const int dtype)
{
    return dtype == CPU_F32 ? 4 : 2;
}

/* ---- scores ------------------------------------------------------------------------------- */

AI void sc_tile(const float *q, size_t ldq, const float *kt, size_t ldk, int64_t D, float sigma,
                float *s, size_t lds, const int R, __m256 *mx, __m256 *mn)
{
    __m256 a0[CPU_MR], a1[CPU_MR];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
        a0[r] = a1[r] = _mm256_setzero_ps();
#pragma GCC unroll 4
    for (int64_t d = 0; d < D; d++) {
        const float *k = kt + (size_t)d * ldk;
        const __m256 k0 = _mm256_load_ps(k), k1 = _mm256_load_ps(k + 8);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            const __m256 qb = _mm256_broadcast_ss(q + (size_t)r * ldq + (size_t)d);
            a0[r] = _mm256_fmadd_ps(qb, k0, a0[r]);
            a1[r] = _mm256_fmadd_ps(qb, k1, a1[r]);
        }
    }
    const __m256 sv = _mm256_set1_ps(sigma);
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
        const __m256 v0 = _mm256_mul_ps(a0[r], sv), v1 = _mm256_mul_ps(a1[r], sv);
        _mm256_store_ps(s + (size_t)r * lds, v0);
        _mm256_store_ps(s + (size_t)r * lds + 8, v1);
        if (mx) {
            /* x_max's step, in its column order (a NaN score yields the running value), and
             * the same for the least value */
            mx[r] = _mm256_max_ps(v1, _mm256_max_ps(v0, mx[r]));
            mn[r] = _mm256_min_ps(v1, _mm256_min_ps(v0, mn[r]));
        }
    }
}

/* The scores of ncols columns (a multiple of CPU_NR), with the rows' running max and min where
 * mx is not NULL. */
AI void scores_mm(const float *q, size_t ldq, int nrows, const float *kt, size_t ldk, int ncols,
                  int64_t D, float sigma, float *s, size_t lds, __m256 *mx, __m256 *mn)
{
    for (int c0 = 0; c0 < ncols; c0 += CPU_NR) {
        const float *k = kt + c0;
        float *sc = s + c0;
        switch (nrows) {
        case 1: sc_tile(q, ldq, k, ldk, D, sigma, sc, lds, 1, mx, mn); break;
        case 2: sc_tile(q, ldq, k, ldk, D, sigma, sc, lds, 2, mx, mn); break;
        case 3: sc_tile(q, ldq, k, ldk, D, sigma, sc, lds, 3, mx, mn); break;
        case 4: sc_tile(q, ldq, k, ldk, D, sigma, sc, lds, 4, mx, mn); break;
        case 5: sc_tile(q, ldq, k, ldk, D, sigma, sc, lds, 5, mx, mn); break;
        default: sc_tile(q, ldq, k, ldk, D, sigma, sc, lds, 6, mx, mn); break;
        }
    }
}

static void x_scores(const float *q, size_t ldq, int nrows, const float *kt, size_t ldk, int ncols,
                     int64_t D, float sigma, float *s, size_t lds)
{
    scores_mm(q, ldq, nrows, kt, ldk, ncols, D, sigma, s, lds, NULL, NULL);
}

/* ---- P.V ---------------------------------------------------------------------------------- */

AI void pv_tile(const float *p, size_t ldp, const float *v, size_t ldv, int nkeys,
                const float *corr, float *o, size_t ldo, const int R)
{
    __m256 a0[CPU_MR], a1[CPU_MR];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
        const __m256 cr = _mm256_broadcast_ss(corr + r);
        a0[r] = _mm256_mul_ps(_mm256_load_ps(o + (size_t)r * ldo), cr);
        a1[r] = _mm256_mul_ps(_mm256_load_ps(o + (size_t)r * ldo + 8), cr);
    }
#pragma GCC unroll 4
    for (int c = 0; c < nkeys; c++) {
        const float *vr = v + (size_t)c * ldv;
        const __m256 v0 = _mm256_load_ps(vr), v1 = _mm256_load_ps(vr + 8);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            const __m256 pb = _mm256_broadcast_ss(p + (size_t)r * ldp + (size_t)c);
            a0[r] = _mm256_fmadd_ps(pb, v0, a0[r]);
            a1[r] = _mm256_fmadd_ps(pb, v1, a1[r]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; r++) {
        _mm256_store_ps(o + (size_t)r * ldo, a0[r]);
        _mm256_store_ps(o + (size_t)r * ldo + 8, a1[r]);
    }
}

static void x_pv(const float *p, size_t ldp, int nrows, const float *v, size_t ldv, int nkeys,
                 int ncols, const float *corr, float *o, size_t ldo)
{
    for (int e0 = 0; e0 < ncols; e0 += CPU_NR) {
        const float *ve = v + e0;
        float *oe = o + e0;
        switch (nrows) {
        case 1: pv_tile(p, ldp, ve, ldv, nkeys, corr, oe, ldo, 1); break;
        case 2: pv_tile(p, ldp, ve, ldv, nkeys, corr, oe, ldo, 2); break;
        case 3: pv_tile(p, ldp, ve, ldv, nkeys, corr, oe, ldo, 3); break;
        case 4: pv_tile(p, ldp, ve, ldv, nkeys, corr, oe, ldo, 4); break;
        case 5: pv_tile(p, ldp, ve, ldv, nkeys, corr, oe, ldo, 5); break;
        default: pv_tile(p, ldp, ve, ldv, nkeys, corr, oe, ldo, 6); break;
        }
    }
}

/* ---- the unpacked (decode) kernels ---------------------------------------------------------- */

/* 8 sums: element t is the sum of the lanes of v[t]. */
AI __m256 hsum8x8(const __m256 v[8])
{
    const __m256 a = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
    const __m256 b = _mm256_hadd_ps(_mm256_hadd_ps(v[4], v[5]), _mm256_hadd_ps(v[6], v[7]));
    return _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
}

/* Rows r < R (<= 4) against the key rows at k0 and k1, scaled: lane 2r of the
 * result is row r's score for key k0, lane 2r + 1 for key k1 (lanes of rows >= R are 0).  Each
 * q chunk is loaded once for both keys and each converted K chunk is used by every row; the 2R
 * accumulators stay in registers and one horizontal reduction serves all of them.  The two
 * keys' rows may be anywhere (two pages). */
AI __m256 sr_pair(const float *q, size_t ldq, const void *k0, const void *k1, const int dtype,
                  int64_t D, __m256 sv, const int R, pfq *pq, const int L1)
{
    __m256 a[CPU_DR], b[CPU_DR];
#pragma GCC unroll 4
    for (int r = 0; r < CPU_DR; r++)
        a[r] = b[r] = _mm256_setzero_ps();
    int64_t d = 0;
    for (; d + 8 <= D; d += 8) {
        if (pq)
            pfq_step(pq, L1);
        const __m256 ka = load8(k0, dtype, d), kb = load8(k1, dtype, d);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const __m256 qv = _mm256_loadu_ps(q + (size_t)r * ldq + (size_t)d);
            a[r] = _mm256_fmadd_ps(qv, ka, a[r]);
            b[r] = _mm256_fmadd_ps(qv, kb, b[r]);
        }
    }
    if (d < D) {
        /* The D tail into lane 0 (the lanes are summed next). */
        float ta[CPU_DR], tb[CPU_DR];
        for (int r = 0; r < R; r++)
            ta[r] = tb[r] = 0.0f;
        for (; d < D; d++) {
            const float x = load1(k0, dtype, d), y = load1(k1, dtype, d);
            for (int r = 0; r < R; r++) {
                ta[r] += q[(size_t)r * ldq + (size_t)d] * x;
                tb[r] += q[(size_t)r * ldq + (size_t)d] * y;
            }
        }
        for (int r = 0; r < R; r++) {
            a[r] = _mm256_add_ps(a[r], _mm256_set_ps(0, 0, 0, 0, 0, 0, 0, ta[r]));
            b[r] = _mm256_add_ps(b[r], _mm256_set_ps(0, 0, 0, 0, 0, 0, 0, tb[r]));
        }
    }
    const __m256 w[8] = {a[0], b[0], a[1], b[1], a[2], b[2], a[3], b[3]};
    return _mm256_mul_ps(hsum8x8(w), sv);
}

/* One row's step of sr_tri: its q chunk loaded once into a register and used by the three keys'
 * FMAs.  The empty asm keeps GCC from folding the load into each of them (three loads of the same
 * chunk, twelve vector loads for twelve FMAs); with the named accumulators below and the direct
 * stores in scores_runs_dt, f16 scores took 34 ticks a key in the L2, not 39 (README, "The
 * scores' loads"). */
#define TRI_ROW(QR, A, B, E)                                                                       \
    do {                                                                                           \
        __m256 qv_ = _mm256_loadu_ps((QR) + d);                                                    \
        __asm__("" : "+x"(qv_));                                                                   \
        A = _mm256_fmadd_ps(qv_, ka, A);                                                           \
        B = _mm256_fmadd_ps(qv_, kb, B);                                                           \
        E = _mm256_fmadd_ps(qv_, ke, E);                                                           \
    } while (0)

/* sr_pair over three keys: keys k0 and k1 in the result as sr_pair's, k2's scores in lanes r < R of
 * *t2.  Twelve accumulators: at the FMA ports' rate each gets an FMA every sixth cycle, more than
 * an FMA's latency, where sr_pair's eight each wait on their last one (in the L2, 57 cycles a key
 * of a 4-row group against 32 for its FMAs: README, "A Zen 3 again").  Each key's lanes sum in
 * sr_pair's order and reduce by hsum8x8's tree, so every score has sr_pair's bits.  The
 * accumulators are twelve named variables, not arrays: with arrays, GCC kept the loop's pointers
 * on the stack and spilled accumulators once q had a register of its own (README, "The scores'
 * loads"). */
AI __m256 sr_tri(const float *q, size_t ldq, const void *k0, const void *k1, const void *k2,
                 const int dtype, int64_t D, __m256 sv, const int R, pfq *pq, const int L1,
                 __m128 *t2)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0,
           e0 = a0, e1 = a0, e2 = a0, e3 = a0;
    const float *q1 = q + ldq, *q2 = q + 2 * ldq, *q3 = q + 3 * ldq;
    int64_t d = 0;
    for (; d + 8 <= D; d += 8) {
        pfq_step(pq, L1);
        const __m256 ka = load8(k0, dtype, d), kb = load8(k1, dtype, d), ke = load8(k2, dtype, d);
        TRI_ROW(q, a0, b0, e0);
        if (R > 1)
            TRI_ROW(q1, a1, b1, e1);
        if (R > 2)
            TRI_ROW(q2, a2, b2, e2);
        if (R > 3)
            TRI_ROW(q3, a3, b3, e3);
    }
    if (d < D) {
        /* The D tail into lane 0, as sr_pair. */
        float ta[CPU_DR], tb[CPU_DR], te[CPU_DR];
        for (int r = 0; r < R; r++)
            ta[r] = tb[r] = te[r] = 0.0f;
        for (; d < D; d++) {
            const float x = load1(k0, dtype, d), y = load1(k1, dtype, d), z = load1(k2, dtype, d);
            for (int r = 0; r < R; r++) {
                ta[r] += q[(size_t)r * ldq + (size_t)d] * x;
                tb[r] += q[(size_t)r * ldq + (size_t)d] * y;
                te[r] += q[(size_t)r * ldq + (size_t)d] * z;
            }
        }
#define TRI_TAIL(r, A, B, E)                                                                       \
    do {                                                                                           \
        A = _mm256_add_ps(A, _mm256_set_ps(0, 0, 0, 0, 0, 0, 0, ta[r]));                           \
        B = _mm256_add_ps(B, _mm256_set_ps(0, 0, 0, 0, 0, 0, 0, tb[r]));                           \
        E = _mm256_add_ps(E, _mm256_set_ps(0, 0, 0, 0, 0, 0, 0, te[r]));                           \
    } while (0)
        TRI_TAIL(0, a0, b0, e0);
        if (R > 1)
            TRI_TAIL(1, a1, b1, e1);
        if (R > 2)
            TRI_TAIL(2, a2, b2, e2);
        if (R > 3)
            TRI_TAIL(3, a3, b3, e3);
#undef TRI_TAIL
    }
    /* hsum8x8's tree on four vectors: each 128-bit half by two hadds, then low half + high. */
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(e0, e1), _mm256_hadd_ps(e2, e3));
    *t2 = _mm_mul_ps(_mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)),
                     _mm256_castps256_ps128(sv));
    const __m256 w[8] = {a0, b0, a1, b1, a2, b2, a3, b3};
    return _mm256_mul_ps(hsum8x8(w), sv);
}
#undef TRI_ROW

AI void scores_rows_dt(const float *q, size_t ldq, int nrows, const void *src, const int dtype,
                       int64_t rstride, int nk, int64_t D, float sigma, float *s, size_t lds,
                       const int R)
{
    (void)nrows;
    const __m256 sv = _mm256_set1_ps(sigma);
    int c = 0;
    /* Keys in pairs: the result's low half holds rows 0-1, its high half rows 2-3, each row's
     * two scores adjacent, so each row takes one 8-byte store. */
    for (; c + 2 <= nk; c += 2) {
        const char *k0 = (const char *)src + (size_t)((int64_t)c * rstride) * dt_size(dtype);
        const __m256 t =
            sr_pair(q, ldq, k0, k0 + (size_t)rstride * dt_size(dtype), dtype, D, sv, R, NULL, 1);
        const __m128 lo = _mm256_castps256_ps128(t), hi = _mm256_extractf128_ps(t, 1);
        _mm_storel_pi((__m64 *)(s + (size_t)c), lo);
        if (R > 1)
            _mm_storeh_pi((__m64 *)(s + lds + (size_t)c), lo);
        if (R > 2)
            _mm_storel_pi((__m64 *)(s + 2 * lds + (size_t)c), hi);
        if (R > 3)
            _mm_storeh_pi((__m64 *)(s + 3 * lds + (size_t)c), hi);
    }
    if (c < nk) {
        /* A last key: the pair kernel with the key read twice (never the next). */
        const char *k0 = (const char *)src + (size_t)((int64_t)c * rstride) * dt_size(dtype);
        float ta[8];
        _mm256_storeu_ps(ta, sr_pair(q, ldq, k0, k0, dtype, D, sv, R, NULL, 1));
        for (int r = 0; r < R; r++)
            s[(size_t)r * lds + (size_t)c] = ta[2 * r];
    }
}

#define SR_ROWS(DT)                                                                                \
    switch (nrows) {                                                                               \
    case 1: scores_rows_dt(q, ldq, nrows, src, DT, rstride, nk, D, sigma, s, lds, 1); break;       \
    case 2: scores_rows_dt(q, ldq, nrows, src, DT, rstride, nk, D, sigma, s, lds, 2); break;       \
    case 3: scores_rows_dt(q, ldq, nrows, src, DT, rstride, nk, D, sigma, s, lds, 3); break;       \
    default: scores_rows_dt(q, ldq, nrows, src, DT, rstride, nk, D, sigma, s, lds, 4); break;      \
    }

static void x_scores_rows(const float *q, size_t ldq, int nrows, const void *src, int dtype,
                          int64_t rstride, int nk, int64_t D, float sigma, float *s, size_t lds)
{
    switch (dtype) {
    case CPU_F16: SR_ROWS(CPU_F16) break;
    case CPU_BF16: SR_ROWS(CPU_BF16) break;
    default: SR_ROWS(CPU_F32) break;
    }
}

AI void pv_rows_dt(const float *p, size_t ldp, const void *src, const int dtype, int64_t rstride,
                   int nkeys, int64_t Dv, const float *corr, float *o, size_t ldo, const int R)
{
    int64_t e0 = 0;
    for (; e0 + 16 <= Dv; e0 += 16) {
        __m256 a0[CPU_DR], a1[CPU_DR];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const __m256 cr = _mm256_broadcast_ss(corr + r);
            a0[r] = _mm256_mul_ps(_mm256_load_ps(o + (size_t)r * ldo + (size_t)e0), cr);
            a1[r] = _mm256_mul_ps(_mm256_load_ps(o + (size_t)r * ldo + (size_t)e0 + 8), cr);
        }
        for (int c = 0; c < nkeys; c++) {
            const int64_t row = (int64_t)c * rstride + e0;
            const __m256 v0 = load8(src, dtype, row), v1 = load8(src, dtype, row + 8);
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                const __m256 pb = _mm256_broadcast_ss(p + (size_t)r * ldp + (size_t)c);
                a0[r] = _mm256_fmadd_ps(pb, v0, a0[r]);
                a1[r] = _mm256_fmadd_ps(pb, v1, a1[r]);
            }
        }
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            _mm256_store_ps(o + (size_t)r * ldo + (size_t)e0, a0[r]);
            _mm256_store_ps(o + (size_t)r * ldo + (size_t)e0 + 8, a1[r]);
        }
    }
    /* Fewer than 16 columns left: element by element (never reading past V's row). */
    for (int r = 0; r < R; r++)
        for (int64_t e = e0; e < Dv; e++)
            o[(size_t)r * ldo + (size_t)e] *= corr[r];
    for (int c = 0; c < nkeys && e0 < Dv; c++)
        for (int64_t e = e0; e < Dv; e++) {
            const float ve = load1(src, dtype, (int64_t)c * rstride + e);
            for (int r = 0; r < R; r++)
                o[(size_t)r * ldo + (size_t)e] += p[(size_t)r * ldp + (size_t)c] * ve;
        }
}

#define PV_ROWS(DT)                                                                                \
    switch (nrows) {                                                                               \
    case 1: pv_rows_dt(p, ldp, src, DT, rstride, nkeys, Dv, corr, o, ldo, 1); break;               \
    case 2: pv_rows_dt(p, ldp, src, DT, rstride, nkeys, Dv, corr, o, ldo, 2); break;               \
    case 3: pv_rows_dt(p, ldp, src, DT, rstride, nkeys, Dv, corr, o, ldo, 3); break;               \
    default: pv_rows_dt(p, ldp, src, DT, rstride, nkeys, Dv, corr, o, ldo, 4); break;              \
    }

static void x_pv_rows(const float *p, size_t ldp, int nrows, const void *src, int dtype,
                      int64_t rstride, int nkeys, int64_t Dv, const float *corr, float *o,
                      size_t ldo)
{
    switch (dtype) {
    case CPU_F16: PV_ROWS(CPU_F16) break;
    case CPU_BF16: PV_ROWS(CPU_BF16) break;
    default: PV_ROWS(CPU_F32) break;
    }
}

/* ---- the decode kernels over runs of rows ------------------------------------------------ */

/* Store lanes 2r, 2r + 1 of t (rows r < R, keys c and c + 1) into s. */
AI void store_pair(__m256 t, float *s, size_t lds, int c, const int R)
{
    const __m128 lo = _mm256_castps256_ps128(t), hi = _mm256_extractf128_ps(t, 1);
    _mm_storel_pi((__m64 *)(s + (size_t)c), lo);
    if (R > 1)
        _mm_storeh_pi((__m64 *)(s + lds + (size_t)c), lo);
    if (R > 2)
        _mm_storel_pi((__m64 *)(s + 2 * lds + (size_t)c), hi);
    if (R > 3)
        _mm_storeh_pi((__m64 *)(s + 3 * lds + (size_t)c), hi);
}

AI void scores_runs_dt(const float *q, size_t ldq, const cpu_run *runs, int nruns, const int dtype,
                       int64_t D, float sigma, float *s, size_t lds, const cpu_run *pf, int npf,
                       const int R, const int L1)
{
    const size_t esz = dt_size(dtype);
    int nk = 0;
    for (int u = 0; u < nruns; u++)
        nk += runs[u].n;
    const __m256 sv = _mm256_set1_ps(sigma);
    /* f16 and bf16 keys in threes (sr_tri), then in pairs, then a last key; f32 in pairs.  On a
     * Zen 3, one thread, sr_tri took f16 decode from 13.0 to 14.0 GB/s in the L3 and 11.7 to 12.4
     * from memory, and bf16 as far as the noise shows; f32 lost 3 and 8 % (bound by memory, with
     * twice the bytes per FMA: README, "The AVX2 scores in threes"). */
    const int tri = dtype != CPU_F32;
    pfq pq;
    pfq_init(&pq, pf, npf, D, esz, (int64_t)(tri ? nk / 3 : nk / 2) * (D / 8)); /* per chunk */
    kit it = {runs, 0, 0};
    int c = 0;
    for (; tri && c + 3 <= nk; c += 3) {
        const char *k0 = kit_next(&it, esz), *k1 = kit_next(&it, esz), *k2 = kit_next(&it, esz);
        __m128 t2;
        store_pair(sr_tri(q, ldq, k0, k1, k2, dtype, D, sv, R, &pq, L1, &t2), s, lds, c, R);
        /* Each lane stored from its register: a stack copy read back as four scalars cost 1-1.5
         * ticks a key in the L2 (README, "The scores' loads"). */
        _mm_store_ss(s + (size_t)c + 2, t2);
        if (R > 1)
            _mm_store_ss(s + lds + (size_t)c + 2, _mm_movehdup_ps(t2));
        if (R > 2)
            _mm_store_ss(s + 2 * lds + (size_t)c + 2, _mm_movehl_ps(t2, t2));
        if (R > 3)
            _mm_store_ss(s + 3 * lds + (size_t)c + 2, _mm_shuffle_ps(t2, t2, 3));
    }
    for (; c + 2 <= nk; c += 2) {
        const char *k0 = kit_next(&it, esz), *k1 = kit_next(&it, esz);
        store_pair(sr_pair(q, ldq, k0, k1, dtype, D, sv, R, &pq, L1), s, lds, c, R);
    }
    if (c < nk) {
        const char *k0 = kit_next(&it, esz);
        float ta[8];
        _mm256_storeu_ps(ta, sr_pair(q, ldq, k0, k0, dtype, D, sv, R, NULL, L1));
        for (int r = 0; r < R; r++)
            s[(size_t)r * lds + (size_t)c] = ta[2 * r];
    }
    pfq_rest(&pq, L1);
}

#define SRR_ROWS(DT)                                                                               \
    switch (nrows) {                                                                               \
    case 1: scores_runs_dt(q, ldq, runs, nruns, DT, D, sigma, s, lds, pf, npf, 1, L1); break;      \
    case 2: scores_runs_dt(q, ldq, runs, nruns, DT, D, sigma, s, lds, pf, npf, 2, L1); break;      \
    case 3: scores_runs_dt(q, ldq, runs, nruns, DT, D, sigma, s, lds, pf, npf, 3, L1); break;      \
    default: scores_runs_dt(q, ldq, runs, nruns, DT, D, sigma, s, lds, pf, npf, 4, L1); break;     \
    }

AI void scores_runs_any(const float *q, size_t ldq, int nrows, const cpu_run *runs, int nruns,
                        int dtype, int64_t D, float sigma, float *s, size_t lds, const cpu_run *pf,
                        int npf, const int L1)
{
    switch (dtype) {
    case CPU_F16: SRR_ROWS(CPU_F16) break;
    case CPU_BF16: SRR_ROWS(CPU_BF16) break;
    default: SRR_ROWS(CPU_F32) break;
    }
}

static void x_scores_runs_l1(const float *q, size_t ldq, int nrows, const cpu_run *runs, int nruns,
                             int dtype, int64_t D, float sigma, float *s, size_t lds,
                             const cpu_run *pf, int npf)
{
    scores_runs_any(q, ldq, nrows, runs, nruns, dtype, D, sigma, s, lds, pf, npf, 1);
}

static void x_scores_runs_l2(const float *q, size_t ldq, int nrows, const cpu_run *runs, int nruns,
                             int dtype, int64_t D, float sigma, float *s, size_t lds,
                             const cpu_run *pf, int npf)
{
    scores_runs_any(q, ldq, nrows, runs, nruns, dtype, D, sigma, s, lds, pf, npf, 0);
}

/* Columns e0 .. e0 + 8 NC of O's rows r < R (NC <= 3) += the run list's keys' V rows weighted by
 * p, after scaling by corr where not NULL; a prefetch step per key.  Three chunks keep twelve
 * accumulators, each with an FMA every sixth cycle at the ports' rate, more than an FMA's
 * latency; each column still sums its keys in order, so the block width never changes a bit. */
AI void pv_block(const float *p, size_t ldp, const cpu_run *runs, int nruns, const int dtype,
                 int64_t e0, const float *corr, float *o, size_t ldo, pfq *pq, const int R,
                 const int NC, const int L1)
{
    __m256 a[CPU_DR][3];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
#pragma GCC unroll 3
        for (int j = 0; j < NC; j++) {
            a[r][j] = _mm256_load_ps(o + (size_t)r * ldo + (size_t)e0 + 8 * j);
            if (corr)
                a[r][j] = _mm256_mul_ps(a[r][j], _mm256_broadcast_ss(corr + r));
        }
    }
    int c = 0;
    for (int u = 0; u < nruns; u++) {
        const char *src = runs[u].src;
        const int64_t rs = runs[u].rstride;
        for (int t = 0; t < runs[u].n; t++, c++) {
            pfq_step(pq, L1);
            const int64_t row = (int64_t)t * rs + e0;
            __m256 v[3];
#pragma GCC unroll 3
            for (int j = 0; j < NC; j++)
                v[j] = load8(src, dtype, row + 8 * j);
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                const __m256 pb = _mm256_broadcast_ss(p + (size_t)r * ldp + (size_t)c);
#pragma GCC unroll 3
                for (int j = 0; j < NC; j++)
                    a[r][j] = _mm256_fmadd_ps(pb, v[j], a[r][j]);
            }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 3
        for (int j = 0; j < NC; j++)
            _mm256_store_ps(o + (size_t)r * ldo + (size_t)e0 + 8 * j, a[r][j]);
}

AI void pv_runs_dt(const float *p, size_t ldp, const cpu_run *runs, int nruns, const int dtype,
                   int64_t Dv, const float *corr, float *o, size_t ldo, const cpu_run *pf, int npf,
                   const int R, const int L1)
{
    const size_t esz = dt_size(dtype);
    int nkeys = 0;
    for (int u = 0; u < nruns; u++)
        nkeys += runs[u].n;
    /* The columns pv_rows_dt takes in blocks of 16, here for f16 and bf16 in blocks of 24 while
     * what is left is not 32 (then two of 16), the same sums either way; the rest element by
     * element as there.  f32 keeps 16: it is bound by memory (as in scores_runs_dt). */
    const int64_t vec = Dv - Dv % 16;
    const int wide = dtype != CPU_F32;
    int nblk = 0;
    for (int64_t e0 = 0; e0 < vec; nblk++)
        e0 += wide && vec - e0 >= 24 && vec - e0 != 32 ? 24 : 16;
    pfq pq;
    pfq_init(&pq, pf, npf, Dv, esz, (int64_t)nkeys * nblk); /* a step per key and block */
    int64_t e0 = 0;
    while (e0 < vec) {
        if (wide && vec - e0 >= 24 && vec - e0 != 32) {
            pv_block(p, ldp, runs, nruns, dtype, e0, corr, o, ldo, &pq, R, 3, L1);
            e0 += 24;
        } else {
            pv_block(p, ldp, runs, nruns, dtype, e0, corr, o, ldo, &pq, R, 2, L1);
            e0 += 16;
        }
    }
    /* Fewer than 16 columns left: element by element, as pv_rows_dt. */
    for (int r = 0; corr && r < R && e0 < Dv; r++)
        for (int64_t e = e0; e < Dv; e++)
            o[(size_t)r * ldo + (size_t)e] *= corr[r];
    int c = 0;
    for (int u = 0; u < nruns && e0 < Dv; u++)
        for (int t = 0; t < runs[u].n; t++, c++)
            for (int64_t e = e0; e < Dv; e++) {
                const float ve = load1(runs[u].src, dtype, (int64_t)t * runs[u].rstride + e);
                for (int r = 0; r < R; r++)
                    o[(size_t)r * ldo + (size_t)e] += p[(size_t)r * ldp + (size_t)c] * ve;
            }
    pfq_rest(&pq, L1);
}

#define PVR_ROWS(DT)                                                                               \
    switch (nrows) {                                                                               \
    case 1: pv_runs_dt(p, ldp, runs, nruns, DT, Dv, corr, o, ldo, pf, npf, 1, L1); break;          \
    case 2: pv_runs_dt(p, ldp, runs, nruns, DT, Dv, corr, o, ldo, pf, npf, 2, L1); break;          \
    case 3: pv_runs_dt(p, ldp, runs, nruns, DT, Dv, corr, o, ldo, pf, npf, 3, L1); break;          \
    default: pv_runs_dt(p, ldp, runs, nruns, DT, Dv, corr, o, ldo, pf, npf, 4, L1); break;         \
    }

AI void pv_runs_any(const float *p, size_t ldp, int nrows, const cpu_run *runs, int nruns,
                    int dtype, int64_t Dv, const float *corr, float *o, size_t ldo,
                    const cpu_run *pf, int npf, const int L1)
{
    switch (dtype) {
    case CPU_F16: PVR_ROWS(CPU_F16) break;
    case CPU_BF16: PVR_ROWS(CPU_BF16) break;
    default: PVR_ROWS(CPU_F32) break;
    }
}

static void x_pv_runs_l1(const float *p, size_t ldp, int nrows, const cpu_run *runs, int nruns,
                         int dtype, int64_t Dv, const float *corr, float *o, size_t ldo,
                         const cpu_run *pf, int npf)
{
    pv_runs_any(p, ldp, nrows, runs, nruns, dtype, Dv, corr, o, ldo, pf, npf, 1);
}

static void x_pv_runs_l2(const float *p, size_t ldp, int nrows, const cpu_run *runs, int nruns,
                         int dtype, int64_t Dv, const float *corr, float *o, size_t ldo,
                         const cpu_run *pf, int npf)
{
    pv_runs_any(p, ldp, nrows, runs, nruns, dtype, Dv, corr, o, ldo, pf, npf, 0);
}

/* ---- exp, max ----------------------------------------------------------------------------- */

/* cpu_expf (cpu_exp.h) on 8 lanes, its multiply-adds as FMAs as there, so a lane and the scalar
 * tail give the same value bit for bit.  The clamps keep a NaN: MINPS/MAXPS return their second
 * operand when either is NaN.  Two shortcuts for the x - m of a softmax step, each giving the
 * same bits on the inputs it is used for:
 *   EXP_LE, x <= 0 or NaN (m the row's max or more): the upper clamp changes nothing;
 *   EXP_NARROW, x in [-86, 0] or NaN (a row whose scores span less than 86): neither clamp
 *   changes anything, and 2^n is applied in one step, an integer add to y's exponent field:
 *   n = round(x / ln 2) >= -125 there, so y * 2^n is normal and exact, the value the two steps
 *   give; from a NaN, n is INT_MIN, whose shift adds 0, and y * 1 is y's NaN. */
enum { EXP_ALL, EXP_LE, EXP_NARROW };

AI __m256 exp256_c(__m256 x, const int range)
{
    if (range == EXP_ALL)
        x = _mm256_min_ps(_mm256_set1_ps(CPU_EXP_HI), x);
    if (range != EXP_NARROW)
        x = _mm256_max_ps(_mm256_set1_ps(CPU_EXP_LO), x);
    const __m256 magic = _mm256_set1_ps(CPU_EXP_MAGIC);
    const __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(CPU_EXP_LOG2E), magic);
    const __m256 fn = _mm256_sub_ps(t, magic);
    /* fn is an integer in [-159, 129]; from a NaN, n is INT_MIN, whose shifts below add 0 to
     * y's exponent field (the integer in t's low bits would be garbage there). */
    const __m256i n = _mm256_cvttps_epi32(fn);
    __m256 r = _mm256_fnmadd_ps(fn, _mm256_set1_ps(CPU_EXP_C1), x);
    r = _mm256_fnmadd_ps(fn, _mm256_set1_ps(CPU_EXP_C2), r);
    const __m256 r2 = _mm256_mul_ps(r, r);
    const __m256 a = _mm256_fmadd_ps(_mm256_set1_ps(CPU_EXP_P4), r, _mm256_set1_ps(CPU_EXP_P5));
    const __m256 b = _mm256_fmadd_ps(_mm256_set1_ps(CPU_EXP_P2), r, _mm256_set1_ps(CPU_EXP_P3));
    const __m256 c = _mm256_fmadd_ps(_mm256_set1_ps(CPU_EXP_P0), r, _mm256_set1_ps(CPU_EXP_P1));
    const __m256 p = _mm256_fmadd_ps(_mm256_mul_ps(r2, r2), c, _mm256_fmadd_ps(r2, b, a));
    const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, r2, r), _mm256_set1_ps(1.0f));
    if (range == EXP_NARROW)
        return _mm256_castsi256_ps(
            _mm256_add_epi32(_mm256_castps_si256(y), _mm256_slli_epi32(n, 23)));
    const __m256i n1 = _mm256_srai_epi32(n, 1), n2 = _mm256_sub_epi32(n, n1);
    /* y * 2^n1 by adding n1 to y's exponent field: y is in [0.7, 1.42] and n1 in [-80, 64], so
     * the product is normal and exact, the value the multiply gives, without taking an FMA
     * port.  2^n2 is still a multiply: that product may be subnormal and round. */
    const __m256 y1 =
        _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(y), _mm256_slli_epi32(n1, 23)));
    const __m256 s2 =
        _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, _mm256_set1_epi32(127)), 23));
    return _mm256_mul_ps(y1, s2);
}

AI __m256 exp256(__m256 x)
{
    return exp256_c(x, EXP_ALL);
}

AI float hsum256(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* exp(x[c] - m) for the whole vectors of x[0..n), stored, and the sum of their lanes (hsum256).
 * range: EXP_ALL for any x; EXP_LE or EXP_NARROW where every x[c] - m is in that range (a
 * softmax step whose m is at least the row's max), the same values in fewer operations. */
AI float exp_sum_r(float *x, int n, float m, const int range)
{
    const __m256 mv = _mm256_set1_ps(m);
    __m256 acc = _mm256_setzero_ps();
    for (int c = 0; c + 8 <= n; c += 8) {
        const __m256 y = exp256_c(_mm256_sub_ps(_mm256_loadu_ps(x + c), mv), range);
        _mm256_storeu_ps(x + c, y);
        acc = _mm256_add_ps(acc, y);
    }
    return hsum256(acc);
}

static float x_exp_sum(float *x, int n, float m)
{
    float sum = exp_sum_r(x, n, m, EXP_ALL);
    for (int c = n / 8 * 8; c < n; c++) {
        x[c] = cpu_expf(x[c] - m);
        sum += x[c];
    }
    return sum;
}

/* cpu_softcapf (cpu_exp.h) on 8 lanes, operation for operation: both branches, blended. */
AI __m256 softcap256(__m256 s, __m256 cv, __m256 rcv)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 y = _mm256_mul_ps(s, rcv);
    const __m256 ay = _mm256_andnot_ps(sign, y);
    const __m256 z = _mm256_mul_ps(y, y);
    __m256 t =
        _mm256_add_ps(_mm256_mul_ps(_mm256_set1_ps(CPU_TANH_T0), z), _mm256_set1_ps(CPU_TANH_T1));
    t = _mm256_add_ps(_mm256_mul_ps(t, z), _mm256_set1_ps(CPU_TANH_T2));
    t = _mm256_add_ps(_mm256_mul_ps(t, z), _mm256_set1_ps(CPU_TANH_T3));
    t = _mm256_add_ps(_mm256_mul_ps(t, z), _mm256_set1_ps(CPU_TANH_T4));
    const __m256 small = _mm256_add_ps(s, _mm256_mul_ps(s, _mm256_mul_ps(z, t)));
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 e = exp256(_mm256_add_ps(ay, ay));
    const __m256 big = _mm256_mul_ps(
        cv, _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one))));
    /* y < 0: -big (a NaN lane compares false both ways and keeps big, NaN). */
    const __m256 neg = _mm256_cmp_ps(y, _mm256_setzero_ps(), _CMP_LT_OQ);
    const __m256 bigs = _mm256_blendv_ps(big, _mm256_xor_ps(big, sign), neg);
    const __m256 is_small = _mm256_cmp_ps(ay, _mm256_set1_ps(CPU_TANH_SMALL), _CMP_LT_OQ);
    return _mm256_blendv_ps(bigs, small, is_small);
}

static void x_softcap(float *s, int n, float cap, float rcap)
{
    const __m256 cv = _mm256_set1_ps(cap), rcv = _mm256_set1_ps(rcap);
    int c = 0;
    for (; c + 8 <= n; c += 8)
        _mm256_storeu_ps(s + c, softcap256(_mm256_loadu_ps(s + c), cv, rcv));
    for (; c < n; c++)
        s[c] = cpu_softcapf(s[c], cap, rcap);
}

static void x_alibi(float *s, int n, float slope, int64_t base)
{
    const float bf = (float)base;
    const __m256 sign = _mm256_set1_ps(-0.0f), mv = _mm256_set1_ps(slope);
    const __m256 step = _mm256_set_ps(7, 6, 5, 4, 3, 2, 1, 0);
    int c = 0;
    for (; c + 8 <= n; c += 8) {
        const __m256 col = _mm256_add_ps(_mm256_set1_ps((float)c), step);
        const __m256 d = _mm256_andnot_ps(sign, _mm256_sub_ps(_mm256_set1_ps(bf), col));
        _mm256_storeu_ps(s + c, _mm256_sub_ps(_mm256_loadu_ps(s + c), _mm256_mul_ps(mv, d)));
    }
    for (; c < n; c++) {
        const float d = bf - (float)c;
        s[c] -= slope * (d < 0.0f ? -d : d);
    }
}

static int x_finite(const float *x, int n)
{
    const __m256i expo = _mm256_set1_epi32(0x7f800000);
    __m256i bad = _mm256_setzero_si256();
    int c = 0;
    for (; c + 8 <= n; c += 8) {
        const __m256i e = _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(x + c)), expo);
        bad = _mm256_or_si256(bad, _mm256_cmpeq_epi32(e, expo));
    }
    int ok = _mm256_testz_si256(bad, bad);
    for (; c < n; c++)
        ok &= isfinite(x[c]) != 0;
    return ok;
}

/* The largest lane of a running max vector (x_max's reduction, so both give the same bits). */
AI float hmax256(__m256 acc)
{
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

AI float hmin256(__m256 acc)
{
    __m128 h = _mm_min_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    h = _mm_min_ps(h, _mm_movehl_ps(h, h));
    h = _mm_min_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

static float x_max(const float *x, int n)
{
    __m256 acc = _mm256_set1_ps(-INFINITY);
    int c = 0;
    for (; c + 8 <= n; c += 8)
        acc = _mm256_max_ps(_mm256_loadu_ps(x + c), acc); /* a NaN in x yields acc */
    float m = hmax256(acc);
    for (; c < n; c++)
        if (x[c] > m)
            m = x[c];
    return m;
}

/* softmax_rows (cpu_kern.h): the per-row calls it stands for, in this table's own kernels (so
 * bit for bit those), but ordered in two passes over the group: every row's exclusion, finite
 * check and max first, then every row's exp and sum, so a row's exp does not wait on its own
 * max reduction. */
static void x_softmax_rows(float *s, size_t lds, int nrows, int n, const int *a, const int *z,
                           float *m, float *l, float *corr, unsigned char *bad)
{
    float mn[CPU_MR];
    int live[CPU_MR];
    for (int r = 0; r < nrows; r++) {
        float *sr = s + (size_t)r * lds;
        live[r] = 0;
        corr[r] = 1.0f;
        if (a[r] >= z[r]) {
            memset(sr, 0, (size_t)n * sizeof *sr);
            continue;
        }
        if (!x_finite(sr + a[r], z[r] - a[r]))
            bad[r] = 1;
        for (int c = 0; c < a[r]; c++)
            sr[c] = -INFINITY;
        for (int c = z[r]; c < n; c++)
            sr[c] = -INFINITY;
        const float mb = x_max(sr, n);
        mn[r] = mb > m[r] ? mb : m[r];
        if (mn[r] == -INFINITY) { /* nothing above -inf kept: P = 0, a kept NaN poisons l */
            for (int c = a[r]; c < z[r]; c++)
                if (sr[c] != sr[c])
                    l[r] = NAN;
            memset(sr, 0, (size_t)n * sizeof *sr);
            continue;
        }
        live[r] = 1;
    }
    for (int r = 0; r < nrows; r++) {
        if (!live[r])
            continue;
        const float c = cpu_expf(m[r] - mn[r]);
        corr[r] = c;
        l[r] = l[r] * c + x_exp_sum(s + (size_t)r * lds, n, mn[r]);
        m[r] = mn[r];
    }
}

/* scores_softmax (cpu_kern.h).  When every row keeps the whole tile and n is a multiple of
 * CPU_NR (the inner tiles of a prefill), each row's max and least score are taken from the score
 * tiles while they are in registers, in place of the finite check's and the max's passes over
 * the stored row.  A row with no -inf score and one above -inf then has its softmax step here:
 * its max is x_max's (the same steps in the same order, the same reduction), every x - m_new is
 * <= 0 or NaN (the exp's EXP_LE range; EXP_NARROW's when the least score is within 86 of m_new,
 * the common case), and the scores the finite check would flag, NaN and +inf, show as a NaN
 * sum: a NaN exp, or +inf - +inf once m_new is +inf (the exps of finite x - m_new <= 0 sum to a
 * finite value).  Any other row, and any other block, goes through x_softmax_rows on the stored
 * scores. */
static void x_scores_softmax(const float *q, size_t ldq, int nrows, const float *kt, size_t ldk,
                             int n, int64_t D, float sigma, float *s, size_t lds, const int *a,
                             const int *z, float *m, float *l, float *corr, unsigned char *bad)
{
    const int ncols = (n + CPU_NR - 1) / CPU_NR * CPU_NR;
    int whole = n == ncols;
    for (int r = 0; r < nrows; r++)
        whole &= a[r] == 0 && z[r] == n;
    if (!whole) {
        scores_mm(q, ldq, nrows, kt, ldk, ncols, D, sigma, s, lds, NULL, NULL);
        x_softmax_rows(s, lds, nrows, n, a, z, m, l, corr, bad);
        return;
    }
    __m256 mx[CPU_MR], mn[CPU_MR];
    for (int r = 0; r < CPU_MR; r++) {
        mx[r] = _mm256_set1_ps(-INFINITY);
        mn[r] = _mm256_set1_ps(INFINITY);
    }
    scores_mm(q, ldq, nrows, kt, ldk, ncols, D, sigma, s, lds, mx, mn);
    for (int r = 0; r < nrows; r++) {
        float *sr = s + (size_t)r * lds;
        const float hi = hmax256(mx[r]), lo = hmin256(mn[r]);
        if (!(hi > -INFINITY && lo > -INFINITY)) {
            /* a -inf score, or none but NaN */
            x_softmax_rows(sr, lds, 1, n, a + r, z + r, m + r, l + r, corr + r, bad + r);
            continue;
        }
        const float mnew = hi > m[r] ? hi : m[r];
        const float c = cpu_expf(m[r] - mnew);
        /* x - m_new >= lo - m_new for every score (f32 subtraction is monotonic) */
        const float sum = lo - mnew >= -86.0f ? exp_sum_r(sr, n, mnew, EXP_NARROW)
                                              : exp_sum_r(sr, n, mnew, EXP_LE);
        if (sum != sum)
            bad[r] = 1;
        corr[r] = c;
        l[r] = l[r] * c + sum;
        m[r] = mnew;
    }
}

/* ---- conversions, packing ------------------------------------------------------------------ */

static int x_load_row(const void *src, int dtype, int64_t n, float *dst)
{
    const __m256i expo = _mm256_set1_epi32(0x7f800000);
    __m256i bad = _mm256_setzero_si256();
    int64_t d = 0;
    for (; d + 8 <= n; d += 8) {
        const __m256 x = load8(src, dtype, d);
        _mm256_storeu_ps(dst + d, x);
        const __m256i e = _mm256_and_si256(_mm256_castps_si256(x), expo);
        bad = _mm256_or_si256(bad, _mm256_cmpeq_epi32(e, expo));
    }
    int any = !_mm256_testz_si256(bad, bad);
    for (; d < n; d++) {
        dst[d] = load1(src, dtype, d);
        any |= !isfinite(dst[d]);
    }
    return any;
}

AI void transpose8(__m256 r[8])
{
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    const __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    const __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
    const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
    const __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
    const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
    const __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

AI void pack_kt_dtype(const void *src, const int dtype, int64_t rstride, int nk, int64_t D,
                      float *dst, size_t ldk)
{
    int c = 0;
    for (; c + 8 <= nk; c += 8) {
        int64_t d = 0;
        for (; d + 8 <= D; d += 8) {
            __m256 r[8];
            for (int t = 0; t < 8; t++)
                r[t] = load8(src, dtype, (int64_t)(c + t) * rstride + d);
            transpose8(r);
            for (int t = 0; t < 8; t++)
                _mm256_storeu_ps(dst + (size_t)(d + t) * ldk + (size_t)c, r[t]);
        }
        for (; d < D; d++)
            for (int t = 0; t < 8; t++)
                dst[(size_t)d * ldk + (size_t)(c + t)] =
                    load1(src, dtype, (int64_t)(c + t) * rstride + d);
    }
    for (; c < nk; c++)
        for (int64_t d = 0; d < D; d++)
            dst[(size_t)d * ldk + (size_t)c] = load1(src, dtype, (int64_t)c * rstride + d);
}

static void x_pack_kt(const void *src, int dtype, int64_t rstride, int nk, int64_t D, float *dst,
                      size_t ldk)
{
    /* One instantiation per dtype keeps the conversion out of the inner loop. */
    switch (dtype) {
    case CPU_F16: pack_kt_dtype(src, CPU_F16, rstride, nk, D, dst, ldk); break;
    case CPU_BF16: pack_kt_dtype(src, CPU_BF16, rstride, nk, D, dst, ldk); break;
    default: pack_kt_dtype(src, CPU_F32, rstride, nk, D, dst, ldk); break;
    }
}

static void x_store_row(const float *src, int64_t n, int dtype, void *dst)
{
    int64_t e = 0;
    if (dtype == CPU_F16) {
        uint16_t *h = dst;
        for (; e + 8 <= n; e += 8)
            _mm_storeu_si128((__m128i *)(h + e),
                             _mm256_cvtps_ph(_mm256_loadu_ps(src + e), _MM_FROUND_TO_NEAREST_INT));
        for (; e < n; e++)
            h[e] = attnref_f32_to_f16(src[e]);
    } else if (dtype == CPU_BF16) {
        uint16_t *h = dst;
        const __m256i absm = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
        const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff);
        const __m256i quiet = _mm256_set1_epi32(0x40);
        for (; e + 8 <= n; e += 8) {
            const __m256i x = _mm256_castps_si256(_mm256_loadu_ps(src + e));
            /* RNE: add 0x7fff plus the kept lsb (a carry into the exponent is the right
             * result, up to inf); a NaN keeps its top payload bits and is made quiet. */
            const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), one);
            const __m256i rne =
                _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(bias, lsb)), 16);
            const __m256i nanv = _mm256_or_si256(_mm256_srli_epi32(x, 16), quiet);
            const __m256i isnan = _mm256_cmpgt_epi32(_mm256_and_si256(x, absm), inf);
            const __m256i r = _mm256_blendv_epi8(rne, nanv, isnan);
            const __m128i packed =
                _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
            _mm_storeu_si128((__m128i *)(h + e), packed);
        }
        for (; e < n; e++)
            h[e] = attnref_f32_to_bf16(src[e]);
    } else {
        memcpy(dst, src, (size_t)n * sizeof *src);
    }
}

/* The two tables differ only in where the decode run kernels ask for the next tile's rows:
 * into the L1 (PREFETCHT0) or into the L2 (PREFETCHT1); cpu_options.c chooses (prefetch=). */
#define AVX2_TABLE(SCORES_RUNS, PV_RUNS)                                                           \
    {                                                                                              \
        .name = "avx2", .scores = x_scores, .pv = x_pv, .scores_rows = x_scores_rows,              \
        .pv_rows = x_pv_rows, .exp_sum = x_exp_sum, .softcap = x_softcap, .alibi = x_alibi,        \
        .finite = x_finite, .max = x_max, .load_row = x_load_row, .pack_kt = x_pack_kt,            \
        .store_row = x_store_row, .scores_runs = SCORES_RUNS, .pv_runs = PV_RUNS,                  \
        .softmax_rows = x_softmax_rows, .scores_softmax = x_scores_softmax, .tile_keys = 128,      \
    }

const cpu_kernels cpu_kernels_avx2 = AVX2_TABLE(x_scores_runs_l1, x_pv_runs_l1);
const cpu_kernels cpu_kernels_avx2_l2 = AVX2_TABLE(x_scores_runs_l2, x_pv_runs_l2);
