/* fam_reports.c — cases shaped after bugs public trackers keep reporting (SPEC clauses 1-12):
 * fully masked rows, poison in excluded key slots, f16/bf16 mask overflow, batches with
 * per-sequence padding, odd sizes, large GQA ratios. */
#include <math.h>
#include <stdio.h>

#include "casegen.h"

static const attnref_dtype DTS[3] = {ATTNREF_F32, ATTNREF_F16, ATTNREF_BF16};

static const char *idf(char *buf, size_t n, const char *stem, attnref_dtype dt) {
    snprintf(buf, n, "%s.%s", stem, attnref_dtype_name(dt));
    return buf;
}

static void fully_masked(cg *g) {
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
        acase *c = cg_sdpa(idf(id, sizeof id, "sdpa.fully_masked.neg_inf_row", DTS[t]),
                           "An additive mask whose row 1 is all -inf: that row keeps no key and "
                           "is exactly 0 (exp(-inf - -inf) must not produce NaN).",
                           "clause9.fully_masked_zero", DTS[t], 1, 1, 1, 3, 4, 8, 8, 1.0);
        const double vals[12] = {0, -1, 0, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY,
                                 0, 0, -INFINITY, 0.5};
        const int64_t s[2] = {3, 4};
        cg_inline(&c->mask, DTS[t], 2, s, vals);
        cg_emit(g, c);
    }
}

static void poison(cg *g) {
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
    {
        acase *c = cg_sdpa("sdpa.poison.causal_future_1e4.bf16",
                           "Causal Lq=Lk=6 with V = 1e4 in every key slot above the diagonal of "
                           "row 2 (keys 3-5 hold 1e4 in all of V): rows 0-2 must not see them, so "
                           "their outputs stay within [-1, 1] (a leak explodes).",
                           "clause10.masked_slots", ATTNREF_BF16, 1, 2, 2, 6, 6, 8, 8, 1.0);
        cg_rule(c, "clause3.bottom_right");
        c->causal = 1;
        for (int h = 0; h < 2; h++)
            for (int j = 3; j < 6; j++)
                for (int d = 0; d < 8; d++)
                    cg_poke(&c->v, (h * 6 + j) * 8 + d, 1e4);
        cg_emit(g, c);
    }
}

static void overflow(cg *g) {
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
        cg_rule(c, "clause9.fully_masked_zero");
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
        acase *c = cg_sdpa(tp[n].id, tp[n].desc, "clause11.finite_min", tp[n].dt, 1, 1, 1, l, l,
                           8, 8, 1.0);
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

static void padding(cg *g) {
    char id[128];
    const int64_t len[3] = {7, 5, 2};
    for (int t = 0; t < 3; t++) {
        acase *c = cg_sdpa(idf(id, sizeof id, "sdpa.padding.lengths_bool", DTS[t]),
                           "B=3 right-padded sequences of different lengths [7,5,2], Lq=4 new "
                           "queries after 3 cached keys: bool mask (3,1,4,7) from the mask builder "
                           "(causal, offset 3, lengths).",
                           "clause5.right_padding", DTS[t], 3, 2, 2, 4, 7, 8, 8, 1.0);
        cg_rule(c, "clause3.bottom_right");
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

static void sizes(cg *g) {
    struct {
        attnref_dtype dt;
        int64_t lk, d, dv;
    } sz[] = {
        {ATTNREF_F32, 1, 64, 64},   {ATTNREF_F16, 7, 80, 80},    {ATTNREF_BF16, 113, 128, 128},
        {ATTNREF_F32, 1025, 256, 256}, {ATTNREF_BF16, 7, 1, 1},  {ATTNREF_F16, 1, 128, 128},
        {ATTNREF_F32, 113, 80, 64}, {ATTNREF_BF16, 1025, 64, 128}, {ATTNREF_F16, 1025, 128, 64},
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

static void stability(cg *g) {
    for (int t = 1; t < 3; t++) {
        char id[128];
        cg_emit(g, cg_sdpa(idf(id, sizeof id, "sdpa.nomask.large_logits", DTS[t]),
                           "Logits in the hundreds to ~1000 (q, k in [-30, 30), D=16) in a half "
                           "dtype: exp() overflows unless the row maximum is subtracted first.",
                           "clause12.stability", DTS[t], 1, 1, 1, 4, 9, 16, 8, 30.0));
    }
    for (int t = 0; t < 2; t++) {
        const double shift = t == 0 ? 1000.0 : -1000.0;
        acase *c = cg_sdpa(t == 0 ? "sdpa.additive.shift_plus1000.f32"
                                  : "sdpa.additive.shift_minus1000.f32",
                           "A scalar additive mask of +-1000 shifts every logit of a row by the same "
                           "amount: the result equals the unshifted problem (softmax is "
                           "shift-invariant once the row maximum is subtracted).",
                           "clause12.stability", ATTNREF_F32, 1, 2, 2, 3, 6, 8, 8, 1.0);
        cg_rule(c, "clause6.additive_adds");
        cg_inline(&c->mask, ATTNREF_F32, 0, NULL, &shift);
        cg_emit(g, c);
    }
}

void fam_reports(cg *g) {
    stability(g);
    fully_masked(g);
    poison(g);
    overflow(g);
    padding(g);
    sizes(g);
}
