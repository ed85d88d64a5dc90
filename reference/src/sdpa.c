/* sdpa.c — reference scaled-dot-product attention (see sdpa.h for the contract).
 *
 * Written for clarity and exactness, not speed: every input is read exactly as a double, the
 * whole softmax runs in double with a fixed loop order, and each output element is rounded
 * once.  Skipped keys are never read, which is what makes NaN/inf in masked K/V harmless.
 */
#include "attnref/sdpa.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "attnref/dtype.h"
#include "internal.h"

/* Shape and dtype validation; fills the dimensions on success. */
typedef struct dims {
    int64_t b, hq, hkv, lq, lk, d, dv;
} dims;

static int check_rank4(const attnref_tensor *t, const char *name, const char *layout,
                       attnref_diag *diag)
{
    if (t->ndim != 4)
        return attnref__fail(diag, ATTNREF_EINVAL, "%s: expected rank 4 %s, got rank %d", name,
                             layout, (int)t->ndim);
    return ATTNREF_OK;
}

/* The terms of SPEC clauses 20-22 against the validated dimensions. */
static int check_terms(const attnref_sdpa_params *p, const dims *dm, attnref_diag *diag)
{
    if (!(p->softcap >= 0.0) || !isfinite(p->softcap))
        return attnref__fail(diag, ATTNREF_EINVAL,
                             "softcap: %g must be finite and > 0 (0 = no soft-capping)",
                             p->softcap);
    if (!(p->alibi_max_bias >= 0.0) || !isfinite(p->alibi_max_bias))
        return attnref__fail(diag, ATTNREF_EINVAL,
                             "alibi_max_bias: %g must be finite and > 0 (0 = no ALiBi)",
                             p->alibi_max_bias);
    for (int64_t h = 0; p->sinks && h < dm->hq; h++)
        if (!isfinite(p->sinks[h]))
            return attnref__fail(diag, ATTNREF_EINVAL, "sinks[%lld]: %g is not finite",
                                 (long long)h, p->sinks[h]);
    if (p->chunk < 0)
        return attnref__fail(diag, ATTNREF_EINVAL, "chunk: %lld is negative (0 = no chunks)",
                             (long long)p->chunk);
    if (p->chunk > 0 && !p->causal)
        return attnref__fail(diag, ATTNREF_EINVAL,
                             "chunk: chunked attention needs causal (chunks are counted along the "
                             "causal positions)");
    if (p->block_ids && !p->causal)
        return attnref__fail(diag, ATTNREF_EINVAL,
                             "block_ids: bidirectional blocks need causal (a block adds its later "
                             "keys to the causal set)");
    const int64_t *ids[2] = {p->segment_ids, p->block_ids};
    const char *names[2] = {"segment_ids", "block_ids"};
    for (int a = 0; a < 2; a++)
        if (ids[a] && p->batch != dm->b)
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "%s: %lld rows (params.batch), but q has batch B = %lld", names[a],
                                 (long long)p->batch, (long long)dm->b);
    return ATTNREF_OK;
}

double attnref_alibi_slope(double max_bias, int64_t hq, int64_t h)
{
    int64_t n = 1;
    while (n * 2 <= hq)
        n *= 2;
    if (h < n)
        return exp2(-max_bias * (double)(h + 1) / (double)n);
    return exp2(-(max_bias / 2.0) * (double)(2 * (h - n) + 1) / (double)n);
}

/* The mask parameters of SPEC clause 19 against the validated dimensions. */
static int check_mask_params(const attnref_sdpa_params *p, const dims *dm, attnref_diag *diag)
{
    if (p->window < 0)
        return attnref__fail(diag, ATTNREF_EINVAL, "window: %lld is negative (0 = no window)",
                             (long long)p->window);
    if (p->window > 0 && !p->causal)
        return attnref__fail(diag, ATTNREF_EINVAL,
                             "window: a sliding window needs causal (it counts back from the "
                             "query's causal position)");
    const int64_t *arrays[2] = {p->lengths, p->left_padding};
    const char *names[2] = {"lengths", "left_padding"};
    for (int a = 0; a < 2; a++) {
        if (!arrays[a])
            continue;
        if (p->batch != dm->b)
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "%s: %lld entries (params.batch), but q has batch B = %lld",
                                 names[a], (long long)p->batch, (long long)dm->b);
        for (int64_t b = 0; b < dm->b; b++)
            if (arrays[a][b] < 0 || arrays[a][b] > dm->lk)
                return attnref__fail(diag, ATTNREF_EINVAL, "%s[%lld]: %lld is outside 0..Lk = %lld",
                                     names[a], (long long)b, (long long)arrays[a][b],
                                     (long long)dm->lk);
    }
    return ATTNREF_OK;
}

/* The query's absolute position off + i (0 <= i < Lq) into *pos when it is a key slot
 * 0..lk-1, and 1; else 0.  off < lk bounds the sum, so nothing overflows. */
static int query_slot(int64_t off, int64_t i, int64_t lk, int64_t *pos)
{
    if (off >= lk)
        return 0;
    *pos = off + i;
    return *pos >= 0 && *pos < lk;
}

/* floor(x / c) for c >= 1. */
static int64_t floor_div(int64_t x, int64_t c)
{
    const int64_t q = x / c;
    return q - (x % c != 0 && x < 0);
}

int attnref_sdpa_key_kept(const attnref_sdpa_params *p, int64_t lq, int64_t lk, int64_t b,
                          int64_t i, int64_t j)
{
    if (!p)
        return 1;
    if (p->lengths && j >= p->lengths[b])
        return 0;
    if (p->left_padding && j < p->left_padding[b])
        return 0;
    const int64_t off = p->has_causal_offset ? p->causal_offset : lk - lq;
    int64_t pos = 0;
    const int in_slot = query_slot(off, i, lk, &pos);
    if (p->segment_ids && (!in_slot || p->segment_ids[b * lk + pos] != p->segment_ids[b * lk + j]))
        return 0;
    if (!p->causal)
        return 1;
    /* Causal: drop j > off + i, i.e. j - i > off (the indices are small, the offset is any
     * int64, so only j - i is formed), unless a bidirectional block holds both. */
    const int64_t d = j - i;
    if (d > off) {
        const int64_t *blk = p->block_ids;
        if (!blk || !in_slot || blk[b * lk + pos] < 0 || blk[b * lk + pos] != blk[b * lk + j])
            return 0;
        /* A later key of the query's own block: inside every window (j > p), and in slot range,
         * so the chunk test below is exact. */
    } else if (p->window > 0 && (d < 0 && off > INT64_MAX + d ? 1 : off - d >= p->window)) {
        /* Window: drop j <= off + i - W, i.e. off - d >= W.  off >= d here, so off - d is a
         * non-negative number that overflows only when it exceeds INT64_MAX, hence W. */
        return 0;
    }
    if (p->chunk > 0) {
        const int64_t lp = p->left_padding ? p->left_padding[b] : 0;
        /* j - lp >= 0: left padding already dropped the keys before lp. */
        const int64_t t = (j - lp) - floor_div(j - lp, p->chunk) * p->chunk; /* 0 <= t < C */
        if (d > off) {
            if (floor_div(pos - lp, p->chunk) != floor_div(j - lp, p->chunk))
                return 0;
        } else if ((d < 0 && off > INT64_MAX + d) || off - d >= p->chunk - t) {
            /* The query sits off - d >= 0 positions after j: the same chunk iff j's place in
             * its chunk plus that distance stays below C (p may be past every slot, even past
             * INT64_MAX, so p itself is never formed). */
            return 0;
        }
    }
    return 1;
}

static int check_args(const attnref_tensor *q, const attnref_tensor *k, const attnref_tensor *v,
                      const attnref_tensor *mask, const attnref_sdpa_params *p,
                      const attnref_tensor *out, dims *dm, attnref_diag *diag)
{
    const attnref_tensor *ts[4] = {q, k, v, out};
    const int nts = out ? 4 : 3; /* attnref_sdpa_f64 has no out tensor */
    const char *names[4] = {"q", "k", "v", "out"};
    const char *layouts[4] = {"(B, Hq, Lq, D)", "(B, Hkv, Lk, D)", "(B, Hkv, Lk, Dv)",
                              "(B, Hq, Lq, Dv)"};
    int rc;
    for (int t = 0; t < nts; t++) {
        if (!ts[t])
            return attnref__fail(diag, ATTNREF_EINVAL, "%s: NULL tensor", names[t]);
        if ((rc = attnref_tensor_check(ts[t], names[t], diag)) != ATTNREF_OK ||
            (rc = check_rank4(ts[t], names[t], layouts[t], diag)) != ATTNREF_OK)
            return rc;
    }
    if (mask && (rc = attnref_tensor_check(mask, "mask", diag)) != ATTNREF_OK)
        return rc;

    if (!attnref_dtype_is_float(q->dtype))
        return attnref__fail(diag, ATTNREF_EDTYPE, "q: dtype %s is not a float dtype",
                             attnref_dtype_name(q->dtype));
    for (int t = 1; t < 3; t++)
        if (ts[t]->dtype != q->dtype)
            return attnref__fail(diag, ATTNREF_EDTYPE, "%s: dtype %s differs from q dtype %s",
                                 names[t], attnref_dtype_name(ts[t]->dtype),
                                 attnref_dtype_name(q->dtype));
    if (out && out->dtype != q->dtype)
        return attnref__fail(diag, ATTNREF_EDTYPE,
                             "out: dtype %s, but the output dtype is the q dtype %s",
                             attnref_dtype_name(out->dtype), attnref_dtype_name(q->dtype));

    dm->b = q->shape[0];
    dm->hq = q->shape[1];
    dm->lq = q->shape[2];
    dm->d = q->shape[3];
    dm->hkv = k->shape[1];
    dm->lk = k->shape[2];
    dm->dv = v->shape[3];
    if (k->shape[0] != dm->b || v->shape[0] != dm->b)
        return attnref__fail(diag, ATTNREF_EINVAL, "%s: batch %lld differs from q batch %lld",
                             k->shape[0] != dm->b ? "k" : "v",
                             (long long)(k->shape[0] != dm->b ? k->shape[0] : v->shape[0]),
                             (long long)dm->b);
    if (v->shape[1] != dm->hkv)
        return attnref__fail(diag, ATTNREF_EINVAL, "v: %lld heads, but k has %lld",
                             (long long)v->shape[1], (long long)dm->hkv);
    if (dm->hkv == 0 || dm->hq % dm->hkv != 0)
        return attnref__fail(diag, ATTNREF_EINVAL,
                             "GQA: query heads Hq = %lld must be a multiple of kv heads Hkv = %lld "
                             "(and Hkv >= 1)",
                             (long long)dm->hq, (long long)dm->hkv);
    if (v->shape[2] != dm->lk)
        return attnref__fail(diag, ATTNREF_EINVAL, "v: Lk = %lld, but k has Lk = %lld",
                             (long long)v->shape[2], (long long)dm->lk);
    if (k->shape[3] != dm->d)
        return attnref__fail(diag, ATTNREF_EINVAL, "k: head_dim D = %lld, but q has D = %lld",
                             (long long)k->shape[3], (long long)dm->d);
    if (dm->d < 1)
        return attnref__fail(diag, ATTNREF_EINVAL, "q: head_dim D must be >= 1");
    const int64_t want[4] = {dm->b, dm->hq, dm->lq, dm->dv};
    for (int d = 0; out && d < 4; d++)
        if (out->shape[d] != want[d]) {
            char got[96], exp[96];
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "out: shape %s, expected (B, Hq, Lq, Dv) = %s",
                                 attnref__shape_str(got, sizeof got, 4, out->shape),
                                 attnref__shape_str(exp, sizeof exp, 4, want));
        }

    if (p->causal && mask)
        return attnref__fail(diag, ATTNREF_EINVAL,
                             "mask: give either a mask tensor or causal, not both");
    if (p->has_scale && !isfinite(p->scale))
        return attnref__fail(diag, ATTNREF_EINVAL, "scale: must be finite");
    /* Kernels hold the scale as an f32 (clause 2): one it cannot hold is refused, not turned
     * into inf and NaN. */
    if (p->has_scale && fabs(p->scale) > FLT_MAX)
        return attnref__fail(diag, ATTNREF_EINVAL,
                             "scale: %g is outside the f32 range (|scale| <= %g)", p->scale,
                             (double)FLT_MAX);
    if ((rc = check_mask_params(p, dm, diag)) != ATTNREF_OK ||
        (rc = check_terms(p, dm, diag)) != ATTNREF_OK)
        return rc;
    if (mask) {
        const int64_t full[4] = {dm->b, dm->hq, dm->lq, dm->lk};
        for (int32_t r = 0; r < mask->ndim; r++) {
            int64_t m = mask->shape[r], f = full[4 - mask->ndim + r];
            if (m != 1 && m != f) {
                char got[96], exp[96];
                return attnref__fail(diag, ATTNREF_EINVAL,
                                     "mask: shape %s does not broadcast to (B, Hq, Lq, Lk) = %s",
                                     attnref__shape_str(got, sizeof got, mask->ndim, mask->shape),
                                     attnref__shape_str(exp, sizeof exp, 4, full));
            }
        }
        if (mask->dtype != ATTNREF_BOOL && !attnref_mask_dtype_ok(mask->dtype, q->dtype))
            return attnref__fail(diag, ATTNREF_EDTYPE,
                                 "mask: additive mask dtype %s does not promote to q dtype %s "
                                 "(the computation would be upcast)",
                                 attnref_dtype_name(mask->dtype), attnref_dtype_name(q->dtype));
    }
    return ATTNREF_OK;
}

/* The one implementation behind both entry points: exactly one of out / out_f64 is non-NULL. */
static int sdpa_impl(const attnref_tensor *q, const attnref_tensor *k, const attnref_tensor *v,
                     const attnref_tensor *mask, const attnref_sdpa_params *params,
                     attnref_tensor *out, double *out_f64, attnref_diag *diag)
{
    static const attnref_sdpa_params defaults = {0};
    const attnref_sdpa_params *p = params ? params : &defaults;
    dims dm = {0};
    int rc = check_args(q, k, v, mask, p, out, &dm, diag);
    if (rc != ATTNREF_OK)
        return rc;

    const double scale = p->has_scale ? p->scale : 1.0 / sqrt((double)dm.d);
    const int64_t off = p->has_causal_offset ? p->causal_offset : dm.lk - dm.lq; /* ALiBi's p */
    const int64_t group = dm.hq / dm.hkv; /* query heads per kv head */

    /* Scratch: one score row, its kept flags, and the Dv accumulator. */
    const size_t lk = (size_t)dm.lk, dv = (size_t)dm.dv;
    double *score = malloc((lk + dv + 1) * sizeof *score);
    unsigned char *kept = malloc(lk + 1);
    if (!score || !kept) {
        free(score);
        free(kept);
        return attnref__fail(diag, ATTNREF_ENOMEM, "scratch: cannot allocate %zu scores", lk);
    }
    double *acc = score + lk;

    int64_t msh[4] = {1, 1, 1, 1}, mst[4] = {0, 0, 0, 0};
    if (mask) {
        attnref__as_rank4(mask, msh, mst);
        for (int d = 0; d < 4; d++)
            if (msh[d] == 1)
                mst[d] = 0; /* broadcast */
    }
    const int additive = mask && mask->dtype != ATTNREF_BOOL;

    for (int64_t b = 0; b < dm.b; b++)
        for (int64_t h = 0; h < dm.hq; h++) {
            const int64_t hk = h / group; /* repeat-interleave: h -> h / (Hq / Hkv) */
            const double slope =
                p->alibi_max_bias > 0.0 ? attnref_alibi_slope(p->alibi_max_bias, dm.hq, h) : 0.0;
            for (int64_t i = 0; i < dm.lq; i++) {
                const int64_t qrow = b * q->strides[0] + h * q->strides[1] + i * q->strides[2];
                const int64_t mrow = b * mst[0] + h * mst[1] + i * mst[2];
                double mx = -INFINITY;
                int64_t nkept = 0;
                for (int64_t j = 0; j < dm.lk; j++) {
                    kept[j] = 0;
                    double add = 0.0;
                    if (!attnref_sdpa_key_kept(p, dm.lq, dm.lk, b, i, j))
                        continue;
                    if (mask) {
                        double m = attnref_load(mask->data, mask->dtype, mrow + j * mst[3]);
                        if (!additive && m == 0.0)
                            continue;
                        if (additive && m == -INFINITY)
                            continue;
                        if (additive)
                            add = m;
                    }
                    const int64_t krow = b * k->strides[0] + hk * k->strides[1] + j * k->strides[2];
                    double dot = 0.0;
                    for (int64_t d = 0; d < dm.d; d++)
                        dot += attnref_load(q->data, q->dtype, qrow + d * q->strides[3]) *
                               attnref_load(k->data, k->dtype, krow + d * k->strides[3]);
                    double s = scale * dot;
                    if (p->softcap > 0.0)
                        s = p->softcap * tanh(s / p->softcap);
                    if (p->alibi_max_bias > 0.0)
                        s -= slope * fabs((double)off - (double)(j - i)); /* |p - j| */
                    s += add;
                    score[j] = s;
                    kept[j] = 1;
                    nkept++;
                    if (s > mx)
                        mx = s;
                }
                for (int64_t e = 0; e < dm.dv; e++)
                    acc[e] = 0.0;
                double sum = 0.0;
                if (nkept > 0 && p->sinks) {
                    /* The sink is one more logit with no value: it only adds to the normaliser
                     * (and takes part in the max that keeps every exp <= 1). */
                    if (p->sinks[h] > mx)
                        mx = p->sinks[h];
                    sum = exp(p->sinks[h] - mx);
                }
                if (nkept > 0) {
                    for (int64_t j = 0; j < dm.lk; j++) {
                        if (!kept[j])
                            continue;
                        const double w = exp(score[j] - mx);
                        sum += w;
                        const int64_t vrow =
                            b * v->strides[0] + hk * v->strides[1] + j * v->strides[2];
                        for (int64_t e = 0; e < dm.dv; e++)
                            acc[e] += w * attnref_load(v->data, v->dtype, vrow + e * v->strides[3]);
                    }
                }
                for (int64_t e = 0; e < dm.dv; e++) {
                    /* A fully masked row is exactly +0, never NaN and never the mean of V. */
                    const double r = nkept > 0 ? acc[e] / sum : 0.0;
                    if (out_f64)
                        out_f64[((b * dm.hq + h) * dm.lq + i) * dm.dv + e] = r;
                    else
                        attnref_store(out->data, out->dtype,
                                      b * out->strides[0] + h * out->strides[1] +
                                          i * out->strides[2] + e * out->strides[3],
                                      r);
                }
            }
        }
    free(score);
    free(kept);
    attnref__ok(diag);
    return ATTNREF_OK;
}

int attnref_sdpa_check(const attnref_tensor *q, const attnref_tensor *k, const attnref_tensor *v,
                       const attnref_tensor *mask, const attnref_sdpa_params *params,
                       const attnref_tensor *out, attnref_diag *diag)
{
    static const attnref_sdpa_params defaults = {0};
    dims dm = {0};
    int rc = check_args(q, k, v, mask, params ? params : &defaults, out, &dm, diag);
    if (rc == ATTNREF_OK)
        attnref__ok(diag);
    return rc;
}

int attnref_sdpa(const attnref_tensor *q, const attnref_tensor *k, const attnref_tensor *v,
                 const attnref_tensor *mask, const attnref_sdpa_params *params, attnref_tensor *out,
                 attnref_diag *diag)
{
    if (!out)
        return attnref__fail(diag, ATTNREF_EINVAL, "out: NULL tensor");
    return sdpa_impl(q, k, v, mask, params, out, NULL, diag);
}

int attnref_sdpa_f64(const attnref_tensor *q, const attnref_tensor *k, const attnref_tensor *v,
                     const attnref_tensor *mask, const attnref_sdpa_params *params, double *out_f64,
                     attnref_diag *diag)
{
    if (!out_f64)
        return attnref__fail(diag, ATTNREF_EINVAL, "out_f64: NULL pointer");
    return sdpa_impl(q, k, v, mask, params, NULL, out_f64, diag);
}
