/* test_cpu_tables.h — the kernel tables this machine runs, for the cpu plugin's unit tests: the
 * portable one always, the AVX2 one where the CPU has AVX2 + FMA + F16C, the AVX-512 one where
 * it also has AVX-512 F/BW/DQ/VL (with the OS saving the ZMM state); the AVX2 and AVX-512 ones
 * twice each, their decode run kernels prefetching into the L1 and into the L2.  A table the CPU cannot run
 * is skipped with a line in the test log, never failed: not a warning either, since Criterion
 * exits non-zero on any warning and a CPU without AVX-512 is not a fault. */
#ifndef ATTNCONF_TEST_CPU_TABLES_H
#define ATTNCONF_TEST_CPU_TABLES_H

#include <criterion/logging.h>

#include "cpu_kern.h"

#define CPU_TEST_MAX_TABLES 5

/* Fills t[0..n) (room for CPU_TEST_MAX_TABLES) and returns n. */
static inline int ntables(const cpu_kernels **t)
{
    int n = 0;
    t[n++] = &cpu_kernels_portable;
#if defined(CPU_HAVE_AVX2_TU) && CPU_HAVE_AVX2_TU
    __builtin_cpu_init();
    const int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                     __builtin_cpu_supports("f16c");
    if (avx2) {
        t[n++] = &cpu_kernels_avx2; /* the two differ in their decode prefetch only */
        t[n++] = &cpu_kernels_avx2_l2;
    } else
        cr_log_info("no AVX2/FMA/F16C here: the AVX2 kernels are not tested");
#if defined(CPU_HAVE_AVX512_TU) && CPU_HAVE_AVX512_TU
    if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
        t[n++] = cpu_kernels_avx512(1); /* the two differ in their decode prefetch only */
        t[n++] = cpu_kernels_avx512(0);
    } else
        cr_log_info("no AVX-512 F/BW/DQ/VL here: the AVX-512 kernels are not tested");
#endif
#endif
    return n;
}

#endif
