/* fam_kinds.c — bug kinds the other families cannot see (issue 7, section 2), each from a kind
 * of bug real kernels have had:
 *
 *   sdpa.sentinel     rows whose every logit lies near -1e5 (or -2e4): a running maximum seeded
 *                     with a finite "minus infinity" (-5e4, -1e4) outranks every real score and
 *                     the row comes out 0 instead of its softmax [12];
 *   sdpa.overflow_qk  f16, D = 128/256, |q|, |k| near 24 (or 16): the raw q.k exceeds 65504
 *                     while the scaled score does not; rounding q.k to f16 before scaling gives
 *                     inf, then NaN [12];
 *   sdpa.layout       k and v in different layouts, and K/V broadcast with stride 0 over the
 *                     batch or the heads: a kernel that reuses one tensor's strides for another,
 *                     or assumes dense K/V, reads the wrong elements [1];
 *   sdpa.decode       Lq = 1 with every mask kind and broadcast shape: decode kernels are
 *                     separate code with their own mask indexing [6, 7, 3];
 *   mask.static,      a static key buffer longer than offset + Lq (a preallocated cache): the
 *   sdpa.static       slots past the written ones are never kept, whatever they hold [3, 5].
 *
 * Each family is one table of specs and one builder.  Inputs that must make a precise point
 * (sentinels) are inline multiples of powers of two, so every score is exact in f32 and the
 * case does not depend on an implementation's rounding; the others are generated.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnref/mask.h"
#include "attnref/status.h"
#include "casegen.h"

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

__attribute__((noreturn)) static void die(const char *id, const char *what)
{
    fprintf(stderr, "casegen: %s: %s\n", id, what);
    exit(1);
}

static double *xcalloc(int64_t n)
{
    double *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    if (!p)
        die("fam_kinds", "out of memory");
    return p;
}

/* A deterministic value in 0..m-1 from indices (SplitMix64 finaliser of a packed key). */
static uint64_t mix(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    uint64_t z = a * 0x9E3779B97F4A7C15ull ^ b * 0xBF58476D1CE4E5B9ull ^ c * 0x94D049BB133111EBull ^
                 (d + 0x2545F4914F6CDD1Dull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A multiple of `step` in [-1, 1] from indices: exact in every dtype for step >= 1/128. */
static double grid(double step, uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    const uint64_t n = (uint64_t)(2.0 / step) + 1;
    return -1.0 + step * (double)(mix(a, b, c, d) % n);
}

/* ==== sdpa.sentinel ========================================================================= */

/* How the logits reach -1e5: through q.k (no mask) or through an additive mask on small
 * scores. */
typedef enum { VIA_QK, VIA_MASK } sentinel_route;

static const struct sentinel_spec {
    const char *stem, *desc;
    sentinel_route route;
    double level; /* the logits' level (f32); bf16 uses the nearest value it holds */
    int mixed;    /* odd query rows unmasked (mask 0), even rows at the level */
    int64_t b, lq, lk;
    int bf16; /* also a bf16 case (the mask route only: see below) */
} SENTINELS[] = {
    {"sdpa.sentinel.qk_neg1e5",
     "Every logit near -1e5 through q.k alone (q = [1024, a], k = [-196, c], D = 4, scale 1/2: "
     "scores -100352 + a.c/2, exact in f32): the output is the plain softmax of the small "
     "differences, not 0. A running max seeded with a finite -5e4 (or -1e4) as minus infinity "
     "zeroes the row.",
     VIA_QK, -1e5, 0, 1, 3, 20, 0},
    {"sdpa.sentinel.mask_neg1e5",
     "Small scores plus an additive mask near -1e5 on every key (D = 16, q and k multiples of "
     "1/4, so every logit is exact in f32): the row is the plain softmax, not 0 (a finite -5e4 "
     "running-max seed outranks every logit).",
     VIA_MASK, -1e5, 0, 1, 3, 20, 1},
    {"sdpa.sentinel.mask_neg2e4",
     "Every logit near -2e4 (additive mask): below a -1e4 'minus infinity' sentinel, so a kernel "
     "using -1e4 as the initial maximum or the masked value zeroes the row.",
     VIA_MASK, -2e4, 0, 1, 4, 24, 1},
    {"sdpa.sentinel.mixed_rows",
     "Batch 2, Lk = 40 (three 16-key blocks): even query rows have every logit near -1e5, odd "
     "rows are unmasked. Only the sentinel rows break in a kernel with a finite max seed; each "
     "row must be its own softmax.",
     VIA_MASK, -1e5, 1, 2, 4, 40, 1},
    {"sdpa.sentinel.decode_neg1e5",
     "Decode (Lq = 1) over 33 keys with every logit near -1e5 (additive mask): decode kernels "
     "seed their running max separately.",
     VIA_MASK, -1e5, 0, 2, 1, 33, 1},
};

/* The sentinel level as the mask dtype holds it: f32 holds -1e5 and -2e4 exactly; bf16 (8
 * significant bits) takes -99840 and -19968, the nearest values it has. */
static double level_in(double level, attnref_dtype dt)
{
    float cell[1];
    attnref_store(cell, dt, 0, level);
    return attnref_load(cell, dt, 0);
}

static void sentinel_case(cg *g, const struct sentinel_spec *s, attnref_dtype dt)
{
    char id[128];
    const int64_t H = 2, D = s->route == VIA_QK ? 4 : 16, DV = 8;
    acase *c =
        cg_new(ACASE_OP_SDPA, cg_id_dt(id, sizeof id, s->stem, dt), s->desc, "clause12.stability");
    /* V in [1, 2): every convex combination is in [1, 2), far from the 0 of the bug. */
    cg_gen4(c, &c->v, "v", dt, s->b, H, s->lk, DV, 1.0, 2.0);
    const int64_t qs[4] = {s->b, H, s->lq, D}, ks[4] = {s->b, H, s->lk, D};
    double *qv = xcalloc(s->b * H * s->lq * D), *kv = xcalloc(s->b * H * s->lk * D);
    /* VIA_QK: q = [1024, a1..a3], k = [-196, c1..c3] with a, c multiples of 1/8: q.k =
     * -200704 + a.c, exact in f32 (multiples of 1/64 below 2^18), and scale 1/2 gives -100352 +
     * a.c/2 (multiples of 1/128 below 2^17: exact).  VIA_MASK: multiples of 1/4 in [-1, 1] with
     * D = 16 and scale 1/4: scores are multiples of 1/64 in [-4, 4]. */
    const double step = s->route == VIA_QK ? 0.125 : 0.25;
    for (int64_t b = 0; b < s->b; b++)
        for (int64_t h = 0; h < H; h++) {
            for (int64_t i = 0; i < s->lq; i++)
                for (int64_t d = 0; d < D; d++)
                    qv[((b * H + h) * s->lq + i) * D + d] =
                        s->route == VIA_QK && d == 0 ? 1024.0 : grid(step, 1, b * H + h, i, d);
            for (int64_t j = 0; j < s->lk; j++)
                for (int64_t d = 0; d < D; d++)
                    kv[((b * H + h) * s->lk + j) * D + d] =
                        s->route == VIA_QK && d == 0 ? -196.0 : grid(step, 2, b * H + h, j, d);
        }
    cg_inline(&c->q, dt, 4, qs, qv);
    cg_inline(&c->k, dt, 4, ks, kv);
    free(qv);
    free(kv);
    if (s->route == VIA_MASK) {
        cg_rule(c, "clause6.additive_adds");
        /* (B, 1, Lq, Lk): f32 varies the level by whole units (exact); bf16 keeps one value (its
         * neighbours are 512 apart near 1e5). */
        const int64_t ms[4] = {s->b, 1, s->lq, s->lk};
        double *mv = xcalloc(s->b * s->lq * s->lk);
        for (int64_t b = 0; b < s->b; b++)
            for (int64_t i = 0; i < s->lq; i++)
                for (int64_t j = 0; j < s->lk; j++)
                    mv[(b * s->lq + i) * s->lk + j] = s->mixed && i % 2 ? 0.0
                                                      : dt == ATTNREF_F32
                                                          ? s->level - (double)((i + 2 * j + b) % 3)
                                                          : level_in(s->level, dt);
        cg_inline(&c->mask, dt, 4, ms, mv);
        free(mv);
    }
    cg_emit(g, c);
}

/* bf16 only through the mask: q.k near -1e5 in bf16 would need a score the dtype rounds by
 * hundreds, and the tolerance rightly allows an honest kernel to round the scaled score to the
 * dtype (SPEC clause 13), so such a row says nothing.  f16 cannot hold -1e5 at all. */
static void fam_sentinel(cg *g)
{
    for (int n = 0; n < N(SENTINELS); n++) {
        sentinel_case(g, &SENTINELS[n], ATTNREF_F32);
        if (SENTINELS[n].bf16)
            sentinel_case(g, &SENTINELS[n], ATTNREF_BF16);
    }
}

/* ==== sdpa.overflow_qk ====================================================================== */

static const struct overflow_spec {
    const char *stem, *desc;
    int64_t b, hq, hkv, lq, lk, d;
    double qlo, qhi, klo, khi; /* generated ranges: |q.k| ~ D * |q| * |k| > 65504 */
    int causal, bool_mask;
    double scale; /* 0: the default 1/sqrt(D) */
} OVERFLOWS[] = {
    {"sdpa.overflow_qk.d128",
     "f16, D = 128, q and k in [23, 24): q.k is about 72000, over the f16 maximum 65504, while the "
     "scaled score (1/sqrt(128)) is about 6400, far inside f16. The output is finite; rounding "
     "q.k to f16 before scaling makes it inf and the row NaN.",
     1, 2, 2, 4, 24, 128, 23.0, 24.0, 23.0, 24.0, 0, 0, 0.0},
    {"sdpa.overflow_qk.d128_neg",
     "As d128 with q in [-24, -23): q.k about -72000 (-inf in f16) while the scaled score is "
     "about -6400: the output is finite, not NaN or 0.",
     1, 2, 2, 4, 24, 128, -24.0, -23.0, 23.0, 24.0, 0, 0, 0.0},
    {"sdpa.overflow_qk.d128_causal",
     "Causal prefill (Lq = Lk = 20) with q, k in [23, 24), D = 128: every kept q.k exceeds "
     "65504 before scaling.",
     1, 2, 2, 20, 20, 128, 23.0, 24.0, 23.0, 24.0, 1, 0, 0.0},
    {"sdpa.overflow_qk.d128_decode_gqa",
     "Decode (Lq = 1, Hq = 4, Hkv = 2) over 40 keys with q, k in [23, 24), D = 128, a boolean "
     "mask and an explicit scale 2^-10 (scaled scores near 70, where the softmax is smooth): "
     "the decode path must not round q.k to f16 before scaling either.",
     2, 4, 2, 1, 40, 128, 23.0, 24.0, 23.0, 24.0, 0, 1, 0x1p-10},
    {"sdpa.overflow_qk.d256",
     "D = 256, q and k in [16, 17): q.k about 69600 > 65504, scaled by 1/16 about 4350.", 1, 2, 2,
     3, 17, 256, 16.0, 17.0, 16.0, 17.0, 0, 0, 0.0},
};

/* f16 only: bf16 has f32's range, and rounding q.k to bf16 before the scale costs the same
 * relative error as rounding the scaled score after it, which the tolerance allows. */
static void fam_overflow_qk(cg *g)
{
    for (int n = 0; n < N(OVERFLOWS); n++) {
        const struct overflow_spec *s = &OVERFLOWS[n];
        char id[128];
        acase *c = cg_new(ACASE_OP_SDPA, cg_id_dt(id, sizeof id, s->stem, ATTNREF_F16), s->desc,
                          "clause12.stability");
        cg_gen4(c, &c->q, "q", ATTNREF_F16, s->b, s->hq, s->lq, s->d, s->qlo, s->qhi);
        cg_gen4(c, &c->k, "k", ATTNREF_F16, s->b, s->hkv, s->lk, s->d, s->klo, s->khi);
        cg_gen4(c, &c->v, "v", ATTNREF_F16, s->b, s->hkv, s->lk, 16, -1.0, 1.0);
        if (s->causal) {
            c->causal = 1;
            cg_rule(c, "clause3.bottom_right");
        }
        if (s->scale != 0.0) {
            c->has_scale = 1;
            c->scale = s->scale;
            cg_rule(c, "clause2.explicit_scale");
        }
        if (s->bool_mask) {
            cg_rule(c, "clause6.bool_selects");
            const int64_t ms[4] = {s->b, 1, s->lq, s->lk};
            double *mv = xcalloc(s->b * s->lq * s->lk);
            for (int64_t x = 0; x < s->b * s->lq * s->lk; x++)
                mv[x] = (x % s->lk) == 0 || mix(3, (uint64_t)x, 0, 0) % 4 != 0;
            cg_inline(&c->mask, ATTNREF_BOOL, 4, ms, mv);
            free(mv);
        }
        cg_emit(g, c);
    }
}

/* ==== sdpa.layout =========================================================================== */

static const struct layout_spec {
    const char *stem, *desc;
    int64_t b, hq, hkv;
    acase_layout k_layout, v_layout;
    uint8_t k_stride0, v_stride0; /* bit 0: batch, bit 1: heads */
} LAYOUTS[] = {
    {"sdpa.layout.k_bhld_v_blhd",
     "k contiguous (B,H,L,D), v a (B,L,H,D) buffer seen through permuted strides: k and v have "
     "different strides, so a kernel that addresses V with K's strides reads the wrong values.",
     2, 2, 2, ACASE_LAYOUT_BHLD, ACASE_LAYOUT_BLHD, 0, 0},
    {"sdpa.layout.k_blhd_v_bhld_gqa",
     "k a (B,L,H,D) view, v contiguous, GQA (Hq = 4, Hkv = 2): each tensor read through its own "
     "strides.",
     2, 4, 2, ACASE_LAYOUT_BLHD, ACASE_LAYOUT_BHLD, 0, 0},
    {"sdpa.layout.kv_stride0_batch",
     "K and V shared by both sequences of the batch and passed with batch stride 0 (one stored "
     "slice): a kernel assuming dense K/V, or one that copies them by their extents, breaks.",
     2, 2, 2, ACASE_LAYOUT_BHLD, ACASE_LAYOUT_BHLD, 1, 1},
    {"sdpa.layout.kv_stride0_heads",
     "K and V broadcast over their 2 kv heads with head stride 0, GQA (Hq = 4): every query head "
     "reads the same stored head.",
     2, 4, 2, ACASE_LAYOUT_BHLD, ACASE_LAYOUT_BHLD, 2, 2},
    {"sdpa.layout.kv_stride0_both",
     "K and V with stride 0 on both the batch and the head axis (one stored (L, D) slice each).", 2,
     2, 2, ACASE_LAYOUT_BHLD, ACASE_LAYOUT_BHLD, 3, 3},
    {"sdpa.layout.k_stride0_v_blhd",
     "k broadcast over batch and heads with stride 0, v a (B,L,H,D) view: no two of their "
     "strides agree.",
     2, 2, 2, ACASE_LAYOUT_BHLD, ACASE_LAYOUT_BLHD, 3, 0},
};

/* A generated K/V-shaped tensor, stored as the slice stride0 names and repeated to the
 * logical shape (b, h, l, d), as the reader does with `stride0:`. */
static void gen_kv(acase *c, acase_tensor *t, const char *name, attnref_dtype dt, uint8_t s0,
                   int64_t b, int64_t h, int64_t l, int64_t d, double lo, double hi)
{
    cg_gen4(c, t, name, dt, s0 & 1 ? 1 : b, s0 & 2 ? 1 : h, l, d, lo, hi);
    if (!s0)
        return;
    const int64_t logical[4] = {b, h, l, d};
    char err[256];
    if (acase_tensor_broadcast(t, s0, logical, err, sizeof err) != 0)
        die(c->id, err);
}

static void fam_layout(cg *g)
{
    char id[128];
    for (int n = 0; n < N(LAYOUTS); n++)
        for (int t = 0; t < 3; t++) {
            const struct layout_spec *s = &LAYOUTS[n];
            const attnref_dtype dt = CG_DTYPES[t];
            const int64_t lq = 3, lk = 20, d = 8;
            acase *c = cg_new(ACASE_OP_SDPA, cg_id_dt(id, sizeof id, s->stem, dt), s->desc,
                              "clause1.layout");
            cg_rule(c, s->k_stride0 | s->v_stride0 ? "clause1.stride0" : "clause1.strided");
            if (s->hq != s->hkv)
                cg_rule(c, "clause1.gqa_repeat_interleave");
            cg_gen4(c, &c->q, "q", dt, s->b, s->hq, lq, d, -1.0, 1.0);
            gen_kv(c, &c->k, "k", dt, s->k_stride0, s->b, s->hkv, lk, d, -1.0, 1.0);
            gen_kv(c, &c->v, "v", dt, s->v_stride0, s->b, s->hkv, lk, d, -1.0, 1.0);
            c->k.layout = s->k_layout;
            c->v.layout = s->v_layout;
            cg_emit(g, c);
        }
}

/* ==== sdpa.decode =========================================================================== */

typedef enum { MK_BOOL, MK_BIAS, MK_NEG_INF, MK_ZERO_ONE, MK_COUNT } mask_kind;
static const char *const MK_NAME[] = {"bool", "bias", "neg_inf", "zeros_ones"};
static const char *const MK_TEXT[] = {
    "a boolean keep mask whose true bytes are 1, 2 or 255 (any nonzero byte attends)",
    "an additive bias in [-3, 3) (every key kept)",
    "an additive mask of 0 and -inf (-inf excludes its key)",
    "an additive mask of 0s and 1s (added to the scores: it selects nothing)",
};

/* Mask shapes, right-aligned to (B, Hq, Lq = 1, Lk) = (2, 4, 1, 40). */
static const struct decode_shape {
    const char *name, *text;
    int ndim;
    int64_t shape[4];
    int per_head; /* the mask differs between query heads of one kv group */
} DECODE_SHAPES[] = {
    {"full", "of the full shape (B, Hq, 1, Lk)", 4, {2, 4, 1, 40}, 1},
    {"head1", "broadcast over heads (B, 1, 1, Lk)", 4, {2, 1, 1, 40}, 0},
    {"batch1", "broadcast over the batch (1, Hq, 1, Lk)", 4, {1, 4, 1, 40}, 1},
    {"rank3", "of rank 3, (Hq, 1, Lk)", 3, {4, 1, 40}, 1},
    {"rank2", "of rank 2, (1, Lk)", 2, {1, 40}, 0},
    {"rank1", "of rank 1, (Lk)", 1, {40}, 0},
    {"scalar", "of rank 0 (a scalar)", 0, {0}, 0},
};

/* One mask element at logical (b, h, j) of the broadcast extents: key 0 is always kept, about
 * a third of the others are dropped; a per-head mask differs between heads.  BOOL: the byte
 * (1, 2 or 255 for true). */
static double decode_mask_value(mask_kind mk, int64_t b, int64_t h, int64_t j)
{
    const uint64_t r = mix(4, (uint64_t)b, (uint64_t)h, (uint64_t)j);
    const int keep = j == 0 || r % 3 != 0;
    switch (mk) {
    case MK_BOOL: return keep ? ((r >> 8) % 3 == 0 ? 1.0 : (r >> 8) % 3 == 1 ? 2.0 : 255.0) : 0.0;
    case MK_NEG_INF: return keep ? 0.0 : -INFINITY;
    case MK_ZERO_ONE: return (double)((r >> 4) & 1);
    default: return -3.0 + 0.25 * (double)(r % 24);
    }
}

static void decode_case(cg *g, mask_kind mk, const struct decode_shape *sh, attnref_dtype dt)
{
    char stem[96], id[128], desc[512];
    snprintf(stem, sizeof stem, "sdpa.decode.%s_%s", MK_NAME[mk], sh->name);
    snprintf(desc, sizeof desc,
             "Decode (Lq = 1), B = 2, Hq = 4, Hkv = 2, Lk = 40 (three 16-key blocks), with %s %s. "
             "Decode kernels are separate code: the mask must be indexed by query head (not kv "
             "head), broadcast as its shape says, and applied in every block.",
             MK_TEXT[mk], sh->text);
    acase *c = cg_sdpa(cg_id_dt(id, sizeof id, stem, dt), desc,
                       mk == MK_BOOL ? "clause6.bool_selects" : "clause6.additive_adds", dt, 2, 4,
                       2, 1, 40, 16, 16, 1.0);
    if (mk == MK_NEG_INF)
        cg_rule(c, "clause6.bool_selects"); /* -inf excludes, as false in a bool mask */
    if (sh->ndim != 4 || sh->shape[0] != 2 || sh->shape[1] != 4)
        cg_rule(c, "clause7.broadcast");
    int64_t full[4] = {1, 1, 1, 1}, n = 1;
    for (int r = 0; r < sh->ndim; r++) {
        full[4 - sh->ndim + r] = sh->shape[r];
        n *= sh->shape[r];
    }
    double *mv = xcalloc(n);
    int64_t x = 0;
    for (int64_t b = 0; b < full[0]; b++)
        for (int64_t h = 0; h < full[1]; h++)
            for (int64_t j = 0; j < full[3]; j++)
                mv[x++] = sh->ndim == 0 ? (mk == MK_BOOL   ? 255.0
                                           : mk == MK_BIAS ? 0.5
                                                           : 0.0)
                                        : decode_mask_value(mk, b, h, j);
    cg_inline(&c->mask, mk == MK_BOOL ? ATTNREF_BOOL : dt, sh->ndim, sh->shape, mv);
    if (mk == MK_BOOL) /* cg_inline stores true as 1: put the bytes back */
        for (int64_t e = 0; e < n; e++)
            ((uint8_t *)c->mask.data)[e] = (uint8_t)mv[e];
    free(mv);
    cg_emit(g, c);
}

static void fam_decode(cg *g)
{
    /* Every kind with every shape; the dtype rotates so that each kind and each per-head shape
     * meets f32, f16 and bf16. */
    for (int mk = 0; mk < MK_COUNT; mk++)
        for (int s = 0; s < N(DECODE_SHAPES); s++)
            decode_case(g, (mask_kind)mk, &DECODE_SHAPES[s], CG_DTYPES[(mk + s) % 3]);
    /* The causal flag: bottom-right (the query is the last position: every key) and an explicit
     * offset that ends inside the second block. */
    char id[128];
    for (int t = 0; t < 3; t++) {
        acase *c =
            cg_sdpa(cg_id_dt(id, sizeof id, "sdpa.decode.causal", CG_DTYPES[t]),
                    "Decode (Lq = 1) with the causal flag over 40 keys, GQA Hq = 4, Hkv = 2: "
                    "bottom-right, the query sits at position 39 and keeps every key.",
                    "clause3.bottom_right", CG_DTYPES[t], 2, 4, 2, 1, 40, 16, 16, 1.0);
        c->causal = 1;
        cg_emit(g, c);
        c = cg_sdpa(cg_id_dt(id, sizeof id, "sdpa.decode.causal_offset20", CG_DTYPES[t]),
                    "Decode (Lq = 1) with the causal flag and explicit offset 20 over 40 keys: "
                    "keys 0..20 are kept, so the block of keys 16..31 is partly masked and "
                    "must be neither skipped nor read whole.",
                    "clause3.explicit_offset", CG_DTYPES[t], 2, 4, 2, 1, 40, 16, 16, 1.0);
        c->causal = 1;
        c->has_causal_offset = 1;
        c->causal_offset = 20;
        cg_emit(g, c);
    }
}

/* ==== mask.static and sdpa.static =========================================================== */

static int64_t *dup_i64(const int64_t *a, int64_t n)
{
    if (!a)
        return NULL;
    int64_t *d = malloc((size_t)n * sizeof *d);
    if (!d)
        die("fam_kinds", "out of memory");
    memcpy(d, a, (size_t)n * sizeof *d);
    return d;
}

static const struct static_mask_spec {
    const char *id, *desc;
    int64_t lq, offset, kv_len, window, batch;
    int64_t lengths[2], left_padding[2];
    int has_lengths, has_left_padding;
    int error; /* ATTNREF_EINVAL: the call must be rejected */
} STATIC_MASKS[] = {
    {"mask.static.slots8_valid5_lq2",
     "A static cache of 8 slots holding 5 tokens, 2 new queries (kv_len 8, offset 5): shape "
     "(1,1,2,8); the queries at positions 5 and 6 keep keys 0..5 and 0..6, slot 7 is never "
     "kept.",
     2,
     5,
     8,
     0,
     1,
     {0, 0},
     {0, 0},
     0,
     0,
     0},
    {"mask.static.decode_slots16_offset9",
     "Decode into a 16-slot static buffer after 9 tokens: keys 0..9 kept, slots 10..15 never.",
     1,
     9,
     16,
     0,
     1,
     {0, 0},
     {0, 0},
     0,
     0,
     0},
    {"mask.static.window_lengths_left_padding",
     "kv_len 12, offset 4, Lq 3, W = 3, lengths [6, 5], left padding [0, 3]: every constraint "
     "intersects inside the written slots; slots 7..11 are never kept.",
     3,
     4,
     12,
     3,
     2,
     {6, 5},
     {0, 3},
     1,
     1,
     0},
    {"mask.static.lengths_up_to_kv_len",
     "lengths range over 0..kv_len: lengths [12, 2] with kv_len 12, offset 4, Lq 2 (a length "
     "past offset + Lq keeps nothing more: the causal rule ends at the query).",
     2,
     4,
     12,
     0,
     2,
     {12, 2},
     {0, 0},
     1,
     0,
     0},
    {"mask.static.invalid_short",
     "kv_len 6 is shorter than offset 5 + Lq 2: rejected with einval.",
     2,
     5,
     6,
     0,
     1,
     {0, 0},
     {0, 0},
     0,
     0,
     ATTNREF_EINVAL},
    {"mask.static.invalid_lengths_over",
     "lengths [9] beyond kv_len 8: rejected with einval.",
     2,
     5,
     8,
     0,
     1,
     {9, 0},
     {0, 0},
     1,
     0,
     ATTNREF_EINVAL},
};

static void fam_static_mask(cg *g)
{
    for (int n = 0; n < N(STATIC_MASKS); n++) {
        const struct static_mask_spec *s = &STATIC_MASKS[n];
        acase *c = cg_new(ACASE_OP_MASK, s->id, s->desc, "clause5.static_buffer");
        cg_rule(c, "clause3.bottom_right");
        c->lq = s->lq;
        c->offset = s->offset;
        c->kv_len = s->kv_len;
        c->window = s->window;
        if (s->window)
            cg_rule(c, "clause4.window_counts_self");
        if (s->has_lengths || s->has_left_padding) {
            c->batch = s->batch;
            c->lengths = s->has_lengths ? dup_i64(s->lengths, s->batch) : NULL;
            c->left_padding = s->has_left_padding ? dup_i64(s->left_padding, s->batch) : NULL;
        }
        if (s->error)
            cg_expect_error(c, s->error);
        cg_emit(g, c);
    }
}

/* The keep mask of the builder over a static buffer, as a BOOL (b, 1, lq, kv_len) input. */
static void static_keep_mask(acase *c, int64_t lq, int64_t offset, int64_t kv_len, int64_t batch,
                             const int64_t *lengths)
{
    attnref_mask_params p = {
        .lq = lq, .offset = offset, .batch = batch, .lengths = lengths, .kv_len = kv_len};
    attnref_diag diag;
    int64_t shape[4];
    if (attnref_mask_shape(&p, shape, &diag) != ATTNREF_OK)
        die(c->id, diag.msg);
    const int64_t n = shape[0] * shape[1] * shape[2] * shape[3];
    uint8_t *keep = calloc((size_t)n + 1, 1);
    double *mv = xcalloc(n);
    attnref_tensor kt;
    if (!keep || attnref_tensor_init(&kt, keep, ATTNREF_BOOL, 4, shape, &diag) != ATTNREF_OK ||
        attnref_build_mask(&p, &kt, &diag) != ATTNREF_OK)
        die(c->id, diag.msg);
    for (int64_t x = 0; x < n; x++)
        mv[x] = keep[x];
    cg_inline(&c->mask, ATTNREF_BOOL, 4, shape, mv);
    free(keep);
    free(mv);
}

/* Poison the never-written slots j >= from of every K/V row: what a preallocated cache holds
 * before anything is written there (clause 10: masked slots contribute nothing). */
static void poison_slots(acase *c, int64_t from)
{
    const int64_t B = c->k.shape[0], H = c->k.shape[1], L = c->k.shape[2], D = c->k.shape[3];
    const int64_t DV = c->v.shape[3];
    for (int64_t bh = 0; bh < B * H; bh++)
        for (int64_t j = from; j < L; j++) {
            cg_poke(&c->k, (bh * L + j) * D + j % D, (j % 2) ? NAN : INFINITY);
            cg_poke(&c->v, (bh * L + j) * DV + (j + 1) % DV, (j % 2) ? -INFINITY : NAN);
        }
}

static void fam_static_sdpa(cg *g)
{
    char id[128];
    for (int t = 0; t < 3; t++) {
        const attnref_dtype dt = CG_DTYPES[t];
        acase *c = cg_sdpa(cg_id_dt(id, sizeof id, "sdpa.static.slots8_valid5_lq2", dt),
                           "SDPA over a static key buffer: 8 slots, 5 cached tokens, 2 new "
                           "queries (Lk = 8 > offset + Lq = 7), causal with explicit offset 5. "
                           "Slot 7 was never written and holds NaN / inf in K and V: it must "
                           "not be kept and must not leak.",
                           "clause5.static_buffer", dt, 1, 2, 2, 2, 8, 8, 8, 1.0);
        cg_rule(c, "clause3.explicit_offset");
        cg_rule(c, "clause10.masked_slots");
        c->causal = 1;
        c->has_causal_offset = 1;
        c->causal_offset = 5;
        poison_slots(c, 7);
        cg_emit(g, c);

        c = cg_sdpa(cg_id_dt(id, sizeof id, "sdpa.static.decode_slots40_offset20", dt),
                    "Decode into a 40-slot static buffer after 20 tokens (causal, explicit "
                    "offset 20, GQA Hq = 4, Hkv = 2): keys 0..20 kept; slots 21..39 hold NaN / "
                    "inf and must not be read into the row. The block of keys 16..31 is partly "
                    "kept.",
                    "clause5.static_buffer", dt, 1, 4, 2, 1, 40, 16, 16, 1.0);
        cg_rule(c, "clause3.explicit_offset");
        cg_rule(c, "clause10.masked_slots");
        c->causal = 1;
        c->has_causal_offset = 1;
        c->causal_offset = 20;
        poison_slots(c, 21);
        cg_emit(g, c);

        c = cg_sdpa(cg_id_dt(id, sizeof id, "sdpa.static.batch_lengths_bool", dt),
                    "The builder's keep mask over a static buffer as a boolean mask: kv_len 12, "
                    "offset 6, Lq 3, lengths [9, 4] (batch 2), shape (2,1,3,12); slots 9..11 "
                    "never written hold NaN / inf.",
                    "clause5.static_buffer", dt, 2, 2, 2, 3, 12, 8, 8, 1.0);
        cg_rule(c, "clause5.right_padding");
        const int64_t lengths[2] = {9, 4};
        static_keep_mask(c, 3, 6, 12, 2, lengths);
        poison_slots(c, 9);
        cg_emit(g, c);
    }
}

void fam_kinds(cg *g)
{
    fam_sentinel(g);
    fam_overflow_qk(g);
    fam_layout(g);
    fam_decode(g);
    fam_static_mask(g);
    fam_static_sdpa(g);
}
