/* test_compare.c — the harness comparator (harness/run/compare.c): a conformance suite is only as
 * good as the check that says PASS, so its edge cases are pinned here.  The tolerance is the one
 * of SPEC.md clause 13 (case format v2): a CLOSE element e of row r passes iff
 * |got - e| <= ulps * ulp(e, dtype) + row_atol[r]. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attnref/dtype.h"
#include "run/compare.h"

/* ---- helpers ---- */

static hc_tol tol_of(double ulps, attnref_dtype dt, const double *row_atol)
{
    hc_tol t = {.ulps = ulps, .ulp_dtype = dt, .row_atol = row_atol, .exact = 0};
    return t;
}

static const hc_tol exact_tol = {.ulps = 0, .ulp_dtype = ATTNREF_F32, .row_atol = NULL, .exact = 1};

/* One element stored as a bit pattern of dt (f32: 32 bits, f16/bf16: 16 bits). */
typedef union {
    uint32_t u32;
    uint16_t u16;
} elem_buf;

static elem_buf elem_of(attnref_dtype dt, uint32_t bits)
{
    elem_buf b;
    memset(&b, 0, sizeof b);
    if (dt == ATTNREF_F32)
        b.u32 = bits;
    else
        b.u16 = (uint16_t)bits;
    return b;
}

/* ---- the element rule ---- */

Test(compare_element, nan_vs_finite_fails_both_directions)
{
    cr_assert_eq(hc_element_ok(NAN, 1.0, 1e9, 0), 0, "got NaN, expected 1 must fail");
    cr_assert_eq(hc_element_ok(1.0, NAN, 1e9, 0), 0, "got 1, expected NaN must fail");
    cr_assert_eq(hc_element_ok(NAN, 1.0, INFINITY, 0), 0, "even with an unbounded allowance");
    cr_assert_eq(hc_element_ok(NAN, 0.0, 0, 1), 0, "exact mode too");
}

Test(compare_element, nan_matches_nan)
{
    cr_assert_eq(hc_element_ok(NAN, NAN, 0, 0), 1);
    cr_assert_eq(hc_element_ok(-NAN, NAN, 0, 0), 1, "any NaN matches any NaN");
    cr_assert_eq(hc_element_ok(NAN, NAN, 0, 1), 1, "in exact mode too");
}

Test(compare_element, infinities_need_the_same_sign)
{
    static const struct {
        double got, exp, allowed;
        int pass;
        const char *what;
    } t[] = {
        {INFINITY, INFINITY, 0, 1, "+inf vs +inf"},
        {-INFINITY, -INFINITY, 0, 1, "-inf vs -inf"},
        {INFINITY, -INFINITY, 1e300, 0, "+inf vs -inf"},
        {-INFINITY, INFINITY, 1e300, 0, "-inf vs +inf"},
        {INFINITY, 1e308, 1e300, 0, "inf vs finite"},
        {65504.0, INFINITY, 1e300, 0, "finite vs inf"},
        {INFINITY, 1.0, INFINITY, 0, "inf vs finite with an infinite allowance"},
        {1.0, -INFINITY, INFINITY, 0, "finite vs -inf with an infinite allowance"},
        {INFINITY, NAN, 0, 0, "inf vs NaN"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        cr_assert_eq(hc_element_ok(t[i].got, t[i].exp, t[i].allowed, 0), t[i].pass, "%s",
                     t[i].what);
}

Test(compare_element, allowed_boundary_is_inclusive)
{
    /* allowed = 0.75; all values exact in binary64. */
    cr_assert_eq(hc_element_ok(1.75, 1.0, 0.75, 0), 1, "|err| == allowed passes");
    cr_assert_eq(hc_element_ok(0.25, 1.0, 0.75, 0), 1, "on both sides");
    cr_assert_eq(hc_element_ok(nextafter(1.75, 2.0), 1.0, 0.75, 0), 0, "just over fails");
    cr_assert_eq(hc_element_ok(0.25 - 1e-9, 1.0, 0.75, 0), 0, "just under fails");
    cr_assert_eq(hc_element_ok(1.0, 1.0, 0.0, 0), 1, "allowed 0: equal passes");
    cr_assert_eq(hc_element_ok(0x1p-1074, 0.0, 0.0, 0), 0, "allowed 0: any difference fails");
    cr_assert_eq(hc_element_ok(0.0, -0.0, 0.0, 0), 1, "signed zeros are equal");
}

Test(compare_element, exact_mode_ignores_allowed)
{
    cr_assert_eq(hc_element_ok(1.0, 1.0, 0, 1), 1);
    cr_assert_eq(hc_element_ok(0.0, 1.0, 10.0, 1), 0);
    cr_assert_eq(hc_element_ok(-0.0, 0.0, 0, 1), 1, "signed zeros are equal in exact mode");
}

/* ---- the allowed error: ulps * ulp(exp, dtype) + row_atol[row] ---- */

Test(compare_allowed, ulp_term_per_dtype)
{
    static const struct {
        attnref_dtype dt;
        double ulps, exp, want;
        const char *what;
    } t[] = {
        {ATTNREF_F16, 1, 1.0, 0x1p-10, "f16 ulp at 1"},
        {ATTNREF_F16, 2, 1.0, 0x1p-9, "2 f16 ulps at 1"},
        {ATTNREF_F16, 1, -1.0, 0x1p-10, "the sign does not matter"},
        {ATTNREF_F16, 1, 0.999, 0x1p-11, "just below 1: the lower binade"},
        {ATTNREF_F16, 1, 0.0, 0x1p-24, "zero: the smallest f16 subnormal"},
        {ATTNREF_F16, 1, 0x1p-20, 0x1p-24, "a subnormal"},
        {ATTNREF_F16, 1, 0x1p-14, 0x1p-24, "the smallest normal"},
        {ATTNREF_F16, 0.5, 65504.0, 16.0, "half an ulp at the f16 maximum"},
        {ATTNREF_BF16, 1, 1.0, 0x1p-7, "bf16 ulp at 1"},
        {ATTNREF_BF16, 1, 0.999, 0x1p-8, "bf16 just below 1"},
        {ATTNREF_BF16, 1, 0.0, 0x1p-133, "bf16 zero"},
        {ATTNREF_F32, 1, 1.0, 0x1p-23, "f32 ulp at 1"},
        {ATTNREF_F32, 4, 0x1p-126, 0x1p-147, "4 f32 ulps at FLT_MIN"},
        {ATTNREF_F32, 3, 0.0, 3 * 0x1p-149, "3 f32 ulps at zero"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        hc_tol tol = tol_of(t[i].ulps, t[i].dt, NULL);
        cr_assert_eq(hc_allowed(&tol, t[i].exp, 0), t[i].want, "%s: %a", t[i].what,
                     hc_allowed(&tol, t[i].exp, 0));
    }
}

Test(compare_allowed, row_atol_is_added_per_row)
{
    const double ra[3] = {0.5, 0.0, 0.25};
    hc_tol tol = tol_of(2, ATTNREF_F16, ra);
    cr_assert_eq(hc_allowed(&tol, 1.0, 0), 0x1p-9 + 0.5);
    cr_assert_eq(hc_allowed(&tol, 1.0, 1), 0x1p-9);
    cr_assert_eq(hc_allowed(&tol, 1.0, 2), 0x1p-9 + 0.25);
    cr_assert_eq(hc_allowed(&tol, 1.0, -1), 0x1p-9, "no row: no row term");
    tol.row_atol = NULL;
    cr_assert_eq(hc_allowed(&tol, 1.0, 2), 0x1p-9, "NULL row_atol counts 0");
    /* ulps 0: only the row term, even where the ulp is infinite (no 0 * inf = NaN). */
    hc_tol only_rows = tol_of(0, ATTNREF_F32, ra);
    cr_assert_eq(hc_allowed(&only_rows, 3.0, 2), 0.25);
    cr_assert_eq(hc_allowed(&only_rows, INFINITY, 0), 0.5);
}

Test(compare_allowed, exact_and_null_allow_nothing)
{
    const double ra[1] = {1.0};
    hc_tol tol = tol_of(8, ATTNREF_F32, ra);
    tol.exact = 1;
    cr_assert_eq(hc_allowed(&tol, 1.0, 0), 0.0);
    cr_assert_eq(hc_allowed(NULL, 1.0, 0), 0.0);
}

/* The ulp term at binade edges, subnormals and zero, through a whole (one-element) comparison:
 * the ulp is the one of the EXPECTED value (asymmetric, like numpy.isclose), so 2 steps below a
 * power of two can pass where 2 steps above cannot. */
Test(compare_tensor, ulp_term_at_binade_edges)
{
    static const struct {
        attnref_dtype dt;
        double exp, ulps;
        uint32_t got; /* bit pattern of dt */
        int pass;
        const char *what;
    } t[] = {
        /* f16: p = 11, ulp(1) = 2^-10, ulp just below 1 = 2^-11, smallest subnormal 2^-24. */
        {ATTNREF_F16, 1.0, 1, 0x3c01, 1, "f16 1 + 1 ulp"},
        {ATTNREF_F16, 1.0, 1, 0x3c02, 0, "f16 1 + 2 ulps"},
        {ATTNREF_F16, 1.0, 2, 0x3c02, 1, "f16 1 + 2 ulps with ulps 2"},
        {ATTNREF_F16, 1.0, 0.5, 0x3c01, 0, "f16 1 + 1 ulp with ulps 0.5"},
        {ATTNREF_F16, 1.0, 1, 0x3bfe, 1, "f16 2 steps below 1 = one ulp of 1"},
        {ATTNREF_F16, 1.0, 1, 0x3bfd, 0, "f16 3 steps below 1"},
        {ATTNREF_F16, 0x1.ffcp-1, 1, 0x3c00, 1, "f16 top of [0.5,1) to 1: 2^-11"},
        {ATTNREF_F16, 0x1.ffcp-1, 1, 0x3c01, 0, "f16 top of [0.5,1) to 1 + 2^-10"},
        {ATTNREF_F16, -1.0, 1, 0xbc01, 1, "f16 -1 - 1 ulp"},
        {ATTNREF_F16, 0.0, 1, 0x0001, 1, "f16 0 vs the smallest subnormal"},
        {ATTNREF_F16, 0.0, 1, 0x8001, 1, "f16 0 vs minus the smallest subnormal"},
        {ATTNREF_F16, 0.0, 1, 0x0002, 0, "f16 0 vs 2 subnormal steps"},
        {ATTNREF_F16, 0x1p-14, 1, 0x0401, 1, "f16 smallest normal + 1 ulp"},
        {ATTNREF_F16, 0x1p-14, 1, 0x0402, 0, "f16 smallest normal + 2 ulps"},
        {ATTNREF_F16, 0x1.ff8p-15, 1, 0x0400, 1, "f16 largest subnormal to smallest normal"},
        {ATTNREF_F16, 65504.0, 1, 0x7bfe, 1, "f16 max - 1 ulp (32)"},
        {ATTNREF_F16, 65504.0, 0.5, 0x7bfe, 0, "f16 max - 1 ulp with ulps 0.5"},
        /* bf16: p = 8, ulp(1) = 2^-7, smallest subnormal 2^-133. */
        {ATTNREF_BF16, 1.0, 1, 0x3f81, 1, "bf16 1 + 1 ulp"},
        {ATTNREF_BF16, 1.0, 1, 0x3f82, 0, "bf16 1 + 2 ulps"},
        {ATTNREF_BF16, 0x1.fep-1, 1, 0x3f80, 1, "bf16 top of [0.5,1) to 1"},
        {ATTNREF_BF16, 0x1.fep-1, 1, 0x3f81, 0, "bf16 top of [0.5,1) to 1 + 2^-7"},
        {ATTNREF_BF16, 0.0, 1, 0x0001, 1, "bf16 0 vs the smallest subnormal"},
        {ATTNREF_BF16, 0.0, 1, 0x0002, 0, "bf16 0 vs 2 subnormal steps"},
        {ATTNREF_BF16, 0x1p-126, 1, 0x0081, 1, "bf16 smallest normal + 1 ulp"},
        /* f32: p = 24. */
        {ATTNREF_F32, 1.0, 1, 0x3f800001, 1, "f32 1 + 1 ulp"},
        {ATTNREF_F32, 1.0, 1, 0x3f800002, 0, "f32 1 + 2 ulps"},
        {ATTNREF_F32, 0x1.fffffep-1, 1, 0x3f800000, 1, "f32 top of [0.5,1) to 1"},
        {ATTNREF_F32, 0x1.fffffep-1, 1, 0x3f800001, 0, "f32 top of [0.5,1) to 1 + 2^-23"},
        {ATTNREF_F32, 0.0, 1, 0x00000001, 1, "f32 0 vs the smallest subnormal"},
        {ATTNREF_F32, 0.0, 1, 0x00000002, 0, "f32 0 vs 2 subnormal steps"},
        {ATTNREF_F32, 0x1p-126, 1, 0x00800001, 1, "f32 FLT_MIN + 1 ulp"},
        {ATTNREF_F32, (double)FLT_MAX, 1, 0x7f7ffffe, 1, "f32 FLT_MAX - 1 ulp"},
    };
    int64_t shape[1] = {1}, strides[1] = {1};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        elem_buf got = elem_of(t[i].dt, t[i].got);
        double exp[1] = {t[i].exp};
        hc_tol tol = tol_of(t[i].ulps, t[i].dt, NULL);
        hc_stats st;
        cr_assert_eq(hc_compare(&got, t[i].dt, 1, shape, strides, exp, &tol, &st), t[i].pass,
                     "%s (got %a)", t[i].what, st.bad_got);
        cr_assert_eq(st.nbad, !t[i].pass, "%s", t[i].what);
        if (!t[i].pass)
            cr_assert_eq(st.bad_allowed, t[i].ulps * attnref_dtype_ulp(t[i].exp, t[i].dt),
                         "%s: bad_allowed", t[i].what);
    }
}

Test(compare_tensor, ulps_counted_in_ulp_dtype_not_the_buffer_dtype)
{
    /* An f32 buffer judged in f16 ulps (an output of another dtype is measured in the expected
     * dtype's units): 1 + 2^-10 is one f16 ulp but 8192 f32 ulps. */
    float got[1] = {1.0f + 0x1p-10f};
    double exp[1] = {1.0};
    int64_t shape[1] = {1}, strides[1] = {1};
    hc_tol f16 = tol_of(1, ATTNREF_F16, NULL), f32 = tol_of(1, ATTNREF_F32, NULL);
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 1, shape, strides, exp, &f16, &st), 1);
    cr_assert_eq(st.max_ratio, 1.0);
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 1, shape, strides, exp, &f32, &st), 0);
    cr_assert_eq(st.max_ratio, 8192.0);
    cr_assert_eq(st.bad_allowed, 0x1p-23);
}

/* ---- whole tensors ---- */

Test(compare_tensor, all_equal_passes_with_zero_errors)
{
    float got[6] = {1, 2, 3, 4, 5, 6};
    double exp[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {2, 3}, strides[2] = {3, 1};
    hc_tol tol = tol_of(2, ATTNREF_F32, NULL);
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 2, shape, strides, exp, &tol, &st), 1);
    cr_assert_eq(st.nbad, 0);
    cr_assert_eq(st.numel, 6);
    cr_assert_eq(st.first_bad, -1);
    cr_assert_eq(st.max_abs_err, 0.0);
    cr_assert_eq(st.max_rel_err, 0.0);
    cr_assert_eq(st.max_ratio, 0.0);
}

Test(compare_tensor, first_bad_index_and_values)
{
    /* shape (2,3,4): bad elements at flat 13 = (1,0,1) and 20 = (1,2,0); 13 is reported. */
    float got[24];
    double exp[24];
    for (int i = 0; i < 24; i++)
        got[i] = (float)(exp[i] = i * 0.5);
    got[13] = 100.0f;
    got[20] = -1.0f;
    int64_t shape[3] = {2, 3, 4}, strides[3] = {12, 4, 1};
    double ra[6] = {1e-6, 1e-6, 1e-6, 0.5, 1e-6, 1.0}; /* flat 20 is in row 5: ratio 11 */
    hc_tol tol = tol_of(0, ATTNREF_F32, ra);
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 3, shape, strides, exp, &tol, &st), 0);
    cr_assert_eq(st.nbad, 2);
    cr_assert_eq(st.first_bad, 13);
    cr_assert_eq(st.ndim, 3);
    cr_assert_eq(st.bad_index[0], 1);
    cr_assert_eq(st.bad_index[1], 0);
    cr_assert_eq(st.bad_index[2], 1);
    cr_assert_eq(st.bad_got, 100.0);
    cr_assert_eq(st.bad_expected, 6.5);
    cr_assert_eq(st.bad_allowed, 0.5, "flat 13 is in row 13 / 4 = 3");
    cr_assert_eq(st.max_abs_err, 93.5);
    cr_assert_float_eq(st.max_rel_err, 93.5 / 6.5, 1e-12);
    cr_assert_eq(st.max_ratio, 93.5 / 0.5, "row 3's error over row 3's allowance");
}

Test(compare_tensor, rel_err_skips_zero_expected)
{
    float got[2] = {0.5f, 1.5f};
    double exp[2] = {0.0, 1.0};
    int64_t shape[1] = {2}, strides[1] = {1};
    hc_tol tol = tol_of(0, ATTNREF_F32, NULL);
    hc_stats st;
    hc_compare(got, ATTNREF_F32, 1, shape, strides, exp, &tol, &st);
    cr_assert_eq(st.max_abs_err, 0.5);
    cr_assert_eq(st.max_rel_err, 0.5, "0.5/1 only; 0.5/0 is not a relative error");
}

Test(compare_tensor, nan_in_output_fails_and_is_reported)
{
    float got[4] = {0.0f, NAN, 1.0f, 1.0f};
    double exp[4] = {0.0, 0.25, 1.0, 1.0};
    int64_t shape[2] = {2, 2}, strides[2] = {2, 1};
    double ra[2] = {1.0, 1.0};
    hc_tol tol = tol_of(1e6, ATTNREF_F32, ra);
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 2, shape, strides, exp, &tol, &st), 0);
    cr_assert_eq(st.first_bad, 1);
    cr_assert_eq(st.bad_index[0], 0);
    cr_assert_eq(st.bad_index[1], 1);
    cr_assert(isnan(st.bad_got));
    cr_assert_eq(st.bad_expected, 0.25);
    /* A NaN against a number has no error size: counted, never a NaN maximum. */
    cr_assert_eq(st.nans.got, 1);
    cr_assert_eq(st.nans.got_index[0], 0);
    cr_assert_eq(st.nans.got_index[1], 1);
    cr_assert_eq(st.nans.missed, 0);
    cr_assert_eq(st.nans_close.got, 1);
    cr_assert_eq(st.max_abs_err, 0.0, "the other elements are exact");
    cr_assert_eq(st.max_rel_err, 0.0);
    cr_assert_eq(st.max_ratio, 0.0);
}

/* Either way round, in close and exact rows: NaN never enters a maximum, whose value is the
 * other elements' (it must not read as NaN, nor hide a NaN as within tolerance). */
Test(compare_tensor, nan_mismatches_are_counted_not_maximised)
{
    float got[8] = {1.25f, NAN, 3, 4, 5, 6, NAN, 0.5f};
    double exp[8] = {1, 2, 3, NAN, 5, NAN, 0, 0};
    uint8_t rows[4] = {HC_ROW_CLOSE, HC_ROW_CLOSE, HC_ROW_CLOSE, HC_ROW_EXACT};
    int64_t shape[4] = {1, 1, 4, 2}, strides[4] = {8, 8, 2, 1};
    const double ra[4] = {0.5, 0.5, 0.5, 0.5};
    hc_tol tol = tol_of(0, ATTNREF_F32, ra);
    hc_stats st;
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, &tol, rows, 2, &st), 0);
    cr_assert_eq(st.nbad, 5);
    cr_assert_eq(st.nans.got, 2, "elements 1 (close row) and 6 (exact row)");
    cr_assert_eq(st.nans.got_index[2], 0);
    cr_assert_eq(st.nans.got_index[3], 1);
    cr_assert_eq(st.nans.missed, 2, "elements 3 and 5");
    cr_assert_eq(st.nans.missed_index[2], 1);
    cr_assert_eq(st.nans.missed_index[3], 1);
    cr_assert_eq(st.nans_close.got, 1);
    cr_assert_eq(st.nans_close.missed, 2);
    cr_assert_eq(st.nans.others, 4, "the maxima are over elements 0, 2, 4 and 7");
    cr_assert_eq(st.nans_close.others, 3);
    cr_assert_eq(st.max_abs_err, 0.5, "the exact row's 0.5, the close row's 0.25");
    cr_assert_eq(st.max_rel_err, 0.25);
    cr_assert_eq(st.max_ratio, 0.5, "0.25 / 0.5 in row 0: the NaNs left out");
}

Test(compare_tensor, wrong_infinity_makes_errors_unbounded)
{
    float got[3] = {-INFINITY, 1.0f, INFINITY};
    double exp[3] = {INFINITY, 1.5, INFINITY};
    int64_t shape[1] = {3}, strides[1] = {1};
    hc_tol tol = tol_of(0, ATTNREF_F32, NULL);
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 1, shape, strides, exp, &tol, &st), 0);
    cr_assert_eq(st.nbad, 2);
    cr_assert_eq(st.first_bad, 0);
    cr_assert(isinf(st.max_abs_err) && st.max_abs_err > 0);
    cr_assert(isinf(st.max_rel_err) && st.max_rel_err > 0);
    cr_assert(isinf(st.max_ratio) && st.max_ratio > 0);
}

Test(compare_tensor, matching_non_finite_values_add_no_error)
{
    float got[3] = {NAN, -INFINITY, 2.0f};
    double exp[3] = {NAN, -INFINITY, 2.0};
    int64_t shape[1] = {3}, strides[1] = {1};
    hc_tol tol = tol_of(1, ATTNREF_F32, NULL);
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 1, shape, strides, exp, &tol, &st), 1);
    cr_assert_eq(st.max_abs_err, 0.0);
    cr_assert_eq(st.max_rel_err, 0.0);
    cr_assert_eq(st.max_ratio, 0.0);
}

Test(compare_tensor, max_ratio_is_error_over_allowed)
{
    /* 4 rows of 2 with allowances 0 (row 0), 0.5 (row 1), 0.25 (row 2), 0 (row 3). */
    static const double ra[4] = {0.0, 0.5, 0.25, 0.0};
    int64_t shape[2] = {4, 2}, strides[2] = {2, 1};
    hc_tol tol = tol_of(0, ATTNREF_F32, ra);
    hc_stats st;
    static const struct {
        float got[8];
        double ratio;
        int pass;
        const char *what;
    } t[] = {
        {{1, 2, 3, 4, 5, 6, 7, 8}, 0.0, 1, "0 / 0 counts 0: exact equality under no allowance"},
        {{1, 2, 3.25f, 4, 5, 6, 7, 8}, 0.5, 1, "0.25 / 0.5"},
        {{1, 2, 3, 4.5f, 5.125f, 6, 7, 8}, 1.0, 1, "0.5 / 0.5 and 0.125 / 0.25: on the boundary"},
        {{1, 2, 3, 4, 5, 6.75f, 7, 8}, 3.0, 0, "0.75 / 0.25"},
        {{1, 2, 4, 4, 5, 6, 7, 8}, 2.0, 0, "1 / 0.5"},
        {{1, 2, 3, 4, 5, 6, 7, 8.5f}, INFINITY, 0, "x / 0 counts +inf"},
        {{1.0f + 0x1p-23f, 2, 3, 4, 5, 6, 7, 8}, INFINITY, 0, "one f32 ulp over no allowance"},
    };
    const double exp[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        cr_assert_eq(hc_compare(t[i].got, ATTNREF_F32, 2, shape, strides, exp, &tol, &st),
                     t[i].pass, "%s", t[i].what);
        cr_assert_eq(st.max_ratio, t[i].ratio, "%s: %g", t[i].what, st.max_ratio);
    }
    /* The maximum over elements; a NaN is left out of it (counted in st.nans). */
    float got[8] = {1, 2, 3.5f, 4, 5.25f, 6, NAN, 8};
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 2, shape, strides, exp, &tol, &st), 0);
    cr_assert_eq(st.max_ratio, 1.0);
    cr_assert_eq(st.nans.got, 1);
    got[6] = 7;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 2, shape, strides, exp, &tol, &st), 1);
    cr_assert_eq(st.max_ratio, 1.0);
    /* With `exact` (bool outputs) there is no allowance to measure against: 0. */
    got[0] = 9;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 2, shape, strides, exp, &exact_tol, &st), 0);
    cr_assert_eq(st.max_ratio, 0.0);
    cr_assert_eq(st.max_abs_err, 8.0, "the absolute error is still measured");
}

Test(compare_tensor, strided_got_is_read_through_its_strides)
{
    /* Logical (B,H,L,D) = (1,2,3,2) stored as a (B,L,H,D) buffer: strides {12, 2, 4, 1}. */
    enum { B = 1, H = 2, L = 3, D = 2 };
    float buf[B * L * H * D];
    double exp[B * H * L * D];
    for (int h = 0; h < H; h++)
        for (int l = 0; l < L; l++)
            for (int d = 0; d < D; d++) {
                double v = 100 * h + 10 * l + d;
                exp[(h * L + l) * D + d] = v;
                buf[(l * H + h) * D + d] = (float)v;
            }
    int64_t shape[4] = {B, H, L, D}, strides[4] = {L * H * D, D, H * D, 1};
    hc_stats st;
    cr_assert_eq(hc_compare(buf, ATTNREF_F32, 4, shape, strides, exp, &exact_tol, &st), 1,
                 "a permuted layout must compare equal");

    buf[(2 * H + 1) * D + 0] = -5.0f; /* logical (0,1,2,0) = flat 10 */
    cr_assert_eq(hc_compare(buf, ATTNREF_F32, 4, shape, strides, exp, &exact_tol, &st), 0);
    cr_assert_eq(st.first_bad, 10);
    cr_assert_eq(st.bad_index[1], 1);
    cr_assert_eq(st.bad_index[2], 2);
    cr_assert_eq(st.bad_index[3], 0);
    cr_assert_eq(st.bad_got, -5.0);
    cr_assert_eq(st.bad_expected, 120.0);

    /* A contiguous reading of the same buffer would be wrong: prove the strides matter. */
    int64_t contig[4] = {H * L * D, L * D, D, 1};
    buf[(2 * H + 1) * D + 0] = 120.0f;
    cr_assert_eq(hc_compare(buf, ATTNREF_F32, 4, shape, contig, exp, &exact_tol, &st), 0);
}

Test(compare_tensor, row_atol_follows_the_logical_row_not_the_buffer)
{
    /* (B,H,L,D) = (1,2,3,2) in a (B,L,H,D) buffer: logical row r = h*L + l.  Only logical row
     * 3 = (h 1, l 0) has an allowance; in the buffer it is the row at l*H + h = 1, so a
     * comparator indexing row_atol by buffer position would refuse the error there. */
    enum { B = 1, H = 2, L = 3, D = 2 };
    float buf[B * L * H * D];
    double exp[B * H * L * D];
    for (int i = 0; i < 12; i++)
        exp[i] = i;
    for (int h = 0; h < H; h++)
        for (int l = 0; l < L; l++)
            for (int d = 0; d < D; d++)
                buf[(l * H + h) * D + d] = (float)exp[(h * L + l) * D + d];
    int64_t shape[4] = {B, H, L, D}, strides[4] = {L * H * D, D, H * D, 1};
    double ra[6] = {0, 0, 0, 1.0, 0, 0}; /* logical row 3 = (h 1, l 0) */
    hc_tol tol = tol_of(0, ATTNREF_F32, ra);
    hc_stats st;
    buf[(0 * H + 1) * D + 1] += 1.0f; /* logical (0,1,0,1): row 3, allowed 1 */
    cr_assert_eq(hc_compare(buf, ATTNREF_F32, 4, shape, strides, exp, &tol, &st), 1);
    cr_assert_eq(st.max_ratio, 1.0);
    buf[(1 * H + 0) * D + 1] += 0.5f; /* logical (0,0,1,1): row 1, allowed 0 (buffer row 2) */
    cr_assert_eq(hc_compare(buf, ATTNREF_F32, 4, shape, strides, exp, &tol, &st), 0);
    cr_assert_eq(st.first_bad, 3);
    cr_assert_eq(st.bad_allowed, 0.0);
}

Test(compare_tensor, f16_output_is_read_exactly)
{
    uint16_t got[3] = {0x3C00 /* 1 */, 0x3555 /* 0.333251953125 */, 0x7C00 /* +inf */};
    double exp[3] = {1.0, 1.0 / 3.0, INFINITY};
    int64_t shape[1] = {3}, strides[1] = {1};
    /* 1/3 - 0.333251953125 = 2^-12 / 3: a third of the f16 ulp at 1/3 (2^-12). */
    hc_tol half = tol_of(0.5, ATTNREF_F16, NULL), tenth = tol_of(0.1, ATTNREF_F16, NULL);
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_F16, 1, shape, strides, exp, &half, &st), 1,
                 "f16 rounding of 1/3 is within half an f16 ulp");
    cr_assert_eq(hc_compare(got, ATTNREF_F16, 1, shape, strides, exp, &tenth, &st), 0,
                 "but not within a tenth");
    cr_assert_eq(st.first_bad, 1);
    cr_assert_eq(st.bad_got, 0.333251953125);
    cr_assert_float_eq(st.max_ratio, (1.0 / 3.0 - 0.333251953125) / (0.1 * 0x1p-12), 1e-12);
}

Test(compare_tensor, bool_mask_is_exact)
{
    uint8_t got[4] = {1, 0, 7 /* any nonzero is true */, 0};
    double exp[4] = {1, 0, 1, 1};
    int64_t shape[4] = {1, 1, 2, 2}, strides[4] = {4, 4, 2, 1};
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_BOOL, 4, shape, strides, exp, &exact_tol, &st), 0);
    cr_assert_eq(st.nbad, 1);
    cr_assert_eq(st.first_bad, 3);
    cr_assert_eq(st.bad_index[2], 1);
    cr_assert_eq(st.bad_index[3], 1);
    cr_assert_eq(st.bad_got, 0.0);
    cr_assert_eq(st.bad_expected, 1.0);
    cr_assert_eq(st.bad_allowed, 0.0);
    /* A NULL tolerance is exact too. */
    hc_stats nt;
    cr_assert_eq(hc_compare(got, ATTNREF_BOOL, 4, shape, strides, exp, NULL, &nt), 0);
    cr_assert_eq(nt.first_bad, 3);
    char msg[256];
    hc_failure_message(&st, &exact_tol, msg, sizeof msg);
    cr_assert_str_eq(msg, "1 of 4 elements differ (first at [0,0,1,1]: got 0, expected 1)");
    hc_failure_message(&nt, NULL, msg, sizeof msg);
    cr_assert_str_eq(msg, "1 of 4 elements differ (first at [0,0,1,1]: got 0, expected 1)");
}

Test(compare_tensor, empty_tensor_passes_and_bad_rank_fails)
{
    float got[1] = {0};
    double exp[1] = {0};
    int64_t shape[4] = {2, 0, 3, 1}, strides[4] = {0, 3, 1, 1};
    hc_tol tol = tol_of(1, ATTNREF_F32, NULL);
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 4, shape, strides, exp, &tol, &st), 1);
    cr_assert_eq(st.numel, 0);
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 5, shape, strides, exp, &tol, &st), 0);
    cr_assert_eq(st.first_bad, -1);
    int64_t neg[1] = {-1};
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 1, neg, strides, exp, &tol, &st), 0);
}

/* ---- the failure message of a CLOSE row ---- */

Test(compare_message, close_row_message_text)
{
    /* 4 rows of 2, f16, ulps 2, row_atol {0, 0.25 - 2^-8, 0, 0}: row 1 (exp 3, ulp 2^-9) is
     * allowed exactly 0.25 and is off by 0.375 (ratio 1.5); row 3 (exp 7, ulp 2^-8) is allowed
     * 2^-7 and is off by 1 (ratio 128, the worst). */
    uint16_t got[8];
    double exp[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int i = 0; i < 8; i++)
        got[i] = attnref_f64_to_f16(exp[i]);
    got[2] = attnref_f64_to_f16(3.375);
    got[6] = attnref_f64_to_f16(8.0);
    int64_t shape[4] = {1, 2, 2, 2}, strides[4] = {8, 4, 2, 1};
    const double ra[4] = {0, 0.25 - 0x1p-8, 0, 0};
    hc_tol tol = tol_of(2, ATTNREF_F16, ra);
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_F16, 4, shape, strides, exp, &tol, &st), 0);
    cr_assert_eq(st.nbad, 2);
    cr_assert_eq(st.first_bad, 2);
    cr_assert_eq(st.bad_allowed, 0.25);
    cr_assert_eq(st.max_ratio, 128.0);
    char msg[512];
    hc_failure_message(&st, &tol, msg, sizeof msg);
    cr_assert_str_eq(msg, "2 of 8 elements out of tolerance (worst 128 times the allowed error; "
                          "first at [0,0,1,0]: got 3.375, expected 3, allowed 0.25)");
    got[6] = attnref_f64_to_f16(7.0);
    cr_assert_eq(hc_compare(got, ATTNREF_F16, 4, shape, strides, exp, &tol, &st), 0);
    cr_assert_eq(st.max_ratio, 1.5);
    hc_failure_message(&st, &tol, msg, sizeof msg);
    cr_assert_str_eq(msg, "1 of 8 elements out of tolerance (worst 1.5 times the allowed error; "
                          "first at [0,0,1,0]: got 3.375, expected 3, allowed 0.25)");
    /* The allowance is written to 3 significant digits. */
    const double ra3[4] = {0, 0.1, 0, 0};
    tol.row_atol = ra3;
    cr_assert_eq(hc_compare(got, ATTNREF_F16, 4, shape, strides, exp, &tol, &st), 0);
    hc_failure_message(&st, &tol, msg, sizeof msg);
    cr_assert(strstr(msg, "got 3.375, expected 3, allowed 0.104)") != NULL, "%s", msg);
}

Test(compare_message, close_row_message_non_finite)
{
    float got[2] = {NAN, 1.0f};
    double exp[2] = {0.25, 1.0};
    int64_t shape[1] = {2}, strides[1] = {1};
    hc_tol tol = tol_of(4, ATTNREF_F32, NULL);
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 1, shape, strides, exp, &tol, &st), 0);
    char msg[512];
    hc_failure_message(&st, &tol, msg, sizeof msg);
    cr_assert_str_eq(msg, "1 of 2 elements out of tolerance (1 NaN where a number was expected; "
                          "first at [0]: got nan, expected 0.25)");
    got[0] = -INFINITY;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 1, shape, strides, exp, &tol, &st), 0);
    hc_failure_message(&st, &tol, msg, sizeof msg);
    cr_assert_str_eq(msg, "1 of 2 elements out of tolerance (worst inf times the allowed error; "
                          "first at [0]: got -inf, expected 0.25, allowed 1.19e-07)");
}

/* NaN expected (a row that keeps a NaN key, sdpa.poison.causal_future_nan), a number produced:
 * said as such, not "allowed nan" and "worst nan times the allowed error". */
Test(compare_message, number_where_nan_was_expected)
{
    float got[4] = {0.5f, 1.0f, 0.25f, 2.0f};
    double exp[4] = {0.5, 1.0, NAN, NAN};
    int64_t shape[2] = {2, 2}, strides[2] = {2, 1};
    hc_tol tol = tol_of(4, ATTNREF_F32, NULL);
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 2, shape, strides, exp, &tol, &st), 0);
    char msg[512];
    hc_failure_message(&st, &tol, msg, sizeof msg);
    cr_assert_str_eq(msg, "2 of 4 elements out of tolerance (2 numbers where NaN was expected; "
                          "first at [1,0]: got 0.25, expected nan)");
    cr_assert(strstr(msg, "nan times") == NULL && strstr(msg, "allowed nan") == NULL);
    cr_assert_eq(st.max_ratio, 0.0);
}

/* NaN mismatches and ordinary failures together: the NaNs by count with their first index,
 * then the worst of the others, then the first bad element. */
Test(compare_message, nan_counts_then_the_others)
{
    float got[6] = {1, 3, NAN, NAN, 0.75f, 1};
    double exp[6] = {1, 2, 1, 1, NAN, 1};
    int64_t shape[1] = {6}, strides[1] = {1};
    hc_tol tol = tol_of(0, ATTNREF_F32, (const double[]){0.5});
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 1, shape, strides, exp, &tol, &st), 0);
    char msg[512];
    hc_failure_message(&st, &tol, msg, sizeof msg);
    cr_assert_str_eq(msg, "4 of 6 elements out of tolerance (2 NaN where a number was expected, "
                          "the first at [2]; 1 number where NaN was expected, the first at [4]; "
                          "1 other, the worst 2 times the allowed error; first at [1]: got 3, "
                          "expected 2, allowed 0.5)");
    got[1] = 2;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 1, shape, strides, exp, &tol, &st), 0);
    hc_failure_message(&st, &tol, msg, sizeof msg);
    cr_assert_str_eq(msg, "3 of 6 elements out of tolerance (2 NaN where a number was expected; "
                          "1 number where NaN was expected, the first at [4]; first at [2]: got "
                          "nan, expected 1)");
}

Test(compare_message, empty_when_nothing_failed)
{
    float got[1] = {1};
    double exp[1] = {1};
    int64_t shape[1] = {1}, strides[1] = {1};
    hc_tol tol = tol_of(1, ATTNREF_F32, NULL);
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 1, shape, strides, exp, &tol, &st), 1);
    char msg[64] = "stale";
    hc_failure_message(&st, &tol, msg, sizeof msg);
    cr_assert_str_eq(msg, "");
    hc_failure_message(&st, &tol, NULL, 0); /* no buffer: nothing written, no crash */
}

/* ---- per-row check modes (expected.row_checks) ---- */

/* Output (1,2,2,2): 4 rows of Dv = 2; row r covers flat elements 2r and 2r+1. */
#define ROWS_SHAPE                                                                                 \
    {                                                                                              \
        1, 2, 2, 2                                                                                 \
    }
#define ROWS_STRIDES                                                                               \
    {                                                                                              \
        8, 4, 2, 1                                                                                 \
    }

Test(compare_rows, exact_row_accepts_either_zero)
{
    float got[8] = {0.5f, 1.0f, -0.0f, 0.0f, NAN, 2.0f, -INFINITY, 3.0f};
    double exp[8] = {0.5, 1.0, 0.0, -0.0, NAN, 2.0, -INFINITY, 3.0};
    uint8_t rows[4] = {HC_ROW_CLOSE, HC_ROW_EXACT, HC_ROW_EXACT, HC_ROW_EXACT};
    int64_t shape[4] = ROWS_SHAPE, strides[4] = ROWS_STRIDES;
    hc_tol tol = tol_of(0, ATTNREF_F32, NULL);
    hc_stats st;
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, &tol, rows, 2, &st), 1,
                 "-0 == 0 and 0 == -0; NaN meets NaN and -inf meets -inf in an exact row");
    cr_assert_eq(st.nbad, 0);
    cr_assert_eq(st.first_bad, -1);
    cr_assert_eq(st.bad_row, -1);
    cr_assert_eq(st.max_abs_err, 0.0);
}

Test(compare_rows, exact_row_off_by_one_ulp_fails_whatever_the_tolerance)
{
    float got[8] = {1, 1, 0, 0, 0.5f, 0.5f, 1, 1};
    double exp[8] = {1, 1, 0, 0, 0.5, 0.5, 1, 1};
    got[5] = nextafterf(0.5f, 1.0f);
    uint8_t rows[4] = {HC_ROW_CLOSE, HC_ROW_CLOSE, HC_ROW_EXACT, HC_ROW_CLOSE};
    int64_t shape[4] = ROWS_SHAPE, strides[4] = ROWS_STRIDES;
    /* Huge tolerances: a close row would pass, an exact row must not. */
    const double ra[4] = {1, 1, 1, 1};
    hc_tol tol = tol_of(1e6, ATTNREF_F32, ra);
    hc_stats st;
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, &tol, rows, 2, &st), 0);
    cr_assert_eq(st.nbad, 1);
    cr_assert_eq(st.nbad_mode[HC_ROW_EXACT], 1);
    cr_assert_eq(st.first_bad, 5);
    cr_assert_eq(st.bad_row, 2);
    cr_assert_eq(st.bad_mode, HC_ROW_EXACT);
    cr_assert_eq(st.bad_allowed, 0.0, "an exact row allows nothing");
    cr_assert_eq(st.bad_index[1], 1);
    cr_assert_eq(st.bad_index[2], 0);
    cr_assert_eq(st.bad_index[3], 1);
    cr_assert_eq(st.max_abs_err, 0x1p-24, "an exact row counts in the error statistics");
    cr_assert_eq(st.max_ratio, 0.0, "but not in the ratio (it has no allowance)");
    char msg[256];
    hc_failure_message(&st, &tol, msg, sizeof msg);
    cr_assert_str_eq(msg, "row 2 must be exactly 0.5: got 0.50000005960464478 at [0,1,0,1]; "
                          "1 of 8 elements fail");
    /* The same value in a close row passes. */
    rows[2] = HC_ROW_CLOSE;
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, &tol, rows, 2, &st), 1);
}

Test(compare_rows, exact_row_of_zeros_message)
{
    /* A fully masked row (SPEC clause 9) must be exactly 0: 0.25 is a FAIL, as is NaN. */
    float got[8] = {1, 1, 0, 0, 0, 0.25f, NAN, 0};
    double exp[8] = {1, 1, 0, 0, 0, 0, 0, 0};
    uint8_t rows[4] = {HC_ROW_CLOSE, HC_ROW_EXACT, HC_ROW_EXACT, HC_ROW_EXACT};
    int64_t shape[4] = ROWS_SHAPE, strides[4] = ROWS_STRIDES;
    const double ra[4] = {1e-3, 1e-3, 1e-3, 1e-3};
    hc_tol tol = tol_of(2, ATTNREF_F32, ra);
    hc_stats st;
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, &tol, rows, 2, &st), 0);
    cr_assert_eq(st.nbad, 2);
    cr_assert_eq(st.first_bad, 5);
    char msg[256];
    hc_failure_message(&st, &tol, msg, sizeof msg);
    cr_assert_str_eq(msg, "row 2 must be exactly 0: got 0.25 at [0,1,0,1]; 2 of 8 elements fail");
    cr_assert_eq(st.max_abs_err, 0.25, "the NaN in an exact row is counted, not maximised");
    cr_assert_eq(st.nans.got, 1);
    cr_assert_eq(st.nans_close.got, 0, "it is in an exact row");
}

Test(compare_rows, finite_row_accepts_any_finite_value)
{
    /* Row 1 and 3 are FINITE: their expected values (NaN, inf, 0) are ignored. */
    float got[8] = {1, 2, 1e30f, -3.0f, 5, 6, -FLT_MAX, 0x1p-149f};
    double exp[8] = {1, 2, NAN, INFINITY, 5, 6, 0.0, -INFINITY};
    uint8_t rows[4] = {HC_ROW_CLOSE, HC_ROW_FINITE, HC_ROW_CLOSE, HC_ROW_FINITE};
    int64_t shape[4] = ROWS_SHAPE, strides[4] = ROWS_STRIDES;
    hc_tol tol = tol_of(0, ATTNREF_F32, NULL);
    hc_stats st;
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, &tol, rows, 2, &st), 1);
    cr_assert_eq(st.nbad, 0);
    cr_assert_eq(st.max_abs_err, 0.0, "finite rows stay out of the statistics");
    cr_assert_eq(st.max_rel_err, 0.0);
    cr_assert_eq(st.max_ratio, 0.0);
}

Test(compare_rows, finite_row_rejects_nan_and_inf)
{
    static const float bad[3] = {NAN, INFINITY, -INFINITY};
    static const char *const text[3] = {"nan", "inf", "-inf"};
    const double ra[4] = {1, 1, 1, 1};
    hc_tol tol = tol_of(1, ATTNREF_F32, ra);
    for (int k = 0; k < 3; k++) {
        float got[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        double exp[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        got[6] = bad[k];
        exp[6] = (double)bad[k]; /* even the "same" non-finite value: finite means finite */
        uint8_t rows[4] = {HC_ROW_CLOSE, HC_ROW_CLOSE, HC_ROW_CLOSE, HC_ROW_FINITE};
        int64_t shape[4] = ROWS_SHAPE, strides[4] = ROWS_STRIDES;
        hc_stats st;
        cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, &tol, rows, 2, &st),
                     0, "%s", text[k]);
        cr_assert_eq(st.first_bad, 6);
        cr_assert_eq(st.bad_row, 3);
        cr_assert_eq(st.bad_mode, HC_ROW_FINITE);
        cr_assert_eq(st.nbad_mode[HC_ROW_FINITE], 1);
        cr_assert_eq(st.max_abs_err, 0.0, "%s: a finite row adds no error", text[k]);
        cr_assert_eq(st.max_ratio, 0.0, "%s: nor ratio", text[k]);
        char msg[256], want[128];
        hc_failure_message(&st, &tol, msg, sizeof msg);
        snprintf(want, sizeof want,
                 "row 3 must be finite: got %s at [0,1,1,0]; 1 of 8 elements "
                 "fail",
                 text[k]);
        cr_assert_str_eq(msg, want);
    }
}

Test(compare_rows, close_rows_unchanged)
{
    /* Every row CLOSE gives exactly what hc_compare gives, message included. */
    float got[8] = {1, 2.5f, 3, 4, NAN, 6, 7, INFINITY};
    double exp[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint8_t rows[4] = {0, 0, 0, 0};
    int64_t shape[4] = ROWS_SHAPE, strides[4] = ROWS_STRIDES;
    const double ra[4] = {0.1, 0.1, 0.1, 0.1};
    hc_tol tol = tol_of(1, ATTNREF_F32, ra);
    hc_stats a, b;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 4, shape, strides, exp, &tol, &a), 0);
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, &tol, rows, 2, &b), 0);
    cr_assert_eq(a.nbad, 3);
    cr_assert_eq(b.nbad, 3);
    cr_assert_eq(a.first_bad, b.first_bad);
    cr_assert(isinf(a.max_abs_err) && isinf(b.max_abs_err), "the infinity; the NaN is counted");
    cr_assert(isinf(a.max_ratio) && isinf(b.max_ratio));
    cr_assert_eq(a.nans.got, 1);
    cr_assert_eq(b.nans.got, 1);
    cr_assert_eq(a.bad_allowed, b.bad_allowed);
    cr_assert_eq(a.bad_row, -1, "no row checks: no row");
    cr_assert_eq(b.bad_row, 0);
    cr_assert_eq(b.bad_mode, HC_ROW_CLOSE);
    char ma[512], mb[512];
    hc_failure_message(&a, &tol, ma, sizeof ma);
    hc_failure_message(&b, &tol, mb, sizeof mb);
    cr_assert_str_eq(ma, "3 of 8 elements out of tolerance (1 NaN where a number was expected, "
                         "the first at [0,1,0,0]; 2 others, the worst inf times the allowed "
                         "error; first at [0,0,0,1]: got 2.5, expected 2, allowed 0.1)");
    cr_assert_str_eq(mb, ma);
    /* NULL row_check with row_len = Dv: every row close, row_atol still per row. */
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, &tol, NULL, 2, &b), 0);
    cr_assert_eq(b.nbad, 3);
    cr_assert_eq(b.bad_allowed, a.bad_allowed);
}

Test(compare_rows, row_atol_applies_per_row_with_row_checks)
{
    /* Rows 0 and 2 close with allowances 0.5 and 0; row 1 exact; row 3 finite. */
    float got[8] = {1.5f, 2, 3, 4, 5, 6, 1e9f, -5};
    double exp[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint8_t rows[4] = {HC_ROW_CLOSE, HC_ROW_EXACT, HC_ROW_CLOSE, HC_ROW_FINITE};
    int64_t shape[4] = ROWS_SHAPE, strides[4] = ROWS_STRIDES;
    double ra[4] = {0.5, 100, 0, 100};
    hc_tol tol = tol_of(0, ATTNREF_F32, ra);
    hc_stats st;
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, &tol, rows, 2, &st), 1);
    cr_assert_eq(st.max_ratio, 1.0, "row 0's 0.5 against its 0.5");
    got[2] = 3.25f; /* row 1 is exact: its row_atol of 100 does not apply */
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, &tol, rows, 2, &st), 0);
    cr_assert_eq(st.bad_row, 1);
    cr_assert_eq(st.bad_mode, HC_ROW_EXACT);
    got[2] = 3;
    got[4] = 5.0f + 0x1p-21f; /* row 2: allowed 0 */
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, &tol, rows, 2, &st), 0);
    cr_assert_eq(st.bad_row, 2);
    cr_assert(isinf(st.max_ratio));
    ra[2] = 0x1p-21;
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, &tol, rows, 2, &st), 1,
                 "the row's own allowance now covers it");
}

Test(compare_rows, stats_ignore_finite_rows)
{
    /* Close row 0 off by 0.5 (rel 0.25); finite row 1 miles away from its expected value. */
    float got[8] = {2.5f, 1, 1000, -1e6f, 3, 4, 5, 6};
    double exp[8] = {2, 1, 0, 1, 3, 4, 5, 6};
    uint8_t rows[4] = {HC_ROW_CLOSE, HC_ROW_FINITE, HC_ROW_EXACT, HC_ROW_CLOSE};
    int64_t shape[4] = ROWS_SHAPE, strides[4] = ROWS_STRIDES;
    const double ra[4] = {0.5, 0, 0, 0.5};
    hc_tol tol = tol_of(0, ATTNREF_F32, ra);
    hc_stats st;
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, &tol, rows, 2, &st), 1);
    cr_assert_eq(st.max_abs_err, 0.5);
    cr_assert_eq(st.max_rel_err, 0.25);
    cr_assert_eq(st.max_ratio, 1.0);
}

Test(compare_rows, mixed_failures_message_counts_both)
{
    float got[8] = {9, 1, 1, 1, 0.5f, 0, NAN, 1};
    double exp[8] = {1, 1, 1, 1, 0, 0, 1, 1};
    uint8_t rows[4] = {HC_ROW_CLOSE, HC_ROW_CLOSE, HC_ROW_EXACT, HC_ROW_FINITE};
    int64_t shape[4] = ROWS_SHAPE, strides[4] = ROWS_STRIDES;
    const double ra[4] = {2, 0, 0, 0};
    hc_tol tol = tol_of(0, ATTNREF_F32, ra);
    hc_stats st;
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, &tol, rows, 2, &st), 0);
    cr_assert_eq(st.nbad, 3);
    cr_assert_eq(st.nbad_mode[HC_ROW_CLOSE], 1);
    cr_assert_eq(st.nbad_mode[HC_ROW_EXACT], 1);
    cr_assert_eq(st.nbad_mode[HC_ROW_FINITE], 1);
    cr_assert_eq(st.max_abs_err, 8.0, "the NaN is in a finite row: no NaN statistics");
    cr_assert_eq(st.max_ratio, 4.0);
    char msg[512];
    hc_failure_message(&st, &tol, msg, sizeof msg);
    cr_assert_str_eq(msg, "1 of 8 elements out of tolerance (worst 4 times the allowed error; "
                          "first at [0,0,0,0]: got 9, expected 1, allowed 2); 2 more fail their "
                          "exact/finite row check");
    /* The bool/mask wording counts the same way. */
    hc_failure_message(&st, &exact_tol, msg, sizeof msg);
    cr_assert_str_eq(msg, "1 of 8 elements differ (first at [0,0,0,0]: got 9, expected 1); 2 more "
                          "fail their exact/finite row check");
}

Test(compare_rows, unknown_mode_and_bad_row_length)
{
    float got[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    double exp[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint8_t rows[4] = {HC_ROW_CLOSE, 7, HC_ROW_CLOSE, HC_ROW_CLOSE};
    int64_t shape[4] = ROWS_SHAPE, strides[4] = ROWS_STRIDES;
    hc_tol tol = tol_of(0, ATTNREF_F32, NULL);
    hc_stats st;
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, &tol, rows, 2, &st), 0,
                 "an unknown mode never passes");
    cr_assert_eq(st.nbad, 2);
    cr_assert_eq(st.first_bad, 2);
    char msg[256];
    hc_failure_message(&st, &tol, msg, sizeof msg);
    cr_assert_str_eq(msg, "row 1 has unknown check mode 7: got 3 at [0,0,1,0]; 2 of 8 elements "
                          "fail");
    rows[1] = HC_ROW_CLOSE;
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, &tol, rows, 4, &st), 0,
                 "row_len must be the last extent");
    cr_assert_eq(st.first_bad, -1);
    cr_assert_eq(st.numel, 0);
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 0, shape, strides, exp, &tol, rows, 1, &st), 0,
                 "a rank-0 tensor has no rows");
    /* Dv = 0: rows exist but are empty, nothing to compare. */
    int64_t empty[4] = {1, 2, 2, 0};
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, empty, strides, exp, &tol, rows, 0, &st), 1);
    cr_assert_eq(st.numel, 0);
}
