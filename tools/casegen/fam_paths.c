/* fam_paths.c — sdpa.paths.*: the semantics of the other families at the shapes where real
 * kernels switch code paths.
 *
 * Attention kernels choose their algorithm by shape: ggml's CPU flash attention has a
 * short-query path, a tiled path for long query blocks (Lq around 64 and up) and a split-KV path
 * for decode over long key sequences (Lk around 512 and up); FlashAttention splits KV; MLX has a
 * vector kernel (Lq <= 8) and a full one.  The other families use Lq, Lk of a few to ~10, so
 * they certify one path only, while bugs live per path.  One table, PATHS, crosses shape classes
 * (CLASSES) with semantics (SEMS); every case is built by path_case() from its row, and the
 * dtypes rotate so that each semantic and each shape class meets f32, f16 and bf16.
 *
 * The mask builder's bugs (window W+1, lengths ignored, top-left) cannot show in an SDPA case,
 * which carries its mask inline; rows marked `keep` also write mask.paths.<sem>.<class>: the
 * builder call behind that SDPA case, checked exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "casegen.h"

#define WINDOW 32 /* sliding window W of the window semantic (clause 4) */

static const struct shape_class {
    const char *name;
    int64_t lq, lk;
    const char *what;
} CLASSES[] = {
    {"q1_k40", 1, 40, "decode (Lq = 1) over short keys (Lk < 64)"},
    {"q1_k600", 1, 600, "decode (Lq = 1) over long keys (Lk >= 512: split-KV territory)"},
    {"q8_k600", 8, 600,
     "a few queries (Lq = 8, the vector-kernel limit) over long keys (Lk >= 512)"},
    {"q80_k96", 80, 96, "a long query block (Lq >= 64: tiled kernels) over short keys"},
    {"q80_k600", 80, 600, "a long query block (Lq >= 64) over long keys (Lk >= 512)"},
    {"q63_k511", 63, 511, "just below the usual thresholds (Lq = 63 < 64, Lk = 511 < 512)"},
    {"q65_k513", 65, 513, "just above the usual thresholds (Lq = 65 > 64, Lk = 513 > 512)"},
};
enum { Q1_K40, Q1_K600, Q8_K600, Q80_K96, Q80_K600, Q63_K511, Q65_K513 };

enum sem { POISON, FULLY_MASKED, WINDOWED, LEFT_PADDING, GQA_CAUSAL, POISON_B1 };
static const char *const SEMS[] = {"poison",       "fully_masked", "window",
                                   "left_padding", "gqa_causal",   "poison_b1"};

/* How the builder's keep set reaches SDPA: a BOOL keep mask, or additive in the q dtype with
 * -inf (excludes, clause 6) or the dtype's finite minimum (clause 11) at dropped keys. */
enum mask_kind { MK_BOOL, MK_NEG_INF, MK_FINITE_MIN };

static const struct path_row {
    enum sem sem;
    int cls;
    attnref_dtype dt;
    enum mask_kind mk;
    int keep; /* also write the mask-builder case mask.paths.<sem>.<class> */
} PATHS[] = {
    {POISON, Q1_K40, ATTNREF_F32, MK_BOOL, 0},
    {POISON, Q1_K600, ATTNREF_BF16, MK_BOOL, 1},
    {POISON, Q8_K600, ATTNREF_F16, MK_BOOL, 0},
    {POISON, Q80_K96, ATTNREF_F32, MK_BOOL, 1},
    {POISON, Q80_K96, ATTNREF_BF16, MK_NEG_INF, 0},
    {POISON, Q80_K600, ATTNREF_F16, MK_BOOL, 0},
    {POISON, Q65_K513, ATTNREF_BF16, MK_BOOL, 0},

    {FULLY_MASKED, Q1_K40, ATTNREF_F16, MK_BOOL, 0},
    {FULLY_MASKED, Q1_K600, ATTNREF_F32, MK_BOOL, 0},
    {FULLY_MASKED, Q8_K600, ATTNREF_BF16, MK_BOOL, 0},
    {FULLY_MASKED, Q80_K96, ATTNREF_F16, MK_BOOL, 0},
    {FULLY_MASKED, Q80_K600, ATTNREF_BF16, MK_BOOL, 0},
    {FULLY_MASKED, Q63_K511, ATTNREF_F32, MK_BOOL, 0},

    {WINDOWED, Q1_K40, ATTNREF_BF16, MK_BOOL, 0},
    {WINDOWED, Q1_K600, ATTNREF_F16, MK_BOOL, 1},
    {WINDOWED, Q8_K600, ATTNREF_F32, MK_BOOL, 0},
    {WINDOWED, Q80_K96, ATTNREF_F32, MK_BOOL, 1},
    {WINDOWED, Q80_K600, ATTNREF_F16, MK_BOOL, 0},
    {WINDOWED, Q63_K511, ATTNREF_BF16, MK_BOOL, 0},

    {LEFT_PADDING, Q1_K40, ATTNREF_F32, MK_BOOL, 0},
    {LEFT_PADDING, Q1_K600, ATTNREF_BF16, MK_BOOL, 1},
    {LEFT_PADDING, Q8_K600, ATTNREF_F16, MK_BOOL, 0},
    {LEFT_PADDING, Q80_K96, ATTNREF_BF16, MK_BOOL, 1},
    {LEFT_PADDING, Q80_K96, ATTNREF_F16, MK_FINITE_MIN, 0},
    {LEFT_PADDING, Q80_K600, ATTNREF_F32, MK_BOOL, 0},
    {LEFT_PADDING, Q65_K513, ATTNREF_F16, MK_BOOL, 0},

    {GQA_CAUSAL, Q1_K40, ATTNREF_F16, MK_BOOL, 0},
    {GQA_CAUSAL, Q1_K600, ATTNREF_F32, MK_BOOL, 0},
    {GQA_CAUSAL, Q8_K600, ATTNREF_BF16, MK_BOOL, 0},
    {GQA_CAUSAL, Q80_K96, ATTNREF_F32, MK_BOOL, 0},
    {GQA_CAUSAL, Q80_K600, ATTNREF_BF16, MK_BOOL, 0},
    {GQA_CAUSAL, Q63_K511, ATTNREF_F16, MK_BOOL, 0},
    {GQA_CAUSAL, Q65_K513, ATTNREF_F32, MK_BOOL, 0},

    /* Batch 1 decode over long keys with f32/f16 K/V is what selects a split-KV kernel (ggml
     * requires B = 1): poison there too, not only in the batch-2 rows above. */
    {POISON_B1, Q1_K600, ATTNREF_F16, MK_BOOL, 0},
    {POISON_B1, Q1_K600, ATTNREF_F32, MK_BOOL, 0},
};

/* Everything a row's semantic decides, from its shape class. */
typedef struct plan {
    int64_t b, hq, hkv, lq, lk, d, offset, window;
    int64_t lengths[2], left_padding[2];
    int has_lengths, has_left_padding, builder; /* builder: the mask comes from cg_builder_mask */
    char what[512];                             /* the semantic, for the description */
} plan;

static plan make_plan(const struct path_row *r)
{
    const struct shape_class *s = &CLASSES[r->cls];
    plan p = {.b = 2, .hq = 2, .hkv = 2, .lq = s->lq, .lk = s->lk, .builder = 1};
    p.d = s->lq * s->lk < 64 ? 32 : 16; /* D = Dv; 32 only where the files stay tiny */
    p.offset = s->lk - s->lq;
    switch (r->sem) {
    case POISON:
        /* Both sequences padded on the right; sequence 1 by a third of the keys, so a whole
         * split-KV chunk can lie in the padding.  Every padded K/V slot holds NaN or +-inf. */
        p.hq = p.hkv = 1; /* one head: no GQA or mask-broadcast requirement, K/V inline */
        p.has_lengths = 1;
        p.lengths[0] = s->lk - 3;
        p.lengths[1] = 2 * s->lk / 3 + 1;
        snprintf(p.what, sizeof p.what,
                 "Right padding with poison: lengths [%lld, %lld] (batch 2, causal after %lld "
                 "cached tokens); every padded key slot holds NaN or +-inf in K and V, as an "
                 "uninitialised cache would. The output must equal the clean problem: finite, "
                 "no 0 * NaN through a dense P.V.",
                 (long long)p.lengths[0], (long long)p.lengths[1], (long long)p.offset);
        break;
    case FULLY_MASKED:
        /* Sequence 1 has length 0 (every row keeps nothing); with Lq > 1 sequence 0 is also
         * left padded past the cache, so its first Lq/4 query rows are padding rows. */
        p.has_lengths = 1;
        p.lengths[0] = s->lk - 2;
        p.lengths[1] = 0;
        if (s->lq > 1) {
            p.has_left_padding = 1;
            p.left_padding[0] = p.offset + s->lq / 4;
            p.left_padding[1] = 0;
            snprintf(p.what, sizeof p.what,
                     "Fully masked rows: batch 2, lengths [%lld, 0] and left padding [%lld, 0] "
                     "(causal after %lld cached tokens). Sequence 1 keeps no key and query rows "
                     "0..%lld of sequence 0 are padding rows keeping no key: all exactly 0 (not "
                     "NaN, not the mean of V); the other rows are normal.",
                     (long long)p.lengths[0], (long long)p.left_padding[0], (long long)p.offset,
                     (long long)(s->lq / 4 - 1));
        } else {
            snprintf(p.what, sizeof p.what,
                     "Fully masked rows: batch 2, lengths [%lld, 0] (decode after %lld cached "
                     "tokens). Sequence 1 keeps no key: its rows are exactly 0 (not NaN, not the "
                     "mean of V); sequence 0 is normal.",
                     (long long)p.lengths[0], (long long)p.offset);
        }
        break;
    case WINDOWED:
        p.b = 1;
        p.window = WINDOW;
        snprintf(p.what, sizeof p.what,
                 "Sliding window W = %d, causal after %lld cached tokens: the query at "
                 "position p keeps keys p-%d..p (W keys, itself included), the rest of the "
                 "cache is masked.",
                 WINDOW, (long long)p.offset, WINDOW - 1);
        break;
    case LEFT_PADDING:
        p.has_left_padding = 1;
        p.left_padding[0] = 0;
        p.left_padding[1] = s->lk / 3;
        snprintf(p.what, sizeof p.what,
                 "Left padding [0, %lld] (batch 2), causal after %lld cached tokens: sequence 1 "
                 "keeps only keys j >= %lld%s.",
                 (long long)p.left_padding[1], (long long)p.offset, (long long)p.left_padding[1],
                 p.left_padding[1] <= p.offset ? ""
                 : r->mk == MK_BOOL
                     ? "; its query rows before that position keep no key and are exactly 0"
                     : "; its query rows before that position see only finite-minimum keys "
                       "(implementation-defined, must be finite)");
        break;
    case POISON_B1:
        /* One sequence, the last third of its keys padding: whole split-KV chunks lie in it. */
        p.b = 1;
        p.hq = p.hkv = 1;
        p.has_lengths = 1;
        p.lengths[0] = 2 * s->lk / 3 + 1;
        snprintf(p.what, sizeof p.what,
                 "Right padding with poison in a batch of one: length %lld of %lld keys (decode "
                 "after %lld cached tokens); every padded key slot holds NaN or +-inf in K and "
                 "V. The output must equal the clean problem.",
                 (long long)p.lengths[0], (long long)s->lk, (long long)p.offset);
        break;
    case GQA_CAUSAL:
        p.b = 1;
        p.hq = 4;
        p.builder = 0;
        snprintf(p.what, sizeof p.what,
                 "GQA with causal: Hq = 4, Hkv = 2 (query heads 0,1 read kv head 0, heads 2,3 kv "
                 "head 1: repeat-interleave, not tiling), causal flag bottom-right: query i keeps "
                 "keys 0..%lld+i.",
                 (long long)p.offset);
        break;
    }
    return p;
}

static const char *mask_kind_text(enum mask_kind mk)
{
    switch (mk) {
    case MK_NEG_INF:
        return "the keep mask as an additive mask in the q dtype (0 kept, -inf dropped)";
    case MK_FINITE_MIN:
        return "the keep mask as an additive mask in the q dtype (0 kept, the dtype's finite "
               "minimum dropped)";
    default: return "the mask builder's keep mask as a BOOL mask";
    }
}

/* Rewrite the BOOL keep mask in c->mask as an additive mask in dt: 0 kept, -inf dropped. */
static void to_neg_inf(acase *c, attnref_dtype dt)
{
    acase_tensor *m = &c->mask;
    double *vals = malloc((size_t)(m->numel + 1) * sizeof *vals);
    int64_t shape[4];
    if (!vals)
        abort();
    for (int64_t n = 0; n < m->numel; n++)
        vals[n] = attnref_load(m->data, m->dtype, n) != 0.0 ? 0.0 : -INFINITY;
    for (int r = 0; r < m->ndim; r++)
        shape[r] = m->shape[r];
    cg_inline(m, dt, m->ndim, shape, vals);
    free(vals);
}

/* NaN / +-inf in K and V at every padded key slot j >= lengths[b] (clause 10). */
static void poison_padding(acase *c, const plan *p)
{
    for (int64_t b = 0; b < p->b; b++)
        for (int64_t h = 0; h < p->hkv; h++)
            for (int64_t j = p->lengths[b]; j < p->lk; j++)
                for (int64_t e = 0; e < p->d; e++) {
                    const int64_t at = ((b * p->hkv + h) * p->lk + j) * p->d + e;
                    cg_poke(&c->k, at, (j + e) % 2 ? NAN : INFINITY);
                    cg_poke(&c->v, at, (j + e) % 2 ? -INFINITY : NAN);
                }
}

/* The clause ids a case cites (at most 8): for the SDPA case its semantic's own first, then
 * what its parameters bring in; for the mask-builder case only the builder's clauses. */
static int rules_of(const struct path_row *r, const plan *p, int sdpa, const char *out[8])
{
    int n = 0;
    if (sdpa) {
        static const char *const own[] = {
            "clause10.masked_slots", "clause9.fully_masked_zero",     "clause4.window_counts_self",
            "clause5.left_padding",  "clause1.gqa_repeat_interleave", "clause10.masked_slots"};
        out[n++] = own[r->sem];
    }
    const char *more[] = {
        p->window ? "clause4.window_counts_self" : NULL,
        p->has_left_padding ? "clause5.left_padding" : NULL,
        p->has_lengths ? "clause5.right_padding" : NULL,
        p->has_lengths && p->has_left_padding ? "clause5.intersection" : NULL,
        p->offset > 0 || !sdpa ? "clause3.bottom_right" : NULL,
        sdpa && p->has_left_padding && p->left_padding[1] > p->offset && r->mk == MK_BOOL
            ? "clause9.fully_masked_zero"
            : NULL,
        sdpa && r->mk == MK_NEG_INF ? "clause6.additive_adds" : NULL,
        sdpa && r->mk == MK_FINITE_MIN ? "clause11.finite_min" : NULL,
    };
    for (size_t m = 0; m < sizeof more / sizeof more[0]; m++) {
        int dup = !more[m];
        for (int k = 0; k < n && !dup; k++)
            dup = strcmp(out[k], more[m]) == 0;
        if (!dup)
            out[n++] = more[m];
    }
    return n;
}

static acase *new_case(acase_op op, const char *id, const char *desc, const struct path_row *r,
                       const plan *p)
{
    const char *rules[8];
    const int n = rules_of(r, p, op == ACASE_OP_SDPA, rules);
    acase *c = op == ACASE_OP_SDPA ? cg_sdpa(id, desc, rules[0], r->dt, p->b, p->hq, p->hkv, p->lq,
                                             p->lk, p->d, p->d, 2.0)
                                   : cg_new(op, id, desc, rules[0]);
    for (int k = 1; k < n; k++)
        cg_rule(c, rules[k]);
    return c;
}

static void path_case(cg *g, const struct path_row *r)
{
    const struct shape_class *s = &CLASSES[r->cls];
    const plan p = make_plan(r);
    const int64_t *lengths = p.has_lengths ? p.lengths : NULL;
    const int64_t *left_padding = p.has_left_padding ? p.left_padding : NULL;
    char id[128], desc[1536];
    const char *variant = r->mk == MK_NEG_INF      ? "_neg_inf"
                          : r->mk == MK_FINITE_MIN ? "_additive"
                                                   : "";
    snprintf(id, sizeof id, "sdpa.paths.%s%s.%s.%s", SEMS[r->sem], variant, s->name,
             attnref_dtype_name(r->dt));
    snprintf(desc, sizeof desc,
             "Shape class %s: %s. %s q (%lld,%lld,%lld,%lld), k/v (%lld,%lld,%lld,%lld), %s; "
             "mask: %s.",
             s->name, s->what, p.what, (long long)p.b, (long long)p.hq, (long long)p.lq,
             (long long)p.d, (long long)p.b, (long long)p.hkv, (long long)p.lk, (long long)p.d,
             attnref_dtype_name(r->dt), p.builder ? mask_kind_text(r->mk) : "none (causal flag)");
    acase *c = new_case(ACASE_OP_SDPA, id, desc, r, &p);
    if (p.builder) {
        cg_builder_mask(c, r->mk == MK_FINITE_MIN ? r->dt : ATTNREF_BOOL, p.lq, p.offset, p.window,
                        p.b, lengths, left_padding);
        if (r->mk == MK_NEG_INF)
            to_neg_inf(c, r->dt);
    } else {
        c->causal = 1;
    }
    if (r->sem == POISON || r->sem == POISON_B1)
        poison_padding(c, &p);
    cg_emit(g, c);

    if (!r->keep)
        return;
    /* The builder call behind this case, as a mask-builder case (compared exactly). */
    snprintf(id, sizeof id, "mask.paths.%s.%s", SEMS[r->sem], s->name);
    snprintf(desc, sizeof desc,
             "Shape class %s: %s. The mask-builder call behind sdpa.paths.%s.%s.%s, keep mask "
             "(%lld,1,%lld,%lld). %s",
             s->name, s->what, SEMS[r->sem], s->name, attnref_dtype_name(r->dt),
             (long long)(lengths || left_padding ? p.b : 1), (long long)p.lq, (long long)p.lk,
             p.what);
    acase *m = new_case(ACASE_OP_MASK, id, desc, r, &p);
    m->lq = p.lq;
    m->offset = p.offset;
    m->window = p.window;
    m->batch = lengths || left_padding ? p.b : 0;
    if (lengths || left_padding) {
        m->lengths = lengths ? malloc(2 * sizeof *m->lengths) : NULL;
        m->left_padding = left_padding ? malloc(2 * sizeof *m->left_padding) : NULL;
        if ((lengths && !m->lengths) || (left_padding && !m->left_padding))
            abort();
        if (lengths)
            memcpy(m->lengths, lengths, 2 * sizeof *m->lengths);
        if (left_padding)
            memcpy(m->left_padding, left_padding, 2 * sizeof *m->left_padding);
    }
    cg_emit(g, m);
}

void fam_paths(cg *g)
{
    for (size_t n = 0; n < sizeof PATHS / sizeof PATHS[0]; n++)
        path_case(g, &PATHS[n]);
}
