/* Unit tests for the attnref reference SDPA (attnref/sdpa.h).
 *
 * Expected values are derived by hand (closed forms such as 1 + 2/(1+e^s)), by exact
 * arithmetic (uniform weights, single keys), or by the tiny independent double reference
 * `ref_sdpa` below, which follows the header's definition literally.
 */
#include <criterion/criterion.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attnref/dtype.h"
#include "attnref/sdpa.h"
#include "attnref/status.h"
#include "attnref/tensor.h"

#define SENTINEL_BYTE 0xA5u

/* ------------------------------------------------------------------ helpers */

/* Contiguous row-major descriptor, built by hand (independent of attnref_tensor_init). */
static attnref_tensor mkn(void *data, attnref_dtype dt, int32_t ndim, const int64_t *shape)
{
    attnref_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = dt;
    t.ndim = ndim;
    int64_t stride = 1;
    for (int32_t d = ndim - 1; d >= 0; --d) {
        t.shape[d] = shape[d];
        t.strides[d] = stride;
        stride *= shape[d];
    }
    return t;
}

static attnref_tensor mk4(void *data, attnref_dtype dt, int64_t a, int64_t b, int64_t c, int64_t d)
{
    const int64_t shape[4] = {a, b, c, d};
    return mkn(data, dt, 4, shape);
}

static attnref_sdpa_params no_params(void)
{
    attnref_sdpa_params p;
    memset(&p, 0, sizeof p);
    return p;
}

static attnref_sdpa_params scale_params(double scale)
{
    attnref_sdpa_params p = no_params();
    p.has_scale = 1;
    p.scale = scale;
    return p;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void fill_diag(attnref_diag *d)
{
    memset(d->msg, 'x', sizeof d->msg - 1);
    d->msg[sizeof d->msg - 1] = '\0';
}

/* Run attnref_sdpa expecting success (diag empty afterwards). */
static void run_ok(const attnref_tensor *q, const attnref_tensor *k, const attnref_tensor *v,
                   const attnref_tensor *mask, const attnref_sdpa_params *p, attnref_tensor *out,
                   const char *what)
{
    attnref_diag diag;
    fill_diag(&diag);
    int rc = attnref_sdpa(q, k, v, mask, p, out, &diag);
    cr_assert_eq(rc, ATTNREF_OK, "%s: attnref_sdpa rc=%d (%s): %s", what, rc,
                 attnref_status_name(rc), diag.msg);
    cr_expect_eq(diag.msg[0], '\0', "%s: diag must be empty on success, got \"%s\"", what,
                 diag.msg);
}

/* Run attnref_sdpa expecting `want_rc`; the out buffer (out_bytes long) is pre-filled with a
 * sentinel and must be untouched. */
static void run_err(const attnref_tensor *q, const attnref_tensor *k, const attnref_tensor *v,
                    const attnref_tensor *mask, const attnref_sdpa_params *p, attnref_tensor *out,
                    void *out_buf, size_t out_bytes, int want_rc, const char *what)
{
    if (out_buf)
        memset(out_buf, SENTINEL_BYTE, out_bytes);
    attnref_diag diag;
    fill_diag(&diag);
    int rc = attnref_sdpa(q, k, v, mask, p, out, &diag);
    cr_expect_eq(rc, want_rc, "%s: expected rc %d (%s), got %d (%s); diag \"%s\"", what, want_rc,
                 attnref_status_name(want_rc), rc, attnref_status_name(rc), diag.msg);
    cr_expect(diag.msg[0] != '\0' && diag.msg[0] != 'x', "%s: diag not written: \"%s\"", what,
              diag.msg);
    /* attnref_sdpa_check rejects every invalid call the same way: same status, same message
     * (a NULL out is attnref_sdpa's own check: attnref_sdpa_check takes NULL as "no out"). */
    if (out) {
        attnref_diag cd;
        fill_diag(&cd);
        int crc = attnref_sdpa_check(q, k, v, mask, p, out, &cd);
        cr_expect_eq(crc, rc, "%s: attnref_sdpa_check rc %d (%s), attnref_sdpa rc %d (%s)", what,
                     crc, attnref_status_name(crc), rc, attnref_status_name(rc));
        cr_expect_str_eq(cd.msg, diag.msg,
                         "%s: attnref_sdpa_check says \"%s\", attnref_sdpa \"%s\"", what, cd.msg,
                         diag.msg);
    }
    if (out_buf) {
        const uint8_t *b = out_buf;
        for (size_t i = 0; i < out_bytes; ++i)
            if (b[i] != SENTINEL_BYTE) {
                cr_expect_fail("%s: out byte %zu written on error (0x%02x)", what, i,
                               (unsigned)b[i]);
                break;
            }
    }
}

/* Tolerance check of an f32 output against a double expectation: a few f32 ulps. */
static void expect_close(float got, double want, const char *what, int64_t idx)
{
    double tol = 4.0 * FLT_EPSILON * fabs(want) + 1e-37;
    cr_expect(!isnan(got), "%s[%lld]: NaN (expected %.9g)", what, (long long)idx, want);
    cr_expect(fabs((double)got - want) <= tol, "%s[%lld]: expected %.9g, got %.9g", what,
              (long long)idx, want, (double)got);
}

static void expect_bits_eq_f32(const float *a, const float *b, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; ++i)
        cr_expect_eq(f32_bits(a[i]), f32_bits(b[i]), "%s[%lld]: 0x%08x (%.9g) != 0x%08x (%.9g)",
                     what, (long long)i, f32_bits(a[i]), (double)a[i], f32_bits(b[i]),
                     (double)b[i]);
}

/* Deterministic small values: multiples of 1/8 in [-2, 2] (exact in f32, f16 and bf16). */
static float pr(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    int r = (int)((*state >> 10) % 33u) - 16;
    return (float)r / 8.0f;
}

static void fill_pr(float *x, int64_t n, uint32_t seed)
{
    uint32_t s = seed;
    for (int64_t i = 0; i < n; ++i)
        x[i] = pr(&s);
}

/* Independent double reference, contiguous (B,H,L,D) inputs.  keep: (B,Hq,Lq,Lk) 0/1 or NULL;
 * add: (B,Hq,Lq,Lk) additive values or NULL (a -inf skips).  Fully skipped rows give 0. */
static void ref_sdpa(int64_t B, int64_t Hq, int64_t Hkv, int64_t Lq, int64_t Lk, int64_t D,
                     int64_t Dv, const float *q, const float *k, const float *v,
                     const uint8_t *keep, const double *add, double scale, double *out)
{
    int64_t g = Hq / Hkv;
    double *s = malloc(sizeof(double) * (size_t)(Lk > 0 ? Lk : 1));
    int *use = malloc(sizeof(int) * (size_t)(Lk > 0 ? Lk : 1));
    cr_assert(s && use, "ref_sdpa: malloc");
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < Hq; ++h) {
            int64_t hk = h / g;
            for (int64_t i = 0; i < Lq; ++i) {
                const float *qi = q + ((b * Hq + h) * Lq + i) * D;
                int64_t mrow = ((b * Hq + h) * Lq + i) * Lk;
                double m = -INFINITY;
                int any = 0;
                for (int64_t j = 0; j < Lk; ++j) {
                    use[j] = keep ? keep[mrow + j] != 0 : 1;
                    if (add && isinf(add[mrow + j]) && add[mrow + j] < 0)
                        use[j] = 0;
                    if (!use[j])
                        continue;
                    const float *kj = k + ((b * Hkv + hk) * Lk + j) * D;
                    double dot = 0.0;
                    for (int64_t d = 0; d < D; ++d)
                        dot += (double)qi[d] * (double)kj[d];
                    s[j] = scale * dot + (add ? add[mrow + j] : 0.0);
                    if (!any || s[j] > m)
                        m = s[j];
                    any = 1;
                }
                double *o = out + ((b * Hq + h) * Lq + i) * Dv;
                for (int64_t e = 0; e < Dv; ++e)
                    o[e] = 0.0;
                if (!any)
                    continue;
                double den = 0.0;
                for (int64_t j = 0; j < Lk; ++j)
                    if (use[j])
                        den += exp(s[j] - m);
                for (int64_t j = 0; j < Lk; ++j) {
                    if (!use[j])
                        continue;
                    double w = exp(s[j] - m) / den;
                    const float *vj = v + ((b * Hkv + hk) * Lk + j) * Dv;
                    for (int64_t e = 0; e < Dv; ++e)
                        o[e] += w * (double)vj[e];
                }
            }
        }
    free(s);
    free(use);
}

/* ------------------------------------------------------------------ basic softmax & scale */

Test(sdpa, basic_2x2_hand_softmax)
{
    /* q = k = I (2x2), v = [[1,2],[3,4]], D = 2, scale 1/sqrt(2) = s.
     * row 0 scores [s, 0]: w1 = 1/(1+e^s) -> out = [1 + 2 w1, 2 + 2 w1] = [1.66047690, 2.66047690]
     * row 1 scores [0, s]: w1 = e^s/(1+e^s) -> out = [2.33952310, 3.33952310]. */
    float q[4] = {1, 0, 0, 1}, k[4] = {1, 0, 0, 1}, v[4] = {1, 2, 3, 4}, o[4];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 2, 2), tk = mk4(k, ATTNREF_F32, 1, 1, 2, 2),
                   tv = mk4(v, ATTNREF_F32, 1, 1, 2, 2), to = mk4(o, ATTNREF_F32, 1, 1, 2, 2);
    run_ok(&tq, &tk, &tv, NULL, NULL, &to, "basic");
    double es = exp(1.0 / sqrt(2.0));
    double w_lo = 1.0 / (1.0 + es), w_hi = es / (1.0 + es);
    double want[4] = {1 + 2 * w_lo, 2 + 2 * w_lo, 1 + 2 * w_hi, 2 + 2 * w_hi};
    for (int i = 0; i < 4; ++i)
        expect_close(o[i], want[i], "basic", i);
    /* the same numbers written out (sanity of the closed form) */
    static const double lit[4] = {1.6604769013, 2.6604769013, 2.3395230987, 3.3395230987};
    for (int i = 0; i < 4; ++i)
        cr_expect(fabs(o[i] - lit[i]) < 1e-6, "basic[%d]: expected %.10f, got %.10f", i, lit[i],
                  (double)o[i]);
    /* params may be NULL or zeroed: same result */
    float o2[4];
    attnref_tensor to2 = mk4(o2, ATTNREF_F32, 1, 1, 2, 2);
    attnref_sdpa_params p = no_params();
    run_ok(&tq, &tk, &tv, NULL, &p, &to2, "basic zeroed params");
    expect_bits_eq_f32(o2, o, 4, "zeroed params vs NULL params");
}

Test(sdpa, default_scale_equals_explicit)
{
    /* D = 4: the default scale 1/sqrt(4) = 0.5 is exact, so default and explicit 0.5 must agree
     * bitwise, and both must match the reference with scale 0.5. */
    enum { LQ = 3, LK = 5, D = 4, DV = 3 };
    float q[LQ * D], k[LK * D], v[LK * DV], o1[LQ * DV], o2[LQ * DV], o3[LQ * DV];
    fill_pr(q, LQ * D, 1);
    fill_pr(k, LK * D, 2);
    fill_pr(v, LK * DV, 3);
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, LQ, D), tk = mk4(k, ATTNREF_F32, 1, 1, LK, D),
                   tv = mk4(v, ATTNREF_F32, 1, 1, LK, DV);
    attnref_tensor to1 = mk4(o1, ATTNREF_F32, 1, 1, LQ, DV),
                   to2 = mk4(o2, ATTNREF_F32, 1, 1, LQ, DV),
                   to3 = mk4(o3, ATTNREF_F32, 1, 1, LQ, DV);
    run_ok(&tq, &tk, &tv, NULL, NULL, &to1, "default scale");
    attnref_sdpa_params p = scale_params(0.5);
    run_ok(&tq, &tk, &tv, NULL, &p, &to2, "explicit 0.5");
    expect_bits_eq_f32(o1, o2, LQ * DV, "default vs explicit 1/sqrt(4)");
    double want[LQ * DV];
    ref_sdpa(1, 1, 1, LQ, LK, D, DV, q, k, v, NULL, NULL, 0.5, want);
    for (int i = 0; i < LQ * DV; ++i)
        expect_close(o1[i], want[i], "default scale D=4", i);
    /* a different explicit scale must change the result (the scale is really used) */
    attnref_sdpa_params p1 = scale_params(1.0);
    run_ok(&tq, &tk, &tv, NULL, &p1, &to3, "explicit 1.0");
    double want1[LQ * DV];
    ref_sdpa(1, 1, 1, LQ, LK, D, DV, q, k, v, NULL, NULL, 1.0, want1);
    for (int i = 0; i < LQ * DV; ++i)
        expect_close(o3[i], want1[i], "explicit scale 1", i);
}

Test(sdpa, default_scale_d2_matches_explicit_inv_sqrt2)
{
    enum { LQ = 2, LK = 3, D = 2, DV = 2 };
    float q[LQ * D], k[LK * D], v[LK * DV], o1[LQ * DV], o2[LQ * DV];
    fill_pr(q, LQ * D, 11);
    fill_pr(k, LK * D, 12);
    fill_pr(v, LK * DV, 13);
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, LQ, D), tk = mk4(k, ATTNREF_F32, 1, 1, LK, D),
                   tv = mk4(v, ATTNREF_F32, 1, 1, LK, DV);
    attnref_tensor to1 = mk4(o1, ATTNREF_F32, 1, 1, LQ, DV),
                   to2 = mk4(o2, ATTNREF_F32, 1, 1, LQ, DV);
    run_ok(&tq, &tk, &tv, NULL, NULL, &to1, "default");
    attnref_sdpa_params p = scale_params(1.0 / sqrt(2.0));
    run_ok(&tq, &tk, &tv, NULL, &p, &to2, "explicit");
    double want[LQ * DV];
    ref_sdpa(1, 1, 1, LQ, LK, D, DV, q, k, v, NULL, NULL, 1.0 / sqrt(2.0), want);
    for (int i = 0; i < LQ * DV; ++i) {
        expect_close(o1[i], want[i], "default D=2", i);
        expect_close(o2[i], want[i], "explicit 1/sqrt2", i);
    }
}

Test(sdpa, scale_zero_uniform_weights)
{
    /* scale 0: every score is 0 whatever q.k, weights are exactly 1/4 -> the mean of V, exactly.
     * v column 0 = [1,2,3,6] (mean 3), column 1 = [-1,0.5,0.25,4.25] (mean 1). */
    enum { LQ = 2, LK = 4, D = 3, DV = 2 };
    float q[LQ * D] = {100, -300, 250, 7, 8, -9};
    float k[LK * D] = {5, 1, -2, 30, 4, 4, -6, 0.5f, 1, 2, 2, 2};
    float v[LK * DV] = {1, -1, 2, 0.5f, 3, 0.25f, 6, 4.25f};
    float o[LQ * DV];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, LQ, D), tk = mk4(k, ATTNREF_F32, 1, 1, LK, D),
                   tv = mk4(v, ATTNREF_F32, 1, 1, LK, DV), to = mk4(o, ATTNREF_F32, 1, 1, LQ, DV);
    attnref_sdpa_params p = scale_params(0.0);
    run_ok(&tq, &tk, &tv, NULL, &p, &to, "scale 0");
    for (int i = 0; i < LQ; ++i) {
        cr_expect_eq(f32_bits(o[i * DV + 0]), f32_bits(3.0f),
                     "scale 0 row %d col 0: expected 3, got %.9g", i, (double)o[i * DV + 0]);
        cr_expect_eq(f32_bits(o[i * DV + 1]), f32_bits(1.0f),
                     "scale 0 row %d col 1: expected 1, got %.9g", i, (double)o[i * DV + 1]);
    }
}

Test(sdpa, default_scale_uses_d_not_dv)
{
    /* D = 4, Dv = 2.  q = [1,1,1,1], k0 = [1,1,1,1], k1 = 0: dots 4, 0.  Scale 1/sqrt(D) = 0.5
     * -> scores 2, 0 -> w0 = e^2/(e^2+1) = 0.88079708.  v0 = [1,0], v1 = [0,1] -> out = [w0, 1-w0].
     * (1/sqrt(Dv) would give scores 2.828 and w0 = 0.944.) */
    float q[4] = {1, 1, 1, 1}, k[8] = {1, 1, 1, 1, 0, 0, 0, 0}, v[4] = {1, 0, 0, 1}, o[2];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 1, 4), tk = mk4(k, ATTNREF_F32, 1, 1, 2, 4),
                   tv = mk4(v, ATTNREF_F32, 1, 1, 2, 2), to = mk4(o, ATTNREF_F32, 1, 1, 1, 2);
    run_ok(&tq, &tk, &tv, NULL, NULL, &to, "D=4 Dv=2");
    double w0 = exp(2.0) / (exp(2.0) + 1.0);
    expect_close(o[0], w0, "D not Dv", 0);
    expect_close(o[1], 1.0 - w0, "D not Dv", 1);
    cr_expect(fabs(o[0] - 0.8807970780) < 1e-6, "D not Dv: expected 0.8807970780, got %.10f",
              (double)o[0]);
}

/* ------------------------------------------------------------------ GQA */

Test(sdpa, gqa_repeat_interleave)
{
    /* Hq = 4, Hkv = 2: query heads 0,1 -> kv head 0 (v = 0), heads 2,3 -> kv head 1 (v = 10).
     * A single key has weight exactly 1.  Tiling (h % Hkv) would give [0,10,0,10]. */
    float q[4] = {1, -2, 3, 0.5f}, k[2] = {1, 1}, v[2] = {0, 10}, o[4];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 4, 1, 1), tk = mk4(k, ATTNREF_F32, 1, 2, 1, 1),
                   tv = mk4(v, ATTNREF_F32, 1, 2, 1, 1), to = mk4(o, ATTNREF_F32, 1, 4, 1, 1);
    run_ok(&tq, &tk, &tv, NULL, NULL, &to, "gqa 4/2");
    static const float want[4] = {0, 0, 10, 10};
    for (int h = 0; h < 4; ++h)
        cr_expect_eq(f32_bits(o[h]), f32_bits(want[h]), "gqa head %d: expected %g, got %g", h,
                     (double)want[h], (double)o[h]);
}

Test(sdpa, gqa_groups_of_three_and_mqa)
{
    /* Hq = 6, Hkv = 2: heads 0..2 -> kv 0, 3..5 -> kv 1. */
    float q[6] = {1, 1, 1, 1, 1, 1}, k[2] = {1, 1}, v[2] = {-4, 8}, o[6];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 6, 1, 1), tk = mk4(k, ATTNREF_F32, 1, 2, 1, 1),
                   tv = mk4(v, ATTNREF_F32, 1, 2, 1, 1), to = mk4(o, ATTNREF_F32, 1, 6, 1, 1);
    run_ok(&tq, &tk, &tv, NULL, NULL, &to, "gqa 6/2");
    static const float want[6] = {-4, -4, -4, 8, 8, 8};
    for (int h = 0; h < 6; ++h)
        cr_expect_eq(f32_bits(o[h]), f32_bits(want[h]), "gqa 6/2 head %d: expected %g, got %g", h,
                     (double)want[h], (double)o[h]);
    /* MQA: Hkv = 1, every head reads kv head 0; batch 2 keeps batches apart. */
    float q2[6] = {1, 2, 3, 4, 5, 6}, k2[2] = {1, 1}, v2[2] = {7, -7}, o2[6];
    attnref_tensor tq2 = mk4(q2, ATTNREF_F32, 2, 3, 1, 1), tk2 = mk4(k2, ATTNREF_F32, 2, 1, 1, 1),
                   tv2 = mk4(v2, ATTNREF_F32, 2, 1, 1, 1), to2 = mk4(o2, ATTNREF_F32, 2, 3, 1, 1);
    run_ok(&tq2, &tk2, &tv2, NULL, NULL, &to2, "mqa");
    static const float want2[6] = {7, 7, 7, -7, -7, -7};
    for (int h = 0; h < 6; ++h)
        cr_expect_eq(f32_bits(o2[h]), f32_bits(want2[h]), "mqa [%d]: expected %g, got %g", h,
                     (double)want2[h], (double)o2[h]);
}

Test(sdpa, gqa_softmax_against_reference)
{
    enum { B = 2, HQ = 4, HKV = 2, LQ = 3, LK = 4, D = 3, DV = 2 };
    float q[B * HQ * LQ * D], k[B * HKV * LK * D], v[B * HKV * LK * DV], o[B * HQ * LQ * DV];
    fill_pr(q, B * HQ * LQ * D, 21);
    fill_pr(k, B * HKV * LK * D, 22);
    fill_pr(v, B * HKV * LK * DV, 23);
    attnref_tensor tq = mk4(q, ATTNREF_F32, B, HQ, LQ, D), tk = mk4(k, ATTNREF_F32, B, HKV, LK, D),
                   tv = mk4(v, ATTNREF_F32, B, HKV, LK, DV),
                   to = mk4(o, ATTNREF_F32, B, HQ, LQ, DV);
    run_ok(&tq, &tk, &tv, NULL, NULL, &to, "gqa ref");
    double want[B * HQ * LQ * DV];
    ref_sdpa(B, HQ, HKV, LQ, LK, D, DV, q, k, v, NULL, NULL, 1.0 / sqrt(3.0), want);
    for (int i = 0; i < B * HQ * LQ * DV; ++i)
        expect_close(o[i], want[i], "gqa ref", i);
}

/* ------------------------------------------------------------------ causal */

/* D = 1, scale 1 (default, D = 1): scores s_j = q_i * k_j. */
Test(sdpa, causal_bottom_right_lq2_lk5)
{
    /* Lq=2, Lk=5: offset = 3, keep [[1,1,1,1,0],[1,1,1,1,1]]. */
    float q[2] = {1, 1}, k[5] = {0, 0.5f, 1, 1.5f, 2}, v[5] = {1, 2, 3, 4, 5}, o[2];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 2, 1), tk = mk4(k, ATTNREF_F32, 1, 1, 5, 1),
                   tv = mk4(v, ATTNREF_F32, 1, 1, 5, 1), to = mk4(o, ATTNREF_F32, 1, 1, 2, 1);
    attnref_sdpa_params p = no_params();
    p.causal = 1;
    run_ok(&tq, &tk, &tv, NULL, &p, &to, "causal 2x5");
    /* manual softmax: row 0 over keys 0..3, row 1 over keys 0..4 */
    double n0 = 0, d0 = 0, n1 = 0, d1 = 0;
    for (int j = 0; j < 5; ++j) {
        double e = exp(0.5 * j);
        if (j < 4) {
            n0 += e * (j + 1);
            d0 += e;
        }
        n1 += e * (j + 1);
        d1 += e;
    }
    expect_close(o[0], n0 / d0, "causal 2x5 row", 0);
    expect_close(o[1], n1 / d1, "causal 2x5 row", 1);
    /* same via the reference with the explicit keep matrix */
    static const uint8_t keep[10] = {1, 1, 1, 1, 0, 1, 1, 1, 1, 1};
    double want[2];
    ref_sdpa(1, 1, 1, 2, 5, 1, 1, q, k, v, keep, NULL, 1.0, want);
    expect_close(o[0], want[0], "causal 2x5 ref", 0);
    expect_close(o[1], want[1], "causal 2x5 ref", 1);
}

Test(sdpa, causal_decode_lq1_sees_all_keys)
{
    float q[2] = {1, -1}, k[10], v[10], o[2], o_nomask[2];
    fill_pr(k, 10, 31);
    fill_pr(v, 10, 32);
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 1, 2), tk = mk4(k, ATTNREF_F32, 1, 1, 5, 2),
                   tv = mk4(v, ATTNREF_F32, 1, 1, 5, 2), to = mk4(o, ATTNREF_F32, 1, 1, 1, 2),
                   to2 = mk4(o_nomask, ATTNREF_F32, 1, 1, 1, 2);
    attnref_sdpa_params p = no_params();
    p.causal = 1;
    run_ok(&tq, &tk, &tv, NULL, &p, &to, "causal decode");
    run_ok(&tq, &tk, &tv, NULL, NULL, &to2, "no mask");
    double want[2];
    ref_sdpa(1, 1, 1, 1, 5, 2, 2, q, k, v, NULL, NULL, 1.0 / sqrt(2.0), want);
    for (int i = 0; i < 2; ++i)
        expect_close(o[i], want[i], "causal decode", i);
    expect_bits_eq_f32(o, o_nomask, 2, "causal decode vs no mask");
}

Test(sdpa, causal_lq_greater_than_lk)
{
    /* Lq=4, Lk=2: offset = -2, row i keeps j <= i - 2: rows 0,1 nothing (exactly +0), row 2 key 0
     * (weight 1 -> exactly v0 = 2), row 3 keys 0,1: 2 + 2 e^1/(e^0.5 + e^1). */
    float q[4] = {1, 1, 1, 1}, k[2] = {0.5f, 1}, v[2] = {2, 4}, o[4];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 4, 1), tk = mk4(k, ATTNREF_F32, 1, 1, 2, 1),
                   tv = mk4(v, ATTNREF_F32, 1, 1, 2, 1), to = mk4(o, ATTNREF_F32, 1, 1, 4, 1);
    attnref_sdpa_params p = no_params();
    p.causal = 1;
    run_ok(&tq, &tk, &tv, NULL, &p, &to, "causal 4x2");
    cr_expect_eq(f32_bits(o[0]), 0u, "causal 4x2 row 0: expected +0 bits, got 0x%08x (%g)",
                 f32_bits(o[0]), (double)o[0]);
    cr_expect_eq(f32_bits(o[1]), 0u, "causal 4x2 row 1: expected +0 bits, got 0x%08x (%g)",
                 f32_bits(o[1]), (double)o[1]);
    cr_expect_eq(f32_bits(o[2]), f32_bits(2.0f), "causal 4x2 row 2: expected exactly 2, got %.9g",
                 (double)o[2]);
    double w1 = exp(1.0) / (exp(0.5) + exp(1.0));
    expect_close(o[3], 2.0 + 2.0 * w1, "causal 4x2 row", 3);
}

Test(sdpa, causal_explicit_offset)
{
    float q[2] = {1, 1}, k[5] = {0, 0.5f, 1, 1.5f, 2}, v[5] = {1, 2, 3, 4, 5};
    float o0[2], o3[2], odef[2], obig[2], onone[2];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 2, 1), tk = mk4(k, ATTNREF_F32, 1, 1, 5, 1),
                   tv = mk4(v, ATTNREF_F32, 1, 1, 5, 1);
    attnref_tensor to0 = mk4(o0, ATTNREF_F32, 1, 1, 2, 1), to3 = mk4(o3, ATTNREF_F32, 1, 1, 2, 1),
                   todef = mk4(odef, ATTNREF_F32, 1, 1, 2, 1),
                   tobig = mk4(obig, ATTNREF_F32, 1, 1, 2, 1),
                   tonone = mk4(onone, ATTNREF_F32, 1, 1, 2, 1);
    /* offset 0 given explicitly: top-left.  Row 0 keeps key 0 only -> exactly v0 = 1;
     * row 1 keeps keys 0,1 -> (1 + 2 e^0.5) / (1 + e^0.5). */
    attnref_sdpa_params p = no_params();
    p.causal = 1;
    p.has_causal_offset = 1;
    p.causal_offset = 0;
    run_ok(&tq, &tk, &tv, NULL, &p, &to0, "causal offset 0");
    cr_expect_eq(f32_bits(o0[0]), f32_bits(1.0f), "top-left row 0: expected exactly 1, got %.9g",
                 (double)o0[0]);
    double e = exp(0.5);
    expect_close(o0[1], (1.0 + 2.0 * e) / (1.0 + e), "top-left row", 1);
    /* explicit offset Lk - Lq = 3 equals the default */
    p.causal_offset = 3;
    run_ok(&tq, &tk, &tv, NULL, &p, &to3, "causal offset 3");
    attnref_sdpa_params pd = no_params();
    pd.causal = 1;
    run_ok(&tq, &tk, &tv, NULL, &pd, &todef, "causal default");
    expect_bits_eq_f32(o3, odef, 2, "explicit offset 3 vs default");
    /* has_causal_offset without causal is ignored */
    attnref_sdpa_params pn = no_params();
    pn.has_causal_offset = 1;
    pn.causal_offset = 0;
    run_ok(&tq, &tk, &tv, NULL, &pn, &tonone, "offset without causal");
    double wantn[2];
    ref_sdpa(1, 1, 1, 2, 5, 1, 1, q, k, v, NULL, NULL, 1.0, wantn);
    for (int i = 0; i < 2; ++i)
        expect_close(onone[i], wantn[i], "offset without causal", i);
    /* a large offset keeps every key */
    p.causal_offset = 100;
    run_ok(&tq, &tk, &tv, NULL, &p, &tobig, "causal offset 100");
    for (int i = 0; i < 2; ++i)
        expect_close(obig[i], wantn[i], "causal offset 100", i);
}

Test(sdpa, causal_explicit_offset_negative_and_extreme)
{
    /* Any int64 offset is a valid absolute position (sdpa.h lists no range for it).
     * Lq=2, Lk=3, D=1, scores j*0.5, v = [1,2,3]. */
    float q[2] = {1, 1}, k[3] = {0, 0.5f, 1}, v[3] = {1, 2, 3}, o[2];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 2, 1), tk = mk4(k, ATTNREF_F32, 1, 1, 3, 1),
                   tv = mk4(v, ATTNREF_F32, 1, 1, 3, 1), to = mk4(o, ATTNREF_F32, 1, 1, 2, 1);
    attnref_sdpa_params p = no_params();
    p.causal = 1;
    p.has_causal_offset = 1;
    /* offset -1: row 0 keeps j <= -1 (nothing -> +0), row 1 keeps j <= 0 (exactly v0 = 1) */
    p.causal_offset = -1;
    run_ok(&tq, &tk, &tv, NULL, &p, &to, "causal offset -1");
    cr_expect_eq(f32_bits(o[0]), 0u, "offset -1 row 0: expected +0, got %g", (double)o[0]);
    cr_expect_eq(f32_bits(o[1]), f32_bits(1.0f), "offset -1 row 1: expected 1, got %g",
                 (double)o[1]);
    /* INT64_MIN: nothing is ever kept */
    p.causal_offset = INT64_MIN;
    run_ok(&tq, &tk, &tv, NULL, &p, &to, "causal offset INT64_MIN");
    cr_expect(f32_bits(o[0]) == 0u && f32_bits(o[1]) == 0u,
              "offset INT64_MIN: expected +0 rows, got %g %g", (double)o[0], (double)o[1]);
    /* INT64_MAX: every key is kept in every row (offset + i must not overflow) */
    p.causal_offset = INT64_MAX;
    run_ok(&tq, &tk, &tv, NULL, &p, &to, "causal offset INT64_MAX");
    double e1 = exp(0.5), e2 = exp(1.0);
    double want = (1.0 + 2.0 * e1 + 3.0 * e2) / (1.0 + e1 + e2);
    expect_close(o[0], want, "offset INT64_MAX row", 0);
    expect_close(o[1], want, "offset INT64_MAX row", 1);
}

/* ------------------------------------------------------------------ boolean masks, broadcast */

enum { BB = 2, BH = 2, BLQ = 2, BLK = 3, BD = 2, BDV = 2 };
enum { BN_OUT = BB * BH * BLQ * BDV, BN_MASK = BB * BH * BLQ * BLK };

/* Run the (2,2,2,3) problem with `mask`, compare with the reference for the expanded keep
 * `full`, and bitwise with the implementation given the explicitly expanded full mask. */
static void check_bool_broadcast(const attnref_tensor *mask, const uint8_t *full, const char *what)
{
    float q[BB * BH * BLQ * BD], k[BB * BH * BLK * BD], v[BB * BH * BLK * BDV];
    float o[BN_OUT], ofull[BN_OUT];
    fill_pr(q, BB * BH * BLQ * BD, 41);
    fill_pr(k, BB * BH * BLK * BD, 42);
    fill_pr(v, BB * BH * BLK * BDV, 43);
    attnref_tensor tq = mk4(q, ATTNREF_F32, BB, BH, BLQ, BD),
                   tk = mk4(k, ATTNREF_F32, BB, BH, BLK, BD),
                   tv = mk4(v, ATTNREF_F32, BB, BH, BLK, BDV),
                   to = mk4(o, ATTNREF_F32, BB, BH, BLQ, BDV),
                   tof = mk4(ofull, ATTNREF_F32, BB, BH, BLQ, BDV);
    run_ok(&tq, &tk, &tv, mask, NULL, &to, what);
    double want[BN_OUT];
    ref_sdpa(BB, BH, BH, BLQ, BLK, BD, BDV, q, k, v, full, NULL, 1.0 / sqrt(2.0), want);
    for (int i = 0; i < BN_OUT; ++i) {
        expect_close(o[i], want[i], what, i);
        if (want[i] == 0.0)
            cr_expect_eq(f32_bits(o[i]), 0u, "%s[%d]: fully masked row must be +0, got %g", what, i,
                         (double)o[i]);
    }
    uint8_t fullcopy[BN_MASK];
    memcpy(fullcopy, full, sizeof fullcopy);
    attnref_tensor tm = mk4(fullcopy, ATTNREF_BOOL, BB, BH, BLQ, BLK);
    run_ok(&tq, &tk, &tv, &tm, NULL, &tof, "expanded mask");
    expect_bits_eq_f32(o, ofull, BN_OUT, what);
}

/* Expand a broadcast keep table m (read through strides4, 0 = broadcast) to (B,Hq,Lq,Lk). */
static void expand(uint8_t *full, const uint8_t *m, const int64_t *strides4)
{
    for (int b = 0; b < BB; ++b)
        for (int h = 0; h < BH; ++h)
            for (int i = 0; i < BLQ; ++i)
                for (int j = 0; j < BLK; ++j)
                    full[((b * BH + h) * BLQ + i) * BLK + j] =
                        m[b * strides4[0] + h * strides4[1] + i * strides4[2] + j * strides4[3]];
}

Test(sdpa, bool_mask_broadcast_lk)
{
    uint8_t m[BLK] = {1, 0, 1};
    const int64_t s[1] = {BLK};
    attnref_tensor tm = mkn(m, ATTNREF_BOOL, 1, s);
    uint8_t full[BN_MASK];
    const int64_t st[4] = {0, 0, 0, 1};
    expand(full, m, st);
    check_bool_broadcast(&tm, full, "mask (Lk)");
}

Test(sdpa, bool_mask_broadcast_lq_lk)
{
    uint8_t m[BLQ * BLK] = {1, 0, 0, /**/ 0, 1, 1};
    const int64_t s[2] = {BLQ, BLK};
    attnref_tensor tm = mkn(m, ATTNREF_BOOL, 2, s);
    uint8_t full[BN_MASK];
    const int64_t st[4] = {0, 0, BLK, 1};
    expand(full, m, st);
    check_bool_broadcast(&tm, full, "mask (Lq,Lk)");
}

Test(sdpa, bool_mask_broadcast_b1_lq_lk)
{
    uint8_t m[BB * BLQ * BLK] = {1, 1, 0, /**/ 0, 0, 1, /* b0 */ 0, 1, 0, /**/ 1, 1, 1 /* b1 */};
    const int64_t s[4] = {BB, 1, BLQ, BLK};
    attnref_tensor tm = mkn(m, ATTNREF_BOOL, 4, s);
    uint8_t full[BN_MASK];
    const int64_t st[4] = {BLQ * BLK, 0, BLK, 1};
    expand(full, m, st);
    check_bool_broadcast(&tm, full, "mask (B,1,Lq,Lk)");
}

Test(sdpa, bool_mask_broadcast_1_hq_lq_lk)
{
    uint8_t m[BH * BLQ * BLK] = {0, 0, 1, /**/ 1, 0, 1, /* h0 */ 1, 1, 1, /**/ 0, 1, 0 /* h1 */};
    const int64_t s[4] = {1, BH, BLQ, BLK};
    attnref_tensor tm = mkn(m, ATTNREF_BOOL, 4, s);
    uint8_t full[BN_MASK];
    const int64_t st[4] = {0, BLQ * BLK, BLK, 1};
    expand(full, m, st);
    check_bool_broadcast(&tm, full, "mask (1,Hq,Lq,Lk)");
}

Test(sdpa, bool_mask_per_head_hq_1_lk)
{
    /* rank 3 (Hq,1,Lk) aligns as (1,Hq,1,Lk). */
    uint8_t m[BH * BLK] = {1, 1, 0, /* h0 */ 0, 1, 1 /* h1 */};
    const int64_t s[3] = {BH, 1, BLK};
    attnref_tensor tm = mkn(m, ATTNREF_BOOL, 3, s);
    uint8_t full[BN_MASK];
    const int64_t st[4] = {0, BLK, 0, 1};
    expand(full, m, st);
    check_bool_broadcast(&tm, full, "mask (Hq,1,Lk)");
}

Test(sdpa, bool_mask_scalar)
{
    uint8_t t = 1, f = 0;
    attnref_tensor tmt = mkn(&t, ATTNREF_BOOL, 0, NULL), tmf = mkn(&f, ATTNREF_BOOL, 0, NULL);
    uint8_t full[BN_MASK];
    memset(full, 1, sizeof full);
    check_bool_broadcast(&tmt, full, "scalar true");
    memset(full, 0, sizeof full);
    check_bool_broadcast(&tmf, full, "scalar false");
}

Test(sdpa, bool_mask_nonzero_bytes_are_true_and_stride0)
{
    /* Full-rank view with stride-0 broadcast over B and H of a (Lq,Lk) table whose true
     * entries are 2 and 0xff (any non-zero byte is true). */
    uint8_t m[BLQ * BLK] = {0xff, 0, 2, /**/ 0, 7, 0};
    attnref_tensor tm = mk4(m, ATTNREF_BOOL, BB, BH, BLQ, BLK);
    tm.strides[0] = 0;
    tm.strides[1] = 0;
    tm.strides[2] = BLK;
    tm.strides[3] = 1;
    uint8_t full[BN_MASK];
    const int64_t st[4] = {0, 0, BLK, 1};
    expand(full, m, st);
    for (int i = 0; i < BN_MASK; ++i)
        full[i] = full[i] != 0;
    check_bool_broadcast(&tm, full, "stride-0 mask");
}

Test(sdpa, bool_mask_gqa_indexes_query_heads)
{
    /* Hq=4, Hkv=2, Lq=1, Lk=2, scores all 0.  kv0 v = [1,3], kv1 v = [5,7].
     * mask (1,4,1,2): h0 [1,0] -> 1, h1 [0,1] -> 3, h2 [1,1] -> 6, h3 [0,1] -> 7 (exact). */
    float q[4] = {1, 1, 1, 1}, k[4] = {0, 0, 0, 0}, v[4] = {1, 3, 5, 7}, o[4];
    uint8_t m[8] = {1, 0, 0, 1, 1, 1, 0, 1};
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 4, 1, 1), tk = mk4(k, ATTNREF_F32, 1, 2, 2, 1),
                   tv = mk4(v, ATTNREF_F32, 1, 2, 2, 1), to = mk4(o, ATTNREF_F32, 1, 4, 1, 1),
                   tm = mk4(m, ATTNREF_BOOL, 1, 4, 1, 2);
    run_ok(&tq, &tk, &tv, &tm, NULL, &to, "gqa per-head mask");
    static const float want[4] = {1, 3, 6, 7};
    for (int h = 0; h < 4; ++h)
        cr_expect_eq(f32_bits(o[h]), f32_bits(want[h]), "gqa mask head %d: expected %g, got %g", h,
                     (double)want[h], (double)o[h]);
    /* a mask with Hkv = 2 heads does not broadcast to Hq = 4 */
    attnref_tensor tm2 = mk4(m, ATTNREF_BOOL, 1, 2, 1, 2);
    run_err(&tq, &tk, &tv, &tm2, NULL, &to, o, sizeof o, ATTNREF_EINVAL, "mask heads = Hkv");
}

Test(sdpa, bool_mask_not_broadcastable)
{
    float q[BB * BH * BLQ * BD] = {0}, k[BB * BH * BLK * BD] = {0}, v[BB * BH * BLK * BDV] = {0};
    float o[BN_OUT];
    uint8_t m[64];
    memset(m, 1, sizeof m);
    attnref_tensor tq = mk4(q, ATTNREF_F32, BB, BH, BLQ, BD),
                   tk = mk4(k, ATTNREF_F32, BB, BH, BLK, BD),
                   tv = mk4(v, ATTNREF_F32, BB, BH, BLK, BDV),
                   to = mk4(o, ATTNREF_F32, BB, BH, BLQ, BDV);
    static const struct {
        int32_t ndim;
        int64_t shape[4];
        const char *what;
    } bad[] = {
        {1, {BLK + 1}, "(Lk+1)"},
        {2, {BLK, BLK}, "(3,3) vs (Lq=2,Lk=3)"},
        {4, {3, 1, 1, 1}, "(3,1,1,1) vs B=2"},
        {4, {1, 3, 1, 1}, "(1,3,1,1) vs Hq=2"},
        {3, {BH, BLQ, 2}, "(Hq,Lq,2) vs Lk=3"},
        {4, {BB, BH, BLK, BLK}, "(B,Hq,3,3) vs Lq=2"},
    };
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; ++c) {
        attnref_tensor tm = mkn(m, ATTNREF_BOOL, bad[c].ndim, bad[c].shape);
        run_err(&tq, &tk, &tv, &tm, NULL, &to, o, sizeof o, ATTNREF_EINVAL, bad[c].what);
    }
}

Test(sdpa, mask_rank5_rejected)
{
    float q[4] = {0}, k[4] = {0}, v[4] = {0}, o[4];
    uint8_t m[16];
    memset(m, 1, sizeof m);
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 2, 2), tk = mk4(k, ATTNREF_F32, 1, 1, 2, 2),
                   tv = mk4(v, ATTNREF_F32, 1, 1, 2, 2), to = mk4(o, ATTNREF_F32, 1, 1, 2, 2);
    attnref_tensor tm = mk4(m, ATTNREF_BOOL, 1, 1, 2, 2);
    tm.ndim = 5;
    run_err(&tq, &tk, &tv, &tm, NULL, &to, o, sizeof o, ATTNREF_EINVAL, "rank-5 mask");
    tm.ndim = -1;
    run_err(&tq, &tk, &tv, &tm, NULL, &to, o, sizeof o, ATTNREF_EINVAL, "rank -1 mask");
}

/* ------------------------------------------------------------------ additive masks */

Test(sdpa, additive_f32_mask_adds_not_selects)
{
    /* Scores are all 0 (k = 0).  Additive [0, 1] shifts key 1 by +1: out = e/(1+e) with
     * v = [0, 1] (a boolean reading would give exactly 1 or skip key 0). */
    float q[1] = {1}, k[2] = {0, 0}, v[2] = {0, 1}, o[1];
    float m01[2] = {0, 1}, m11[2] = {1, 1}, m00[2] = {0, 0};
    const int64_t s[1] = {2};
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 1, 1), tk = mk4(k, ATTNREF_F32, 1, 1, 2, 1),
                   tv = mk4(v, ATTNREF_F32, 1, 1, 2, 1), to = mk4(o, ATTNREF_F32, 1, 1, 1, 1);
    attnref_tensor tm = mkn(m01, ATTNREF_F32, 1, s);
    run_ok(&tq, &tk, &tv, &tm, NULL, &to, "additive [0,1]");
    expect_close(o[0], exp(1.0) / (1.0 + exp(1.0)), "additive [0,1]", 0);
    cr_expect(fabs(o[0] - 0.7310585786) < 1e-6, "additive [0,1]: expected 0.7310585786, got %.10f",
              (double)o[0]);
    /* [1,1]: both shifted, weights stay 1/2 -> exactly 0.5 */
    tm = mkn(m11, ATTNREF_F32, 1, s);
    run_ok(&tq, &tk, &tv, &tm, NULL, &to, "additive [1,1]");
    cr_expect_eq(f32_bits(o[0]), f32_bits(0.5f), "additive [1,1]: expected 0.5, got %.9g",
                 (double)o[0]);
    /* [0,0]: all zero additive is no mask at all (a boolean reading would mask everything) */
    tm = mkn(m00, ATTNREF_F32, 1, s);
    run_ok(&tq, &tk, &tv, &tm, NULL, &to, "additive [0,0]");
    cr_expect_eq(f32_bits(o[0]), f32_bits(0.5f), "additive [0,0]: expected 0.5, got %.9g",
                 (double)o[0]);
}

Test(sdpa, additive_neg_inf_skips_key_finite_min_takes_part)
{
    float q[1] = {1}, k[2] = {0, 0}, v[2] = {100, 3}, o[1];
    const int64_t s[1] = {2};
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 1, 1), tk = mk4(k, ATTNREF_F32, 1, 1, 2, 1),
                   tv = mk4(v, ATTNREF_F32, 1, 1, 2, 1), to = mk4(o, ATTNREF_F32, 1, 1, 1, 1);
    /* [-inf, 0]: key 0 skipped -> exactly v1 = 3 */
    float mi[2] = {-INFINITY, 0};
    attnref_tensor tm = mkn(mi, ATTNREF_F32, 1, s);
    run_ok(&tq, &tk, &tv, &tm, NULL, &to, "additive [-inf,0]");
    cr_expect_eq(f32_bits(o[0]), f32_bits(3.0f), "additive [-inf,0]: expected 3, got %.9g",
                 (double)o[0]);
    /* [-FLT_MAX, 0]: exp(-3.4e38) = 0 in double -> exactly 3 as well */
    float mf[2] = {-FLT_MAX, 0};
    tm = mkn(mf, ATTNREF_F32, 1, s);
    run_ok(&tq, &tk, &tv, &tm, NULL, &to, "additive [-FLT_MAX,0]");
    cr_expect_eq(f32_bits(o[0]), f32_bits(3.0f), "additive [-FLT_MAX,0]: expected 3, got %.9g",
                 (double)o[0]);
    /* [-FLT_MAX, -FLT_MAX]: finite values take part; after max subtraction both weights are 1/2
     * -> the mean of V = 51.5, exactly (not 0: the row is not "fully masked"). */
    float mff[2] = {-FLT_MAX, -FLT_MAX};
    tm = mkn(mff, ATTNREF_F32, 1, s);
    run_ok(&tq, &tk, &tv, &tm, NULL, &to, "additive all -FLT_MAX");
    cr_expect_eq(f32_bits(o[0]), f32_bits(51.5f), "additive all -FLT_MAX: expected 51.5, got %.9g",
                 (double)o[0]);
    /* [-inf, -inf]: every key skipped -> exactly +0 */
    float mii[2] = {-INFINITY, -INFINITY};
    tm = mkn(mii, ATTNREF_F32, 1, s);
    run_ok(&tq, &tk, &tv, &tm, NULL, &to, "additive all -inf");
    cr_expect_eq(f32_bits(o[0]), 0u, "additive all -inf: expected +0 bits, got 0x%08x (%g)",
                 f32_bits(o[0]), (double)o[0]);
}

Test(sdpa, additive_mask_broadcast_against_reference)
{
    enum { B = 2, H = 2, LQ = 2, LK = 3, D = 2, DV = 2 };
    float q[B * H * LQ * D], k[B * H * LK * D], v[B * H * LK * DV], o[B * H * LQ * DV];
    fill_pr(q, B * H * LQ * D, 51);
    fill_pr(k, B * H * LK * D, 52);
    fill_pr(v, B * H * LK * DV, 53);
    /* (B,1,Lq,Lk) additive with mixed values, including -inf */
    float m[B * LQ * LK] = {0.5f,      -1,    -INFINITY, /**/ 2, 0, -3, /* b0 */
                            -INFINITY, 0.25f, 1,         /**/ 0, 0, -0.5f /* b1 */};
    attnref_tensor tq = mk4(q, ATTNREF_F32, B, H, LQ, D), tk = mk4(k, ATTNREF_F32, B, H, LK, D),
                   tv = mk4(v, ATTNREF_F32, B, H, LK, DV), to = mk4(o, ATTNREF_F32, B, H, LQ, DV),
                   tm = mk4(m, ATTNREF_F32, B, 1, LQ, LK);
    run_ok(&tq, &tk, &tv, &tm, NULL, &to, "additive (B,1,Lq,Lk)");
    double add[B * H * LQ * LK];
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h)
            for (int i = 0; i < LQ * LK; ++i)
                add[(b * H + h) * LQ * LK + i] = m[b * LQ * LK + i];
    double want[B * H * LQ * DV];
    ref_sdpa(B, H, H, LQ, LK, D, DV, q, k, v, NULL, add, 1.0 / sqrt(2.0), want);
    for (int i = 0; i < B * H * LQ * DV; ++i)
        expect_close(o[i], want[i], "additive broadcast", i);
}

/* ------------------------------------------------------------------ fully masked & dirty keys */

Test(sdpa, fully_masked_row_is_exact_zero)
{
    /* (Lq,Lk) mask: row 0 all false -> +0 bits (never NaN, never mean of V); row 1 keeps key 0
     * only -> exactly v0. */
    float q[4] = {1, 2, 3, 4}, k[6] = {1, 1, 2, 2, 3, 3}, v[6] = {5, -6, 7, 8, 9, 10}, o[4];
    uint8_t m[6] = {0, 0, 0, 1, 0, 0};
    const int64_t s[2] = {2, 3};
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 2, 2), tk = mk4(k, ATTNREF_F32, 1, 1, 3, 2),
                   tv = mk4(v, ATTNREF_F32, 1, 1, 3, 2), to = mk4(o, ATTNREF_F32, 1, 1, 2, 2),
                   tm = mkn(m, ATTNREF_BOOL, 2, s);
    memset(o, 0xff, sizeof o); /* NaN pattern: must be overwritten */
    run_ok(&tq, &tk, &tv, &tm, NULL, &to, "fully masked");
    for (int e = 0; e < 2; ++e) {
        cr_expect(!isnan(o[e]), "fully masked row col %d is NaN", e);
        cr_expect_eq(f32_bits(o[e]), 0u,
                     "fully masked row col %d: expected +0 bits, got 0x%08x (%g)", e,
                     f32_bits(o[e]), (double)o[e]);
    }
    cr_expect_eq(f32_bits(o[2]), f32_bits(5.0f), "row 1 col 0: expected 5, got %g", (double)o[2]);
    cr_expect_eq(f32_bits(o[3]), f32_bits(-6.0f), "row 1 col 1: expected -6, got %g", (double)o[3]);
}

Test(sdpa, fully_masked_f16_and_bf16_rows_are_zero)
{
    uint16_t q[2] = {0x3c00, 0x4000}, k[2] = {0x3c00, 0xc000}, v[2] = {0x4200, 0x4400};
    uint8_t m = 0;
    attnref_tensor tm = mkn(&m, ATTNREF_BOOL, 0, NULL);
    for (int pass = 0; pass < 2; ++pass) {
        attnref_dtype dt = pass ? ATTNREF_BF16 : ATTNREF_F16;
        uint16_t o[2] = {0x7e00, 0x7e00};
        attnref_tensor tq = mk4(q, dt, 1, 1, 2, 1), tk = mk4(k, dt, 1, 1, 2, 1),
                       tv = mk4(v, dt, 1, 1, 2, 1), to = mk4(o, dt, 1, 1, 2, 1);
        run_ok(&tq, &tk, &tv, &tm, NULL, &to, pass ? "bf16 fully masked" : "f16 fully masked");
        for (int i = 0; i < 2; ++i)
            cr_expect_eq(o[i], 0x0000u, "%s fully masked [%d]: expected 0x0000, got 0x%04x",
                         pass ? "bf16" : "f16", i, (unsigned)o[i]);
    }
}

Test(sdpa, lk_zero_rows_are_zero)
{
    /* No keys at all: every row has all its keys skipped -> exactly 0. */
    float q[4] = {1, 2, 3, 4}, o[4];
    float kdummy[1], vdummy[1];
    memset(o, 0xff, sizeof o);
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 2, 2), tk = mk4(kdummy, ATTNREF_F32, 1, 1, 0, 2),
                   tv = mk4(vdummy, ATTNREF_F32, 1, 1, 0, 2), to = mk4(o, ATTNREF_F32, 1, 1, 2, 2);
    run_ok(&tq, &tk, &tv, NULL, NULL, &to, "Lk = 0");
    for (int i = 0; i < 4; ++i)
        cr_expect_eq(f32_bits(o[i]), 0u, "Lk = 0 out[%d]: expected +0, got 0x%08x", i,
                     f32_bits(o[i]));
}

/* Lq=2, Lk=5, D=2, Dv=2.  Keys 2,3,4 are masked in every variant below; dirty them. */
static void dirty_case(const attnref_tensor *mask, const attnref_sdpa_params *p, const char *what)
{
    float q[4] = {1, 0.5f, -1, 2};
    float kc[10] = {1, 2, -1, 0.5f, 0.25f, 0.25f, 1, 1, 2, -2};
    float vc[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    float kd[10], vd[10];
    memcpy(kd, kc, sizeof kd);
    memcpy(vd, vc, sizeof vd);
    kd[4] = 1e30f;
    kd[5] = 1e30f;
    kd[6] = NAN;
    kd[7] = 0;
    kd[8] = INFINITY;
    kd[9] = -INFINITY;
    vd[4] = NAN;
    vd[5] = INFINITY;
    vd[6] = NAN;
    vd[7] = NAN;
    vd[8] = -INFINITY;
    vd[9] = NAN;
    float oc[4], od[4];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 2, 2);
    attnref_tensor tkc = mk4(kc, ATTNREF_F32, 1, 1, 5, 2), tvc = mk4(vc, ATTNREF_F32, 1, 1, 5, 2);
    attnref_tensor tkd = mk4(kd, ATTNREF_F32, 1, 1, 5, 2), tvd = mk4(vd, ATTNREF_F32, 1, 1, 5, 2);
    attnref_tensor toc = mk4(oc, ATTNREF_F32, 1, 1, 2, 2), tod = mk4(od, ATTNREF_F32, 1, 1, 2, 2);
    run_ok(&tq, &tkc, &tvc, mask, p, &toc, what);
    run_ok(&tq, &tkd, &tvd, mask, p, &tod, what);
    for (int i = 0; i < 4; ++i)
        cr_expect(!isnan(od[i]) && !isinf(od[i]), "%s: out[%d] = %g", what, i, (double)od[i]);
    expect_bits_eq_f32(od, oc, 4, what);
    /* and the clean result is the reference over keys {0,1} for row 0 and {0,1} for row 1 */
    static const uint8_t keep[10] = {1, 1, 0, 0, 0, 1, 1, 0, 0, 0};
    double want[4];
    ref_sdpa(1, 1, 1, 2, 5, 2, 2, q, kc, vc, keep, NULL, 1.0 / sqrt(2.0), want);
    for (int i = 0; i < 4; ++i)
        expect_close(oc[i], want[i], what, i);
}

Test(sdpa, masked_keys_with_nan_inf_contribute_nothing)
{
    /* bool mask (Lk) [1,1,0,0,0] */
    uint8_t mb[5] = {1, 1, 0, 0, 0};
    const int64_t s[1] = {5};
    attnref_tensor tmb = mkn(mb, ATTNREF_BOOL, 1, s);
    dirty_case(&tmb, NULL, "dirty bool");
    /* additive -inf on the dirty keys */
    float ma[5] = {0, 0, -INFINITY, -INFINITY, -INFINITY};
    attnref_tensor tma = mkn(ma, ATTNREF_F32, 1, s);
    dirty_case(&tma, NULL, "dirty additive -inf");
    /* the same through a rank-4 (1,1,Lq,Lk) bool mask */
    uint8_t m4[10] = {1, 1, 0, 0, 0, 1, 1, 0, 0, 0};
    attnref_tensor tm4 = mk4(m4, ATTNREF_BOOL, 1, 1, 2, 5);
    dirty_case(&tm4, NULL, "dirty bool rank 4");
}

Test(sdpa, causal_masked_keys_with_nan_inf_contribute_nothing)
{
    /* Causal, explicit offset 0 (top-left), Lq=2, Lk=5: row 0 keeps {0}, row 1 keeps {0,1};
     * keys 2..4 are never kept and hold NaN/inf in K and V. */
    float q[4] = {1, 0.5f, -1, 2};
    float kc[10] = {1, 2, -1, 0.5f, 0, 0, 0, 0, 0, 0};
    float vc[10] = {1, 2, 3, 4, 0, 0, 0, 0, 0, 0};
    float kd[10], vd[10];
    memcpy(kd, kc, sizeof kd);
    memcpy(vd, vc, sizeof vd);
    kd[4] = 1e30f;
    kd[5] = NAN;
    kd[6] = INFINITY;
    kd[8] = -INFINITY;
    kd[9] = NAN;
    vd[4] = NAN;
    vd[5] = NAN;
    vd[6] = INFINITY;
    vd[7] = NAN;
    vd[8] = NAN;
    vd[9] = -INFINITY;
    float oc[4], od[4];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 2, 2);
    attnref_tensor tkc = mk4(kc, ATTNREF_F32, 1, 1, 5, 2), tvc = mk4(vc, ATTNREF_F32, 1, 1, 5, 2);
    attnref_tensor tkd = mk4(kd, ATTNREF_F32, 1, 1, 5, 2), tvd = mk4(vd, ATTNREF_F32, 1, 1, 5, 2);
    attnref_tensor toc = mk4(oc, ATTNREF_F32, 1, 1, 2, 2), tod = mk4(od, ATTNREF_F32, 1, 1, 2, 2);
    attnref_sdpa_params p = no_params();
    p.causal = 1;
    p.has_causal_offset = 1;
    p.causal_offset = 0;
    run_ok(&tq, &tkc, &tvc, NULL, &p, &toc, "causal clean");
    run_ok(&tq, &tkd, &tvd, NULL, &p, &tod, "causal dirty");
    expect_bits_eq_f32(od, oc, 4, "causal dirty vs clean");
    /* row 0: a single key -> exactly v0 = [1, 2] */
    cr_expect_eq(f32_bits(od[0]), f32_bits(1.0f), "causal dirty row 0 col 0: expected 1, got %g",
                 (double)od[0]);
    cr_expect_eq(f32_bits(od[1]), f32_bits(2.0f), "causal dirty row 0 col 1: expected 2, got %g",
                 (double)od[1]);
    static const uint8_t keep[10] = {1, 0, 0, 0, 0, 1, 1, 0, 0, 0};
    double want[4];
    ref_sdpa(1, 1, 1, 2, 5, 2, 2, q, kc, vc, keep, NULL, 1.0 / sqrt(2.0), want);
    for (int i = 0; i < 4; ++i)
        expect_close(od[i], want[i], "causal dirty", i);
}

/* ------------------------------------------------------------------ f16 / bf16 */

Test(sdpa, f16_bf16_constant_v_exact)
{
    /* v constant c: the output is c * sum(w) with sum(w) = 1 +- a few double ulps, so it rounds
     * once to exactly c.  f16(0.1) = 0x2e66, bf16(0.1) = 0x3dcd. */
    static const struct {
        attnref_dtype dt;
        uint16_t c;
        const char *name;
    } cases[2] = {{ATTNREF_F16, 0x2e66, "f16"}, {ATTNREF_BF16, 0x3dcd, "bf16"}};
    /* q, k in {-1, 0.5, 1, 2} bit patterns per dtype */
    static const uint16_t qk16[2][8] = {
        {0x3c00, 0xbc00, 0x3800, 0x4000, 0x3c00, 0x3800, 0xbc00, 0x4000},
        {0x3f80, 0xbf80, 0x3f00, 0x4000, 0x3f80, 0x3f00, 0xbf80, 0x4000}};
    for (int c = 0; c < 2; ++c) {
        uint16_t q[4], k[6], v[6], o[4];
        memcpy(q, qk16[c], sizeof q);
        memcpy(k, qk16[c] + 2, sizeof k);
        for (int i = 0; i < 6; ++i)
            v[i] = cases[c].c;
        attnref_tensor tq = mk4(q, cases[c].dt, 1, 1, 2, 2), tk = mk4(k, cases[c].dt, 1, 1, 3, 2),
                       tv = mk4(v, cases[c].dt, 1, 1, 3, 2), to = mk4(o, cases[c].dt, 1, 1, 2, 2);
        run_ok(&tq, &tk, &tv, NULL, NULL, &to, cases[c].name);
        for (int i = 0; i < 4; ++i)
            cr_expect_eq(o[i], cases[c].c, "%s constant v [%d]: expected 0x%04x, got 0x%04x",
                         cases[c].name, i, (unsigned)cases[c].c, (unsigned)o[i]);
    }
}

Test(sdpa, f16_bf16_round_to_nearest_even)
{
    /* scale 0, Lk = 2: weights exactly 1/2, out = exact mean of two adjacent values = a tie.
     * f16: mean(1, 1+2^-10) = 1+2^-11 -> even 0x3c00; mean(0x3c01, 0x3c02) -> even 0x3c02.
     * bf16: mean(0x3f80, 0x3f81) -> 0x3f80; mean(0x3f81, 0x3f82) -> 0x3f82. */
    static const struct {
        attnref_dtype dt;
        uint16_t v[4];
        uint16_t want[2];
        const char *name;
    } cases[2] = {{ATTNREF_F16, {0x3c00, 0x3c01, 0x3c01, 0x3c02}, {0x3c00, 0x3c02}, "f16"},
                  {ATTNREF_BF16, {0x3f80, 0x3f81, 0x3f81, 0x3f82}, {0x3f80, 0x3f82}, "bf16"}};
    for (int c = 0; c < 2; ++c) {
        uint16_t q[1] = {0}, k[2] = {0, 0}, o[2];
        attnref_tensor tq = mk4(q, cases[c].dt, 1, 1, 1, 1), tk = mk4(k, cases[c].dt, 1, 1, 2, 1),
                       tv = mk4((void *)cases[c].v, cases[c].dt, 1, 1, 2, 2),
                       to = mk4(o, cases[c].dt, 1, 1, 1, 2);
        attnref_sdpa_params p = scale_params(0.0);
        run_ok(&tq, &tk, &tv, NULL, &p, &to, cases[c].name);
        for (int i = 0; i < 2; ++i)
            cr_expect_eq(o[i], cases[c].want[i], "%s RNE tie [%d]: expected 0x%04x, got 0x%04x",
                         cases[c].name, i, (unsigned)cases[c].want[i], (unsigned)o[i]);
    }
}

Test(sdpa, f16_bf16_hand_softmax)
{
    /* q = 1, k = [0, 1], v = [0, 1], D = 1: out = e/(1+e) = 0.7310585786.
     * f16: 1497.21 * 2^-11 -> 0x39d9 (0.73095703125).  bf16: (1 + 59.15/128)/2 -> 0x3f3b. */
    static const struct {
        attnref_dtype dt;
        uint16_t one, want;
        const char *name;
    } cases[2] = {{ATTNREF_F16, 0x3c00, 0x39d9, "f16"}, {ATTNREF_BF16, 0x3f80, 0x3f3b, "bf16"}};
    for (int c = 0; c < 2; ++c) {
        uint16_t q[1] = {cases[c].one}, k[2] = {0, cases[c].one}, v[2] = {0, cases[c].one}, o[1];
        attnref_tensor tq = mk4(q, cases[c].dt, 1, 1, 1, 1), tk = mk4(k, cases[c].dt, 1, 1, 2, 1),
                       tv = mk4(v, cases[c].dt, 1, 1, 2, 1), to = mk4(o, cases[c].dt, 1, 1, 1, 1);
        run_ok(&tq, &tk, &tv, NULL, NULL, &to, cases[c].name);
        cr_expect_eq(o[0], cases[c].want, "%s sigmoid(1): expected 0x%04x, got 0x%04x",
                     cases[c].name, (unsigned)cases[c].want, (unsigned)o[0]);
    }
}

Test(sdpa, f16_bf16_single_rounding_no_double_rounding)
{
    /* out = sigmoid(scale) with q = 1, k = [0, 1], v = [0, 1].  Choose scale so that the exact
     * result is t - 2^-40 where t is the midpoint between two adjacent f16 (bf16) values whose
     * lower neighbour is odd.  Rounding once from double gives the lower (odd) neighbour;
     * rounding through f32 first lands exactly on t and then ties to the even upper neighbour.
     * f16: t = (0x39d9 + 0x39da)/2 = 0.731201171875 -> expect 0x39d9 (not 0x39da).
     * bf16: t = (0x3f3b + 0x3f3c)/2 = 0.732421875 -> expect 0x3f3b (not 0x3f3c). */
    static const struct {
        attnref_dtype dt;
        uint16_t one, want;
        double t;
        const char *name;
    } cases[2] = {{ATTNREF_F16, 0x3c00, 0x39d9, 0.731201171875, "f16"},
                  {ATTNREF_BF16, 0x3f80, 0x3f3b, 0.732421875, "bf16"}};
    for (int c = 0; c < 2; ++c) {
        double d = cases[c].t - ldexp(1.0, -40);
        double scale = log(d / (1.0 - d));
        uint16_t q[1] = {cases[c].one}, k[2] = {0, cases[c].one}, v[2] = {0, cases[c].one}, o[1];
        attnref_tensor tq = mk4(q, cases[c].dt, 1, 1, 1, 1), tk = mk4(k, cases[c].dt, 1, 1, 2, 1),
                       tv = mk4(v, cases[c].dt, 1, 1, 2, 1), to = mk4(o, cases[c].dt, 1, 1, 1, 1);
        attnref_sdpa_params p = scale_params(scale);
        run_ok(&tq, &tk, &tv, NULL, &p, &to, cases[c].name);
        cr_expect_eq(o[0], cases[c].want,
                     "%s single rounding: expected 0x%04x, got 0x%04x (0x%04x = double rounding "
                     "through f32)",
                     cases[c].name, (unsigned)cases[c].want, (unsigned)o[0],
                     (unsigned)(cases[c].want + 1));
    }
}

Test(sdpa, f16_mask_dtype_rules)
{
    uint16_t q[1] = {0x3c00}, k[2] = {0, 0}, v[2] = {0x4000, 0x4400}; /* v = [2, 4] f16 */
    uint16_t o[1];
    attnref_tensor tq = mk4(q, ATTNREF_F16, 1, 1, 1, 1), tk = mk4(k, ATTNREF_F16, 1, 1, 2, 1),
                   tv = mk4(v, ATTNREF_F16, 1, 1, 2, 1), to = mk4(o, ATTNREF_F16, 1, 1, 1, 1);
    const int64_t s[1] = {2};
    attnref_diag diag;
    /* f32 additive mask with f16 q: would upcast -> EDTYPE, diag names the mask */
    float mf[2] = {0, 0};
    attnref_tensor tmf = mkn(mf, ATTNREF_F32, 1, s);
    run_err(&tq, &tk, &tv, &tmf, NULL, &to, o, sizeof o, ATTNREF_EDTYPE, "f32 mask, f16 q");
    fill_diag(&diag);
    (void)attnref_sdpa(&tq, &tk, &tv, &tmf, NULL, &to, &diag);
    cr_expect_not_null(strstr(diag.msg, "mask"), "diag must name the mask: \"%s\"", diag.msg);
    /* bf16 mask with f16 q: promotes to f32 -> EDTYPE */
    uint16_t mb[2] = {0, 0};
    attnref_tensor tmb = mkn(mb, ATTNREF_BF16, 1, s);
    run_err(&tq, &tk, &tv, &tmb, NULL, &to, o, sizeof o, ATTNREF_EDTYPE, "bf16 mask, f16 q");
    /* f16 mask with f16 q accepted: [0, 1.0] -> 2 + 2 e/(1+e) = 3.4621171573; f16 ulp there is
     * 2^-9: 3.4621171573 * 512 = 1772.60 -> 1773 * 2^-9 = 3.462890625 = 0x42ed */
    uint16_t mh[2] = {0x0000, 0x3c00};
    attnref_tensor tmh = mkn(mh, ATTNREF_F16, 1, s);
    run_ok(&tq, &tk, &tv, &tmh, NULL, &to, "f16 mask, f16 q");
    cr_expect_eq(o[0], 0x42edu, "f16 mask [0,1]: expected 0x42ed (3.4629), got 0x%04x",
                 (unsigned)o[0]);
    /* f16 mask with -65504 (finite min) on key 0: takes part but weighs exp(-65504) = 0 in
     * double -> exactly v1 = 4 */
    uint16_t mmin[2] = {0xfbff, 0x0000};
    attnref_tensor tmmin = mkn(mmin, ATTNREF_F16, 1, s);
    run_ok(&tq, &tk, &tv, &tmmin, NULL, &to, "f16 mask finite min");
    cr_expect_eq(o[0], 0x4400u, "f16 mask [-65504, 0]: expected 0x4400 (4), got 0x%04x",
                 (unsigned)o[0]);
    /* both keys at -65504: finite values take part, equal scores -> mean of v = 3 (0x4200) */
    uint16_t mmin2[2] = {0xfbff, 0xfbff};
    attnref_tensor tmmin2 = mkn(mmin2, ATTNREF_F16, 1, s);
    run_ok(&tq, &tk, &tv, &tmmin2, NULL, &to, "f16 mask all finite min");
    cr_expect_eq(o[0], 0x4200u, "f16 mask [-65504, -65504]: expected 0x4200 (3), got 0x%04x",
                 (unsigned)o[0]);
    /* bool mask always accepted */
    uint8_t mbool[2] = {0, 1};
    attnref_tensor tmbool = mkn(mbool, ATTNREF_BOOL, 1, s);
    run_ok(&tq, &tk, &tv, &tmbool, NULL, &to, "bool mask, f16 q");
    cr_expect_eq(o[0], 0x4400u, "bool mask [0,1] f16: expected 0x4400 (4), got 0x%04x",
                 (unsigned)o[0]);
}

Test(sdpa, bf16_mask_dtype_rules)
{
    uint16_t q[1] = {0x3f80}, k[2] = {0, 0}, v[2] = {0x4000, 0x4080}; /* v = [2, 4] bf16 */
    uint16_t o[1];
    attnref_tensor tq = mk4(q, ATTNREF_BF16, 1, 1, 1, 1), tk = mk4(k, ATTNREF_BF16, 1, 1, 2, 1),
                   tv = mk4(v, ATTNREF_BF16, 1, 1, 2, 1), to = mk4(o, ATTNREF_BF16, 1, 1, 1, 1);
    const int64_t s[1] = {2};
    uint16_t mh[2] = {0, 0};
    attnref_tensor tmh = mkn(mh, ATTNREF_F16, 1, s);
    run_err(&tq, &tk, &tv, &tmh, NULL, &to, o, sizeof o, ATTNREF_EDTYPE, "f16 mask, bf16 q");
    float mf[2] = {0, 0};
    attnref_tensor tmf = mkn(mf, ATTNREF_F32, 1, s);
    run_err(&tq, &tk, &tv, &tmf, NULL, &to, o, sizeof o, ATTNREF_EDTYPE, "f32 mask, bf16 q");
    /* bf16 mask [-inf, 0] accepted: key 0 skipped -> exactly 4 (0x4080) */
    uint16_t mb[2] = {0xff80, 0x0000};
    attnref_tensor tmb = mkn(mb, ATTNREF_BF16, 1, s);
    run_ok(&tq, &tk, &tv, &tmb, NULL, &to, "bf16 mask, bf16 q");
    cr_expect_eq(o[0], 0x4080u, "bf16 mask [-inf,0]: expected 0x4080 (4), got 0x%04x",
                 (unsigned)o[0]);
    uint8_t mbool[2] = {1, 0};
    attnref_tensor tmbool = mkn(mbool, ATTNREF_BOOL, 1, s);
    run_ok(&tq, &tk, &tv, &tmbool, NULL, &to, "bool mask, bf16 q");
    cr_expect_eq(o[0], 0x4000u, "bool mask [1,0] bf16: expected 0x4000 (2), got 0x%04x",
                 (unsigned)o[0]);
}

Test(sdpa, f32_accepts_f16_bf16_bool_masks)
{
    float q[1] = {1}, k[2] = {0, 0}, v[2] = {2, 4}, o[1];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 1, 1), tk = mk4(k, ATTNREF_F32, 1, 1, 2, 1),
                   tv = mk4(v, ATTNREF_F32, 1, 1, 2, 1), to = mk4(o, ATTNREF_F32, 1, 1, 1, 1);
    const int64_t s[1] = {2};
    /* f16 [0, -inf] -> key 1 skipped -> 2 */
    uint16_t mh[2] = {0x0000, 0xfc00};
    attnref_tensor tmh = mkn(mh, ATTNREF_F16, 1, s);
    run_ok(&tq, &tk, &tv, &tmh, NULL, &to, "f16 mask, f32 q");
    cr_expect_eq(f32_bits(o[0]), f32_bits(2.0f), "f16 mask [0,-inf] f32: expected 2, got %g",
                 (double)o[0]);
    /* bf16 [-inf, 0] -> 4 */
    uint16_t mb[2] = {0xff80, 0x0000};
    attnref_tensor tmb = mkn(mb, ATTNREF_BF16, 1, s);
    run_ok(&tq, &tk, &tv, &tmb, NULL, &to, "bf16 mask, f32 q");
    cr_expect_eq(f32_bits(o[0]), f32_bits(4.0f), "bf16 mask [-inf,0] f32: expected 4, got %g",
                 (double)o[0]);
    /* f16 [1, 0] is additive: 2 + 2/(1+e) */
    uint16_t m1[2] = {0x3c00, 0x0000};
    attnref_tensor tm1 = mkn(m1, ATTNREF_F16, 1, s);
    run_ok(&tq, &tk, &tv, &tm1, NULL, &to, "f16 additive [1,0], f32 q");
    expect_close(o[0], 2.0 + 2.0 / (1.0 + exp(1.0)), "f16 additive [1,0] f32 q", 0);
    /* bool [1, 0] -> 2 */
    uint8_t mbool[2] = {1, 0};
    attnref_tensor tmbool = mkn(mbool, ATTNREF_BOOL, 1, s);
    run_ok(&tq, &tk, &tv, &tmbool, NULL, &to, "bool mask, f32 q");
    cr_expect_eq(f32_bits(o[0]), f32_bits(2.0f), "bool mask f32: expected 2, got %g", (double)o[0]);
}

Test(sdpa, qkv_out_dtype_errors)
{
    float qf[2] = {1, 1}, kf[4] = {1, 1, 1, 1}, vf[4] = {1, 1, 1, 1}, of[2];
    uint16_t kh[4] = {0x3c00, 0x3c00, 0x3c00, 0x3c00}, vh[4] = {0x3c00, 0x3c00, 0x3c00, 0x3c00};
    uint16_t qh[2] = {0x3c00, 0x3c00}, oh[2];
    uint8_t qb[2] = {1, 1}, kb[4] = {1, 1, 1, 1}, vb[4] = {1, 1, 1, 1}, ob[2];
    attnref_tensor tqf = mk4(qf, ATTNREF_F32, 1, 1, 1, 2), tkf = mk4(kf, ATTNREF_F32, 1, 1, 2, 2),
                   tvf = mk4(vf, ATTNREF_F32, 1, 1, 2, 1), tof = mk4(of, ATTNREF_F32, 1, 1, 1, 1);
    attnref_tensor tkh = mk4(kh, ATTNREF_F16, 1, 1, 2, 2), tvh = mk4(vh, ATTNREF_F16, 1, 1, 2, 1),
                   tvbf = mk4(vh, ATTNREF_BF16, 1, 1, 2, 1), tqh = mk4(qh, ATTNREF_F16, 1, 1, 1, 2),
                   toh = mk4(oh, ATTNREF_F16, 1, 1, 1, 1), tobf = mk4(oh, ATTNREF_BF16, 1, 1, 1, 1);
    attnref_tensor tqb = mk4(qb, ATTNREF_BOOL, 1, 1, 1, 2), tkb = mk4(kb, ATTNREF_BOOL, 1, 1, 2, 2),
                   tvb = mk4(vb, ATTNREF_BOOL, 1, 1, 2, 1), tob = mk4(ob, ATTNREF_BOOL, 1, 1, 1, 1);
    run_err(&tqf, &tkh, &tvf, NULL, NULL, &tof, of, sizeof of, ATTNREF_EDTYPE, "q f32, k f16");
    run_err(&tqf, &tkf, &tvh, NULL, NULL, &tof, of, sizeof of, ATTNREF_EDTYPE, "q f32, v f16");
    run_err(&tqh, &tkh, &tvbf, NULL, NULL, &toh, oh, sizeof oh, ATTNREF_EDTYPE, "q f16, v bf16");
    run_err(&tqf, &tkf, &tvf, NULL, NULL, &toh, oh, sizeof oh, ATTNREF_EDTYPE, "q f32, out f16");
    run_err(&tqh, &tkh, &tvh, NULL, NULL, &tof, of, sizeof of, ATTNREF_EDTYPE, "q f16, out f32");
    run_err(&tqh, &tkh, &tvh, NULL, NULL, &tobf, oh, sizeof oh, ATTNREF_EDTYPE, "q f16, out bf16");
    run_err(&tqb, &tkb, &tvb, NULL, NULL, &tob, ob, sizeof ob, ATTNREF_EDTYPE, "q/k/v/out bool");
    /* sanity: the matching f16 problem is fine: mean of two 1.0 values = 1.0 */
    run_ok(&tqh, &tkh, &tvh, NULL, NULL, &toh, "f16 all");
    cr_expect_eq(oh[0], 0x3c00u, "f16 all ones: expected 0x3c00, got 0x%04x", (unsigned)oh[0]);
}

/* ------------------------------------------------------------------ numerical stability */

Test(sdpa, large_logits_are_max_subtracted)
{
    /* D = 1, scale 1: scores [1000, 999, 998] and [-1000, -1001, -1002] both shift to [0,-1,-2],
     * exactly like k = [2, 1, 0].  Weights e^0, e^-1, e^-2 normalised; v = [1, 2, 3]. */
    float q[1] = {1}, v[3] = {1, 2, 3};
    float kp[3] = {1000, 999, 998}, kn[3] = {-1000, -1001, -1002}, ks[3] = {2, 1, 0};
    float op[1], on[1], os[1];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 1, 1), tv = mk4(v, ATTNREF_F32, 1, 1, 3, 1);
    attnref_tensor tkp = mk4(kp, ATTNREF_F32, 1, 1, 3, 1), tkn = mk4(kn, ATTNREF_F32, 1, 1, 3, 1),
                   tks = mk4(ks, ATTNREF_F32, 1, 1, 3, 1);
    attnref_tensor top = mk4(op, ATTNREF_F32, 1, 1, 1, 1), ton = mk4(on, ATTNREF_F32, 1, 1, 1, 1),
                   tos = mk4(os, ATTNREF_F32, 1, 1, 1, 1);
    attnref_sdpa_params p = scale_params(1.0);
    run_ok(&tq, &tkp, &tv, NULL, &p, &top, "+1000");
    run_ok(&tq, &tkn, &tv, NULL, &p, &ton, "-1000");
    run_ok(&tq, &tks, &tv, NULL, &p, &tos, "shifted");
    double e1 = exp(-1.0), e2 = exp(-2.0);
    double want = (1.0 + 2.0 * e1 + 3.0 * e2) / (1.0 + e1 + e2);
    expect_close(op[0], want, "+1000", 0);
    expect_close(on[0], want, "-1000", 0);
    expect_close(os[0], want, "shifted", 0);
    expect_bits_eq_f32(op, os, 1, "+1000 vs shifted");
    expect_bits_eq_f32(on, os, 1, "-1000 vs shifted");
    /* large logits through the scale: q = 4, k = [250, 249.75], scale 1 -> scores [1000, 999] */
    float q4[1] = {4}, k2[2] = {250, 249.75f}, v2[2] = {1, 2}, o2[1];
    attnref_tensor tq4 = mk4(q4, ATTNREF_F32, 1, 1, 1, 1), tk2 = mk4(k2, ATTNREF_F32, 1, 1, 2, 1),
                   tv2 = mk4(v2, ATTNREF_F32, 1, 1, 2, 1), to2 = mk4(o2, ATTNREF_F32, 1, 1, 1, 1);
    run_ok(&tq4, &tk2, &tv2, NULL, &p, &to2, "q.k = 1000");
    expect_close(o2[0], (1.0 + 2.0 * e1) / (1.0 + e1), "q.k = 1000", 0);
}

/* ------------------------------------------------------------------ strided inputs */

Test(sdpa, strided_blhd_views_match_contiguous)
{
    enum { B = 2, L = 3, HQ = 4, HKV = 2, D = 4, DV = 3 };
    /* (B, L, H, D) buffers */
    float qb[B * L * HQ * D], kb[B * L * HKV * D], vb[B * L * HKV * DV], ob[B * L * HQ * DV];
    fill_pr(qb, B * L * HQ * D, 61);
    fill_pr(kb, B * L * HKV * D, 62);
    fill_pr(vb, B * L * HKV * DV, 63);
    /* contiguous (B, H, L, D) copies */
    float qc[B * HQ * L * D], kc[B * HKV * L * D], vc[B * HKV * L * DV], oc[B * HQ * L * DV];
    for (int b = 0; b < B; ++b)
        for (int l = 0; l < L; ++l) {
            for (int h = 0; h < HQ; ++h)
                for (int d = 0; d < D; ++d)
                    qc[((b * HQ + h) * L + l) * D + d] = qb[((b * L + l) * HQ + h) * D + d];
            for (int h = 0; h < HKV; ++h) {
                for (int d = 0; d < D; ++d)
                    kc[((b * HKV + h) * L + l) * D + d] = kb[((b * L + l) * HKV + h) * D + d];
                for (int d = 0; d < DV; ++d)
                    vc[((b * HKV + h) * L + l) * DV + d] = vb[((b * L + l) * HKV + h) * DV + d];
            }
        }
    attnref_tensor tqb = mk4(qb, ATTNREF_F32, B, HQ, L, D);
    tqb.strides[0] = L * HQ * D;
    tqb.strides[1] = D;
    tqb.strides[2] = HQ * D;
    tqb.strides[3] = 1;
    attnref_tensor tkb = mk4(kb, ATTNREF_F32, B, HKV, L, D);
    tkb.strides[0] = L * HKV * D;
    tkb.strides[1] = D;
    tkb.strides[2] = HKV * D;
    tkb.strides[3] = 1;
    attnref_tensor tvb = mk4(vb, ATTNREF_F32, B, HKV, L, DV);
    tvb.strides[0] = L * HKV * DV;
    tvb.strides[1] = DV;
    tvb.strides[2] = HKV * DV;
    tvb.strides[3] = 1;
    attnref_tensor tob = mk4(ob, ATTNREF_F32, B, HQ, L, DV);
    tob.strides[0] = L * HQ * DV;
    tob.strides[1] = DV;
    tob.strides[2] = HQ * DV;
    tob.strides[3] = 1;
    attnref_tensor tqc = mk4(qc, ATTNREF_F32, B, HQ, L, D),
                   tkc = mk4(kc, ATTNREF_F32, B, HKV, L, D),
                   tvc = mk4(vc, ATTNREF_F32, B, HKV, L, DV),
                   toc = mk4(oc, ATTNREF_F32, B, HQ, L, DV);
    attnref_sdpa_params p = no_params();
    p.causal = 1;
    run_ok(&tqb, &tkb, &tvb, NULL, &p, &tob, "strided");
    run_ok(&tqc, &tkc, &tvc, NULL, &p, &toc, "contiguous");
    /* strided out read back in (B,H,L,Dv) order */
    float obh[B * HQ * L * DV];
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < HQ; ++h)
            for (int l = 0; l < L; ++l)
                for (int d = 0; d < DV; ++d)
                    obh[((b * HQ + h) * L + l) * DV + d] = ob[((b * L + l) * HQ + h) * DV + d];
    expect_bits_eq_f32(obh, oc, B * HQ * L * DV, "strided vs contiguous");
    uint8_t keep[B * HQ * L * L];
    for (int bh = 0; bh < B * HQ; ++bh)
        for (int i = 0; i < L; ++i)
            for (int j = 0; j < L; ++j)
                keep[(bh * L + i) * L + j] = j <= i;
    double want[B * HQ * L * DV];
    ref_sdpa(B, HQ, HKV, L, L, D, DV, qc, kc, vc, keep, NULL, 0.5, want);
    for (int i = 0; i < B * HQ * L * DV; ++i)
        expect_close(oc[i], want[i], "strided ref", i);
}

Test(sdpa, strided_out_gaps_untouched_and_stride0_kv)
{
    /* out written through a padded view (row stride 5 for Dv = 2): gaps keep their sentinel.
     * k, v shared across the batch through a stride-0 batch dimension. */
    enum { B = 2, H = 1, LQ = 2, LK = 3, D = 2, DV = 2 };
    float q[B * H * LQ * D], k1[LK * D], v1[LK * DV];
    fill_pr(q, B * H * LQ * D, 71);
    fill_pr(k1, LK * D, 72);
    fill_pr(v1, LK * DV, 73);
    float kfull[B * LK * D], vfull[B * LK * DV];
    for (int b = 0; b < B; ++b) {
        memcpy(kfull + b * LK * D, k1, sizeof k1);
        memcpy(vfull + b * LK * DV, v1, sizeof v1);
    }
    float obuf[B * LQ * 5];
    memset(obuf, SENTINEL_BYTE, sizeof obuf);
    attnref_tensor tq = mk4(q, ATTNREF_F32, B, H, LQ, D);
    attnref_tensor tk0 = mk4(k1, ATTNREF_F32, B, H, LK, D),
                   tv0 = mk4(v1, ATTNREF_F32, B, H, LK, DV);
    tk0.strides[0] = 0;
    tv0.strides[0] = 0;
    attnref_tensor to = mk4(obuf, ATTNREF_F32, B, H, LQ, DV);
    to.strides[0] = LQ * 5;
    to.strides[1] = LQ * 5;
    to.strides[2] = 5;
    to.strides[3] = 1;
    run_ok(&tq, &tk0, &tv0, NULL, NULL, &to, "padded out, stride-0 kv");
    float oc[B * H * LQ * DV];
    attnref_tensor tkf = mk4(kfull, ATTNREF_F32, B, H, LK, D),
                   tvf = mk4(vfull, ATTNREF_F32, B, H, LK, DV),
                   toc = mk4(oc, ATTNREF_F32, B, H, LQ, DV);
    run_ok(&tq, &tkf, &tvf, NULL, NULL, &toc, "contiguous");
    for (int r = 0; r < B * LQ; ++r) {
        for (int d = 0; d < DV; ++d)
            cr_expect_eq(f32_bits(obuf[r * 5 + d]), f32_bits(oc[r * DV + d]),
                         "padded out row %d col %d: %g vs %g", r, d, (double)obuf[r * 5 + d],
                         (double)oc[r * DV + d]);
        const uint8_t *gap = (const uint8_t *)(obuf + r * 5 + DV);
        for (size_t g = 0; g < 3 * sizeof(float); ++g)
            cr_expect_eq(gap[g], SENTINEL_BYTE, "padded out row %d: gap byte %zu written", r, g);
    }
    double want[B * H * LQ * DV];
    ref_sdpa(B, H, H, LQ, LK, D, DV, q, kfull, vfull, NULL, NULL, 1.0 / sqrt(2.0), want);
    for (int i = 0; i < B * H * LQ * DV; ++i)
        expect_close(oc[i], want[i], "stride-0 ref", i);
}

/* ------------------------------------------------------------------ argument errors */

Test(sdpa, shape_errors)
{
    /* valid base: q (1,4,2,3), k (1,2,5,3), v (1,2,5,2), out (1,4,2,2) */
    float q[64] = {0}, k[64] = {0}, v[64] = {0}, o[64];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 4, 2, 3), tk = mk4(k, ATTNREF_F32, 1, 2, 5, 3),
                   tv = mk4(v, ATTNREF_F32, 1, 2, 5, 2), to = mk4(o, ATTNREF_F32, 1, 4, 2, 2);
    run_ok(&tq, &tk, &tv, NULL, NULL, &to, "valid base");

    attnref_tensor x;
    x = mk4(q, ATTNREF_F32, 1, 3, 2, 3);
    attnref_tensor to3 = mk4(o, ATTNREF_F32, 1, 3, 2, 2);
    run_err(&x, &tk, &tv, NULL, NULL, &to3, o, sizeof o, ATTNREF_EINVAL, "Hq=3 % Hkv=2");
    x = mk4(k, ATTNREF_F32, 1, 2, 5, 4);
    run_err(&tq, &x, &tv, NULL, NULL, &to, o, sizeof o, ATTNREF_EINVAL, "k D=4 vs q D=3");
    x = mk4(v, ATTNREF_F32, 1, 2, 4, 2);
    run_err(&tq, &tk, &x, NULL, NULL, &to, o, sizeof o, ATTNREF_EINVAL, "v Lk=4 vs k Lk=5");
    x = mk4(v, ATTNREF_F32, 1, 1, 5, 2);
    run_err(&tq, &tk, &x, NULL, NULL, &to, o, sizeof o, ATTNREF_EINVAL, "v heads 1 vs k heads 2");
    x = mk4(k, ATTNREF_F32, 2, 2, 5, 3);
    attnref_tensor tv2 = mk4(v, ATTNREF_F32, 2, 2, 5, 2);
    run_err(&tq, &x, &tv2, NULL, NULL, &to, o, sizeof o, ATTNREF_EINVAL, "k/v B=2 vs q B=1");
    x = mk4(o, ATTNREF_F32, 1, 4, 2, 3);
    run_err(&tq, &tk, &tv, NULL, NULL, &x, o, sizeof o, ATTNREF_EINVAL, "out Dv=3 vs v Dv=2");
    x = mk4(o, ATTNREF_F32, 1, 2, 2, 2);
    run_err(&tq, &tk, &tv, NULL, NULL, &x, o, sizeof o, ATTNREF_EINVAL, "out Hkv heads");
    x = mk4(o, ATTNREF_F32, 1, 4, 5, 2);
    run_err(&tq, &tk, &tv, NULL, NULL, &x, o, sizeof o, ATTNREF_EINVAL, "out Lk rows");
    x = mk4(o, ATTNREF_F32, 2, 4, 2, 2);
    run_err(&tq, &tk, &tv, NULL, NULL, &x, o, sizeof o, ATTNREF_EINVAL, "out B=2");
    /* Hkv == 0 */
    attnref_tensor tk0 = mk4(k, ATTNREF_F32, 1, 0, 5, 3), tv0 = mk4(v, ATTNREF_F32, 1, 0, 5, 2);
    run_err(&tq, &tk0, &tv0, NULL, NULL, &to, o, sizeof o, ATTNREF_EINVAL, "Hkv = 0");
    /* rank != 4 */
    const int64_t s3[3] = {4, 2, 3};
    x = mkn(q, ATTNREF_F32, 3, s3);
    run_err(&x, &tk, &tv, NULL, NULL, &to, o, sizeof o, ATTNREF_EINVAL, "q rank 3");
    const int64_t so3[3] = {4, 2, 2};
    x = mkn(o, ATTNREF_F32, 3, so3);
    run_err(&tq, &tk, &tv, NULL, NULL, &x, o, sizeof o, ATTNREF_EINVAL, "out rank 3");
    /* bad descriptors */
    x = tq;
    x.strides[2] = -3;
    run_err(&x, &tk, &tv, NULL, NULL, &to, o, sizeof o, ATTNREF_EINVAL, "q negative stride");
    x = tk;
    x.data = NULL;
    run_err(&tq, &x, &tv, NULL, NULL, &to, o, sizeof o, ATTNREF_EINVAL, "k data NULL");
    x = tv;
    x.shape[3] = -2;
    run_err(&tq, &tk, &x, NULL, NULL, &to, o, sizeof o, ATTNREF_EINVAL, "v negative extent");
}

Test(sdpa, null_tensors_and_causal_with_mask)
{
    float q[4] = {0}, k[4] = {0}, v[4] = {0}, o[4];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 2, 2), tk = mk4(k, ATTNREF_F32, 1, 1, 2, 2),
                   tv = mk4(v, ATTNREF_F32, 1, 1, 2, 2), to = mk4(o, ATTNREF_F32, 1, 1, 2, 2);
    run_err(NULL, &tk, &tv, NULL, NULL, &to, o, sizeof o, ATTNREF_EINVAL, "NULL q");
    run_err(&tq, NULL, &tv, NULL, NULL, &to, o, sizeof o, ATTNREF_EINVAL, "NULL k");
    run_err(&tq, &tk, NULL, NULL, NULL, &to, o, sizeof o, ATTNREF_EINVAL, "NULL v");
    run_err(&tq, &tk, &tv, NULL, NULL, NULL, NULL, 0, ATTNREF_EINVAL, "NULL out");
    uint8_t m[4] = {1, 1, 1, 1};
    attnref_tensor tm = mk4(m, ATTNREF_BOOL, 1, 1, 2, 2);
    attnref_sdpa_params p = no_params();
    p.causal = 1;
    run_err(&tq, &tk, &tv, &tm, &p, &to, o, sizeof o, ATTNREF_EINVAL, "causal with bool mask");
    float mf[4] = {0};
    attnref_tensor tmf = mk4(mf, ATTNREF_F32, 1, 1, 2, 2);
    run_err(&tq, &tk, &tv, &tmf, &p, &to, o, sizeof o, ATTNREF_EINVAL, "causal with additive mask");
    /* diag may be NULL */
    int rc = attnref_sdpa(NULL, &tk, &tv, NULL, NULL, &to, NULL);
    cr_expect_eq(rc, ATTNREF_EINVAL, "NULL q with NULL diag: expected EINVAL, got %d", rc);
    rc = attnref_sdpa(&tq, &tk, &tv, NULL, NULL, &to, NULL);
    cr_expect_eq(rc, ATTNREF_OK, "valid call with NULL diag: rc=%d", rc);
}

/* attnref_sdpa_check on valid calls: OK, diag cleared, nothing written (it computes nothing);
 * NULL params are the defaults and a NULL out is not checked.  Its rejections are compared with
 * attnref_sdpa's in run_err, i.e. in every error test of this file. */
Test(sdpa, check_accepts_valid_calls_and_writes_nothing)
{
    float q[8] = {1, 2, 3, 4, 5, 6, 7, 8}, k[8] = {1, 0, 0, 1, 1, 1, 2, 2}, v[8] = {0};
    float o[8];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 2, 2, 2), tk = mk4(k, ATTNREF_F32, 1, 1, 4, 2),
                   tv = mk4(v, ATTNREF_F32, 1, 1, 4, 2), to = mk4(o, ATTNREF_F32, 1, 2, 2, 2);
    attnref_sdpa_params p = no_params();
    p.causal = 1;
    p.window = 2;
    int64_t lengths[1] = {3}, left[1] = {1};
    p.batch = 1;
    p.lengths = lengths;
    p.left_padding = left;
    const attnref_sdpa_params *ps[2] = {NULL, &p};
    for (int c = 0; c < 2; c++) {
        memset(o, SENTINEL_BYTE, sizeof o);
        attnref_diag d;
        fill_diag(&d);
        int rc = attnref_sdpa_check(&tq, &tk, &tv, NULL, ps[c], &to, &d);
        cr_expect_eq(rc, ATTNREF_OK, "params %d: rc %d (%s): %s", c, rc, attnref_status_name(rc),
                     d.msg);
        cr_expect_eq(d.msg[0], '\0', "params %d: diag not cleared: \"%s\"", c, d.msg);
        const uint8_t *b = (const uint8_t *)o;
        for (size_t i = 0; i < sizeof o; i++)
            cr_expect_eq(b[i], SENTINEL_BYTE, "params %d: out byte %zu written", c, i);
    }
    /* No out: only q, k, v, the mask and the parameters are checked (a bad window still is). */
    cr_expect_eq(attnref_sdpa_check(&tq, &tk, &tv, NULL, &p, NULL, NULL), ATTNREF_OK);
    p.window = -1;
    attnref_diag d;
    fill_diag(&d);
    cr_expect_eq(attnref_sdpa_check(&tq, &tk, &tv, NULL, &p, NULL, &d), ATTNREF_EINVAL);
    cr_expect_str_eq(d.msg, "window: -1 is negative (0 = no window)");
    /* An out of another dtype than q is the same EDTYPE as in attnref_sdpa. */
    attnref_tensor t16 = mk4(o, ATTNREF_F16, 1, 2, 2, 2);
    p.window = 0;
    fill_diag(&d);
    cr_expect_eq(attnref_sdpa_check(&tq, &tk, &tv, NULL, &p, &t16, &d), ATTNREF_EDTYPE, "%s",
                 d.msg);
}

Test(sdpa, non_finite_explicit_scale_rejected)
{
    float q[4] = {0}, k[4] = {0}, v[4] = {0}, o[4];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 2, 2), tk = mk4(k, ATTNREF_F32, 1, 1, 2, 2),
                   tv = mk4(v, ATTNREF_F32, 1, 1, 2, 2), to = mk4(o, ATTNREF_F32, 1, 1, 2, 2);
    attnref_sdpa_params p = scale_params(NAN);
    run_err(&tq, &tk, &tv, NULL, &p, &to, o, sizeof o, ATTNREF_EINVAL, "scale NaN");
    p = scale_params(INFINITY);
    run_err(&tq, &tk, &tv, NULL, &p, &to, o, sizeof o, ATTNREF_EINVAL, "scale +inf");
    p = scale_params(-INFINITY);
    run_err(&tq, &tk, &tv, NULL, &p, &to, o, sizeof o, ATTNREF_EINVAL, "scale -inf");
    /* a scale that is NaN but not used (has_scale = 0) is ignored */
    p = no_params();
    p.scale = NAN;
    run_ok(&tq, &tk, &tv, NULL, &p, &to, "unused NaN scale");
    /* negative finite scales are fine: q.k all 0 -> mean of v = 0 */
    p = scale_params(-2.0);
    run_ok(&tq, &tk, &tv, NULL, &p, &to, "scale -2");
}

Test(sdpa, oversized_tensor_erange)
{
    /* q (1,1,1,2^32) with stride 0 along D: numel 2^32 > ATTNREF_MAX_NUMEL -> ERANGE before any
     * work.  k matches it; v and out are tiny. */
    float q[1] = {0}, k[1] = {0}, v[1] = {0}, o[1];
    int64_t big = (int64_t)1 << 32;
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 1, 1), tk = mk4(k, ATTNREF_F32, 1, 1, 1, 1),
                   tv = mk4(v, ATTNREF_F32, 1, 1, 1, 1), to = mk4(o, ATTNREF_F32, 1, 1, 1, 1);
    tq.shape[3] = big;
    tq.strides[3] = 0;
    tk.shape[3] = big;
    tk.strides[3] = 0;
    run_err(&tq, &tk, &tv, NULL, NULL, &to, o, sizeof o, ATTNREF_ERANGE, "q numel 2^32");
}
