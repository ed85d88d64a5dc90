/* cuda_params.h — the arguments of the `cuda` backend's kernels (cuda_kern.h), as one plain C
 * struct the plugin (cuda_backend.c, C17) fills and the kernels take by value. */
#ifndef ATTNCONF_CUDA_PARAMS_H
#define ATTNCONF_CUDA_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define CKP_HD __host__ __device__
#else
#define CKP_HD
#endif

/* dtype values of attnconf_dtype */
#define CK_F32 1
#define CK_F16 2
#define CK_BF16 3
#define CK_BOOL 4

/* Everything a kernel needs, passed by value.  Strides are elements; the mask's are 0 on every
 * broadcast axis (as rank-4 (B, Hq, Lq, Lk)). */
typedef struct ck_params {
    int32_t dtype, mask_kind, mask_dtype; /* mask_kind: 0 none, 1 bool, 2 additive */
    int32_t causal;
    int64_t B, Hq, Hkv, Lq, Lk, D, Dv, group;
    int64_t qs[4], ks[4], vs[4], os[4], ms[4];
    const void *q, *k, *v, *mask;
    void *out;
    float scale_f;  /* the scale as the f32 kernel holds it */
    double scale_d; /* as the binary64 rows use it */
    int64_t off;    /* causal offset (also ALiBi's p - i), Lk - Lq unless given */
    int64_t window, chunk;
    const int64_t *lengths, *left_padding, *segment_ids, *block_ids; /* device copies or NULL */
    double softcap;                                                  /* 0 = none */
    double alibi_max_bias;                                           /* 0 = none */
    const float *sinks;                                              /* [Hq] device copy or NULL */
    /* Rows for binary64: flags per output row ((b*Hq + h)*Lq + i) and their count. */
    unsigned char *redo;
    unsigned int *redo_count;
    int32_t f64_all;     /* 1: every row in binary64 (no flash pass) */
    double *f64_scratch; /* [gridDim of the f64 kernel][Dv] accumulators */
    /* Tiling of the flash kernel (ck_plan). */
    int32_t bq, bk, tc;              /* rows, keys per tile; tc: tensor cores (f16/bf16) */
    int32_t dp, dvp;                 /* D, Dv padded to multiples of 16 (tc) or as is */
    int32_t ldq, ldk, ldv, ldo, ldp; /* shared-memory row pitches, elements */
} ck_params;

/* Shared-memory layout of the flash kernel (byte offsets, each 128-byte aligned so WMMA's
 * 256-bit pointer alignment holds at every 16-row tile). */
typedef struct ck_smem_layout {
    size_t q, k, v, s, p, o, keep, colany, rows, total;
} ck_smem_layout;

CKP_HD static inline size_t ck_align128(size_t x)
{
    return (x + 127) & ~(size_t)127;
}

/* Per-row state: m, l, alpha, slope (f32) and any, redo (int), one row per record. */
typedef struct ck_row_state {
    float m, l, alpha, slope;
    int32_t any, redo, valid, pad_;
    int64_t b, h, i;
} ck_row_state;

CKP_HD static inline ck_smem_layout ck_layout(const ck_params *p)
{
    ck_smem_layout L;
    const size_t es = p->tc ? 2 : 4; /* Q, K, V, P elements: the dtype or f32 */
    size_t at = 0;
    L.q = at;
    at = ck_align128(at + (size_t)p->bq * (size_t)p->ldq * es);
    L.k = at;
    at = ck_align128(at + (size_t)p->bk * (size_t)p->ldk * es);
    L.v = at;
    at = ck_align128(at + (size_t)p->bk * (size_t)p->ldv * es);
    L.s = at;
    at = ck_align128(at + (size_t)p->bq * (size_t)p->bk * 4);
    L.p = at;
    at = ck_align128(at + (size_t)p->bq * (size_t)p->ldp * es);
    L.o = at;
    at = ck_align128(at + (size_t)p->bq * (size_t)p->ldo * 4);
    L.keep = at;
    at = ck_align128(at + (size_t)p->bq * (size_t)p->bk);
    L.colany = at;
    at = ck_align128(at + (size_t)p->bk);
    L.rows = at;
    at = ck_align128(at + (size_t)p->bq * sizeof(ck_row_state));
    L.total = at;
    return L;
}

/* Work items of the flash kernel: B * Hkv * ceil(group * Lq / bq). */
CKP_HD static inline int64_t ck_flash_items(const ck_params *p)
{
    const int64_t rows = p->group * p->Lq;
    return p->B * p->Hkv * ((rows + p->bq - 1) / p->bq);
}

#endif
