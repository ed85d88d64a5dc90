/* bench_peak_avx2.c — the AVX2+FMA kernels of `attnconf bench --peak` (bench.h).
 *
 * Compiled with -mavx2 -mfma (conformance/CMakeLists.txt, x86-64 only) and called only after
 * bp_have_avx2_fma() (bench_peak.c, compiled for the baseline ISA) said the CPU has both, so
 * the rest of the harness runs anywhere.
 */
#include "bench.h"

#include <immintrin.h>

/* Twelve independent chains: an FMA has a latency of 4-5 cycles and two issue ports on the
 * CPUs this targets, so at least ten chains are needed to keep both ports busy; the
 * multiplier just below 1 and the tiny addend keep every value finite and normal. */
float bp_fma_avx2(uint64_t iters, float seed)
{
    const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
    __m256 c0 = _mm256_set1_ps(seed), c1 = _mm256_add_ps(c0, a), c2 = _mm256_add_ps(c1, a);
    __m256 c3 = _mm256_add_ps(c2, a), c4 = _mm256_add_ps(c3, a), c5 = _mm256_add_ps(c4, a);
    __m256 c6 = _mm256_add_ps(c5, a), c7 = _mm256_add_ps(c6, a), c8 = _mm256_add_ps(c7, a);
    __m256 c9 = _mm256_add_ps(c8, a), c10 = _mm256_add_ps(c9, a), c11 = _mm256_add_ps(c10, a);
    for (uint64_t i = 0; i < iters; i++) {
        c0 = _mm256_fmadd_ps(c0, m, a);
        c1 = _mm256_fmadd_ps(c1, m, a);
        c2 = _mm256_fmadd_ps(c2, m, a);
        c3 = _mm256_fmadd_ps(c3, m, a);
        c4 = _mm256_fmadd_ps(c4, m, a);
        c5 = _mm256_fmadd_ps(c5, m, a);
        c6 = _mm256_fmadd_ps(c6, m, a);
        c7 = _mm256_fmadd_ps(c7, m, a);
        c8 = _mm256_fmadd_ps(c8, m, a);
        c9 = _mm256_fmadd_ps(c9, m, a);
        c10 = _mm256_fmadd_ps(c10, m, a);
        c11 = _mm256_fmadd_ps(c11, m, a);
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                             _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11)));
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

/* Four independent 256-bit accumulators, so the loads, not the adds, set the pace. */
uint64_t bp_read_avx2(const uint64_t *buf, size_t n)
{
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i < n; i += 16) {
        s0 = _mm256_add_epi64(s0, _mm256_load_si256((const __m256i *)(buf + i)));
        s1 = _mm256_add_epi64(s1, _mm256_load_si256((const __m256i *)(buf + i + 4)));
        s2 = _mm256_add_epi64(s2, _mm256_load_si256((const __m256i *)(buf + i + 8)));
        s3 = _mm256_add_epi64(s3, _mm256_load_si256((const __m256i *)(buf + i + 12)));
    }
    __m256i s = _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3));
    uint64_t out[4];
    _mm256_storeu_si256((__m256i *)out, s);
    return out[0] + out[1] + out[2] + out[3];
}
