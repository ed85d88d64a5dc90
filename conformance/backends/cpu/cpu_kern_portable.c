/* cpu_kern_portable.c — the cpu plugin's micro-kernels in plain C17 (cpu_kern.h), for any
 * machine and as the tested fallback of the AVX2 table (option isa=portable).
 *
 * Written as small fixed-shape loops a compiler can vectorise with the base instruction set:
 * a score tile keeps CPU_MR x CPU_NR sums in a local array, P.V updates CPU_NR output columns
 * per pass.  Conversions use attnref's exact scalar ones (f16 subnormals, RNE, NaN kept).
 */
#include <math.h>
#include <string.h>

#include "attnref/dtype.h"
#include "cpu_exp.h"
#include "cpu_kern.h"

/* cpu_expf's multiply-adds are fmaf, one rounding each: the same value whether the compiler
 * emits an FMA instruction or calls the C library, so the AVX2 lanes and this code agree bit
 * for bit.  Built for the base x86-64 set, every fmaf here is a library call (about a fifth of
 * the portable prefill's time); the loops that take an exp per element are also built with FMA
 * instructions, the C library's loader choosing that version on a CPU that has them. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__ELF__)
#define P_FMA_CLONES __attribute__((target_clones("fma", "default")))
#else
#define P_FMA_CLONES
#endif

static void p_scores(const float *q, size_t ldq, int nrows, const float *kt, size_t ldk, int ncols,
                     int64_t D, float sigma, float *s, size_t lds)
{
    for (int c0 = 0; c0 < ncols; c0 += CPU_NR) {
        float acc[CPU_MR][CPU_NR];
        memset(acc, 0, sizeof acc);
        for (int64_t d = 0; d < D; d++) {
            const float *k = kt + (size_t)d * ldk + c0;
            for (int r = 0; r < nrows; r++) {
                const float qv = q[(size_t)r * ldq + (size_t)d];
                for (int c = 0; c < CPU_NR; c++)
                    acc[r][c] += qv * k[c];
            }
        }
        for (int r = 0; r < nrows; r++)
            for (int c = 0; c < CPU_NR; c++)
                s[(size_t)r * lds + (size_t)(c0 + c)] = sigma * acc[r][c];
    }
}

static void p_pv(const float *p, size_t ldp, int nrows, const float *v, size_t ldv, int nkeys,
                 int ncols, const float *corr, float *o, size_t ldo)
{
    for (int e0 = 0; e0 < ncols; e0 += CPU_NR) {
        float acc[CPU_MR][CPU_NR];
        for (int r = 0; r < nrows; r++)
            for (int e = 0; e < CPU_NR; e++)
                acc[r][e] = o[(size_t)r * ldo + (size_t)(e0 + e)] * corr[r];
        for (int c = 0; c < nkeys; c++) {
            const float *vr = v + (size_t)c * ldv + e0;
            for (int r = 0; r < nrows; r++) {
                const float pr = p[(size_t)r * ldp + (size_t)c];
                for (int e = 0; e < CPU_NR; e++)
                    acc[r][e] += pr * vr[e];
            }
        }
        for (int r = 0; r < nrows; r++)
            for (int e = 0; e < CPU_NR; e++)
                o[(size_t)r * ldo + (size_t)(e0 + e)] = acc[r][e];
    }
}

static float p_widen(const void *src, int dtype, int64_t i);

static void p_scores_rows(const float *q, size_t ldq, int nrows, const void *src, int dtype,
                          int64_t rstride, int nk, int64_t D, float sigma, float *s, size_t lds)
{
    for (int c = 0; c < nk; c++)
        for (int r = 0; r < nrows; r++) {
            float dot = 0.0f;
            for (int64_t d = 0; d < D; d++)
                dot +=
                    q[(size_t)r * ldq + (size_t)d] * p_widen(src, dtype, (int64_t)c * rstride + d);
            s[(size_t)r * lds + (size_t)c] = sigma * dot;
        }
}

static void p_pv_rows(const float *p, size_t ldp, int nrows, const void *src, int dtype,
                      int64_t rstride, int nkeys, int64_t Dv, const float *corr, float *o,
                      size_t ldo)
{
    for (int r = 0; r < nrows; r++)
        for (int64_t e = 0; e < Dv; e++)
            o[(size_t)r * ldo + (size_t)e] *= corr[r];
    for (int c = 0; c < nkeys; c++)
        for (int r = 0; r < nrows; r++) {
            const float pr = p[(size_t)r * ldp + (size_t)c];
            for (int64_t e = 0; e < Dv; e++)
                o[(size_t)r * ldo + (size_t)e] +=
                    pr * p_widen(src, dtype, (int64_t)c * rstride + e);
        }
}

P_FMA_CLONES static float p_exp_sum(float *x, int n, float m)
{
    float sum = 0.0f;
    for (int c = 0; c < n; c++) {
        x[c] = cpu_expf(x[c] - m);
        sum += x[c];
    }
    return sum;
}

static float p_max(const float *x, int n)
{
    float m = -INFINITY;
    for (int c = 0; c < n; c++)
        if (x[c] > m)
            m = x[c];
    return m;
}

P_FMA_CLONES static void p_softcap(float *s, int n, float cap, float rcap)
{
    for (int c = 0; c < n; c++)
        s[c] = cpu_softcapf(s[c], cap, rcap);
}

static void p_alibi(float *s, int n, float slope, int64_t base)
{
    const float bf = (float)base;
    for (int c = 0; c < n; c++) {
        const float d = bf - (float)c;
        s[c] -= slope * (d < 0.0f ? -d : d);
    }
}

static int p_finite(const float *x, int n)
{
    int ok = 1;
    for (int c = 0; c < n; c++)
        ok &= isfinite(x[c]) != 0;
    return ok;
}

static float p_widen(const void *src, int dtype, int64_t i)
{
    switch (dtype) {
    case CPU_F16: return attnref_f16_to_f32(((const uint16_t *)src)[i]);
    case CPU_BF16: return attnref_bf16_to_f32(((const uint16_t *)src)[i]);
    default: return ((const float *)src)[i];
    }
}

static int p_load_row(const void *src, int dtype, int64_t n, float *dst)
{
    int bad = 0;
    for (int64_t d = 0; d < n; d++) {
        dst[d] = p_widen(src, dtype, d);
        bad |= !isfinite(dst[d]);
    }
    return bad;
}

static void p_pack_kt(const void *src, int dtype, int64_t rstride, int nk, int64_t D, float *dst,
                      size_t ldk)
{
    for (int c = 0; c < nk; c++)
        for (int64_t d = 0; d < D; d++)
            dst[(size_t)d * ldk + (size_t)c] = p_widen(src, dtype, (int64_t)c * rstride + d);
}

static void p_store_row(const float *src, int64_t n, int dtype, void *dst)
{
    switch (dtype) {
    case CPU_F16:
        for (int64_t e = 0; e < n; e++)
            ((uint16_t *)dst)[e] = attnref_f32_to_f16(src[e]);
        break;
    case CPU_BF16:
        for (int64_t e = 0; e < n; e++)
            ((uint16_t *)dst)[e] = attnref_f32_to_bf16(src[e]);
        break;
    default: memcpy(dst, src, (size_t)n * sizeof *src); break;
    }
}

const cpu_kernels cpu_kernels_portable = {
    .name = "portable",
    .scores = p_scores,
    .pv = p_pv,
    .scores_rows = p_scores_rows,
    .pv_rows = p_pv_rows,
    .exp_sum = p_exp_sum,
    .softcap = p_softcap,
    .alibi = p_alibi,
    .finite = p_finite,
    .max = p_max,
    .load_row = p_load_row,
    .pack_kt = p_pack_kt,
    .store_row = p_store_row,
    .tile_keys = 64,
};
