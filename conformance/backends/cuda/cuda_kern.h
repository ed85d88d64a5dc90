/* cuda_kern.h — the `cuda` backend's kernels, written once for two compilers.
 *
 * nvcc compiles them as CUDA device code (cuda_kern.cu: one thread block of CK_THREADS threads
 * per work item).  A plain C++ compiler compiles the same text as a host EMULATOR
 * (cuda_emu.cpp: the threads of a block run one after another inside each phase), so every
 * golden case runs through this code on a machine without a GPU (the test-only plugin
 * `cuda_emu`).  The price is one discipline, which the device needs anyway: a kernel is a
 * sequence of PHASES separated by barriers; inside a phase a thread reads only what earlier
 * phases wrote, and writes only its own elements (or the same value as every other writer).
 * Per-thread state that outlives a phase lives in shared memory, indexed by the thread.
 *
 * Semantics (SPEC.md; the reference attnref/sdpa.h is the model):
 *   - ck_flash_block: FlashAttention-2 style.  A work item is BQ query rows of one kv head
 *     (the rows of its Hq/Hkv query heads packed one after another, so a decode step's GQA group
 *     shares every K/V tile).  Per BK-key tile: keep flags from the parameters and the mask
 *     tensor (ck_key_kept, ck_mask_keeps), K and V into shared memory (keys no row keeps are
 *     zeroed, never read), S = Q.K^T accumulated in f32 (tensor cores for f16/bf16, head dims
 *     zero-padded to multiples of 16), the score terms in SPEC order, online softmax (running
 *     max, f32 sum), O = O * alpha + P.V (P rounded to the dtype on the tensor-core path).
 *     Excluded keys are SELECTED away (score -inf, weight exactly 0); a tile whose kept V holds
 *     NaN/inf takes the scalar P.V that skips excluded keys (0 * inf would be NaN).
 *   - Rows a f32 kernel cannot compute (a kept score or the result not finite in f32, SPEC
 *     clause 2) are flagged and recomputed by ck_row_f64_block in binary64 with the reference's
 *     own two-pass arithmetic, as are all rows when the tiles do not fit in shared memory.
 *   - Output rounded once to the dtype, round-to-nearest-even (integer conversions below). */
#ifndef ATTNCONF_CUDA_KERN_H
#define ATTNCONF_CUDA_KERN_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define CK_DEV __device__
#define CK_HD __host__ __device__
#else
#define CK_DEV
#define CK_HD
#endif

#define CK_THREADS 128 /* threads per block, 4 warps */
#define CK_WARPS (CK_THREADS / 32)

#include "cuda_params.h"

/* ---- exact conversions (integer arithmetic only; the reference's algorithms) ---- */

CK_HD static inline uint32_t ck_f32_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    return x;
}
CK_HD static inline float ck_f32_from(uint32_t x)
{
    float f;
    memcpy(&f, &x, 4);
    return f;
}
CK_HD static inline uint64_t ck_f64_bits(double d)
{
    uint64_t x;
    memcpy(&x, &d, 8);
    return x;
}

CK_HD static inline float ck_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
    if (e == 0x1f) {
        x = sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u);
    } else if (e) {
        x = sign | ((e + 112) << 23) | (m << 13);
    } else if (!m) {
        x = sign;
    } else {
        e = 113;
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        x = sign | (e << 23) | ((m & 0x3ffu) << 13);
    }
    return ck_f32_from(x);
}

CK_HD static inline float ck_bf16_to_f32(uint16_t h)
{
    return ck_f32_from((uint32_t)h << 16);
}

/* binary64 -> 16-bit format (f16: mbits 10, bias 15; bf16: 7, 127), rounded once (RNE). */
CK_HD static inline uint16_t ck_narrow_f64(double d, unsigned mbits, int bias)
{
    const uint64_t x = ck_f64_bits(d);
    const uint64_t frac_mask = ((uint64_t)1 << 52) - 1;
    const uint32_t inf = ((1u << (15 - mbits)) - 1) << mbits;
    const uint32_t sign = (uint32_t)(x >> 48) & 0x8000u;
    const uint64_t ax = x & 0x7fffffffffffffffull;
    if (ax > 0x7ff0000000000000ull) {
        const uint32_t payload = (uint32_t)((ax & frac_mask) >> (52 - mbits));
        return (uint16_t)(sign | inf | (1u << (mbits - 1)) | payload);
    }
    if (ax == 0x7ff0000000000000ull)
        return (uint16_t)(sign | inf);
    if ((ax >> 52) == 0)
        return (uint16_t)sign;
    const int e = (int)(ax >> 52) - 1023;
    const int emin = 1 - bias;
    if (e > bias)
        return (uint16_t)(sign | inf);
    const uint64_t m = (ax & frac_mask) | ((uint64_t)1 << 52);
    const int eq = e < emin ? emin : e;
    const unsigned sh = (unsigned)(52 - (int)mbits + (eq - e));
    if (sh >= 54)
        return (uint16_t)sign;
    uint64_t q = m >> sh;
    const uint64_t rem = m & (((uint64_t)1 << sh) - 1), half = (uint64_t)1 << (sh - 1);
    q += (rem > half) || (rem == half && (q & 1));
    const uint32_t bits = ((uint32_t)(eq - emin) << mbits) + (uint32_t)q;
    if (bits >= inf)
        return (uint16_t)(sign | inf);
    return (uint16_t)(sign | bits);
}

CK_HD static inline uint16_t ck_f32_to_f16(float f)
{
    return ck_narrow_f64((double)f, 10, 15); /* f32 -> f64 is exact: one rounding */
}
CK_HD static inline uint16_t ck_f32_to_bf16(float f)
{
    return ck_narrow_f64((double)f, 7, 127);
}

/* Element loads (exact widening) and stores (one RNE rounding). */
CK_HD static inline float ck_load_f(const void *p, int dt, int64_t i)
{
    if (dt == CK_F32)
        return ((const float *)p)[i];
    const uint16_t h = ((const uint16_t *)p)[i];
    return dt == CK_F16 ? ck_f16_to_f32(h) : ck_bf16_to_f32(h);
}
CK_HD static inline uint16_t ck_load_u16(const void *p, int64_t i)
{
    return ((const uint16_t *)p)[i];
}
CK_HD static inline void ck_store_d(void *p, int dt, int64_t i, double x)
{
    if (dt == CK_F32)
        ((float *)p)[i] = (float)x; /* RNE */
    else
        ((uint16_t *)p)[i] = dt == CK_F16 ? ck_narrow_f64(x, 10, 15) : ck_narrow_f64(x, 7, 127);
}
CK_HD static inline void ck_store_f(void *p, int dt, int64_t i, float x)
{
    ck_store_d(p, dt, i, (double)x);
}

/* binary64 arithmetic never contracted into FMA (the reference's operations, one by one). */
#if defined(__CUDACC__)
#define CK_DMUL(a, b) __dmul_rn((a), (b))
#define CK_DADD(a, b) __dadd_rn((a), (b))
#else
#define CK_DMUL(a, b) ((a) * (b))
#define CK_DADD(a, b) ((a) + (b))
#endif

/* ---- which keys a row keeps (attnref_sdpa_key_kept, SPEC clauses 3, 4, 19, 20) ---- */

CK_HD static inline int64_t ck_floor_div(int64_t x, int64_t c)
{
    const int64_t q = x / c;
    return q - (x % c != 0 && x < 0);
}

/* 1 if query row i of batch row b keeps key j under causal/offset, window, lengths, left
 * padding, chunk, documents and blocks (not the mask tensor).  Any int64 offset: only j - i is
 * formed, as the reference does. */
CK_HD static inline int ck_key_kept(const ck_params *p, int64_t b, int64_t i, int64_t j)
{
    const int64_t lk = p->Lk;
    if (p->lengths && j >= p->lengths[b])
        return 0;
    if (p->left_padding && j < p->left_padding[b])
        return 0;
    const int64_t off = p->off;
    int64_t pos = 0;
    int in_slot = 0;
    if (off < lk) {
        pos = off + i;
        in_slot = pos >= 0 && pos < lk;
    }
    if (p->segment_ids && (!in_slot || p->segment_ids[b * lk + pos] != p->segment_ids[b * lk + j]))
        return 0;
    if (!p->causal)
        return 1;
    const int64_t d = j - i;
    if (d > off) {
        const int64_t *blk = p->block_ids;
        if (!blk || !in_slot || blk[b * lk + pos] < 0 || blk[b * lk + pos] != blk[b * lk + j])
            return 0;
    } else if (p->window > 0 && (d < 0 && off > INT64_MAX + d ? 1 : off - d >= p->window)) {
        return 0;
    }
    if (p->chunk > 0) {
        const int64_t lp = p->left_padding ? p->left_padding[b] : 0;
        const int64_t t = (j - lp) - ck_floor_div(j - lp, p->chunk) * p->chunk;
        if (d > off) {
            if (ck_floor_div(pos - lp, p->chunk) != ck_floor_div(j - lp, p->chunk))
                return 0;
        } else if ((d < 0 && off > INT64_MAX + d) || off - d >= p->chunk - t) {
            return 0;
        }
    }
    return 1;
}

/* The mask tensor at (b, h, i, j): 1 if it keeps the key (a true byte, an additive value other
 * than -inf), with the additive value in *add (0 otherwise). */
CK_HD static inline int ck_mask_keeps(const ck_params *p, int64_t b, int64_t h, int64_t i,
                                      int64_t j, double *add)
{
    *add = 0.0;
    if (!p->mask_kind)
        return 1;
    const int64_t o = b * p->ms[0] + h * p->ms[1] + i * p->ms[2] + j * p->ms[3];
    if (p->mask_kind == 1)
        return ((const unsigned char *)p->mask)[o] != 0;
    const double m = (double)ck_load_f(p->mask, p->mask_dtype, o);
    if (m == -INFINITY)
        return 0;
    *add = m;
    return 1;
}

CK_HD static inline double ck_alibi_slope(double max_bias, int64_t hq, int64_t h)
{
    int64_t n = 1;
    while (n * 2 <= hq)
        n *= 2;
    if (h < n)
        return exp2(-max_bias * (double)(h + 1) / (double)n);
    return exp2(-(max_bias / 2.0) * (double)(2 * (h - n) + 1) / (double)n);
}

/* a + b for |b| < 2^40, saturating at the int64 limits. */
CK_HD static inline int64_t ck_sat_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}

/* ---- phases: the device runs its own thread, the emulator every thread in turn ---- */
#if defined(__CUDACC__)
#define CK_PHASE(t) for (int t = (int)threadIdx.x, ck_once_ = 1; ck_once_; ck_once_ = 0)
#define CK_SYNC() __syncthreads()
#define CK_SYNC_OR(x) __syncthreads_or(x)
#else
#define CK_PHASE(t) for (int t = 0; t < CK_THREADS; t++)
#define CK_SYNC() ((void)0)
#endif
#if defined(__CUDACC__)
#define CK_ATOMIC_INC(ptr) atomicAdd((ptr), 1u)
#else
#define CK_ATOMIC_INC(ptr) (++*(ptr))
#endif

/* Tensor-core products (cuda_kern.cu: WMMA; cuda_emu.cpp: the same products in loops). */
CK_DEV void ck_mma_qk(const ck_params *p, const void *qs, const void *ks, float *s);
CK_DEV void ck_mma_pv(const ck_params *p, const void *ps, const void *vs, float *o);

/* One work item of the flash kernel.  `item` indexes B * Hkv * tiles; `sm` is the shared
 * memory of ck_layout(p). */
CK_DEV static inline void ck_flash_block(const ck_params *p, int64_t item, unsigned char *sm)
{
    const ck_smem_layout L = ck_layout(p);
    const int BQ = p->bq, BK = p->bk;
    const int64_t rows_per_kv = p->group * p->Lq;
    const int64_t tiles = (rows_per_kv + BQ - 1) / BQ;
    const int64_t bk_item = item / tiles, tile = item % tiles;
    const int64_t b = bk_item / p->Hkv, hk = bk_item % p->Hkv;
    const int64_t rr0 = tile * BQ;
    const int dt = p->dtype;
    const int tc = p->tc;

    float *S = (float *)(sm + L.s);
    float *O = (float *)(sm + L.o);
    unsigned char *keep = sm + L.keep;
    unsigned char *colany = sm + L.colany;
    ck_row_state *R = (ck_row_state *)(sm + L.rows);

    /* The rows' (h, i) and the key range every row's keep set lies in. */
    const int64_t rr_last = (rr0 + BQ < rows_per_kv ? rr0 + BQ : rows_per_kv) - 1;
    const int64_t i_lo = (rr0 / p->Lq == rr_last / p->Lq) ? rr0 % p->Lq : 0;
    const int64_t i_hi = (rr0 / p->Lq == rr_last / p->Lq) ? rr_last % p->Lq : p->Lq - 1;
    int64_t lo = 0, hi = p->Lk;
    if (p->lengths && p->lengths[b] < hi)
        hi = p->lengths[b];
    if (p->left_padding && p->left_padding[b] > lo)
        lo = p->left_padding[b];
    if (p->causal && !p->block_ids) {
        const int64_t f = ck_sat_add(ck_sat_add(p->off, i_hi), 1); /* keys j < off + i_hi + 1 */
        if (f < hi)
            hi = f;
    }
    if (p->causal && p->window > 0) {
        /* keys j > off + i_lo - W; W <= INT64_MAX, so compute off + i_lo + 1 - W saturating */
        const int64_t a = ck_sat_add(ck_sat_add(p->off, i_lo), 1);
        const int64_t f =
            (a < 0 && p->window > 0 && a < INT64_MIN + p->window) ? INT64_MIN : a - p->window;
        if (f > lo)
            lo = f;
    }

    /* Phase 0: row records, O = 0, Q tile into shared memory (zero padded). */
    CK_PHASE(t)
    {
        for (int r = t; r < BQ; r += CK_THREADS) {
            ck_row_state *rs = &R[r];
            const int64_t rr = rr0 + r;
            rs->valid = rr < rows_per_kv;
            rs->b = b;
            rs->h = rs->valid ? hk * p->group + rr / p->Lq : 0;
            rs->i = rs->valid ? rr % p->Lq : 0;
            rs->m = -INFINITY;
            rs->l = 0.0f;
            rs->alpha = 1.0f;
            rs->any = 0;
            rs->redo = 0;
            rs->slope = p->alibi_max_bias > 0.0
                            ? (float)ck_alibi_slope(p->alibi_max_bias, p->Hq, rs->h)
                            : 0.0f;
        }
        for (int64_t e = t; e < (int64_t)BQ * p->ldo; e += CK_THREADS)
            O[e] = 0.0f;
        for (int64_t e = t; e < (int64_t)BQ * p->dp; e += CK_THREADS) {
            const int r = (int)(e / p->dp), d = (int)(e % p->dp);
            const int64_t rr = rr0 + r;
            const int ok = rr < rows_per_kv && d < p->D;
            const int64_t h = ok ? hk * p->group + rr / p->Lq : 0, i = ok ? rr % p->Lq : 0;
            const int64_t qo = b * p->qs[0] + h * p->qs[1] + i * p->qs[2] + d * p->qs[3];
            if (tc)
                ((uint16_t *)(sm + L.q))[r * p->ldq + d] = ok ? ck_load_u16(p->q, qo) : 0;
            else
                ((float *)(sm + L.q))[r * p->ldq + d] = ok ? ck_load_f(p->q, dt, qo) : 0.0f;
        }
    }
    CK_SYNC();

    for (int64_t j0 = lo; j0 < hi; j0 += BK) {
        /* Phase 1: no key is yet known kept. */
        CK_PHASE(t)
        {
            for (int c = t; c < BK; c += CK_THREADS)
                colany[c] = 0;
        }
        CK_SYNC();
        /* Phase 2: keep flags of the tile (parameters and mask tensor). */
        int any = 0;
        CK_PHASE(t)
        {
            int mine = 0;
            for (int e = t; e < BQ * BK; e += CK_THREADS) {
                const int r = e / BK, c = e % BK;
                const int64_t j = j0 + c;
                const ck_row_state *rs = &R[r];
                double add;
                const int k = rs->valid && j < hi && ck_key_kept(p, b, rs->i, j) &&
                              ck_mask_keeps(p, b, rs->h, rs->i, j, &add);
                keep[e] = (unsigned char)k;
                if (k) {
                    colany[c] = 1; /* every writer stores 1 */
                    mine = 1;
                }
            }
#if defined(__CUDACC__)
            any = CK_SYNC_OR(mine);
#else
            any |= mine;
#endif
        }
        if (!any)
            continue;
        /* Phase 3: K and V of the keys some row keeps (others zero); does kept V hold NaN/inf? */
        int vbad = 0;
        CK_PHASE(t)
        {
            int mine = 0;
            for (int64_t e = t; e < (int64_t)BK * p->dp; e += CK_THREADS) {
                const int c = (int)(e / p->dp), d = (int)(e % p->dp);
                const int64_t j = j0 + c;
                const int ok = colany[c] && d < p->D;
                const int64_t ko = b * p->ks[0] + hk * p->ks[1] + j * p->ks[2] + d * p->ks[3];
                if (tc)
                    ((uint16_t *)(sm + L.k))[c * p->ldk + d] = ok ? ck_load_u16(p->k, ko) : 0;
                else
                    ((float *)(sm + L.k))[c * p->ldk + d] = ok ? ck_load_f(p->k, dt, ko) : 0.0f;
            }
            for (int64_t e = t; e < (int64_t)BK * p->dvp; e += CK_THREADS) {
                const int c = (int)(e / p->dvp), d = (int)(e % p->dvp);
                const int64_t j = j0 + c;
                const int ok = colany[c] && d < p->Dv;
                const int64_t vo = b * p->vs[0] + hk * p->vs[1] + j * p->vs[2] + d * p->vs[3];
                const float x = ok ? ck_load_f(p->v, dt, vo) : 0.0f;
                if (!isfinite(x))
                    mine = 1;
                if (tc)
                    ((uint16_t *)(sm + L.v))[c * p->ldv + d] = ok ? ck_load_u16(p->v, vo) : 0;
                else
                    ((float *)(sm + L.v))[c * p->ldv + d] = x;
            }
#if defined(__CUDACC__)
            vbad = CK_SYNC_OR(mine);
#else
            vbad |= mine;
#endif
        }
        /* Phase 4: S = Q.K^T (f32 accumulation). */
        if (tc) {
            ck_mma_qk(p, sm + L.q, sm + L.k, S);
        } else {
            CK_PHASE(t)
            {
                const float *Qf = (const float *)(sm + L.q), *Kf = (const float *)(sm + L.k);
                for (int e = t; e < BQ * BK; e += CK_THREADS) {
                    if (!keep[e])
                        continue;
                    const int r = e / BK, c = e % BK;
                    float acc = 0.0f;
                    for (int64_t d = 0; d < p->D; d++)
                        acc += Qf[r * p->ldq + d] * Kf[c * p->ldk + d];
                    S[e] = acc;
                }
            }
        }
        CK_SYNC();
        /* Phase 5: the score terms in SPEC order; excluded keys -inf; non-finite kept scores
         * send the row to binary64 (clause 2). */
        CK_PHASE(t)
        {
            for (int e = t; e < BQ * BK; e += CK_THREADS) {
                if (!keep[e]) {
                    S[e] = -INFINITY;
                    continue;
                }
                const int r = e / BK, c = e % BK;
                const int64_t j = j0 + c;
                ck_row_state *rs = &R[r];
                float s = S[e] * p->scale_f;
                if (p->softcap > 0.0) {
                    const float cf = (float)p->softcap;
                    s = cf * tanhf(s / cf);
                }
                if (p->alibi_max_bias > 0.0) {
                    const double dist = fabs((double)p->off - (double)(j - rs->i));
                    s -= rs->slope * (float)dist;
                }
                if (p->mask_kind == 2) {
                    double add;
                    (void)ck_mask_keeps(p, b, rs->h, rs->i, j, &add);
                    s += (float)add;
                }
                if (!isfinite(s))
                    rs->redo = 1; /* every writer stores 1 */
                S[e] = s;
            }
        }
        CK_SYNC();
        /* Phase 6: online softmax, one thread per row. */
        CK_PHASE(t)
        {
            for (int r = t; r < BQ; r += CK_THREADS) {
                ck_row_state *rs = &R[r];
                float mt = -INFINITY;
                int kept = 0;
                for (int c = 0; c < BK; c++)
                    if (keep[r * BK + c]) {
                        kept = 1;
                        if (S[r * BK + c] > mt)
                            mt = S[r * BK + c];
                    }
                if (!kept) {
                    rs->alpha = 1.0f;
                    for (int c = 0; c < BK; c++) {
                        if (tc)
                            ((uint16_t *)(sm + L.p))[r * p->ldp + c] = 0;
                        else
                            ((float *)(sm + L.p))[r * p->ldp + c] = 0.0f;
                    }
                    continue;
                }
                const float mnew = rs->m > mt ? rs->m : mt;
                const float alpha = expf(rs->m - mnew); /* 0 for the first kept tile */
                float sum = 0.0f;
                for (int c = 0; c < BK; c++) {
                    const float w = keep[r * BK + c] ? expf(S[r * BK + c] - mnew) : 0.0f;
                    sum += w;
                    if (tc)
                        ((uint16_t *)(sm + L.p))[r * p->ldp + c] =
                            dt == CK_F16 ? ck_f32_to_f16(w) : ck_f32_to_bf16(w);
                    else
                        ((float *)(sm + L.p))[r * p->ldp + c] = w;
                }
                rs->l = rs->any ? rs->l * alpha + sum : sum;
                rs->alpha = rs->any ? alpha : 0.0f;
                rs->m = mnew;
                rs->any = 1;
            }
        }
        CK_SYNC();
        /* Phase 7: O *= alpha per row. */
        CK_PHASE(t)
        {
            for (int64_t e = t; e < (int64_t)BQ * p->dvp; e += CK_THREADS) {
                const int r = (int)(e / p->dvp), d = (int)(e % p->dvp);
                if (R[r].alpha != 1.0f)
                    O[r * p->ldo + d] = R[r].any ? O[r * p->ldo + d] * R[r].alpha : 0.0f;
            }
        }
        CK_SYNC();
        /* Phase 8: O += P.V; a tile with NaN/inf in kept V skips excluded keys one by one. */
        if (tc && !vbad) {
            ck_mma_pv(p, sm + L.p, sm + L.v, O);
        } else {
            CK_PHASE(t)
            {
                for (int64_t e = t; e < (int64_t)BQ * p->Dv; e += CK_THREADS) {
                    const int r = (int)(e / p->Dv), d = (int)(e % p->Dv);
                    float acc = O[r * p->ldo + d];
                    for (int c = 0; c < BK; c++) {
                        if (!keep[r * BK + c])
                            continue;
                        float w, x;
                        if (tc) {
                            const uint16_t pw = ((const uint16_t *)(sm + L.p))[r * p->ldp + c];
                            const uint16_t vx = ((const uint16_t *)(sm + L.v))[c * p->ldv + d];
                            w = dt == CK_F16 ? ck_f16_to_f32(pw) : ck_bf16_to_f32(pw);
                            x = dt == CK_F16 ? ck_f16_to_f32(vx) : ck_bf16_to_f32(vx);
                        } else {
                            w = ((const float *)(sm + L.p))[r * p->ldp + c];
                            x = ((const float *)(sm + L.v))[c * p->ldv + d];
                        }
                        acc += w * x;
                    }
                    O[r * p->ldo + d] = acc;
                }
            }
        }
        CK_SYNC();
    }

    /* Phase 9: the sink joins the normaliser; out = O / l rounded once; a row kept in f32 whose
     * result is not finite goes to binary64. */
    CK_PHASE(t)
    {
        for (int r = t; r < BQ; r += CK_THREADS) {
            ck_row_state *rs = &R[r];
            rs->alpha = 1.0f; /* now: the factor of O */
            if (!rs->valid || !rs->any)
                continue;
            if (p->sinks) {
                const float sg = p->sinks[rs->h];
                const float M = rs->m > sg ? rs->m : sg;
                rs->alpha = expf(rs->m - M);
                rs->l = rs->l * rs->alpha + expf(sg - M);
            }
        }
    }
    CK_SYNC();
    CK_PHASE(t)
    {
        for (int64_t e = t; e < (int64_t)BQ * p->Dv; e += CK_THREADS) {
            const int r = (int)(e / p->Dv), d = (int)(e % p->Dv);
            ck_row_state *rs = &R[r];
            if (!rs->valid)
                continue;
            float y = 0.0f; /* a row that keeps no key is exactly +0 (clause 9) */
            if (rs->any) {
                const float o = p->sinks ? O[r * p->ldo + d] * rs->alpha : O[r * p->ldo + d];
                y = o / rs->l;
                if (!isfinite(y))
                    rs->redo = 1;
            }
            const int64_t oo =
                rs->b * p->os[0] + rs->h * p->os[1] + rs->i * p->os[2] + d * p->os[3];
            ck_store_f(p->out, dt, oo, y);
        }
    }
    CK_SYNC();
    /* Phase 10: rows for binary64 are flagged and counted (ck_f64_item redoes them). */
    CK_PHASE(t)
    {
        for (int r = t; r < BQ; r += CK_THREADS) {
            const ck_row_state *rs = &R[r];
            if (rs->valid && rs->redo) {
                p->redo[(rs->b * p->Hq + rs->h) * p->Lq + rs->i] = 1;
                CK_ATOMIC_INC(p->redo_count);
            }
        }
    }
}

/* ---- binary64 rows: the reference's two passes (max, then weights and P.V) ---- */

/* Shared memory of the f64 kernel: per-thread partials and one chunk of weights. */
typedef struct ck_f64_shared {
    double part[CK_THREADS]; /* pass 1: max; pass 2: sum of weights */
    int64_t nkept[CK_THREADS];
    double w[CK_THREADS];
    unsigned char kept[CK_THREADS];
    double mx, sum;
    int64_t n;
} ck_f64_shared;

/* The binary64 score of a kept key (the reference's operations in its order), or 0 and
 * *kept = 0 for an excluded key. */
CK_DEV static inline double ck_score_f64(const ck_params *p, int64_t b, int64_t h, int64_t i,
                                         int64_t j, double slope, int *kept)
{
    double add;
    *kept = 0;
    if (!ck_key_kept(p, b, i, j) || !ck_mask_keeps(p, b, h, i, j, &add))
        return 0.0;
    *kept = 1;
    const int64_t hk = h / p->group;
    const int64_t qrow = b * p->qs[0] + h * p->qs[1] + i * p->qs[2];
    const int64_t krow = b * p->ks[0] + hk * p->ks[1] + j * p->ks[2];
    double dot = 0.0;
    for (int64_t d = 0; d < p->D; d++)
        dot = CK_DADD(dot, CK_DMUL((double)ck_load_f(p->q, p->dtype, qrow + d * p->qs[3]),
                                   (double)ck_load_f(p->k, p->dtype, krow + d * p->ks[3])));
    double s = CK_DMUL(p->scale_d, dot);
    if (p->softcap > 0.0)
        s = CK_DMUL(p->softcap, tanh(s / p->softcap));
    if (p->alibi_max_bias > 0.0)
        s = CK_DADD(s, -CK_DMUL(slope, fabs((double)p->off - (double)(j - i))));
    return CK_DADD(s, add);
}

/* Row `row` = (b*Hq + h)*Lq + i in binary64; acc is this block's [Dv] scratch. */
CK_DEV static inline void ck_row_f64(const ck_params *p, int64_t row, ck_f64_shared *sh,
                                     double *acc)
{
    const int64_t i = row % p->Lq, bh = row / p->Lq;
    const int64_t h = bh % p->Hq, b = bh / p->Hq;
    const int64_t hk = h / p->group;
    const double slope =
        p->alibi_max_bias > 0.0 ? ck_alibi_slope(p->alibi_max_bias, p->Hq, h) : 0.0;
    /* Pass 1: the row maximum (NaN never wins, as `if (s > mx)`) and the kept count. */
    CK_PHASE(t)
    {
        double mx = -INFINITY;
        int64_t n = 0;
        for (int64_t j = t; j < p->Lk; j += CK_THREADS) {
            int kept;
            const double s = ck_score_f64(p, b, h, i, j, slope, &kept);
            if (kept) {
                n++;
                if (s > mx)
                    mx = s;
            }
        }
        sh->part[t] = mx;
        sh->nkept[t] = n;
        for (int64_t e = t; e < p->Dv; e += CK_THREADS)
            acc[e] = 0.0;
    }
    CK_SYNC();
    CK_PHASE(t)
    {
        if (t == 0) {
            double mx = -INFINITY;
            int64_t n = 0;
            for (int u = 0; u < CK_THREADS; u++) {
                n += sh->nkept[u];
                if (sh->part[u] > mx)
                    mx = sh->part[u];
            }
            double sum = 0.0;
            if (n > 0 && p->sinks) {
                const double sg = (double)p->sinks[h];
                if (sg > mx)
                    mx = sg;
                sum = exp(sg - mx);
            }
            sh->mx = mx;
            sh->sum = sum;
            sh->n = n;
        }
    }
    CK_SYNC();
    /* Pass 2, NT keys at a time: weights, then each thread adds them into its own columns. */
    if (sh->n > 0) {
        CK_PHASE(t)
        {
            sh->part[t] = 0.0;
        }
        CK_SYNC();
        for (int64_t j0 = 0; j0 < p->Lk; j0 += CK_THREADS) {
            CK_PHASE(t)
            {
                const int64_t j = j0 + t;
                int kept = 0;
                double s = 0.0;
                if (j < p->Lk)
                    s = ck_score_f64(p, b, h, i, j, slope, &kept);
                sh->kept[t] = (unsigned char)kept;
                sh->w[t] = kept ? exp(s - sh->mx) : 0.0;
                if (kept)
                    sh->part[t] = CK_DADD(sh->part[t], sh->w[t]);
            }
            CK_SYNC();
            CK_PHASE(t)
            {
                for (int64_t e = t; e < p->Dv; e += CK_THREADS) {
                    double a = acc[e];
                    for (int u = 0; u < CK_THREADS; u++) {
                        if (!sh->kept[u])
                            continue;
                        const int64_t vo =
                            b * p->vs[0] + hk * p->vs[1] + (j0 + u) * p->vs[2] + e * p->vs[3];
                        a = CK_DADD(a, CK_DMUL(sh->w[u], (double)ck_load_f(p->v, p->dtype, vo)));
                    }
                    acc[e] = a;
                }
            }
            CK_SYNC();
        }
        CK_PHASE(t)
        {
            if (t == 0) {
                double sum = sh->sum;
                for (int u = 0; u < CK_THREADS; u++)
                    sum = CK_DADD(sum, sh->part[u]);
                sh->sum = sum;
            }
        }
        CK_SYNC();
    }
    CK_PHASE(t)
    {
        for (int64_t e = t; e < p->Dv; e += CK_THREADS) {
            const double r = sh->n > 0 ? acc[e] / sh->sum : 0.0;
            const int64_t oo = b * p->os[0] + h * p->os[1] + i * p->os[2] + e * p->os[3];
            ck_store_d(p->out, p->dtype, oo, r);
        }
    }
    CK_SYNC();
}

/* Block `blk` of `nblk` of the binary64 kernel: every row (f64_all) or the flagged ones,
 * grid-strided; acc is the block's [Dv] scratch. */
CK_DEV static inline void ck_f64_item(const ck_params *p, int64_t blk, int64_t nblk,
                                      ck_f64_shared *sh)
{
    if (!p->f64_all && *p->redo_count == 0)
        return;
    double *acc = p->f64_scratch + blk * p->Dv;
    const int64_t rows = p->B * p->Hq * p->Lq;
    for (int64_t row = blk; row < rows; row += nblk) {
        if (!p->f64_all && !p->redo[row])
            continue;
        ck_row_f64(p, row, sh, acc);
    }
}

#endif
