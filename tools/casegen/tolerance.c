/* tolerance.c — per-case tolerance from the error of a straightforward same-dtype SDPA.
 *
 * Model (the FlashAttention / PyTorch practice): run a plain implementation that works the way
 * a typical backend does — dot products accumulated in f32, scores and probabilities rounded to
 * the input dtype, softmax in f32, P.V accumulated in f32, output rounded to the dtype — and
 * measure its largest deviation from the f64 golden values.  A backend may deviate FACTOR times
 * as much, with a floor of 4 units of the dtype's precision at the output's magnitude; since the
 * golden values are unrounded, rtol covers the final rounding to the dtype (2u, u = unit
 * roundoff).  casegen then
 * checks the plain implementation itself passes, so a tolerance can never be tighter than an
 * honest same-dtype implementation.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "casegen.h"

#define FACTOR 4.0

static double unit_roundoff(attnref_dtype dt) {
    switch (dt) {
    case ATTNREF_F16: return ldexp(1.0, -11);
    case ATTNREF_BF16: return ldexp(1.0, -8);
    default: return ldexp(1.0, -24);
    }
}

/* Round an f32 value to dt and back (f32 is the identity). */
static float rd(float x, attnref_dtype dt) {
    switch (dt) {
    case ATTNREF_F16: return attnref_f16_to_f32(attnref_f32_to_f16(x));
    case ATTNREF_BF16: return attnref_bf16_to_f32(attnref_f32_to_bf16(x));
    default: return x;
    }
}

static float ld(const acase_tensor *t, int64_t n) { return (float)attnref_load(t->data, t->dtype, n); }

/* Logical (contiguous) index of a broadcast mask element for (b, h, i, j). */
static int64_t mask_index(const acase_tensor *m, const int64_t idx[4]) {
    int64_t off = 0;
    for (int r = 0; r < m->ndim; r++) {
        int d = 4 - m->ndim + r;
        off = off * m->shape[r] + (m->shape[r] == 1 ? 0 : idx[d]);
    }
    return off;
}

/* Whether key j takes part in row (b, h, i) (SPEC clauses 3, 6: causal and false/-inf exclude),
 * and its additive mask value (0 without an additive mask). */
static int key_kept(const acase *c, int64_t b, int64_t h, int64_t i, int64_t j, double *add) {
    const int64_t lq = c->q.shape[2], lk = c->k.shape[2];
    const int64_t off = c->has_causal_offset ? c->causal_offset : lk - lq;
    *add = 0.0;
    if (c->causal && j - i > off)
        return 0;
    if (c->mask.present) {
        const int64_t idx[4] = {b, h, i, j};
        double m = attnref_load(c->mask.data, c->mask.dtype, mask_index(&c->mask, idx));
        if (c->mask.dtype == ATTNREF_BOOL)
            return m != 0.0;
        if (m == -INFINITY)
            return 0;
        *add = m;
    }
    return 1;
}

/* Same-dtype SDPA into out (contiguous f64 holding dtype-rounded values). */
static void plain_sdpa(const acase *c, double *out) {
    const attnref_dtype dt = c->q.dtype;
    const int64_t B = c->q.shape[0], Hq = c->q.shape[1], Lq = c->q.shape[2], D = c->q.shape[3];
    const int64_t Hkv = c->k.shape[1], Lk = c->k.shape[2], Dv = c->v.shape[3];
    const float scale = c->has_scale ? (float)c->scale : rd((float)(1.0 / sqrt((double)D)), dt);
    float *s = malloc((size_t)(Lk + 1) * sizeof *s);
    unsigned char *kept = malloc((size_t)Lk + 1);
    float *acc = malloc((size_t)(Dv + 1) * sizeof *acc);
    if (!s || !kept || !acc) {
        fprintf(stderr, "casegen: out of memory\n");
        exit(1);
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < Lq; i++) {
                const int64_t hk = h / (Hq / Hkv);
                float mx = -INFINITY;
                int any = 0;
                for (int64_t j = 0; j < Lk; j++) {
                    double add;
                    kept[j] = (unsigned char)key_kept(c, b, h, i, j, &add);
                    if (!kept[j])
                        continue;
                    float dot = 0.0f;
                    for (int64_t d = 0; d < D; d++)
                        dot += ld(&c->q, ((b * Hq + h) * Lq + i) * D + d) *
                               ld(&c->k, ((b * Hkv + hk) * Lk + j) * D + d);
                    /* The raw score is materialised in the dtype; the mask is added in the f32
                     * softmax (adding f16's -65504 in f16 would overflow to -inf: clause 11). */
                    s[j] = rd(rd(dot, dt) * scale, dt) + (float)add;
                    any = 1;
                    if (s[j] > mx)
                        mx = s[j];
                }
                for (int64_t e = 0; e < Dv; e++)
                    acc[e] = 0.0f;
                float sum = 0.0f;
                for (int64_t j = 0; any && j < Lk; j++)
                    if (kept[j])
                        sum += expf(s[j] - mx);
                for (int64_t j = 0; any && j < Lk; j++) {
                    if (!kept[j])
                        continue;
                    const float p = rd(expf(s[j] - mx) / sum, dt);
                    for (int64_t e = 0; e < Dv; e++)
                        acc[e] += p * ld(&c->v, ((b * Hkv + hk) * Lk + j) * Dv + e);
                }
                for (int64_t e = 0; e < Dv; e++)
                    out[((b * Hq + h) * Lq + i) * Dv + e] = any ? rd(acc[e], dt) : 0.0;
            }
    free(s);
    free(kept);
    free(acc);
}

void cg_row_checks(acase *c) {
    const int64_t B = c->q.shape[0], Hq = c->q.shape[1], Lq = c->q.shape[2];
    const int64_t Lk = c->k.shape[2];
    acase_expected *e = &c->expected;
    char err[256];
    int any = 0;
    uint8_t *mode = calloc((size_t)(B * Hq * Lq + 1), 1);
    if (!mode)
        exit(1);
    /* "Masked" level of an additive mask: the finite minimum (or anything as negative). */
    const double masked = c->mask.present && c->mask.dtype != ATTNREF_BOOL
                              ? attnref_dtype_finite_min(c->mask.dtype) / 2
                              : -INFINITY;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < Lq; i++) {
                int64_t kept = 0, live = 0;
                for (int64_t j = 0; j < Lk; j++) {
                    double add;
                    if (key_kept(c, b, h, i, j, &add)) {
                        kept++;
                        live += !(add <= masked);
                    }
                }
                const int64_t r = (b * Hq + h) * Lq + i;
                if (kept == 0) /* clause 9: fully masked rows are exactly 0 */
                    mode[r] = ACASE_CHECK_EXACT;
                else if (live == 0) /* clause 11: masked only by finite values */
                    mode[r] = ACASE_CHECK_FINITE;
                any |= mode[r] != ACASE_CHECK_CLOSE;
            }
    if (any) {
        if (acase_expected_alloc_rows(e, err, sizeof err) != 0) {
            fprintf(stderr, "casegen: %s: %s\n", c->id, err);
            exit(1);
        }
        memcpy(e->row_check, mode, (size_t)e->nrows);
    }
    free(mode);
}

static uint8_t row_mode(const acase *c, int64_t n) {
    const acase_expected *e = &c->expected;
    if (!e->row_check || e->shape[3] == 0)
        return ACASE_CHECK_CLOSE;
    return e->row_check[n / e->shape[3]];
}

void cg_tolerance(acase *c) {
    const acase_expected *e = &c->expected;
    double *plain = malloc((size_t)(e->numel + 1) * sizeof *plain);
    if (!plain) {
        fprintf(stderr, "casegen: out of memory\n");
        exit(1);
    }
    plain_sdpa(c, plain);
    const double u = unit_roundoff(c->q.dtype);
    double err = 0.0, mag = 0.0;
    for (int64_t n = 0; n < e->numel; n++) {
        if (!isfinite(e->values[n]) || row_mode(c, n) != ACASE_CHECK_CLOSE)
            continue;
        double d = fabs(plain[n] - e->values[n]);
        if (!(d <= err)) /* NaN from the plain implementation counts as infinite error */
            err = isnan(d) ? INFINITY : d;
        if (fabs(e->values[n]) > mag)
            mag = fabs(e->values[n]);
    }
    if (!isfinite(err)) {
        fprintf(stderr, "casegen: %s: the plain same-dtype implementation is not finite\n", c->id);
        exit(1);
    }
    c->rtol = 2.0 * u;
    c->atol = FACTOR * err;
    /* Relative to the output's own magnitude: long-Lk outputs are small, and a floor of 4u
     * would let wrong scales pass there. */
    const double atol_floor = 4.0 * u * mag;
    if (c->atol < atol_floor)
        c->atol = atol_floor;
    for (int64_t n = 0; n < e->numel; n++) {
        double x = e->values[n];
        const uint8_t m = row_mode(c, n);
        const int ok = m == ACASE_CHECK_FINITE ? isfinite(plain[n])
                       : m == ACASE_CHECK_EXACT ? plain[n] == x
                       : !isfinite(x) || fabs(plain[n] - x) <= c->atol + c->rtol * fabs(x);
        if (!ok) {
            fprintf(stderr, "casegen: %s: plain implementation fails its own tolerance at %lld\n",
                    c->id, (long long)n);
            exit(1);
        }
    }
    free(plain);
}
