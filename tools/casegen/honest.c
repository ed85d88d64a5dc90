/* honest.c — implementations of SDPA the way real kernels compute it, to check tolerances.
 *
 * Every case's bound (SPEC.md clause 13) must be wide enough for each of these, or casegen
 * refuses to write the case.  They differ in what real kernels differ in: where the scores are
 * held (f32 registers or the dtype), whether P is rounded to the dtype before P.V, the key order,
 * one softmax pass or an online one with running max and rescaling, and one split of the keys
 * or several combined at the end (flash decoding).  What none of them does, because no correct
 * kernel may: round the raw q.k to the dtype before scaling (it overflows f16), or accumulate a
 * sum in the dtype.  Inputs and outputs are exact: values are read as f32 (every dtype widens
 * exactly) and the result is rounded once (RNE) to the dtype.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncase/bound.h"
#include "casegen.h"

#define LOG2E_F 1.44269504f

/* x rounded (RNE) to dt and back; the identity for f32. */
static float rd(float x, attnref_dtype dt)
{
    switch (dt) {
    case ATTNREF_F16: return attnref_f16_to_f32(attnref_f32_to_f16(x));
    case ATTNREF_BF16: return attnref_bf16_to_f32(attnref_f32_to_bf16(x));
    default: return x;
    }
}

/* One output row's problem: q row, the kv head's K (Lk x D) and V (Lk x Dv) as f32, the kept
 * keys and their additive mask values. */
typedef struct hrow {
    attnref_dtype dt;
    int64_t d, dv, lk;
    const float *q, *k, *v;
    const uint8_t *kept;
    const double *add;
    int has_scale;
    double scale;
    /* The terms of clauses 20-22 as an f32 kernel holds them: softcap c (0 = none), the ALiBi
     * slope (0 = none) from powf as ggml computes it, the query's absolute position, the sink. */
    float softcap, slope;
    double pos;
    int has_sink;
    float sink;
} hrow;

/* Soft-capping and ALiBi on a scaled f32 score, in the order of clauses 20-21, before the mask
 * value is added. */
static float terms(const hrow *r, int64_t j, float s)
{
    if (r->softcap > 0.0f)
        s = r->softcap * tanhf(s / r->softcap);
    if (r->slope > 0.0f)
        s -= r->slope * (float)fabs(r->pos - (double)j);
    return s;
}

/* ggml's slope of head h of hq in f32 (powf of powf): an honest kernel's rounding of clause 21. */
static float slope_f32(float max_bias, int64_t hq, int64_t h)
{
    int64_t n = 1;
    while (n * 2 <= hq)
        n *= 2;
    const float m0 = powf(2.0f, -max_bias / (float)n),
                m1 = powf(2.0f, -(max_bias / 2.0f) / (float)n);
    return h < n ? powf(m0, (float)(h + 1)) : powf(m1, (float)(2 * (h - n) + 1));
}

static float dot_f32(const hrow *r, int64_t j)
{
    float acc = 0.0f;
    for (int64_t x = 0; x < r->d; x++)
        acc += r->q[x] * r->k[j * r->d + x];
    return acc;
}

/* The scale as a kernel holds it: a given scale as f32; the default 1/sqrt(D) computed in f32,
 * or held in the dtype (`in_dtype`). */
static float scale_of(const hrow *r, int in_dtype)
{
    if (r->has_scale)
        return (float)r->scale;
    const float s = 1.0f / sqrtf((float)r->d);
    return in_dtype ? rd(s, r->dt) : s;
}

/* The kept scores s softmaxed in f32, P normalised and rounded to the dtype, P.V accumulated in
 * f32 into acc and copied to out. */
static void rounded_p_times_v(const hrow *r, const float *s, float *out, float *acc)
{
    float mx = r->has_sink ? r->sink : -INFINITY, sum = 0.0f;
    for (int64_t j = 0; j < r->lk; j++)
        if (r->kept[j])
            mx = fmaxf(mx, s[j]);
    if (r->has_sink)
        sum += expf(r->sink - mx);
    for (int64_t j = 0; j < r->lk; j++)
        if (r->kept[j])
            sum += expf(s[j] - mx);
    for (int64_t x = 0; x < r->dv; x++)
        acc[x] = 0.0f;
    for (int64_t j = 0; j < r->lk; j++) {
        if (!r->kept[j])
            continue;
        const float p = rd(expf(s[j] - mx) / sum, r->dt);
        for (int64_t x = 0; x < r->dv; x++)
            acc[x] += p * r->v[j * r->dv + x];
    }
    for (int64_t x = 0; x < r->dv; x++)
        out[x] = acc[x];
}

/* Materialised scores: S = q.k (f32) * scale (in the dtype), rounded to the dtype, mask added in
 * f32; softmax in f32; P normalised and rounded to the dtype; P.V accumulated in f32. */
static void impl_materialised(const hrow *r, float *out, float *s, float *acc)
{
    const float sc = scale_of(r, 1);
    for (int64_t j = 0; j < r->lk; j++)
        if (r->kept[j])
            s[j] = rd(terms(r, j, rd(dot_f32(r, j) * sc, r->dt)), r->dt) + (float)r->add[j];
    rounded_p_times_v(r, s, out, acc);
}

/* Two passes, everything in f32 (P never rounded to the dtype). */
static void impl_two_pass_f32(const hrow *r, float *out, float *s, float *acc)
{
    const float sc = scale_of(r, 0);
    float mx = r->has_sink ? r->sink : -INFINITY, sum = 0.0f;
    for (int64_t j = 0; j < r->lk; j++)
        if (r->kept[j]) {
            s[j] = terms(r, j, dot_f32(r, j) * sc) + (float)r->add[j];
            mx = fmaxf(mx, s[j]);
        }
    if (r->has_sink)
        sum += expf(r->sink - mx);
    for (int64_t x = 0; x < r->dv; x++)
        acc[x] = 0.0f;
    for (int64_t j = 0; j < r->lk; j++)
        if (r->kept[j]) {
            const float e = expf(s[j] - mx);
            sum += e;
            for (int64_t x = 0; x < r->dv; x++)
                acc[x] += e * r->v[j * r->dv + x];
        }
    for (int64_t x = 0; x < r->dv; x++)
        out[x] = acc[x] / sum;
}

/* Online softmax over key tiles [lo, hi) of `tile` positions (FlashAttention): scores in f32,
 * exp2 of the log2e-scaled difference, running max m and sum l in f32 (l sums the unrounded
 * P), P rounded to the dtype before P.V, accumulator rescaled when the max grows.  Returns the
 * partial (m, l, acc) of the range; m = -inf when it keeps no key. */
static float online_range(const hrow *r, int64_t lo, int64_t hi, int64_t tile, float *l_out,
                          float *acc, float *s)
{
    const float sc = scale_of(r, 0);
    float m = -INFINITY, l = 0.0f;
    for (int64_t x = 0; x < r->dv; x++)
        acc[x] = 0.0f;
    for (int64_t t0 = lo; t0 < hi; t0 += tile) {
        const int64_t t1 = t0 + tile < hi ? t0 + tile : hi;
        float mt = -INFINITY;
        for (int64_t j = t0; j < t1; j++)
            if (r->kept[j]) {
                s[j] = terms(r, j, dot_f32(r, j) * sc) + (float)r->add[j];
                mt = fmaxf(mt, s[j]);
            }
        if (mt == -INFINITY)
            continue; /* block skipped: nothing kept */
        const float mn = fmaxf(m, mt);
        const float alpha = exp2f((m - mn) * LOG2E_F); /* 0 on the first kept tile */
        l *= alpha;
        for (int64_t x = 0; x < r->dv; x++)
            acc[x] *= alpha;
        for (int64_t j = t0; j < t1; j++) {
            if (!r->kept[j])
                continue;
            const float pt = exp2f((s[j] - mn) * LOG2E_F);
            l += pt;
            const float p = rd(pt, r->dt);
            for (int64_t x = 0; x < r->dv; x++)
                acc[x] += p * r->v[j * r->dv + x];
        }
        m = mn;
    }
    *l_out = l;
    return m;
}

/* The sink folded into a finished (m, l, acc) after the key loop, as ggml's kernel does. */
static void fold_sink(const hrow *r, float m, float *l, float *acc)
{
    if (!r->has_sink)
        return;
    const float mn = fmaxf(m, r->sink), alpha = expf(m - mn);
    *l = *l * alpha + expf(r->sink - mn);
    for (int64_t x = 0; x < r->dv; x++)
        acc[x] *= alpha;
}

static void impl_flash(const hrow *r, float *out, float *s, float *acc)
{
    float l;
    const float m = online_range(r, 0, r->lk, 16, &l, acc, s);
    fold_sink(r, m, &l, acc);
    for (int64_t x = 0; x < r->dv; x++)
        out[x] = acc[x] / l;
}

/* Flash decoding: the keys split into 3 contiguous ranges, each an online pass over 32-key
 * tiles, the partials combined in f32 with weights exp(m_s - m). */
static void impl_split_k(const hrow *r, float *out, float *s, float *acc)
{
    enum { SPLITS = 3 };
    float *part = acc + r->dv; /* scratch: SPLITS * dv */
    float ms[SPLITS], ls[SPLITS], m = -INFINITY, l = 0.0f;
    for (int sp = 0; sp < SPLITS; sp++) {
        const int64_t lo = r->lk * sp / SPLITS, hi = r->lk * (sp + 1) / SPLITS;
        ms[sp] = online_range(r, lo, hi, 32, &ls[sp], part + sp * r->dv, s);
        m = fmaxf(m, ms[sp]);
    }
    for (int64_t x = 0; x < r->dv; x++)
        acc[x] = 0.0f;
    if (r->has_sink) { /* the sink joins the combine as one more partial with no value */
        m = fmaxf(m, r->sink);
        l += expf(r->sink - m);
    }
    for (int sp = 0; sp < SPLITS; sp++) {
        if (ms[sp] == -INFINITY)
            continue;
        const float wgt = expf(ms[sp] - m);
        l += ls[sp] * wgt;
        for (int64_t x = 0; x < r->dv; x++)
            acc[x] += part[sp * r->dv + x] * wgt;
    }
    for (int64_t x = 0; x < r->dv; x++)
        out[x] = acc[x] / l;
}

/* A decode kernel: one key at a time, last to first, online softmax with f32 P; scores rounded
 * to the dtype after scaling by a scale held in the dtype. */
static void impl_decode_reverse(const hrow *r, float *out, float *s, float *acc)
{
    (void)s;
    const float sc = scale_of(r, 1);
    /* The sink starts the online pass: (m, l) = (sigma, 1) with a zero accumulator. */
    float m = r->has_sink ? r->sink : -INFINITY, l = r->has_sink ? 1.0f : 0.0f;
    for (int64_t x = 0; x < r->dv; x++)
        acc[x] = 0.0f;
    for (int64_t j = r->lk - 1; j >= 0; j--) {
        if (!r->kept[j])
            continue;
        const float sj = rd(terms(r, j, rd(dot_f32(r, j) * sc, r->dt)), r->dt) + (float)r->add[j];
        const float mn = fmaxf(m, sj);
        const float alpha = expf(m - mn), p = expf(sj - mn);
        l = l * alpha + p;
        for (int64_t x = 0; x < r->dv; x++)
            acc[x] = acc[x] * alpha + p * r->v[j * r->dv + x];
        m = mn;
    }
    for (int64_t x = 0; x < r->dv; x++)
        out[x] = acc[x] / l;
}

/* PyTorch's math path: q and k each scaled by sqrt(|scale|) in the dtype (q carrying the sign) before the product (every
 * input perturbed by u, beyond clause 13's model), the f32 product rounded to the dtype, P
 * normalised and rounded to the dtype.  Checked all the same: a case it fails is not written. */
static void impl_prescaled(const hrow *r, float *out, float *s, float *acc)
{
    const float sc = scale_of(r, 0), rs = rd(sqrtf(fabsf(sc)), r->dt), qs = sc < 0 ? -rs : rs;
    for (int64_t j = 0; j < r->lk; j++)
        if (r->kept[j]) {
            float a = 0.0f;
            for (int64_t x = 0; x < r->d; x++)
                a += rd(r->q[x] * qs, r->dt) * rd(r->k[j * r->d + x] * rs, r->dt);
            s[j] = rd(terms(r, j, rd(a, r->dt)), r->dt) + (float)r->add[j];
        }
    rounded_p_times_v(r, s, out, acc);
}

/* The fallback SPEC clause 2 asks of every kernel whose f32 scores overflow from finite inputs
 * (a scale near the f32 limit): the row recomputed in binary64 from the f32 inputs and the
 * f32-held scale and terms, rounded once.  Every implementation above takes it where its own row
 * came out non-finite on finite kept inputs. */
static void impl_wide(const hrow *r, float *out)
{
    const double sc = scale_of(r, 0);
    double mx = r->has_sink ? r->sink : -INFINITY, sum = 0.0;
    double *s = malloc(((size_t)r->lk + 1) * sizeof *s), *acc = calloc((size_t)r->dv + 1, 8);
    if (!s || !acc) {
        fprintf(stderr, "casegen: out of memory\n");
        exit(1);
    }
    for (int64_t j = 0; j < r->lk; j++) {
        if (!r->kept[j])
            continue;
        double dot = 0.0;
        for (int64_t x = 0; x < r->d; x++)
            dot += (double)r->q[x] * (double)r->k[j * r->d + x];
        double v = sc * dot;
        if (r->softcap > 0.0f)
            v = r->softcap * tanh(v / r->softcap);
        if (r->slope > 0.0f)
            v -= r->slope * fabs(r->pos - (double)j);
        s[j] = v + r->add[j];
        mx = fmax(mx, s[j]);
    }
    if (r->has_sink)
        sum += exp(r->sink - mx);
    for (int64_t j = 0; j < r->lk; j++) {
        if (!r->kept[j])
            continue;
        const double e = exp(s[j] - mx);
        sum += e;
        for (int64_t x = 0; x < r->dv; x++)
            acc[x] += e * r->v[j * r->dv + x];
    }
    for (int64_t x = 0; x < r->dv; x++)
        out[x] = (float)(acc[x] / sum);
    free(s);
    free(acc);
}

/* Whether the row's q and every kept key's K and V are finite (then so must the output be). */
static int row_inputs_finite(const hrow *r)
{
    for (int64_t x = 0; x < r->d; x++)
        if (!isfinite(r->q[x]))
            return 0;
    for (int64_t j = 0; j < r->lk; j++) {
        if (!r->kept[j] || !isfinite(r->add[j]))
            continue;
        for (int64_t x = 0; x < r->d; x++)
            if (!isfinite(r->k[j * r->d + x]))
                return 0;
        for (int64_t x = 0; x < r->dv; x++)
            if (!isfinite(r->v[j * r->dv + x]))
                return 0;
    }
    return 1;
}

typedef void (*impl_fn)(const hrow *, float *, float *, float *);
static const struct {
    const char *name;
    impl_fn fn;
} IMPLS[] = {
    {"materialised scores, P in the dtype", impl_materialised},
    {"two-pass f32", impl_two_pass_f32},
    {"flash (online, 16-key tiles, P in the dtype)", impl_flash},
    {"split-K (3 splits, online, P in the dtype)", impl_split_k},
    {"decode (one key at a time, reversed)", impl_decode_reverse},
    {"q, k pre-scaled by sqrt(scale) in the dtype (PyTorch math)", impl_prescaled},
};

int cg_honest_count(void)
{
    return (int)(sizeof IMPLS / sizeof IMPLS[0]);
}

const char *cg_honest_name(int which)
{
    return IMPLS[which].name;
}

/* A whole tensor as f32 (exact for every float dtype). */
static float *widen(const acase_tensor *t)
{
    float *f = malloc(((size_t)t->numel + 1) * sizeof *f);
    if (!f) {
        fprintf(stderr, "casegen: out of memory\n");
        exit(1);
    }
    for (int64_t n = 0; n < t->numel; n++)
        f[n] = (float)attnref_load(t->data, t->dtype, n);
    return f;
}

void cg_honest_sdpa(const acase *c, int which, double *out)
{
    const attnref_dtype dt = c->q.dtype;
    const int64_t B = c->q.shape[0], Hq = c->q.shape[1], Lq = c->q.shape[2], D = c->q.shape[3];
    const int64_t Hkv = c->k.shape[1], Lk = c->k.shape[2], Dv = c->v.shape[3];
    float *q = widen(&c->q), *k = widen(&c->k), *v = widen(&c->v);
    uint8_t *kept = malloc((size_t)Lk + 1);
    double *add = malloc(((size_t)Lk + 1) * sizeof *add);
    float *s = malloc(((size_t)Lk + 1) * sizeof *s);
    float *acc = malloc(((size_t)Dv * 4 + 1) * sizeof *acc),
          *row = malloc(((size_t)Dv + 1) * sizeof *row);
    if (!kept || !add || !s || !acc || !row) {
        fprintf(stderr, "casegen: out of memory\n");
        exit(1);
    }
    hrow r = {.dt = dt,
              .d = D,
              .dv = Dv,
              .lk = Lk,
              .kept = kept,
              .add = add,
              .has_scale = c->has_scale,
              .scale = c->scale,
              .softcap = (float)c->softcap,
              .has_sink = c->sinks != NULL};
    const int64_t off = c->has_causal_offset ? c->causal_offset : Lk - Lq;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < Lq; i++) {
                const int64_t hk = h / (Hq / Hkv), o = ((b * Hq + h) * Lq + i) * Dv;
                const int64_t n = acase_sdpa_row_keys(c, b, h, i, kept, add);
                if (n == 0) { /* clause 9: a row that keeps no key is 0 */
                    for (int64_t x = 0; x < Dv; x++)
                        out[o + x] = 0.0;
                    continue;
                }
                r.q = q + ((b * Hq + h) * Lq + i) * D;
                r.k = k + (b * Hkv + hk) * Lk * D;
                r.v = v + (b * Hkv + hk) * Lk * Dv;
                r.slope =
                    c->alibi_max_bias > 0.0 ? slope_f32((float)c->alibi_max_bias, Hq, h) : 0.0f;
                r.pos = (double)off + (double)i;
                r.sink = r.has_sink ? (float)c->sinks[h] : 0.0f;
                IMPLS[which].fn(&r, row, s, acc);
                int finite = 1;
                for (int64_t x = 0; x < Dv; x++)
                    finite &= isfinite(row[x]) != 0;
                if (!finite && row_inputs_finite(&r))
                    impl_wide(&r, row);
                for (int64_t x = 0; x < Dv; x++)
                    out[o + x] = rd(row[x], dt);
            }
    free(q);
    free(k);
    free(v);
    free(kept);
    free(add);
    free(s);
    free(acc);
    free(row);
}
