/* fuzz_meta.c — metamorphic relations of sdpa that need no oracle (fuzz.h).
 *
 * Each relation derives one or two calls from a base call such that the base output is
 * determined by the derived outputs: the backend is compared with itself, which catches bugs
 * that depend on where a key sits, on the batch, on GQA grouping or on how a prefill is cut,
 * even where the reference and the backend legitimately differ in rounding.
 *
 * The terms of SPEC clauses 20-22, relation by relation.  Soft-capping acts on each score and a
 * sink on each head's normaliser, so every relation holds with them.  ALiBi, chunks, documents
 * and blocks tie a key to its position: permuting the keys does not apply with any of them
 * (chunk and blocks need causal, which it already excludes; segment ids are indexed by the
 * query's position as well as the key's).  One batch row alone keeps its id row, sinks and
 * slopes (ALiBi slopes depend on Hq and the head only).  Repeating K/V heads leaves Hq, the
 * heads' slopes and sinks as they were.  A causal prefill in two chunks keeps every query's
 * absolute position (so ALiBi distances, chunk boundaries from the same left padding and the
 * query's document / block id are unchanged), but the bottom-right form cuts the keys after
 * the first chunk's last position, which a bidirectional block may still see: not with blocks.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

const char *hf_meta_name(int rel)
{
    switch (rel) {
    case HF_META_PERMUTE_KEYS: return "permute_keys";
    case HF_META_BATCH_ROW: return "batch_row";
    case HF_META_GQA_REPEAT: return "gqa_repeat";
    case HF_META_CHUNKED: return "chunked_prefill";
    default: return "?";
    }
}

/* Keys permuted (with the mask's key columns): position p of the derived call holds key
 * perm[p].  Only without parameter masks, which depend on key positions. */
static int derive_permute(const hf_call *c, uint64_t pick, hf_call *out)
{
    if (c->causal || c->lengths || c->left_padding || c->Lk < 2 || c->alibi_max_bias != 0.0 ||
        c->segment_ids || c->chunk || c->block_ids)
        return 1;
    int64_t *perm = malloc((size_t)c->Lk * sizeof *perm);
    if (!perm)
        return -1;
    for (int64_t j = 0; j < c->Lk; j++)
        perm[j] = j;
    uint64_t rng = pick;
    for (int64_t j = c->Lk - 1; j > 0; j--) { /* Fisher-Yates */
        int64_t r = (int64_t)(acase_splitmix64_next(&rng) % (uint64_t)(j + 1));
        int64_t t = perm[j];
        perm[j] = perm[r];
        perm[r] = t;
    }
    if (hf_call_copy(out, c) != 0) {
        free(perm);
        return -1;
    }
    const int64_t rows = c->B * c->Hkv;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t p = 0; p < c->Lk; p++) {
            memcpy(out->k + (r * c->Lk + p) * c->D, c->k + (r * c->Lk + perm[p]) * c->D,
                   (size_t)c->D * sizeof *c->k);
            memcpy(out->v + (r * c->Lk + p) * c->Dv, c->v + (r * c->Lk + perm[p]) * c->Dv,
                   (size_t)c->Dv * sizeof *c->v);
        }
    if (c->mask_kind && c->mshape[3] > 1) {
        const int64_t mrows = c->mshape[0] * c->mshape[1] * c->mshape[2];
        for (int64_t r = 0; r < mrows; r++)
            for (int64_t p = 0; p < c->Lk; p++)
                out->mask[r * c->Lk + p] = c->mask[r * c->Lk + perm[p]];
    }
    free(perm);
    return 0;
}

/* K/V heads repeated so that every query head has its own (Hkv = Hq). */
static int derive_gqa(const hf_call *c, hf_call *out)
{
    if (c->Hq == c->Hkv)
        return 1;
    if (hf_call_copy(out, c) != 0)
        return -1;
    const int64_t g = c->Hq / c->Hkv;
    out->Hkv = c->Hq;
    free(out->k);
    free(out->v);
    out->k = malloc((size_t)(c->B * c->Hq * c->Lk * c->D + 1) * sizeof *out->k);
    out->v = malloc((size_t)(c->B * c->Hq * c->Lk * c->Dv + 1) * sizeof *out->v);
    if (!out->k || !out->v) {
        hf_call_free(out);
        return -1;
    }
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t h = 0; h < c->Hq; h++) {
            const int64_t src = b * c->Hkv + h / g, dst = b * c->Hq + h;
            memcpy(out->k + dst * c->Lk * c->D, c->k + src * c->Lk * c->D,
                   (size_t)(c->Lk * c->D) * sizeof *c->k);
            memcpy(out->v + dst * c->Lk * c->Dv, c->v + src * c->Lk * c->Dv,
                   (size_t)(c->Lk * c->Dv) * sizeof *c->v);
        }
    return 0;
}

/* Causal prefill cut after query `cut`: the first chunk sees the keys up to its own causal
 * end (bottom-right alignment then gives the same offset) or keeps the explicit offset; the
 * second chunk's offset moves by `cut`. */
static int derive_chunked(const hf_call *c, uint64_t pick, hf_call out[2])
{
    if (!c->causal || c->Lq < 2)
        return 1;
    const int64_t cut = 1 + (int64_t)(pick % (uint64_t)(c->Lq - 1));
    if (c->has_offset) {
        if (hf_restrict(c, HF_AX_LQ, 0, cut, &out[0]) != 0)
            return -1;
        if (hf_restrict(c, HF_AX_LQ, cut, c->Lq, &out[1]) != 0) {
            hf_call_free(&out[0]);
            return -1;
        }
        if (__builtin_add_overflow(c->offset, cut, &out[1].offset)) {
            hf_call_free(&out[0]);
            hf_call_free(&out[1]);
            return 1;
        }
        return 0;
    }
    const int64_t off = c->Lk - c->Lq; /* bottom-right */
    if (off < 0 || c->block_ids)
        return 1;
    hf_call first;
    if (hf_restrict(c, HF_AX_LQ, 0, cut, &first) != 0)
        return -1;
    int rc = hf_restrict(&first, HF_AX_LK, 0, off + cut, &out[0]);
    hf_call_free(&first);
    if (rc != 0)
        return -1;
    if (hf_restrict(c, HF_AX_LQ, cut, c->Lq, &out[1]) != 0) {
        hf_call_free(&out[0]);
        return -1;
    }
    return 0;
}

static int derive(int rel, const hf_call *base, uint64_t pick, hf_call out[2], int *n)
{
    *n = 1;
    switch (rel) {
    case HF_META_PERMUTE_KEYS: return derive_permute(base, pick, &out[0]);
    case HF_META_BATCH_ROW: {
        if (base->B < 2)
            return 1;
        const int64_t b = (int64_t)(pick % (uint64_t)base->B);
        return hf_restrict(base, HF_AX_B, b, b + 1, &out[0]);
    }
    case HF_META_GQA_REPEAT: return derive_gqa(base, &out[0]);
    case HF_META_CHUNKED: *n = 2; return derive_chunked(base, pick, out);
    default: return 1;
    }
}

/* A derived call of a correctly rounded base stays one only while it keeps the property. */
int hf_meta_derive(int rel, const hf_call *base, uint64_t pick, hf_call out[2], int *n)
{
    const int rc = derive(rel, base, pick, out, n);
    if (rc == 0 && base->exact)
        for (int i = 0; i < *n; i++)
            out[i].exact = hf_exact_ok(&out[i]);
    return rc;
}

int hf_meta_map(int rel, const hf_call *base, uint64_t pick, const hf_call derived[2],
                uint8_t **src_call, int64_t **src_index)
{
    const int64_t B = base->B, Hq = base->Hq, Lq = base->Lq, Dv = base->Dv;
    const int64_t numel = B * Hq * Lq * Dv;
    *src_call = malloc((size_t)(numel + 1));
    *src_index = malloc((size_t)(numel + 1) * sizeof **src_index);
    if (!*src_call || !*src_index) {
        free(*src_call);
        free(*src_index);
        *src_call = NULL;
        *src_index = NULL;
        return -1;
    }
    const int64_t row_b = rel == HF_META_BATCH_ROW ? (int64_t)(pick % (uint64_t)B) : -1;
    const int64_t cut = rel == HF_META_CHUNKED ? derived[0].Lq : 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < Lq; i++)
                for (int64_t x = 0; x < Dv; x++) {
                    const int64_t e = ((b * Hq + h) * Lq + i) * Dv + x;
                    uint8_t call = 0;
                    int64_t idx = e;
                    if (rel == HF_META_BATCH_ROW) {
                        call = b == row_b ? 0 : 255; /* 255: not compared */
                        idx = (h * Lq + i) * Dv + x;
                    } else if (rel == HF_META_CHUNKED) {
                        const int64_t lq = i < cut ? cut : Lq - cut;
                        call = i < cut ? 0 : 1;
                        idx = ((b * Hq + h) * lq + (i < cut ? i : i - cut)) * Dv + x;
                    }
                    (*src_call)[e] = call;
                    (*src_index)[e] = idx;
                }
    return 0;
}
