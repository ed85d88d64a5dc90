/* cpu_kern_avx512_runs.h — the AVX-512 decode run kernels (cpu_kern_avx512_runs.c), private to
 * the cpu plugin: cpu_kern_avx512.c puts them into the AVX-512 table as scores_runs and pv_runs.
 * Contracts, arguments and results are those of the table members (cpu_kern.h); the values are
 * bit for bit those of the AVX2 table's scores_rows / pv_rows on each run, which the AVX-512 table
 * shares, but for the scores of bf16 rows in runs_q's pairs layout (CPU_BF16P: VDPBF16PS, within
 * the same error bound).  Call them only on a CPU with AVX-512 F/BW/DQ/VL and AVX2/FMA/F16C. */
#ifndef ATTNCONF_CPU_KERN_AVX512_RUNS_H
#define ATTNCONF_CPU_KERN_AVX512_RUNS_H

#include "cpu_kern.h"

/* _l1: the next tile's rows are asked into the L1 (PREFETCHT0), _l2: into the L2 (PREFETCHT1);
 * the values are the same.  f32 goes to the AVX2 run kernels that ask into the same cache. */
void cpu_avx512_scores_runs_l1(const float *q, size_t ldq, int nrows, const cpu_run *runs,
                               int nruns, int dtype, int64_t D, float sigma, float *s, size_t lds,
                               const cpu_run *pf, int npf);
void cpu_avx512_scores_runs_l2(const float *q, size_t ldq, int nrows, const cpu_run *runs,
                               int nruns, int dtype, int64_t D, float sigma, float *s, size_t lds,
                               const cpu_run *pf, int npf);

/* The query rows' layout for the scores above (the table's runs_q, cpu_kern.h). */
int cpu_avx512_runs_q(const float *q, int nrows, int64_t D, int dtype, float sigma, float *dst);

void cpu_avx512_pv_runs_l1(const float *p, size_t ldp, int nrows, const cpu_run *runs, int nruns,
                           int dtype, int64_t Dv, const float *corr, float *o, size_t ldo,
                           const cpu_run *pf, int npf);
void cpu_avx512_pv_runs_l2(const float *p, size_t ldp, int nrows, const cpu_run *runs, int nruns,
                           int dtype, int64_t Dv, const float *corr, float *o, size_t ldo,
                           const cpu_run *pf, int npf);

#endif
