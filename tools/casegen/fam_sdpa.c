/* fam_sdpa.c — sdpa.* families: SDPA in f32/f16/bf16 without a mask, with boolean and
 * additive masks (broadcast shapes), causal alignment, GQA, Dv != D, scale, strided inputs,
 * and the mask dtype rule. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "attnref/status.h"
#include "casegen.h"

/* A deterministic keep pattern with no fully masked row: key 0 is always kept, others drop
 * where (3i + 5j + 7h + 11b) % 3 == 0. */
static double keep_pattern(int64_t b, int64_t h, int64_t i, int64_t j)
{
    return (j == 0 || (3 * i + 5 * j + 7 * h + 11 * b) % 3 != 0) ? 1.0 : 0.0;
}

/* Fill a mask of the given shape (right-aligned to (B,Hq,Lq,Lk)) from keep_pattern; for an
 * additive dtype, kept -> 0 and dropped -> `masked`. */
static void pattern_mask(acase_tensor *t, attnref_dtype dt, int ndim, const int64_t *shape,
                         double masked)
{
    int64_t full[4] = {1, 1, 1, 1}, n = 1;
    for (int r = 0; r < ndim; r++) {
        full[4 - ndim + r] = shape[r];
        n *= shape[r];
    }
    double *vals = malloc((size_t)(n + 1) * sizeof *vals);
    if (!vals)
        abort();
    int64_t idx = 0;
    for (int64_t b = 0; b < full[0]; b++)
        for (int64_t h = 0; h < full[1]; h++)
            for (int64_t i = 0; i < full[2]; i++)
                for (int64_t j = 0; j < full[3]; j++) {
                    double k = keep_pattern(b, h, i, j);
                    vals[idx++] = dt == ATTNREF_BOOL ? k : (k != 0.0 ? 0.0 : masked);
                }
    cg_inline(t, dt, ndim, shape, vals);
    free(vals);
}

static void nomask(cg *g)
{
    char id[128];
    for (int t = 0; t < 3; t++)
        cg_emit(g, cg_sdpa(cg_id_dt(id, sizeof id, "sdpa.nomask.basic", CG_DTYPES[t]),
                           "No mask, B=1, H=2, Lq=Lk=5, D=Dv=8, default scale 1/sqrt(8).",
                           "clause1.layout", CG_DTYPES[t], 1, 2, 2, 5, 5, 8, 8, 1.0));
    cg_emit(g, cg_sdpa("sdpa.nomask.lk113.f32", "Odd, non-tile-aligned key length Lk=113, D=16.",
                       "clause1.layout", ATTNREF_F32, 1, 2, 2, 3, 113, 16, 16, 1.0));
    cg_emit(g, cg_sdpa("sdpa.nomask.d1.f32", "Head dimension D=Dv=1, Lk=7.", "clause1.layout",
                       ATTNREF_F32, 1, 1, 1, 4, 7, 1, 1, 1.0));
    cg_emit(g,
            cg_sdpa("sdpa.nomask.lk1025.f16",
                    "Long key sequence Lk=1025 (one past a power of two), D=64, f16: the softmax "
                    "denominator sums over 1025 terms.",
                    "clause1.layout", ATTNREF_F16, 1, 1, 1, 2, 1025, 64, 64, 1.0));
}

static void boolmask(cg *g)
{
    char id[128];
    for (int t = 0; t < 3; t++) {
        acase *c =
            cg_sdpa(cg_id_dt(id, sizeof id, "sdpa.bool.full", CG_DTYPES[t]),
                    "Boolean keep mask of the full shape (B,Hq,Lq,Lk) = (2,2,4,6): false keys "
                    "are excluded (true = attend).",
                    "clause6.bool_selects", CG_DTYPES[t], 2, 2, 2, 4, 6, 8, 8, 1.0);
        const int64_t s[4] = {2, 2, 4, 6};
        pattern_mask(&c->mask, ATTNREF_BOOL, 4, s, 0);
        cg_emit(g, c);
    }
    struct {
        const char *id, *desc;
        int ndim;
        int64_t shape[4];
    } bc[] = {
        {"sdpa.bool.bcast_lq_lk.f32", "Mask (Lq,Lk) broadcast over batch and heads.", 2, {4, 6}},
        {"sdpa.bool.bcast_lk.f32",
         "Key-only mask (Lk) broadcast over batch, heads and queries.",
         1,
         {6}},
        {"sdpa.bool.bcast_scalar.f32", "Scalar true mask (rank 0): same as no mask.", 0, {0}},
        {"sdpa.bool.bcast_b1.f32",
         "Per-sequence mask (B,1,Lq,Lk) broadcast over heads.",
         4,
         {2, 1, 4, 6}},
        {"sdpa.bool.bcast_h.f32",
         "Per-head mask (1,Hq,Lq,Lk): mask heads index query heads, not kv heads (Hq=4, Hkv=2).",
         4,
         {1, 4, 4, 6}},
        {"sdpa.bool.bcast_h1lk.f32",
         "Per-head key mask (Hq,1,Lk) (rank 3), Hq=4, Hkv=2.",
         3,
         {4, 1, 6}},
    };
    for (size_t n = 0; n < sizeof bc / sizeof bc[0]; n++) {
        acase *c = cg_sdpa(bc[n].id, bc[n].desc, "clause7.broadcast", ATTNREF_F32, 2, 4, 2, 4, 6, 8,
                           8, 1.0);
        cg_rule(c, "clause6.bool_selects");
        if (bc[n].ndim == 0) {
            const double one = 1.0;
            cg_inline(&c->mask, ATTNREF_BOOL, 0, bc[n].shape, &one);
        } else {
            pattern_mask(&c->mask, ATTNREF_BOOL, bc[n].ndim, bc[n].shape, 0);
        }
        cg_emit(g, c);
    }
    /* A padding query row that keeps nothing (the shape of a real report). */
    for (int t = 0; t < 3; t++) {
        acase *c =
            cg_sdpa(cg_id_dt(id, sizeof id, "sdpa.fully_masked.padding_row", CG_DTYPES[t]),
                    "q (1,2,6,8), k/v (1,2,10,8), bool mask (1,1,6,10): row r<5 keeps keys "
                    "0..r, row 5 (a padding query) keeps nothing and must be exactly 0 - not "
                    "NaN, not the mean of V.",
                    "clause9.fully_masked_zero", CG_DTYPES[t], 1, 2, 2, 6, 10, 8, 8, 1.0);
        double vals[60];
        for (int i = 0; i < 6; i++)
            for (int j = 0; j < 10; j++)
                vals[i * 10 + j] = (i < 5 && j <= i) ? 1.0 : 0.0;
        const int64_t s[4] = {1, 1, 6, 10};
        cg_inline(&c->mask, ATTNREF_BOOL, 4, s, vals);
        cg_emit(g, c);
    }
    {
        acase *c =
            cg_sdpa("sdpa.poison.masked_kv.f32",
                    "Masked keys hold poison: K = NaN / +inf / 1e30 and V = NaN / -inf at the "
                    "masked slots. A masked key must contribute nothing, so the output is "
                    "finite and equals the clean problem (0 * NaN must not leak).",
                    "clause10.masked_slots", ATTNREF_F32, 1, 1, 1, 3, 6, 4, 4, 1.0);
        double vals[18];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 6; j++)
                vals[i * 6 + j] = j < 4 ? 1.0 : 0.0; /* keys 4 and 5 are masked */
        const int64_t s[2] = {3, 6};
        cg_inline(&c->mask, ATTNREF_BOOL, 2, s, vals);
        cg_poke(&c->k, 4 * 4 + 0, NAN);
        cg_poke(&c->k, 4 * 4 + 1, INFINITY);
        cg_poke(&c->k, 5 * 4 + 2, 1e30);
        cg_poke(&c->v, 4 * 4 + 3, NAN);
        cg_poke(&c->v, 5 * 4 + 0, -INFINITY);
        cg_emit(g, c);
    }
}

static void additive(cg *g)
{
    char id[128];
    for (int t = 0; t < 3; t++) {
        acase *c =
            cg_sdpa(cg_id_dt(id, sizeof id, "sdpa.additive.finite_min", CG_DTYPES[t]),
                    "Additive mask in the q dtype holding 0 (keep) or the dtype's finite "
                    "minimum (masked), shape (B,1,Lq,Lk); masked scores must not overflow to "
                    "-inf or NaN.",
                    "clause11.finite_min", CG_DTYPES[t], 2, 2, 2, 4, 6, 8, 8, 1.0);
        const int64_t s[4] = {2, 1, 4, 6};
        pattern_mask(&c->mask, CG_DTYPES[t], 4, s, attnref_dtype_finite_min(CG_DTYPES[t]));
        cg_emit(g, c);
    }
    {
        acase *c = cg_sdpa("sdpa.additive.random.f32",
                           "A dense additive bias in [-2, 2) of shape (1,Hq,Lq,Lk): every value is "
                           "added to the scaled score.",
                           "clause6.additive_adds", ATTNREF_F32, 1, 2, 2, 4, 6, 8, 8, 1.0);
        cg_gen4(c, &c->mask, "mask", ATTNREF_F32, 1, 2, 4, 6, -2.0, 2.0);
        cg_emit(g, c);
    }
    {
        acase *c =
            cg_sdpa("sdpa.additive.zeros_ones.bf16",
                    "A bf16 mask of 0s and 1s (1,1,4,4) is added (+0 / +1 to the scores), it "
                    "does not select keys: nothing is masked.",
                    "clause6.additive_adds", ATTNREF_BF16, 1, 1, 1, 4, 4, 8, 8, 1.0);
        const int64_t s[4] = {1, 1, 4, 4};
        double vals[16]; /* the keep pattern's 0/1 values, as bf16 numbers */
        for (int n = 0; n < 16; n++)
            vals[n] = keep_pattern(0, 0, n / 4, n % 4);
        cg_inline(&c->mask, ATTNREF_BF16, 4, s, vals);
        cg_emit(g, c);
    }
    {
        acase *c = cg_sdpa("sdpa.additive.neg_inf.f32",
                           "-inf entries in an additive mask exclude their keys; finite entries "
                           "are added.",
                           "clause6.additive_adds", ATTNREF_F32, 1, 1, 1, 3, 5, 4, 4, 1.0);
        const double vals[15] = {0,         -INFINITY, 0.5, 0, -1, 0, 0,        -INFINITY,
                                 -INFINITY, 0,         2,   0, 0,  0, -INFINITY};
        const int64_t s[2] = {3, 5};
        cg_inline(&c->mask, ATTNREF_F32, 2, s, vals);
        cg_emit(g, c);
    }
    {
        acase *c = cg_sdpa("sdpa.additive.f16_mask_f32_q",
                           "f16 additive mask with f32 q/k/v: promote(f16, f32) = f32, accepted "
                           "(the mask is widened, the computation stays f32).",
                           "clause8.no_upcast", ATTNREF_F32, 1, 2, 2, 4, 6, 8, 8, 1.0);
        const int64_t s[4] = {1, 1, 4, 6};
        pattern_mask(&c->mask, ATTNREF_F16, 4, s, attnref_dtype_finite_min(ATTNREF_F16));
        cg_emit(g, c);
    }
    {
        acase *c =
            cg_sdpa("sdpa.additive.bf16_scalar_f32_q",
                    "bf16 scalar additive mask 2.0 with f32 q (MLX test_sdpa_promote_mask): "
                    "accepted; adding a constant to every score leaves the softmax unchanged.",
                    "clause8.no_upcast", ATTNREF_F32, 1, 2, 2, 3, 5, 8, 8, 1.0);
        const double two = 2.0;
        cg_inline(&c->mask, ATTNREF_BF16, 0, NULL, &two);
        cg_emit(g, c);
    }
}

static void dtype_rule(cg *g)
{
    struct {
        const char *id, *desc;
        attnref_dtype q, m;
    } rej[] = {
        {"sdpa.dtype.f32_mask_f16_q",
         "f32 additive mask with f16 q/k/v must be rejected as a dtype error: promote(f32, f16) "
         "= f32 would upcast the computation.",
         ATTNREF_F16, ATTNREF_F32},
        {"sdpa.dtype.f32_mask_bf16_q",
         "bf16 q/k/v (1,1,4,8) with an f32 zero mask (4,4): rejected, not computed in f32.",
         ATTNREF_BF16, ATTNREF_F32},
        {"sdpa.dtype.bf16_mask_f16_q", "bf16 mask with f16 q: promote(bf16, f16) = f32, rejected.",
         ATTNREF_F16, ATTNREF_BF16},
        {"sdpa.dtype.f16_mask_bf16_q", "f16 mask with bf16 q: promote(f16, bf16) = f32, rejected.",
         ATTNREF_BF16, ATTNREF_F16},
    };
    for (size_t n = 0; n < sizeof rej / sizeof rej[0]; n++) {
        acase *c = cg_sdpa(rej[n].id, rej[n].desc, "clause8.no_upcast", rej[n].q, 1, 1, 1, 4, 4, 8,
                           8, 1.0);
        const double zeros[16] = {0};
        const int64_t s[2] = {4, 4};
        cg_inline(&c->mask, rej[n].m, 2, s, zeros);
        cg_expect_error(c, ATTNREF_EDTYPE);
        cg_emit(g, c);
    }
    {
        acase *c = cg_sdpa("sdpa.dtype.bool_mask_bf16_q",
                           "A boolean mask is accepted with any q dtype (here bf16); the output is "
                           "bf16.",
                           "clause8.no_upcast", ATTNREF_BF16, 1, 2, 2, 4, 6, 8, 8, 1.0);
        const int64_t s[2] = {4, 6};
        pattern_mask(&c->mask, ATTNREF_BOOL, 2, s, 0);
        cg_emit(g, c);
    }
}

static void causal(cg *g)
{
    char id[128];
    for (int t = 0; t < 3; t++) {
        acase *c = cg_sdpa(cg_id_dt(id, sizeof id, "sdpa.causal.lq_eq_lk", CG_DTYPES[t]),
                           "Causal self-attention, Lq=Lk=6: query i sees keys 0..i.",
                           "clause3.bottom_right", CG_DTYPES[t], 1, 2, 2, 6, 6, 8, 8, 1.0);
        c->causal = 1;
        cg_emit(g, c);
    }
    struct {
        const char *id, *desc;
        attnref_dtype dt;
        int64_t lq, lk;
    } br[] = {
        {"sdpa.causal.decode_lq1_lk5.f32",
         "Decode with cache: Lq=1, Lk=5, causal: the query sees all 5 keys (bottom-right), not "
         "only key 0 (top-left).",
         ATTNREF_F32, 1, 5},
        {"sdpa.causal.lq2_lk6.f32", "Lq=2, Lk=6: keep [[1,1,1,1,1,0],[1,1,1,1,1,1]].", ATTNREF_F32,
         2, 6},
        {"sdpa.causal.lq2_lk5.f16", "Lq=2, Lk=5: keep [[1,1,1,1,0],[1,1,1,1,1]].", ATTNREF_F16, 2,
         5},
        {"sdpa.causal.lq_gt_lk.f32",
         "Lq=4 > Lk=2: bottom-right alignment puts query i at position i-2, so the first two rows "
         "see nothing and are exactly 0.",
         ATTNREF_F32, 4, 2},
        {"sdpa.causal.chunk_lq3_lk8.bf16",
         "Chunked prefill: Lq=3 new queries after 5 cached keys (Lk=8).", ATTNREF_BF16, 3, 8},
    };
    for (size_t n = 0; n < sizeof br / sizeof br[0]; n++) {
        acase *c = cg_sdpa(br[n].id, br[n].desc, "clause3.bottom_right", br[n].dt, 1, 2, 2,
                           br[n].lq, br[n].lk, 8, 8, 1.0);
        c->causal = 1;
        cg_emit(g, c);
    }
    {
        acase *c =
            cg_sdpa("sdpa.causal.offset0_topleft.f32",
                    "Explicit causal offset 0 is top-left alignment: with Lq=3, Lk=5 query i "
                    "sees keys 0..i.",
                    "clause3.explicit_offset", ATTNREF_F32, 1, 2, 2, 3, 5, 8, 8, 1.0);
        c->causal = 1;
        c->has_causal_offset = 1;
        c->causal_offset = 0;
        cg_emit(g, c);
    }
    {
        acase *c = cg_sdpa("sdpa.causal.offset1_explicit.f16",
                           "Explicit causal offset 1 with Lq=3, Lk=6 (neither top-left nor "
                           "bottom-right): query i sees keys 0..1+i.",
                           "clause3.explicit_offset", ATTNREF_F16, 1, 1, 1, 3, 6, 8, 8, 1.0);
        c->causal = 1;
        c->has_causal_offset = 1;
        c->causal_offset = 1;
        cg_emit(g, c);
    }
}

static void gqa(cg *g)
{
    {
        acase *c = cg_new(ACASE_OP_SDPA, "sdpa.gqa.interleave_d1.f32",
                          "GQA head mapping: Hq=4, Hkv=2, L=1, D=1, k all ones, v of kv head 0 is "
                          "0 and of kv head 1 is 10. Query head h uses kv head h/(Hq/Hkv): outputs "
                          "[0,0,10,10] (tiling h%Hkv would give [0,10,0,10]).",
                          "clause1.gqa_repeat_interleave");
        const int64_t qs[4] = {1, 4, 1, 1}, ks[4] = {1, 2, 1, 1};
        const double qv[4] = {1, 1, 1, 1}, kv[2] = {1, 1}, vv[2] = {0, 10};
        cg_inline(&c->q, ATTNREF_F32, 4, qs, qv);
        cg_inline(&c->k, ATTNREF_F32, 4, ks, kv);
        cg_inline(&c->v, ATTNREF_F32, 4, ks, vv);
        cg_emit(g, c);
    }
    cg_emit(g, cg_sdpa("sdpa.gqa.hq8_hkv2.f16", "GQA with 4 query heads per kv head (Hq=8, Hkv=2).",
                       "clause1.gqa_repeat_interleave", ATTNREF_F16, 1, 8, 2, 3, 7, 16, 16, 1.0));
    cg_emit(g,
            cg_sdpa("sdpa.gqa.mqa_hq4_hkv1.bf16", "Multi-query attention: Hq=4 share one kv head.",
                    "clause1.gqa_repeat_interleave", ATTNREF_BF16, 2, 4, 1, 3, 5, 8, 8, 1.0));
    {
        acase *c =
            cg_sdpa("sdpa.gqa.hq8_hkv4_causal.f32", "GQA (Hq=8, Hkv=4) with causal Lq=3, Lk=6.",
                    "clause1.gqa_repeat_interleave", ATTNREF_F32, 1, 8, 4, 3, 6, 8, 8, 1.0);
        cg_rule(c, "clause3.bottom_right");
        c->causal = 1;
        cg_emit(g, c);
    }
}

static void dv_scale_strided(cg *g)
{
    cg_emit(g, cg_sdpa("sdpa.dv.dv16_d64.f32",
                       "Value head dim differs from key head dim: D=64, Dv=16.", "clause1.layout",
                       ATTNREF_F32, 1, 2, 2, 3, 7, 64, 16, 1.0));
    cg_emit(g, cg_sdpa("sdpa.dv.dv24_d8.f16", "Dv=24 larger than D=8.", "clause1.layout",
                       ATTNREF_F16, 1, 2, 2, 3, 5, 8, 24, 1.0));

    cg_emit(g,
            cg_sdpa("sdpa.scale.default_uses_d.f32",
                    "Default scale is 1/sqrt(D) of q/k (D=64 -> 1/8), never 1/sqrt(Dv) (Dv=16 -> "
                    "1/4). Same inputs as sdpa.scale.explicit_eighth.f32.",
                    "clause2.default_scale", ATTNREF_F32, 1, 1, 1, 3, 6, 64, 16, 2.0));
    {
        acase *c = cg_sdpa("sdpa.scale.explicit_eighth.f32",
                           "Explicit scale 0.125 with D=64: equals the default-scale case "
                           "sdpa.scale.default_uses_d.f32 input for input.",
                           "clause2.default_scale", ATTNREF_F32, 1, 1, 1, 3, 6, 64, 16, 2.0);
        c->has_scale = 1;
        c->scale = 0.125;
        cg_emit(g, c);
    }
    {
        acase *c =
            cg_sdpa("sdpa.scale.zero.f32",
                    "Explicit scale 0 means 0, not 'default': all weights are equal, so each "
                    "output row is the mean of V.",
                    "clause2.zero_is_zero", ATTNREF_F32, 1, 2, 2, 3, 5, 8, 8, 1.0);
        c->has_scale = 1;
        c->scale = 0.0;
        cg_emit(g, c);
    }
    {
        acase *c = cg_sdpa("sdpa.scale.explicit_half.f16", "Explicit scale 0.5 with D=16 in f16.",
                           "clause2.explicit_scale", ATTNREF_F16, 1, 2, 2, 4, 6, 16, 16, 1.0);
        c->has_scale = 1;
        c->scale = 0.5;
        cg_emit(g, c);
    }

    const char *sid[3] = {"sdpa.strided.blhd_all.f32", "sdpa.strided.blhd_kv.f16",
                          "sdpa.strided.blhd_q_gqa.bf16"};
    const char *sdesc[3] = {
        "q, k and v stored as (B,L,H,D) buffers and passed as (B,H,L,D) views with permuted "
        "strides.",
        "k and v (B,L,H,D) views, q contiguous.", "q as a (B,L,H,D) view with GQA (Hq=4, Hkv=2)."};
    for (int t = 0; t < 3; t++) {
        acase *c = cg_sdpa(sid[t], sdesc[t], "clause1.strided", CG_DTYPES[t], 2, t == 2 ? 4 : 2, 2,
                           3, 5, 8, 8, 1.0);
        if (t != 1)
            c->q.layout = ACASE_LAYOUT_BLHD;
        if (t != 2) {
            c->k.layout = ACASE_LAYOUT_BLHD;
            c->v.layout = ACASE_LAYOUT_BLHD;
        }
        cg_emit(g, c);
    }
}

void fam_sdpa(cg *g)
{
    nomask(g);
    boolmask(g);
    additive(g);
    dtype_rule(g);
    causal(g);
    gqa(g);
    dv_scale_strided(g);
}
