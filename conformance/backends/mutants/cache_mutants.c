/* cache_mutants.c — the one bug of each test-only cache mutant (see cache_mutants.h). */
#include "cache_mutants.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attnref/dtype.h"
/* The batch-operation mutants edit the reference cache's rows after the correct operation, so
 * they read its private state (reference/src, test-only). */
#include "cache_internal.h"

#define BUG(n) (ATTNCONF_CACHE_MUTANT == (n))

void rcm_adjust_params(attnref_cache_params *p)
{
    /* A kernel whose groups are at most 64 wide quantizes a 128-wide group as two. */
    if (BUG(RCM_QUANT_G128_SPLIT) && p->kind == ATTNREF_CACHE_QUANTIZED && p->group_size == 128)
        p->group_size = 64;
    /* One slot too many: the window ring is max_size + 1 long. */
    if (BUG(RCM_ROTATING_W1) &&
        (p->kind == ATTNREF_CACHE_ROTATING || p->kind == ATTNREF_CACHE_BATCH_ROTATING))
        p->max_size += 1;
}

int rcm_trim(attnref_cache *c, int64_t n, int64_t *trimmed, attnref_diag *d)
{
    /* mlx-lm 0.32: n = min(offset, n) with a negative n "removes" -n tokens: accepted. */
    if (BUG(RCM_TRIM_NEGATIVE) && n < 0) {
        *trimmed = n;
        return ATTNREF_OK;
    }
    return attnref_cache_trim(c, n, trimmed, d);
}

void rcm_after_mask(const attnref_cache *c, int64_t n, int64_t window, attnref_tensor *keep)
{
    attnref_cache_info in;
    if (!BUG(RCM_LEFTPAD_DECODE) || n != 1 || window != 0 ||
        attnref_cache_get_info(c, &in, NULL) != ATTNREF_OK || in.kind != ATTNREF_CACHE_BATCH)
        return;
    /* A decode query sees every slot: pad slots included. */
    for (int64_t b = 0; b < keep->shape[0]; b++)
        for (int64_t j = 0; j < keep->shape[3]; j++)
            ((uint8_t *)keep->data)[b * keep->strides[0] + j * keep->strides[3]] = 1;
}

/* Half away from zero (the codes are >= 0: half up). */
static double round_half_away(double t)
{
    return floor(t + 0.5);
}

/* Pre-round every group of t (B, H, S, D, any strides) to the quantization grid with the wrong
 * tie rule, into a contiguous copy *out (freed by the caller); attnref then re-quantizes values
 * already on its grid, so the stored values are the mutant's. */
static int quant_half_away(const attnref_tensor *t, int64_t g, int bits, attnref_tensor *out)
{
    int64_t B = t->shape[0], H = t->shape[1], S = t->shape[2], D = t->shape[3];
    size_t es = attnref_dtype_size(t->dtype);
    void *buf = malloc((size_t)(B * H * S * D) * es + 1);
    double *x = malloc((size_t)g * sizeof *x);
    if (!buf || !x) {
        free(buf);
        free(x);
        return -1;
    }
    *out = *t;
    out->data = buf;
    out->strides[3] = 1;
    out->strides[2] = D;
    out->strides[1] = S * D;
    out->strides[0] = H * S * D;
    double levels = (double)((1 << bits) - 1);
    for (int64_t r = 0; r < B * H * S; r++) {
        int64_t b = r / (H * S), h = (r / S) % H, s = r % S;
        int64_t base = b * t->strides[0] + h * t->strides[1] + s * t->strides[2];
        for (int64_t g0 = 0; g0 < D; g0 += g) {
            double mn = INFINITY, mx = -INFINITY;
            for (int64_t i = 0; i < g; i++) {
                x[i] = attnref_load(t->data, t->dtype, base + (g0 + i) * t->strides[3]);
                mn = x[i] < mn ? x[i] : mn;
                mx = x[i] > mx ? x[i] : mx;
            }
            /* scale rounded to the dtype, as the spec's (only the tie rule differs) */
            double sc = (mx - mn) / levels;
            union {
                float f;
                uint16_t h;
            } u;
            attnref_store(&u, t->dtype, 0, sc);
            sc = attnref_load(&u, t->dtype, 0);
            for (int64_t i = 0; i < g; i++) {
                double q = sc == 0.0 ? 0.0 : round_half_away((x[i] - mn) / sc);
                q = q > levels ? levels : q;
                attnref_store(buf, t->dtype, r * D + g0 + i, sc * q + mn);
            }
        }
    }
    free(x);
    return 0;
}

int rcm_update(attnref_cache *c, const attnref_tensor *k, const attnref_tensor *v, attnref_diag *d)
{
    attnref_cache_info in;
    if (attnref_cache_get_info(c, &in, NULL) != ATTNREF_OK)
        return attnref_cache_update(c, k, v, d);
    if (BUG(RCM_BATCH_WRITE_POS) && in.kind == ATTNREF_CACHE_BATCH && in.T > 0 &&
        in.batch <= 4096) {
        /* Write at max(offset) instead of T: when every row is padded, the newest slots are
         * overwritten (emulated by trimming them first). */
        int64_t off[4096], mx = INT64_MIN;
        attnref_cache_offsets(c, off, NULL);
        for (int64_t b = 0; b < in.batch; b++)
            mx = off[b] > mx ? off[b] : mx;
        if (mx >= 0 && mx < in.T)
            attnref_cache_trim(c, in.T - mx, NULL, NULL);
    }
    if (BUG(RCM_QUANT_HALF_AWAY) && in.kind == ATTNREF_CACHE_QUANTIZED && k->ndim == 4 &&
        v->ndim == 4 && k->dtype == in.dtype && v->dtype == in.dtype && in.group_size <= 128) {
        attnref_tensor k2, v2;
        if (quant_half_away(k, in.group_size, (int)in.bits, &k2) == 0) {
            if (quant_half_away(v, in.group_size, (int)in.bits, &v2) == 0) {
                int st = attnref_cache_update(c, &k2, &v2, d);
                free(k2.data);
                free(v2.data);
                return st;
            }
            free(k2.data);
        }
    }
    return attnref_cache_update(c, k, v, d);
}

/* Row b's first p slots (pads) moved to its end: the real tokens start at slot 0 and the row is
 * padded on the right. */
static void pads_to_right(attnref_cache *c, int64_t b, int64_t p)
{
    if (p <= 0 || p > c->T)
        return;
    int64_t *pos = c->pos + b * c->cap;
    memmove(pos, pos + p, (size_t)(c->T - p) * sizeof *pos);
    for (int64_t j = c->T - p; j < c->T; j++)
        pos[j] = -1;
    for (int64_t h = 0; h < c->H; h++) {
        double *k = c->k + (b * c->H + h) * c->cap * c->D;
        double *v = c->v + (b * c->H + h) * c->cap * c->Dv;
        memmove(k, k + p * c->D, (size_t)((c->T - p) * c->D) * sizeof *k);
        memmove(v, v + p * c->Dv, (size_t)((c->T - p) * c->Dv) * sizeof *v);
        for (int64_t i = (c->T - p) * c->D; i < c->T * c->D; i++)
            k[i] = NAN;
        for (int64_t i = (c->T - p) * c->Dv; i < c->T * c->Dv; i++)
            v[i] = NAN;
    }
}

/* Leading pads of row b. */
static int64_t leading_pads(const attnref_cache *c, int64_t b)
{
    int64_t p = 0;
    while (p < c->T && c->pos[b * c->cap + p] < 0)
        p++;
    return p;
}

int rcm_filter(attnref_cache *c, const int64_t *rows, int64_t n, attnref_diag *d)
{
    const int64_t t0 = c ? c->T : 0;
    int st = attnref_cache_filter(c, rows, n, d);
    if (!BUG(RCM_FILTER_KEEPS_PAD) || st != ATTNREF_OK || c->T >= t0)
        return st;
    /* Put back the columns the kept rows all padded. */
    const int64_t m = t0 - c->T;
    if (attnref__cache_reserve(c, t0, NULL) != ATTNREF_OK)
        return st;
    attnref__cache_pad_front(c, m);
    for (int64_t b = 0; b < c->B; b++)
        c->lp[b] += m;
    return st;
}

int rcm_extend(attnref_cache *c, const attnref_cache *other, attnref_diag *d)
{
    const int64_t b0 = c ? c->B : 0, t0 = c ? c->T : 0;
    int st = attnref_cache_extend(c, other, d);
    if (!BUG(RCM_EXTEND_PAD_SELF) || st != ATTNREF_OK || c->T <= t0)
        return st;
    for (int64_t b = 0; b < b0; b++) {
        pads_to_right(c, b, c->T - t0);
        c->lp[b] -= c->T - t0;
    }
    return st;
}

int rcm_merge(const attnref_cache *const *caches, int64_t n, attnref_cache **out, attnref_diag *d)
{
    int st = attnref_cache_merge(caches, n, out, d);
    if (!BUG(RCM_MERGE_RIGHT_PAD) || st != ATTNREF_OK)
        return st;
    attnref_cache *m = *out;
    for (int64_t b = 0; b < m->B; b++) {
        const int64_t p = leading_pads(m, b);
        pads_to_right(m, b, p);
        m->lp[b] -= p;
    }
    return st;
}

int rcm_prepare(attnref_cache *c, const int64_t *left_padding, const int64_t *lengths,
                attnref_diag *d)
{
    int64_t fixed[4096];
    if (BUG(RCM_PREPARE_ZERO_FULL) && lengths && c && c->B <= 4096) {
        for (int64_t b = 0; b < c->B; b++)
            fixed[b] = lengths[b] ? lengths[b] : ATTNREF_CACHE_MAX_LEN; /* 0 read as "none" */
        lengths = fixed;
    }
    return attnref_cache_prepare(c, left_padding, lengths, d);
}
