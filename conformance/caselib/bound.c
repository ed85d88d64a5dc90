/* bound.c — the first-order forward error bound of an SDPA output (SPEC.md clause 13).
 *
 * The clause derives it; this file evaluates it in binary64, element by element, from the case's
 * own inputs, and compacts it into one absolute term per output row.  Why a bound and not a
 * measured error: a tolerance taken from one implementation's error is only as wide as that
 * implementation happens to be wrong on these inputs, and one atol per case, scaled by the
 * largest output, is far too wide for the small elements.  The bound follows the data: the
 * softmax term is large only where the weights are spread over values far from the output, the
 * probability and accumulation terms only where sum_j p_j |v_j| is.
 *
 * Notation (clause 13): u the unit roundoff of the dtype, w = 2^-24 that of f32 (every kernel the
 * model covers accumulates in f32), gamma_n = n w / (1 - n w).  For a row with kept keys K
 * (n = |K|), exact scores s_j = sigma * d_j + a_j (d_j = q . k_j, a_j the additive mask),
 * weights p_j = softmax(s)_j and output out_e = sum_j p_j v_je:
 *   ds_j  = (|sigma| + e_sigma) gamma_D A_j + e_sigma |d_j| + (u + w) |sigma d_j|
 *           + [a_j != 0] w |s_j| + 2 w |s_j - max s| + EXP_ULPS w
 *   rest_e = SAFETY * ( sum_j p_j |v_je - out_e| ds_j                 (scores through softmax)
 *                     + sum_j max(u p_j, sub/2) |v_je|                (P rounded to the dtype)
 *                     + gamma_(2n+1) sum_j p_j |v_je|                 (f32 P.V, rescaling)
 *                     + (gamma_2n + 2 w) |out_e| )                    (normaliser, division)
 * with A_j = sum_d |q_d k_jd|, e_sigma the error the scale itself may carry and sub the dtype's
 * smallest subnormal.  The output rounding is the ulps term, half an ulp of the dtype at the
 * expected value; where the computed value may cross into the next binade that half ulp
 * doubles, and the difference goes into the row term.
 *
 * The terms of clauses 20-22 enter the score error in their order.  Soft-capping
 * s' = c tanh(s/c) has derivative sech^2(s/c) <= 1, so it scales the error of s and adds its
 * own evaluation error (TANH_ULPS w |s'|, and u |s'| where a kernel holds s' in the dtype); an
 * ALiBi bias b = -m |p - j| carries its slope's f32 error (ALIBI_ULPS w |b|) and the addition's
 * rounding (w |s|).  A sink sigma is one more logit with a zero value vector: it joins the max
 * and the normaliser (n + 1 terms), and its own exp error moves the output by p_sigma |out|.
 */
#include "attncase/bound.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncase/sdpa_rows.h"
#include "attnref/dtype.h"
#include "attnref/sdpa.h"

static double unit_roundoff(attnref_dtype dt)
{
    switch (dt) {
    case ATTNREF_F16: return ldexp(1.0, -11);
    case ATTNREF_BF16: return ldexp(1.0, -8);
    default: return ldexp(1.0, -24);
    }
}

static double smallest_subnormal(attnref_dtype dt)
{
    switch (dt) {
    case ATTNREF_F16: return ldexp(1.0, -24);
    case ATTNREF_BF16: return ldexp(1.0, -133);
    default: return ldexp(1.0, -149);
    }
}

/* x rounded (RNE) to dt, as a double. */
static double round_to(double x, attnref_dtype dt)
{
    switch (dt) {
    case ATTNREF_F16: return attnref_f16_to_f32(attnref_f64_to_f16(x));
    case ATTNREF_BF16: return attnref_bf16_to_f32(attnref_f64_to_bf16(x));
    default: return (double)attnref_f64_to_f32(x);
    }
}

static double gamma_n(double n)
{
    const double nw = n * ldexp(1.0, -24);
    return nw / (1.0 - nw);
}

int64_t acase_sdpa_row_keys(const acase *c, int64_t b, int64_t h, int64_t i, uint8_t *kept,
                            double *add)
{
    int64_t n = 0;
    for (int64_t j = 0; j < c->k.shape[2]; j++) {
        double a;
        kept[j] = (uint8_t)acase_sdpa_keeps(c, b, h, i, j, &a);
        if (add)
            add[j] = a;
        n += kept[j];
    }
    return n;
}

/* The error the scale may carry before it multiplies the scores: a given scale reaches the
 * kernel as an f32; the default 1/sqrt(D) may be computed in f32 (1/sqrtf: two roundings) or
 * held in the dtype.  It is exact in both when D is a power of 4. */
static double scale_error(const acase *c, double sigma, attnref_dtype dt)
{
    if (c->has_scale)
        return fabs(round_to(sigma, ATTNREF_F32) - sigma);
    if (round_to(sigma, dt) == sigma)
        return 0.0;
    return fabs(round_to(sigma, dt) - sigma) + 2.0 * ldexp(fabs(sigma), -24);
}

int acase_sdpa_bound_elems(const acase *c, double *rest, char *err, size_t errlen)
{
    const acase_expected *e = &c->expected;
    if (c->op != ACASE_OP_SDPA || e->error || !e->values || e->ndim != 4) {
        snprintf(err, errlen, "%s: the bound needs an sdpa case with an expected output", c->id);
        return -1;
    }
    const attnref_dtype dt = c->q.dtype;
    const int64_t B = c->q.shape[0], Hq = c->q.shape[1], Lq = c->q.shape[2], D = c->q.shape[3];
    const int64_t Hkv = c->k.shape[1], Lk = c->k.shape[2], Dv = c->v.shape[3];
    const double u = unit_roundoff(dt), w = ldexp(1.0, -24), half_sub = smallest_subnormal(dt) / 2;
    const double sigma = c->has_scale ? c->scale : 1.0 / sqrt((double)D);
    const int64_t off = c->has_causal_offset ? c->causal_offset : Lk - Lq; /* ALiBi's p - i */
    const double e_sigma = scale_error(c, sigma, dt);
    if ((double)D * w >= 1.0) {
        snprintf(err, errlen, "%s: D = %lld: the error bound (SPEC clause 13) holds for D < 2^24",
                 c->id, (long long)D);
        return -1;
    }
    const double g_dot = gamma_n((double)D);
    const size_t lk1 = (size_t)Lk + 1;
    uint8_t *kept = malloc(lk1);
    double *add = malloc(lk1 * sizeof *add), *dot = malloc(lk1 * sizeof *dot);
    double *abs_dot = malloc(lk1 * sizeof *abs_dot), *p = malloc(lk1 * sizeof *p);
    double *ds = malloc(lk1 * sizeof *ds);
    int rc = 0;
    if (!kept || !add || !dot || !abs_dot || !p || !ds) {
        snprintf(err, errlen, "%s: bound: out of memory", c->id);
        rc = -1;
        goto done;
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < Lq; i++) {
                const int64_t r = (b * Hq + h) * Lq + i;
                double *re = rest + r * Dv;
                for (int64_t x = 0; x < Dv; x++)
                    re[x] = 0.0;
                if (e->row_check && e->row_check[r] != ACASE_CHECK_CLOSE)
                    continue; /* exact and finite rows carry no tolerance */
                const int64_t n = acase_sdpa_row_keys(c, b, h, i, kept, add);
                if (n == 0)
                    continue;
                const int64_t hk = h / (Hq / Hkv);
                const int64_t qrow = ((b * Hq + h) * Lq + i) * D;
                double mx = -INFINITY;
                const double slope =
                    c->alibi_max_bias > 0.0 ? attnref_alibi_slope(c->alibi_max_bias, Hq, h) : 0.0;
                for (int64_t j = 0; j < Lk; j++) {
                    if (!kept[j])
                        continue;
                    const int64_t krow = ((b * Hkv + hk) * Lk + j) * D;
                    double s = 0.0, a = 0.0;
                    for (int64_t d = 0; d < D; d++) {
                        const double t = attnref_load(c->q.data, dt, qrow + d) *
                                         attnref_load(c->k.data, dt, krow + d);
                        s += t;
                        a += fabs(t);
                    }
                    dot[j] = s;
                    abs_dot[j] = a;
                    /* The score and its error up to the mask, term by term (clauses 20, 21). */
                    const double pre = sigma * s;
                    double e = (fabs(sigma) + e_sigma) * g_dot * a + e_sigma * fabs(s) +
                               (u + w) * fabs(pre);
                    double sc = pre;
                    if (c->softcap > 0.0) {
                        const double t = tanh(pre / c->softcap);
                        sc = c->softcap * t;
                        e = (1.0 - t * t) * e + (ACASE_BOUND_TANH_ULPS * w + u) * fabs(sc);
                    }
                    if (slope > 0.0) {
                        const double bias = -slope * fabs((double)off - (double)(j - i));
                        sc += bias;
                        e += ACASE_BOUND_ALIBI_ULPS * w * fabs(bias) + w * fabs(sc);
                    }
                    p[j] = sc + add[j];
                    ds[j] = e + (add[j] != 0.0 ? w * fabs(p[j]) : 0.0);
                    if (p[j] > mx)
                        mx = p[j];
                }
                const int has_sink = c->sinks != NULL;
                const double sink = has_sink ? c->sinks[h] : 0.0;
                if (has_sink && sink > mx)
                    mx = sink;
                double sum = 0.0;
                for (int64_t j = 0; j < Lk; j++) {
                    if (!kept[j])
                        continue;
                    const double s = p[j];
                    ds[j] += 2.0 * w * fabs(s - mx) + ACASE_BOUND_EXP_ULPS * w;
                    p[j] = exp(s - mx);
                    sum += p[j];
                }
                double p_sink = has_sink ? exp(sink - mx) : 0.0;
                const double ds_sink = 2.0 * w * fabs(sink - mx) + ACASE_BOUND_EXP_ULPS * w;
                sum += p_sink;
                p_sink /= sum;
                for (int64_t j = 0; j < Lk; j++)
                    if (kept[j])
                        p[j] /= sum;
                /* acc: n - 1 additions, up to n rescales, the product when P is f32; l: the
                 * same on positive terms (n + 1 with a sink), so a relative error of the whole
                 * output, as the division's two roundings (reciprocal, product). */
                const double nl = (double)n + (has_sink ? 1.0 : 0.0);
                if (fmax(2.0 * (double)n + 1.0, 2.0 * nl) * w >= 1.0) {
                    /* gamma_k = k w / (1 - k w) holds for k w < 1 only: past it there is no
                     * bound, and a verdict from one (negative or infinite) would be wrong. */
                    snprintf(err, errlen,
                             "%s: row [%lld,%lld,%lld] keeps %lld keys%s: the error bound (SPEC "
                             "clause 13) holds for 2n + 1 < 2^24 kept keys n (a sink counting "
                             "as one), so this row cannot be judged",
                             c->id, (long long)b, (long long)h, (long long)i, (long long)n,
                             has_sink ? " and a sink" : "");
                    rc = -1;
                    goto done;
                }
                const double g_acc = gamma_n(2.0 * (double)n + 1.0);
                const double g_norm = gamma_n(2.0 * nl) + 2.0 * w;
                for (int64_t x = 0; x < Dv; x++) {
                    double out = 0.0;
                    for (int64_t j = 0; j < Lk; j++)
                        if (kept[j])
                            out += p[j] *
                                   attnref_load(c->v.data, dt, ((b * Hkv + hk) * Lk + j) * Dv + x);
                    double t_soft = 0.0, t_prob = 0.0, t_abs = 0.0;
                    for (int64_t j = 0; j < Lk; j++) {
                        if (!kept[j] || p[j] == 0.0)
                            continue; /* a weight that is 0 in binary64 is 0 in any kernel */
                        const double v =
                            attnref_load(c->v.data, dt, ((b * Hkv + hk) * Lk + j) * Dv + x);
                        t_soft += p[j] * fabs(v - out) * ds[j];
                        t_prob += fmax(u * p[j], half_sub) * fabs(v);
                        t_abs += p[j] * fabs(v);
                    }
                    /* The sink's value is 0: d out / d sigma = -p_sigma out. */
                    t_soft += p_sink * fabs(out) * ds_sink;
                    const double t =
                        ACASE_BOUND_SAFETY * (t_soft + t_prob + g_acc * t_abs + g_norm * fabs(out));
                    /* A non-finite input among the kept keys makes the expected value NaN or
                     * infinite: compared by kind, the bound is moot. */
                    re[x] = isfinite(t) && isfinite(e->values[r * Dv + x]) ? t : 0.0;
                }
            }
done:
    free(kept);
    free(add);
    free(dot);
    free(abs_dot);
    free(p);
    free(ds);
    return rc;
}

double acase_round_up_3(double x)
{
    if (!(x > 0.0) || !isfinite(x))
        return x > 0.0 ? x : 0.0;
    char buf[48];
    snprintf(buf, sizeof buf, "%.2e", x);
    double y = strtod(buf, NULL);
    if (y >= x)
        return y;
    /* One unit up in the third digit: "d.dde[+-]X" -> mantissa 100..999, then +1. */
    int m1, m2, m3, ex;
    if (sscanf(buf, "%1d.%1d%1de%d", &m1, &m2, &m3, &ex) != 4)
        return nextafter(x, INFINITY); /* not reached: %.2e always has this form */
    int m = m1 * 100 + m2 * 10 + m3 + 1;
    if (m == 1000) {
        m = 100;
        ex++;
    }
    snprintf(buf, sizeof buf, "%d.%02de%d", m / 100, m % 100, ex);
    return strtod(buf, NULL);
}

int acase_sdpa_bound(const acase *c, double *ulps, double *row_atol, char *err, size_t errlen)
{
    const acase_expected *e = &c->expected;
    if (c->op != ACASE_OP_SDPA || e->error || !e->values || e->ndim != 4) {
        snprintf(err, errlen, "%s: the bound needs an sdpa case with an expected output", c->id);
        return -1;
    }
    const int64_t Dv = e->shape[3], nrows = e->shape[0] * e->shape[1] * e->shape[2];
    double *rest = malloc(((size_t)e->numel + 1) * sizeof *rest);
    if (!rest) {
        snprintf(err, errlen, "%s: bound: out of memory", c->id);
        return -1;
    }
    if (acase_sdpa_bound_elems(c, rest, err, errlen) != 0) {
        free(rest);
        return -1;
    }
    const attnref_dtype dt = e->dtype;
    *ulps = ACASE_BOUND_ULPS;
    for (int64_t r = 0; r < nrows; r++) {
        double worst = 0.0;
        for (int64_t x = 0; x < Dv; x++) {
            const double ev = e->values[r * Dv + x], t = rest[r * Dv + x];
            if (!isfinite(ev) || t == 0.0)
                continue;
            /* The computed value lies within t of ev; rounded to nearest it is off by half an ulp
             * at its own magnitude, which is twice ulp(ev) once it crosses a power of two. */
            const double extra = ACASE_BOUND_ULPS *
                                 (attnref_dtype_ulp(fabs(ev) + t, dt) - attnref_dtype_ulp(ev, dt));
            if (t + extra > worst)
                worst = t + extra;
        }
        row_atol[r] = acase_round_up_3(worst);
    }
    free(rest);
    return 0;
}
