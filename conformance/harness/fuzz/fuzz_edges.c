/* fuzz_edges.c — the boundary values of cases/EDGES.md as generators for `attnconf fuzz`.
 *
 * Each drawable row of the edge table (tools/edge-table) has one generator here, under the
 * row's id.  hf_draw_edge draws a call as usual and runs the generator at four points
 * (HF_PHASE_*): it chooses terms, sets extents (the axes it sets are kept when the call is
 * refitted into the fuzzer's budget), sets parameters and the mask's form, and finally values.
 * The rest of the call stays the uniform draw, so an edge meets every other feature.
 *
 * The two lists cannot drift apart: ctest cases.edge_table_fuzz fails when a drawable row has
 * no generator or a generator names an id the table does not have, and harness.fuzz.edges_posed
 * evaluates the table's own predicate on the case of every call drawn with `--draw edges`.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attnconf/backend.h"
#include "attnref/dtype.h"
#include "fuzz.h"

#define PICK(x, arr) ((arr)[hf_below((x)->rng, sizeof(arr) / sizeof((arr)[0]))])
#define AT(ph) (x->phase == HF_PHASE_##ph)
/* Either mask kind will do (hf_edge_usable reads these two bits as "one of"). */
#define ANY_MASK (ATTNCONF_CAP_MASK_BOOL | ATTNCONF_CAP_MASK_ADD)

/* The extents every tile-size edge picks from: the tiles kernels branch on and their
 * neighbours (tools/edge-table's TILES). */
static const int64_t near_tiles[] = {15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129};

/* ---- shared steps ------------------------------------------------------------------------ */

static void no_mask(hf_call *c)
{
    c->mask_kind = HF_MASK_NONE;
    c->mask_ndim = 0;
    memset(c->mshape, 0, sizeof c->mshape);
}

/* Causal with the default offset and no window (a causal call carries no mask tensor). */
static void set_causal(hf_call *c)
{
    c->causal = 1;
    c->has_offset = 0;
    c->offset = 0;
    c->window = 0;
    no_mask(c);
}

/* A full-shape mask tensor of `kind` (or of the other kind when the backend lacks it), not
 * causal: the rank-4 (B, Hq, Lq, Lk) extents, which the edge then narrows. */
static void set_mask(hf_edge_ctx *x, int kind)
{
    hf_call *c = x->c;
    if (kind == HF_MASK_ADD && !(x->caps & ATTNCONF_CAP_MASK_ADD))
        kind = HF_MASK_BOOL;
    if (kind == HF_MASK_BOOL && !(x->caps & ATTNCONF_CAP_MASK_BOOL))
        kind = HF_MASK_ADD;
    c->causal = 0;
    c->has_offset = 0;
    c->offset = 0;
    c->window = 0;
    c->mask_kind = kind;
    c->mask_dt = kind == HF_MASK_BOOL ? ATTNREF_BOOL : c->dt;
    const int64_t full[4] = {c->B, c->Hq, c->Lq, c->Lk};
    memcpy(c->mshape, full, sizeof full);
    c->mask_ndim = 4;
}

/* Either kind, by the edge's stream. */
static void set_any_mask(hf_edge_ctx *x)
{
    set_mask(x, hf_below(x->rng, 2) ? HF_MASK_ADD : HF_MASK_BOOL);
}

/* The lengths or left padding array, made when the uniform draw gave none: every row Lk
 * (lengths) or 0 (padding), i.e. no effect, until the edge sets one row. */
static int ensure_ids(hf_call *c, int64_t **a, int64_t fill)
{
    if (*a)
        return 0;
    if (!(*a = malloc((size_t)(c->B > 0 ? c->B : 1) * sizeof **a)))
        return -1;
    for (int64_t b = 0; b < c->B; b++)
        (*a)[b] = fill;
    return 0;
}

/* Set D (and Dv with it unless the call already had Dv != D). */
static int set_d(hf_call *c, int64_t d)
{
    if (c->Dv == c->D)
        c->Dv = d;
    c->D = d;
    return HF_FIX_D;
}

/* Heads Hq over Hkv. */
static int set_heads(hf_call *c, int64_t hq, int64_t hkv)
{
    c->Hq = hq;
    c->Hkv = hkv;
    return HF_FIX_HEADS;
}

/* At least one query and one key (a mask value needs an element to live in). */
static void some_rows(hf_call *c)
{
    if (c->Lq < 1)
        c->Lq = 1;
    if (c->Lk < 1)
        c->Lk = 1;
}

/* A near-tile count 1 < n < Lk (Lk >= 18 by the shape phase). */
static int64_t tile_below(hf_edge_ctx *x, int64_t lk, int64_t lo)
{
    for (;;) {
        int64_t n = PICK(x, near_tiles);
        if (n > lo && n < lk)
            return n;
    }
}

/* ---- dimensions ---------------------------------------------------------------------------- */

static int e_b1(hf_edge_ctx *x)
{
    return AT(SHAPES) ? (x->c->B = 1, HF_FIX_B) : 0;
}
static int e_b2(hf_edge_ctx *x)
{
    return AT(SHAPES) ? (x->c->B = 2, HF_FIX_B) : 0;
}
static int e_b3(hf_edge_ctx *x)
{
    return AT(SHAPES) ? (x->c->B = 3 + (int64_t)hf_below(x->rng, 2), HF_FIX_B) : 0;
}
static int e_ratio1(hf_edge_ctx *x)
{
    if (!AT(SHAPES))
        return 0;
    const int64_t h = PICK(x, ((const int64_t[]){1, 2, 3, 4}));
    return set_heads(x->c, h, h);
}
static int e_ratio2(hf_edge_ctx *x)
{
    if (!AT(SHAPES))
        return 0;
    const int64_t h = PICK(x, ((const int64_t[]){1, 2, 3}));
    return set_heads(x->c, 2 * h, h);
}
static int e_ratio_odd(hf_edge_ctx *x)
{
    if (!AT(SHAPES))
        return 0;
    const int64_t h = PICK(x, ((const int64_t[]){1, 2}));
    return set_heads(x->c, h * PICK(x, ((const int64_t[]){3, 5, 6, 7, 9, 12})), h);
}
static int e_mqa(hf_edge_ctx *x)
{
    return AT(SHAPES) ? set_heads(x->c, PICK(x, ((const int64_t[]){8, 9, 12, 16})), 1) : 0;
}
static int e_hq1(hf_edge_ctx *x)
{
    return AT(SHAPES) ? set_heads(x->c, 1, 1) : 0;
}
static int e_hq_odd(hf_edge_ctx *x)
{
    if (!AT(SHAPES))
        return 0;
    const int64_t hq = PICK(x, ((const int64_t[]){3, 5, 6, 7, 12}));
    return set_heads(x->c, hq, (x->caps & ATTNCONF_CAP_GQA) && hf_below(x->rng, 2) ? 1 : hq);
}
static int e_lq0(hf_edge_ctx *x)
{
    return AT(SHAPES) ? (x->c->Lq = 0, HF_FIX_LQ) : 0;
}
static int e_lq1(hf_edge_ctx *x)
{
    return AT(SHAPES) ? (x->c->Lq = 1, HF_FIX_LQ) : 0;
}
static int e_lq_tile(hf_edge_ctx *x)
{
    return AT(SHAPES) ? (x->c->Lq = PICK(x, near_tiles), HF_FIX_LQ) : 0;
}
static int e_lq_gt_lk(hf_edge_ctx *x)
{
    if (!AT(SHAPES))
        return 0;
    x->c->Lk = (int64_t)hf_below(x->rng, 9);
    x->c->Lq = x->c->Lk + 1 + (int64_t)hf_below(x->rng, 8);
    return HF_FIX_LQ | HF_FIX_LK;
}
static int e_lk0(hf_edge_ctx *x)
{
    return AT(SHAPES) ? (x->c->Lk = 0, HF_FIX_LK) : 0;
}
static int e_lk1(hf_edge_ctx *x)
{
    return AT(SHAPES) ? (x->c->Lk = 1, HF_FIX_LK) : 0;
}
static int e_lk_tile(hf_edge_ctx *x)
{
    return AT(SHAPES)
               ? (x->c->Lk = PICK(x, ((const int64_t[]){16, 32, 64, 128, 256, 512})), HF_FIX_LK)
               : 0;
}
static int e_lk_tile_plus1(hf_edge_ctx *x)
{
    return AT(SHAPES)
               ? (x->c->Lk = PICK(x, ((const int64_t[]){17, 33, 65, 129, 257, 513})), HF_FIX_LK)
               : 0;
}
static int e_lk_tile_minus1(hf_edge_ctx *x)
{
    return AT(SHAPES)
               ? (x->c->Lk = PICK(x, ((const int64_t[]){15, 31, 63, 127, 255, 511})), HF_FIX_LK)
               : 0;
}
static int e_lk_long(hf_edge_ctx *x)
{
    return AT(SHAPES) ? (x->c->Lk = 513 + (int64_t)hf_below(x->rng, 400), HF_FIX_LK) : 0;
}
static int e_d1(hf_edge_ctx *x)
{
    return AT(SHAPES) ? set_d(x->c, 1) : 0;
}
static int e_d_odd(hf_edge_ctx *x)
{
    return AT(SHAPES) ? set_d(x->c, PICK(x, ((const int64_t[]){3, 5, 7, 12, 20, 33, 100}))) : 0;
}
static int e_d_64_128(hf_edge_ctx *x)
{
    return AT(SHAPES) ? set_d(x->c, PICK(x, ((const int64_t[]){64, 128}))) : 0;
}
static int e_d_256(hf_edge_ctx *x)
{
    return AT(SHAPES) ? set_d(x->c, PICK(x, ((const int64_t[]){256, 320}))) : 0;
}
static int e_dv_lt_d(hf_edge_ctx *x)
{
    if (!AT(SHAPES))
        return 0;
    x->c->D = PICK(x, ((const int64_t[]){2, 8, 16, 64}));
    x->c->Dv = 1 + (int64_t)hf_below(x->rng, (uint64_t)x->c->D - 1);
    return HF_FIX_D;
}
static int e_dv_gt_d(hf_edge_ctx *x)
{
    if (!AT(SHAPES))
        return 0;
    x->c->D = PICK(x, ((const int64_t[]){1, 4, 8, 16}));
    x->c->Dv = x->c->D + 1 + (int64_t)hf_below(x->rng, 32);
    return HF_FIX_D;
}
static int e_mla(hf_edge_ctx *x)
{
    if (!AT(SHAPES))
        return 0;
    x->c->D = 576;
    x->c->Dv = 512;
    return HF_FIX_D;
}

/* ---- strides ------------------------------------------------------------------------------- */

static int e_blhd(hf_edge_ctx *x)
{
    if (AT(PARAMS))
        x->c->layout[hf_below(x->rng, 3)] = ACASE_LAYOUT_BLHD;
    return 0;
}
/* K and V share one slice along the batch (bit 0) or head (bit 1) axis. */
static int stride0(hf_edge_ctx *x, uint8_t bit)
{
    hf_call *c = x->c;
    if (AT(SHAPES) && bit == 1 && c->B < 2)
        return c->B = 2, HF_FIX_B;
    if (AT(SHAPES) && bit == 2 && c->Hkv < 2)
        return set_heads(c, (x->caps & ATTNCONF_CAP_GQA) ? 4 : 2, 2);
    if (AT(VALUES)) {
        c->stride0[1] |= bit;
        c->stride0[2] |= bit;
        hf_make_stride0(c->k, c->B, c->Hkv, c->Lk, c->D, c->stride0[1]);
        hf_make_stride0(c->v, c->B, c->Hkv, c->Lk, c->Dv, c->stride0[2]);
    }
    return 0;
}
static int e_stride0_batch(hf_edge_ctx *x)
{
    return stride0(x, 1);
}
static int e_stride0_head(hf_edge_ctx *x)
{
    return stride0(x, 2);
}

/* ---- causal offset and window ---------------------------------------------------------------- */

static int e_offset_default(hf_edge_ctx *x)
{
    hf_call *c = x->c;
    if (AT(SHAPES) && !(c->Lq < c->Lk)) {
        if (c->Lk < 2)
            c->Lk = 2 + (int64_t)hf_below(x->rng, 30);
        c->Lq = 1 + (int64_t)hf_below(x->rng, (uint64_t)c->Lk - 1);
        return HF_FIX_LQ | HF_FIX_LK;
    }
    if (AT(PARAMS))
        set_causal(c);
    return 0;
}
static int offset(hf_edge_ctx *x, int64_t off)
{
    if (AT(PARAMS)) {
        set_causal(x->c);
        x->c->has_offset = 1;
        x->c->offset = off;
    }
    return 0;
}
static int e_offset0(hf_edge_ctx *x)
{
    return offset(x, 0);
}
static int e_offset_neg(hf_edge_ctx *x)
{
    return offset(x, -1 - (int64_t)hf_below(x->rng, 3));
}
static int e_offset_past(hf_edge_ctx *x)
{
    return offset(x, x->c->Lk + (int64_t)hf_below(x->rng, 3));
}
static int window(hf_edge_ctx *x, int64_t w)
{
    if (AT(PARAMS)) {
        set_causal(x->c);
        x->c->window = w;
    }
    return 0;
}
static int e_window1(hf_edge_ctx *x)
{
    return window(x, 1);
}
static int e_window_tile(hf_edge_ctx *x)
{
    return window(x, PICK(x, near_tiles));
}
static int e_window_ge_lk(hf_edge_ctx *x)
{
    return window(x, (x->c->Lk > 1 ? x->c->Lk : 1) + (int64_t)hf_below(x->rng, 3));
}

/* ---- lengths and left padding --------------------------------------------------------------- */

/* One row's entry of lengths (which = 0) or left padding (1) set to v; the other rows keep
 * the uniform draw. */
static int one_row(hf_edge_ctx *x, int which, int64_t v)
{
    hf_call *c = x->c;
    int64_t **a = which ? &c->left_padding : &c->lengths;
    if (c->B < 1 || ensure_ids(c, a, which ? 0 : c->Lk) != 0)
        return -1;
    (*a)[hf_below(x->rng, (uint64_t)c->B)] = v;
    return 0;
}
/* Lk >= 18, so a near-tile count fits inside it. */
static int long_enough(hf_edge_ctx *x)
{
    if (x->c->Lk >= 18)
        return 0;
    x->c->Lk = 18 + (int64_t)hf_below(x->rng, 120);
    return HF_FIX_LK;
}
static int e_len0(hf_edge_ctx *x)
{
    return AT(PARAMS) ? one_row(x, 0, 0) : 0;
}
static int e_len1(hf_edge_ctx *x)
{
    if (AT(SHAPES) && x->c->Lk < 1)
        return x->c->Lk = 1 + (int64_t)hf_below(x->rng, 8), HF_FIX_LK;
    return AT(PARAMS) ? one_row(x, 0, 1) : 0;
}
static int e_len_lk(hf_edge_ctx *x)
{
    return AT(PARAMS) ? one_row(x, 0, x->c->Lk) : 0;
}
static int e_len_tile(hf_edge_ctx *x)
{
    if (AT(SHAPES))
        return long_enough(x);
    return AT(PARAMS) ? one_row(x, 0, tile_below(x, x->c->Lk, 1)) : 0;
}
static int e_lp_lk(hf_edge_ctx *x)
{
    return AT(PARAMS) ? one_row(x, 1, x->c->Lk) : 0;
}
static int e_lp_tile(hf_edge_ctx *x)
{
    if (AT(SHAPES))
        return long_enough(x);
    return AT(PARAMS) ? one_row(x, 1, tile_below(x, x->c->Lk, 0)) : 0;
}

/* ---- scale ------------------------------------------------------------------------------------ */

static int scale(hf_edge_ctx *x, double s)
{
    if (AT(PARAMS)) {
        x->c->has_scale = 1;
        x->c->scale = s;
    }
    return 0;
}
static int e_scale0(hf_edge_ctx *x)
{
    return scale(x, 0.0);
}
static int e_scale_neg(hf_edge_ctx *x)
{
    return scale(x, -PICK(x, ((const double[]){0.125, 0.5, 1.0, 2.0})));
}
static int e_scale_subnormal(hf_edge_ctx *x)
{
    return scale(x, 0x1p-149); /* the smallest f32 subnormal */
}
static int e_scale_max(hf_edge_ctx *x)
{
    return scale(x, hf_below(x->rng, 2) ? 0x1.fffffep127 : -0x1.fffffep127); /* +-FLT_MAX */
}
static int e_scale_overflow(hf_edge_ctx *x)
{
    /* f32 values below FLT_MAX whose scaled scores leave the f32 range */
    return scale(x, hf_in_dtype(PICK(x, ((const double[]){1e37, 1e38, 3e38})), ATTNREF_F32));
}

/* ---- masks ------------------------------------------------------------------------------------ */

/* A mask of rank r: the trailing r extents of the full shape, the leading ones 1. */
static int mask_rank(hf_edge_ctx *x, int r)
{
    if (AT(PARAMS)) {
        set_any_mask(x);
        for (int d = 0; d < 4 - r; d++)
            x->c->mshape[d] = 1;
        x->c->mask_ndim = r;
    }
    return 0;
}
static int e_rank0(hf_edge_ctx *x)
{
    return mask_rank(x, 0);
}
static int e_rank1(hf_edge_ctx *x)
{
    return mask_rank(x, 1);
}
static int e_rank2(hf_edge_ctx *x)
{
    return mask_rank(x, 2);
}
static int e_rank3(hf_edge_ctx *x)
{
    return mask_rank(x, 3);
}
/* A rank-4 mask of extent 1 on axis `ax` (B, Hq, Lq) where that axis has more than one. */
static int mask_bcast(hf_edge_ctx *x, int ax)
{
    hf_call *c = x->c;
    if (AT(SHAPES)) {
        if (ax == 0 && c->B < 2)
            return c->B = 2, HF_FIX_B;
        if (ax == 1 && c->Hq < 2)
            return set_heads(c, 2, (x->caps & ATTNCONF_CAP_GQA) ? 1 : 2);
        if (ax == 2 && c->Lq < 2)
            return c->Lq = 2 + (int64_t)hf_below(x->rng, 8), HF_FIX_LQ;
    }
    if (AT(PARAMS)) {
        set_any_mask(x);
        c->mshape[ax] = 1;
    }
    return 0;
}
static int e_bcast_batch(hf_edge_ctx *x)
{
    return mask_bcast(x, 0);
}
static int e_bcast_head(hf_edge_ctx *x)
{
    return mask_bcast(x, 1);
}
static int e_bcast_query(hf_edge_ctx *x)
{
    return mask_bcast(x, 2);
}
static int e_mask_gqa(hf_edge_ctx *x)
{
    if (AT(SHAPES)) {
        const int64_t h = PICK(x, ((const int64_t[]){1, 2}));
        return set_heads(x->c, h * PICK(x, ((const int64_t[]){2, 3, 4})), h);
    }
    if (AT(PARAMS))
        set_any_mask(x); /* full extents: one mask row per query head */
    return 0;
}
/* One mask element set to v (a bool byte or an additive value of the mask's dtype). */
static int mask_value(hf_edge_ctx *x, int kind, double v)
{
    hf_call *c = x->c;
    if (AT(SHAPES))
        some_rows(c);
    if (AT(PARAMS))
        set_mask(x, kind);
    if (AT(VALUES)) {
        const int64_t n = c->mshape[0] * c->mshape[1] * c->mshape[2] * c->mshape[3];
        if (n > 0)
            c->mask[hf_below(x->rng, (uint64_t)n)] = v;
    }
    return 0;
}
static int e_bool_byte(hf_edge_ctx *x)
{
    return mask_value(x, HF_MASK_BOOL, PICK(x, ((const double[]){2.0, 255.0})));
}
static int e_neg_inf(hf_edge_ctx *x)
{
    return mask_value(x, HF_MASK_ADD, -INFINITY);
}
static int e_finite_min(hf_edge_ctx *x)
{
    return mask_value(x, HF_MASK_ADD, attnref_dtype_finite_min(x->c->dt));
}
static int e_positive(hf_edge_ctx *x)
{
    return mask_value(x, HF_MASK_ADD, hf_in_dtype(0.5 + 3.0 * hf_unit(x->rng), x->c->dt));
}

/* ---- terms of current models (clauses 20-22) ---------------------------------------------------- */

static int e_softcap_small(hf_edge_ctx *x)
{
    if (AT(TERMS))
        x->t->softcap = 1;
    if (AT(VALUES))
        x->c->softcap = PICK(x, ((const double[]){2.0, 5.0, 20.0}));
    return 0;
}
static int e_alibi_odd_heads(hf_edge_ctx *x)
{
    if (AT(TERMS))
        x->t->alibi = 1;
    return e_hq_odd(x);
}
static int e_alibi_no_causal(hf_edge_ctx *x)
{
    if (AT(TERMS)) {
        x->t->alibi = 1;
        x->t->chunk = x->t->blocks = 0; /* both need causal */
    }
    if (AT(PARAMS)) {
        x->c->causal = 0;
        x->c->has_offset = 0;
        x->c->window = 0;
    }
    return 0;
}
static int e_sink_empty_row(hf_edge_ctx *x)
{
    if (AT(TERMS))
        x->t->sinks = 1;
    if (AT(SHAPES)) {
        x->c->Lk = (int64_t)hf_below(x->rng, 6);
        x->c->Lq = x->c->Lk + 1 + (int64_t)hf_below(x->rng, 6);
        return HF_FIX_LQ | HF_FIX_LK;
    }
    if (AT(PARAMS))
        set_causal(x->c); /* bottom-right: the first Lq - Lk rows keep no key */
    return 0;
}
static int e_sink_dominant(hf_edge_ctx *x)
{
    if (AT(TERMS))
        x->t->sinks = 1;
    if (AT(VALUES) && x->c->sinks)
        for (int64_t h = 0; h < x->c->Hq; h++)
            x->c->sinks[h] = hf_in_dtype(8.0 + 8.0 * hf_unit(x->rng), ATTNREF_BF16);
    return 0;
}
static int e_chunk1(hf_edge_ctx *x)
{
    if (AT(TERMS))
        x->t->chunk = 1;
    if (AT(PARAMS))
        set_causal(x->c);
    if (AT(VALUES))
        x->c->chunk = 1;
    return 0;
}
static int e_chunk_off_grid(hf_edge_ctx *x)
{
    hf_call *c = x->c;
    if (AT(TERMS))
        x->t->chunk = 1;
    if (AT(SHAPES) && c->Lk < 4)
        return c->Lk = 4 + (int64_t)hf_below(x->rng, 30), HF_FIX_LK;
    if (AT(PARAMS))
        set_causal(c);
    if (AT(VALUES)) {
        c->chunk = PICK(x, ((const int64_t[]){2, 3, 8}));
        const int64_t top = c->chunk - 1 < c->Lk ? c->chunk - 1 : c->Lk;
        return one_row(x, 1, 1 + (int64_t)hf_below(x->rng, (uint64_t)top));
    }
    return 0;
}
static int e_doc_one_token(hf_edge_ctx *x)
{
    hf_call *c = x->c;
    if (AT(TERMS))
        x->t->segments = 1;
    if (AT(SHAPES) && c->Lk < 1)
        return c->Lk = 1 + (int64_t)hf_below(x->rng, 16), HF_FIX_LK;
    if (AT(VALUES) && c->segment_ids)
        c->segment_ids[hf_below(x->rng, (uint64_t)(c->B * c->Lk))] = 1000; /* ids drawn < Lk + 3 */
    return 0;
}
static int e_block_window(hf_edge_ctx *x)
{
    hf_call *c = x->c;
    if (AT(TERMS))
        x->t->blocks = 1;
    if (AT(SHAPES) && c->Lk < 2)
        return c->Lk = 2 + (int64_t)hf_below(x->rng, 30), HF_FIX_LK;
    if (AT(PARAMS)) {
        set_causal(c);
        c->window = 1 + (int64_t)hf_below(x->rng, 4);
    }
    return 0;
}

/* ---- the table ----------------------------------------------------------------------------------- */

#define C(bit) ATTNCONF_CAP_##bit
const hf_edge hf_edges[] = {
    {"b.1", 0, e_b1},
    {"b.2", 0, e_b2},
    {"b.ge3", 0, e_b3},
    {"ratio.1", 0, e_ratio1},
    {"ratio.2", C(GQA), e_ratio2},
    {"ratio.not_pow2", C(GQA), e_ratio_odd},
    {"ratio.mqa", C(GQA), e_mqa},
    {"hq.1", 0, e_hq1},
    {"hq.not_pow2", 0, e_hq_odd},
    {"lq.0", 0, e_lq0},
    {"lq.1", 0, e_lq1},
    {"lq.near_tile", 0, e_lq_tile},
    {"lq.gt_lk", 0, e_lq_gt_lk},
    {"lk.0", 0, e_lk0},
    {"lk.1", 0, e_lk1},
    {"lk.tile", 0, e_lk_tile},
    {"lk.tile_plus1", 0, e_lk_tile_plus1},
    {"lk.tile_minus1", 0, e_lk_tile_minus1},
    {"lk.gt512", 0, e_lk_long},
    {"d.1", 0, e_d1},
    {"d.not_mult8", 0, e_d_odd},
    {"d.64_128", 0, e_d_64_128},
    {"d.ge256", 0, e_d_256},
    {"dv.lt_d", C(DV_NE_D), e_dv_lt_d},
    {"dv.gt_d", C(DV_NE_D), e_dv_gt_d},
    {"dv.mla", C(DV_NE_D), e_mla},
    {"strides.blhd", C(STRIDED), e_blhd},
    {"strides.stride0_batch", C(STRIDE0), e_stride0_batch},
    {"strides.stride0_head", C(STRIDE0), e_stride0_head},
    {"offset.default", C(CAUSAL), e_offset_default},
    {"offset.0", C(CAUSAL) | C(CAUSAL_OFFSET), e_offset0},
    {"offset.negative", C(CAUSAL) | C(CAUSAL_OFFSET), e_offset_neg},
    {"offset.past_lk", C(CAUSAL) | C(CAUSAL_OFFSET), e_offset_past},
    {"window.1", C(CAUSAL) | C(SDPA_WINDOW), e_window1},
    {"window.near_tile", C(CAUSAL) | C(SDPA_WINDOW), e_window_tile},
    {"window.ge_lk", C(CAUSAL) | C(SDPA_WINDOW), e_window_ge_lk},
    {"lengths.0", C(SDPA_LENGTHS), e_len0},
    {"lengths.1", C(SDPA_LENGTHS), e_len1},
    {"lengths.lk", C(SDPA_LENGTHS), e_len_lk},
    {"lengths.near_tile", C(SDPA_LENGTHS), e_len_tile},
    {"left_padding.lk", C(SDPA_LEFT_PAD), e_lp_lk},
    {"left_padding.near_tile", C(SDPA_LEFT_PAD), e_lp_tile},
    {"scale.0", C(SCALE), e_scale0},
    {"scale.negative", C(SCALE), e_scale_neg},
    {"scale.subnormal", C(SCALE), e_scale_subnormal},
    {"scale.flt_max", C(SCALE), e_scale_max},
    {"scale.scores_overflow", C(SCALE), e_scale_overflow},
    {"mask_rank.0", ANY_MASK | C(MASK_BCAST), e_rank0},
    {"mask_rank.1", ANY_MASK | C(MASK_BCAST), e_rank1},
    {"mask_rank.2", ANY_MASK | C(MASK_BCAST), e_rank2},
    {"mask_rank.3", ANY_MASK | C(MASK_BCAST), e_rank3},
    {"mask_extents.bcast_batch", ANY_MASK | C(MASK_BCAST), e_bcast_batch},
    {"mask_extents.bcast_head", ANY_MASK | C(MASK_BCAST), e_bcast_head},
    {"mask_extents.per_q_head_gqa", ANY_MASK | C(GQA), e_mask_gqa},
    {"mask_extents.bcast_query", ANY_MASK | C(MASK_BCAST), e_bcast_query},
    {"mask_values.bool_byte", C(MASK_BOOL), e_bool_byte},
    {"mask_values.neg_inf", C(MASK_ADD), e_neg_inf},
    {"mask_values.finite_min", C(MASK_ADD), e_finite_min},
    {"mask_values.positive", C(MASK_ADD), e_positive},
    {"softcap.small", C(SOFTCAP), e_softcap_small},
    {"alibi.hq_not_pow2", C(ALIBI), e_alibi_odd_heads},
    {"alibi.no_causal", C(ALIBI), e_alibi_no_causal},
    {"sinks.no_kept_key", C(SINKS) | C(CAUSAL), e_sink_empty_row},
    {"sinks.dominant", C(SINKS), e_sink_dominant},
    {"chunk.1", C(CHUNK) | C(CAUSAL), e_chunk1},
    {"chunk.off_grid_padding", C(CHUNK) | C(CAUSAL) | C(SDPA_LEFT_PAD), e_chunk_off_grid},
    {"segments.one_token_doc", C(SEGMENTS), e_doc_one_token},
    {"blocks.longer_than_window", C(BLOCKS) | C(CAUSAL) | C(SDPA_WINDOW), e_block_window},
};
#undef C
const int hf_nedges = (int)(sizeof hf_edges / sizeof hf_edges[0]);

int hf_edge_usable(int edge, uint64_t caps)
{
    if (edge < 0 || edge >= hf_nedges)
        return 0;
    uint64_t need = hf_edges[edge].needs;
    if ((need & ANY_MASK) == ANY_MASK) { /* either mask kind */
        if (!(caps & ANY_MASK))
            return 0;
        need &= ~ANY_MASK;
    }
    return (caps & need) == need;
}
