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
 *                    Where the CPU also has AVX512_BF16, the AVX-512 table adds bf16 decode
 *                    scores in pairs (VDPBF16PS, cpu_kern_avx512_runs.c): within the error bound,
 *                    not the AVX2 table's bits.
 *   prefetch=auto|l1|l2
 *                    where the decode run kernels (AVX-512 and AVX2 tables) ask for the next
 *                    tile's K/V rows: l1 = into the L1 data cache (PREFETCHT0), l2 = into the L2
 *                    (PREFETCHT1); auto (the default) = l1 where the L1 data cache holds at least
 *                    48 KiB (sysconf), else l2 (README, "Fewer instructions per key", "A Zen 4
 *                    again").  The values are the same either way.  The portable kernels do not
 *                    prefetch, so l1 or l2 with them refuses to open (ENOTSUP).
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

typedef enum cpu_prefetch { CPU_PF_AUTO = 0, CPU_PF_L1, CPU_PF_L2 } cpu_prefetch;

typedef struct cpu_options {
    int threads;           /* >= 1 */
    cpu_isa isa;           /* as asked (option, else environment, else auto) */
    cpu_prefetch prefetch; /* as asked */
    double slowdown;       /* 0 = off */
} cpu_options;

/* The option table of the plugin (attnconf_backend.options), NULL-key terminated. */
extern const attnconf_option_info cpu_option_info[];

/* Fill *o from options[0..n) (keys already checked by the host against cpu_option_info) and
 * the environment.  Returns ATTNCONF_OK, or ATTNCONF_EINVAL with a one-line reason naming the
 * option (or the environment variable) and the accepted values in err. */
int cpu_options_parse(const attnconf_option *options, size_t n, cpu_options *o, char *err,
                      size_t errlen);

/* The kernel table for isa and prefetch on this CPU: NULL (with a reason in err) when avx512 or
 * avx2 is asked for and the CPU or this build lacks that set (AVX-512 F/BW/DQ/VL; AVX2, FMA,
 * F16C), or when the table chosen cannot prefetch as asked (see prefetch= above). */
const cpu_kernels *cpu_options_kernels(cpu_isa isa, cpu_prefetch prefetch, char *err,
                                       size_t errlen);

#endif
