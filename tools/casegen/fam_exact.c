/* fam_exact.c — sdpa.rounding: the correctly rounded output (SPEC.md clause 13).
 *
 * A bound can never tell round-to-nearest-even from truncation: both are within an ulp.  These
 * cases remove every other error instead.  Every score is exactly 0 (q = 0 or k = 0), so every
 * weight is exp(0) = 1 in any kernel, every row keeps a power of two of keys (1/n exact), and
 * V holds values whose sums fit in f32 (one or two binades, far from 0), so the sums of an
 * f32-accumulating kernel are exact in any order, tiling or split.  What is left is the mean of
 * V, rounded once: every row is an EXACT row holding the RNE value, and casegen proves the claim
 * by running every honest implementation (honest.c) on each case.
 */
#include <stdlib.h>
#include <string.h>

#include "casegen.h"

#define RULE "clause13.correct_rounding"

typedef enum { ZERO_Q, ZERO_K, ZERO_QK } zero_side;
typedef enum { V_POS, V_NEG, V_TIES, V_ISSUE } v_kind;

/* One case shape: the table below drives the builder. */
typedef struct spec {
    const char *stem, *desc;
    int64_t b, hq, hkv, lq, lk, d, dv;
    zero_side zero;
    v_kind v;
    int mask_pow2; /* a bool mask: row i keeps 2^(i mod 4) keys, scattered (needs lk >= 8) */
} spec;

static const spec SPECS[] = {
    {"sdpa.rounding.issue_example",
     "Issue 7's example: q = 0, k = 0, v = [1, 1, 1, 1 + 3 ulp]: every weight is 1/4 and the mean "
     "1 + 0.75 ulp rounds (RNE) up to 1 + 1 ulp; truncation gives 1.",
     1, 1, 1, 1, 4, 1, 1, ZERO_QK, V_ISSUE, 0},
    {"sdpa.rounding.ties",
     "Two keys, means exactly halfway between neighbours 1 + a ulp and 1 + (a+1) ulp (a = 0..7) "
     "and their negatives: RNE picks the even one; round-half-away and truncation do not.",
     1, 1, 1, 2, 2, 4, 8, ZERO_K, V_TIES, 0},
    {"sdpa.rounding.mean4",
     "Uniform weights over 4 keys (q = 0), V in [0.5, 2): the mean of V rounded once.", 1, 2, 2, 3,
     4, 16, 24, ZERO_Q, V_POS, 0},
    {"sdpa.rounding.mean8_neg_gqa",
     "GQA (Hq 4, Hkv 2), k = 0, 8 keys, V in [-2, -0.5): truncation toward zero differs from RNE "
     "on negative values too.",
     2, 4, 2, 2, 8, 8, 16, ZERO_K, V_NEG, 0},
    {"sdpa.rounding.bool_pow2",
     "Boolean mask keeping 1, 2, 4 and 8 scattered keys of 16 (q = 0): skipped keys must not "
     "move the weights, and the mean of the kept V is rounded once.",
     1, 2, 2, 8, 16, 8, 8, ZERO_Q, V_POS, 1},
    {"sdpa.rounding.lk64",
     "64 keys, D = Dv = 64 (q = 0), V in [0.5, 2): several key tiles, still exact.", 1, 1, 1, 2, 64,
     64, 64, ZERO_Q, V_POS, 0},
    {"sdpa.rounding.lk1024",
     "1024 keys (k = 0), V in [-2, -0.5): many tiles and splits (flash decoding), every partial "
     "sum exact in f32.",
     1, 1, 1, 2, 1024, 32, 16, ZERO_K, V_NEG, 0},
};

/* V of the tie case: element a of key 0 is 1 + a ulp, of key 1 is 1 + (a+1) ulp, so the mean
 * is 1 + (a + 1/2) ulp, a tie whose even neighbour is below for even a and above for odd a;
 * elements a = 2, 3, 6, 7 are negated (both parities with both signs). */
static void ties_v(acase *c, attnref_dtype dt, const spec *s)
{
    const double ulp = dt == ATTNREF_F16 ? 1.0 / 1024 : 1.0 / 128;
    const int64_t shape[4] = {s->b, s->hkv, s->lk, s->dv};
    const int64_t n = s->b * s->hkv * s->lk * s->dv;
    double *v = malloc((size_t)n * sizeof *v);
    if (!v)
        abort();
    for (int64_t r = 0; r < n / s->dv; r++)
        for (int64_t a = 0; a < s->dv; a++)
            v[r * s->dv + a] = ((a / 2) % 2 ? -1.0 : 1.0) * (1.0 + (double)(a + r % s->lk) * ulp);
    cg_inline(&c->v, dt, 4, shape, v);
    free(v);
}

static void build(cg *g, const spec *s, attnref_dtype dt)
{
    char id[128];
    acase *c = cg_sdpa(cg_id_dt(id, sizeof id, s->stem, dt), s->desc, RULE, dt, s->b, s->hq, s->hkv,
                       s->lq, s->lk, s->d, s->dv, 1.0);
    /* Scores exactly 0: one side of q . k (or both) all zeros. */
    for (int side = 0; side < 2; side++) {
        if ((side == 0 && s->zero == ZERO_K) || (side == 1 && s->zero == ZERO_Q))
            continue;
        acase_tensor *z = side == 0 ? &c->q : &c->k;
        const int64_t zshape[4] = {z->shape[0], z->shape[1], z->shape[2], z->shape[3]};
        double *zeros = calloc((size_t)z->numel + 1, sizeof *zeros);
        if (!zeros)
            abort();
        cg_inline(z, dt, 4, zshape, zeros);
        free(zeros);
    }
    switch (s->v) {
    case V_POS: cg_gen4(c, &c->v, "v", dt, s->b, s->hkv, s->lk, s->dv, 0.5, 2.0); break;
    case V_NEG: cg_gen4(c, &c->v, "v", dt, s->b, s->hkv, s->lk, s->dv, -2.0, -0.5); break;
    case V_TIES: ties_v(c, dt, s); break;
    case V_ISSUE: {
        const double ulp = dt == ATTNREF_F16 ? 1.0 / 1024 : 1.0 / 128;
        const double v[4] = {1.0, 1.0, 1.0, 1.0 + 3.0 * ulp}; /* bf16: 1.0234375 */
        const int64_t shape[4] = {1, 1, 4, 1};
        cg_inline(&c->v, dt, 4, shape, v);
        break;
    }
    }
    if (s->mask_pow2) {
        const int64_t shape[4] = {1, 1, s->lq, s->lk};
        double *m = calloc((size_t)(s->lq * s->lk), sizeof *m);
        if (!m)
            abort();
        for (int64_t i = 0; i < s->lq; i++) {
            const int64_t keep = (int64_t)1 << (i % 4);
            for (int64_t t = 0; t < keep; t++) /* scattered: stride 16/keep from offset i */
                m[i * s->lk + (i + t * (s->lk / keep)) % s->lk] = 1.0;
        }
        cg_inline(&c->mask, ATTNREF_BOOL, 4, shape, m);
        free(m);
    }
    cg_emit_rounded(g, c);
}

void fam_exact(cg *g)
{
    static const attnref_dtype dts[2] = {ATTNREF_F16, ATTNREF_BF16};
    for (size_t k = 0; k < sizeof SPECS / sizeof SPECS[0]; k++)
        for (int t = 0; t < 2; t++)
            build(g, &SPECS[k], dts[t]);
}
