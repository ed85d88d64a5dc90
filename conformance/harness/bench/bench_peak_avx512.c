/* bench_peak_avx512.c — the AVX-512 FMA kernel of `attnconf bench --peak` (bench.h).
 *
 * Compiled with -mavx512f (conformance/harness/CMakeLists.txt, x86-64 compilers that accept it)
 * and called only after bp_fma_isa() (bench_peak.c, compiled for the baseline ISA) chose
 * AVX-512: the CPU has the set the cpu backend's AVX-512 kernels need and the OS saves the ZMM
 * state.  Whether a 512-bit FMA does twice the work of a 256-bit one per cycle depends on the
 * core (some split it into two 256-bit halves, some have fewer 512-bit FMA ports): measured here,
 * never assumed.
 */
#include "bench.h"

#include <immintrin.h>

/* Sixteen independent chains: with two 512-bit FMA ports and a latency of 4 cycles, eight keep
 * both busy; sixteen leave room for a longer latency and use half the 32 registers.  The
 * multiplier just below 1 and the tiny addend keep every value finite and normal. */
float bp_fma_avx512(uint64_t iters, float seed)
{
    const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
    __m512 c[BP_AVX512_CHAINS];
    c[0] = _mm512_set1_ps(seed);
    for (int k = 1; k < BP_AVX512_CHAINS; k++)
        c[k] = _mm512_add_ps(c[k - 1], a);
    for (uint64_t i = 0; i < iters; i++) {
#pragma GCC unroll 16
        for (int k = 0; k < BP_AVX512_CHAINS; k++)
            c[k] = _mm512_fmadd_ps(c[k], m, a);
    }
    __m512 s = c[0];
    for (int k = 1; k < BP_AVX512_CHAINS; k++)
        s = _mm512_add_ps(s, c[k]);
    return _mm512_reduce_add_ps(s);
}
