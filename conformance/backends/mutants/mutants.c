/* mutants.c — the one bug of each test-only mutant backend (see mutants.h).
 *
 * Every bug is a wrapper around the correct attnref calls, so the mutant differs from the
 * reference in exactly the behaviour it is named after and nowhere else.  Most sdpa mutants
 * first run the real attnref_sdpa: that validates every descriptor, shape and dtype with the
 * reference's own checks and messages (a case that must be rejected is rejected identically),
 * and only then is the bug applied, either by rewriting some output rows or by running
 * attnref_sdpa again on altered inputs.  Nothing here reads a tensor before attnref (or
 * attnref_tensor_check, for the upcast mutant that must skip the dtype rule) has validated it.
 * If a later step cannot allocate its scratch, the call fails with ATTNREF_ENOMEM; out may then
 * hold the reference's values, which a host ignores after an error.
 *
 * The bug is selected at compile time (ATTNCONF_MUTANT) but dispatched with an ordinary switch,
 * so every mutant's code is compiled, warning-checked and type-checked in every mutant build.
 */
#include "mutants.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnref/dtype.h"

/* Record a diagnostic (diag may be NULL, as everywhere in attnref) and return code. */
__attribute__((format(printf, 3, 4))) static int rbm_fail(attnref_diag *diag, int code,
                                                          const char *fmt, ...)
{
    if (diag) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(diag->msg, sizeof diag->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* ---- copies --------------------------------------------------------------------------------- */

/* Pad a rank 0..4 descriptor to rank 4 (leading extents 1, stride 0), as NumPy broadcasting
 * aligns trailing dimensions. */
static void rbm_rank4(const attnref_tensor *t, int64_t shape[4], int64_t strides[4])
{
    const int32_t pad = 4 - t->ndim;
    for (int d = 0; d < 4; d++) {
        shape[d] = d < pad ? 1 : t->shape[d - pad];
        strides[d] = d < pad ? 0 : t->strides[d - pad];
    }
}

/* Copy a validated tensor into a new contiguous buffer of dtype dt (values converted exactly
 * through attnref_load / attnref_store; BOOL stores value != 0).  With tile_heads > 0 (rank 4
 * only) dimension 1 becomes tile_heads long and copy head h reads source head h % H: the
 * "pre-tiled K/V" of a GQA bug.  On success dst describes the copy and dst->data must be freed
 * by the caller.  Returns ATTNREF_OK, ATTNREF_ERANGE (the copy would exceed ATTNREF_MAX_NUMEL)
 * or ATTNREF_ENOMEM. */
static int rbm_copy(const attnref_tensor *src, attnref_dtype dt, int64_t tile_heads,
                    attnref_tensor *dst, attnref_diag *diag)
{
    int64_t sh[4], st[4], dsh[ATTNREF_MAX_RANK] = {0};
    rbm_rank4(src, sh, st);
    const int64_t src_heads = sh[1];
    if (tile_heads > 0)
        sh[1] = tile_heads;
    /* An empty tensor may have any other extent; otherwise every factor and partial product is
     * checked against ATTNREF_MAX_NUMEL (2^31) before the next multiplication, so no product
     * exceeds 2^62: no overflow. */
    int64_t numel = 1;
    for (int d = 0; d < 4; d++)
        if (sh[d] == 0)
            numel = 0;
    for (int d = 0; d < 4 && numel > 0; d++) {
        if (sh[d] > ATTNREF_MAX_NUMEL)
            numel = ATTNREF_MAX_NUMEL + 1;
        else
            numel *= sh[d];
        if (numel > ATTNREF_MAX_NUMEL)
            return rbm_fail(diag, ATTNREF_ERANGE,
                            "mutant: a copy of shape (%lld, %lld, %lld, %lld) is too large",
                            (long long)sh[0], (long long)sh[1], (long long)sh[2], (long long)sh[3]);
    }
    const size_t esz = attnref_dtype_size(dt);
    void *buf = malloc(numel > 0 ? (size_t)numel * esz : 1);
    if (!buf)
        return rbm_fail(diag, ATTNREF_ENOMEM, "mutant: cannot allocate a %lld-element copy",
                        (long long)numel);
    for (int32_t d = 0; d < src->ndim; d++)
        dsh[d] = sh[4 - src->ndim + d];
    int rc = attnref_tensor_init(dst, buf, dt, src->ndim, dsh, diag);
    if (rc != ATTNREF_OK) {
        free(buf);
        return rc;
    }
    int64_t o = 0; /* contiguous: destination offsets run in loop order */
    for (int64_t a = 0; a < sh[0]; a++)
        for (int64_t h = 0; h < sh[1]; h++) {
            const int64_t hs = tile_heads > 0 ? h % src_heads : h;
            for (int64_t c = 0; c < sh[2]; c++)
                for (int64_t e = 0; e < sh[3]; e++) {
                    const int64_t so = a * st[0] + hs * st[1] + c * st[2] + e * st[3];
                    attnref_store(buf, dt, o++, attnref_load(src->data, src->dtype, so));
                }
        }
    return ATTNREF_OK;
}

/* ---- which keys a row keeps ---------------------------------------------------------------- */

/* A problem attnref_sdpa has accepted, with what the per-key decision needs. */
typedef struct rbm_view {
    const attnref_tensor *k, *v, *mask;
    const attnref_sdpa_params *p; /* causal, offset and the mask parameters (never NULL) */
    int64_t b, hq, lq, lk, d, dv;
    int64_t group;  /* Hq / Hkv: query head h reads kv head h / group */
    int64_t mst[4]; /* mask strides over (B, Hq, Lq, Lk); 0 where it broadcasts */
} rbm_view;

/* Fill w from arguments attnref_sdpa has just validated (rank 4, Hq % Hkv == 0, Hkv >= 1,
 * a mask broadcastable to (B, Hq, Lq, Lk)). */
static void rbm_view_init(rbm_view *w, const attnref_tensor *q, const attnref_tensor *k,
                          const attnref_tensor *v, const attnref_tensor *mask,
                          const attnref_sdpa_params *p)
{
    memset(w, 0, sizeof *w);
    w->k = k;
    w->v = v;
    w->mask = mask;
    w->b = q->shape[0];
    w->hq = q->shape[1];
    w->lq = q->shape[2];
    w->d = q->shape[3];
    w->lk = k->shape[2];
    w->dv = v->shape[3];
    w->group = w->hq / k->shape[1];
    w->p = p;
    if (mask) {
        int64_t msh[4];
        rbm_rank4(mask, msh, w->mst);
        for (int d = 0; d < 4; d++)
            if (msh[d] == 1)
                w->mst[d] = 0; /* NumPy broadcast: an extent of 1 serves every index */
    }
}

/* 1 if query row (b, h, i) keeps key j: the reference's own predicate for causal and the mask
 * parameters, then the mask tensor (bool true; additive not -inf), read exactly as attnref
 * does (attnref_load on the element offset). */
static int rbm_kept(const rbm_view *w, int64_t b, int64_t h, int64_t i, int64_t j)
{
    if (!attnref_sdpa_key_kept(w->p, w->lq, w->lk, b, i, j))
        return 0;
    if (w->mask) {
        const int64_t off = b * w->mst[0] + h * w->mst[1] + i * w->mst[2] + j * w->mst[3];
        const double m = attnref_load(w->mask->data, w->mask->dtype, off);
        return w->mask->dtype == ATTNREF_BOOL ? m != 0.0 : m != -INFINITY;
    }
    return 1;
}

/* 1 if row (b, h, i) keeps no key at all (clause 9; Lk = 0 included). */
static int rbm_row_empty(const rbm_view *w, int64_t b, int64_t h, int64_t i)
{
    for (int64_t j = 0; j < w->lk; j++)
        if (rbm_kept(w, b, h, i, j))
            return 0;
    return 1;
}

/* 1 if some key row (b, h, i) excludes holds a non-finite value in K or V: what a dense
 * P . V product (weight 0 times NaN or inf) would let through. */
static int rbm_row_poisoned(const rbm_view *w, int64_t b, int64_t h, int64_t i)
{
    const int64_t g = h / w->group;
    for (int64_t j = 0; j < w->lk; j++) {
        if (rbm_kept(w, b, h, i, j))
            continue;
        const int64_t kr = b * w->k->strides[0] + g * w->k->strides[1] + j * w->k->strides[2];
        for (int64_t d = 0; d < w->d; d++)
            if (!isfinite(attnref_load(w->k->data, w->k->dtype, kr + d * w->k->strides[3])))
                return 1;
        const int64_t vr = b * w->v->strides[0] + g * w->v->strides[1] + j * w->v->strides[2];
        for (int64_t e = 0; e < w->dv; e++)
            if (!isfinite(attnref_load(w->v->data, w->v->dtype, vr + e * w->v->strides[3])))
                return 1;
    }
    return 0;
}

/* Offset of out[b, h, i, e]. */
static int64_t rbm_out_off(const attnref_tensor *out, int64_t b, int64_t h, int64_t i, int64_t e)
{
    return b * out->strides[0] + h * out->strides[1] + i * out->strides[2] + e * out->strides[3];
}

/* Write `value` (rounded once to the output dtype) to every element of output row (b, h, i). */
static void rbm_row_fill(const rbm_view *w, attnref_tensor *out, int64_t b, int64_t h, int64_t i,
                         double value)
{
    for (int64_t e = 0; e < w->dv; e++)
        attnref_store(out->data, out->dtype, rbm_out_off(out, b, h, i, e), value);
}

/* Write the mean of V over all Lk keys of the row's kv head: uniform weights, what a softmax
 * gives when every key holds the same finite "masked" score.  With Lk = 0 the mean is 0 / 0,
 * NaN, as the plain arithmetic gives. */
static void rbm_row_mean_v(const rbm_view *w, attnref_tensor *out, int64_t b, int64_t h, int64_t i)
{
    const int64_t g = h / w->group;
    for (int64_t e = 0; e < w->dv; e++) {
        double sum = 0.0;
        for (int64_t j = 0; j < w->lk; j++)
            sum += attnref_load(w->v->data, w->v->dtype,
                                b * w->v->strides[0] + g * w->v->strides[1] + j * w->v->strides[2] +
                                    e * w->v->strides[3]);
        attnref_store(out->data, out->dtype, rbm_out_off(out, b, h, i, e), sum / (double)w->lk);
    }
}

/* ---- the sdpa bugs -------------------------------------------------------------------------- */

/* Bugs that only change some output rows: the reference computes the output, then the rows the
 * bug affects are rewritten. */
static int rbm_sdpa_rows(const attnref_tensor *q, const attnref_tensor *k, const attnref_tensor *v,
                         const attnref_tensor *mask, const attnref_sdpa_params *p,
                         attnref_tensor *out, attnref_diag *diag)
{
    int st = attnref_sdpa(q, k, v, mask, p, out, diag);
    if (st != ATTNREF_OK)
        return st;
    /* RBM_NEG1E9: the mask constant as the q dtype holds it.  -1e9 overflows f16 (|x| >= 65520)
     * to -inf and stays finite in f32 and bf16.  Only a bool mask is converted this way. */
    double neg1e9 = 0.0;
    if (ATTNCONF_MUTANT == RBM_NEG1E9) {
        if (!mask || mask->dtype != ATTNREF_BOOL)
            return ATTNREF_OK;
        float cell[1]; /* room and alignment for one element of any float dtype */
        attnref_store(cell, q->dtype, 0, -1e9);
        neg1e9 = attnref_load(cell, q->dtype, 0);
    }
    rbm_view w;
    rbm_view_init(&w, q, k, v, mask, p);
    for (int64_t b = 0; b < w.b; b++)
        for (int64_t h = 0; h < w.hq; h++)
            for (int64_t i = 0; i < w.lq; i++) {
                switch (ATTNCONF_MUTANT) {
                case RBM_MASKED_ROW_MEAN_V: /* the MLX CPU fallback's finite-minimum fill */
                    if (rbm_row_empty(&w, b, h, i))
                        rbm_row_mean_v(&w, out, b, h, i);
                    break;
                case RBM_MASKED_ROW_NAN: /* -inf everywhere: exp(-inf - -inf) = NaN */
                    if (rbm_row_empty(&w, b, h, i))
                        rbm_row_fill(&w, out, b, h, i, NAN);
                    break;
                case RBM_NEG1E9:
                    /* Partially masked rows are unaffected: exp(-1e9 - max) is 0 in every
                     * dtype, as skipping the key.  A fully masked row has -1e9 on every key:
                     * -inf in f16 gives NaN; finite (f32, bf16), score + -1e9 rounds to -1e9
                     * for any |score| < 32 (the f32 ulp at 1e9 is 64, bf16's is coarser), so
                     * the weights are uniform and the row is the mean of V, which the
                     * reference's binary64 sum would not show.  (Lk = 0 has no mask value:
                     * the row stays 0.) */
                    if (w.lk > 0 && rbm_row_empty(&w, b, h, i)) {
                        if (isinf(neg1e9))
                            rbm_row_fill(&w, out, b, h, i, NAN);
                        else
                            rbm_row_mean_v(&w, out, b, h, i);
                    }
                    break;
                case RBM_NAN_LEAK: /* dense P . V: weight 0 times a masked NaN/inf is NaN */
                    if (rbm_row_poisoned(&w, b, h, i))
                        rbm_row_fill(&w, out, b, h, i, NAN);
                    break;
                default: break;
                }
            }
    return ATTNREF_OK;
}

/* RBM_GQA_TILE: K and V are expanded to Hq heads by tiling (copy head h = kv head h % Hkv),
 * then the reference runs on the expanded copies with Hkv = Hq. */
static int rbm_sdpa_gqa_tile(const attnref_tensor *q, const attnref_tensor *k,
                             const attnref_tensor *v, const attnref_tensor *mask,
                             const attnref_sdpa_params *p, attnref_tensor *out, attnref_diag *diag)
{
    int st = attnref_sdpa(q, k, v, mask, p, out, diag); /* validates; Hkv == Hq is unchanged */
    if (st != ATTNREF_OK || q->shape[1] == k->shape[1])
        return st;
    attnref_tensor kt, vt;
    st = rbm_copy(k, k->dtype, q->shape[1], &kt, diag);
    if (st != ATTNREF_OK)
        return st;
    st = rbm_copy(v, v->dtype, q->shape[1], &vt, diag);
    if (st == ATTNREF_OK) {
        st = attnref_sdpa(q, &kt, &vt, mask, p, out, diag);
        free(vt.data);
    }
    free(kt.data);
    return st;
}

/* 1 if every element `t` can address lies inside `capacity` bytes for `elem`-byte elements (as
 * rb_fits in rb_common.c, for the 4-byte elements the upcast mutant writes).  t has
 * passed attnref_tensor_check, so extents, strides and the largest offset are within
 * ATTNREF_MAX_NUMEL and nothing overflows. */
static int rbm_fits(const attnref_tensor *t, size_t elem, size_t capacity)
{
    int64_t last = 0;
    for (int32_t d = 0; d < t->ndim; d++) {
        if (t->shape[d] == 0)
            return 1; /* nothing is written */
        last += (t->shape[d] - 1) * t->strides[d];
    }
    return (uint64_t)(last + 1) <= (uint64_t)(capacity / elem);
}

/* RBM_UPCAST_F32: f16/bf16 q, k, v with an additive mask are converted to f32 (exactly) with the
 * mask, whatever its dtype, and computed and returned in f32: the promotion rule is skipped, so
 * a mask that must be rejected is accepted, and the output dtype is f32, not the q dtype. */
static int rbm_sdpa_upcast(const attnref_tensor *q, const attnref_tensor *k,
                           const attnref_tensor *v, const attnref_tensor *mask,
                           const attnref_sdpa_params *p, attnref_tensor *out, size_t out_capacity,
                           attnref_diag *diag)
{
    if (!mask || mask->dtype == ATTNREF_BOOL || !attnref_dtype_is_float(mask->dtype) ||
        (q->dtype != ATTNREF_F16 && q->dtype != ATTNREF_BF16) || k->dtype != q->dtype ||
        v->dtype != q->dtype)
        return attnref_sdpa(q, k, v, mask, p, out, diag);
    /* The copies read every element, so every descriptor must be sound first (attnref's own
     * check, same messages); shapes are left for attnref_sdpa to judge on the copies. */
    const attnref_tensor *ins[4] = {q, k, v, mask};
    const char *names[4] = {"q", "k", "v", "mask"};
    int st;
    for (int t = 0; t < 4; t++)
        if ((st = attnref_tensor_check(ins[t], names[t], diag)) != ATTNREF_OK)
            return st;
    attnref_tensor out32 = *out;
    out32.dtype = ATTNREF_F32;
    if ((st = attnref_tensor_check(&out32, "out", diag)) != ATTNREF_OK)
        return st;
    if (out32.data && !rbm_fits(&out32, sizeof(float), out_capacity))
        return rbm_fail(diag, ATTNREF_EINVAL,
                        "out: out_capacity is too small for an f32 output of this shape");

    attnref_tensor c[4];
    int made = 0; /* copies that exist (a failed copy allocates nothing) */
    while (made < 4 && (st = rbm_copy(ins[made], ATTNREF_F32, 0, &c[made], diag)) == ATTNREF_OK)
        made++;
    if (made == 4 && (st = attnref_sdpa(&c[0], &c[1], &c[2], &c[3], p, &out32, diag)) == ATTNREF_OK)
        out->dtype = ATTNREF_F32; /* tell the host what was written */
    while (made > 0)
        free(c[--made].data);
    return st;
}

/* RBM_SCALE_DV: without an explicit scale, use 1/sqrt(Dv) (the value head dim) instead of
 * 1/sqrt(D).  Only Dv >= 1 and Dv != D can differ; Dv = 0 has an empty output anyway. */
static int rbm_sdpa_scale_dv(const attnref_tensor *q, const attnref_tensor *k,
                             const attnref_tensor *v, const attnref_tensor *mask,
                             const attnref_sdpa_params *p, attnref_tensor *out, attnref_diag *diag)
{
    int st = attnref_sdpa(q, k, v, mask, p, out, diag);
    if (st != ATTNREF_OK || p->has_scale || v->shape[3] < 1 || v->shape[3] == q->shape[3])
        return st;
    attnref_sdpa_params wrong = *p;
    wrong.has_scale = 1;
    wrong.scale = 1.0 / sqrt((double)v->shape[3]);
    return attnref_sdpa(q, k, v, mask, &wrong, out, diag);
}

/* 1 if every element of a float tensor is 0 or 1 (-0 counts as 0). */
static int rbm_all_zero_one(const attnref_tensor *t)
{
    int64_t sh[4], st[4];
    rbm_rank4(t, sh, st);
    for (int64_t a = 0; a < sh[0]; a++)
        for (int64_t b = 0; b < sh[1]; b++)
            for (int64_t c = 0; c < sh[2]; c++)
                for (int64_t d = 0; d < sh[3]; d++) {
                    const double m = attnref_load(t->data, t->dtype,
                                                  a * st[0] + b * st[1] + c * st[2] + d * st[3]);
                    if (m != 0.0 && m != 1.0)
                        return 0;
                }
    return 1;
}

/* RBM_FLOAT01_AS_BOOL: an additive mask holding only 0s and 1s is taken for a keep mask
 * (1 = attend, 0 = masked) instead of being added (the pre-2025 mlx-lm confusion). */
static int rbm_sdpa_float01(const attnref_tensor *q, const attnref_tensor *k,
                            const attnref_tensor *v, const attnref_tensor *mask,
                            const attnref_sdpa_params *p, attnref_tensor *out, attnref_diag *diag)
{
    int st = attnref_sdpa(q, k, v, mask, p, out, diag); /* validates the mask and its dtype */
    if (st != ATTNREF_OK || !mask || mask->dtype == ATTNREF_BOOL || !rbm_all_zero_one(mask))
        return st;
    attnref_tensor keep;
    if ((st = rbm_copy(mask, ATTNREF_BOOL, 0, &keep, diag)) != ATTNREF_OK)
        return st;
    st = attnref_sdpa(q, k, v, &keep, p, out, diag);
    free(keep.data);
    return st;
}

/* RBM_BOOL_EQ_ONE: a bool mask read with `== 1` instead of `!= 0`, so bytes such as 2 or 255
 * (valid "true" values of a one-byte bool) mask their keys. */
static int rbm_sdpa_bool_eq_one(const attnref_tensor *q, const attnref_tensor *k,
                                const attnref_tensor *v, const attnref_tensor *mask,
                                const attnref_sdpa_params *p, attnref_tensor *out,
                                attnref_diag *diag)
{
    int st = attnref_sdpa(q, k, v, mask, p, out, diag); /* validates everything */
    if (st != ATTNREF_OK || !mask || mask->dtype != ATTNREF_BOOL)
        return st;
    attnref_tensor keep;
    if ((st = rbm_copy(mask, ATTNREF_BOOL, 0, &keep, diag)) != ATTNREF_OK)
        return st;
    /* rbm_copy normalises to 0/1, so redo the bytes from the source with the bug. */
    int64_t sh[4], sst[4];
    rbm_rank4(mask, sh, sst);
    uint8_t *dst = keep.data;
    const uint8_t *src = mask->data;
    int64_t o = 0;
    for (int64_t a = 0; a < sh[0]; a++)
        for (int64_t b = 0; b < sh[1]; b++)
            for (int64_t c = 0; c < sh[2]; c++)
                for (int64_t d = 0; d < sh[3]; d++)
                    dst[o++] = src[a * sst[0] + b * sst[1] + c * sst[2] + d * sst[3]] == 1;
    st = attnref_sdpa(q, k, v, &keep, p, out, diag);
    free(keep.data);
    return st;
}

/* The parameter bugs of the terms of current models (clauses 2, 20, 22): the reference run
 * again on rewritten parameters, after the real call has validated them.  The sink bugs change
 * sigma_h (times the scale; soft-capped), the block bug merges every block into one (so a
 * block's query sees the later keys of the next block), the document bug moves each boundary
 * one key early (key j takes the id of key j + 1), the MLA bug drops an explicit scale when
 * Dv != D. */
static int rbm_sdpa_terms(const attnref_tensor *q, const attnref_tensor *k, const attnref_tensor *v,
                          const attnref_tensor *mask, const attnref_sdpa_params *params,
                          attnref_tensor *out, attnref_diag *diag)
{
    int st = attnref_sdpa(q, k, v, mask, params, out, diag);
    if (st != ATTNREF_OK)
        return st;
    attnref_sdpa_params p = *params;
    const int64_t hq = q->shape[1], lk = k->shape[2], n = params->batch * lk;
    double *sinks = NULL;
    int64_t *ids = NULL;
    switch (ATTNCONF_MUTANT) {
    case RBM_SINK_SCALED:
    case RBM_SINK_SOFTCAPPED:
        if (!p.sinks)
            return ATTNREF_OK;
        sinks = malloc((size_t)hq * sizeof *sinks);
        if (!sinks)
            return rbm_fail(diag, ATTNREF_ENOMEM, "mutant: cannot allocate the sinks");
        for (int64_t h = 0; h < hq; h++) {
            const double sg = p.sinks[h];
            const double scale = p.has_scale ? p.scale : 1.0 / sqrt((double)q->shape[3]);
            sinks[h] = ATTNCONF_MUTANT == RBM_SINK_SCALED ? sg * scale
                       : p.softcap > 0.0                  ? p.softcap * tanh(sg / p.softcap)
                                                          : sg;
        }
        p.sinks = sinks;
        break;
    case RBM_BLOCK_ANY:
    case RBM_DOC_OFF_BY_ONE: {
        const int64_t *src = ATTNCONF_MUTANT == RBM_BLOCK_ANY ? p.block_ids : p.segment_ids;
        if (!src)
            return ATTNREF_OK;
        ids = malloc((size_t)n * sizeof *ids);
        if (!ids)
            return rbm_fail(diag, ATTNREF_ENOMEM, "mutant: cannot allocate the ids");
        for (int64_t x = 0; x < n; x++)
            ids[x] = ATTNCONF_MUTANT == RBM_BLOCK_ANY ? (src[x] >= 0 ? 0 : -1)
                     : x % lk + 1 < lk                ? src[x + 1]
                                                      : src[x];
        if (ATTNCONF_MUTANT == RBM_BLOCK_ANY)
            p.block_ids = ids;
        else
            p.segment_ids = ids;
        break;
    }
    case RBM_MLA_DEFAULT_SCALE:
        if (!p.has_scale || v->shape[3] == q->shape[3])
            return ATTNREF_OK;
        p.has_scale = 0;
        break;
    default: return ATTNREF_OK;
    }
    st = attnref_sdpa(q, k, v, mask, &p, out, diag);
    free(sinks);
    free(ids);
    return st;
}

int rbm_sdpa(const attnref_tensor *q, const attnref_tensor *k, const attnref_tensor *v,
             const attnref_tensor *mask, const attnref_sdpa_params *params, attnref_tensor *out,
             size_t out_capacity, attnref_diag *diag)
{
    static const attnref_sdpa_params defaults = {0}; /* attnref's meaning of NULL params */
    if (!params)
        params = &defaults;
    switch (ATTNCONF_MUTANT) {
    case RBM_TOPLEFT: {
        /* Top-left causal alignment when no explicit offset is given (an explicit offset is
         * honoured, as before). */
        attnref_sdpa_params p = *params;
        if (p.causal && !p.has_causal_offset) {
            p.has_causal_offset = 1;
            p.causal_offset = 0;
        }
        return attnref_sdpa(q, k, v, mask, &p, out, diag);
    }
    case RBM_WINDOW_PLUS1:
    case RBM_LENGTHS_IGNORED: {
        /* The mask builder's bug in sdpa's own mask parameters too (clause 19): a backend that
         * counts W + 1 keys or drops the lengths does so wherever it takes them.  The real call
         * validates first, so invalid parameters are rejected as before. */
        int st = attnref_sdpa(q, k, v, mask, params, out, diag);
        attnref_sdpa_params p = *params;
        if (ATTNCONF_MUTANT == RBM_WINDOW_PLUS1 && p.window > 0 && p.window < INT64_MAX)
            p.window++;
        if (ATTNCONF_MUTANT == RBM_LENGTHS_IGNORED)
            p.lengths = NULL;
        return st != ATTNREF_OK ? st : attnref_sdpa(q, k, v, mask, &p, out, diag);
    }
    case RBM_GQA_TILE: return rbm_sdpa_gqa_tile(q, k, v, mask, params, out, diag);
    case RBM_MASKED_ROW_MEAN_V:
    case RBM_MASKED_ROW_NAN:
    case RBM_NEG1E9:
    case RBM_NAN_LEAK: return rbm_sdpa_rows(q, k, v, mask, params, out, diag);
    case RBM_UPCAST_F32: return rbm_sdpa_upcast(q, k, v, mask, params, out, out_capacity, diag);
    case RBM_SCALE_DV: return rbm_sdpa_scale_dv(q, k, v, mask, params, out, diag);
    case RBM_FLOAT01_AS_BOOL: return rbm_sdpa_float01(q, k, v, mask, params, out, diag);
    case RBM_BOOL_EQ_ONE: return rbm_sdpa_bool_eq_one(q, k, v, mask, params, out, diag);
    case RBM_SINK_SCALED:
    case RBM_SINK_SOFTCAPPED:
    case RBM_BLOCK_ANY:
    case RBM_DOC_OFF_BY_ONE:
    case RBM_MLA_DEFAULT_SCALE: return rbm_sdpa_terms(q, k, v, mask, params, out, diag);
    case RBM_SINK_VALUE:
    case RBM_SINK_DROPPED_MASKED:
    case RBM_SOFTCAP_AFTER_MASK:
    case RBM_SOFTCAP_UNSCALED:
    case RBM_ALIBI_PROSE:
    case RBM_ALIBI_SIGNED:
    case RBM_CHUNK_ABSOLUTE:
    case RBM_NO_WIDE:
    case RBM_KERNEL:
    case RBM_SEED_FINITE:
    case RBM_QK_ROUND:
    case RBM_KV_STRIDES:
    case RBM_DECODE_MASK_HEAD:
    case RBM_BLOCK_SKIP:
    case RBM_TRUNCATE_OUTPUT:
    case RBM_DENSE_KV:
    case RBM_BLOCK_FIRST_KEY: {
        /* The reference validates (same rejections and messages); the kernel then overwrites
         * the output with its own values. */
        int st = attnref_sdpa(q, k, v, mask, params, out, diag);
        return st != ATTNREF_OK ? st : km_sdpa(q, k, v, mask, params, out, ATTNCONF_MUTANT, diag);
    }
    default: return attnref_sdpa(q, k, v, mask, params, out, diag);
    }
}

/* ---- the build_mask bugs -------------------------------------------------------------------- */

/* RBM_TOPLEFT: rewrite the causal/window part of a keep mask attnref has just built, with query
 * i at absolute position i (top-left) instead of offset + i.  The padding part (lengths,
 * left_padding) does not depend on the query position, so it is recomputed from the arrays. */
static void rbm_topleft_mask(const attnref_mask_params *p, attnref_tensor *keep)
{
    const int64_t nb = keep->shape[0], lq = keep->shape[2], lk = keep->shape[3];
    for (int64_t b = 0; b < nb; b++)
        for (int64_t i = 0; i < lq; i++)
            for (int64_t j = 0; j < lk; j++) {
                int kept = j <= i; /* top-left: position i */
                if (p->window > 0 && !(j > i - p->window))
                    kept = 0;
                if (p->lengths && !(j < p->lengths[b]))
                    kept = 0;
                if (p->left_padding && !(j >= p->left_padding[b]))
                    kept = 0;
                const int64_t off =
                    b * keep->strides[0] + i * keep->strides[2] + j * keep->strides[3];
                ((uint8_t *)keep->data)[off] = (uint8_t)kept;
            }
}

/* RBM_LENGTHS_IGNORED: right padding is dropped: every sequence gets lengths[b] = offset + Lq
 * (all keys valid); batch and left_padding are kept, so the shape is unchanged. */
static int rbm_build_mask_no_lengths(const attnref_mask_params *p, attnref_tensor *keep,
                                     attnref_diag *diag)
{
    int64_t shape[4];
    int st = attnref_mask_shape(p, shape, diag); /* the real validation, lengths included */
    if (st != ATTNREF_OK || !p->lengths)
        return st != ATTNREF_OK ? st : attnref_build_mask(p, keep, diag);
    /* attnref_mask_shape bounded batch, lq and offset by ATTNREF_MAX_NUMEL: no overflow. */
    int64_t *all = malloc((size_t)shape[0] * sizeof *all);
    if (!all)
        return rbm_fail(diag, ATTNREF_ENOMEM, "mutant: cannot allocate %lld lengths",
                        (long long)shape[0]);
    for (int64_t b = 0; b < shape[0]; b++)
        all[b] = shape[3];
    attnref_mask_params wrong = *p;
    wrong.lengths = all;
    st = attnref_build_mask(&wrong, keep, diag);
    free(all);
    return st;
}

int rbm_build_mask(const attnref_mask_params *params, attnref_tensor *keep, attnref_diag *diag)
{
    if (!params)
        return attnref_build_mask(params, keep, diag); /* attnref names the NULL */
    switch (ATTNCONF_MUTANT) {
    case RBM_TOPLEFT: {
        int st = attnref_build_mask(params, keep, diag);
        if (st == ATTNREF_OK)
            rbm_topleft_mask(params, keep); /* on an already validated mask */
        return st;
    }
    case RBM_WINDOW_PLUS1: {
        /* W + 1 keys: the query's own position counted on top of W.  W + 1 is as valid as W
         * (W >= 1); INT64_MAX stays, it already spans every key. */
        attnref_mask_params wrong = *params;
        if (wrong.window > 0 && wrong.window < INT64_MAX)
            wrong.window++;
        return attnref_build_mask(&wrong, keep, diag);
    }
    case RBM_LENGTHS_IGNORED: return rbm_build_mask_no_lengths(params, keep, diag);
    default: return attnref_build_mask(params, keep, diag);
    }
}
