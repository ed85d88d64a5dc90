/* fuzz_gen.c — random sdpa calls for `attnconf fuzz`, and the case each one becomes.
 *
 * The distributions lean on what breaks kernels: tiny and empty extents, lengths on both sides
 * of 16/32/64/128-key blocks, GQA groups, every mask form and broadcast, parameter masks that
 * end inside a block, masked slots holding NaN/inf, explicit scales, permuted layouts.  A call
 * only uses what the backend's capability bits allow, so everything drawn must pass.
 */
#define _DEFAULT_SOURCE /* strdup, with POSIX 2008 */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncase/sdpa_rows.h"
#include "attnconf/backend.h"
#include "attnref/sdpa.h"
#include "fuzz.h"

/* Keep one call cheap: the reference is O(B*Hq*Lq*Lk*(D+Dv)) and the case file holds every
 * input inline. */
#define HF_MAX_WORK ((int64_t)1 << 20)
#define HF_MAX_TENSOR ((int64_t)1 << 14)

/* ---- random helpers --------------------------------------------------------------------- */

static uint64_t below(uint64_t *rng, uint64_t n)
{
    return n ? acase_splitmix64_next(rng) % n : 0;
}

/* 1 with probability num/den. */
static int chance(uint64_t *rng, unsigned num, unsigned den)
{
    return below(rng, den) < num;
}

static double unit(uint64_t *rng)
{
    return (double)(acase_splitmix64_next(rng) >> 11) * 0x1p-53;
}

#define PICK(rng, arr) ((arr)[below((rng), sizeof(arr) / sizeof((arr)[0]))])

/* x rounded (RNE) to dt and read back: every stored value is exactly representable. */
static double in_dtype(double x, attnref_dtype dt)
{
    unsigned char buf[8];
    attnref_store(buf, dt, 0, x);
    return attnref_load(buf, dt, 0);
}

uint64_t hf_below(uint64_t *rng, uint64_t n)
{
    return below(rng, n);
}

double hf_unit(uint64_t *rng)
{
    return unit(rng);
}

double hf_in_dtype(double x, attnref_dtype dt)
{
    return in_dtype(x, dt);
}

/* ---- hf_call bookkeeping ------------------------------------------------------------------- */

static int64_t q_numel(const hf_call *c)
{
    return c->B * c->Hq * c->Lq * c->D;
}
static int64_t k_numel(const hf_call *c)
{
    return c->B * c->Hkv * c->Lk * c->D;
}
static int64_t v_numel(const hf_call *c)
{
    return c->B * c->Hkv * c->Lk * c->Dv;
}
static int64_t m_numel(const hf_call *c)
{
    return c->mask_kind ? c->mshape[0] * c->mshape[1] * c->mshape[2] * c->mshape[3] : 0;
}

void hf_call_free(hf_call *c)
{
    free(c->q);
    free(c->k);
    free(c->v);
    free(c->mask);
    free(c->lengths);
    free(c->left_padding);
    free(c->sinks);
    free(c->segment_ids);
    free(c->block_ids);
    memset(c, 0, sizeof *c);
}

/* A copy of n elements of size es at p (NULL stays NULL); *bad is set when out of memory. */
static void *dup_n(const void *p, int64_t n, size_t es, int *bad)
{
    if (!p)
        return NULL;
    void *d = malloc((size_t)(n > 0 ? n : 1) * es);
    if (!d) {
        *bad = 1;
        return NULL;
    }
    if (n > 0)
        memcpy(d, p, (size_t)n * es);
    return d;
}

static double *dup_d(const double *p, int64_t n, int *bad)
{
    return dup_n(p, n, sizeof *p, bad);
}

static int64_t *dup_i(const int64_t *p, int64_t n, int *bad)
{
    return dup_n(p, n, sizeof *p, bad);
}

int hf_call_copy(hf_call *dst, const hf_call *src)
{
    int bad = 0;
    *dst = *src;
    dst->q = dup_d(src->q, q_numel(src), &bad);
    dst->k = dup_d(src->k, k_numel(src), &bad);
    dst->v = dup_d(src->v, v_numel(src), &bad);
    dst->mask = dup_d(src->mask, m_numel(src), &bad);
    dst->lengths = dup_i(src->lengths, src->B, &bad);
    dst->left_padding = dup_i(src->left_padding, src->B, &bad);
    dst->sinks = dup_d(src->sinks, src->Hq, &bad);
    dst->segment_ids = dup_i(src->segment_ids, src->B * src->Lk, &bad);
    dst->block_ids = dup_i(src->block_ids, src->B * src->Lk, &bad);
    if (bad) {
        hf_call_free(dst);
        return -1;
    }
    return 0;
}

void hf_call_text(const hf_call *c, char *buf, size_t n)
{
    static const char *const mk[] = {"none", "bool", "additive"};
    size_t j = 0;
#define ADD(...)                                                                                   \
    do {                                                                                           \
        if (j < n) {                                                                               \
            int w_ = snprintf(buf + j, n - j, __VA_ARGS__);                                        \
            j += w_ > 0 ? (size_t)w_ : 0;                                                          \
        }                                                                                          \
    } while (0)
    ADD("%s B=%lld Hq=%lld Hkv=%lld Lq=%lld Lk=%lld D=%lld Dv=%lld mask=%s",
        attnref_dtype_name(c->dt), (long long)c->B, (long long)c->Hq, (long long)c->Hkv,
        (long long)c->Lq, (long long)c->Lk, (long long)c->D, (long long)c->Dv, mk[c->mask_kind]);
    if (c->mask_kind) {
        ADD("(%s", attnref_dtype_name(c->mask_dt));
        for (int d = 4 - c->mask_ndim; d < 4; d++)
            ADD("%s%lld", d == 4 - c->mask_ndim ? " " : "x", (long long)c->mshape[d]);
        ADD(")");
    }
    if (c->causal)
        ADD(" causal");
    if (c->has_offset)
        ADD(" offset=%lld", (long long)c->offset);
    if (c->window)
        ADD(" window=%lld", (long long)c->window);
    if (c->lengths)
        ADD(" lengths");
    if (c->left_padding)
        ADD(" left_padding");
    if (c->has_scale)
        ADD(" scale=%g", c->scale);
    if (c->softcap > 0.0)
        ADD(" softcap=%g", c->softcap);
    if (c->alibi_max_bias > 0.0)
        ADD(" alibi=%g", c->alibi_max_bias);
    if (c->sinks)
        ADD(" sinks");
    if (c->chunk)
        ADD(" chunk=%lld", (long long)c->chunk);
    if (c->segment_ids)
        ADD(" segments");
    if (c->block_ids)
        ADD(" blocks");
    for (int t = 0; t < 3; t++) {
        if (c->layout[t] == ACASE_LAYOUT_BLHD)
            ADD(" %c:blhd", "qkv"[t]);
        if (c->stride0[t])
            ADD(" %c:stride0=%u", "qkv"[t], (unsigned)c -> stride0[t]);
    }
    if (c->poison)
        ADD(" poison");
    if (c->exact)
        ADD(" correctly-rounded");
#undef ADD
}

attnref_sdpa_params hf_call_params(const hf_call *c)
{
    const attnref_sdpa_params p = {.has_scale = c->has_scale,
                                   .scale = c->scale,
                                   .causal = c->causal,
                                   .has_causal_offset = c->has_offset,
                                   .causal_offset = c->offset,
                                   .window = c->window,
                                   .batch = c->B,
                                   .lengths = c->lengths,
                                   .left_padding = c->left_padding,
                                   .softcap = c->softcap,
                                   .alibi_max_bias = c->alibi_max_bias,
                                   .sinks = c->sinks,
                                   .chunk = c->chunk,
                                   .segment_ids = c->segment_ids,
                                   .block_ids = c->block_ids};
    return p;
}

/* Whether row (b, h, i) keeps key j (the parameters by the reference's rule, then the mask). */
static int call_keeps(const hf_call *c, int64_t b, int64_t h, int64_t i, int64_t j)
{
    const attnref_sdpa_params p = hf_call_params(c);
    if (!attnref_sdpa_key_kept(&p, c->Lq, c->Lk, b, i, j))
        return 0;
    if (!c->mask_kind)
        return 1;
    const int64_t idx[4] = {b, h, i, j};
    int64_t off = 0;
    for (int d = 0; d < 4; d++)
        off = off * c->mshape[d] + (c->mshape[d] == 1 ? 0 : idx[d]);
    const double m = c->mask[off];
    return c->mask_kind == HF_MASK_BOOL ? m != 0.0 : m != -INFINITY;
}

/* ---- drawing -------------------------------------------------------------------------- */

static int64_t draw_len(uint64_t *rng, int allow0)
{
    static const int64_t small[] = {1, 1, 1, 2, 3, 4, 5, 7, 8, 9};
    static const int64_t blocks[] = {15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129};
    unsigned r = (unsigned)below(rng, 20);
    if (r == 0 && allow0)
        return 0;
    if (r < 11)
        return PICK(rng, small);
    if (r < 17)
        return PICK(rng, blocks);
    return 1 + (int64_t)below(rng, 200);
}

/* A random value in a dtype for q/k (amplitude a), with occasional edge values. */
static double draw_value(uint64_t *rng, attnref_dtype dt, double a, int edges)
{
    if (edges && chance(rng, 1, 16)) {
        static const double e[] = {0.0,   -0.0, 1.0,   -1.0, 0.5,   1e-3,
                                   -1e-3, 6e-8, -6e-8, 30.0, -30.0, 1.0 / 3.0};
        return in_dtype(PICK(rng, e), dt);
    }
    return in_dtype(a * (2.0 * unit(rng) - 1.0), dt);
}

static int alloc_vals(double **p, int64_t n)
{
    *p = calloc((size_t)(n > 0 ? n : 1), sizeof **p);
    return *p ? 0 : -1;
}

/* Make a rank-4 (B, H, L, X) tensor constant along the stride0 dimensions by copying the first
 * slice over the others. */
static void make_stride0(double *x, int64_t B, int64_t H, int64_t L, int64_t X, uint8_t s0)
{
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++) {
            int64_t sb = (s0 & 1) ? 0 : b, sh = (s0 & 2) ? 0 : h;
            if (sb == b && sh == h)
                continue;
            memcpy(x + (b * H + h) * L * X, x + (sb * H + sh) * L * X, (size_t)(L * X) * sizeof *x);
        }
}

void hf_make_stride0(double *x, int64_t B, int64_t H, int64_t L, int64_t X, uint8_t s0)
{
    make_stride0(x, B, H, L, X, s0);
}

static void draw_mask_values(uint64_t *rng, hf_call *c)
{
    const int64_t n = m_numel(c);
    const int64_t lk = c->mshape[3];
    if (c->mask_kind == HF_MASK_BOOL) {
        const unsigned keep = (unsigned)PICK(rng, ((const unsigned[]){9, 5, 1, 10}));
        const int odd_bytes = chance(rng, 1, 4); /* true as bytes other than 1 */
        for (int64_t e = 0; e < n; e++) {
            int t = below(rng, 10) < keep;
            c->mask[e] = !t ? 0.0 : odd_bytes ? (double)PICK(rng, ((const int[]){1, 2, 255})) : 1.0;
        }
        /* A whole key row of the mask false now and then: fully masked rows. */
        if (lk > 0 && n >= lk && chance(rng, 1, 4)) {
            int64_t row = (int64_t)below(rng, (uint64_t)(n / lk));
            for (int64_t j = 0; j < lk; j++)
                c->mask[row * lk + j] = 0.0;
        }
        return;
    }
    const attnref_dtype mdt = c->mask_dt;
    const double fmin = attnref_dtype_finite_min(mdt);
    if (chance(rng, 1, 10)) { /* a float mask of only 0s and 1s is additive, not boolean */
        for (int64_t e = 0; e < n; e++)
            c->mask[e] = (double)below(rng, 2);
        return;
    }
    if (chance(rng, 1, 6)) {
        /* Every logit far below zero (clause 11, finite sentinels): a kernel whose running
         * maximum starts at a finite -5e4 or -1e4 zeroes these rows. */
        double shift = PICK(rng, ((const double[]){-1e5, -6e4, -3e4}));
        if (shift < fmin)
            shift = -6e4;
        for (int64_t e = 0; e < n; e++)
            c->mask[e] =
                chance(rng, 1, 10) ? -INFINITY : in_dtype(shift + 6.0 * unit(rng) - 3.0, mdt);
        return;
    }
    for (int64_t e = 0; e < n; e++) {
        unsigned r = (unsigned)below(rng, 20);
        c->mask[e] = r < 11   ? 0.0
                     : r < 14 ? in_dtype(6.0 * unit(rng) - 3.0, mdt)
                     : r < 17 ? -INFINITY
                     : r < 19 ? fmin
                              : in_dtype(-1e4, mdt);
    }
    if (lk > 0 && n >= lk &&
        chance(rng, 1, 4)) { /* a row masked only by -inf or only by the minimum */
        int64_t row = (int64_t)below(rng, (uint64_t)(n / lk));
        double fill = chance(rng, 1, 2) ? -INFINITY : fmin;
        for (int64_t j = 0; j < lk; j++)
            c->mask[row * lk + j] = fill;
    }
}

/* NaN / inf / huge values in K or V slots no row keeps (SPEC clause 10). */
static void draw_poison(uint64_t *rng, hf_call *c)
{
    const int64_t g = c->Hq / c->Hkv;
    static const double bad[] = {NAN, INFINITY, -INFINITY, 1e30};
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t hk = 0; hk < c->Hkv; hk++)
            for (int64_t j = 0; j < c->Lk; j++) {
                int used = 0;
                for (int64_t h = hk * g; h < (hk + 1) * g && !used; h++)
                    for (int64_t i = 0; i < c->Lq && !used; i++)
                        used = call_keeps(c, b, h, i, j);
                if (used || !chance(rng, 1, 2))
                    continue;
                double x = in_dtype(PICK(rng, bad), c->dt);
                if (!c->stride0[1] && chance(rng, 1, 2))
                    c->k[((b * c->Hkv + hk) * c->Lk + j) * c->D +
                         (int64_t)below(rng, (uint64_t)c->D)] = x;
                else if (!c->stride0[2] && c->Dv > 0)
                    c->v[((b * c->Hkv + hk) * c->Lk + j) * c->Dv +
                         (int64_t)below(rng, (uint64_t)c->Dv)] = x;
                else
                    continue;
                c->poison = 1;
            }
}

static int within_budget(const hf_call *c)
{
    const int64_t dm = c->D > c->Dv ? c->D : c->Dv;
    const int64_t work = c->B * c->Hq * (c->Lq ? c->Lq : 1) * (c->Lk ? c->Lk : 1) * dm;
    return work <= HF_MAX_WORK && q_numel(c) <= HF_MAX_TENSOR && k_numel(c) <= HF_MAX_TENSOR &&
           v_numel(c) <= HF_MAX_TENSOR && c->B * c->Hq * c->Lq * c->Lk <= HF_MAX_TENSOR &&
           c->B * c->Hq * c->Lq * c->Dv <= HF_MAX_TENSOR;
}

/* Shrink the largest extent until the call is cheap (halving keeps a power-of-two Lk one). */
static void fit_budget(hf_call *c)
{
    for (;;) {
        int64_t dm = c->D > c->Dv ? c->D : c->Dv;
        if (within_budget(c))
            break;
        if (c->Lk >= c->Lq && c->Lk > 1)
            c->Lk = (c->Lk + 1) / 2;
        else if (c->Lq > 1)
            c->Lq = (c->Lq + 1) / 2;
        else if (dm > 1) {
            c->D = c->D > 1 ? c->D / 2 : 1;
            c->Dv = c->Dv > 1 ? c->Dv / 2 : 1;
        } else if (c->B > 1)
            c->B--;
        else
            break;
    }
}

/* The same for a call holding a boundary value: the axes in `fixed` (HF_FIX_*) keep their
 * extents, the others shrink (to 1 at most, heads included: MHA with one head).  An edge's
 * extents are chosen so that they fit with every other axis at 1. */
static void fit_budget_fixed(hf_call *c, int fixed)
{
    while (!within_budget(c)) {
        if (!(fixed & HF_FIX_LK) && c->Lk > 1 && (c->Lk >= c->Lq || (fixed & HF_FIX_LQ)))
            c->Lk = (c->Lk + 1) / 2;
        else if (!(fixed & HF_FIX_LQ) && c->Lq > 1)
            c->Lq = (c->Lq + 1) / 2;
        else if (!(fixed & HF_FIX_D) && (c->D > 1 || c->Dv > 1)) {
            c->D = c->D > 1 ? c->D / 2 : 1;
            c->Dv = c->Dv > 1 ? c->Dv / 2 : 1;
        } else if (!(fixed & HF_FIX_B) && c->B > 1)
            c->B--;
        else if (!(fixed & HF_FIX_HEADS) && c->Hq > 1)
            c->Hq = c->Hkv = 1;
        else
            break;
    }
}

/* ---- the terms of current models (SPEC clauses 20-22) --------------------------------------- */

/* Which terms a call gets (hf_terms, fuzz.h), decided up front from a side stream (so a call
 * without terms is drawn from the main stream as before the terms existed). */
static hf_terms draw_term_choice(uint64_t *ts, uint64_t caps)
{
    hf_terms t;
    t.softcap = (caps & ATTNCONF_CAP_SOFTCAP) && chance(ts, 1, 7);
    t.alibi = (caps & ATTNCONF_CAP_ALIBI) && chance(ts, 1, 7);
    t.sinks = (caps & ATTNCONF_CAP_SINKS) && chance(ts, 1, 6);
    /* chunk and blocks need causal (a causal call has no mask tensor) */
    t.chunk = (caps & ATTNCONF_CAP_CHUNK) && (caps & ATTNCONF_CAP_CAUSAL) && chance(ts, 1, 8);
    t.segments = (caps & ATTNCONF_CAP_SEGMENTS) && chance(ts, 1, 8);
    t.blocks = (caps & ATTNCONF_CAP_BLOCKS) && (caps & ATTNCONF_CAP_CAUSAL) && chance(ts, 1, 8);
    return t;
}

/* Query heads for ALiBi: a count that is not a power of two most of the time, where the
 * slopes of the heads past the largest power of two interleave (Press et al.'s get_slopes; a
 * kernel using 2^(-b (h+1) / Hq) for every head agrees only at powers of two). */
static void draw_alibi_heads(uint64_t *ts, uint64_t caps, hf_call *c)
{
    if (!chance(ts, 2, 3))
        return;
    c->Hq = PICK(ts, ((const int64_t[]){3, 5, 6, 7, 12, 24}));
    c->Hkv = c->Hq;
    if (caps & ATTNCONF_CAP_GQA) { /* MQA half the time, else 3 KV heads where 3 divides Hq */
        const unsigned r = (unsigned)below(ts, 4);
        c->Hkv = r < 2 ? 1 : r == 2 && c->Hq % 3 == 0 ? 3 : c->Hq;
    }
}

/* Run-length id patterns along each batch row's Lk key slots: runs of 1 (a document or block of
 * one key), runs across 16/32-key tiles, runs longer than the window; segments count up with
 * now and then an earlier id again (a document need not be contiguous), blocks are separated by
 * keys in no block (-1).  Rows share the first row's pattern now and then. */
static void draw_ids(uint64_t *ts, hf_call *c, int64_t *ids, int blocks)
{
    static const int64_t runs[] = {1, 1, 1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 33};
    const int shared = chance(ts, 1, 4);
    for (int64_t b = 0; b < c->B; b++) {
        int64_t *row = ids + b * c->Lk;
        if (b > 0 && shared) {
            memcpy(row, ids, (size_t)c->Lk * sizeof *row);
            continue;
        }
        int64_t id = (int64_t)below(ts, 3), j = 0;
        while (j < c->Lk) {
            int64_t run =
                chance(ts, 1, 8) ? 1 + (int64_t)below(ts, (uint64_t)c->Lk) : PICK(ts, runs);
            if (c->window > 0 && chance(ts, 1, 3))
                run = c->window + 1 + (int64_t)below(ts, 8); /* a block the window cuts */
            int64_t v;
            if (blocks && chance(ts, 2, 5))
                v = -1;
            else if (id > 0 && chance(ts, 1, 6))
                v = (int64_t)below(ts, (uint64_t)id); /* an earlier id again */
            else
                v = id++;
            for (int64_t t = 0; t < run && j < c->Lk; t++)
                row[j++] = v;
        }
    }
}

/* The terms' values, once the call's shapes, mask and inputs are drawn (before the poison,
 * which must see the final keep set).  Returns 0, or -1 out of memory. */
static int draw_terms(uint64_t *ts, uint64_t caps, const hf_terms *t, hf_call *c)
{
    if (t->softcap) {
        c->softcap = PICK(ts, ((const double[]){5.0, 20.0, 50.0}));
        /* q and k large enough that the scaled scores reach past c, where tanh bends: for
         * uniform entries in [-a, a] the default-scaled score has deviation a^2 / 3. */
        if (chance(ts, 3, 4) && !c->exact) {
            const double a = sqrt(PICK(ts, ((const double[]){3.0, 6.0, 12.0})) * c->softcap);
            for (int64_t e = 0; e < q_numel(c); e++)
                c->q[e] = draw_value(ts, c->dt, a, 0);
            for (int64_t e = 0; e < k_numel(c); e++)
                c->k[e] = draw_value(ts, c->dt, a, 0);
            make_stride0(c->k, c->B, c->Hkv, c->Lk, c->D, c->stride0[1]);
        }
    }
    if (t->alibi)
        c->alibi_max_bias = PICK(ts, ((const double[]){1.0, 8.0, 16.0}));
    if (t->sinks) {
        static const double lo[] = {-4.0, -1.0, 2.0, 4.0, 8.0}, hi[] = {4.0, 1.0, 6.0, 8.0, 16.0};
        const int r = (int)below(ts, 5);
        if (!(c->sinks = malloc((size_t)(c->Hq > 0 ? c->Hq : 1) * sizeof *c->sinks)))
            return -1;
        for (int64_t h = 0; h < c->Hq; h++) {
            /* bf16 values, exact in f16 and f32 too (as casegen's make_sinks) */
            double x = in_dtype(lo[r] + (hi[r] - lo[r]) * unit(ts), ATTNREF_BF16);
            c->sinks[h] = fabs(x) < 0x1p-14 ? 0.0 : x;
        }
    }
    if (t->chunk && c->causal)
        c->chunk = PICK(ts, ((const int64_t[]){1, 2, 3, 8, 16, 17}));
    if (c->chunk > 1 && (caps & ATTNCONF_CAP_SDPA_LEFT_PAD) && chance(ts, 1, 2)) {
        /* left padding off the chunk grid: chunks start at left_padding[b], not at slot 0 */
        if (!c->left_padding && !(c->left_padding = malloc((size_t)c->B * sizeof *c->left_padding)))
            return -1;
        for (int64_t b = 0; b < c->B; b++) {
            int64_t lp =
                c->chunk * (int64_t)below(ts, 3) + 1 + (int64_t)below(ts, (uint64_t)c->chunk - 1);
            c->left_padding[b] = lp <= c->Lk ? lp : (int64_t)below(ts, (uint64_t)c->Lk + 1);
        }
    }
    if (c->Lk < 1)
        return 0;
    if (t->segments) {
        if (!(c->segment_ids = malloc((size_t)(c->B * c->Lk) * sizeof *c->segment_ids)))
            return -1;
        draw_ids(ts, c, c->segment_ids, 0);
    }
    if (t->blocks && c->causal) {
        if (!(c->block_ids = malloc((size_t)(c->B * c->Lk) * sizeof *c->block_ids)))
            return -1;
        draw_ids(ts, c, c->block_ids, 1);
    }
    return 0;
}

/* ---- correctly rounded draws ---------------------------------------------------------- */

/* A bound can never tell round-to-nearest-even from truncation (both are within an ulp), so 1 in
 * 8 of the f16/bf16 draws are built like casegen's sdpa.rounding family instead: q = 0, k = 0 or
 * both (every score 0, every weight exp(0) = 1 in any kernel), Lk a power of two, an optional
 * bool mask keeping 0 or a power-of-two number of scattered keys per row (1/n exact), and V in
 * +-[0.5, 2] with one sign per column (few significant bits: every f32 partial sum is exact).
 * The expectation is the mean of V rounded once, and every row is EXACT (hf_exact_ok). */
#define HF_EXACT_DEN 8

static int is_pow2(int64_t n)
{
    return n > 0 && (n & (n - 1)) == 0;
}

int hf_exact_ok(const hf_call *c)
{
    /* ALiBi moves the scores off 0 and a sink is one more weight: 1/n is no longer exact. */
    if (c->poison || c->Lk > 1024 || c->alibi_max_bias > 0.0 || c->sinks)
        return 0;
    int zq = 1, zk = 1;
    for (int64_t e = 0; e < q_numel(c); e++)
        zq &= c->q[e] == 0.0;
    for (int64_t e = 0; e < k_numel(c); e++)
        zk &= c->k[e] == 0.0;
    for (int64_t e = 0; e < q_numel(c); e++)
        zk &= isfinite(c->q[e]) != 0;
    for (int64_t e = 0; e < k_numel(c); e++)
        zq &= isfinite(c->k[e]) != 0;
    if (!zq && !zk)
        return 0;
    for (int64_t e = 0; e < v_numel(c); e++) {
        const double x = c->v[e] * 2048.0;
        if (!(fabs(c->v[e]) < 4.0) || x != floor(x))
            return 0;
    }
    if (c->mask_kind == HF_MASK_ADD)
        return 0;
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t h = 0; h < c->Hq; h++)
            for (int64_t i = 0; i < c->Lq; i++) {
                int64_t n = 0;
                for (int64_t j = 0; j < c->Lk; j++)
                    n += call_keeps(c, b, h, i, j);
                if (n && !is_pow2(n))
                    return 0;
            }
    return 1;
}

/* The exact draw for dtype dt (see above); values are zeroed by alloc_vals. */
static int draw_exact(uint64_t *rng, uint64_t caps, attnref_dtype dt, hf_call *c)
{
    c->dt = dt;
    c->exact = 1;
    c->B = PICK(rng, ((const int64_t[]){1, 1, 2, 3}));
    c->Hkv = PICK(rng, ((const int64_t[]){1, 1, 2}));
    c->Hq = c->Hkv * ((caps & ATTNCONF_CAP_GQA) ? PICK(rng, ((const int64_t[]){1, 2, 4})) : 1);
    c->Lq = chance(rng, 1, 3) ? 1 : 1 + (int64_t)below(rng, 9);
    c->Lk = (int64_t)1 << PICK(rng, ((const int[]){1, 2, 2, 3, 4, 5, 6, 7, 8, 10}));
    static const int64_t dims[] = {1, 4, 8, 16, 32, 64};
    c->D = PICK(rng, dims);
    c->Dv = (caps & ATTNCONF_CAP_DV_NE_D) && chance(rng, 1, 4) ? PICK(rng, dims) : c->D;
    fit_budget(c);
    if ((caps & ATTNCONF_CAP_SCALE) && chance(rng, 1, 4)) {
        c->has_scale = 1;
        c->scale = PICK(rng, ((const double[]){0.125, 2.0, -0.5}));
    }
    for (int t = 0; t < 3; t++)
        if ((caps & ATTNCONF_CAP_STRIDED) && chance(rng, 1, 4))
            c->layout[t] = ACASE_LAYOUT_BLHD;
    if ((caps & ATTNCONF_CAP_MASK_BOOL) && chance(rng, 1, 2)) {
        c->mask_kind = HF_MASK_BOOL;
        c->mask_dt = ATTNREF_BOOL;
        c->mask_ndim = 4;
        c->mshape[0] = c->B, c->mshape[1] = c->Hq, c->mshape[2] = c->Lq, c->mshape[3] = c->Lk;
        if ((caps & ATTNCONF_CAP_MASK_BCAST) && chance(rng, 1, 2))
            c->mshape[0] = c->mshape[1] = 1;
    }
    if (alloc_vals(&c->q, q_numel(c)) || alloc_vals(&c->k, k_numel(c)) ||
        alloc_vals(&c->v, v_numel(c)) || (c->mask_kind && alloc_vals(&c->mask, m_numel(c))))
        return -1;
    const unsigned zero = (unsigned)below(rng, 3); /* 0: q = 0, 1: k = 0, 2: both */
    if (zero == 1)
        for (int64_t e = 0; e < q_numel(c); e++)
            c->q[e] = draw_value(rng, dt, 2.0, 0);
    if (zero == 0)
        for (int64_t e = 0; e < k_numel(c); e++)
            c->k[e] = draw_value(rng, dt, 2.0, 0);
    for (int64_t x = 0; x < c->Dv; x++) {
        const double sign = chance(rng, 1, 2) ? -1.0 : 1.0;
        for (int64_t r = 0; r < c->B * c->Hkv * c->Lk; r++)
            c->v[r * c->Dv + x] = in_dtype(sign * (0.5 + 1.5 * unit(rng)), dt);
    }
    if (c->mask_kind) {
        /* each mask row keeps 2^e scattered keys (a partial shuffle), or none now and then */
        int64_t *perm = malloc((size_t)c->Lk * sizeof *perm);
        if (!perm)
            return -1;
        const int64_t rows = m_numel(c) / c->Lk;
        int lg = 0;
        while (((int64_t)1 << lg) < c->Lk)
            lg++;
        for (int64_t r = 0; r < rows; r++) {
            const int64_t keep =
                chance(rng, 1, 10) ? 0 : (int64_t)1 << below(rng, (uint64_t)lg + 1);
            for (int64_t j = 0; j < c->Lk; j++)
                perm[j] = j;
            for (int64_t t = 0; t < keep; t++) {
                const int64_t u = t + (int64_t)below(rng, (uint64_t)(c->Lk - t));
                const int64_t tmp = perm[t];
                perm[t] = perm[u];
                perm[u] = tmp;
                c->mask[r * c->Lk + perm[t]] = 1.0;
            }
        }
        free(perm);
    }
    if (caps & ATTNCONF_CAP_STRIDE0) {
        if (c->B > 1 && chance(rng, 1, 8))
            c->stride0[1] |= 1, c->stride0[2] |= 1;
        if (c->Hkv > 1 && chance(rng, 1, 8))
            c->stride0[1] |= 2, c->stride0[2] |= 2;
        make_stride0(c->k, c->B, c->Hkv, c->Lk, c->D, c->stride0[1]);
        make_stride0(c->v, c->B, c->Hkv, c->Lk, c->Dv, c->stride0[2]);
    }
    return 0;
}

int hf_draw(uint64_t *rng, uint64_t caps, hf_call *out)
{
    return hf_draw_edge(rng, caps, -1, out);
}

/* Run edge `edge`'s generator at one phase (nothing without an edge). */
static int edge_at(int edge, int phase, uint64_t *es, uint64_t caps, hf_call *c, hf_terms *t)
{
    if (edge < 0)
        return 0;
    hf_edge_ctx x = {phase, es, caps, c, t};
    return hf_edges[edge].pose(&x);
}

int hf_draw_edge(uint64_t *rng, uint64_t caps, int edge, hf_call *out)
{
    memset(out, 0, sizeof *out);
    hf_call *c = out;
    attnref_dtype dts[3];
    int ndt = 0;
    if (caps & ATTNCONF_CAP_F32)
        dts[ndt++] = ATTNREF_F32;
    if (caps & ATTNCONF_CAP_F16)
        dts[ndt++] = ATTNREF_F16;
    if (caps & ATTNCONF_CAP_BF16)
        dts[ndt++] = ATTNREF_BF16;
    if (ndt == 0)
        return -2;
    /* The exact-draw choice comes from a side stream, so every other call stays as drawn
     * before the mode existed. */
    uint64_t side = *rng ^ 0x5c0ffee5eedull;
    const int half = ((caps & ATTNCONF_CAP_F16) != 0) + ((caps & ATTNCONF_CAP_BF16) != 0);
    /* The edge's own draws come from a third stream: a call with an edge is the uniform call
     * of the same seed with that edge forced into it. */
    uint64_t es = *rng ^ 0xed6e5ab1e5ull;
    if (half && below(&side, HF_EXACT_DEN) == 0 && edge < 0) {
        const attnref_dtype hdt = (caps & ATTNCONF_CAP_F16) && (half == 1 || below(&side, 2))
                                      ? ATTNREF_F16
                                      : ATTNREF_BF16;
        if (draw_exact(rng, caps, hdt, c) != 0)
            goto oom;
        return 0;
    }
    c->dt = dts[below(rng, (uint64_t)ndt)];
    uint64_t ts = *rng ^ 0x7e5a5ca1ab1eull; /* the terms' side stream */
    hf_terms terms = draw_term_choice(&ts, caps);
    edge_at(edge, HF_PHASE_TERMS, &es, caps, c, &terms);

    c->B = PICK(rng, ((const int64_t[]){1, 1, 1, 2, 2, 3, 4}));
    c->Hkv = PICK(rng, ((const int64_t[]){1, 1, 2, 3}));
    int64_t g = (caps & ATTNCONF_CAP_GQA) ? PICK(rng, ((const int64_t[]){1, 1, 2, 3, 4, 8})) : 1;
    c->Hq = c->Hkv * g;
    if (terms.alibi)
        draw_alibi_heads(&ts, caps, c);
    c->Lq = draw_len(rng, 1);
    c->Lk = draw_len(rng, 1);
    if (chance(rng, 1, 5))
        c->Lq = 1; /* decode */
    static const int64_t dims[] = {1, 2, 3, 4, 8, 8, 16, 16, 32, 64, 80, 128};
    c->D = PICK(rng, dims);
    c->Dv = (caps & ATTNCONF_CAP_DV_NE_D) && chance(rng, 1, 4) ? PICK(rng, dims) : c->D;
    fit_budget(c);
    if (edge >= 0)
        fit_budget_fixed(c, edge_at(edge, HF_PHASE_SHAPES, &es, caps, c, &terms));

    if ((caps & ATTNCONF_CAP_SCALE) && chance(rng, 3, 10)) {
        c->has_scale = 1;
        c->scale = PICK(rng, ((const double[]){0.125, 0.5, 1.0, 2.0, 0.0, -0.5, 0.3}));
    }
    for (int t = 0; t < 3; t++)
        if ((caps & ATTNCONF_CAP_STRIDED) && chance(rng, 1, 4))
            c->layout[t] = ACASE_LAYOUT_BLHD;

    /* The mask: none, causal (with parameters) or a tensor; lengths / left padding with any. */
    unsigned form = (unsigned)below(rng, 10);
    if (terms.chunk || terms.blocks)
        form = 3; /* both need causal */
    if (form >= 3 && form <= 5 && (caps & ATTNCONF_CAP_CAUSAL)) {
        c->causal = 1;
        if ((caps & ATTNCONF_CAP_CAUSAL_OFFSET) && chance(rng, 2, 5)) {
            c->has_offset = 1;
            int64_t base = c->Lk - c->Lq;
            c->offset = PICK(rng, ((const int64_t[]){0, -1, -2, 1, 2, 3, 5})) +
                        (chance(rng, 1, 2) ? base : 0);
            if (chance(rng, 1, 10)) /* every key, or none, for every row */
                c->offset = chance(rng, 1, 2) ? c->Lk + 1000 : -(c->Lq + c->Lk + 1000);
        }
        if ((caps & ATTNCONF_CAP_SDPA_WINDOW) && chance(rng, 2, 5))
            c->window = PICK(rng, ((const int64_t[]){1, 2, 3, 4, 15, 16, 17, 32, 33})) +
                        (chance(rng, 1, 8) ? c->Lk : 0);
    } else if (form >= 6 && form <= 7 && (caps & ATTNCONF_CAP_MASK_BOOL)) {
        c->mask_kind = HF_MASK_BOOL;
        c->mask_dt = ATTNREF_BOOL;
    } else if (form >= 8 && (caps & ATTNCONF_CAP_MASK_ADD)) {
        c->mask_kind = HF_MASK_ADD;
        c->mask_dt = c->dt;
        if (c->dt == ATTNREF_F32 && chance(rng, 1, 4))
            c->mask_dt = chance(rng, 1, 2) ? ATTNREF_F16 : ATTNREF_BF16;
    }
    if (c->mask_kind) {
        const int64_t full[4] = {c->B, c->Hq, c->Lq, c->Lk};
        for (int d = 0; d < 4; d++)
            c->mshape[d] = full[d];
        c->mask_ndim = 4;
        if ((caps & ATTNCONF_CAP_MASK_BCAST) && chance(rng, 1, 2)) {
            for (int d = 0; d < 3; d++)
                if (chance(rng, 1, 2))
                    c->mshape[d] = 1;
            if (chance(rng, 1, 16))
                c->mshape[3] = 1;
            while (c->mask_ndim > 1 && c->mshape[4 - c->mask_ndim] == 1 && chance(rng, 1, 2))
                c->mask_ndim--;
        }
    }
    if ((caps & ATTNCONF_CAP_SDPA_LENGTHS) && chance(rng, 3, 10)) {
        if (!(c->lengths = malloc((size_t)c->B * sizeof *c->lengths)))
            goto oom;
        for (int64_t b = 0; b < c->B; b++)
            c->lengths[b] = chance(rng, 1, 3) ? c->Lk : (int64_t)below(rng, (uint64_t)c->Lk + 1);
    }
    if ((caps & ATTNCONF_CAP_SDPA_LEFT_PAD) && chance(rng, 3, 10)) {
        if (!(c->left_padding = malloc((size_t)c->B * sizeof *c->left_padding)))
            goto oom;
        for (int64_t b = 0; b < c->B; b++)
            c->left_padding[b] = chance(rng, 1, 3) ? 0 : (int64_t)below(rng, (uint64_t)c->Lk + 1);
    }
    if (edge_at(edge, HF_PHASE_PARAMS, &es, caps, c, &terms) != 0)
        goto oom;

    if (alloc_vals(&c->q, q_numel(c)) || alloc_vals(&c->k, k_numel(c)) ||
        alloc_vals(&c->v, v_numel(c)) || (c->mask_kind && alloc_vals(&c->mask, m_numel(c))))
        goto oom;
    const double amp = PICK(rng, ((const double[]){0.25, 1.0, 1.0, 2.0, 4.0}));
    const int edges = chance(rng, 1, 3);
    for (int64_t e = 0; e < q_numel(c); e++)
        c->q[e] = draw_value(rng, c->dt, amp, edges);
    for (int64_t e = 0; e < k_numel(c); e++)
        c->k[e] = draw_value(rng, c->dt, amp, edges);
    const double vamp = PICK(rng, ((const double[]){1.0, 1.0, 4.0, 100.0}));
    for (int64_t e = 0; e < v_numel(c); e++)
        c->v[e] = draw_value(rng, c->dt, vamp, edges);
    if (chance(rng, 1, 10) && c->D > 0) {
        /* Large aligned q and k (|entries| 20..28, shared sign pattern): raw q.k reaches
         * 5e4..1e5 at D = 128, past f16's range, while scale * q.k stays far inside it. */
        uint8_t *neg = malloc((size_t)c->D);
        if (!neg)
            goto oom;
        for (int64_t d = 0; d < c->D; d++)
            neg[d] = (uint8_t)below(rng, 2);
        for (int64_t e = 0; e < q_numel(c); e++)
            c->q[e] = in_dtype((neg[e % c->D] ? -1 : 1) * (20.0 + 8.0 * unit(rng)), c->dt);
        for (int64_t r = 0; r < c->B * c->Hkv * c->Lk; r++) {
            const double flip = chance(rng, 1, 3) ? -1.0 : 1.0;
            for (int64_t d = 0; d < c->D; d++)
                c->k[r * c->D + d] =
                    in_dtype(flip * (neg[d] ? -1 : 1) * (20.0 + 8.0 * unit(rng)), c->dt);
        }
        free(neg);
    }
    if (c->mask_kind)
        draw_mask_values(rng, c);
    if (caps & ATTNCONF_CAP_STRIDE0) {
        if (c->B > 1 && chance(rng, 1, 8))
            c->stride0[1] |= 1, c->stride0[2] |= 1;
        if (c->Hkv > 1 && chance(rng, 1, 8))
            c->stride0[1] |= 2, c->stride0[2] |= 2;
        make_stride0(c->k, c->B, c->Hkv, c->Lk, c->D, c->stride0[1]);
        make_stride0(c->v, c->B, c->Hkv, c->Lk, c->Dv, c->stride0[2]);
    }
    if (draw_terms(&ts, caps, &terms, c) != 0 ||
        edge_at(edge, HF_PHASE_VALUES, &es, caps, c, &terms) != 0)
        goto oom;
    if (chance(rng, 1, 3))
        draw_poison(rng, c);
    return 0;
oom:
    hf_call_free(c);
    return -1;
}

/* ---- the case ------------------------------------------------------------------------- */

static int fill_tensor(acase_tensor *t, attnref_dtype dt, int32_t ndim, const int64_t *shape,
                       const double *vals, acase_layout layout, uint8_t s0, char *err,
                       size_t errlen)
{
    t->present = 1;
    t->dtype = dt;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++)
        t->shape[d] = shape[d];
    t->layout = layout;
    t->stride0 = s0;
    t->source = ACASE_SRC_INLINE;
    if (acase_tensor_alloc(t, err, errlen) != 0)
        return -1;
    for (int64_t e = 0; e < t->numel; e++) {
        if (dt == ATTNREF_BOOL) /* the byte as drawn: 2 and 255 are true too */
            ((uint8_t *)t->data)[e] = (uint8_t)vals[e];
        else
            attnref_store(t->data, dt, e, vals[e]);
    }
    return 0;
}

static int64_t *dup_arr(const int64_t *a, int64_t n)
{
    int64_t *d = malloc((size_t)(n > 0 ? n : 1) * sizeof *d);
    if (d && n > 0)
        memcpy(d, a, (size_t)n * sizeof *d);
    return d;
}

acase *hf_build(const hf_call *c, const char *id, char *err, size_t errlen)
{
    acase *a = acase_new();
    char text[512];
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(a->id, sizeof a->id, "%s", id);
    hf_call_text(c, text, sizeof text);
    char desc[700];
    snprintf(desc, sizeof desc,
             "attnconf fuzz: a random call (%s) checked against the reference "
             "within the clause 13 bound.",
             text);
    a->description = strdup(desc);
    a->rules[0] = strdup("clause13.fuzz");
    a->nrules = 1;
    a->op = ACASE_OP_SDPA;
    a->has_scale = c->has_scale;
    a->scale = c->scale;
    a->causal = c->causal;
    a->has_causal_offset = c->has_offset;
    a->causal_offset = c->offset;
    a->window = c->window;
    if (c->lengths || c->left_padding || c->segment_ids || c->block_ids) {
        a->batch = c->B;
        if (c->lengths && !(a->lengths = dup_arr(c->lengths, c->B)))
            goto oom;
        if (c->left_padding && !(a->left_padding = dup_arr(c->left_padding, c->B)))
            goto oom;
    }
    a->softcap = c->softcap;
    a->alibi_max_bias = c->alibi_max_bias;
    a->chunk = c->chunk;
    if (c->sinks) {
        if (!(a->sinks = malloc((size_t)c->Hq * sizeof *a->sinks)))
            goto oom;
        memcpy(a->sinks, c->sinks, (size_t)c->Hq * sizeof *a->sinks);
        a->nsinks = c->Hq;
    }
    if (c->segment_ids || c->block_ids) {
        a->ids_len = c->Lk;
        if (c->segment_ids && !(a->segment_ids = dup_arr(c->segment_ids, c->B * c->Lk)))
            goto oom;
        if (c->block_ids && !(a->block_ids = dup_arr(c->block_ids, c->B * c->Lk)))
            goto oom;
    }
    if (!a->description || !a->rules[0])
        goto oom;
    const int64_t qs[4] = {c->B, c->Hq, c->Lq, c->D}, ks[4] = {c->B, c->Hkv, c->Lk, c->D},
                  vs[4] = {c->B, c->Hkv, c->Lk, c->Dv};
    if (fill_tensor(&a->q, c->dt, 4, qs, c->q, c->layout[0], c->stride0[0], err, errlen) ||
        fill_tensor(&a->k, c->dt, 4, ks, c->k, c->layout[1], c->stride0[1], err, errlen) ||
        fill_tensor(&a->v, c->dt, 4, vs, c->v, c->layout[2], c->stride0[2], err, errlen) ||
        (c->mask_kind &&
         fill_tensor(&a->mask, c->mask_dt, c->mask_ndim, c->mshape + (4 - c->mask_ndim), c->mask,
                     ACASE_LAYOUT_BHLD, 0, err, errlen)))
        goto fail;

    /* Expected: the reference in binary64, unrounded (what casegen stores). */
    acase_expected *e = &a->expected;
    e->dtype = c->dt;
    e->ndim = 4;
    e->shape[0] = c->B;
    e->shape[1] = c->Hq;
    e->shape[2] = c->Lq;
    e->shape[3] = c->Dv;
    if (acase_expected_alloc(e, err, errlen) != 0)
        goto fail;
    attnref_tensor tq, tk, tv, tm;
    attnref_diag diag;
    if (attnref_tensor_init(&tq, a->q.data, c->dt, 4, qs, &diag) ||
        attnref_tensor_init(&tk, a->k.data, c->dt, 4, ks, &diag) ||
        attnref_tensor_init(&tv, a->v.data, c->dt, 4, vs, &diag) ||
        (c->mask_kind &&
         attnref_tensor_init(&tm, a->mask.data, c->mask_dt, a->mask.ndim, a->mask.shape, &diag))) {
        snprintf(err, errlen, "%s: %s", id, diag.msg);
        goto fail;
    }
    /* The case's own parameters (acase_sdpa_params), which the bound and row checks read too. */
    const attnref_sdpa_params p = acase_sdpa_params(a);
    int rc = attnref_sdpa_f64(&tq, &tk, &tv, c->mask_kind ? &tm : NULL, &p, e->values, &diag);
    if (rc != ATTNREF_OK) {
        snprintf(err, errlen, "%s: the reference rejected the call: %s", id, diag.msg);
        goto fail;
    }
    if (acase_sdpa_set_row_checks(a, err, errlen) != 0 ||
        (c->exact && acase_sdpa_rows_rounded(a, err, errlen) != 0) || hf_bound(a, err, errlen) != 0)
        goto fail;
    a->requires = acase_derive_requires(a);
    return a;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    acase_free(a);
    return NULL;
}

/* ---- the bound ------------------------------------------------------------------------- */

/* The clause 13 bound, as casegen writes it into every golden case. */
int hf_bound(acase *c, char *err, size_t errlen)
{
    if (acase_row_atol_alloc(c, err, errlen) != 0)
        return -1;
    return acase_sdpa_bound(c, &c->ulps, c->row_atol, err, errlen);
}

/* ---- passing a call to the worker -------------------------------------------------------- */

/* The wire form: a header (HF_WIRE_VERSION, the hf_call struct with pointers cleared, a bit
 * per present array, the id), then the present arrays in order: q, k, v, mask (doubles), sinks
 * [Hq] (doubles), lengths, left_padding [B], segment_ids, block_ids [B * Lk] (int64). */
typedef struct hf_wire {
    uint32_t version;
    uint32_t present; /* bit a: array a of wire_arrays */
    hf_call call;
    char id[ACASE_ID_MAX];
} hf_wire;

/* The arrays of a call in wire order: pointers, element counts, element sizes (the pointer
 * slots of *c, so unpack can fill them). */
enum { HF_WIRE_ARRAYS = 9 };
static void wire_arrays(hf_call *c, void **slot[HF_WIRE_ARRAYS], int64_t n[HF_WIRE_ARRAYS])
{
    void **s[HF_WIRE_ARRAYS] = {(void **)&c->q,
                                (void **)&c->k,
                                (void **)&c->v,
                                (void **)&c->mask,
                                (void **)&c->sinks,
                                (void **)&c->lengths,
                                (void **)&c->left_padding,
                                (void **)&c->segment_ids,
                                (void **)&c->block_ids};
    const int64_t m[HF_WIRE_ARRAYS] = {q_numel(c), k_numel(c), v_numel(c),   m_numel(c),  c->Hq,
                                       c->B,       c->B,       c->B * c->Lk, c->B * c->Lk};
    for (int a = 0; a < HF_WIRE_ARRAYS; a++) {
        slot[a] = s[a];
        n[a] = m[a];
    }
}

/* Every array element is 8 bytes (double or int64_t). */
_Static_assert(sizeof(double) == 8 && sizeof(int64_t) == 8, "wire elements are 8 bytes");

size_t hf_call_pack(const hf_call *c, const char *id, void *buf, size_t cap)
{
    hf_call tmp = *c;
    void **slot[HF_WIRE_ARRAYS];
    int64_t n[HF_WIRE_ARRAYS];
    wire_arrays(&tmp, slot, n);
    size_t need = sizeof(hf_wire);
    for (int a = 0; a < HF_WIRE_ARRAYS; a++)
        if (*slot[a] && n[a] > 0)
            need += (size_t)n[a] * 8;
    if (need > cap)
        return 0;
    hf_wire w;
    memset(&w, 0, sizeof w);
    w.version = HF_WIRE_VERSION;
    w.call = *c;
    void **ws[HF_WIRE_ARRAYS];
    int64_t wn[HF_WIRE_ARRAYS];
    wire_arrays(&w.call, ws, wn);
    for (int a = 0; a < HF_WIRE_ARRAYS; a++) {
        w.present |= *slot[a] ? 1u << a : 0u;
        *ws[a] = NULL;
    }
    snprintf(w.id, sizeof w.id, "%s", id);
    unsigned char *p = buf;
    memcpy(p, &w, sizeof w);
    p += sizeof w;
    for (int a = 0; a < HF_WIRE_ARRAYS; a++)
        if (*slot[a] && n[a] > 0) {
            memcpy(p, *slot[a], (size_t)n[a] * 8);
            p += (size_t)n[a] * 8;
        }
    return need;
}

int hf_call_unpack(const void *buf, hf_call *out, char *id, size_t idlen)
{
    hf_wire w;
    memcpy(&w, buf, sizeof w);
    if (w.version != HF_WIRE_VERSION) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    *out = w.call;
    snprintf(id, idlen, "%s", w.id);
    const unsigned char *p = (const unsigned char *)buf + sizeof w;
    void **slot[HF_WIRE_ARRAYS];
    int64_t n[HF_WIRE_ARRAYS];
    wire_arrays(out, slot, n);
    int bad = 0;
    for (int a = 0; a < HF_WIRE_ARRAYS; a++) {
        *slot[a] = NULL;
        if (!(w.present & (1u << a)))
            continue;
        *slot[a] = dup_n(p, n[a], 8, &bad);
        p += (size_t)(n[a] > 0 ? n[a] : 0) * 8;
    }
    if (bad) {
        hf_call_free(out);
        return -1;
    }
    return 0;
}
