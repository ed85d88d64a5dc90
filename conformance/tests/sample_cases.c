/* sample_cases.c — see sample_cases.h.  The expected values are arbitrary (these cases test the
 * file format, not attention): they are chosen to exercise every number form. */
#define _POSIX_C_SOURCE 200809L

#include "sample_cases.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attnref/status.h"

static int shape_tensor(acase_tensor *t, attnref_dtype dt, int32_t ndim, const int64_t *shape,
                        acase_layout layout)
{
    t->present = 1;
    t->dtype = dt;
    t->ndim = ndim;
    for (int32_t i = 0; i < 4; i++)
        t->shape[i] = i < ndim ? shape[i] : 0;
    t->layout = layout;
    return acase_tensor_alloc(t, NULL, 0);
}

static int gen_tensor(acase_tensor *t, attnref_dtype dt, int32_t ndim, const int64_t *shape,
                      acase_layout layout, uint64_t seed, double lo, double hi)
{
    if (shape_tensor(t, dt, ndim, shape, layout))
        return -1;
    t->source = ACASE_SRC_UNIFORM;
    t->seed = seed;
    t->lo = lo;
    t->hi = hi;
    return acase_tensor_generate(t, NULL, 0);
}

static int set_expected(acase_expected *e, attnref_dtype dt, const int64_t shape[4])
{
    e->dtype = dt;
    e->ndim = 4;
    memcpy(e->shape, shape, 4 * sizeof shape[0]);
    return acase_expected_alloc(e, NULL, 0);
}

static int set_text(acase *c, const char *id, const char *desc, const char *r1, const char *r2)
{
    snprintf(c->id, sizeof c->id, "%s", id);
    c->description = strdup(desc);
    c->rules[0] = strdup(r1);
    c->nrules = 1;
    if (r2) {
        c->rules[1] = strdup(r2);
        c->nrules = 2;
    }
    return c->description && c->rules[0] && (!r2 || c->rules[1]) ? 0 : -1;
}

/* The v2 tolerance: ulps, and row_atol filled cyclically from a list (one value per row). */
static int set_tolerance(acase *c, double ulps, const double *row_atol, int n)
{
    if (acase_row_atol_alloc(c, NULL, 0))
        return -1;
    c->ulps = ulps;
    int64_t rows = acase_expected_rows(&c->expected);
    for (int64_t r = 0; r < rows; r++)
        c->row_atol[r] = row_atol[r % n];
    return 0;
}

/* Give t (holding its stored slice) the logical shape: what the reader does with stride0. */
static int broadcast(acase_tensor *t, uint8_t stride0, int64_t b, int64_t h, int64_t l, int64_t d)
{
    const int64_t shape[4] = {b, h, l, d};
    return acase_tensor_broadcast(t, stride0, shape, NULL, 0);
}

/* Fill expected values cyclically from a list of f64 values (rounded to dt's precision). */
static void fill_expected(acase_expected *e, const double *vals, int n)
{
    for (int64_t i = 0; i < e->numel; i++)
        e->values[i] = vals[i % n];
}

static int build(acase *c, int which)
{
    switch (which) {
    case 0: {
        /* f32: inline q with every special value, generated blhd k, generated v (Dv != D),
         * GQA, an explicit scale, a broadcast bool mask and per-row checks. */
        if (set_text(c, "sdpa.sample.f32_every_feature",
                     "Every feature: colons: and # hashes, \"quotes\", 'apostrophes', "
                     "back\\slash, ünïcödé, a tab\there, [brackets] {braces}, yes, null, ~, -1.",
                     "sdpa.gqa.repeat_interleave", "sdpa.mask.bool_broadcast"))
            return -1;
        c->op = ACASE_OP_SDPA;
        int64_t qs[4] = {1, 2, 3, 4}, ks[4] = {1, 1, 5, 4}, vs[4] = {1, 1, 5, 3}, ms[2] = {3, 5};
        if (shape_tensor(&c->q, ATTNREF_F32, 4, qs, ACASE_LAYOUT_BHLD))
            return -1;
        const float qv[] = {NAN,        INFINITY, -INFINITY, -0.0f,    0.0f,    0x1p-149f,
                            -0x1p-149f, FLT_MIN,  FLT_MAX,   -FLT_MAX, 0.1f,    -1.5f,
                            1.0f / 3,   1e-30f,   3.0e30f,   2.5f,     -7.0f,   16777216.0f,
                            0.5f,       -0.25f,   1e-5f,     65504.f,  65520.f, -3.3895314e38f};
        for (int i = 0; i < 24; i++)
            ((float *)c->q.data)[i] = qv[i];
        if (gen_tensor(&c->k, ATTNREF_F32, 4, ks, ACASE_LAYOUT_BLHD, 17, -1.0, 1.0) ||
            gen_tensor(&c->v, ATTNREF_F32, 4, vs, ACASE_LAYOUT_BHLD, 18, -2.5, 0.5) ||
            shape_tensor(&c->mask, ATTNREF_BOOL, 2, ms, ACASE_LAYOUT_BHLD))
            return -1;
        for (int i = 0; i < 15; i++)
            ((uint8_t *)c->mask.data)[i] = (uint8_t)((i * 7 + 3) % 3 != 0);
        c->has_scale = 1;
        c->scale = 0.125;
        int64_t os[4] = {1, 2, 3, 3};
        if (set_expected(&c->expected, ATTNREF_F32, os))
            return -1;
        const double ev[] = {NAN,
                             INFINITY,
                             -INFINITY,
                             -0.0,
                             0.0,
                             0x1p-1074,
                             0.1,
                             1.0 / 3,
                             DBL_MAX,
                             -DBL_MIN,
                             1e300,
                             -2.5,
                             1e-5,
                             12345.678901234567,
                             -0x1.fffffffffffffp-1,
                             0x1p-149};
        fill_expected(&c->expected, ev, (int)(sizeof ev / sizeof ev[0]));
        /* Per-row checks of the 6 rows (b, h, i): rows 1 and 4 exact, row 5 finite, the rest
         * close (written `row_checks: {exact: [1, 4], finite: [5]}`). */
        if (acase_expected_alloc_rows(&c->expected, NULL, 0))
            return -1;
        c->expected.row_check[1] = ACASE_CHECK_EXACT;
        c->expected.row_check[4] = ACASE_CHECK_EXACT;
        c->expected.row_check[5] = ACASE_CHECK_FINITE;
        /* row_atol in every number form: 0, a subnormal, the largest double, 1/3. */
        const double ra[] = {1e-6, 0.0, 0x1p-1074, DBL_MAX, 1.0 / 3, 0.1};
        if (set_tolerance(c, 2.5, ra, 6))
            return -1;
        break;
    }
    case 1: {
        /* f16: inline bit patterns (NaN payloads, -0, subnormal, inf), generated blhd v with the
         * largest seed, causal with an explicit (negative) offset. */
        if (set_text(c, "sdpa.sample.f16_causal_offset",
                     "f16 bit patterns and a causal mask with an explicit offset.",
                     "sdpa.causal.offset", NULL))
            return -1;
        c->op = ACASE_OP_SDPA;
        int64_t qs[4] = {1, 1, 2, 4}, ks[4] = {1, 1, 3, 4};
        if (shape_tensor(&c->q, ATTNREF_F16, 4, qs, ACASE_LAYOUT_BHLD) ||
            shape_tensor(&c->k, ATTNREF_F16, 4, ks, ACASE_LAYOUT_BHLD))
            return -1;
        const uint16_t qb[] = {0x3c00, 0xbc00, 0x7e01, 0xfe00, 0x8000, 0x0001, 0x7bff, 0xfc00};
        memcpy(c->q.data, qb, sizeof qb);
        for (int i = 0; i < 12; i++)
            ((uint16_t *)c->k.data)[i] = (uint16_t)(0x3000 + 0x111 * i);
        ((uint16_t *)c->k.data)[11] = 0x7d00; /* signalling NaN with a payload */
        if (gen_tensor(&c->v, ATTNREF_F16, 4, ks, ACASE_LAYOUT_BLHD, UINT64_MAX, -1e-3, 1e-3))
            return -1;
        c->causal = 1;
        c->has_causal_offset = 1;
        c->causal_offset = -1;
        int64_t os[4] = {1, 1, 2, 4};
        if (set_expected(&c->expected, ATTNREF_F16, os))
            return -1;
        const double ev[] = {
            1.0, -0.0, 0.0009765625, 65504.0, -6.103515625e-05, 5.9604644775390625e-08};
        fill_expected(&c->expected, ev, 6);
        const double ra[] = {0.0, 9.765625e-4};
        if (set_tolerance(c, 0.0, ra, 2))
            return -1;
        break;
    }
    case 2: {
        /* bf16: generated q and k, inline v, a broadcast additive bf16 mask with -inf and the
         * finite minimum, Dv != D. */
        if (set_text(c, "sdpa.sample.bf16_additive", "bf16 with an additive mask.",
                     "sdpa.mask.additive", NULL))
            return -1;
        c->op = ACASE_OP_SDPA;
        int64_t qs[4] = {2, 2, 2, 8}, ks[4] = {2, 2, 3, 8}, vs[4] = {2, 2, 3, 2},
                ms[4] = {2, 1, 2, 3};
        if (gen_tensor(&c->q, ATTNREF_BF16, 4, qs, ACASE_LAYOUT_BHLD, 5, -4.0, 4.0) ||
            gen_tensor(&c->k, ATTNREF_BF16, 4, ks, ACASE_LAYOUT_BHLD, 0, 0.0, 0.0) ||
            shape_tensor(&c->v, ATTNREF_BF16, 4, vs, ACASE_LAYOUT_BHLD) ||
            shape_tensor(&c->mask, ATTNREF_BF16, 4, ms, ACASE_LAYOUT_BHLD))
            return -1;
        for (int i = 0; i < 24; i++)
            ((uint16_t *)c->v.data)[i] = (uint16_t)(0x3f80 ^ (i * 0x1234));
        const uint16_t mb[] = {0x0000, 0xff7f, 0xff80, 0x8000, 0xc2c8, 0x7f80,
                               0x0001, 0x3f80, 0xff80, 0x7fc0, 0x0000, 0x0000};
        memcpy(c->mask.data, mb, sizeof mb);
        int64_t os[4] = {2, 2, 2, 2};
        if (set_expected(&c->expected, ATTNREF_BF16, os))
            return -1;
        const double ev[] = {0.5, -3.3895313892515355e38, 0.0078125, -2.0};
        fill_expected(&c->expected, ev, 4);
        const double ra[] = {1e-2, 2.5e-1, 0.0};
        if (set_tolerance(c, 1e3, ra, 3))
            return -1;
        break;
    }
    case 3: {
        /* A rejection: q bf16 with k/v f32 (needs both dtypes), rank-3 mask, blhd q. */
        if (set_text(c, "sdpa.sample.mixed_dtype_error",
                     "q bf16 with k and v f32 must be rejected with edtype.", "sdpa.dtype.same",
                     NULL))
            return -1;
        c->op = ACASE_OP_SDPA;
        int64_t s4[4] = {1, 1, 1, 2}, ms[3] = {1, 1, 1};
        if (shape_tensor(&c->q, ATTNREF_BF16, 4, s4, ACASE_LAYOUT_BLHD) ||
            shape_tensor(&c->k, ATTNREF_F32, 4, s4, ACASE_LAYOUT_BHLD) ||
            shape_tensor(&c->v, ATTNREF_F32, 4, s4, ACASE_LAYOUT_BHLD) ||
            shape_tensor(&c->mask, ATTNREF_BOOL, 3, ms, ACASE_LAYOUT_BHLD))
            return -1;
        ((uint16_t *)c->q.data)[0] = 0x3f80;
        ((uint16_t *)c->q.data)[1] = 0xbf80;
        ((float *)c->k.data)[0] = 1.0f;
        ((float *)c->v.data)[1] = -2.0f;
        ((uint8_t *)c->mask.data)[0] = 1;
        c->expected.error = ATTNREF_EDTYPE;
        break;
    }
    case 4: {
        /* The mask builder with window, lengths and left padding; keep computed by the rule. */
        if (set_text(c, "mask.sample.lengths_left_padding",
                     "Batched mask with a window, per-sequence lengths and left padding.",
                     "mask.lengths", "mask.left_padding"))
            return -1;
        c->op = ACASE_OP_MASK;
        c->lq = 3;
        c->offset = 1;
        c->window = 2;
        c->batch = 2;
        c->lengths = malloc(2 * sizeof(int64_t));
        c->left_padding = malloc(2 * sizeof(int64_t));
        if (!c->lengths || !c->left_padding)
            return -1;
        c->lengths[0] = 4;
        c->lengths[1] = 3;
        c->left_padding[0] = 0;
        c->left_padding[1] = 1;
        int64_t ks[4] = {2, 1, 3, 4};
        if (set_expected(&c->expected, ATTNREF_BOOL, ks))
            return -1;
        for (int64_t b = 0; b < 2; b++)
            for (int64_t i = 0; i < 3; i++)
                for (int64_t j = 0; j < 4; j++) {
                    int64_t p = c->offset + i;
                    int keep =
                        j <= p && j > p - c->window && j < c->lengths[b] && j >= c->left_padding[b];
                    c->expected.values[(b * 3 + i) * 4 + j] = keep ? 1.0 : 0.0;
                }
        break;
    }
    case 5: {
        /* A mask-builder rejection. */
        if (set_text(c, "mask.sample.negative_lq_error", "lq = -1 must be rejected with einval.",
                     "mask.args", NULL))
            return -1;
        c->op = ACASE_OP_MASK;
        c->lq = -1;
        c->offset = 0;
        c->expected.error = ATTNREF_EINVAL;
        break;
    }
    case 6: {
        /* v2 sdpa: causal with a sliding window, per-sequence lengths and left padding; k
         * broadcast over the batch (inline slice) and v over batch and heads (generated
         * slice), both handed to the backend with stride 0. */
        if (set_text(c, "sdpa.sample.window_lengths_stride0",
                     "Sliding window, lengths and left padding with stride-0 k and v.",
                     "sdpa.window", "sdpa.stride0"))
            return -1;
        c->op = ACASE_OP_SDPA;
        int64_t qs[4] = {2, 2, 3, 4}, ks[4] = {1, 2, 5, 4}, vs[4] = {1, 1, 5, 3};
        if (gen_tensor(&c->q, ATTNREF_F32, 4, qs, ACASE_LAYOUT_BHLD, 61, -1.0, 1.0) ||
            shape_tensor(&c->k, ATTNREF_F32, 4, ks, ACASE_LAYOUT_BHLD) ||
            gen_tensor(&c->v, ATTNREF_F32, 4, vs, ACASE_LAYOUT_BHLD, 62, -2.0, 2.0))
            return -1;
        for (int i = 0; i < 40; i++)
            ((float *)c->k.data)[i] = (float)(i - 20) * 0.125f;
        if (broadcast(&c->k, 1u, 2, 2, 5, 4) || broadcast(&c->v, 3u, 2, 2, 5, 3))
            return -1;
        c->causal = 1;
        c->window = 2;
        c->batch = 2;
        c->lengths = malloc(2 * sizeof(int64_t));
        c->left_padding = malloc(2 * sizeof(int64_t));
        if (!c->lengths || !c->left_padding)
            return -1;
        c->lengths[0] = 5;
        c->lengths[1] = 4;
        c->left_padding[0] = 0;
        c->left_padding[1] = 1;
        int64_t os[4] = {2, 2, 3, 3};
        if (set_expected(&c->expected, ATTNREF_F32, os))
            return -1;
        const double ev[] = {0.25, -1.5, 0.0078125, 1.0 / 3, -0.0};
        fill_expected(&c->expected, ev, 5);
        const double ra[] = {3.0e-7, 1.5e-6, 0.0};
        if (set_tolerance(c, 2.0, ra, 3))
            return -1;
        break;
    }
    default: {
        /* v2 mask builder: a static key buffer of kv_len = 8 slots, longer than offset + lq. */
        if (set_text(c, "mask.sample.kv_len", "Decode into a static key buffer of 8 slots.",
                     "mask.kv_len", NULL))
            return -1;
        c->op = ACASE_OP_MASK;
        c->lq = 2;
        c->offset = 3;
        c->kv_len = 8;
        c->batch = 1;
        c->lengths = malloc(sizeof(int64_t));
        if (!c->lengths)
            return -1;
        c->lengths[0] = 4;
        int64_t ks[4] = {1, 1, 2, 8};
        if (set_expected(&c->expected, ATTNREF_BOOL, ks))
            return -1;
        for (int64_t i = 0; i < 2; i++)
            for (int64_t j = 0; j < 8; j++)
                c->expected.values[i * 8 + j] = j <= c->offset + i && j < c->lengths[0];
        break;
    }
    }
    if (!c->lengths && !c->left_padding)
        c->batch = 1; /* what the reader sets when neither lengths nor left_padding is given */
    c->requires = acase_derive_requires(c);
    return 0;
}

acase *sample_case(int i)
{
    acase *c = acase_new();
    if (!c)
        return NULL;
    if (build(c, i) != 0) {
        acase_free(c);
        return NULL;
    }
    return c;
}
