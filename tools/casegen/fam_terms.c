/* fam_terms.c — sdpa.terms.* and mask.terms.*: the attention of current models (SPEC clauses
 * 20-22): soft-capping (Gemma 2), ALiBi (BLOOM, MPT, ggml's max_bias), learned sinks (gpt-oss),
 * chunked attention (Llama 4), packed documents, bidirectional image / prefix blocks (Gemma 3,
 * PaliGemma) and MLA-shaped calls (DeepSeek).
 *
 * Every case is one row of a table (struct tcase) built by terms_case(), each row crossed with
 * the dtypes it names.  The rows are chosen so the bugs these terms invite change the output:
 * q scaled so that c tanh(s/c) is far from s, head counts that are not powers of two, left
 * padding that is not a multiple of the chunk, documents of one token, blocks longer than the
 * window, sinks on rows masked by the finite minimum, and shapes on both sides of the kernels'
 * 16/32/64-key tiles and their decode / prefill split. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncase/sdpa_rows.h"
#include "attnref/sdpa.h"
#include "casegen.h"

#define MAXB 3

enum { F32 = 1, F16 = 2, BF16 = 4, ALL = 7 };

/* Extras a row can ask for. */
enum {
    X_MASK_ADD = 1,   /* an additive mask (B, Hq, Lq, Lk) in the q dtype: values in [-4, 0], some
                       -inf (needs causal = 0) */
    X_MIN_ROWS = 2,   /* an additive mask whose odd query rows are all at the dtype's finite
                       minimum (clause 11; with a sink such a row is 0, clause 22) */
    X_VIEW = 4,       /* v is the first Dv columns of k (view: k_prefix, absorbed MLA) */
    X_POISON = 8,     /* NaN / inf in K and V at every slot no row keeps (clause 10) */
    X_ROW_PAD = 16,   /* q, k and v with a padded row pitch */
    X_MASK_BOOL = 32, /* a BOOL mask (B, Hq, Lq, Lk), about one key in seven false (causal = 0) */
};

typedef struct tcase {
    const char *stem; /* id: <op>.terms.<stem>.<dtype> */
    const char *what; /* what the case is for */
    const char *rule; /* the clause rule it checks first */
    unsigned dts;     /* F32 | F16 | BF16 */
    int64_t b, hq, hkv, lq, lk, d, dv;
    double amp; /* q and k drawn in [-amp, amp) */
    int causal, has_off;
    int64_t off, window;
    double scale; /* 0 = the default 1/sqrt(D) */
    double softcap, max_bias;
    double sink_lo, sink_hi; /* sinks drawn in [lo, hi) and rounded to bf16; lo == hi: none */
    int64_t chunk;
    const char *seg, *blk; /* run-length id patterns per batch row, "|" between rows */
    int nlen, nlp;
    int64_t lengths[MAXB], left_padding[MAXB];
    unsigned extra;
    int error;
} tcase;

__attribute__((noreturn)) static void die(const char *id, const char *why)
{
    fprintf(stderr, "casegen: %s: %s\n", id, why);
    exit(1);
}

/* A pattern "IDxN,IDxN|IDxN,..." (runs of N positions holding ID, "|" between batch rows) into
 * b rows of lk ids; every row must cover exactly lk positions. */
static int64_t *parse_ids(const char *id, const char *pat, int64_t b, int64_t lk)
{
    int64_t *ids = malloc((size_t)(b * lk) * sizeof *ids);
    if (!ids)
        abort();
    const char *p = pat;
    for (int64_t row = 0; row < b; row++) {
        int64_t at = 0;
        while (*p && *p != '|') {
            char *end;
            const long long v = strtoll(p, &end, 10);
            if (*end != 'x')
                die(id, "bad id pattern (expected IDxN)");
            const long long n = strtoll(end + 1, &end, 10);
            for (long long k = 0; k < n; k++) {
                if (at >= lk)
                    die(id, "id pattern longer than Lk");
                ids[row * lk + at++] = v;
            }
            p = *end == ',' ? end + 1 : end;
        }
        if (at != lk)
            die(id, "id pattern row does not cover Lk");
        if (*p == '|')
            p++;
        else if (row + 1 < b)
            die(id, "id pattern has fewer rows than B");
    }
    return ids;
}

/* FNV-1a of the id: the seed of the values this file draws itself (sinks). */
static uint64_t id_seed(const char *id)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *s = id; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* Sinks in [lo, hi), rounded to bf16 (8 significant bits: exact in f16, bf16 and f32, so every
 * library holds them exactly, whatever dtype it keeps them in). */
static double *make_sinks(const char *id, int64_t hq, double lo, double hi)
{
    double *s = malloc((size_t)hq * sizeof *s);
    if (!s)
        abort();
    uint64_t st = id_seed(id);
    for (int64_t h = 0; h < hq; h++) {
        const double t = (double)(acase_splitmix64_next(&st) >> 11) * 0x1p-53;
        double x = attnref_bf16_to_f32(attnref_f64_to_bf16(lo + (hi - lo) * t));
        if (fabs(x) < 0x1p-14)
            x = 0.0; /* f16 keeps 11 bits only above its subnormals */
        s[h] = x;
    }
    return s;
}

/* Additive masks: X_MASK_ADD a finite pattern in [-4, 0] with some -inf; X_MIN_ROWS every odd
 * query row at the dtype's finite minimum (clause 11), even rows 0. */
static void add_mask(acase *c, const tcase *s, attnref_dtype dt)
{
    const int64_t shape[4] = {s->b, s->hq, s->lq, s->lk};
    const int64_t n = s->b * s->hq * s->lq * s->lk;
    double *vals = malloc(((size_t)n + 1) * sizeof *vals);
    if (!vals)
        abort();
    const double fmin = attnref_dtype_finite_min(dt);
    const int bool_mask = (s->extra & X_MASK_BOOL) != 0;
    int64_t at = 0;
    for (int64_t b = 0; b < s->b; b++)
        for (int64_t h = 0; h < s->hq; h++)
            for (int64_t i = 0; i < s->lq; i++)
                for (int64_t j = 0; j < s->lk; j++, at++) {
                    if (bool_mask)
                        vals[at] = (b * 3 + h * 5 + i * 2 + j * 4) % 7 != 0;
                    else if (s->extra & X_MIN_ROWS)
                        vals[at] = i % 2 ? fmin : 0.0;
                    else
                        vals[at] = (b * 3 + h * 5 + i * 2 + j * 4) % 7 == 0
                                       ? -INFINITY
                                       : (double)((i * 3 + j * 5 + h) % 9 - 8) / 2;
                }
    cg_inline(&c->mask, bool_mask ? ATTNREF_BOOL : dt, 4, shape, vals);
    free(vals);
}

/* v := the first Dv columns of k (both already drawn); the view is then what the file says. */
static void view_of_k(acase *c)
{
    const int64_t rows = c->k.shape[0] * c->k.shape[1] * c->k.shape[2];
    const int64_t d = c->k.shape[3], dv = c->v.shape[3];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t e = 0; e < dv; e++)
            attnref_store(c->v.data, c->v.dtype, r * dv + e,
                          attnref_load(c->k.data, c->k.dtype, r * d + e));
    c->v.source = ACASE_SRC_INLINE;
    c->v.view_k_prefix = 1;
}

static void describe(const tcase *s, char *buf, size_t n)
{
    size_t j = (size_t)snprintf(buf, n,
                                "%s. B=%lld, Hq=%lld, Hkv=%lld, Lq=%lld, Lk=%lld, D=%lld, "
                                "Dv=%lld, q/k in [-%g, %g)",
                                s->what, (long long)s->b, (long long)s->hq, (long long)s->hkv,
                                (long long)s->lq, (long long)s->lk, (long long)s->d,
                                (long long)s->dv, s->amp, s->amp);
#define ADD(...)                                                                                   \
    do {                                                                                           \
        if (j < n)                                                                                 \
            j += (size_t)snprintf(buf + j, n - j, __VA_ARGS__);                                    \
    } while (0)
    if (s->causal && s->has_off)
        ADD(", causal with offset %lld", (long long)s->off);
    else if (s->causal)
        ADD(", causal bottom-right");
    if (s->window)
        ADD(", window %lld", (long long)s->window);
    if (s->scale != 0.0)
        ADD(", scale %.17g", s->scale);
    if (s->softcap != 0.0)
        ADD(", softcap %g", s->softcap);
    if (s->max_bias != 0.0)
        ADD(", ALiBi max_bias %g", s->max_bias);
    if (s->sink_hi > s->sink_lo)
        ADD(", sinks drawn in [%g, %g)", s->sink_lo, s->sink_hi);
    if (s->chunk)
        ADD(", chunk %lld", (long long)s->chunk);
    if (s->seg)
        ADD(", documents %s", s->seg);
    if (s->blk)
        ADD(", blocks %s", s->blk);
    for (int x = 0; x < s->nlen; x++)
        ADD("%s%lld%s", x ? ", " : ", lengths [", (long long)s->lengths[x],
            x + 1 == s->nlen ? "]" : "");
    for (int x = 0; x < s->nlp; x++)
        ADD("%s%lld%s", x ? ", " : ", left_padding [", (long long)s->left_padding[x],
            x + 1 == s->nlp ? "]" : "");
    if (s->extra & X_MASK_ADD)
        ADD(", an additive mask of finite values and -inf");
    if (s->extra & X_MASK_BOOL)
        ADD(", a boolean mask");
    if (s->extra & X_MIN_ROWS)
        ADD(", an additive mask holding the finite minimum on every odd query row");
    if (s->extra & X_VIEW)
        ADD(", V a prefix view of K");
    if (s->extra & X_POISON)
        ADD(", NaN / inf in every K/V slot no row keeps");
    if (s->extra & X_ROW_PAD)
        ADD(", q/k/v with a padded row pitch");
    ADD(".");
#undef ADD
}

static void terms_case(cg *g, const tcase *s, attnref_dtype dt)
{
    char id[ACASE_ID_MAX], stem[ACASE_ID_MAX], desc[1024];
    snprintf(stem, sizeof stem, "sdpa.terms.%s", s->stem);
    cg_id_dt(id, sizeof id, stem, dt);
    describe(s, desc, sizeof desc);
    acase *c =
        cg_sdpa(id, desc, s->rule, dt, s->b, s->hq, s->hkv, s->lq, s->lk, s->d, s->dv, s->amp);
    c->causal = s->causal;
    c->has_causal_offset = s->has_off;
    c->causal_offset = s->off;
    c->window = s->window;
    if (s->scale != 0.0) {
        c->has_scale = 1;
        c->scale = s->scale;
    }
    c->softcap = s->softcap;
    c->alibi_max_bias = s->max_bias;
    if (s->sink_hi > s->sink_lo) {
        c->sinks = make_sinks(id, s->hq, s->sink_lo, s->sink_hi);
        c->nsinks = s->hq;
    }
    c->chunk = s->chunk;
    c->batch = s->b;
    c->lengths = cg_copy_i64(s->lengths, s->nlen);
    c->left_padding = cg_copy_i64(s->left_padding, s->nlp);
    if (s->seg)
        c->segment_ids = parse_ids(id, s->seg, s->b, s->lk);
    if (s->blk)
        c->block_ids = parse_ids(id, s->blk, s->b, s->lk);
    if (s->seg || s->blk)
        c->ids_len = s->lk;
    if (s->extra & (X_MASK_ADD | X_MIN_ROWS | X_MASK_BOOL))
        add_mask(c, s, dt);
    if (s->extra & X_VIEW)
        view_of_k(c);
    if (s->extra & X_POISON)
        cg_poison_excluded(c);
    if (s->extra & X_ROW_PAD)
        c->q.row_pad = c->k.row_pad = 3, c->v.row_pad = s->extra & X_VIEW ? 0 : 5;
    if (s->rule && strncmp(s->rule, "clause20", 8) != 0 && (s->chunk || s->seg || s->blk))
        cg_rule(c, "clause20.terms");
    if (s->error)
        cg_expect_error(c, s->error);
    cg_emit(g, c);
}

/* Gemma 2 scales q by query_pre_attn_scalar^-0.5; here amp makes |scale q.k| reach about 3c so
 * that tanh is far from linear (FlashAttention's tests multiply q by the cap for the same
 * reason). */
#define SHAPE(b, hq, hkv, lq, lk, d, dv, amp) b, hq, hkv, lq, lk, d, dv, amp
static const tcase TERMS[] = {
    /* ---- soft-capping (clause 20) ---- */
    {"softcap.prefill_nonlinear",
     "Soft-capping 50 on scores up to about 150: s -> 50 tanh(s/50) changes them a lot, so a "
     "kernel that skips or misplaces it fails",
     "clause20.softcap", ALL, SHAPE(1, 4, 2, 37, 37, 64, 64, 13.0), .causal = 1, .softcap = 50.0},
    {"softcap.decode_long",
     "Soft-capping 30 in a decode over 300 keys (past the 16/32/64-key tiles and into the "
     "long-decode path), GQA 6:2",
     "clause20.softcap", ALL, SHAPE(2, 6, 2, 1, 300, 64, 64, 10.0), .causal = 1, .softcap = 30.0},
    {"softcap.after_scale",
     "Soft-capping 20 with an explicit scale 0.0625 (exact in f32, so every API takes it): the cap applies to the scaled score "
     "(c tanh(scale q.k / c)), never to the raw q.k",
     "clause20.softcap_order", ALL, SHAPE(1, 2, 2, 9, 24, 32, 32, 20.0), .causal = 1,
     .scale = 0.0625, .softcap = 20.0},
    {"softcap.before_mask",
     "Soft-capping 10 before an additive mask of finite values and -inf: the mask is added after "
     "the cap, so a -inf stays -inf and a finite value shifts the capped score",
     "clause20.softcap_order", ALL, SHAPE(2, 2, 1, 8, 19, 16, 16, 6.0), .softcap = 10.0,
     .extra = X_MASK_ADD},
    {"softcap.window_padding",
     "Soft-capping 50 with a sliding window 16 and left padding (Gemma 2 sliding layers in a "
     "padded batch)",
     "clause20.softcap", ALL, SHAPE(2, 4, 2, 40, 70, 64, 64, 13.0), .causal = 1, .window = 16,
     .softcap = 50.0, .nlp = 2, .left_padding = {0, 9}},
    /* ---- ALiBi (clause 21) ---- */
    {"alibi.heads12_prefill",
     "ALiBi max_bias 8 with 12 query heads: heads 8..11 take the interleaved slopes 2^-0.5, "
     "2^-1.5, ... of Press's get_slopes, not 2^(-8 (h+1) / 12)",
     "clause21.slopes", ALL, SHAPE(1, 12, 4, 20, 20, 32, 32, 1.0), .causal = 1, .max_bias = 8.0},
    {"alibi.heads9_decode",
     "ALiBi max_bias 8, 9 query heads and one kv head, decode over 200 keys (the bias reaches "
     "-200 m_h)",
     "clause21.slopes", ALL, SHAPE(1, 9, 1, 1, 200, 64, 64, 1.0), .causal = 1, .max_bias = 8.0},
    {"alibi.heads8_offset",
     "ALiBi max_bias 8, 8 heads, causal with Lq < Lk: the distance is from the query's absolute "
     "position offset + i, not from i",
     "clause21.distance", ALL, SHAPE(2, 8, 8, 6, 27, 16, 16, 1.0), .causal = 1, .max_bias = 8.0},
    {"alibi.non_causal",
     "ALiBi max_bias 4 without causal: keys after the query are visible, so only the distance "
     "form -m |p - j| is right (m (j - p) and m j differ from it there)",
     "clause21.distance", ALL, SHAPE(1, 4, 2, 7, 16, 16, 16, 1.0), .max_bias = 4.0},
    {"alibi.mask_add",
     "ALiBi max_bias 8 (6 heads) together with an additive mask (ggml's form: slope times "
     "distance plus the mask), not causal",
     "clause21.distance", ALL, SHAPE(1, 6, 3, 5, 33, 32, 32, 1.0), .max_bias = 8.0,
     .extra = X_MASK_ADD},
    {"alibi.max_bias16_lengths",
     "ALiBi max_bias 16 with 3 heads (slopes 2^-8, 2^-16, 2^-4) and per-sequence lengths, causal "
     "prefill over 70 keys",
     "clause21.slopes", ALL, SHAPE(2, 3, 1, 70, 70, 32, 32, 1.0), .causal = 1, .max_bias = 16.0,
     .nlen = 2, .lengths = {70, 41}},
    /* ---- sinks (clause 22) ---- */
    {"sinks.prefill",
     "gpt-oss sinks (one per query head, drawn in [-2, 3)) in a causal prefill with GQA 8:2: the "
     "sink joins the softmax unscaled and adds no value",
     "clause22.sink", ALL, SHAPE(1, 8, 2, 24, 24, 64, 64, 1.0), .causal = 1, .sink_lo = -2.0,
     .sink_hi = 3.0},
    {"sinks.window_decode",
     "gpt-oss sliding layer: sinks with a window of 16 in a decode over 100 keys, B = 2",
     "clause22.sink", ALL, SHAPE(2, 4, 1, 1, 100, 64, 64, 1.0), .causal = 1, .window = 16,
     .sink_lo = -1.0, .sink_hi = 4.0},
    {"sinks.dominant",
     "Sinks of 8 to 12 outweigh every key (scores near 0): the output is scaled down by about "
     "e^-10, not normalised as without a sink",
     "clause22.sink", ALL, SHAPE(1, 4, 4, 6, 10, 16, 16, 0.5), .sink_lo = 8.0, .sink_hi = 12.0},
    {"sinks.fully_masked",
     "Sinks with Lq > Lk causal: the first rows keep no key and are exactly 0 with a sink too "
     "(clause 9); the others take the sink",
     "clause22.fully_masked", ALL, SHAPE(1, 2, 1, 9, 5, 16, 16, 1.0), .causal = 1, .sink_lo = -1.0,
     .sink_hi = 2.0},
    {"sinks.min_rows",
     "Sinks on rows masked only by the dtype's finite minimum: the sink outweighs every such key, "
     "so those rows are 0 (without a sink they would only need to be finite, clause 11)",
     "clause22.fully_masked", ALL, SHAPE(1, 2, 2, 4, 12, 16, 16, 1.0), .sink_lo = 0.5,
     .sink_hi = 2.0, .extra = X_MIN_ROWS},
    {"sinks.bool_mask",
     "Sinks of 10 to 16 with a boolean mask (not causal): a true entry adds nothing to the score "
     "(a kernel that adds the byte's value 1 weighs every key e times too much against the sink, "
     "found by attnconf fuzz in kernel_control)",
     "clause22.sink", ALL, SHAPE(1, 4, 2, 3, 20, 16, 16, 1.0), .sink_lo = 10.0, .sink_hi = 16.0,
     .extra = X_MASK_BOOL},
    {"sinks.padded_row",
     "Sinks with a batch row whose every key is padding expressed in an additive mask of the "
     "finite minimum (odd query rows), decode-sized Lq = 3 over 21 keys: those rows are 0",
     "clause22.fully_masked", ALL, SHAPE(2, 4, 2, 3, 21, 32, 32, 1.0), .sink_lo = -1.0,
     .sink_hi = 1.0, .extra = X_MIN_ROWS},
    {"sinks.softcap",
     "Sinks of 15 to 30 with soft-capping 20 (and no other term): 20 tanh(sigma / 20) would "
     "weigh the sink less",
     "clause22.sink", ALL, SHAPE(1, 4, 1, 1, 50, 64, 64, 6.0), .causal = 1, .softcap = 20.0,
     .sink_lo = 15.0, .sink_hi = 30.0},
    {"sinks.softcap_alibi",
     "Sinks of 20 to 40 with soft-capping 30 and ALiBi: the sink is never capped (30 tanh(40/30) "
     "= 26 would weigh it less), scaled or biased",
     "clause22.sink", ALL, SHAPE(1, 6, 2, 8, 40, 32, 32, 8.0), .causal = 1, .scale = 0.5,
     .softcap = 30.0, .max_bias = 8.0, .sink_lo = 20.0, .sink_hi = 40.0},
    {"sinks.scaled_q",
     "Sinks in [1, 3) with an explicit scale 0.125 on large scores: a kernel that scales the sink "
     "(0.125 sigma) gives it far less weight",
     "clause22.sink", ALL, SHAPE(1, 4, 2, 5, 48, 64, 64, 4.0), .causal = 1, .scale = 0.125,
     .sink_lo = 1.0, .sink_hi = 3.0},
    /* ---- chunked attention (clause 20) ---- */
    {"chunk.prefill", "Llama 4 chunked attention, chunk 8, causal prefill over 40 tokens",
     "clause20.chunk", ALL, SHAPE(1, 4, 2, 40, 40, 32, 32, 1.0), .causal = 1, .chunk = 8},
    {"chunk.left_padding",
     "Chunk 8 under left padding 3 and 5: chunks start at each sequence's first real token, not "
     "at slot 0",
     "clause20.chunk_left_padding", ALL, SHAPE(2, 2, 1, 36, 36, 16, 16, 1.0), .causal = 1,
     .chunk = 8, .nlp = 2, .left_padding = {3, 5}},
    {"chunk.decode_left_padding",
     "Chunk 16 in a decode over 70 keys with left padding 6 and 1: the query's chunk begins at "
     "left_padding + 16 k",
     "clause20.chunk_left_padding", ALL, SHAPE(2, 4, 2, 1, 70, 64, 64, 1.0), .causal = 1,
     .chunk = 16, .nlp = 2, .left_padding = {6, 1}},
    {"chunk.size1", "Chunk 1: each query keeps only its own key (B = 1, prefill)", "clause20.chunk",
     F32 | BF16, SHAPE(1, 2, 2, 6, 6, 16, 16, 1.0), .causal = 1, .chunk = 1},
    {"chunk.lengths_poison",
     "Chunk 32 with right padding (lengths 50, 33) and NaN in every slot no row keeps, prefill "
     "Lq = Lk = 64",
     "clause20.chunk", ALL, SHAPE(2, 2, 2, 64, 64, 32, 32, 1.0), .causal = 1, .chunk = 32,
     .nlen = 2, .lengths = {50, 33}, .extra = X_POISON},
    /* ---- documents (clause 20) ---- */
    {"docs.packed",
     "Packed sequences (transformers' golden: documents of 4, 2, 4 and 6, 4 tokens), causal "
     "within each document",
     "clause20.segments", ALL, SHAPE(2, 2, 1, 10, 10, 16, 16, 1.0), .causal = 1,
     .seg = "0x4,1x2,2x4|0x6,1x4"},
    {"docs.length1", "Documents of one token (a query that keeps only itself) between longer ones",
     "clause20.segments", ALL, SHAPE(1, 4, 2, 12, 12, 32, 32, 1.0), .causal = 1,
     .seg = "0x5,1x1,2x1,3x5"},
    {"docs.boundaries_tiles",
     "Document boundaries at 15, 32, 33 and 64 around the kernels' 16/32/64-key tiles, causal "
     "prefill over 80 keys",
     "clause20.segments", ALL, SHAPE(1, 2, 1, 80, 80, 32, 32, 1.0), .causal = 1,
     .seg = "0x15,1x17,2x1,3x31,4x16"},
    {"docs.encoder",
     "Packed documents without causal (a bidirectional encoder): every query keeps its whole "
     "document",
     "clause20.segments", ALL, SHAPE(1, 2, 2, 11, 11, 16, 16, 1.0), .seg = "0x3,1x1,2x7"},
    {"docs.decode", "A decode step of the last document of a packed row of 40 keys",
     "clause20.segments", ALL, SHAPE(1, 4, 1, 1, 40, 64, 64, 1.0), .causal = 1, .seg = "0x17,1x23"},
    /* ---- bidirectional blocks (clause 20) ---- */
    {"blocks.image",
     "A Gemma 3 image block inside causal text: image tokens see the whole image, text stays "
     "causal",
     "clause20.blocks", ALL, SHAPE(1, 2, 1, 12, 12, 16, 16, 1.0), .causal = 1,
     .blk = "-1x2,0x5,-1x5"},
    {"blocks.two_images",
     "Two image blocks: an image sees its own later tokens but never the next image",
     "clause20.blocks", ALL, SHAPE(1, 2, 2, 16, 16, 16, 16, 1.0), .causal = 1,
     .blk = "-1x1,0x4,1x4,-1x2,2x3,-1x2"},
    {"blocks.adjacent",
     "Two adjacent image blocks and a third after text, B = 2: each image sees all of itself and "
     "nothing of the next",
     "clause20.blocks", ALL, SHAPE(2, 2, 1, 16, 16, 16, 16, 1.0), .causal = 1,
     .blk = "-1x2,0x6,1x6,-1x2|0x3,1x3,-1x4,2x5,-1x1"},
    {"blocks.longer_than_window",
     "An image of 9 tokens on a sliding layer with window 4: the window still applies to the "
     "earlier image tokens, (causal OR block) AND window (transformers keeps the whole image)",
     "clause20.block_window", ALL, SHAPE(1, 2, 1, 14, 14, 16, 16, 1.0), .causal = 1, .window = 4,
     .blk = "-1x2,0x9,-1x3"},
    {"blocks.prefix_lm",
     "A PaliGemma prefix (image and prompt, 7 tokens, bidirectional) then a causal suffix, B = 2 "
     "with left padding 0 and 3",
     "clause20.blocks", ALL, SHAPE(2, 4, 2, 13, 13, 32, 32, 1.0), .causal = 1,
     .blk = "0x7,-1x6|-1x3,0x7,-1x3", .nlp = 2, .left_padding = {0, 3}},
    {"blocks.tiles",
     "An image of 40 tokens from key 20 to 59 in a prefill of 80: the block reaches past the "
     "causal frontier of its rows across 16/32/64-key tiles",
     "clause20.blocks", ALL, SHAPE(1, 2, 1, 80, 80, 32, 32, 1.0), .causal = 1,
     .blk = "-1x20,0x40,-1x20"},
    {"blocks.chunk", "An image block with chunk 8: the image keeps only its own chunk's tokens",
     "clause20.block_window", ALL, SHAPE(1, 2, 2, 20, 20, 16, 16, 1.0), .causal = 1, .chunk = 8,
     .blk = "-1x3,0x10,-1x7"},
    /* ---- MLA shapes (clauses 1, 2) ---- */
    {"mla.decode",
     "Absorbed DeepSeek MLA decode: Dq = 576, Dv = 512, one kv head for 16 query heads, V the "
     "first 512 columns of K, explicit scale 192^-0.5 (never 1/sqrt(576))",
     "clause2.explicit_scale", ALL, SHAPE(1, 16, 1, 1, 48, 576, 512, 1.0), .causal = 1,
     .scale = 0.07216878364870322, .extra = X_VIEW},
    {"mla.prefill",
     "MLA-shaped causal prefill: Dq = 576, Dv = 512, Hkv = 1, V a view of K, scale 192^-0.5, 8 "
     "queries over 24 keys",
     "clause2.explicit_scale", F32 | BF16, SHAPE(1, 4, 1, 8, 24, 576, 512, 1.0), .causal = 1,
     .scale = 0.07216878364870322, .extra = X_VIEW},
    {"mla.sinks_rowpad",
     "MLA decode with sinks and q/k with a padded row pitch (Dq = 576, Dv = 512, 8 heads)",
     "clause22.sink", F16 | BF16, SHAPE(1, 8, 1, 1, 33, 576, 512, 1.0), .causal = 1,
     .scale = 0.07216878364870322, .sink_lo = -1.0, .sink_hi = 1.0, .extra = X_VIEW | X_ROW_PAD},
    /* ---- row pitch (strides) ---- */
    {"rowpad.softcap", "Soft-capping 20 with q, k and v of padded row pitch (NaN between rows)",
     "clause1.strided", ALL, SHAPE(1, 2, 1, 5, 17, 16, 8, 6.0), .causal = 1, .softcap = 20.0,
     .extra = X_ROW_PAD},
    /* ---- invalid terms (must be rejected) ---- */
    {"invalid.softcap_negative", "A negative softcap must be rejected", "clause20.invalid", F32,
     SHAPE(1, 1, 1, 2, 3, 4, 4, 1.0), .causal = 1, .softcap = -5.0, .error = ATTNREF_EINVAL},
    {"invalid.softcap_nan", "A NaN softcap must be rejected", "clause20.invalid", F32,
     SHAPE(1, 1, 1, 2, 3, 4, 4, 1.0), .causal = 1, .softcap = NAN, .error = ATTNREF_EINVAL},
    {"invalid.alibi_negative", "A negative ALiBi max_bias must be rejected", "clause21.invalid",
     F32, SHAPE(1, 2, 1, 2, 3, 4, 4, 1.0), .causal = 1, .max_bias = -8.0, .error = ATTNREF_EINVAL},
    {"invalid.sink_inf", "An infinite sink must be rejected", "clause22.invalid", F32,
     SHAPE(1, 2, 1, 2, 3, 4, 4, 1.0), .sink_lo = INFINITY, .sink_hi = INFINITY,
     .error = ATTNREF_EINVAL},
    {"invalid.chunk_negative", "A negative chunk must be rejected", "clause20.invalid", F32,
     SHAPE(1, 1, 1, 2, 3, 4, 4, 1.0), .causal = 1, .chunk = -4, .error = ATTNREF_EINVAL},
    {"invalid.chunk_without_causal", "A chunk without causal must be rejected", "clause20.invalid",
     F32, SHAPE(1, 1, 1, 2, 3, 4, 4, 1.0), .chunk = 2, .error = ATTNREF_EINVAL},
    {"invalid.blocks_without_causal", "Bidirectional blocks without causal must be rejected",
     "clause20.invalid", F32, SHAPE(1, 1, 1, 3, 3, 4, 4, 1.0), .blk = "0x2,-1x1",
     .error = ATTNREF_EINVAL},
};
#undef SHAPE

/* An infinite sink cannot be drawn: the table's lo == hi == inf row sets it by hand. */
static void terms_invalid_sink(cg *g, const tcase *s)
{
    char id[ACASE_ID_MAX], stem[ACASE_ID_MAX];
    snprintf(stem, sizeof stem, "sdpa.terms.%s", s->stem);
    cg_id_dt(id, sizeof id, stem, ATTNREF_F32);
    acase *c = cg_sdpa(id, s->what, s->rule, ATTNREF_F32, s->b, s->hq, s->hkv, s->lq, s->lk, s->d,
                       s->dv, s->amp);
    c->sinks = malloc((size_t)s->hq * sizeof *c->sinks);
    if (!c->sinks)
        abort();
    for (int64_t h = 0; h < s->hq; h++)
        c->sinks[h] = h ? INFINITY : 1.0;
    c->nsinks = s->hq;
    cg_expect_error(c, s->error);
    cg_emit(g, c);
}

/* sdpa.scale_range.*: the binary32 range of an explicit scale (SPEC clause 2, issue 20's
 * decision): the largest f32 scale is valid, one past it is EINVAL, and scaled scores beyond the
 * f32 range still owe the exact (finite) result. */
static void scale_range(cg *g)
{
    static const struct {
        const char *stem, *what;
        unsigned dts;
        double scale, amp;
        int64_t lq, lk, d;
        int error;
    } R[] = {
        {"max_f32_tiny_qk",
         "The largest f32 scale, FLT_MAX, on q and k near 1e-19 (scores of a "
         "few units): valid and used as given",
         F32 | BF16, 3.4028234663852886e38, 1.5e-19, 3, 17, 16, 0},
        {"scores_overflow",
         "Scale 3e38 on ordinary q and k: every scaled score overflows f32 "
         "(|s| up to 1e39), the exact softmax puts its weight on the largest "
         "score, so the output is finite; NaN from inf - inf is a FAIL",
         ALL, 3e38, 1.0, 4, 9, 8, 0},
        {"scores_overflow_decode",
         "Scale 1e38 in a decode over 70 keys: some scores overflow f32, "
         "the output is the value of the largest",
         ALL, 1e38, 1.0, 1, 70, 32, 0},
        {"neg_max_f32", "Scale -FLT_MAX on ordinary q and k: the weight goes to the smallest q.k",
         F32 | F16, -3.4028234663852886e38, 1.0, 2, 6, 4, 0},
        {"min_subnormal",
         "The smallest f32 subnormal scale 1.4e-45: every score is 0 to f32 "
         "precision, the output is the mean of V",
         F32 | BF16, 1.401298464324817e-45, 1.0, 2, 7, 8, 0},
        {"over_f32", "Scale 3.5e38, just past FLT_MAX: no f32 holds it, so it must be rejected",
         F32 | BF16, 3.5e38, 1.0, 1, 3, 4, ATTNREF_EINVAL},
        {"over_f32_1e39", "Scale 1e39 must be rejected", F32, 1e39, 1.0, 1, 3, 4, ATTNREF_EINVAL},
        {"over_f32_1e300", "Scale -1e300 must be rejected", F16, -1e300, 1.0, 1, 3, 4,
         ATTNREF_EINVAL},
    };
    for (size_t n = 0; n < sizeof R / sizeof R[0]; n++)
        for (int d = 0; d < 3; d++) {
            if (!(R[n].dts & (1u << d)))
                continue;
            char id[ACASE_ID_MAX], stem[ACASE_ID_MAX];
            snprintf(stem, sizeof stem, "sdpa.scale_range.%s", R[n].stem);
            cg_id_dt(id, sizeof id, stem, CG_DTYPES[d]);
            acase *c = cg_sdpa(id, R[n].what, "clause2.range", CG_DTYPES[d], 1, 2, 1, R[n].lq,
                               R[n].lk, R[n].d, R[n].d, R[n].amp);
            c->has_scale = 1;
            c->scale = R[n].scale;
            if (R[n].error)
                cg_expect_error(c, R[n].error);
            cg_emit(g, c);
        }
}

/* The mask builder's forms of the terms (mask.terms.*): transformers' golden masks. */
static void mask_terms(cg *g)
{
    static const struct {
        const char *stem, *what, *rule;
        int64_t lq, offset, window, chunk, batch, nlp;
        int64_t left_padding[MAXB];
        const char *seg, *blk;
    } M[] = {
        {"chunk_left_padding_prefill",
         "Chunk 3 with 4 tokens of left padding and a prefill of 8 "
         "(transformers' test_chunked_mask_with_left_padding_and_large_prefill)",
         "clause20.chunk_left_padding",
         8,
         0,
         0,
         3,
         1,
         1,
         {4},
         NULL,
         NULL},
        {"chunk_decode",
         "Chunk 4, 7 tokens of left padding, decode after an 8-token prefill",
         "clause20.chunk_left_padding",
         1,
         8,
         0,
         4,
         1,
         1,
         {7},
         NULL,
         NULL},
        {"chunk_batch",
         "Chunk 5, left padding 0 and 2, prefill of 12",
         "clause20.chunk",
         12,
         0,
         0,
         5,
         2,
         2,
         {0, 2},
         NULL,
         NULL},
        {"packed",
         "Packed documents from position_ids (transformers' golden: 4, 2, 4 and 6, 4)",
         "clause20.segments",
         10,
         0,
         0,
         0,
         2,
         0,
         {0},
         "0x4,1x2,2x4|0x6,1x4",
         NULL},
        {"packed_window",
         "Packed documents with a sliding window of 3",
         "clause20.segments",
         9,
         0,
         3,
         0,
         1,
         0,
         {0},
         "0x5,1x1,2x3",
         NULL},
        {"image_block",
         "An image block (bidirectional) inside a causal prompt",
         "clause20.blocks",
         10,
         0,
         0,
         0,
         1,
         0,
         {0},
         NULL,
         "-1x2,0x5,-1x3"},
        {"image_window",
         "An image of 6 tokens with a sliding window 3: (causal OR block) AND window",
         "clause20.block_window",
         10,
         0,
         3,
         0,
         1,
         0,
         {0},
         NULL,
         "-1x2,0x6,-1x2"},
        {"image_decode",
         "Decode after a prompt holding an image: the new token is text",
         "clause20.blocks",
         1,
         9,
         0,
         0,
         1,
         0,
         {0},
         NULL,
         "-1x1,0x4,-1x5"},
    };
    for (size_t n = 0; n < sizeof M / sizeof M[0]; n++) {
        char id[ACASE_ID_MAX], desc[512];
        snprintf(id, sizeof id, "mask.terms.%s", M[n].stem);
        snprintf(desc, sizeof desc, "%s: the keep mask of the mask builder (SPEC clause 20).",
                 M[n].what);
        acase *c = cg_new(ACASE_OP_MASK, id, desc, M[n].rule);
        c->lq = M[n].lq;
        c->offset = M[n].offset;
        c->window = M[n].window;
        c->chunk = M[n].chunk;
        c->batch = M[n].batch;
        c->left_padding = cg_copy_i64(M[n].left_padding, (int)M[n].nlp);
        const int64_t lk = M[n].offset + M[n].lq;
        if (M[n].seg)
            c->segment_ids = parse_ids(id, M[n].seg, M[n].batch, lk);
        if (M[n].blk)
            c->block_ids = parse_ids(id, M[n].blk, M[n].batch, lk);
        if (M[n].seg || M[n].blk)
            c->ids_len = lk;
        cg_emit(g, c);
    }
}

void fam_terms(cg *g)
{
    for (size_t n = 0; n < sizeof TERMS / sizeof TERMS[0]; n++) {
        const tcase *s = &TERMS[n];
        if (s->sink_lo == INFINITY) {
            terms_invalid_sink(g, s);
            continue;
        }
        for (int d = 0; d < 3; d++)
            if (s->dts & (1u << d))
                terms_case(g, s, CG_DTYPES[d]);
    }
    mask_terms(g);
    scale_range(g);
}
