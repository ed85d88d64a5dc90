/* cpu_kern_avx512_runs.c — the decode run kernels (scores_runs, pv_runs; cpu_kern.h) for the
 * AVX-512 table.  Compiled with the AVX-512 table's flags (AVX-512 F/BW/DQ/VL and AVX2/FMA/F16C);
 * nothing here runs unless cpu_options.c found them all on the CPU.  Where the compiler has it,
 * also with AVX512_BF16 (CPU_HAVE_AVX512BF16): its one instruction here, VDPBF16PS in srp_block,
 * runs only on rows runs_q gave the pairs layout, which it does only where the CPU reports
 * AVX512_BF16.
 *
 * Why: decode reads each K and V row once and does 2 (f32) or 4 (f16/bf16) flop per byte.  At
 * this machine's read bandwidth the 8-lane AVX2 run kernels are compute-bound in f16/bf16 (README,
 * "Decode and the memory roofline"); 16-lane FMAs halve the FMA instructions, and eight keys per
 * step in the scores load each q chunk once for 16 FMAs.  f32 is left to the AVX2 run kernels:
 * it has the arithmetic to spare, and from memory they move as much or more (on a Zen 5, a ZMM
 * f32 version of these kernels moved 0.92-0.96x their GB/s on one core and no more on two, even
 * with this file's queue; README, "What a burst leaves").
 *
 * Numerics: the AVX-512 table keeps the AVX2 scores_rows / pv_rows, and the run kernels must give
 * their values bit for bit, so every lane does what an AVX2 lane does, in the same order:
 * - scores: a ZMM accumulator holds two keys' 8-lane AVX2 accumulators side by side (lanes 0-7
 *   key a, 8-15 key b), each lane an FMA chain over d = lane, lane + 8, ...; the D % 8 tail is the
 *   same scalar sum added to lane 0; the lanes are reduced by the same pairwise tree as the AVX2
 *   hsum8x8 ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)), operands in the same order, then
 *   scaled by sigma;
 * - P.V: a ZMM is 16 columns of O, an FMA per key in key order after O * corr, as the AVX2 pair
 *   of 8-lane vectors; fewer than 16 columns left: the same element-by-element loop.
 * Widening is exact (VCVTPH2PS for f16, a 16-bit shift for bf16).
 * The one exception: bf16 scores with the query rows in runs_q's pairs layout (CPU_BF16P, where
 * the CPU has AVX512_BF16 and pairs_allowed accepts the rows and the scale).  VDPBF16PS adds two
 * exact products per lane and step, half the instructions of the FMAs and no widening, so its
 * sums run in another order: within SPEC.md clause 13's bound, not the AVX2 bits.  It reads
 * subnormal inputs as zero and flushes subnormal results; pairs_allowed bounds what that costs.
 *
 * Prefetch: the AVX2 run kernels' queue (cpu_runs.h), the next tile's rows a cache line per step,
 * the steps spread evenly over the call, two per 8-element chunk of a block's d loop in the
 * scores and two per key and column block in P.V (the lines those read, so every step is the
 * queue's short path; at one step per chunk, two lines a step, the queue's general loop took
 * about 14 % of the scores' time with K in the L2).  Asking for them all at once, or a whole row
 * at a time as these kernels did before, leaves this tile's own loads waiting behind the
 * requests (README, "A Zen 5 again").  Each kernel comes in two instances, the lines asked into
 * the L1 (_l1, PREFETCHT0) or into the L2 (_l2, PREFETCHT1); the backend option prefetch=
 * chooses (cpu_options.h).  On a Zen 4 (32 KiB L1D) the rows asked into the L1 by the earlier queue
 * evicted the current tile's, and the L2 moved 1.5-1.9x the GB/s from memory (README, "A Zen 4");
 * on a Zen 5 (48 KiB) with this queue the L1 moves 3-12 % more on one core (README, "Fewer
 * instructions per key"). */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attnref/dtype.h"
#include "cpu_kern.h"
#include "cpu_kern_avx512_runs.h"
#include "cpu_runs.h"

#define AI static inline __attribute__((always_inline))

/* f16 and bf16 only (dtype CPU_F16 or CPU_BF16, 2 bytes), here and below. */
AI float load1(const void *src, int dtype, int64_t i)
{
    const uint16_t x = ((const uint16_t *)src)[i];
    return dtype == CPU_F16 ? attnref_f16_to_f32(x) : attnref_bf16_to_f32(x);
}

/* 16 bf16 or f16 values widened exactly to f32. */
AI __m512 widen16(__m256i x, const int dtype)
{
    if (dtype == CPU_F16)
        return _mm512_cvtph_ps(x);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(x), 16));
}

/* Elements d..d+7 of row a in lanes 0-7 and of row b in lanes 8-15, widened exactly. */
AI __m512 load_2x8(const char *a, const char *b, const int dtype, int64_t d)
{
    const __m256i x = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)((const uint16_t *)a + d))),
        _mm_loadu_si128((const __m128i *)((const uint16_t *)b + d)), 1);
    return widen16(x, dtype);
}

/* Elements i..i+15 of src widened exactly. */
AI __m512 load16(const void *src, const int dtype, int64_t i)
{
    return widen16(_mm256_loadu_si256((const __m256i *)((const uint16_t *)src + i)), dtype);
}

/* ---- scores ---------------------------------------------------------------------------------- */

/* HADDPS on each 128-bit lane: [x0 + x1, x2 + x3, y0 + y1, y2 + y3], operands in its order. */
AI __m512 hadd512(__m512 x, __m512 y)
{
    return _mm512_add_ps(_mm512_shuffle_ps(x, y, 0x88), _mm512_shuffle_ps(x, y, 0xdd));
}

/* Lanes 4r..4r+3 of t (rows r < R) into s[r*lds + c ...], the first nv (1..4) of each. */
AI void store_quad(__m512 t, float *s, size_t lds, int c, int nv, const int R)
{
    const __mmask8 m = (__mmask8)((1u << nv) - 1);
    _mm_mask_storeu_ps(s + (size_t)c, m, _mm512_castps512_ps128(t));
    if (R > 1)
        _mm_mask_storeu_ps(s + lds + (size_t)c, m, _mm512_extractf32x4_ps(t, 1));
    if (R > 2)
        _mm_mask_storeu_ps(s + 2 * lds + (size_t)c, m, _mm512_extractf32x4_ps(t, 2));
    if (R > 3)
        _mm_mask_storeu_ps(s + 3 * lds + (size_t)c, m, _mm512_extractf32x4_ps(t, 3));
}

/* Scores of the 4 NQ keys whose accumulators a[2i][r] hold keys 2i | 2i+1 (8 lanes each, every
 * lane a partial sum of row r's dot product), scaled by sv, into s[r*lds + c + j] for the first
 * nv keys of rows r < R. */
AI void sr_reduce(__m512 a[4][CPU_DR], __m512 sv, float *s, size_t lds, int c, int nv, const int NQ,
                  const int R)
{
    /* The AVX2 tree per key: HADDPS twice leaves each 128-bit lane's four-lane sums; g01's lanes
     * are [r0 k0 | r0 k2 | r1 k0 | r1 k2] over lanes 0-3 (L0), 4-7 (L1) of k0/k2 and L2, L3 of
     * k1/k3; then the lane-0-3 sums plus the lane-4-7 sums, scaled; then to row order. */
    const __m512i to_rows = _mm512_set_epi32(15, 11, 14, 10, 13, 9, 12, 8, 7, 3, 6, 2, 5, 1, 4, 0);
#pragma GCC unroll 2
    for (int g = 0; g < NQ; g++) {
        const __m512 *x = a[2 * g], *y = a[2 * g + 1];
        const __m512 g01 = hadd512(hadd512(x[0], y[0]), hadd512(x[1], y[1]));
        const __m512 g23 = hadd512(hadd512(x[2], y[2]), hadd512(x[3], y[3]));
        const __m512 lo = _mm512_shuffle_f32x4(g01, g23, 0x88),
                     hi = _mm512_shuffle_f32x4(g01, g23, 0xdd);
        /* [r0k0 r0k2 r1k0 r1k2 | r0k1 r0k3 r1k1 r1k3 | r2k0 r2k2 r3k0 r3k2 | r2k1 ...] */
        const __m512 sum = _mm512_mul_ps(_mm512_add_ps(lo, hi), sv);
        const int left = nv - 4 * g;
        if (left > 0)
            store_quad(_mm512_permutexvar_ps(to_rows, sum), s, lds, c + 4 * g, left < 4 ? left : 4,
                       R);
    }
}

/* The rows of a block's keys: k[i], or base + i * stride bytes where all of them lie in one run
 * (STRIDED).  Why both: eight row pointers leave GCC too few general registers for the d loop,
 * and it keeps them in vector registers, moving one back before each load; two registers do for
 * a strided block (scores in L1, single thread: f16/bf16 1.1x). */
typedef struct krows {
    const char *const *k;
    const char *base;
    size_t stride;
} krows;

AI const char *krow(const krows *kr, int i, const int STRIDED)
{
    return STRIDED ? kr->base + (size_t)i * kr->stride : kr->k[i];
}

/* Rows r < R (<= 4) against the 4 NQ keys of kr, scaled, into s[r*lds + c + j] for the first nv
 * keys (rows >= R are not stored).  a[2i][r] holds keys 2i | 2i+1, 8 lanes each; each q chunk
 * is loaded once for every key, already doubled (cpu_avx512_runs_q's layout). */
AI void sr_block(const float *q, size_t ldq, const krows *kr, const int dtype, int64_t D, __m512 sv,
                 pfq *pq, float *s, size_t lds, int c, int nv, const int NQ, const int R,
                 const int STRIDED, const int L1)
{
    __m512 a[4][CPU_DR];
#pragma GCC unroll 4
    for (int j = 0; j < 2 * NQ; j++)
#pragma GCC unroll 4
        for (int r = 0; r < CPU_DR; r++)
            a[j][r] = _mm512_setzero_ps();
    int64_t d = 0;
    for (; d + 8 <= D; d += 8) {
        pfq_step(pq, L1);
        __m512 kz[4];
#pragma GCC unroll 4
        for (int j = 0; j < 2 * NQ; j++)
            kz[j] = load_2x8(krow(kr, 2 * j, STRIDED), krow(kr, 2 * j + 1, STRIDED), dtype, d);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            if (r == 2)
                pfq_step(pq, L1);
            const __m512 qv = _mm512_loadu_ps(q + (size_t)r * ldq + (size_t)(2 * d));
#pragma GCC unroll 4
            for (int j = 0; j < 2 * NQ; j++)
                a[j][r] = _mm512_fmadd_ps(qv, kz[j], a[j][r]);
        }
        if (R <= 2)
            pfq_step(pq, L1);
    }
    if (d < D) {
        /* The D tail: a scalar sum per row and key into lane 0 of the key's 8 lanes, as the AVX2
         * kernel (which adds 0 to the other lanes: so does this, keeping a -0 lane's sign rule). */
        float t[CPU_DR][8];
        for (int r = 0; r < R; r++)
            for (int i = 0; i < 4 * NQ; i++)
                t[r][i] = 0.0f;
        for (; d < D; d++)
            for (int i = 0; i < 4 * NQ; i++) {
                const float x = load1(krow(kr, i, STRIDED), dtype, d);
                for (int r = 0; r < R; r++)
                    t[r][i] += q[(size_t)r * ldq + (size_t)(2 * d)] * x;
            }
#pragma GCC unroll 4 /* constant indices keep a[][] in registers (else spilled around the loop) */
        for (int j = 0; j < 2 * NQ; j++)
#pragma GCC unroll 4
            for (int r = 0; r < R; r++)
                a[j][r] = _mm512_add_ps(a[j][r], _mm512_set_ps(0, 0, 0, 0, 0, 0, 0, t[r][2 * j + 1],
                                                               0, 0, 0, 0, 0, 0, 0, t[r][2 * j]));
    }
    sr_reduce(a, sv, s, lds, c, nv, NQ, R);
}

#if CPU_HAVE_AVX512BF16
/* sr_block for bf16 keys with the query rows in runs_q's pairs layout (dtype CPU_BF16P): each
 * VDPBF16PS adds two products per lane, a[2i][r]'s lanes 0-7 the pairs of key 2i's elements
 * d..d+15 and lanes 8-15 key 2i+1's, so a block costs half the FMA instructions of sr_block and
 * no widening.  D is a multiple of 16 (runs_q's condition); four prefetch steps per chunk of 16
 * are sr_block's two per 8 elements. */
AI void srp_block(const float *q, size_t ldq, const krows *kr, int64_t D, __m512 sv, pfq *pq,
                  float *s, size_t lds, int c, int nv, const int NQ, const int R, const int STRIDED,
                  const int L1)
{
    __m512 a[4][CPU_DR];
#pragma GCC unroll 4
    for (int j = 0; j < 2 * NQ; j++)
#pragma GCC unroll 4
        for (int r = 0; r < CPU_DR; r++)
            a[j][r] = _mm512_setzero_ps();
    for (int64_t d = 0; d < D; d += 16) {
        pfq_step(pq, L1);
        pfq_step(pq, L1);
        __m512i kz[4];
#pragma GCC unroll 4
        for (int j = 0; j < 2 * NQ; j++)
            kz[j] = _mm512_inserti64x4(
                _mm512_castsi256_si512(_mm256_loadu_si256(
                    (const __m256i *)((const uint16_t *)krow(kr, 2 * j, STRIDED) + d))),
                _mm256_loadu_si256(
                    (const __m256i *)((const uint16_t *)krow(kr, 2 * j + 1, STRIDED) + d)),
                1);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            if (r == 2) {
                pfq_step(pq, L1);
                pfq_step(pq, L1);
            }
            /* Row r's elements d..d+15 twice: 64 bytes at element 2d of its bf16 row. */
            const __m512i qv =
                _mm512_loadu_si512((const uint16_t *)(q + (size_t)r * ldq) + (size_t)(2 * d));
#pragma GCC unroll 4
            for (int j = 0; j < 2 * NQ; j++)
                a[j][r] = _mm512_dpbf16_ps(a[j][r], (__m512bh)qv, (__m512bh)kz[j]);
        }
        if (R <= 2) {
            pfq_step(pq, L1);
            pfq_step(pq, L1);
        }
    }
    sr_reduce(a, sv, s, lds, c, nv, NQ, R);
}
#endif

/* sr_block, or srp_block for the pairs layout. */
AI void sr_any(const float *q, size_t ldq, const krows *kr, const int dtype, int64_t D, __m512 sv,
               pfq *pq, float *s, size_t lds, int c, int nv, const int NQ, const int R,
               const int STRIDED, const int L1)
{
#if CPU_HAVE_AVX512BF16
    if (dtype == CPU_BF16P) {
        srp_block(q, ldq, kr, D, sv, pq, s, lds, c, nv, NQ, R, STRIDED, L1);
        return;
    }
#endif
    sr_block(q, ldq, kr, dtype, D, sv, pq, s, lds, c, nv, NQ, R, STRIDED, L1);
}

AI void scores_runs_dt(const float *q, size_t ldq, const cpu_run *runs, int nruns, const int dtype,
                       int64_t D, float sigma, float *s, size_t lds, const cpu_run *pf, int npf,
                       const int R, const int L1)
{
    const size_t esz = sizeof(uint16_t);
    int nk = 0;
    for (int u = 0; u < nruns; u++)
        nk += runs[u].n;
    const __m512 sv = _mm512_set1_ps(sigma);
    const int blocks = nk / 8 + (nk % 8 >= 4) + (nk % 4 > 0);
    pfq pq;
    pfq_init(&pq, pf, npf, D, esz, (int64_t)blocks * (D / 8) * 2); /* two per block and chunk */
    kit it = {runs, 0, 0};
    const char *k[8];
    const krows kp = {k, NULL, 0};
    int c = 0;
    /* Keys in eights, then a four (a block may take its keys from several runs). */
    for (; c + 8 <= nk; c += 8) {
        kit_skip(&it);
        if (it.t + 8 <= it.r[it.u].n) {
            const krows ks = {NULL, kit_next(&it, esz), (size_t)it.r[it.u].rstride * esz};
            it.t += 7;
            sr_any(q, ldq, &ks, dtype, D, sv, &pq, s, lds, c, 8, 2, R, 1, L1);
            continue;
        }
        for (int i = 0; i < 8; i++)
            k[i] = kit_next(&it, esz);
        sr_any(q, ldq, &kp, dtype, D, sv, &pq, s, lds, c, 8, 2, R, 0, L1);
    }
    if (c + 4 <= nk) {
        for (int i = 0; i < 4; i++)
            k[i] = kit_next(&it, esz);
        sr_any(q, ldq, &kp, dtype, D, sv, &pq, s, lds, c, 4, 1, R, 0, L1);
        c += 4;
    }
    if (c < nk) {
        /* 1-3 keys left: the missing ones read the last key again (never a row past it). */
        const int nv = nk - c;
        for (int i = 0; i < 4; i++)
            k[i] = i < nv ? kit_next(&it, esz) : k[i - 1];
        sr_any(q, ldq, &kp, dtype, D, sv, &pq, s, lds, c, nv, 1, R, 0, L1);
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

#if CPU_HAVE_AVX512BF16
AI void scores_runs_pairs(const float *q, size_t ldq, int nrows, const cpu_run *runs, int nruns,
                          int64_t D, float sigma, float *s, size_t lds, const cpu_run *pf, int npf,
                          const int L1)
{
    SRR_ROWS(CPU_BF16P)
}

/* The pairs apart from the other dtypes' kernels, one function per prefetch level: inlined
 * beside them, their code made GCC lay out the f16 kernel about 2 % slower (in the L2, one
 * thread). */
static __attribute__((noinline)) void scores_runs_pairs_l1(const float *q, size_t ldq, int nrows,
                                                           const cpu_run *runs, int nruns,
                                                           int64_t D, float sigma, float *s,
                                                           size_t lds, const cpu_run *pf, int npf)
{
    scores_runs_pairs(q, ldq, nrows, runs, nruns, D, sigma, s, lds, pf, npf, 1);
}

static __attribute__((noinline)) void scores_runs_pairs_l2(const float *q, size_t ldq, int nrows,
                                                           const cpu_run *runs, int nruns,
                                                           int64_t D, float sigma, float *s,
                                                           size_t lds, const cpu_run *pf, int npf)
{
    scores_runs_pairs(q, ldq, nrows, runs, nruns, D, sigma, s, lds, pf, npf, 0);
}
#endif

AI void scores_runs_any(const float *q, size_t ldq, int nrows, const cpu_run *runs, int nruns,
                        int dtype, int64_t D, float sigma, float *s, size_t lds, const cpu_run *pf,
                        int npf, const int L1)
{
    switch (dtype) {
    case CPU_F16: SRR_ROWS(CPU_F16) break;
    case CPU_BF16: SRR_ROWS(CPU_BF16) break;
#if CPU_HAVE_AVX512BF16
    case CPU_BF16P:
        (L1 ? scores_runs_pairs_l1 : scores_runs_pairs_l2)(q, ldq, nrows, runs, nruns, D, sigma, s,
                                                           lds, pf, npf);
        break;
#endif
    default:
        (L1 ? &cpu_kernels_avx2 : &cpu_kernels_avx2_l2)
            ->scores_runs(q, ldq, nrows, runs, nruns, dtype, D, sigma, s, lds, pf, npf);
        break;
    }
}

void cpu_avx512_scores_runs_l1(const float *q, size_t ldq, int nrows, const cpu_run *runs,
                               int nruns, int dtype, int64_t D, float sigma, float *s, size_t lds,
                               const cpu_run *pf, int npf)
{
    scores_runs_any(q, ldq, nrows, runs, nruns, dtype, D, sigma, s, lds, pf, npf, 1);
}

void cpu_avx512_scores_runs_l2(const float *q, size_t ldq, int nrows, const cpu_run *runs,
                               int nruns, int dtype, int64_t D, float sigma, float *s, size_t lds,
                               const cpu_run *pf, int npf)
{
    scores_runs_any(q, ldq, nrows, runs, nruns, dtype, D, sigma, s, lds, pf, npf, 0);
}

/* Whether rows[0..nrows) (D apart, bf16 values widened) may take the pairs layout: VDPBF16PS
 * treats a subnormal input as zero and flushes each subnormal result of its two steps, so a
 * product or partial sum under 2^-126 in magnitude can be lost.  A subnormal key element then
 * costs at most |q_d| 2^-126 and a flushed partial sum at most 2^-126, so the dot product is off
 * by at most D (M + 1) 2^-126 with M = max |q_d|, the score by |sigma| times that.  Required here:
 * the CPU has AVX512_BF16, D is a multiple of 16, every q element is a finite bf16 value and not
 * subnormal (those would be lost whole), and |sigma| max(M, 1) <= 2^64, so the loss stays under
 * D 2^-61 < 2^-37 for every D clause 13's bound allows (D < 2^24): far below the 4 * 2^-24
 * absolute term of its score error.  Apart from that each step is an FMA of an exact product (a
 * product of two bf16 values has 16 significant bits): an f32 sum in another order, which the
 * bound covers (SPEC.md clause 13: "in any order"). */
static int pairs_allowed(const float *q, int nrows, int64_t D, float sigma)
{
#if CPU_HAVE_AVX512BF16
    if (D % 16 != 0 || !__builtin_cpu_supports("avx512bf16") || !(fabsf(sigma) <= 0x1p64f))
        return 0;
    float m = 1.0f;
    for (int64_t i = 0; i < (int64_t)nrows * D; i++) {
        uint32_t b;
        memcpy(&b, &q[i], sizeof b);
        const uint32_t mag = b & 0x7fffffffu;
        if ((b & 0xffffu) || mag >= 0x7f800000u || (mag && mag < 0x00800000u))
            return 0; /* not a bf16 value, not finite, or subnormal */
        const float x = fabsf(q[i]);
        m = x > m ? x : m;
    }
    return fabsf(sigma) * m <= 0x1p64f;
#else
    (void)q, (void)nrows, (void)D, (void)sigma;
    return 0;
#endif
}

/* The table's runs_q (cpu_kern.h).  Two layouts, each written once per work item:
 * - doubled chunks (returns dtype, f16 or bf16): each eight-element chunk twice, so sr_block
 *   loads [q d..d+7 | q d..d+7] with one plain load instead of a load and a broadcast per chunk,
 *   row and block of eight keys (on a Zen 4 the broadcast took about 4 of the scores' 42 cycles
 *   per key and kv head at G 4, D 128: README, "The query chunks doubled");
 * - bf16 pairs (returns CPU_BF16P where pairs_allowed): each sixteen-element chunk twice as bf16
 *   values, 32 of them at element 2d of the row seen as uint16_t, for srp_block's VDPBF16PS.
 * f32 returns 0: it goes to the AVX2 kernels, which read q as it is. */
int cpu_avx512_runs_q(const float *q, int nrows, int64_t D, int dtype, float sigma, float *dst)
{
    if (dtype != CPU_F16 && dtype != CPU_BF16)
        return 0;
    if (dtype == CPU_BF16 && pairs_allowed(q, nrows, D, sigma)) {
        const __m512i hi =
            _mm512_set_epi16(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1, 31, 29, 27,
                             25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
        for (int r = 0; r < nrows; r++) {
            const float *qr = q + (size_t)r * (size_t)D;
            uint16_t *dr = (uint16_t *)(dst + (size_t)r * 2 * (size_t)D);
            for (int64_t d = 0; d < D; d += 16) {
                /* The upper halves of 16 f32 values (their bf16 bits), twice. */
                const __m512i x = _mm512_castps_si512(_mm512_loadu_ps(qr + d));
                _mm512_storeu_si512(dr + 2 * d, _mm512_permutexvar_epi16(hi, x));
            }
        }
        return CPU_BF16P;
    }
    const int64_t d8 = D & ~(int64_t)7;
    for (int r = 0; r < nrows; r++) {
        const float *qr = q + (size_t)r * (size_t)D;
        float *dr = dst + (size_t)r * 2 * (size_t)D;
        for (int64_t d = 0; d < d8; d += 8)
            _mm512_storeu_ps(dr + 2 * d, _mm512_broadcast_f32x8(_mm256_loadu_ps(qr + d)));
        for (int64_t d = d8; d < D; d++)
            dr[2 * d] = dr[2 * d + 1] = qr[d];
    }
    return dtype;
}

/* ---- P.V ------------------------------------------------------------------------------------- */

/* Columns e0 .. e0 + 16 NV - 1 of O for rows r < R over every key of the runs: O * corr (O as it
 * is where corr is NULL), then an FMA per key in key order, the accumulators in registers across
 * the runs. */
AI void pv_block(const float *p, size_t ldp, const cpu_run *runs, int nruns, const int dtype,
                 int64_t e0, const float *corr, float *o, size_t ldo, pfq *pq, const int NV,
                 const int R, const int L1)
{
    __m512 a[CPU_DR][4];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++) {
            a[r][j] = _mm512_loadu_ps(o + (size_t)r * ldo + (size_t)e0 + 16 * j);
            if (corr)
                a[r][j] = _mm512_mul_ps(a[r][j], _mm512_set1_ps(corr[r]));
        }
    int c = 0;
    for (int u = 0; u < nruns; u++) {
        const char *src = runs[u].src;
        const int64_t rs = runs[u].rstride;
        for (int t = 0; t < runs[u].n; t++, c++) {
            pfq_step(pq, L1);
            const int64_t row = (int64_t)t * rs + e0;
            __m512 v[4];
#pragma GCC unroll 4
            for (int j = 0; j < NV; j++)
                v[j] = load16(src, dtype, row + 16 * j);
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                if (r == 2)
                    pfq_step(pq, L1);
                const __m512 pb = _mm512_set1_ps(p[(size_t)r * ldp + (size_t)c]);
#pragma GCC unroll 4
                for (int j = 0; j < NV; j++)
                    a[r][j] = _mm512_fmadd_ps(pb, v[j], a[r][j]);
            }
            if (R <= 2)
                pfq_step(pq, L1);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int j = 0; j < NV; j++)
            _mm512_storeu_ps(o + (size_t)r * ldo + (size_t)e0 + 16 * j, a[r][j]);
}

AI void pv_runs_dt(const float *p, size_t ldp, const cpu_run *runs, int nruns, const int dtype,
                   int64_t Dv, const float *corr, float *o, size_t ldo, const cpu_run *pf, int npf,
                   const int R, const int L1)
{
    const size_t esz = sizeof(uint16_t);
    int nkeys = 0;
    for (int u = 0; u < nruns; u++)
        nkeys += runs[u].n;
    /* Column blocks: 64 columns while they last, then 32, then 16. */
    const int64_t nb = Dv / 64 + (Dv % 64) / 32 + (Dv % 32) / 16;
    pfq pq;
    pfq_init(&pq, pf, npf, Dv, esz, (int64_t)nkeys * nb * 2); /* two per key and block */
    int64_t e0 = 0;
    for (; e0 + 64 <= Dv; e0 += 64)
        pv_block(p, ldp, runs, nruns, dtype, e0, corr, o, ldo, &pq, 4, R, L1);
    if (e0 + 32 <= Dv) {
        pv_block(p, ldp, runs, nruns, dtype, e0, corr, o, ldo, &pq, 2, R, L1);
        e0 += 32;
    }
    if (e0 + 16 <= Dv) {
        pv_block(p, ldp, runs, nruns, dtype, e0, corr, o, ldo, &pq, 1, R, L1);
        e0 += 16;
    }
    /* Fewer than 16 columns left: element by element, as the AVX2 pv_rows. */
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
    default:
        (L1 ? &cpu_kernels_avx2 : &cpu_kernels_avx2_l2)
            ->pv_runs(p, ldp, nrows, runs, nruns, dtype, Dv, corr, o, ldo, pf, npf);
        break;
    }
}

void cpu_avx512_pv_runs_l1(const float *p, size_t ldp, int nrows, const cpu_run *runs, int nruns,
                           int dtype, int64_t Dv, const float *corr, float *o, size_t ldo,
                           const cpu_run *pf, int npf)
{
    pv_runs_any(p, ldp, nrows, runs, nruns, dtype, Dv, corr, o, ldo, pf, npf, 1);
}

void cpu_avx512_pv_runs_l2(const float *p, size_t ldp, int nrows, const cpu_run *runs, int nruns,
                           int dtype, int64_t Dv, const float *corr, float *o, size_t ldo,
                           const cpu_run *pf, int npf)
{
    pv_runs_any(p, ldp, nrows, runs, nruns, dtype, Dv, corr, o, ldo, pf, npf, 0);
}
