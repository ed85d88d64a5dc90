/* cpu_options.c — the cpu plugin's options and kernel choice (cpu_options.h). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "cpu_options.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_pool.h"

const attnconf_option_info cpu_option_info[] = {
    {"threads", "auto",
     "threads per call, caller included: 1..1024, or auto = CPUs in the affinity mask"},
    {"isa", "auto",
     "micro-kernels: auto|avx512|avx2|portable (default: $ATTNCONF_CPU_ISA, else auto)"},
    {"prefetch", "auto",
     "where the decode run kernels prefetch: auto|l1|l2 (auto = l1 if the L1D >= 48 KiB)"},
    {"slowdown", "0", "TEST-ONLY: spin F x each call's duration after it (0..10; 0 = off)"},
    {NULL, NULL, NULL},
};

/* The characters of a decimal option value: strtol and strtod would also take a sign (threads),
 * leading white space and hexadecimal, as the harness's own options do not (cli.c). */
#define DIGITS "0123456789"

static int default_threads(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n >= 1)
            return n > CPU_POOL_MAX_THREADS ? CPU_POOL_MAX_THREADS : n;
    }
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > CPU_POOL_MAX_THREADS ? CPU_POOL_MAX_THREADS : (int)n;
}

static int parse_isa(const char *v, cpu_isa *isa)
{
    if (strcmp(v, "auto") == 0)
        *isa = CPU_ISA_AUTO;
    else if (strcmp(v, "avx512") == 0)
        *isa = CPU_ISA_AVX512;
    else if (strcmp(v, "avx2") == 0)
        *isa = CPU_ISA_AVX2;
    else if (strcmp(v, "portable") == 0)
        *isa = CPU_ISA_PORTABLE;
    else
        return 0;
    return 1;
}

int cpu_options_parse(const attnconf_option *options, size_t n, cpu_options *o, char *err,
                      size_t errlen)
{
    o->threads = default_threads();
    o->isa = CPU_ISA_AUTO;
    o->prefetch = CPU_PF_AUTO;
    o->slowdown = 0.0;
    int isa_given = 0;
    for (size_t i = 0; i < n; i++) {
        const char *k = options[i].key, *v = options[i].value ? options[i].value : "";
        if (strcmp(k, "threads") == 0) {
            if (strcmp(v, "auto") == 0)
                continue;
            char *end;
            errno = 0;
            const long t = strtol(v, &end, 10);
            if (!*v || v[strspn(v, DIGITS)] || *end != '\0' || errno || t < 1 ||
                t > CPU_POOL_MAX_THREADS) {
                snprintf(err, errlen, "threads: '%s' is not an integer in 1..%d or 'auto'", v,
                         CPU_POOL_MAX_THREADS);
                return ATTNCONF_EINVAL;
            }
            o->threads = (int)t;
        } else if (strcmp(k, "isa") == 0) {
            if (!parse_isa(v, &o->isa)) {
                snprintf(err, errlen, "isa: '%s' is not one of auto, avx512, avx2, portable", v);
                return ATTNCONF_EINVAL;
            }
            isa_given = 1;
        } else if (strcmp(k, "prefetch") == 0) {
            if (strcmp(v, "auto") == 0)
                o->prefetch = CPU_PF_AUTO;
            else if (strcmp(v, "l1") == 0)
                o->prefetch = CPU_PF_L1;
            else if (strcmp(v, "l2") == 0)
                o->prefetch = CPU_PF_L2;
            else {
                snprintf(err, errlen, "prefetch: '%s' is not one of auto, l1, l2", v);
                return ATTNCONF_EINVAL;
            }
        } else if (strcmp(k, "slowdown") == 0) {
            char *end;
            errno = 0;
            const double f = strtod(v, &end);
            if (!*v || v[strspn(v, DIGITS "+-.eE")] || *end != '\0' || errno ||
                !(f >= 0.0 && f <= 10.0)) {
                snprintf(err, errlen, "slowdown: '%s' is not a number in 0..10", v);
                return ATTNCONF_EINVAL;
            }
            o->slowdown = f;
        } else {
            snprintf(err, errlen, "unknown option '%s'", k);
            return ATTNCONF_EINVAL;
        }
    }
    const char *env = getenv("ATTNCONF_CPU_ISA");
    if (!isa_given && env && *env && !parse_isa(env, &o->isa)) {
        snprintf(err, errlen, "ATTNCONF_CPU_ISA: '%s' is not one of auto, avx512, avx2, portable",
                 env);
        return ATTNCONF_EINVAL;
    }
    return ATTNCONF_OK;
}

/* AVX2 with FMA and F16C, and the OS saving the YMM state (what __builtin_cpu_supports
 * reports for "avx2" already includes the OS check in GCC's libgcc). */
static int have_avx2(void)
{
#if defined(CPU_HAVE_AVX2_TU) && CPU_HAVE_AVX2_TU
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
#else
    return 0;
#endif
}

/* AVX-512 F, BW, DQ and VL (the x86-64-v4 set) besides the AVX2 set, whose kernels the AVX-512
 * table reuses.  GCC's and Clang's __builtin_cpu_supports("avx512f") is 0 unless the OS saves
 * the ZMM and opmask state too (XCR0 bits 5-7, read with XGETBV): a kernel never faults on a
 * CPU whose OS left AVX-512 off. */
static int have_avx512(void)
{
#if defined(CPU_HAVE_AVX512_TU) && CPU_HAVE_AVX512_TU
    __builtin_cpu_init();
    return have_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
    return 0;
#endif
}

/* prefetch=auto: the L1 where it holds at least 48 KiB, for the AVX-512 and AVX2 tables alike.
 * The rule separates the machines measured, it is no footprint argument: a 48 KiB L1D (Zen 5)
 * moved 3-12 % more from memory with the L1, on 64- and 128-key tiles alike; on a 32 KiB one
 * (Zen 4) the L1 lost 1.5-1.9x with the earlier queue and about 20 % in f16/bf16 with this one,
 * and f32 (the AVX2 run kernels) moved about 10 % more with the L2 (README, "Fewer instructions
 * per key", "A Zen 4", "A Zen 4 again").  Unknown (0 or -1): the L2. */
static int auto_prefetch_l1(void)
{
#ifdef _SC_LEVEL1_DCACHE_SIZE
    return sysconf(_SC_LEVEL1_DCACHE_SIZE) >= 48 * 1024;
#else
    return 0;
#endif
}

const cpu_kernels *cpu_options_kernels(cpu_isa isa, cpu_prefetch prefetch, char *err, size_t errlen)
{
    const cpu_kernels *k = NULL;
    if (isa == CPU_ISA_PORTABLE)
        k = &cpu_kernels_portable;
#if defined(CPU_HAVE_AVX512_TU) && CPU_HAVE_AVX512_TU
    else if ((isa == CPU_ISA_AUTO || isa == CPU_ISA_AVX512) && have_avx512())
        return cpu_kernels_avx512(prefetch == CPU_PF_AUTO ? auto_prefetch_l1()
                                                          : prefetch == CPU_PF_L1);
#endif
    else if (isa == CPU_ISA_AVX512) {
        snprintf(err, errlen, "isa=avx512: %s",
                 have_avx2() ? "this CPU (or this build) lacks AVX-512 F/BW/DQ/VL; use isa=auto, "
                               "avx2 or portable"
                             : "this CPU (or this build) lacks AVX-512 F/BW/DQ/VL; use isa=auto "
                               "or portable");
        return NULL;
    }
#if defined(CPU_HAVE_AVX2_TU) && CPU_HAVE_AVX2_TU
    else if (have_avx2())
        return (prefetch == CPU_PF_AUTO ? auto_prefetch_l1() : prefetch == CPU_PF_L1)
                   ? &cpu_kernels_avx2
                   : &cpu_kernels_avx2_l2;
#endif
    else if (isa == CPU_ISA_AVX2) {
        snprintf(
            err, errlen, "isa=avx2: %s",
            have_avx2()
                ? "not built"
                : "this CPU (or this build) lacks AVX2, FMA or F16C; use isa=auto or portable");
        return NULL;
    } else
        k = &cpu_kernels_portable;
    /* The portable kernels do not prefetch. */
    if (prefetch != CPU_PF_AUTO) {
        snprintf(err, errlen,
                 "prefetch=%s: only the avx512 and avx2 kernels prefetch; these are the %s ones",
                 prefetch == CPU_PF_L1 ? "l1" : "l2", k->name);
        return NULL;
    }
    return k;
}
