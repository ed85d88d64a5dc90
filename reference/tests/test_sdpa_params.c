/* Unit tests for the reference SDPA's mask parameters (attnref/sdpa.h, SPEC clause 19):
 * window, lengths, left_padding, and the predicate attnref_sdpa_key_kept.
 *
 * The parameters must mean exactly what the equivalent boolean mask tensor means, so most
 * tests build that mask here from the clause's formula (independently of the library) and
 * require bit-identical outputs; the hand tables restate the SPEC examples.
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attnref/dtype.h"
#include "attnref/sdpa.h"
#include "attnref/status.h"
#include "attnref/tensor.h"
#include "tensor_test_util.h"

#define SENTINEL_BYTE 0xA5u
#define MAXB 4

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Multiples of 1/8 in [-2, 2]: exact in every dtype. */
static void fill_pr(float *x, int64_t n, uint32_t seed)
{
    uint32_t s = seed;
    for (int64_t i = 0; i < n; ++i) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((int)((s >> 10) % 33u) - 16) / 8.0f;
    }
}

/* The clause 19 keep rule written out from the SPEC text (not through the library). */
typedef struct pspec {
    const char *what;
    int causal, has_off;
    int64_t off, window;
    int64_t lengths[MAXB], left_padding[MAXB]; /* -1 in entry 0: not given */
} pspec;

static int spec_keeps(const pspec *s, int64_t lq, int64_t lk, int64_t b, int64_t i, int64_t j)
{
    const int64_t off = s->has_off ? s->off : lk - lq;
    if (s->causal && j > off + i)
        return 0;
    if (s->window > 0 && j <= off + i - s->window)
        return 0;
    if (s->lengths[0] >= 0 && j >= s->lengths[b])
        return 0;
    if (s->left_padding[0] >= 0 && j < s->left_padding[b])
        return 0;
    return 1;
}

static attnref_sdpa_params spec_params(const pspec *s, int64_t batch)
{
    attnref_sdpa_params p;
    memset(&p, 0, sizeof p);
    p.causal = s->causal;
    p.has_causal_offset = s->has_off;
    p.causal_offset = s->off;
    p.window = s->window;
    p.batch = batch;
    p.lengths = s->lengths[0] >= 0 ? s->lengths : NULL;
    p.left_padding = s->left_padding[0] >= 0 ? s->left_padding : NULL;
    return p;
}

static void run_ok(const attnref_tensor *q, const attnref_tensor *k, const attnref_tensor *v,
                   const attnref_tensor *mask, const attnref_sdpa_params *p, attnref_tensor *out,
                   const char *what)
{
    attnref_diag diag;
    int rc = attnref_sdpa(q, k, v, mask, p, out, &diag);
    cr_assert_eq(rc, ATTNREF_OK, "%s: rc %s: %s", what, attnref_status_name(rc), diag.msg);
}

/* ---------------------------------------------------------------- the predicate, by hand */

/* One batch row, keep rows as '0'/'1' strings (SPEC clauses 4, 5 and 19 examples). */
typedef struct hand {
    const char *what;
    int64_t lq, lk;
    int causal, has_off;
    int64_t off, window, length, left_padding; /* -1: not given */
    const char *rows[6];
} hand;

static const hand HAND[] = {
    {"clause 4: L = 6, W = 3",
     6,
     6,
     1,
     0,
     0,
     3,
     -1,
     -1,
     {"100000", "110000", "111000", "011100", "001110", "000111"}},
    {"clause 4: Lq = 5, offset 1, W = 3",
     5,
     6,
     1,
     0,
     0,
     3,
     -1,
     -1,
     {"110000", "111000", "011100", "001110", "000111"}},
    {"decode after 9 cached, W = 4", 1, 10, 1, 0, 0, 4, -1, -1, {"0000001111"}},
    {"W = 1 is the diagonal", 3, 3, 1, 0, 0, 1, -1, -1, {"100", "010", "001"}},
    {"clause 5 all four, b2", 4, 7, 1, 0, 0, 3, 4, 2, {"0011000", "0011000", "0001000", "0000000"}},
    /* Bottom-right stays Lk - Lq = 2 whatever lengths says (ONNX opset 24 would use
     * lengths - Lq = 0 and give 10000 / 11000 / 11100). */
    {"lengths never move the causal offset", 3, 5, 1, 0, 0, 0, 3, -1, {"11100", "11100", "11100"}},
    {"explicit offset 0 with lengths", 3, 5, 1, 1, 0, 0, 2, -1, {"10000", "11000", "11000"}},
    {"left padding alone (no causal)", 2, 4, 0, 0, 0, 0, -1, 1, {"0111", "0111"}},
    {"lengths and left padding (no causal)", 1, 5, 0, 0, 0, 0, 4, 1, {"01110"}},
    {"lengths 0", 2, 3, 0, 0, 0, 0, 0, -1, {"000", "000"}},
    {"left padding Lk", 1, 3, 1, 0, 0, 0, -1, 3, {"000"}},
    {"window past every key", 2, 4, 1, 0, 0, 100, -1, -1, {"1110", "1111"}},
    {"negative offset, window 2", 3, 2, 1, 0, 0, 2, -1, -1, {"00", "10", "11"}},
};

Test(sdpa_params, key_kept_hand_tables)
{
    for (size_t t = 0; t < sizeof HAND / sizeof HAND[0]; t++) {
        const hand *h = &HAND[t];
        attnref_sdpa_params p;
        memset(&p, 0, sizeof p);
        p.causal = h->causal;
        p.has_causal_offset = h->has_off;
        p.causal_offset = h->off;
        p.window = h->window;
        p.batch = 1;
        p.lengths = h->length >= 0 ? &h->length : NULL;
        p.left_padding = h->left_padding >= 0 ? &h->left_padding : NULL;
        for (int64_t i = 0; i < h->lq; i++)
            for (int64_t j = 0; j < h->lk; j++)
                cr_expect_eq(attnref_sdpa_key_kept(&p, h->lq, h->lk, 0, i, j), h->rows[i][j] == '1',
                             "%s: row %lld key %lld: expected %c", h->what, (long long)i,
                             (long long)j, h->rows[i][j]);
    }
    cr_expect_eq(attnref_sdpa_key_kept(NULL, 3, 5, 0, 0, 4), 1, "NULL params keep everything");
}

Test(sdpa_params, key_kept_extreme_offsets_do_not_overflow)
{
    attnref_sdpa_params p;
    memset(&p, 0, sizeof p);
    p.causal = 1;
    p.has_causal_offset = 1;
    p.causal_offset = INT64_MAX; /* causal keeps every key; a window of 3 reaches none of them */
    p.window = 3;
    for (int64_t j = 0; j < 4; j++)
        cr_expect_eq(attnref_sdpa_key_kept(&p, 4, 4, 0, 3, j), 0, "offset INT64_MAX, W 3, key %lld",
                     (long long)j);
    p.window = INT64_MAX; /* keeps off + i - W < j <= off + i: j > i */
    for (int64_t j = 0; j < 4; j++)
        cr_expect_eq(attnref_sdpa_key_kept(&p, 4, 4, 0, 1, j), j > 1,
                     "offset INT64_MAX, W INT64_MAX, row 1 key %lld", (long long)j);
    p.causal_offset = INT64_MIN; /* nothing is at or before a position that negative */
    p.window = 1;
    for (int64_t j = 0; j < 4; j++)
        cr_expect_eq(attnref_sdpa_key_kept(&p, 4, 4, 0, 3, j), 0, "offset INT64_MIN, key %lld",
                     (long long)j);
}

/* ---------------------------------------------------------------- parameters == mask tensor */

#define B 3
#define HQ 4
#define HKV 2
#define LQ 5
#define LK 9
#define D 3
#define DV 2

static const pspec EQUIV[] = {
    {"causal", 1, 0, 0, 0, {-1}, {-1}},
    {"causal, W 2", 1, 0, 0, 2, {-1}, {-1}},
    {"causal offset 6, W 3", 1, 1, 6, 3, {-1}, {-1}},
    {"causal offset -2, W 1", 1, 1, -2, 1, {-1}, {-1}},
    {"lengths 9 4 0", 0, 0, 0, 0, {9, 4, 0}, {-1}},
    {"left padding 0 3 9", 0, 0, 0, 0, {-1}, {0, 3, 9}},
    {"lengths 7 5 3, left padding 1 2 3", 0, 0, 0, 0, {7, 5, 3}, {1, 2, 3}},
    {"causal, lengths 8 2 5", 1, 0, 0, 0, {8, 2, 5}, {-1}},
    {"causal offset 1, left padding 2 0 1", 1, 1, 1, 0, {-1}, {2, 0, 1}},
    {"causal W 4, lengths 9 7 6, left padding 0 4 5", 1, 0, 0, 4, {9, 7, 6}, {0, 4, 5}},
};

static uint8_t *keep_tensor(const pspec *s)
{
    uint8_t *m = malloc(B * LQ * LK);
    cr_assert(m);
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < LQ; i++)
            for (int64_t j = 0; j < LK; j++)
                m[(b * LQ + i) * LK + j] = (uint8_t)spec_keeps(s, LQ, LK, b, i, j);
    return m;
}

Test(sdpa_params, params_equal_the_boolean_mask_tensor)
{
    static float q[B * HQ * LQ * D], k[B * HKV * LK * D], v[B * HKV * LK * DV];
    fill_pr(q, B * HQ * LQ * D, 11);
    fill_pr(k, B * HKV * LK * D, 12);
    fill_pr(v, B * HKV * LK * DV, 13);
    attnref_tensor tq = mk4(q, ATTNREF_F32, B, HQ, LQ, D), tk = mk4(k, ATTNREF_F32, B, HKV, LK, D),
                   tv = mk4(v, ATTNREF_F32, B, HKV, LK, DV);
    for (size_t t = 0; t < sizeof EQUIV / sizeof EQUIV[0]; t++) {
        const pspec *s = &EQUIV[t];
        float op[B * HQ * LQ * DV], om[B * HQ * LQ * DV];
        double fp[B * HQ * LQ * DV], fm[B * HQ * LQ * DV];
        attnref_tensor top = mk4(op, ATTNREF_F32, B, HQ, LQ, DV);
        attnref_tensor tom = mk4(om, ATTNREF_F32, B, HQ, LQ, DV);
        attnref_sdpa_params p = spec_params(s, B), none;
        memset(&none, 0, sizeof none);
        uint8_t *m = keep_tensor(s);
        attnref_tensor tm = mk4(m, ATTNREF_BOOL, B, 1, LQ, LK);
        run_ok(&tq, &tk, &tv, NULL, &p, &top, s->what);
        run_ok(&tq, &tk, &tv, &tm, &none, &tom, s->what);
        attnref_diag diag;
        cr_assert_eq(attnref_sdpa_f64(&tq, &tk, &tv, NULL, &p, fp, &diag), ATTNREF_OK, "%s",
                     diag.msg);
        cr_assert_eq(attnref_sdpa_f64(&tq, &tk, &tv, &tm, &none, fm, &diag), ATTNREF_OK, "%s",
                     diag.msg);
        int kept_rows = 0, empty_rows = 0;
        for (int64_t n = 0; n < B * HQ * LQ * DV; n++) {
            cr_expect_eq(f32_bits(op[n]), f32_bits(om[n]), "%s: out[%lld] %.9g != mask's %.9g",
                         s->what, (long long)n, (double)op[n], (double)om[n]);
            cr_expect(fp[n] == fm[n] || (isnan(fp[n]) && isnan(fm[n])), "%s: f64 out[%lld]",
                      s->what, (long long)n);
        }
        for (int64_t r = 0; r < B * LQ; r++) {
            int any = 0;
            for (int64_t j = 0; j < LK; j++)
                any |= m[r * LK + j];
            any ? kept_rows++ : empty_rows++;
        }
        cr_expect(kept_rows > 0, "%s: the spec must keep some row", s->what);
        free(m);
    }
}

/* ---------------------------------------------------------------- rows left empty */

Test(sdpa_params, rows_left_empty_are_exactly_zero_in_every_dtype)
{
    /* B = 2, Lq = 2, Lk = 4: b0 lengths 0 (nothing), b1 left padding 4 (nothing); then a window
     * that ends before the lengths start (row 0) next to a row that keeps one key. */
    static const attnref_dtype dts[3] = {ATTNREF_F32, ATTNREF_F16, ATTNREF_BF16};
    for (int t = 0; t < 3; t++) {
        const attnref_dtype dt = dts[t];
        uint16_t q16[2 * 2 * 2], k16[2 * 4 * 2], v16[2 * 4 * 2], o16[2 * 2 * 2];
        float q32[8], k32[16], v32[16], o32[8];
        fill_pr(q32, 8, 21);
        fill_pr(k32, 16, 22);
        for (int n = 0; n < 16; n++)
            v32[n] = NAN; /* every key is excluded: none may be read into the output */
        void *qd = q32, *kd = k32, *vd = v32, *od = o32;
        if (dt != ATTNREF_F32) {
            for (int n = 0; n < 8; n++)
                attnref_store(q16, dt, n, q32[n]);
            for (int n = 0; n < 16; n++) {
                attnref_store(k16, dt, n, k32[n]);
                attnref_store(v16, dt, n, v32[n]);
            }
            qd = q16, kd = k16, vd = v16, od = o16;
        }
        attnref_tensor tq = mk4(qd, dt, 2, 1, 2, 2), tk = mk4(kd, dt, 2, 1, 4, 2),
                       tv = mk4(vd, dt, 2, 1, 4, 2), to = mk4(od, dt, 2, 1, 2, 2);
        const int64_t lengths[2] = {0, 4}, left_padding[2] = {0, 4};
        attnref_sdpa_params p;
        memset(&p, 0, sizeof p);
        p.batch = 2;
        p.lengths = lengths;
        p.left_padding = left_padding;
        run_ok(&tq, &tk, &tv, NULL, &p, &to, attnref_dtype_name(dt));
        for (int n = 0; n < 8; n++) {
            double x = attnref_load(od, dt, n);
            cr_expect(x == 0.0 && !signbit(x), "%s: out[%d] = %g, expected +0",
                      attnref_dtype_name(dt), n, x);
        }
    }
    /* Window and lengths that do not meet: Lq = 2, Lk = 6, causal bottom-right (offset 4),
     * W = 2 keeps {3, 4} for row 0 and {4, 5} for row 1; lengths 4 leaves {3} and {}. */
    float q[4] = {1, 2, 3, 4}, k[12], v[6] = {1, 2, 3, 8, NAN, NAN}, o[2];
    fill_pr(k, 12, 23);
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 2, 2), tk = mk4(k, ATTNREF_F32, 1, 1, 6, 2),
                   tv = mk4(v, ATTNREF_F32, 1, 1, 6, 1), to = mk4(o, ATTNREF_F32, 1, 1, 2, 1);
    const int64_t len = 4;
    attnref_sdpa_params p;
    memset(&p, 0, sizeof p);
    p.causal = 1;
    p.window = 2;
    p.batch = 1;
    p.lengths = &len;
    run_ok(&tq, &tk, &tv, NULL, &p, &to, "window and lengths disjoint");
    cr_expect_eq(f32_bits(o[0]), f32_bits(8.0f), "row 0 keeps only key 3 (v = 8), got %g",
                 (double)o[0]);
    cr_expect_eq(f32_bits(o[1]), 0u, "row 1 keeps nothing: +0, got %g", (double)o[1]);
}

/* Real values: scale 0 makes the weights uniform over the kept keys, so each output is the
 * mean of V over exactly the keys the parameters keep. */
Test(sdpa_params, lengths_never_move_the_causal_offset_values)
{
    float q[3] = {1, 1, 1}, k[5] = {1, 1, 1, 1, 1}, v[5] = {1, 2, 4, 8, 16}, o[3];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 3, 1), tk = mk4(k, ATTNREF_F32, 1, 1, 5, 1),
                   tv = mk4(v, ATTNREF_F32, 1, 1, 5, 1), to = mk4(o, ATTNREF_F32, 1, 1, 3, 1);
    const int64_t len = 3;
    attnref_sdpa_params p;
    memset(&p, 0, sizeof p);
    p.has_scale = 1;
    p.scale = 0.0;
    p.causal = 1;
    p.batch = 1;
    p.lengths = &len;
    run_ok(&tq, &tk, &tv, NULL, &p, &to, "lengths 3 of 5, Lq 3");
    for (int i = 0; i < 3; i++) /* every row keeps {0, 1, 2}: (1 + 2 + 4) / 3 */
        cr_expect_eq(f32_bits(o[i]), f32_bits((float)(7.0 / 3.0)), "row %d: %.9g", i, (double)o[i]);
    const int64_t lp = 1;
    p.lengths = NULL;
    p.left_padding = &lp;
    p.window = 2;
    run_ok(&tq, &tk, &tv, NULL, &p, &to, "left padding 1, W 2");
    /* offset 2: rows keep {1, 2}, {2, 3}, {3, 4} */
    const float want[3] = {3.0f, 6.0f, 12.0f};
    for (int i = 0; i < 3; i++)
        cr_expect_eq(f32_bits(o[i]), f32_bits(want[i]), "row %d: %.9g, expected %g", i,
                     (double)o[i], (double)want[i]);
}

/* ---------------------------------------------------------------- composition with a mask */

Test(sdpa_params, compose_with_bool_and_additive_mask_tensors)
{
    static float q[B * HQ * LQ * D], k[B * HKV * LK * D], v[B * HKV * LK * DV];
    fill_pr(q, B * HQ * LQ * D, 31);
    fill_pr(k, B * HKV * LK * D, 32);
    fill_pr(v, B * HKV * LK * DV, 33);
    attnref_tensor tq = mk4(q, ATTNREF_F32, B, HQ, LQ, D), tk = mk4(k, ATTNREF_F32, B, HKV, LK, D),
                   tv = mk4(v, ATTNREF_F32, B, HKV, LK, DV);
    const pspec s = {"lengths 8 5 2, left padding 1 0 2", 0, 0, 0, 0, {8, 5, 2}, {1, 0, 2}};
    attnref_sdpa_params p = spec_params(&s, B), none;
    memset(&none, 0, sizeof none);
    enum { NM = B * HQ * LQ * LK, NO = B * HQ * LQ * DV };
    static uint8_t user[NM], both[NM];
    static float add[NM], add_both[NM];
    uint32_t st = 41;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < HQ; h++)
            for (int64_t i = 0; i < LQ; i++)
                for (int64_t j = 0; j < LK; j++) {
                    const int64_t n = ((b * HQ + h) * LQ + i) * LK + j;
                    st = st * 1664525u + 1013904223u;
                    user[n] = (st >> 12) % 4u != 0; /* per-head random selection */
                    add[n] = (float)((int)((st >> 16) % 9u) - 4) / 4.0f; /* finite, added */
                    const int keep = spec_keeps(&s, LQ, LK, b, i, j);
                    both[n] = (uint8_t)(user[n] && keep);
                    add_both[n] = keep ? add[n] : -INFINITY;
                }
    float o1[NO], o2[NO];
    attnref_tensor to1 = mk4(o1, ATTNREF_F32, B, HQ, LQ, DV);
    attnref_tensor to2 = mk4(o2, ATTNREF_F32, B, HQ, LQ, DV);
    attnref_tensor tu = mk4(user, ATTNREF_BOOL, B, HQ, LQ, LK);
    attnref_tensor tb = mk4(both, ATTNREF_BOOL, B, HQ, LQ, LK);
    run_ok(&tq, &tk, &tv, &tu, &p, &to1, "bool mask + params");
    run_ok(&tq, &tk, &tv, &tb, &none, &to2, "bool intersection");
    for (int n = 0; n < NO; n++)
        cr_expect_eq(f32_bits(o1[n]), f32_bits(o2[n]), "bool: out[%d] %.9g != %.9g", n,
                     (double)o1[n], (double)o2[n]);
    attnref_tensor ta = mk4(add, ATTNREF_F32, B, HQ, LQ, LK);
    attnref_tensor tab = mk4(add_both, ATTNREF_F32, B, HQ, LQ, LK);
    run_ok(&tq, &tk, &tv, &ta, &p, &to1, "additive mask + params");
    run_ok(&tq, &tk, &tv, &tab, &none, &to2, "additive with -inf where excluded");
    for (int n = 0; n < NO; n++)
        cr_expect_eq(f32_bits(o1[n]), f32_bits(o2[n]), "additive: out[%d] %.9g != %.9g", n,
                     (double)o1[n], (double)o2[n]);
}

/* ---------------------------------------------------------------- excluded slots */

Test(sdpa_params, nan_inf_in_excluded_slots_contribute_nothing)
{
    /* B = 2, Lq = 2, Lk = 8; b0 keeps keys 2..5 (left padding 2, lengths 6), b1 keys 0..3 and
     * causal W 3 trims further.  Every other slot holds NaN / inf in K and V. */
    static const pspec specs[2] = {
        {"lengths + left padding", 0, 0, 0, 0, {6, 4}, {2, 0}},
        {"causal offset 3, W 3 + lengths", 1, 1, 3, 3, {6, 4}, {2, 0}},
    };
    for (int t = 0; t < 2; t++) {
        const pspec *s = &specs[t];
        float q[2 * 2 * 4], kc[2 * 8 * 4], vc[2 * 8 * 3], kd[2 * 8 * 4], vd[2 * 8 * 3];
        float oc[2 * 2 * 3], od[2 * 2 * 3];
        fill_pr(q, 16, 51);
        fill_pr(kc, 64, 52);
        fill_pr(vc, 48, 53);
        memcpy(kd, kc, sizeof kd);
        memcpy(vd, vc, sizeof vd);
        for (int64_t b = 0; b < 2; b++)
            for (int64_t j = 0; j < 8; j++) {
                int kept_anywhere = 0;
                for (int64_t i = 0; i < 2; i++)
                    kept_anywhere |= spec_keeps(s, 2, 8, b, i, j);
                if (kept_anywhere)
                    continue;
                for (int d = 0; d < 4; d++)
                    kd[(b * 8 + j) * 4 + d] = d % 2 ? INFINITY : NAN;
                for (int e = 0; e < 3; e++)
                    vd[(b * 8 + j) * 3 + e] = e % 2 ? -INFINITY : NAN;
            }
        attnref_tensor tq = mk4(q, ATTNREF_F32, 2, 1, 2, 4);
        attnref_tensor tkc = mk4(kc, ATTNREF_F32, 2, 1, 8, 4);
        attnref_tensor tvc = mk4(vc, ATTNREF_F32, 2, 1, 8, 3);
        attnref_tensor tkd = mk4(kd, ATTNREF_F32, 2, 1, 8, 4);
        attnref_tensor tvd = mk4(vd, ATTNREF_F32, 2, 1, 8, 3);
        attnref_tensor toc = mk4(oc, ATTNREF_F32, 2, 1, 2, 3);
        attnref_tensor tod = mk4(od, ATTNREF_F32, 2, 1, 2, 3);
        attnref_sdpa_params p = spec_params(s, 2);
        run_ok(&tq, &tkc, &tvc, NULL, &p, &toc, s->what);
        run_ok(&tq, &tkd, &tvd, NULL, &p, &tod, s->what);
        for (int n = 0; n < 12; n++) {
            cr_expect(isfinite(od[n]), "%s: out[%d] = %g", s->what, n, (double)od[n]);
            cr_expect_eq(f32_bits(od[n]), f32_bits(oc[n]), "%s: out[%d] %.9g != clean %.9g",
                         s->what, n, (double)od[n], (double)oc[n]);
        }
    }
}

/* ---------------------------------------------------------------- rejection */

typedef struct bad {
    const char *what;
    int causal, with_mask;
    int64_t window, batch;
    int64_t lengths[MAXB], left_padding[MAXB]; /* -99 in entry 0: not given */
    const char *diag_has;
} bad;

/* q (B = 2, Lq = 2), Lk = 4. */
static const bad BAD[] = {
    {"window -1", 1, 0, -1, 2, {-99}, {-99}, "window"},
    {"window without causal", 0, 0, 2, 2, {-99}, {-99}, "causal"},
    {"window with a mask tensor (and so without causal)", 0, 1, 2, 2, {-99}, {-99}, "window"},
    {"lengths entry -1", 0, 0, 0, 2, {4, -1}, {-99}, "lengths[1]"},
    {"lengths entry Lk + 1", 1, 0, 0, 2, {5, 1}, {-99}, "lengths[0]"},
    {"left padding entry -1", 0, 0, 0, 2, {-99}, {-1, 0}, "left_padding[0]"},
    {"left padding entry Lk + 1", 0, 0, 0, 2, {-99}, {0, 5}, "left_padding[1]"},
    {"lengths for 1 of 2 batch rows", 0, 0, 0, 1, {4}, {-99}, "batch"},
    {"left padding for 3 of 2 batch rows", 0, 0, 0, 3, {-99}, {0, 0, 0}, "batch"},
    {"lengths with causal and a mask tensor", 1, 1, 0, 2, {4, 4}, {-99}, "mask"},
};

Test(sdpa_params, invalid_parameters_rejected_nothing_written)
{
    float q[2 * 2 * 2] = {0}, k[2 * 4 * 2] = {0}, v[2 * 4 * 2] = {0}, o[2 * 2 * 2];
    uint8_t m[4] = {1, 1, 1, 1};
    attnref_tensor tq = mk4(q, ATTNREF_F32, 2, 1, 2, 2), tk = mk4(k, ATTNREF_F32, 2, 1, 4, 2),
                   tv = mk4(v, ATTNREF_F32, 2, 1, 4, 2), to = mk4(o, ATTNREF_F32, 2, 1, 2, 2),
                   tm = mk4(m, ATTNREF_BOOL, 1, 1, 1, 4);
    for (size_t t = 0; t < sizeof BAD / sizeof BAD[0]; t++) {
        const bad *x = &BAD[t];
        attnref_sdpa_params p;
        memset(&p, 0, sizeof p);
        p.causal = x->causal;
        p.window = x->window;
        p.batch = x->batch;
        p.lengths = x->lengths[0] != -99 ? x->lengths : NULL;
        p.left_padding = x->left_padding[0] != -99 ? x->left_padding : NULL;
        memset(o, SENTINEL_BYTE, sizeof o);
        attnref_diag diag;
        int rc = attnref_sdpa(&tq, &tk, &tv, x->with_mask ? &tm : NULL, &p, &to, &diag);
        cr_expect_eq(rc, ATTNREF_EINVAL, "%s: rc %s (%s)", x->what, attnref_status_name(rc),
                     diag.msg);
        cr_expect(strstr(diag.msg, x->diag_has) != NULL, "%s: diag \"%s\" lacks \"%s\"", x->what,
                  diag.msg, x->diag_has);
        const uint8_t *bytes = (const uint8_t *)o;
        for (size_t n = 0; n < sizeof o; n++)
            cr_expect_eq(bytes[n], SENTINEL_BYTE, "%s: out byte %zu written", x->what, n);
        double f[8];
        rc = attnref_sdpa_f64(&tq, &tk, &tv, x->with_mask ? &tm : NULL, &p, f, &diag);
        cr_expect_eq(rc, ATTNREF_EINVAL, "%s (f64): rc %s", x->what, attnref_status_name(rc));
    }
    /* The range ends are valid: lengths Lk and 0, left padding 0 and Lk. */
    const int64_t edge_len[2] = {4, 0}, edge_lp[2] = {0, 4};
    attnref_sdpa_params p;
    memset(&p, 0, sizeof p);
    p.batch = 2;
    p.lengths = edge_len;
    p.left_padding = edge_lp;
    run_ok(&tq, &tk, &tv, NULL, &p, &to, "entries 0 and Lk");
    /* batch is ignored when neither array is given */
    memset(&p, 0, sizeof p);
    p.batch = 7;
    run_ok(&tq, &tk, &tv, NULL, &p, &to, "batch without arrays");
}
