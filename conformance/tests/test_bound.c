/* test_bound.c — Criterion tests of the SDPA error bound (caselib bound.c, SPEC.md clause 13):
 * hand-computed values on cases small enough to follow, the rows that carry no tolerance, the
 * mask parameters, and the 3-digit rounding that must never go below the computed bound. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncase/bound.h"
#include "attncase/case.h"

static void tensor(acase_tensor *t, attnref_dtype dt, int64_t b, int64_t h, int64_t l, int64_t d,
                   const double *vals)
{
    char err[256];
    memset(t, 0, sizeof *t);
    t->present = 1;
    t->dtype = dt;
    t->ndim = 4;
    const int64_t shape[4] = {b, h, l, d};
    memcpy(t->shape, shape, sizeof shape);
    cr_assert_eq(acase_tensor_alloc(t, err, sizeof err), 0, "%s", err);
    for (int64_t n = 0; n < t->numel; n++)
        attnref_store(t->data, dt, n, vals[n]);
}

/* An sdpa case q (1,1,lq,1), k (1,1,lk,1), v (1,1,lk,dv) with the given expected output. */
static acase *small_case(attnref_dtype dt, int64_t lq, int64_t lk, int64_t dv, const double *q,
                         const double *k, const double *v, const double *out)
{
    char err[256];
    acase *c = acase_new();
    cr_assert_not_null(c);
    strcpy(c->id, "sdpa.test.bound");
    c->op = ACASE_OP_SDPA;
    c->batch = 1;
    tensor(&c->q, dt, 1, 1, lq, 1, q);
    tensor(&c->k, dt, 1, 1, lk, 1, k);
    tensor(&c->v, dt, 1, 1, lk, dv, v);
    acase_expected *e = &c->expected;
    e->dtype = dt;
    e->ndim = 4;
    const int64_t shape[4] = {1, 1, lq, dv};
    memcpy(e->shape, shape, sizeof shape);
    cr_assert_eq(acase_expected_alloc(e, err, sizeof err), 0, "%s", err);
    memcpy(e->values, out, (size_t)(lq * dv) * sizeof *out);
    return c;
}

static double gam(double n)
{
    return n * ldexp(1.0, -24) / (1 - n * ldexp(1.0, -24));
}

/* One kept key: the weight is 1 and the output is v, so the softmax term vanishes and what is
 * left is P rounding, accumulation and normalisation: SAFETY * (u + g3 + g2 + 2w) * |v|. */
Test(bound, single_key_by_hand)
{
    const double q[1] = {0.5}, k[1] = {1.0}, v[2] = {1.0, -0.25}, out[2] = {1.0, -0.25};
    acase *c = small_case(ATTNREF_F16, 1, 1, 2, q, k, v, out);
    double ulps = -1, row[1], rest[2];
    char err[256];
    cr_assert_eq(acase_sdpa_bound_elems(c, rest, err, sizeof err), 0, "%s", err);
    const double w = ldexp(1.0, -24), want = 2.0 * (ldexp(1.0, -11) + gam(3) + gam(2) + 2 * w);
    cr_assert_float_eq(rest[0], want, 1e-18, "element 0: %.17g, want %.17g", rest[0], want);
    cr_assert_float_eq(rest[1], 0.25 * want, 1e-18);
    cr_assert_eq(acase_sdpa_bound(c, &ulps, row, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ulps, 0.5);
    cr_assert_eq(row[0], 9.78e-4, "9.7738e-4 rounded up to 3 digits, got %.17g", row[0]);
    acase_free(c);
}

/* bf16 has 8 bits, f16 11: the same data gets a wider bound. */
Test(bound, coarser_dtype_wider)
{
    const double q[2] = {0.5, -1.0}, k[3] = {1.0, 0.5, -0.75}, v[3] = {0.5, -1.0, 0.25};
    const double out[2] = {0.0, 0.0}; /* values only matter for finiteness and binades */
    double ulps, r16[2], rbf[2];
    char err[256];
    acase *a = small_case(ATTNREF_F16, 2, 3, 1, q, k, v, out);
    acase *b = small_case(ATTNREF_BF16, 2, 3, 1, q, k, v, out);
    cr_assert_eq(acase_sdpa_bound(a, &ulps, r16, err, sizeof err), 0, "%s", err);
    cr_assert_eq(acase_sdpa_bound(b, &ulps, rbf, err, sizeof err), 0, "%s", err);
    for (int r = 0; r < 2; r++)
        cr_assert(rbf[r] > 4 * r16[r], "row %d: bf16 %g vs f16 %g", r, rbf[r], r16[r]);
    acase_free(a);
    acase_free(b);
}

/* Causal (bottom-right, Lq = Lk = 2): row 0 keeps key 0 only, so its bound is the one-key
 * formula on v[0]; row 1 mixes two values and gains the softmax term. */
Test(bound, causal_keeps_one_key)
{
    const double q[2] = {1.0, 1.0}, k[2] = {1.0, -1.0}, v[2] = {1.0, -1.0};
    const double out[2] = {1.0, 0.76159415595576489}; /* tanh(1): weights e, 1/e */
    acase *c = small_case(ATTNREF_F32, 2, 2, 1, q, k, v, out);
    c->causal = 1;
    double rest[2];
    char err[256];
    cr_assert_eq(acase_sdpa_bound_elems(c, rest, err, sizeof err), 0, "%s", err);
    const double w = ldexp(1.0, -24);
    cr_assert_float_eq(rest[0], 2.0 * (w + gam(3) + gam(2) + 2 * w), 1e-20);
    cr_assert(rest[1] > 1.5 * rest[0], "two keys: %g vs %g", rest[1], rest[0]);
    /* lengths = [1]: row 1 keeps key 0 only too (the parameters compose). */
    int64_t len[1] = {1};
    c->lengths = len;
    cr_assert_eq(acase_sdpa_bound_elems(c, rest, err, sizeof err), 0, "%s", err);
    cr_assert_float_eq(rest[1], 2.0 * (w + gam(3) + gam(2) + 2 * w), 1e-20);
    c->lengths = NULL; /* not owned */
    acase_free(c);
}

/* EXACT and FINITE rows carry no tolerance (clause 13, row modes). */
Test(bound, exact_and_finite_rows_are_zero)
{
    const double q[3] = {1, 2, 3}, k[2] = {1, -1}, v[2] = {0.5, 1.5}, out[3] = {1, 1, 1};
    acase *c = small_case(ATTNREF_F16, 3, 2, 1, q, k, v, out);
    char err[256];
    cr_assert_eq(acase_expected_alloc_rows(&c->expected, err, sizeof err), 0, "%s", err);
    c->expected.row_check[0] = ACASE_CHECK_EXACT;
    c->expected.row_check[2] = ACASE_CHECK_FINITE;
    double ulps, row[3];
    cr_assert_eq(acase_sdpa_bound(c, &ulps, row, err, sizeof err), 0, "%s", err);
    cr_assert_eq(row[0], 0.0);
    cr_assert(row[1] > 0.0);
    cr_assert_eq(row[2], 0.0);
    acase_free(c);
}

/* An element whose allowed interval reaches the next power of two gets the difference of the
 * half ulps in its row term: 1.999 in bf16 (ulp 2^-7 below 2, 2^-6 above). */
Test(bound, binade_crossing_widens)
{
    const double q[1] = {0}, k[1] = {0}, v[1] = {1.9921875}, out[1] = {1.9921875};
    acase *c = small_case(ATTNREF_BF16, 1, 1, 1, q, k, v, out);
    double ulps, row[1], rest[1];
    char err[256];
    cr_assert_eq(acase_sdpa_bound_elems(c, rest, err, sizeof err), 0, "%s", err);
    cr_assert_eq(acase_sdpa_bound(c, &ulps, row, err, sizeof err), 0, "%s", err);
    const double extra = 0.5 * (ldexp(1.0, -6) - ldexp(1.0, -7));
    cr_assert(row[0] >= rest[0] + extra, "row %g, rest %g + extra %g", row[0], rest[0], extra);
    cr_assert(row[0] < (rest[0] + extra) * 1.01);
    acase_free(c);
}

Test(bound, round_up_3_never_below)
{
    cr_assert_eq(acase_round_up_3(1.2345e-5), 1.24e-5);
    cr_assert_eq(acase_round_up_3(1.23e-5), 1.23e-5);
    cr_assert_eq(acase_round_up_3(9.991e-3), 1.0e-2);
    cr_assert_eq(acase_round_up_3(0.0), 0.0);
    for (double x = 1e-9; x < 1e3; x *= 1.0137)
        cr_assert(acase_round_up_3(x) >= x && acase_round_up_3(x) <= x * 1.01, "%.17g", x);
}

Test(bound, rejects_a_case_without_output)
{
    acase *c = acase_new();
    strcpy(c->id, "mask.test.x");
    c->op = ACASE_OP_MASK;
    double ulps, row[1];
    char err[256];
    cr_assert_eq(acase_sdpa_bound(c, &ulps, row, err, sizeof err), -1);
    cr_assert(strstr(err, "sdpa case with an expected output") != NULL, "%s", err);
    acase_free(c);
}

/* gamma_k = k w / (1 - k w) only holds for k w < 1: a row of n kept keys needs 2n + 1 < 2^24
 * (2n + 2 with a sink), and past that acase_sdpa_bound refuses the case with the row, where the
 * formula would give a negative or infinite bound and so a wrong verdict (a correct f32 kernel
 * was INCORRECT at Lk 2^23 in bench).  D 1, K and V 0: the output is 0. */
Test(bound, refuses_rows_past_the_model)
{
    const int64_t big = (int64_t)1 << 23;
    double *z = calloc((size_t)big, sizeof *z);
    cr_assert_not_null(z);
    const double q[1] = {1.0}, out[1] = {0.0};
    double ulps, row[1];
    char err[512];
    acase *c = small_case(ATTNREF_F32, 1, big - 1, 1, q, z, z, out);
    cr_assert_eq(acase_sdpa_bound(c, &ulps, row, err, sizeof err), 0, "2^23 - 1 keys: %s", err);
    cr_assert(isfinite(row[0]) && row[0] >= 0.0, "%g", row[0]);
    /* One sink more: 2n + 2 = 2^24. */
    c->sinks = calloc(1, sizeof *c->sinks);
    c->nsinks = 1;
    cr_assert_eq(acase_sdpa_bound(c, &ulps, row, err, sizeof err), -1);
    cr_assert(strstr(err, "row [0,0,0] keeps 8388607 keys and a sink") != NULL, "%s", err);
    acase_free(c);
    c = small_case(ATTNREF_F32, 1, big, 1, q, z, z, out);
    cr_assert_eq(acase_sdpa_bound(c, &ulps, row, err, sizeof err), -1);
    cr_assert(strstr(err, "keeps 8388608 keys: the error bound (SPEC clause 13) holds for "
                          "2n + 1 < 2^24") != NULL,
              "%s", err);
    acase_free(c);
    free(z);
}
