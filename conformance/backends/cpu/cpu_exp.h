/* cpu_exp.h — the cpu plugin's expf and soft-capping (tanh), one algorithm for the scalar code and
 * both kernel paths.
 *
 * Why not libm's expf: the AVX2 path needs a vector exp, and the portable path and the scalar
 * tails must give the same values as its lanes so the two paths can be compared exactly where
 * they round alike.  Accuracy: < 2 ulp over the whole f32 range (the clause-13 error model of
 * SPEC.md allows 4 units of 2^-24 in the exponent's result), with the edge values an online
 * softmax depends on exact: exp(0) = 1, exp(-inf) = +0, results below 2^-150 are +0 (subnormals
 * in between are produced), exp(x) = +inf above ~88.72, NaN -> NaN.
 *
 * Method (Cody & Waite, as Cephes expf): n = round(x / ln 2), r = x - n ln 2 with ln 2 split in
 * a short high part (n * C1 is exact) and a correction, exp(r) = 1 + r + r^2 p(r) with Cephes'
 * degree-5 p on |r| <= ln2/2 (evaluated by Estrin's scheme), and the result scaled by 2^n in
 * two steps, 2^(n>>1) * 2^(n - (n>>1)), so that the subnormal and overflow ranges come out right
 * without a special case.  x is first clamped to [-110, 89]: below, 2^n underflows to 0
 * (exactly, through the two steps); above, to inf.  Every multiply-add is an fmaf (one
 * rounding): fewer operations in the vector lanes, which use FMA instructions, and the same
 * value whether a translation unit gets the instruction or a call to the C library's fmaf.
 */
#ifndef ATTNCONF_CPU_EXP_H
#define ATTNCONF_CPU_EXP_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define CPU_EXP_LO (-110.0f)
#define CPU_EXP_HI 89.0f
#define CPU_EXP_LOG2E 1.44269504088896341f
#define CPU_EXP_MAGIC 12582912.0f      /* 1.5 * 2^23: adding it rounds to an integer */
#define CPU_EXP_MAGIC_BITS 0x4b400000u /* its bit pattern: the integer is in the low bits */
#define CPU_EXP_C1 0.693359375f        /* ln 2 high part: 8 significant bits, n * C1 exact */
#define CPU_EXP_C2 (-2.12194440e-4f)   /* ln 2 - C1 */
/* Minimax coefficients of (exp(r) - 1 - r) / r^2 on [-ln2/2, ln2/2] (Cephes expf). */
#define CPU_EXP_P0 1.9875691500e-4f
#define CPU_EXP_P1 1.3981999507e-3f
#define CPU_EXP_P2 8.3334519073e-3f
#define CPU_EXP_P3 4.1665795894e-2f
#define CPU_EXP_P4 1.6666665459e-1f
#define CPU_EXP_P5 5.0000001201e-1f

/* 2^e for e in [-126, 127], built from its bit pattern. */
static inline float cpu_exp_pow2i(int32_t e)
{
    uint32_t bits = (uint32_t)(e + 127) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* expf(x), scalar (see the file comment).  The rounding of x / ln 2 to an integer adds and
 * subtracts 1.5 * 2^23 (round to nearest even, no conversion instruction), and the polynomial is
 * evaluated by Estrin's scheme, so the vector version's dependency chain is short: an
 * out-of-order core overlaps more of them. */
static inline float cpu_expf(float x)
{
    if (x != x)
        return x; /* NaN */
    x = x < CPU_EXP_LO ? CPU_EXP_LO : x > CPU_EXP_HI ? CPU_EXP_HI : x;
    const float t = fmaf(x, CPU_EXP_LOG2E, CPU_EXP_MAGIC);
    const float fn = t - CPU_EXP_MAGIC;
    uint32_t tb;
    memcpy(&tb, &t, sizeof tb);
    const int32_t n = (int32_t)(tb - CPU_EXP_MAGIC_BITS);
    float r = fmaf(-fn, CPU_EXP_C1, x);
    r = fmaf(-fn, CPU_EXP_C2, r);
    const float r2 = r * r;
    const float a = fmaf(CPU_EXP_P4, r, CPU_EXP_P5), b = fmaf(CPU_EXP_P2, r, CPU_EXP_P3);
    const float c = fmaf(CPU_EXP_P0, r, CPU_EXP_P1);
    const float p = fmaf(r2 * r2, c, fmaf(r2, b, a));
    const float y = fmaf(p, r2, r) + 1.0f;
    const int32_t n1 = n >> 1; /* floor(n / 2): both halves stay in [-80, 64] */
    return y * cpu_exp_pow2i(n1) * cpu_exp_pow2i(n - n1);
}

/* ---- soft-capping ------------------------------------------------------------------------- */

/* Minimax coefficients of (tanh(y) - y) / y^3 in y^2 on |y| < 0.625 (Cephes tanhf). */
#define CPU_TANH_T0 (-5.70498872745e-3f)
#define CPU_TANH_T1 2.06390887954e-2f
#define CPU_TANH_T2 (-5.37397155531e-2f)
#define CPU_TANH_T3 1.33314422036e-1f
#define CPU_TANH_T4 (-3.33332819422e-1f)
#define CPU_TANH_SMALL 0.625f

/* c * tanh(s / c) of a score s (SPEC clause 20's soft-capping), rc = 1 / c rounded to f32, for c
 * in [2^-100, 2^100].  With y = s * rc: for |y| < 0.625, c * tanh(y) = s + s * y^2 * t(y^2), where
 * s stands for c * y (exact: no rounding of c * rc enters) and the error of y only reaches the
 * small correction; above, c * (1 - 2 / (exp(2|y|) + 1)) with the sign of y, where the
 * subtraction cancels at most a factor 0.8.  Within 3 ulp of the exact c * tanh(s / c) (the unit
 * test measures it); +-inf gives +-c, NaN stays NaN.  The AVX2 kernels do the same operations
 * on 8 lanes. */
static inline float cpu_softcapf(float s, float c, float rc)
{
    const float y = s * rc;
    const float ay = y < 0.0f ? -y : y;
    if (ay < CPU_TANH_SMALL) {
        const float z = y * y;
        const float t =
            (((CPU_TANH_T0 * z + CPU_TANH_T1) * z + CPU_TANH_T2) * z + CPU_TANH_T3) * z +
            CPU_TANH_T4;
        return s + s * (z * t);
    }
    const float e = cpu_expf(ay + ay);
    const float t = c * (1.0f - 2.0f / (e + 1.0f));
    return y < 0.0f ? -t : t; /* a NaN y keeps the NaN t */
}

#endif
