/* kernel_mutant.c — a small flash-style SDPA kernel, and the kernel bugs of the test-only
 * mutants (see mutants.h, RBM_KERNEL and up).
 *
 * The other mutants wrap the binary64 reference, which cannot show a bug that lives in how a
 * fast kernel computes: a running maximum seeded with a finite sentinel, the raw q.k rounded to
 * the input dtype, one tensor's strides reused for another or K/V assumed dense, a decode
 * specialisation, a block skipped as if it were fully masked.  This file is such a kernel, written the way production
 * kernels are (FlashAttention's online softmax): per query row it walks the keys in blocks of
 * KM_BLOCK, keeps a running maximum m, a running sum l and an f32 accumulator, rescales them by
 * exp(m_old - m_new) when the maximum grows, and rounds each probability to the input dtype
 * before multiplying it with V (the P.V matmul's operand type).  Dot products, scores, the mask
 * addition and the softmax are f32; the output is rounded once (RNE) to the dtype.
 *
 * With bug = RBM_KERNEL the kernel is honest and must pass every case (ctest
 * conformance.mutant_kernel.passes_all); each other RBM_* number of the kernel switches on one
 * bug and must be caught.  The caller (mutants.c) has already run attnref_sdpa on the same
 * arguments, so every descriptor, shape, dtype and parameter here is valid.
 */
#include "mutants.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attnref/dtype.h"

#define KM_BLOCK 16 /* keys per block, as a tile of a GPU kernel */

/* x rounded to dt and widened back (exact): the dtype of a kernel's matmul operands. */
static float km_round(float x, attnref_dtype dt)
{
    switch (dt) {
    case ATTNREF_F16: return attnref_f16_to_f32(attnref_f32_to_f16(x));
    case ATTNREF_BF16: return attnref_bf16_to_f32(attnref_f32_to_bf16(x));
    default: return x;
    }
}

/* x rounded toward zero to dt (RBM_TRUNCATE_OUTPUT): the RNE result, stepped one unit toward
 * zero when RNE rounded away from it.  Stepping the bit pattern's magnitude down by one is one
 * unit in every binary format (an infinity becomes the largest finite value). */
static double km_truncate(double x, attnref_dtype dt)
{
    if (!isfinite(x) || x == 0.0)
        return x;
    if (dt == ATTNREF_F32) {
        float f = (float)x;
        if (fabs((double)f) > fabs(x))
            f = nextafterf(f, 0.0f);
        return f;
    }
    uint16_t h = dt == ATTNREF_F16 ? attnref_f64_to_f16(x) : attnref_f64_to_bf16(x);
    uint16_t cell[1] = {h};
    if (fabs(attnref_load(cell, dt, 0)) > fabs(x))
        cell[0] = (uint16_t)(h - 1); /* magnitude - 1 ulp; h & 0x7fff >= 1 here */
    return attnref_load(cell, dt, 0);
}

/* An element offset kept inside [0, span]: the identity for every offset an honest read makes;
 * past the end it is reflected back (not wrapped: wrapping a dense batch stride over a
 * stride-0 slice would land on the right elements by accident). */
static int64_t km_in(int64_t off, int64_t span)
{
    return off <= span ? off : span - (off - span - 1) % (span + 1);
}

/* Pad a rank 0..4 mask descriptor to rank 4 with NumPy broadcasting: stride 0 wherever the
 * extent is 1 or the dimension is missing. */
static void km_mask_strides(const attnref_tensor *m, int64_t st[4])
{
    const int32_t pad = 4 - m->ndim;
    for (int d = 0; d < 4; d++) {
        const int64_t ext = d < pad ? 1 : m->shape[d - pad];
        st[d] = ext == 1 ? 0 : m->strides[d - pad];
    }
}

/* The ALiBi slope of query head h of hq in f32 (clause 21), as ggml computes it; with
 * RBM_ALIBI_PROSE the paper's prose instead, 2^(-max_bias (h + 1) / hq) for every head, which
 * differs when hq is not a power of two. */
static float km_slope(float max_bias, int64_t hq, int64_t h, int bug)
{
    if (bug == RBM_ALIBI_PROSE)
        return exp2f(-max_bias * (float)(h + 1) / (float)hq);
    int64_t n = 1;
    while (n * 2 <= hq)
        n *= 2;
    const float m0 = exp2f(-max_bias / (float)n), m1 = exp2f(-(max_bias / 2.0f) / (float)n);
    return h < n ? powf(m0, (float)(h + 1)) : powf(m1, (float)(2 * (h - n) + 1));
}

/* Row (b, h, i) in binary64 from the f32-held scale and slope (SPEC clause 2's fallback for
 * scores beyond the f32 range): the same keys and terms, one rounding at the end.  Arguments as
 * km_sdpa's, already valid; kp the keep parameters the kernel uses.  Returns 0, or -1 when the
 * accumulator cannot be allocated. */
static int km_row_wide(const attnref_tensor *q, const attnref_tensor *k, const attnref_tensor *v,
                       const attnref_tensor *mask, const attnref_sdpa_params *p,
                       const attnref_sdpa_params *kp, int64_t b, int64_t h, int64_t i, float sigma,
                       float slope, attnref_tensor *out)
{
    const int64_t Lq = q->shape[2], D = q->shape[3], Lk = k->shape[2], Dv = v->shape[3];
    const int64_t g = h / (q->shape[1] / k->shape[1]);
    const int64_t off = p->has_causal_offset ? p->causal_offset : Lk - Lq;
    const double pos = (double)off + (double)i;
    int64_t mst[4] = {0, 0, 0, 0};
    if (mask)
        km_mask_strides(mask, mst);
    double *acc = calloc((size_t)(Dv > 0 ? Dv : 1), sizeof *acc);
    if (!acc)
        return -1;
    double mx = p->sinks ? p->sinks[h] : -INFINITY, sum = 0.0;
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t j = 0; j < Lk; j++) {
            if (!attnref_sdpa_key_kept(kp, Lq, Lk, b, i, j))
                continue;
            double add = 0.0;
            if (mask) {
                add = attnref_load(mask->data, mask->dtype,
                                   b * mst[0] + h * mst[1] + i * mst[2] + j * mst[3]);
                if (mask->dtype == ATTNREF_BOOL ? add == 0.0 : add == -INFINITY)
                    continue;
                if (mask->dtype == ATTNREF_BOOL)
                    add = 0.0;
            }
            double dot = 0.0;
            for (int64_t d = 0; d < D; d++)
                dot += attnref_load(q->data, q->dtype,
                                    b * q->strides[0] + h * q->strides[1] + i * q->strides[2] +
                                        d * q->strides[3]) *
                       attnref_load(k->data, k->dtype,
                                    b * k->strides[0] + g * k->strides[1] + j * k->strides[2] +
                                        d * k->strides[3]);
            double sc = (double)sigma * dot;
            if (p->softcap > 0.0)
                sc = p->softcap * tanh(sc / p->softcap);
            sc -= (double)slope * fabs(pos - (double)j);
            sc += add;
            if (pass == 0) {
                mx = sc > mx ? sc : mx;
                continue;
            }
            const double w = exp(sc - mx);
            sum += w;
            for (int64_t e = 0; e < Dv; e++)
                acc[e] += w * attnref_load(v->data, v->dtype,
                                           b * v->strides[0] + g * v->strides[1] +
                                               j * v->strides[2] + e * v->strides[3]);
        }
        if (pass == 0 && p->sinks)
            sum = 0.0; /* the sink's e^(sigma - mx) is added once the max is known */
    }
    if (p->sinks)
        sum += exp(p->sinks[h] - mx);
    for (int64_t e = 0; e < Dv; e++)
        attnref_store(out->data, out->dtype,
                      b * out->strides[0] + h * out->strides[1] + i * out->strides[2] +
                          e * out->strides[3],
                      sum > 0.0 ? acc[e] / sum : 0.0);
    free(acc);
    return 0;
}

int km_sdpa(const attnref_tensor *q, const attnref_tensor *k, const attnref_tensor *v,
            const attnref_tensor *mask, const attnref_sdpa_params *p, attnref_tensor *out, int bug,
            attnref_diag *diag)
{
    const int64_t B = q->shape[0], Hq = q->shape[1], Lq = q->shape[2], D = q->shape[3];
    const int64_t Lk = k->shape[2], Dv = v->shape[3], group = Hq / k->shape[1];
    const attnref_dtype dt = q->dtype;
    const float sigma = p->has_scale ? (float)p->scale : (float)(1.0 / sqrt((double)D));
    const float cap = (float)p->softcap;
    const int64_t off = p->has_causal_offset ? p->causal_offset : Lk - Lq; /* p - i */
    /* RBM_CHUNK_ABSOLUTE: the keep rule without the chunk; the chunk is then counted from slot 0
     * below instead of from the row's first real token. */
    attnref_sdpa_params pk = *p;
    if (bug == RBM_CHUNK_ABSOLUTE)
        pk.chunk = 0;
    int64_t mst[4] = {0, 0, 0, 0};
    if (mask)
        km_mask_strides(mask, mst);

    /* The strides K and V are read with, and the largest offset each descriptor addresses. */
    int64_t ks[4], vs[4], kspan = 0, vspan = 0;
    for (int d = 0; d < 4; d++) {
        ks[d] = k->strides[d];
        vs[d] = v->strides[d];
        kspan += (k->shape[d] - 1) * k->strides[d];
        vspan += (v->shape[d] - 1) * v->strides[d];
    }
    /* RBM_KV_STRIDES: V addressed with K's strides.  Only where that stays inside V's buffer
     * (same extents): elsewhere the kernel is honest, so the bug is a wrong answer, not a
     * crash in the host's guard pages. */
    if (bug == RBM_KV_STRIDES && Dv == D && kspan <= vspan)
        memcpy(vs, ks, sizeof vs);
    /* RBM_DENSE_KV: the batch and head strides of K and V derived from the extents, as if each
     * (b, kv head) were a dense block of Lk rows (a kernel given only the row stride).  Dense
     * BHLD input is unaffected; a stride-0 broadcast or a (B,L,H,D) view is misread.  Offsets
     * past the real span are reflected inside it (km_in), so the host sees wrong values, not a
     * fault. */
    if (bug == RBM_DENSE_KV) {
        ks[1] = Lk * ks[2];
        ks[0] = k->shape[1] * ks[1];
        vs[1] = Lk * vs[2];
        vs[0] = v->shape[1] * vs[1];
    }

    float *acc = malloc((size_t)(Dv > 0 ? Dv : 1) * sizeof *acc);
    if (!acc) {
        if (diag)
            strcpy(diag->msg, "kernel mutant: cannot allocate the accumulator");
        return ATTNREF_ENOMEM;
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < Lq; i++) {
                const int64_t g = h / group;
                /* RBM_DECODE_MASK_HEAD: the decode path (Lq = 1) indexes a per-head mask with
                 * the kv head, as if the mask had Hkv heads. */
                const int64_t mh = (bug == RBM_DECODE_MASK_HEAD && Lq == 1) ? g : h;
                float m = bug == RBM_SEED_FINITE ? -5.0e4f : -INFINITY;
                float l = 0.0f;
                const float slope =
                    p->alibi_max_bias > 0.0 ? km_slope((float)p->alibi_max_bias, Hq, h, bug) : 0.0f;
                const double pos = (double)off + (double)i; /* the query's absolute position */
                int wide = 0;
                for (int64_t e = 0; e < Dv; e++)
                    acc[e] = 0.0f;
                for (int64_t j0 = 0; j0 < Lk; j0 += KM_BLOCK) {
                    const int64_t n = Lk - j0 < KM_BLOCK ? Lk - j0 : KM_BLOCK;
                    float s[KM_BLOCK];
                    int kept[KM_BLOCK], any = 0, all = 1;
                    for (int64_t t = 0; t < n; t++) {
                        const int64_t j = j0 + t;
                        int keep = attnref_sdpa_key_kept(&pk, Lq, Lk, b, i, j);
                        if (keep && bug == RBM_CHUNK_ABSOLUTE && p->chunk > 0)
                            keep = floor((double)j / (double)p->chunk) ==
                                   floor(pos / (double)p->chunk);
                        float add = 0.0f;
                        if (keep && mask) {
                            const double mv =
                                attnref_load(mask->data, mask->dtype,
                                             b * mst[0] + mh * mst[1] + i * mst[2] + j * mst[3]);
                            if (mask->dtype == ATTNREF_BOOL)
                                keep = mv != 0.0;
                            else if (mv == -INFINITY)
                                /* RBM_SOFTCAP_AFTER_MASK caps the masked score too: c tanh(-inf)
                                 * = -c, a finite score that takes part in the softmax. */
                                keep = bug == RBM_SOFTCAP_AFTER_MASK && cap > 0.0f;
                            add = mask->dtype == ATTNREF_BOOL ? 0.0f : (float)mv;
                        }
                        kept[t] = keep;
                        s[t] = add;
                        any |= keep;
                        all &= keep;
                    }
                    if (!any)
                        continue; /* a fully masked block contributes nothing: skip it */
                    /* RBM_TAIL_TILE: a vector loop without its remainder: the last, partial
                     * tile of a row longer than one tile is never processed. */
                    if (bug == RBM_TAIL_TILE && j0 > 0 && n < KM_BLOCK)
                        continue;
                    /* RBM_BLOCK_SKIP: the skip test looks at the block's edge keys only, so a
                     * block whose first or last key is masked is skipped although it keeps
                     * others (a causal diagonal, a window edge or padding inside a block). */
                    if (bug == RBM_BLOCK_SKIP && !all && (!kept[0] || !kept[n - 1]))
                        continue;
                    /* RBM_BLOCK_FIRST_KEY: visibility judged by the block's first key, as a
                     * kernel that compares one position per tile with the mask edges would: a
                     * masked region that ends inside a block hides the rest of it. */
                    if (bug == RBM_BLOCK_FIRST_KEY && !kept[0])
                        continue;
                    float mb = -INFINITY;
                    for (int64_t t = 0; t < n; t++) {
                        if (!kept[t])
                            continue;
                        const int64_t j = j0 + t;
                        float dot = 0.0f;
                        for (int64_t d = 0; d < D; d++) {
                            const float qd =
                                (float)attnref_load(q->data, dt,
                                                    b * q->strides[0] + h * q->strides[1] +
                                                        i * q->strides[2] + d * q->strides[3]);
                            const float kd = (float)attnref_load(
                                k->data, dt,
                                km_in(b * ks[0] + g * ks[1] + j * ks[2] + d * ks[3], kspan));
                            const float prod = qd * kd;
                            dot = dot + prod;
                        }
                        /* RBM_QK_ROUND: the raw q.k stored in the input dtype before the
                         * scale is applied (f16 overflows above 65504). */
                        /* SPEC clause 2: f32 scores that overflow from finite inputs send the
                         * row to the binary64 path below (judged on the honest product, so
                         * RBM_QK_ROUND's own overflow stays its bug). */
                        if (!isfinite(sigma * dot) && isfinite(dot))
                            wide = 1;
                        if (bug == RBM_QK_ROUND)
                            dot = km_round(dot, dt);
                        float scaled = sigma * dot;
                        /* Clause 20: the cap on the scaled score, before the bias and the mask;
                         * RBM_SOFTCAP_UNSCALED caps the raw q.k and scales afterwards. */
                        if (cap > 0.0f && bug == RBM_SOFTCAP_UNSCALED)
                            scaled = sigma * (cap * tanhf(dot / cap));
                        else if (cap > 0.0f && bug != RBM_SOFTCAP_AFTER_MASK)
                            scaled = cap * tanhf(scaled / cap);
                        if (slope > 0.0f) {
                            /* Clause 21: -m |p - j|; RBM_ALIBI_SIGNED writes it m (j - p), equal
                             * up to the row's constant only where no later key is kept. */
                            const float dist = (float)fabs(pos - (double)j);
                            scaled -= bug == RBM_ALIBI_SIGNED ? slope * (float)(pos - (double)j)
                                                              : slope * dist;
                        }
                        s[t] = scaled + s[t];
                        if (cap > 0.0f && bug == RBM_SOFTCAP_AFTER_MASK)
                            s[t] = cap * tanhf(s[t] / cap);
                        if (s[t] > mb)
                            mb = s[t];
                    }
                    const float mnew = mb > m ? mb : m;
                    if (mnew == -INFINITY)
                        continue; /* only -inf scores so far: nothing to add */
                    const float corr = expf(m - mnew);
                    l = l * corr;
                    for (int64_t e = 0; e < Dv; e++)
                        acc[e] = acc[e] * corr;
                    for (int64_t t = 0; t < n; t++) {
                        if (!kept[t])
                            continue;
                        const int64_t j = j0 + t;
                        const float pw = expf(s[t] - mnew);
                        l = l + pw;
                        const float pr = km_round(pw, dt);
                        for (int64_t e = 0; e < Dv; e++) {
                            const float ve = (float)attnref_load(
                                v->data, dt,
                                km_in(b * vs[0] + g * vs[1] + j * vs[2] + e * vs[3], vspan));
                            const float term = pr * ve;
                            acc[e] = acc[e] + term;
                        }
                    }
                    m = mnew;
                }
                if (p->sinks && l != 0.0f) {
                    /* Clause 22: the sink joins the normaliser unscaled, with no value.
                     * RBM_SINK_VALUE gives it key 0's value vector; RBM_SINK_DROPPED_MASKED
                     * drops it on a row whose kept keys all sit at a finite-minimum mask (its
                     * running max is far below any real score). */
                    const float sk = (float)p->sinks[h];
                    const float masked = mask && mask->dtype != ATTNREF_BOOL
                                             ? (float)(attnref_dtype_finite_min(mask->dtype) / 2)
                                             : -INFINITY;
                    if (!(bug == RBM_SINK_DROPPED_MASKED && m <= masked)) {
                        const float mn = sk > m ? sk : m, corr = expf(m - mn), ps = expf(sk - mn);
                        l = l * corr + ps;
                        for (int64_t e = 0; e < Dv; e++) {
                            acc[e] = acc[e] * corr;
                            if (bug == RBM_SINK_VALUE)
                                acc[e] += ps * (float)attnref_load(
                                                   v->data, dt,
                                                   km_in(b * vs[0] + g * vs[1] + e * vs[3], vspan));
                        }
                    }
                }
                if (wide && bug != RBM_NO_WIDE) {
                    if (km_row_wide(q, k, v, mask, p, &pk, b, h, i, sigma, slope, out) != 0) {
                        free(acc);
                        if (diag)
                            strcpy(diag->msg, "kernel mutant: cannot allocate a wide row");
                        return ATTNREF_ENOMEM;
                    }
                    continue;
                }
                for (int64_t e = 0; e < Dv; e++) {
                    /* l == 0: no key kept (clause 9), or, with a finite seed, every weight
                     * underflowed against it.  A NaN l (inf - inf from an overflowed score)
                     * propagates, as in a real kernel. */
                    const double x = l != 0.0f ? (double)acc[e] / (double)l : 0.0;
                    const int64_t o = b * out->strides[0] + h * out->strides[1] +
                                      i * out->strides[2] + e * out->strides[3];
                    attnref_store(out->data, out->dtype, o,
                                  bug == RBM_TRUNCATE_OUTPUT ? km_truncate(x, out->dtype) : x);
                }
            }
    free(acc);
    return ATTNREF_OK;
}
