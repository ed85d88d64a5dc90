/* fam_params.c — sdpa.params.*: the kernels' own mask parameters (SPEC clause 19).
 *
 * Fast kernels take a causal flag with an offset, a sliding window, per-sequence key lengths and
 * left padding instead of a mask tensor, and their bugs live there: a block-skipping path that
 * decides per tile whether a key block is visible, a window edge that lands on a tile boundary.
 * Every case is one row of a table (struct pcase) built by params_case():
 *   - the parameter form of every padding / window / left-padding case of the other families
 *     (sdpa.padding, sdpa.paths, mask.window / lengths / left_padding / combined);
 *   - block edges: masked regions that start and end inside and exactly on the boundaries of
 *     16-, 32-, 64- and 128-key blocks, in decode (Lq = 1) and prefill (Lq >= 64);
 *   - composition with a mask tensor, fully masked rows, NaN / inf in excluded K/V slots;
 *   - invalid parameters, which must be rejected.
 * Dtypes rotate so each kind meets f32, f16 and bf16. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnref/sdpa.h"
#include "casegen.h"

#define MAXB 4

/* Extras a row can ask for. */
enum {
    X_POISON = 1,     /* NaN / +-inf in K and V at every slot no query row keeps (clause 10) */
    X_MASK_BOOL = 2,  /* a per-head BOOL mask tensor (B, Hq, Lq, Lk) composed with the params */
    X_MASK_BCAST = 4, /* a BOOL key mask (1, 1, 1, Lk) (broadcast) composed with the params */
    X_MASK_ADD = 8,   /* an additive mask (B, Hq, Lq, Lk) in the q dtype: finite, some -inf */
    X_SAME = 16,      /* a parameter that changes nothing is the point (W past every distance) */
    X_SPIKE = 32,     /* heavy first and last key of each batch row's kept range (decode) */
};

typedef struct pcase {
    const char *stem; /* id: sdpa.params.<stem>.<dtype> */
    const char *what; /* what the case is for */
    attnref_dtype dt;
    int64_t b, hq, hkv, lq, lk, d;
    int causal, has_off;
    int64_t off, window;
    int nlen, nlp; /* entries of lengths / left_padding (0: not given) */
    int64_t lengths[MAXB], left_padding[MAXB];
    unsigned extra;
    int error; /* 0, or ATTNREF_EINVAL: the case must be rejected */
} pcase;

__attribute__((noreturn)) static void die(const char *id, const char *why)
{
    fprintf(stderr, "casegen: %s: %s\n", id, why);
    exit(1);
}

static attnref_sdpa_params params_of(const acase *c)
{
    attnref_sdpa_params p = {.causal = c->causal,
                             .has_causal_offset = c->has_causal_offset,
                             .causal_offset = c->causal_offset,
                             .window = c->window,
                             .batch = c->batch,
                             .lengths = c->lengths,
                             .left_padding = c->left_padding};
    return p;
}

/* The mask tensor's verdict on (b, h, i, j) (1 when there is none), as attnref reads it. */
static int mask_keeps(const acase *c, int64_t b, int64_t h, int64_t i, int64_t j)
{
    const acase_tensor *m = &c->mask;
    if (!m->present)
        return 1;
    const int64_t idx[4] = {b, h, i, j};
    int64_t off = 0;
    for (int r = 0; r < m->ndim; r++)
        off = off * m->shape[r] + (m->shape[r] == 1 ? 0 : idx[4 - m->ndim + r]);
    const double v = attnref_load(m->data, m->dtype, off);
    return m->dtype == ATTNREF_BOOL ? v != 0.0 : v != -INFINITY;
}

/* Keep set of the whole case into keep[(b*Hq+h)*Lq+i)*Lk + j], with constraint `drop` removed
 * (0 none, 1 window, 2 lengths, 3 left padding, 4 the mask tensor).  Returns the kept count. */
static int64_t keep_set(const acase *c, int drop, uint8_t *keep)
{
    attnref_sdpa_params p = params_of(c);
    if (drop == 1)
        p.window = 0;
    if (drop == 2)
        p.lengths = NULL;
    if (drop == 3)
        p.left_padding = NULL;
    const int64_t B = c->q.shape[0], Hq = c->q.shape[1], Lq = c->q.shape[2], Lk = c->k.shape[2];
    int64_t n = 0, at = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < Lq; i++)
                for (int64_t j = 0; j < Lk; j++, at++) {
                    keep[at] = (uint8_t)(attnref_sdpa_key_kept(&p, Lq, Lk, b, i, j) &&
                                         (drop == 4 || mask_keeps(c, b, h, i, j)));
                    n += keep[at];
                }
    return n;
}

/* Every constraint a case gives must matter: dropping it must change the keep set, else the case
 * cannot tell a backend that ignores it (ONNX's composition tests assert the same by hand). */
static void require_each_matters(const acase *c)
{
    const int64_t total = c->q.shape[0] * c->q.shape[1] * c->q.shape[2] * c->k.shape[2];
    uint8_t *all = malloc((size_t)total + 1), *less = malloc((size_t)total + 1);
    if (!all || !less)
        abort();
    keep_set(c, 0, all);
    const int has[5] = {0, c->window > 0, c->lengths != NULL, c->left_padding != NULL,
                        c->mask.present};
    static const char *const names[5] = {"", "window", "lengths", "left_padding", "mask tensor"};
    for (int w = 1; w < 5; w++) {
        if (!has[w])
            continue;
        keep_set(c, w, less);
        if (memcmp(all, less, (size_t)total) == 0) {
            char why[96];
            snprintf(why, sizeof why, "degenerate: dropping the %s does not change the keep set",
                     names[w]);
            die(c->id, why);
        }
    }
    free(all);
    free(less);
}

/* A kernel that mishandles a block edge typically loses or adds one key next to it.  With ~100
 * kept keys of V in [-1, 1) one lost key moves a bf16 output by less than its bound, so the
 * kept range's two end keys are made to count: K there equals the query of the kv head's first
 * query head (a large score, so a weight of about a tenth) and V is +-8 (exact in every dtype). */
static void spike_edges(acase *c)
{
    const attnref_sdpa_params p = params_of(c);
    const int64_t B = c->q.shape[0], Hq = c->q.shape[1], Lq = c->q.shape[2], D = c->q.shape[3];
    const int64_t Hkv = c->k.shape[1], Lk = c->k.shape[2], Dv = c->v.shape[3];
    for (int64_t b = 0; b < B; b++) {
        int64_t first = -1, last = -1;
        for (int64_t j = 0; j < Lk; j++)
            if (attnref_sdpa_key_kept(&p, Lq, Lk, b, 0, j)) {
                first = first < 0 ? j : first;
                last = j;
            }
        if (first < 0)
            continue;
        for (int64_t h = 0; h < Hkv; h++) {
            const int64_t qh = h * (Hq / Hkv);
            for (int64_t d = 0; d < D; d++) {
                const double qv = attnref_load(c->q.data, c->q.dtype, ((b * Hq + qh) * Lq) * D + d);
                cg_poke(&c->k, ((b * Hkv + h) * Lk + first) * D + d, qv);
                cg_poke(&c->k, ((b * Hkv + h) * Lk + last) * D + d, qv);
            }
            for (int64_t e = 0; e < Dv; e++) {
                cg_poke(&c->v, ((b * Hkv + h) * Lk + first) * Dv + e, e % 2 ? -8.0 : 8.0);
                cg_poke(&c->v, ((b * Hkv + h) * Lk + last) * Dv + e, e % 2 ? 8.0 : -8.0);
            }
        }
    }
}

/* The composed mask tensors: fixed patterns (no seed), each excluding about one key in seven. */
static void add_mask(acase *c, const pcase *s)
{
    const int64_t B = s->b, H = s->hq, Lq = s->lq, Lk = s->lk;
    const int bcast = (s->extra & X_MASK_BCAST) != 0, add = (s->extra & X_MASK_ADD) != 0;
    const int64_t shape[4] = {bcast ? 1 : B, bcast ? 1 : H, bcast ? 1 : Lq, Lk};
    const int64_t n = shape[0] * shape[1] * shape[2] * shape[3];
    double *vals = malloc(((size_t)n + 1) * sizeof *vals);
    if (!vals)
        abort();
    int64_t at = 0;
    for (int64_t b = 0; b < shape[0]; b++)
        for (int64_t h = 0; h < shape[1]; h++)
            for (int64_t i = 0; i < shape[2]; i++)
                for (int64_t j = 0; j < Lk; j++, at++) {
                    const int out = bcast ? j % 7 == 3 : (b * 3 + h * 5 + i * 2 + j * 4) % 7 == 0;
                    vals[at] =
                        add ? (out ? -INFINITY : (double)((i * 3 + j * 5 + h) % 9 - 4) / 4) : !out;
                }
    cg_inline(&c->mask, add ? s->dt : ATTNREF_BOOL, 4, shape, vals);
    free(vals);
}

static void list_text(char *buf, size_t n, const int64_t *a, int k)
{
    size_t j = (size_t)snprintf(buf, n, "[");
    for (int x = 0; x < k && j < n; x++)
        j += (size_t)snprintf(buf + j, n - j, "%s%lld", x ? ", " : "", (long long)a[x]);
    if (j < n)
        snprintf(buf + j, n - j, "]");
}

static void describe(const pcase *s, char *desc, size_t n)
{
    char len[96] = "", lp[96] = "", causal[96] = "not causal", win[48] = "", mask[160] = "";
    if (s->nlen) {
        char l[80];
        list_text(l, sizeof l, s->lengths, s->nlen);
        snprintf(len, sizeof len, ", lengths %s", l);
    }
    if (s->nlp) {
        char l[80];
        list_text(l, sizeof l, s->left_padding, s->nlp);
        snprintf(lp, sizeof lp, ", left_padding %s", l);
    }
    if (s->causal && s->has_off)
        snprintf(causal, sizeof causal, "causal with offset %lld", (long long)s->off);
    else if (s->causal)
        snprintf(causal, sizeof causal, "causal bottom-right (offset Lk - Lq = %lld)",
                 (long long)(s->lk - s->lq));
    if (s->window)
        snprintf(win, sizeof win, ", window %lld", (long long)s->window);
    if (s->extra & X_MASK_BCAST)
        snprintf(mask, sizeof mask, "; plus a BOOL key mask tensor (1,1,1,%lld)", (long long)s->lk);
    else if (s->extra & X_MASK_BOOL)
        snprintf(mask, sizeof mask, "; plus a per-head BOOL mask tensor (B,Hq,Lq,Lk)");
    else if (s->extra & X_MASK_ADD)
        snprintf(mask, sizeof mask,
                 "; plus an additive %s mask tensor (B,Hq,Lq,Lk) of finite "
                 "values and -inf, added where the parameters keep the key",
                 attnref_dtype_name(s->dt));
    snprintf(desc, n,
             "%s q (%lld,%lld,%lld,%lld), k/v (%lld,%lld,%lld,%lld), %s. The sdpa mask "
             "parameters, no mask tensor built from them: %s%s%s%s%s.%s%s%s",
             s->what, (long long)s->b, (long long)s->hq, (long long)s->lq, (long long)s->d,
             (long long)s->b, (long long)s->hkv, (long long)s->lk, (long long)s->d,
             attnref_dtype_name(s->dt), causal, win, len, lp, mask,
             s->extra & X_POISON ? " Every K/V slot no query row keeps holds NaN or +-inf: the "
                                   "output must equal the clean problem."
                                 : "",
             s->extra & X_SPIKE ? " At the first and last kept key K equals a query and V is "
                                  "+-8, so the edge keys weigh."
                                : "",
             s->error ? " Must be rejected (EINVAL)." : "");
}

/* The clause ids a case cites, derived from what it contains. */
static void add_rules(acase *c, const pcase *s)
{
    int any_empty = 0;
    if (!s->error) {
        const int64_t total = s->b * s->hq * s->lq * s->lk;
        uint8_t *keep = malloc((size_t)total + 1);
        if (!keep)
            abort();
        keep_set(c, 0, keep);
        for (int64_t r = 0; r < s->b * s->hq * s->lq && !any_empty; r++) {
            int kept = 0;
            for (int64_t j = 0; j < s->lk && !kept; j++)
                kept = keep[r * s->lk + j];
            any_empty = !kept;
        }
        free(keep);
    }
    int moved = 0; /* an offset-moving implementation (ONNX opset 24) would differ */
    for (int x = 0; x < s->nlen; x++)
        moved |= s->causal && s->lq > 1 && s->lengths[x] > 0 && s->lengths[x] < s->lk;
    const int nparts = (s->window != 0) + (s->nlen > 0) + (s->nlp > 0) + (c->mask.present != 0);
    const char *more[] = {
        s->window ? "clause19.window" : NULL,
        s->nlen ? "clause19.lengths" : NULL,
        s->nlp ? "clause19.left_padding" : NULL,
        nparts >= 2 || (s->causal && (s->nlen || s->nlp)) ? "clause19.intersection" : NULL,
        moved ? "clause19.lengths_keep_offset" : NULL,
        s->extra & X_POISON ? "clause10.masked_slots" : NULL,
        any_empty ? "clause9.fully_masked_zero" : NULL,
    };
    for (size_t m = 0; m < sizeof more / sizeof more[0]; m++) {
        int dup = !more[m];
        for (int k = 0; k < c->nrules && !dup; k++)
            dup = strcmp(c->rules[k], more[m]) == 0;
        if (!dup)
            cg_rule(c, more[m]);
    }
}

static void params_case(cg *g, const pcase *s)
{
    char id[ACASE_ID_MAX], desc[1536];
    snprintf(id, sizeof id, "sdpa.params.%s.%s", s->stem, attnref_dtype_name(s->dt));
    describe(s, desc, sizeof desc);
    const char *first = s->error    ? "clause19.invalid"
                        : s->window ? "clause19.window"
                        : s->nlen   ? "clause19.lengths"
                                    : "clause19.left_padding";
    acase *c = cg_sdpa(id, desc, first, s->dt, s->b, s->hq, s->hkv, s->lq, s->lk, s->d, s->d, 2.0);
    c->causal = s->causal;
    c->has_causal_offset = s->has_off;
    c->causal_offset = s->off;
    c->window = s->window;
    c->batch = s->nlen ? s->nlen : s->nlp ? s->nlp : 1;
    c->lengths = cg_copy_i64(s->lengths, s->nlen);
    c->left_padding = cg_copy_i64(s->left_padding, s->nlp);
    if (s->extra & (X_MASK_BOOL | X_MASK_BCAST | X_MASK_ADD))
        add_mask(c, s);
    if (s->error) {
        cg_expect_error(c, s->error);
    } else {
        if (!(s->extra & X_SAME))
            require_each_matters(c);
        if (s->extra & X_POISON)
            cg_poison_excluded(c);
        if (s->extra & X_SPIKE)
            spike_edges(c);
    }
    add_rules(c, s);
    cg_emit(g, c);
}

#define F32 ATTNREF_F32
#define F16 ATTNREF_F16
#define BF16 ATTNREF_BF16

/* The parameter form of the padding / window / left-padding cases elsewhere (same shapes and
 * parameters as the case named in `what`). */
static const pcase MIRRORS[] = {
    {"padding.lengths",
     "As sdpa.padding.lengths_bool: a right-padded batch after a cache.",
     F32,
     3,
     2,
     2,
     4,
     7,
     8,
     1,
     0,
     0,
     0,
     3,
     0,
     {7, 5, 2},
     {0},
     0,
     0},
    {"padding.lengths",
     "As sdpa.padding.lengths_bool: a right-padded batch after a cache.",
     F16,
     3,
     2,
     2,
     4,
     7,
     8,
     1,
     0,
     0,
     0,
     3,
     0,
     {7, 5, 2},
     {0},
     0,
     0},
    {"padding.lengths",
     "As sdpa.padding.lengths_bool: a right-padded batch after a cache.",
     BF16,
     3,
     2,
     2,
     4,
     7,
     8,
     1,
     0,
     0,
     0,
     3,
     0,
     {7, 5, 2},
     {0},
     0,
     0},
    {"padding.left_padding",
     "As sdpa.padding.left_padding_additive: left-padded batched decode.",
     F16,
     3,
     4,
     2,
     2,
     6,
     16,
     1,
     0,
     0,
     0,
     0,
     3,
     {0},
     {0, 2, 4},
     0,
     0},
    {"padding.window_lengths",
     "As sdpa.padding.window_lengths: a window with right padding.",
     BF16,
     2,
     2,
     1,
     8,
     8,
     8,
     1,
     0,
     0,
     4,
     2,
     0,
     {8, 6},
     {0},
     0,
     0},

    {"window.w3_l6",
     "As mask.window.w3_l6: row key counts 1, 2, 3, 3, 3, 3 (W counts the query).",
     F32,
     1,
     1,
     1,
     6,
     6,
     8,
     1,
     0,
     0,
     3,
     0,
     0,
     {0},
     {0},
     0,
     0},
    {"window.w4_l8",
     "As mask.window.w4_l8: row 7 sees keys 4..7.",
     F16,
     1,
     1,
     1,
     8,
     8,
     8,
     1,
     0,
     0,
     4,
     0,
     0,
     {0},
     {0},
     0,
     0},
    {"window.w3_l5_offset1",
     "As mask.window.w3_l5_offset1: row key counts 2, 3, 3, 3, 3.",
     BF16,
     1,
     1,
     1,
     5,
     6,
     8,
     1,
     0,
     0,
     3,
     0,
     0,
     {0},
     {0},
     0,
     0},
    {"window.w3_l5_offset2",
     "As mask.window.w3_l5_offset2: every row sees 3 keys.",
     F32,
     1,
     1,
     1,
     5,
     7,
     8,
     1,
     0,
     0,
     3,
     0,
     0,
     {0},
     {0},
     0,
     0},
    {"window.w1_l4",
     "As mask.window.w1_l4: W = 1 keeps only the diagonal.",
     F16,
     1,
     1,
     1,
     4,
     4,
     8,
     1,
     0,
     0,
     1,
     0,
     0,
     {0},
     {0},
     0,
     0},
    {"window.w_ge_lk",
     "As mask.window.w_ge_lk: a window past every distance equals plain causal.",
     BF16,
     1,
     1,
     1,
     4,
     7,
     8,
     1,
     0,
     0,
     16,
     0,
     0,
     {0},
     {0},
     X_SAME,
     0},
    {"window.decode_w4_offset9",
     "As mask.window.decode_w4_offset9: decode sees keys 6..9.",
     F32,
     1,
     1,
     1,
     1,
     10,
     8,
     1,
     0,
     0,
     4,
     0,
     0,
     {0},
     {0},
     0,
     0},

    {"lengths.seed",
     "As mask.lengths.seed: lengths count valid keys, the cache included.",
     F16,
     4,
     1,
     1,
     3,
     4,
     8,
     1,
     0,
     0,
     0,
     4,
     0,
     {1, 2, 3, 1},
     {0},
     0,
     0},
    {"lengths.right_pad_lq3",
     "As mask.lengths.right_pad_lq3: right padding without a cache.",
     BF16,
     3,
     1,
     1,
     3,
     3,
     8,
     1,
     0,
     0,
     0,
     3,
     0,
     {1, 2, 3},
     {0},
     0,
     0},
    {"lengths.zero_length",
     "As mask.lengths.zero_length: a sequence of length 0 keeps nothing.",
     F32,
     2,
     1,
     1,
     4,
     4,
     8,
     1,
     0,
     0,
     0,
     2,
     0,
     {0, 4},
     {0},
     0,
     0},
    {"lengths.decode_batch",
     "As mask.lengths.decode_batch: batched decode, ragged lengths.",
     F16,
     3,
     1,
     1,
     1,
     6,
     8,
     1,
     0,
     0,
     0,
     3,
     0,
     {6, 3, 1},
     {0},
     0,
     0},
    /* Two without a cache, the only way ONNX opset 24 can take lengths (nonpad_kv_seqlen). */
    {"lengths.causal_no_cache",
     "Causal prefill without a cache (Lq = Lk) with right padding: row i keeps j <= i and "
     "j < lengths[b]; the diagonal does not move to each sequence's end.",
     F32,
     2,
     2,
     2,
     6,
     6,
     8,
     1,
     0,
     0,
     0,
     2,
     0,
     {4, 6},
     {0},
     0,
     0},
    {"lengths.varlen",
     "Ragged key lengths without causal (a varlen batch).",
     F16,
     3,
     2,
     1,
     5,
     40,
     16,
     0,
     0,
     0,
     0,
     3,
     0,
     {17, 40, 1},
     {0},
     0,
     0},

    {"left_padding.lq3",
     "As mask.left_padding.lq3: padding queries keep no key.",
     BF16,
     3,
     1,
     1,
     3,
     3,
     8,
     1,
     0,
     0,
     0,
     0,
     3,
     {0},
     {2, 1, 0},
     0,
     0},
    {"left_padding.decode",
     "As mask.left_padding.decode: batched decode with left padding.",
     F32,
     3,
     1,
     1,
     1,
     5,
     8,
     1,
     0,
     0,
     0,
     0,
     3,
     {0},
     {0, 2, 4},
     0,
     0},
    {"left_padding.all_pad",
     "As mask.left_padding.all_pad: left padding Lk hides every key.",
     F16,
     2,
     1,
     1,
     3,
     3,
     8,
     1,
     0,
     0,
     0,
     0,
     2,
     {0},
     {3, 0},
     0,
     0},

    {"combined.window_lengths",
     "As mask.combined.window_lengths.",
     BF16,
     2,
     1,
     1,
     4,
     7,
     8,
     1,
     0,
     0,
     3,
     2,
     0,
     {7, 5},
     {0},
     0,
     0},
    {"combined.window_left_padding",
     "As mask.combined.window_left_padding.",
     F32,
     2,
     1,
     1,
     5,
     5,
     8,
     1,
     0,
     0,
     3,
     0,
     2,
     {0},
     {1, 3},
     0,
     0},
    {"combined.lengths_left_padding",
     "As mask.combined.lengths_left_padding.",
     F16,
     3,
     1,
     1,
     3,
     6,
     8,
     1,
     0,
     0,
     0,
     3,
     3,
     {5, 6, 3},
     {1, 0, 2},
     0,
     0},
    {"combined.all",
     "As mask.combined.all: causal, window, lengths and left padding at once.",
     BF16,
     3,
     1,
     1,
     4,
     7,
     8,
     1,
     0,
     0,
     3,
     3,
     3,
     {7, 6, 4},
     {0, 1, 2},
     0,
     0},
};

/* Composition with mask tensors, rows left with no key, and rejection. */
static const pcase OTHERS[] = {
    {"compose.lengths_bool",
     "Right padding intersected with a per-head boolean mask.",
     F32,
     2,
     4,
     2,
     5,
     33,
     16,
     0,
     0,
     0,
     0,
     2,
     0,
     {17, 33},
     {0},
     X_MASK_BOOL,
     0},
    {"compose.lengths_bool",
     "Right padding intersected with a per-head boolean mask.",
     BF16,
     2,
     4,
     2,
     5,
     33,
     16,
     0,
     0,
     0,
     0,
     2,
     0,
     {17, 33},
     {0},
     X_MASK_BOOL,
     0},
    {"compose.left_padding_key_mask",
     "Left padding intersected with a broadcast key mask.",
     F16,
     2,
     2,
     2,
     4,
     40,
     16,
     0,
     0,
     0,
     0,
     0,
     2,
     {0},
     {15, 1},
     X_MASK_BCAST,
     0},
    {"compose.decode_both_additive",
     "Decode with both paddings and an additive mask: the mask is added to the kept keys only.",
     F32,
     2,
     2,
     1,
     1,
     48,
     16,
     0,
     0,
     0,
     0,
     2,
     2,
     {47, 33},
     {2, 17},
     X_MASK_ADD,
     0},
    {"compose.both_additive",
     "Both paddings and an additive mask: the mask is added to the kept keys only.",
     F16,
     2,
     2,
     2,
     6,
     40,
     16,
     0,
     0,
     0,
     0,
     2,
     2,
     {31, 40},
     {1, 16},
     X_MASK_ADD,
     0},
    {"compose.both_additive",
     "Both paddings and an additive mask: the mask is added to the kept keys only.",
     BF16,
     2,
     2,
     2,
     6,
     40,
     16,
     0,
     0,
     0,
     0,
     2,
     2,
     {31, 40},
     {1, 16},
     X_MASK_ADD,
     0},

    {"empty.lengths_zero",
     "Batch rows of length 0 keep no key: their rows are exactly 0.",
     F32,
     3,
     2,
     2,
     3,
     5,
     8,
     1,
     0,
     0,
     0,
     3,
     0,
     {0, 5, 0},
     {0},
     X_POISON,
     0},
    {"empty.left_padding_lk",
     "Left padding Lk keeps no key: those rows are exactly 0.",
     BF16,
     2,
     2,
     1,
     3,
     5,
     8,
     0,
     0,
     0,
     0,
     0,
     2,
     {0},
     {5, 2},
     X_POISON,
     0},
    {"empty.window_lengths_disjoint",
     "The window of the last row ends past the valid keys: that row keeps nothing and is 0.",
     F16,
     1,
     1,
     1,
     2,
     6,
     8,
     1,
     0,
     0,
     2,
     1,
     0,
     {4},
     {0},
     X_POISON,
     0},
    {"empty.lq_gt_lk_lengths",
     "Lq > Lk with causal and lengths: the first rows keep nothing.",
     F32,
     2,
     1,
     1,
     6,
     4,
     8,
     1,
     0,
     0,
     0,
     2,
     0,
     {3, 4},
     {0},
     0,
     0},
    {"empty.prefill_left_padding",
     "Prefill whose left padding passes the cached prefix: the padding queries keep no key.",
     BF16,
     2,
     2,
     2,
     64,
     128,
     16,
     1,
     0,
     0,
     0,
     0,
     2,
     {0},
     {100, 0},
     X_POISON,
     0},
    {"compose.explicit_offset_lengths",
     "Explicit causal offset 0 (top-left) with lengths: the lengths never move the offset.",
     F16,
     2,
     1,
     1,
     4,
     8,
     8,
     1,
     1,
     0,
     0,
     2,
     0,
     {2, 8},
     {0},
     0,
     0},

    {"invalid.window_negative",
     "A negative window.",
     F32,
     1,
     1,
     1,
     3,
     5,
     8,
     1,
     0,
     0,
     -1,
     0,
     0,
     {0},
     {0},
     0,
     ATTNREF_EINVAL},
    {"invalid.window_without_causal",
     "A window without the causal flag.",
     F32,
     1,
     1,
     1,
     3,
     5,
     8,
     0,
     0,
     0,
     2,
     0,
     0,
     {0},
     {0},
     0,
     ATTNREF_EINVAL},
    {"invalid.window_with_mask",
     "A window with a mask tensor (and so without causal).",
     F32,
     1,
     1,
     1,
     3,
     5,
     8,
     0,
     0,
     0,
     2,
     0,
     0,
     {0},
     {0},
     X_MASK_BOOL,
     ATTNREF_EINVAL},
    {"invalid.lengths_negative",
     "A negative lengths entry.",
     F32,
     2,
     1,
     1,
     3,
     5,
     8,
     0,
     0,
     0,
     0,
     2,
     0,
     {5, -1},
     {0},
     0,
     ATTNREF_EINVAL},
    {"invalid.lengths_over_lk",
     "A lengths entry past Lk.",
     F32,
     2,
     1,
     1,
     3,
     5,
     8,
     1,
     0,
     0,
     0,
     2,
     0,
     {6, 2},
     {0},
     0,
     ATTNREF_EINVAL},
    {"invalid.left_padding_negative",
     "A negative left_padding entry.",
     F32,
     2,
     1,
     1,
     3,
     5,
     8,
     0,
     0,
     0,
     0,
     0,
     2,
     {0},
     {-1, 0},
     0,
     ATTNREF_EINVAL},
    {"invalid.left_padding_over_lk",
     "A left_padding entry past Lk.",
     F32,
     2,
     1,
     1,
     3,
     5,
     8,
     1,
     0,
     0,
     0,
     0,
     2,
     {0},
     {0, 6},
     0,
     ATTNREF_EINVAL},
};

/* The shape classes of sdpa.paths (see fam_paths.c), where kernels switch code paths. */
static const struct cls {
    const char *name;
    int64_t lq, lk;
} CLASSES[] = {{"q1_k40", 1, 40},    {"q1_k600", 1, 600},   {"q8_k600", 8, 600},
               {"q80_k96", 80, 96},  {"q80_k600", 80, 600}, {"q63_k511", 63, 511},
               {"q65_k513", 65, 513}};

/* sdpa.paths' window, left_padding, poison, poison_b1 and fully_masked rows in parameter form,
 * at the same classes and dtypes. */
static void paths(cg *g)
{
    static const struct {
        const char *sem;
        int cls;
        attnref_dtype dt;
    } ROWS[] = {
        {"window", 0, BF16},       {"window", 1, F16},        {"window", 2, F32},
        {"window", 3, F32},        {"window", 4, F16},        {"window", 5, BF16},
        {"left_padding", 0, F32},  {"left_padding", 1, BF16}, {"left_padding", 2, F16},
        {"left_padding", 3, BF16}, {"left_padding", 4, F32},  {"left_padding", 6, F16},
        {"poison", 0, F32},        {"poison", 1, BF16},       {"poison", 2, F16},
        {"poison", 3, F32},        {"poison", 4, F16},        {"poison", 6, BF16},
        {"poison_b1", 1, F16},     {"poison_b1", 1, F32},     {"fully_masked", 0, F16},
        {"fully_masked", 1, F32},  {"fully_masked", 2, BF16}, {"fully_masked", 3, F16},
        {"fully_masked", 4, BF16}, {"fully_masked", 5, F32},
    };
    for (size_t r = 0; r < sizeof ROWS / sizeof ROWS[0]; r++) {
        const struct cls *k = &CLASSES[ROWS[r].cls];
        const char *sem = ROWS[r].sem;
        char stem[64];
        snprintf(stem, sizeof stem, "paths.%s.%s", sem, k->name);
        pcase s = {.stem = stem,
                   .dt = ROWS[r].dt,
                   .b = 2,
                   .hq = 2,
                   .hkv = 2,
                   .lq = k->lq,
                   .lk = k->lk,
                   .d = k->lq * k->lk < 64 ? 32 : 16,
                   .causal = 1};
        const int64_t off = k->lk - k->lq;
        if (!strcmp(sem, "window")) {
            s.what = "As sdpa.paths.window: a sliding window of 32 at a kernel-path shape class.";
            s.b = 1;
            s.window = 32;
        } else if (!strcmp(sem, "left_padding")) {
            s.what = "As sdpa.paths.left_padding: left padding at a kernel-path shape class.";
            s.nlp = 2;
            s.left_padding[1] = k->lk / 3;
        } else if (!strcmp(sem, "poison")) {
            s.what = "As sdpa.paths.poison: right padding over poisoned slots at a kernel-path "
                     "shape class.";
            s.hq = s.hkv = 1;
            s.nlen = 2;
            s.lengths[0] = k->lk - 3;
            s.lengths[1] = 2 * k->lk / 3 + 1;
            s.extra = X_POISON;
        } else if (!strcmp(sem, "poison_b1")) {
            s.what = "As sdpa.paths.poison_b1: one sequence, its last third poisoned padding "
                     "(what selects a split-KV decode kernel).";
            s.b = 1;
            s.hq = s.hkv = 1;
            s.nlen = 1;
            s.lengths[0] = 2 * k->lk / 3 + 1;
            s.extra = X_POISON;
        } else {
            s.what = "As sdpa.paths.fully_masked: a sequence of length 0 (and, with Lq > 1, "
                     "padding queries) at a kernel-path shape class.";
            s.nlen = 2;
            s.lengths[0] = k->lk - 2;
            s.lengths[1] = 0;
            if (k->lq > 1) {
                s.nlp = 2;
                s.left_padding[0] = off + k->lq / 4;
            }
        }
        params_case(g, &s);
    }
}

/* Block edges.  A kernel that tiles keys by 16, 32, 64 or 128 decides per tile whether it is
 * fully visible, fully masked or partial; the edge cases are a masked region ending one key
 * before, exactly on, and one key after a tile boundary. */
static void blocks(cg *g)
{
    static const int64_t WINDOWS[] = {15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129};
    int rot = 0;
    char stem[64];
    /* Decode over 256 keys: the visible range starts at 256 - W, so W = 16k puts the edge on a
     * 16k-key boundary and W = 16k +- 1 one key to either side. */
    for (size_t w = 0; w < sizeof WINDOWS / sizeof WINDOWS[0]; w++, rot++) {
        snprintf(stem, sizeof stem, "blocks.decode_w%lld_k256", (long long)WINDOWS[w]);
        /* (w + w / 3) % 3: the on-boundary windows (every third) meet every dtype too */
        pcase s = {.stem = stem,
                   .dt = CG_DTYPES[(w + w / 3) % 3],
                   .b = 1,
                   .hq = 2,
                   .hkv = w % 2 ? 1 : 2,
                   .lq = 1,
                   .lk = 256,
                   .d = 8,
                   .causal = 1,
                   .window = WINDOWS[w],
                   .extra = X_SPIKE | (w % 3 == 0 ? X_POISON : 0),
                   .what = "Decode with a window whose edge falls on or next to a key-block "
                           "boundary."};
        if (s.extra)
            s.hkv = 1; /* poisoned K/V are written inline: keep them small */
        params_case(g, &s);
    }
    /* Decode over 257 keys: the same windows end one key later. */
    static const int64_t W257[] = {16, 32, 64, 128};
    for (size_t w = 0; w < 4; w++, rot++) {
        snprintf(stem, sizeof stem, "blocks.decode_w%lld_k257", (long long)W257[w]);
        pcase s = {.stem = stem,
                   .dt = CG_DTYPES[rot % 3],
                   .b = 1,
                   .hq = 2,
                   .hkv = 2,
                   .lq = 1,
                   .lk = 257,
                   .d = 8,
                   .causal = 1,
                   .window = W257[w],
                   .extra = X_SPIKE,
                   .what = "Decode with a window one key past a key-block boundary."};
        params_case(g, &s);
    }
    /* Prefill: every row's window edge moves by one key, so each row meets another alignment. */
    static const struct {
        int64_t lq, lk, w;
    } PRE[] = {{64, 128, 16}, {64, 128, 33}, {64, 128, 64},  {64, 128, 127},
               {80, 257, 31}, {80, 257, 65}, {80, 257, 128}, {80, 257, 129}};
    for (size_t p = 0; p < sizeof PRE / sizeof PRE[0]; p++, rot++) {
        snprintf(stem, sizeof stem, "blocks.prefill_q%lld_k%lld_w%lld", (long long)PRE[p].lq,
                 (long long)PRE[p].lk, (long long)PRE[p].w);
        pcase s = {.stem = stem,
                   .dt = CG_DTYPES[rot % 3],
                   .b = 1,
                   .hq = 2,
                   .hkv = p % 2 ? 1 : 2,
                   .lq = PRE[p].lq,
                   .lk = PRE[p].lk,
                   .d = 8,
                   .causal = 1,
                   .window = PRE[p].w,
                   .what = "Prefill (Lq >= 64) with a window: the window edge crosses key-block "
                           "boundaries row by row."};
        params_case(g, &s);
    }
    /* lengths and left padding at 16k - 1, 16k, 16k + 1 (one batch row each) plus a full row. */
    static const struct {
        int64_t lk, at, last_len, last_lp;
    } EDGES[] = {{128, 16, 128, 0}, {129, 32, 129, 1}, {255, 64, 255, 0}, {257, 128, 257, 0}};
    for (size_t e = 0; e < 4; e++)
        for (int kind = 0; kind < 2; kind++)           /* lengths, left padding */
            for (int pre = 0; pre < 2; pre++, rot++) { /* decode, prefill */
                const int64_t lk = EDGES[e].lk, at = EDGES[e].at;
                snprintf(stem, sizeof stem, "blocks.%s_%s%lld_k%lld", pre ? "prefill" : "decode",
                         kind ? "left_padding" : "lengths", (long long)at, (long long)lk);
                pcase s = {.stem = stem,
                           .dt = CG_DTYPES[rot % 3],
                           .b = 4,
                           .hq = 2,
                           .hkv = e % 2 ? 1 : 2,
                           .lq = pre ? 64 : 1,
                           .lk = lk,
                           .d = 8,
                           .causal = !(pre && e % 2), /* prefill without causal: plain varlen */
                           .what = kind ? "Left padding ending one key before, on, and one key "
                                          "after a key-block boundary."
                                        : "Right padding ending one key before, on, and one key "
                                          "after a key-block boundary."};
                int64_t *a = kind ? s.left_padding : s.lengths;
                a[0] = at - 1;
                a[1] = at;
                a[2] = at + 1;
                a[3] = kind ? EDGES[e].last_lp : EDGES[e].last_len;
                if (kind)
                    s.nlp = 4;
                else
                    s.nlen = 4;
                s.extra = pre ? 0 : X_POISON | X_SPIKE; /* decode: poisoned excluded slots */
                if (s.extra)
                    s.hkv = 1;
                params_case(g, &s);
            }
    /* Everything at once at block edges: window, lengths and left padding, GQA, prefill. */
    for (int t = 0; t < 3; t++) {
        pcase s = {.stem = "blocks.prefill_all_q64_k257",
                   .dt = CG_DTYPES[t],
                   .b = 4,
                   .hq = 2,
                   .hkv = 1,
                   .lq = 64,
                   .lk = 257,
                   .d = 8,
                   .causal = 1,
                   .window = 65,
                   .nlen = 4,
                   .nlp = 4,
                   .lengths = {255, 161, 200, 257},
                   .left_padding = {143, 160, 176, 193},
                   .what = "Window, lengths and left padding together, each edge on or next to a "
                           "key-block boundary, with GQA."};
        params_case(g, &s);
    }
}

void fam_params(cg *g)
{
    for (size_t n = 0; n < sizeof MIRRORS / sizeof MIRRORS[0]; n++)
        params_case(g, &MIRRORS[n]);
    for (size_t n = 0; n < sizeof OTHERS / sizeof OTHERS[0]; n++)
        params_case(g, &OTHERS[n]);
    paths(g);
    blocks(g);
}
