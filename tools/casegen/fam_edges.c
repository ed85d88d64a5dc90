/* fam_edges.c — sdpa.edges.* and mask.edges.*: the boundary values of cases/EDGES.md that no
 * other family poses in two dtypes (issue 20's boundary-value analysis; tools/edge-table finds
 * the empty cells, ctest cases.edge_table keeps them closed).
 *
 * One table row per edge: the smallest call that sits on it, in the two dtypes it names. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnref/status.h"
#include "casegen.h"

enum { F32 = 1, F16 = 2, BF16 = 4 };

typedef struct ecase {
    const char *stem, *what, *rule;
    unsigned dts;
    int64_t b, hq, hkv, lq, lk, d, dv;
    int causal, has_off;
    int64_t off, window;
    int has_scale;
    double scale;
    int nlen, nlp;
    int64_t lengths[2], left_padding[2];
    int64_t kb; /* != 0: k's batch extent differs from q's */
    int error;
} ecase;

#define SHAPE(b, hq, hkv, lq, lk, d, dv) b, hq, hkv, lq, lk, d, dv
static const ecase EDGES[] = {
    {"lq0", "Lq = 0: an empty output (B, Hq, 0, Dv), nothing to compute and nothing to write",
     "clause1.gqa_repeat_interleave", F32 | F16, SHAPE(1, 2, 1, 0, 5, 8, 8), .causal = 1},
    {"lk0", "Lk = 0: every row keeps no key and is exactly 0", "clause9.fully_masked_zero",
     F16 | BF16, SHAPE(1, 2, 2, 3, 0, 8, 8), .causal = 0},
    {"offset_negative",
     "An explicit causal offset of -2: rows 0 and 1 keep nothing (0), row i "
     "keeps keys 0..i-2",
     "clause3.explicit_offset", F16 | BF16, SHAPE(1, 2, 1, 5, 6, 8, 8), .causal = 1, .has_off = 1,
     .off = -2},
    {"offset_past_lk", "An explicit causal offset of 9 past Lk = 6: every key is visible",
     "clause3.explicit_offset", F16 | BF16, SHAPE(1, 2, 1, 3, 6, 8, 8), .causal = 1, .has_off = 1,
     .off = 9},
    {"window1", "Window 1: each query keeps only its own key", "clause19.window", F32 | BF16,
     SHAPE(1, 2, 1, 5, 9, 16, 16), .causal = 1, .window = 1},
    {"window_ge_lk", "Window 40 over 17 keys: the plain causal mask", "clause19.window", F32 | F16,
     SHAPE(1, 2, 2, 4, 17, 16, 16), .causal = 1, .window = 40},
    {"scale0",
     "An explicit scale of 0: every kept weight is equal, the output is the mean of "
     "the kept V",
     "clause2.zero_is_zero", F16 | BF16, SHAPE(1, 2, 1, 3, 7, 8, 8), .causal = 1, .has_scale = 1,
     .scale = 0.0},
    {"invalid.window_negative", "Window -1 must be rejected", "clause19.invalid", F16 | BF16,
     SHAPE(1, 1, 1, 2, 3, 4, 4), .causal = 1, .window = -1, .error = ATTNREF_EINVAL},
    {"invalid.window_without_causal", "A window without causal must be rejected",
     "clause19.invalid", F16 | BF16, SHAPE(1, 1, 1, 2, 3, 4, 4), .window = 2,
     .error = ATTNREF_EINVAL},
    {"invalid.lengths_negative", "lengths [-1] must be rejected", "clause19.invalid", F16 | BF16,
     SHAPE(1, 1, 1, 1, 3, 4, 4), .causal = 1, .nlen = 1, .lengths = {-1}, .error = ATTNREF_EINVAL},
    {"invalid.lengths_over_lk", "lengths [Lk + 1] must be rejected", "clause19.invalid", F16 | BF16,
     SHAPE(1, 1, 1, 1, 3, 4, 4), .causal = 1, .nlen = 1, .lengths = {4}, .error = ATTNREF_EINVAL},
    {"invalid.left_padding_negative", "left_padding [-1] must be rejected", "clause19.invalid",
     F16 | BF16, SHAPE(1, 1, 1, 1, 3, 4, 4), .causal = 1, .nlp = 1, .left_padding = {-1},
     .error = ATTNREF_EINVAL},
    {"invalid.left_padding_over_lk", "left_padding [Lk + 1] must be rejected", "clause19.invalid",
     F16 | BF16, SHAPE(1, 1, 1, 1, 3, 4, 4), .causal = 1, .nlp = 1, .left_padding = {4},
     .error = ATTNREF_EINVAL},
    {"invalid.scale_nan", "A NaN scale must be rejected", "clause2.range", F32 | BF16,
     SHAPE(1, 1, 1, 1, 3, 4, 4), .has_scale = 1, .scale = NAN, .error = ATTNREF_EINVAL},
    {"invalid.scale_inf", "An infinite scale must be rejected", "clause2.range", F32 | F16,
     SHAPE(1, 1, 1, 1, 3, 4, 4), .has_scale = 1, .scale = -INFINITY, .error = ATTNREF_EINVAL},
    {"invalid.batch_mismatch",
     "q with B = 2 and k, v with B = 1 must be rejected (no implicit "
     "batch broadcast)",
     "clause1.shapes", F32 | BF16, SHAPE(2, 1, 1, 1, 3, 4, 4), .kb = 1, .error = ATTNREF_EINVAL},
    {"invalid.head_dim0", "D = 0 must be rejected", "clause1.shapes", F32 | F16,
     SHAPE(1, 1, 1, 1, 3, 0, 4), .error = ATTNREF_EINVAL},
};
#undef SHAPE

static void edge_case(cg *g, const ecase *s, attnref_dtype dt)
{
    char id[ACASE_ID_MAX], stem[ACASE_ID_MAX], desc[512];
    snprintf(stem, sizeof stem, "sdpa.edges.%s", s->stem);
    cg_id_dt(id, sizeof id, stem, dt);
    snprintf(desc, sizeof desc, "%s (boundary value, cases/EDGES.md).", s->what);
    acase *c = cg_sdpa(id, desc, s->rule, dt, s->b, s->hq, s->hkv, s->lq, s->lk, s->d, s->dv, 1.0);
    if (s->kb) {
        cg_gen4(c, &c->k, "k", dt, s->kb, s->hkv, s->lk, s->d, -1.0, 1.0);
        cg_gen4(c, &c->v, "v", dt, s->kb, s->hkv, s->lk, s->dv, -1.0, 1.0);
    }
    c->causal = s->causal;
    c->has_causal_offset = s->has_off;
    c->causal_offset = s->off;
    c->window = s->window;
    c->has_scale = s->has_scale;
    c->scale = s->scale;
    c->batch = s->b;
    if (s->nlen) {
        c->lengths = malloc(sizeof *c->lengths * (size_t)s->nlen);
        if (!c->lengths)
            abort();
        memcpy(c->lengths, s->lengths, sizeof *c->lengths * (size_t)s->nlen);
    }
    if (s->nlp) {
        c->left_padding = malloc(sizeof *c->left_padding * (size_t)s->nlp);
        if (!c->left_padding)
            abort();
        memcpy(c->left_padding, s->left_padding, sizeof *c->left_padding * (size_t)s->nlp);
    }
    if (s->error)
        cg_expect_error(c, s->error);
    cg_emit(g, c);
}

void fam_edges(cg *g)
{
    for (size_t n = 0; n < sizeof EDGES / sizeof EDGES[0]; n++)
        for (int d = 0; d < 3; d++)
            if (EDGES[n].dts & (1u << d))
                edge_case(g, &EDGES[n], CG_DTYPES[d]);
    /* The mask builder with lq = 0: an empty (1, 1, 0, offset) keep mask. */
    acase *c = cg_new(ACASE_OP_MASK, "mask.edges.lq0",
                      "The mask builder with lq = 0 after 5 cached tokens: an empty (1, 1, 0, 5) "
                      "keep mask (boundary value, cases/EDGES.md).",
                      "clause3.bottom_right");
    c->lq = 0;
    c->offset = 5;
    cg_emit(g, c);
}
