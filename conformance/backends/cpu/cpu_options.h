/* cpu_options.h — the cpu plugin's backend options and its choice of kernels.
 *
 *   threads=N|auto   threads per sdpa call, the caller included (1..1024); auto (the default) =
 *                    the CPUs in this process's affinity mask (sched_getaffinity)
 *   isa=auto|avx512|avx2|portable
 *                    micro-kernels: auto = the widest this CPU and build have: AVX-512
 *                    (F/BW/DQ/VL, with the AVX2 set), else AVX2 (+FMA, F16C), else the portable
 *                    C ones; avx512 / avx2 = those or refuse to open (ENOTSUP) on a CPU without
 *                    them; portable = the portable ones everywhere.  When the option is not
 *                    given, the environment variable ATTNCONF_CPU_ISA (same values) decides.
 *   slowdown=F       TEST-ONLY (0 = off, the default; 0 <= F <= 10): after each sdpa call, spin
 *                    for F times the call's own duration, a known regression for testing
 *                    performance tooling (perf-compare must flag slowdown=0.10).  Never use it
 *                    to measure anything else.
 */
#ifndef ATTNCONF_CPU_OPTIONS_H
#define ATTNCONF_CPU_OPTIONS_H

#include <stddef.h>

#include "attnconf/backend.h"
#include "cpu_kern.h"

typedef enum cpu_isa { CPU_ISA_AUTO = 0, CPU_ISA_AVX2, CPU_ISA_PORTABLE, CPU_ISA_AVX512 } cpu_isa;

typedef struct cpu_options {
    int threads;     /* >= 1 */
    cpu_isa isa;     /* as asked (option, else environment, else auto) */
    double slowdown; /* 0 = off */
} cpu_options;

/* The option table of the plugin (attnconf_backend.options), NULL-key terminated. */
extern const attnconf_option_info cpu_option_info[];

/* Fill *o from options[0..n) (keys already checked by the host against cpu_option_info) and
 * the environment.  Returns ATTNCONF_OK, or ATTNCONF_EINVAL with a one-line reason naming the
 * option (or the environment variable) and the accepted values in err. */
int cpu_options_parse(const attnconf_option *options, size_t n, cpu_options *o, char *err,
                      size_t errlen);

/* The kernel table for isa on this CPU: NULL (with a reason in err) when avx512 or avx2 is asked
 * for and the CPU or this build lacks that set (AVX-512 F/BW/DQ/VL; AVX2, FMA, F16C). */
const cpu_kernels *cpu_options_kernels(cpu_isa isa, char *err, size_t errlen);

#endif
