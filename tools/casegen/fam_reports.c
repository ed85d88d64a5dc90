/* fam_reports.c — cases shaped after bugs public trackers keep reporting (SPEC clauses 1-12):
 * fully masked rows, poison in excluded key slots, f16/bf16 mask overflow, batches with
 * per-sequence padding, odd sizes, large GQA ratios. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "attnref/status.h"
#include "casegen.h"

static void fully_masked(cg *g)
{
    char id[128];
    {
        const int64_t len[2] = {0, 5};
        acase *c = cg_sdpa("sdpa.fully_masked.zero_length.f16",
                           "Batch of two, sequence 0 has length 0 (bool mask from lengths [0,5], "
                           "Lq=3 after 2 cached tokens): every row of sequence 0 is exactly 0 - "
                           "not NaN (f16 -inf arithmetic), not the mean of V (finite fill).",
                           "clause9.fully_masked_zero", ATTNREF_F16, 2, 2, 2, 3, 5, 8, 8, 1.0);
        cg_rule(c, "clause5.right_padding");
        cg_builder_mask(c, ATTNREF_BOOL, 3, 2, 0, 2, len, NULL);
        cg_emit(g, c);
    }
    {
        acase *c = cg_sdpa("sdpa.fully_masked.causal_lq_gt_lk.bf16",
                           "Causal with Lq=5 > Lk=2: bottom-right alignment leaves rows 0-2 "
                           "without keys; they are exactly 0.",
                           "clause9.fully_masked_zero", ATTNREF_BF16, 1, 2, 2, 5, 2, 8, 8, 1.0);
        cg_rule(c, "clause3.bottom_right");
        c->causal = 1;
        cg_emit(g, c);
    }
    for (int t = 0; t < 2; t++) {
        acase *c = cg_sdpa(cg_id_dt(id, sizeof id, "sdpa.fully_masked.neg_inf_row", CG_DTYPES[t]),
                           "An additive mask whose row 1 is all -inf: that row keeps no key and "
                           "is exactly 0 (exp(-inf - -inf) must not produce NaN).",
                           "clause9.fully_masked_zero", CG_DTYPES[t], 1, 1, 1, 3, 4, 8, 8, 1.0);
        const double vals[12] = {0,         -1,        0, -INFINITY, -INFINITY, -INFINITY,
                                 -INFINITY, -INFINITY, 0, 0,         -INFINITY, 0.5};
        const int64_t s[2] = {3, 4};
        cg_inline(&c->mask, CG_DTYPES[t], 2, s, vals);
        cg_emit(g, c);
    }
}

static void poison(cg *g)
{
    /* q = k = v = arange(8) as (1,1,2,4); the bool mask keeps key 0 only. */
    struct {
        const char *id, *desc;
        int tensor; /* 0 none, 1 k, 2 v */
        double value;
    } p[] = {
        {"sdpa.poison.arange_clean.f32",
         "q = k = v = arange(8) as (1,1,2,4), bool mask [[T,F],[T,F]]: both rows equal v[0] = "
         "[0,1,2,3]. The reference for the poisoned variants.",
         0, 0},
        {"sdpa.poison.arange_k1_1e10.f32",
         "As arange_clean with k of the masked key 1 set to 1e10: the output is unchanged.", 1,
         1e10},
        {"sdpa.poison.arange_k1_nan.f32",
         "As arange_clean with k of the masked key 1 set to NaN: the output is unchanged (a "
         "masked score must never be computed into the softmax).",
         1, NAN},
        {"sdpa.poison.arange_v1_nan.f32",
         "As arange_clean with v of the masked key 1 set to NaN: the output is unchanged (0 * NaN "
         "is NaN, so a zero weight is not enough).",
         2, NAN},
    };
    for (size_t n = 0; n < sizeof p / sizeof p[0]; n++) {
        acase *c = cg_new(ACASE_OP_SDPA, p[n].id, p[n].desc, "clause10.masked_slots");
        const int64_t s[4] = {1, 1, 2, 4};
        double a[8];
        for (int i = 0; i < 8; i++)
            a[i] = i;
        cg_inline(&c->q, ATTNREF_F32, 4, s, a);
        cg_inline(&c->k, ATTNREF_F32, 4, s, a);
        cg_inline(&c->v, ATTNREF_F32, 4, s, a);
        const double m[4] = {1, 0, 1, 0};
        const int64_t ms[2] = {2, 2};
        cg_inline(&c->mask, ATTNREF_BOOL, 2, ms, m);
        for (int d = 0; d < 4 && p[n].tensor; d++)
            cg_poke(p[n].tensor == 1 ? &c->k : &c->v, 4 + d, p[n].value);
        cg_emit(g, c);
    }
    {
        const int64_t len[2] = {3, 5};
        acase *c = cg_sdpa("sdpa.poison.padded_slots.f16",
                           "Right-padded batch (bool mask from lengths [3,5], Lq=Lk=5): the pad "
                           "slots of sequence 0 (keys 3, 4) hold NaN and inf in K and V, as an "
                           "uninitialised cache would. They must not reach the output.",
                           "clause10.masked_slots", ATTNREF_F16, 2, 1, 1, 5, 5, 8, 8, 1.0);
        cg_rule(c, "clause5.right_padding");
        cg_builder_mask(c, ATTNREF_BOOL, 5, 0, 0, 2, len, NULL);
        for (int d = 0; d < 8; d++) {
            cg_poke(&c->k, 3 * 8 + d, NAN);
            cg_poke(&c->k, 4 * 8 + d, INFINITY);
            cg_poke(&c->v, 3 * 8 + d, -INFINITY);
            cg_poke(&c->v, 4 * 8 + d, NAN);
        }
        cg_emit(g, c);
    }
    for (int t = 0; t < 2; t++) {
        /* Top-left (explicit offset 0), Lq=3, Lk=6: keys 3-5 are never kept by any row. */
        acase *c =
            cg_sdpa(t == 0 ? "sdpa.poison.causal_excluded.f32" : "sdpa.poison.causal_excluded.bf16",
                    "Causal with explicit offset 0, Lq=3, Lk=6: keys 3-5 are excluded for "
                    "every row and hold poison (K = NaN, +inf; V = NaN, -inf, 1e4). A "
                    "backend that computes a dense P.V over causal-excluded keys leaks "
                    "NaN; the output equals the clean problem.",
                    "clause10.masked_slots", CG_DTYPES[t * 2], 1, 1, 1, 3, 6, 8, 8, 1.0);
        cg_rule(c, "clause3.explicit_offset");
        c->causal = 1;
        c->has_causal_offset = 1;
        c->causal_offset = 0;
        for (int d = 0; d < 8; d++) {
            cg_poke(&c->k, 3 * 8 + d, NAN);
            cg_poke(&c->k, 4 * 8 + d, INFINITY);
            cg_poke(&c->v, 3 * 8 + d, NAN);
            cg_poke(&c->v, 4 * 8 + d, -INFINITY);
            cg_poke(&c->v, 5 * 8 + d, 1e4);
        }
        cg_emit(g, c);
    }
    {
        acase *c = cg_sdpa("sdpa.poison.causal_future_nan.f16",
                           "Bottom-right causal, Lq=Lk=6, V of key 5 is NaN: rows 0-4 exclude key "
                           "5 and must be clean; row 5 keeps it and is NaN (NaN must meet NaN).",
                           "clause10.masked_slots", ATTNREF_F16, 1, 2, 2, 6, 6, 8, 8, 1.0);
        cg_rule(c, "clause3.bottom_right");
        c->causal = 1;
        for (int h = 0; h < 2; h++)
            for (int d = 0; d < 8; d++)
                cg_poke(&c->v, (h * 6 + 5) * 8 + d, NAN);
        cg_emit(g, c);
    }
    {
        acase *c = cg_sdpa("sdpa.poison.additive_neg_inf.f32",
                           "An additive mask with -inf at keys 4 and 5 (finite biases elsewhere); "
                           "those keys hold K = NaN and V = inf. -inf excludes a key completely: "
                           "the output is finite and equals the clean problem.",
                           "clause10.masked_slots", ATTNREF_F32, 1, 1, 1, 3, 6, 4, 4, 1.0);
        cg_rule(c, "clause6.additive_adds");
        double vals[18];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 6; j++)
                vals[i * 6 + j] = j >= 4 ? -INFINITY : 0.25 * (i - j);
        const int64_t s2[2] = {3, 6};
        cg_inline(&c->mask, ATTNREF_F32, 2, s2, vals);
        for (int d = 0; d < 4; d++) {
            cg_poke(&c->k, 4 * 4 + d, NAN);
            cg_poke(&c->v, 5 * 4 + d, INFINITY);
        }
        cg_emit(g, c);
    }
}

static void overflow(cg *g)
{
    {
        /* D = 1 and scale 1 make the raw scores exact: q0 * k = -4 * [5, 7.5] = [-20, -30]. */
        acase *c = cg_new(ACASE_OP_SDPA, "sdpa.overflow.f16_pad_row.f16",
                          "L=2, token 0 is a pad, causal and padding combined into one additive "
                          "f16 mask holding the f16 minimum -65504. Row 0's raw scores are -20 and "
                          "-30, so score + mask is below -65520 and rounds to -inf in f16 "
                          "arithmetic: a backend adding in f16 gets NaN. Row 0 is masked only by "
                          "finite values (implementation-defined, must be finite); row 1 equals "
                          "v[1].",
                          "clause11.finite_min");
        const int64_t qs[4] = {1, 1, 2, 1}, vs[4] = {1, 1, 2, 2}, ms[2] = {2, 2};
        const double q[2] = {-4, 1}, k[2] = {5, 7.5}, v[4] = {1, 2, 3, 4};
        const double m = attnref_dtype_finite_min(ATTNREF_F16);
        const double mask[4] = {m, m, m, 0};
        cg_inline(&c->q, ATTNREF_F16, 4, qs, q);
        cg_inline(&c->k, ATTNREF_F16, 4, qs, k);
        cg_inline(&c->v, ATTNREF_F16, 4, vs, v);
        cg_inline(&c->mask, ATTNREF_F16, 2, ms, mask);
        c->has_scale = 1;
        c->scale = 1.0;
        cg_emit(g, c);
    }
    /* Summing a padding plane and a causal plane, each 0 / finite minimum, in the mask dtype:
     * cells masked by both overflow to -inf (f32: -FLT_MAX + -FLT_MAX). */
    struct {
        const char *id, *desc;
        attnref_dtype dt;
        int64_t l, left_pad, pad_key;
    } tp[] = {
        {"sdpa.overflow.two_planes_leftpad.f32",
         "f32, L=5, left padding 3, causal: an additive mask built as padding plane + causal plane "
         "of -FLT_MAX each holds -inf where both mask. -inf keys are excluded, -FLT_MAX keys still "
         "take part: rows 0-2 see only finite-minimum keys (finite, implementation-defined), rows "
         "3-4 are compared; no NaN anywhere.",
         ATTNREF_F32, 5, 3, -1},
        {"sdpa.overflow.two_planes_pad_key.bf16",
         "bf16, L=4, key 3 is a pad, causal: pad plane + causal plane of the bf16 minimum overflow "
         "to -inf where both mask (rows 0-2, key 3). Every row still has a visible key and is "
         "compared; no NaN anywhere.",
         ATTNREF_BF16, 4, 0, 3},
    };
    for (size_t n = 0; n < sizeof tp / sizeof tp[0]; n++) {
        const int64_t l = tp[n].l;
        acase *c = cg_sdpa(tp[n].id, tp[n].desc, "clause11.finite_min", tp[n].dt, 1, 1, 1, l, l, 8,
                           8, 1.0);
        cg_rule(c, "clause5.intersection");
        const double m = attnref_dtype_finite_min(tp[n].dt);
        double vals[25];
        for (int64_t i = 0; i < l; i++)
            for (int64_t j = 0; j < l; j++) {
                const int pad = j < tp[n].left_pad || j == tp[n].pad_key;
                const int future = j > i;
                /* the sum, rounded in the mask dtype the way the buggy combination does it */
                double sum = (pad ? m : 0.0) + (future ? m : 0.0);
                vals[i * l + j] = pad && future ? -INFINITY : sum;
            }
        const int64_t s[2] = {l, l};
        cg_inline(&c->mask, tp[n].dt, 2, s, vals);
        cg_emit(g, c);
    }
    {
        acase *c = cg_sdpa("sdpa.additive.min_matrix.f32",
                           "Additive mask [[0, min], [0, 0]] (min = -FLT_MAX) must behave as keep "
                           "[[T,F],[T,T]]: row 0 equals v[0].",
                           "clause6.additive_adds", ATTNREF_F32, 1, 1, 1, 2, 2, 8, 8, 1.0);
        cg_rule(c, "clause11.finite_min");
        const double m = attnref_dtype_finite_min(ATTNREF_F32);
        const double vals[4] = {0, m, 0, 0};
        const int64_t s[2] = {2, 2};
        cg_inline(&c->mask, ATTNREF_F32, 2, s, vals);
        cg_emit(g, c);
    }
}

static void padding(cg *g)
{
    char id[128];
    const int64_t len[3] = {7, 5, 2};
    for (int t = 0; t < 3; t++) {
        acase *c = cg_sdpa(cg_id_dt(id, sizeof id, "sdpa.padding.lengths_bool", CG_DTYPES[t]),
                           "B=3 right-padded sequences of different lengths [7,5,2], Lq=4 new "
                           "queries after 3 cached keys: bool mask (3,1,4,7) from the mask builder "
                           "(causal, offset 3, lengths).",
                           "clause5.right_padding", CG_DTYPES[t], 3, 2, 2, 4, 7, 8, 8, 1.0);
        cg_builder_mask(c, ATTNREF_BOOL, 4, 3, 0, 3, len, NULL);
        cg_emit(g, c);
    }
    {
        const int64_t lp[3] = {0, 2, 4};
        acase *c = cg_sdpa("sdpa.padding.left_padding_additive.f16",
                           "B=3 left-padded sequences [0,2,4] during decode (Lq=2 after 4 cached "
                           "keys) with an additive f16 mask (0 / -65504) from the mask builder.",
                           "clause5.left_padding", ATTNREF_F16, 3, 4, 2, 2, 6, 16, 16, 1.0);
        cg_rule(c, "clause11.finite_min");
        cg_builder_mask(c, ATTNREF_F16, 2, 4, 0, 3, NULL, lp);
        cg_emit(g, c);
    }
    {
        const int64_t len2[2] = {8, 6};
        acase *c = cg_sdpa("sdpa.padding.window_lengths.bf16",
                           "Sliding window W=4 with lengths [8,6], Lq=Lk=8 (row 7 of sequence 0 "
                           "sees keys 4..7): bool mask from the mask builder.",
                           "clause4.window_counts_self", ATTNREF_BF16, 2, 2, 1, 8, 8, 8, 8, 1.0);
        cg_rule(c, "clause5.intersection");
        cg_builder_mask(c, ATTNREF_BOOL, 8, 0, 4, 2, len2, NULL);
        cg_emit(g, c);
    }
}

static void sizes(cg *g)
{
    struct {
        attnref_dtype dt;
        int64_t lk, d, dv;
    } sz[] = {
        {ATTNREF_F32, 1, 64, 64},      {ATTNREF_F16, 7, 80, 80},      {ATTNREF_BF16, 113, 128, 128},
        {ATTNREF_F32, 1025, 256, 256}, {ATTNREF_BF16, 7, 1, 1},       {ATTNREF_F16, 1, 128, 128},
        {ATTNREF_F32, 113, 80, 64},    {ATTNREF_BF16, 1025, 64, 128}, {ATTNREF_F16, 1025, 128, 64},
    };
    for (size_t n = 0; n < sizeof sz / sizeof sz[0]; n++) {
        char id[128], desc[256];
        snprintf(id, sizeof id, "sdpa.sizes.lk%lld_d%lld_dv%lld.%s", (long long)sz[n].lk,
                 (long long)sz[n].d, (long long)sz[n].dv, attnref_dtype_name(sz[n].dt));
        snprintf(desc, sizeof desc,
                 "Odd, non-tile-aligned size: Lk=%lld, D=%lld, Dv=%lld, %s, Lq=2, Hq=2.",
                 (long long)sz[n].lk, (long long)sz[n].d, (long long)sz[n].dv,
                 attnref_dtype_name(sz[n].dt));
        acase *c = cg_sdpa(id, desc, "clause1.layout", sz[n].dt, 1, 2, 2, 2, sz[n].lk, sz[n].d,
                           sz[n].dv, 1.0);
        cg_rule(c, "clause13.tolerance");
        cg_emit(g, c);
    }
    cg_emit(g, cg_sdpa("sdpa.gqa.hq16_hkv2.f32",
                       "GQA ratio 8: Hq=16 query heads share Hkv=2 kv heads (heads 0-7 use kv 0).",
                       "clause1.gqa_repeat_interleave", ATTNREF_F32, 1, 16, 2, 2, 5, 8, 8, 1.0));
}

static void stability(cg *g)
{
    /* q[..., 0] = +-100 and k[..., 0] = 40 add a common +-1000 to every logit (scale 1/4, D=16);
     * the other 15 dims, in [-3, 3), give O(1) differences that decide the answer. */
    for (int t = 0; t < 2; t++) {
        acase *c = cg_sdpa(
            t == 0 ? "sdpa.nomask.large_logits_pos.f32" : "sdpa.nomask.large_logits_neg.f32",
            t == 0 ? "Logits around +1000 with O(1) differences (q[...,0] = 100, "
                     "k[...,0] = 40, D=16): exp() overflows unless the row maximum "
                     "is subtracted first; the answer is that of the shifted problem."
                   : "Logits around -1000 with O(1) differences (q[...,0] = -100, "
                     "k[...,0] = 40, D=16): exp() underflows to 0/0 unless the row "
                     "maximum is subtracted first.",
            "clause12.stability", ATTNREF_F32, 1, 2, 2, 4, 9, 16, 8, 3.0);
        for (int64_t r = 0; r < 2 * 4; r++)
            cg_poke(&c->q, r * 16, t == 0 ? 100.0 : -100.0);
        for (int64_t r = 0; r < 2 * 9; r++)
            cg_poke(&c->k, r * 16, 40.0);
        cg_emit(g, c);
    }
    for (int t = 0; t < 2; t++) {
        const double shift = t == 0 ? 1000.0 : -1000.0;
        acase *c = cg_sdpa(
            t == 0 ? "sdpa.additive.shift_plus1000.f32" : "sdpa.additive.shift_minus1000.f32",
            "A scalar additive mask of +-1000 shifts every logit of a row by the same "
            "amount: the result equals the unshifted problem (softmax is "
            "shift-invariant once the row maximum is subtracted).",
            "clause12.stability", ATTNREF_F32, 1, 2, 2, 3, 6, 8, 8, 1.0);
        cg_rule(c, "clause6.additive_adds");
        cg_inline(&c->mask, ATTNREF_F32, 0, NULL, &shift);
        cg_emit(g, c);
    }
}

/* Inputs every clause says must be rejected (EINVAL for shapes and arguments, EDTYPE for
 * dtypes): a backend that computes something instead fails. */
static void invalid(cg *g)
{
    {
        acase *c = cg_sdpa("sdpa.invalid.mask_kv_heads.f32",
                           "A per-head mask with Hkv=2 heads for Hq=4 query heads: mask heads "
                           "index query heads, so (1,2,Lq,Lk) does not broadcast and is rejected "
                           "(broadcasting it over kv heads is the bug).",
                           "clause7.broadcast", ATTNREF_F32, 1, 4, 2, 3, 5, 8, 8, 1.0);
        const int64_t len[2] = {5, 4};
        cg_builder_mask(c, ATTNREF_BOOL, 3, 2, 0, 2, len, NULL);
        c->mask.shape[0] = 1; /* (2,1,3,5) -> (1,2,3,5): same data, kv-head extent */
        c->mask.shape[1] = 2;
        cg_expect_error(c, ATTNREF_EINVAL);
        cg_emit(g, c);
    }
    {
        acase *c = cg_sdpa("sdpa.invalid.mask_key_extent.f32",
                           "A mask of shape (Lq, 3) for Lk=6: its key extent is neither 1 nor Lk, "
                           "so it does not broadcast and is rejected.",
                           "clause7.broadcast", ATTNREF_F32, 1, 2, 2, 4, 6, 8, 8, 1.0);
        const double ones[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
        const int64_t s[2] = {4, 3};
        cg_inline(&c->mask, ATTNREF_BOOL, 2, s, ones);
        cg_expect_error(c, ATTNREF_EINVAL);
        cg_emit(g, c);
    }
    {
        acase *c = cg_sdpa("sdpa.invalid.causal_and_mask.f32",
                           "The causal flag together with a mask tensor is rejected: the two "
                           "ways of masking are exclusive in the SDPA interface.",
                           "clause3.bottom_right", ATTNREF_F32, 1, 2, 2, 4, 4, 8, 8, 1.0);
        const double ones[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
        const int64_t s[2] = {4, 4};
        cg_inline(&c->mask, ATTNREF_BOOL, 2, s, ones);
        c->causal = 1;
        cg_expect_error(c, ATTNREF_EINVAL);
        cg_emit(g, c);
    }
    {
        acase *c = cg_sdpa("sdpa.invalid.gqa_not_multiple.f32",
                           "Hq=3 query heads over Hkv=2 kv heads: Hq is not a multiple of Hkv, "
                           "rejected (no head mapping exists).",
                           "clause1.gqa_repeat_interleave", ATTNREF_F32, 1, 3, 2, 2, 4, 8, 8, 1.0);
        cg_expect_error(c, ATTNREF_EINVAL);
        cg_emit(g, c);
    }
    {
        acase *c =
            cg_sdpa("sdpa.invalid.head_dim_mismatch.f32", "q has D=8 but k has D=6: rejected.",
                    "clause1.shapes", ATTNREF_F32, 1, 2, 2, 2, 4, 8, 8, 1.0);
        cg_gen4(c, &c->k, "k", ATTNREF_F32, 1, 2, 4, 6, -1.0, 1.0);
        cg_expect_error(c, ATTNREF_EINVAL);
        cg_emit(g, c);
    }
    {
        acase *c = cg_sdpa("sdpa.invalid.qkv_dtype_mismatch.f16",
                           "q in f16 with k and v in f32: q, k and v must share one dtype; "
                           "rejected as a dtype error, not computed in f32.",
                           "clause8.no_upcast", ATTNREF_F16, 1, 2, 2, 3, 4, 8, 8, 1.0);
        cg_gen4(c, &c->k, "k", ATTNREF_F32, 1, 2, 4, 8, -1.0, 1.0);
        cg_gen4(c, &c->v, "v", ATTNREF_F32, 1, 2, 4, 8, -1.0, 1.0);
        cg_expect_error(c, ATTNREF_EDTYPE);
        cg_emit(g, c);
    }
    struct {
        const char *id, *desc, *rule;
        int64_t lq, offset, window, batch;
        int64_t len; /* lengths[0], or -1: none */
        int64_t lp;  /* left_padding[0], or 0: none */
    } mk[] = {
        {"mask.invalid.window_negative", "A negative window W=-1 is rejected.",
         "clause4.window_counts_self", 3, 0, -1, 1, -1, 0},
        {"mask.invalid.lengths_over_lk",
         "lengths[0]=6 with offset 1 and Lq=4 (Lk=5): more valid keys than key slots, rejected.",
         "clause5.right_padding", 4, 1, 0, 1, 6, 0},
        {"mask.invalid.left_padding_negative", "left_padding[0]=-1 is rejected.",
         "clause5.left_padding", 3, 2, 0, 1, -1, -1},
    };
    for (size_t n = 0; n < sizeof mk / sizeof mk[0]; n++) {
        acase *c = cg_new(ACASE_OP_MASK, mk[n].id, mk[n].desc, mk[n].rule);
        c->lq = mk[n].lq;
        c->offset = mk[n].offset;
        c->window = mk[n].window;
        if (mk[n].len != -1 || mk[n].lp != 0) {
            c->batch = mk[n].batch;
            int64_t *a = malloc(sizeof *a);
            if (!a)
                abort();
            *a = mk[n].len != -1 ? mk[n].len : mk[n].lp;
            if (mk[n].len != -1)
                c->lengths = a;
            else
                c->left_padding = a;
        }
        cg_expect_error(c, ATTNREF_EINVAL);
        cg_emit(g, c);
    }
}

/* Clause 2 and 3 edges: negative scale, explicit offsets outside 0..Lk-Lq, empty Lk and Lq. */
static void edges(cg *g)
{
    {
        acase *c = cg_sdpa("sdpa.scale.negative.f32",
                           "Explicit scale -0.5 is used as given (it inverts the preference), not "
                           "taken as |scale| and not rejected.",
                           "clause2.explicit_scale", ATTNREF_F32, 1, 2, 2, 3, 6, 8, 8, 1.0);
        c->has_scale = 1;
        c->scale = -0.5;
        cg_emit(g, c);
    }
    struct {
        const char *id, *desc;
        int64_t off;
    } off[] = {
        {"sdpa.causal.offset_neg1.f32",
         "Explicit causal offset -1 (Lq=3, Lk=5): query i keeps keys 0..i-1, so row 0 keeps "
         "nothing and is exactly 0. A backend that clamps the offset to 0 fails.",
         -1},
        {"sdpa.causal.offset_lk.f32",
         "Explicit causal offset Lk=5 (Lq=3): every query keeps every key, as without a mask. A "
         "backend that clamps the offset to Lk-Lq fails.",
         5},
    };
    for (size_t n = 0; n < sizeof off / sizeof off[0]; n++) {
        acase *c = cg_sdpa(off[n].id, off[n].desc, "clause3.explicit_offset", ATTNREF_F32, 1, 2, 2,
                           3, 5, 8, 8, 1.0);
        c->causal = 1;
        c->has_causal_offset = 1;
        c->causal_offset = off[n].off;
        cg_emit(g, c);
    }
    {
        acase *c = cg_sdpa("sdpa.bool.nonzero_bytes.f32",
                           "A boolean mask is one byte per element and every nonzero byte means "
                           "attend: this mask holds 0, 1, 2 and 255. A backend testing == 1 or "
                           "& 1 drops the keys marked 2.",
                           "clause6.bool_selects", ATTNREF_F32, 1, 2, 2, 3, 5, 8, 8, 1.0);
        const int64_t s[2] = {3, 5};
        const double keep[15] = {1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 0};
        cg_inline(&c->mask, ATTNREF_BOOL, 2, s, keep);
        uint8_t *m = c->mask.data;
        m[2] = 2;   /* row 0 key 2 */
        m[3] = 255; /* row 0 key 3 */
        m[8] = 2;   /* row 1 key 3 */
        m[13] = 2;  /* row 2 key 3 */
        cg_emit(g, c);
    }
    cg_emit(g, cg_sdpa("sdpa.fully_masked.lk0.f32",
                       "Lk=0 (an empty KV cache and no new keys): every row keeps no key and is "
                       "exactly 0, not 0/0 = NaN.",
                       "clause9.fully_masked_zero", ATTNREF_F32, 1, 2, 2, 3, 0, 8, 8, 1.0));
}

void fam_reports(cg *g)
{
    invalid(g);
    edges(g);
    stability(g);
    fully_masked(g);
    poison(g);
    overflow(g);
    padding(g);
    sizes(g);
}
