/* fuzz_shrink.c — the simplifications `attnconf fuzz` tries on a failing call.
 *
 * Structural steps restrict the call to a subset of its batch rows, heads, queries, keys and
 * feature columns (every remaining value is kept, so the failing elements usually survive);
 * the others drop one feature (a mask, a parameter, an explicit scale, a permuted layout, the
 * poison).  The driver (fuzz_session.c) keeps a candidate only if it still fails the same way.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

/* Which indices of each axis a restriction keeps. */
typedef struct keeps {
    uint8_t *ax[7]; /* B, Hq, Hkv, Lq, Lk, D, Dv; NULL = keep all */
} keeps;

enum { AX_B = HF_AX_B, AX_HQ, AX_HKV, AX_LQ, AX_LK, AX_D, AX_DV };

static int64_t extent(const hf_call *c, int ax)
{
    const int64_t e[7] = {c->B, c->Hq, c->Hkv, c->Lq, c->Lk, c->D, c->Dv};
    return e[ax];
}

static int64_t kept_count(const keeps *k, int ax, int64_t n)
{
    if (!k->ax[ax])
        return n;
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        m += k->ax[ax][i] != 0;
    return m;
}

static int kept(const keeps *k, int ax, int64_t i)
{
    return !k->ax[ax] || k->ax[ax][i];
}

/* Restrict a rank-4 row-major array of shape sh to the kept indices of axes ax[0..3] (an axis
 * of extent 1 in a broadcast mask, marked -1, is kept whole). */
static double *restrict4(const double *src, const int64_t sh[4], const int ax[4], const keeps *k,
                         int64_t nsh[4])
{
    for (int d = 0; d < 4; d++)
        nsh[d] = ax[d] < 0 ? sh[d] : kept_count(k, ax[d], sh[d]);
    int64_t n = nsh[0] * nsh[1] * nsh[2] * nsh[3];
    double *dst = malloc((size_t)(n > 0 ? n : 1) * sizeof *dst);
    if (!dst)
        return NULL;
    int64_t o = 0;
    for (int64_t a = 0; a < sh[0]; a++) {
        if (ax[0] >= 0 && !kept(k, ax[0], a))
            continue;
        for (int64_t b = 0; b < sh[1]; b++) {
            if (ax[1] >= 0 && !kept(k, ax[1], b))
                continue;
            for (int64_t c = 0; c < sh[2]; c++) {
                if (ax[2] >= 0 && !kept(k, ax[2], c))
                    continue;
                for (int64_t d = 0; d < sh[3]; d++)
                    if (ax[3] < 0 || kept(k, ax[3], d))
                        dst[o++] = src[((a * sh[1] + b) * sh[2] + c) * sh[3] + d];
            }
        }
    }
    return dst;
}

/* The call restricted to the kept indices; lengths and left padding count the kept keys below
 * their old bound, so a key keeps its padding status. */
static int apply_keeps(const hf_call *c, const keeps *k, hf_call *out)
{
    memset(out, 0, sizeof *out);
    *out = *c;
    out->q = out->k = out->v = out->mask = NULL;
    out->lengths = out->left_padding = NULL;
    out->sinks = NULL;
    out->segment_ids = out->block_ids = NULL;
    out->B = kept_count(k, AX_B, c->B);
    out->Hq = kept_count(k, AX_HQ, c->Hq);
    out->Hkv = kept_count(k, AX_HKV, c->Hkv);
    out->Lq = kept_count(k, AX_LQ, c->Lq);
    out->Lk = kept_count(k, AX_LK, c->Lk);
    out->D = kept_count(k, AX_D, c->D);
    out->Dv = kept_count(k, AX_DV, c->Dv);
    int64_t ns[4];
    const int64_t qs[4] = {c->B, c->Hq, c->Lq, c->D}, ks[4] = {c->B, c->Hkv, c->Lk, c->D},
                  vs[4] = {c->B, c->Hkv, c->Lk, c->Dv};
    const int qa[4] = {AX_B, AX_HQ, AX_LQ, AX_D}, ka[4] = {AX_B, AX_HKV, AX_LK, AX_D},
              va[4] = {AX_B, AX_HKV, AX_LK, AX_DV};
    out->q = restrict4(c->q, qs, qa, k, ns);
    out->k = restrict4(c->k, ks, ka, k, ns);
    out->v = restrict4(c->v, vs, va, k, ns);
    if (c->mask_kind) {
        int ma[4] = {AX_B, AX_HQ, AX_LQ, AX_LK};
        for (int d = 0; d < 4; d++)
            if (c->mshape[d] == 1)
                ma[d] = -1;
        out->mask = restrict4(c->mask, c->mshape, ma, k, out->mshape);
        if (!out->mask)
            goto oom;
    }
    if (!out->q || !out->k || !out->v)
        goto oom;
    const int64_t *src[2] = {c->lengths, c->left_padding};
    int64_t **dst[2] = {&out->lengths, &out->left_padding};
    for (int a = 0; a < 2; a++) {
        if (!src[a])
            continue;
        if (!(*dst[a] = malloc((size_t)(out->B > 0 ? out->B : 1) * sizeof(int64_t))))
            goto oom;
        int64_t o = 0;
        for (int64_t b = 0; b < c->B; b++) {
            if (!kept(k, AX_B, b))
                continue;
            int64_t n = 0;
            for (int64_t j = 0; j < src[a][b] && j < c->Lk; j++)
                n += kept(k, AX_LK, j);
            (*dst[a])[o++] = n;
        }
    }
    if (c->sinks) { /* one per query head: the kept heads' */
        if (!(out->sinks = malloc((size_t)(out->Hq > 0 ? out->Hq : 1) * sizeof *out->sinks)))
            goto oom;
        int64_t o = 0;
        for (int64_t h = 0; h < c->Hq; h++)
            if (kept(k, AX_HQ, h))
                out->sinks[o++] = c->sinks[h];
    }
    /* Ids are [B, Lk] rows: the kept batch rows' kept key slots (a query indexes them by its
     * absolute position, which the restricted call reads in the restricted slots). */
    const int64_t *ids[2] = {c->segment_ids, c->block_ids};
    int64_t **ido[2] = {&out->segment_ids, &out->block_ids};
    for (int a = 0; a < 2; a++) {
        if (!ids[a])
            continue;
        if (out->Lk < 1) { /* no key slot left: ids need Lk >= 1 (blocks stay valid without) */
            continue;
        }
        const int64_t n = out->B * out->Lk;
        if (!(*ido[a] = malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t))))
            goto oom;
        int64_t o = 0;
        for (int64_t b = 0; b < c->B; b++)
            for (int64_t j = 0; kept(k, AX_B, b) && j < c->Lk; j++)
                if (kept(k, AX_LK, j))
                    (*ido[a])[o++] = ids[a][b * c->Lk + j];
    }
    return 0;
oom:
    hf_call_free(out);
    return -1;
}

static uint8_t *axis_keep(keeps *k, int ax, int64_t n)
{
    if (!k->ax[ax]) {
        k->ax[ax] = malloc((size_t)(n > 0 ? n : 1));
        if (k->ax[ax])
            memset(k->ax[ax], 1, (size_t)(n > 0 ? n : 1));
    }
    return k->ax[ax];
}

static void keeps_free(keeps *k)
{
    for (int a = 0; a < 7; a++)
        free(k->ax[a]);
}

/* Structural candidates, in order: each (axis, what) below. */
typedef struct step {
    int ax;
    int kind; /* 0 drop index i, 1 keep first half, 2 keep second half, 3 drop the last */
    int64_t i;
} step;

/* Build the structural step number k (0-based) of c; returns 0 with *s, or 1 past the end. */
static int structural_step(const hf_call *c, int k, step *s)
{
    const int64_t g = c->Hkv ? c->Hq / c->Hkv : 1;
    /* halves first (fast), then single indices, then feature columns */
    const int halves[] = {AX_B, AX_HKV, AX_LQ, AX_LK, AX_D, AX_DV};
    for (size_t a = 0; a < sizeof halves / sizeof halves[0]; a++) {
        const int ax = halves[a];
        if (extent(c, ax) < 2)
            continue;
        for (int h = 1; h <= 2; h++)
            if (k-- == 0) {
                *s = (step){ax, h, 0};
                return 0;
            }
    }
    if (g > 1 && k < g) { /* one member of every GQA group */
        *s = (step){AX_HQ, 0, k};
        return 0;
    }
    if (g > 1)
        k -= (int)g;
    const int singles[] = {AX_B, AX_HKV, AX_LQ, AX_LK};
    for (size_t a = 0; a < sizeof singles / sizeof singles[0]; a++) {
        const int64_t n = extent(c, singles[a]);
        if (n < 2)
            continue;
        if (k < n) {
            *s = (step){singles[a], 0, k};
            return 0;
        }
        k -= (int)n;
    }
    const int cols[] = {AX_D, AX_DV};
    for (size_t a = 0; a < 2; a++) {
        if (extent(c, cols[a]) < 2)
            continue;
        if (k-- == 0) {
            *s = (step){cols[a], 3, 0};
            return 0;
        }
    }
    return 1;
}

static int apply_step(const hf_call *c, const step *s, hf_call *out)
{
    keeps k;
    memset(&k, 0, sizeof k);
    const int64_t n = extent(c, s->ax);
    uint8_t *m = axis_keep(&k, s->ax, n);
    if (!m)
        return -1;
    if (s->kind == 1 || s->kind == 2)
        for (int64_t i = 0; i < n; i++)
            m[i] = s->kind == 1 ? i < (n + 1) / 2 : i >= (n + 1) / 2;
    else if (s->kind == 3)
        m[n - 1] = 0;
    else if (s->ax != AX_HQ)
        m[s->i] = 0;
    const int64_t g = c->Hkv ? c->Hq / c->Hkv : 1;
    if (s->ax == AX_HKV) { /* the query heads of a dropped kv head go with it */
        uint8_t *hq = axis_keep(&k, AX_HQ, c->Hq);
        if (!hq) {
            keeps_free(&k);
            return -1;
        }
        for (int64_t h = 0; h < c->Hq; h++)
            hq[h] = m[h / g];
    } else if (s->ax == AX_HQ) { /* group member s->i of every group */
        for (int64_t h = 0; h < c->Hq; h++)
            m[h] = h % g != s->i;
    }
    int rc = apply_keeps(c, &k, out);
    keeps_free(&k);
    return rc;
}

/* Feature steps: 0 no mask, 1 additive -> bool, 2..4 one mask dimension broadcast, 5 no
 * window, 6 no lengths, 7 no left padding, 8 no causal (once nothing needing it is left), 9 no
 * offset, 10 no scale, 11..13 bhld layout, 14..16 no stride0, 17 no poison, 18 no softcap, 19 no
 * ALiBi, 20 no sinks, 21 no chunk, 22 no segment ids, 23 no block ids.  Returns 1 when the step
 * does not apply. */
#define HF_FEATURE_STEPS 24
static int feature_step(const hf_call *c, int f, hf_call *out)
{
    int ok;
    switch (f) {
    case 0: ok = c->mask_kind != HF_MASK_NONE; break;
    case 1: ok = c->mask_kind == HF_MASK_ADD; break;
    case 2:
    case 3:
    case 4: ok = c->mask_kind && c->mshape[f - 2] > 1; break;
    case 5: ok = c->window != 0; break;
    case 6: ok = c->lengths != NULL; break;
    case 7: ok = c->left_padding != NULL; break;
    case 8: ok = c->causal && !c->window && !c->chunk && !c->block_ids; break;
    case 9: ok = c->has_offset; break;
    case 10: ok = c->has_scale; break;
    case 11:
    case 12:
    case 13: ok = c->layout[f - 11] != ACASE_LAYOUT_BHLD; break;
    case 14:
    case 15:
    case 16: ok = c->stride0[f - 14] != 0; break;
    case 17: ok = c->poison; break;
    case 18: ok = c->softcap != 0.0; break;
    case 19: ok = c->alibi_max_bias != 0.0; break;
    case 20: ok = c->sinks != NULL; break;
    case 21: ok = c->chunk != 0; break;
    case 22: ok = c->segment_ids != NULL; break;
    case 23: ok = c->block_ids != NULL; break;
    default: return 2;
    }
    if (!ok)
        return 1;
    if (hf_call_copy(out, c) != 0)
        return -1;
    switch (f) {
    case 0:
        free(out->mask);
        out->mask = NULL;
        out->mask_kind = HF_MASK_NONE;
        out->mask_ndim = 0;
        memset(out->mshape, 0, sizeof out->mshape);
        break;
    case 1: {
        const int64_t n = c->mshape[0] * c->mshape[1] * c->mshape[2] * c->mshape[3];
        for (int64_t e = 0; e < n; e++)
            out->mask[e] = c->mask[e] != -INFINITY;
        out->mask_kind = HF_MASK_BOOL;
        out->mask_dt = ATTNREF_BOOL;
        break;
    }
    case 2:
    case 3:
    case 4: {
        keeps k;
        memset(&k, 0, sizeof k);
        /* index 0 along that mask dimension, then broadcast: restrict a copy whose other
         * tensors are untouched */
        const int d = f - 2;
        const int64_t n = c->mshape[d];
        uint8_t *m = malloc((size_t)n);
        if (!m) {
            hf_call_free(out);
            return -1;
        }
        memset(m, 0, (size_t)n);
        m[0] = 1;
        k.ax[0] = m; /* restrict4 reads ax indices; use slot 0 for the one mask axis */
        int ax[4] = {-1, -1, -1, -1};
        ax[d] = 0;
        int64_t ns[4];
        double *nm = restrict4(c->mask, c->mshape, ax, &k, ns);
        free(m);
        if (!nm) {
            hf_call_free(out);
            return -1;
        }
        free(out->mask);
        out->mask = nm;
        memcpy(out->mshape, ns, sizeof ns);
        break;
    }
    case 5: out->window = 0; break;
    case 6:
        free(out->lengths);
        out->lengths = NULL;
        break;
    case 7:
        free(out->left_padding);
        out->left_padding = NULL;
        break;
    case 8:
        out->causal = 0;
        out->has_offset = 0;
        out->offset = 0;
        break;
    case 9:
        out->has_offset = 0;
        out->offset = 0;
        break;
    case 10:
        out->has_scale = 0;
        out->scale = 0;
        break;
    case 11:
    case 12:
    case 13: out->layout[f - 11] = ACASE_LAYOUT_BHLD; break;
    case 14:
    case 15:
    case 16: out->stride0[f - 14] = 0; break;
    case 17: {
        const int64_t nk = c->B * c->Hkv * c->Lk * c->D, nv = c->B * c->Hkv * c->Lk * c->Dv;
        for (int64_t e = 0; e < nk; e++)
            if (!isfinite(out->k[e]) || fabs(out->k[e]) >= 1e30)
                out->k[e] = 0.0;
        for (int64_t e = 0; e < nv; e++)
            if (!isfinite(out->v[e]) || fabs(out->v[e]) >= 1e30)
                out->v[e] = 0.0;
        out->poison = 0;
        break;
    }
    case 18: out->softcap = 0.0; break;
    case 19: out->alibi_max_bias = 0.0; break;
    case 20:
        free(out->sinks);
        out->sinks = NULL;
        break;
    case 21: out->chunk = 0; break;
    case 22:
        free(out->segment_ids);
        out->segment_ids = NULL;
        break;
    case 23:
        free(out->block_ids);
        out->block_ids = NULL;
        break;
    }
    return 0;
}

static int candidate(const hf_call *c, int k, hf_call *out)
{
    step s;
    if (structural_step(c, k, &s) == 0)
        return apply_step(c, &s, out) == 0 ? 0 : -1;
    /* past the structural steps: count them to find the feature step */
    int ns = 0;
    while (structural_step(c, ns, &s) == 0)
        ns++;
    return feature_step(c, k - ns, out);
}

/* A correctly rounded call only shrinks to calls that stay exact (a row keeping 3 of 4 keys
 * has an inexact 1/3 weight and its EXACT expectation would be wrong): such steps are skipped. */
int hf_shrink_candidate(const hf_call *c, int k, hf_call *out)
{
    const int rc = candidate(c, k, out);
    if (rc == 0 && c->exact && !hf_exact_ok(out)) {
        hf_call_free(out);
        return 1;
    }
    return rc;
}

int hf_restrict(const hf_call *c, int ax, int64_t lo, int64_t hi, hf_call *out)
{
    keeps k;
    memset(&k, 0, sizeof k);
    const int64_t n = extent(c, ax);
    uint8_t *m = axis_keep(&k, ax, n);
    if (!m)
        return -1;
    for (int64_t i = 0; i < n; i++)
        m[i] = i >= lo && i < hi;
    int rc = apply_keeps(c, &k, out);
    keeps_free(&k);
    return rc;
}
