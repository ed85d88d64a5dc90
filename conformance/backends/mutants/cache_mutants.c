/* cache_mutants.c — the one bug of each test-only cache mutant (see cache_mutants.h). */
#include "cache_mutants.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attnref/dtype.h"

#define BUG(n) (ATTNCONF_CACHE_MUTANT == (n))

void rcm_adjust_params(attnref_cache_params *p)
{
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
