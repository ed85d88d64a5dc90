/* test_compare.c — the harness comparator (harness/compare.c): a conformance suite is only as
 * good as the check that says PASS, so its edge cases are pinned here. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>

#include "attnref/dtype.h"
#include "compare.h"

/* ---- the element rule ---- */

Test(compare_element, nan_vs_finite_fails_both_directions)
{
    cr_assert_eq(hc_element_ok(NAN, 1.0, 1e9, 1e9, 0), 0, "got NaN, expected 1 must fail");
    cr_assert_eq(hc_element_ok(1.0, NAN, 1e9, 1e9, 0), 0, "got 1, expected NaN must fail");
    cr_assert_eq(hc_element_ok(NAN, 0.0, 0, 0, 1), 0, "exact mode too");
}

Test(compare_element, nan_matches_nan)
{
    cr_assert_eq(hc_element_ok(NAN, NAN, 0, 0, 0), 1);
    cr_assert_eq(hc_element_ok(-NAN, NAN, 0, 0, 0), 1, "any NaN matches any NaN");
}

Test(compare_element, infinities_need_the_same_sign)
{
    cr_assert_eq(hc_element_ok(INFINITY, INFINITY, 0, 0, 0), 1);
    cr_assert_eq(hc_element_ok(-INFINITY, -INFINITY, 0, 0, 0), 1);
    cr_assert_eq(hc_element_ok(INFINITY, -INFINITY, 1e300, 1e300, 0), 0, "+inf vs -inf");
    cr_assert_eq(hc_element_ok(-INFINITY, INFINITY, 1e300, 1e300, 0), 0, "-inf vs +inf");
    cr_assert_eq(hc_element_ok(INFINITY, 1e308, 1e300, 1e300, 0), 0, "inf vs finite");
    cr_assert_eq(hc_element_ok(65504.0, INFINITY, 1e300, 1e300, 0), 0, "finite vs inf");
    cr_assert_eq(hc_element_ok(INFINITY, NAN, 0, 0, 0), 0, "inf vs NaN");
}

Test(compare_element, tolerance_boundary_is_inclusive)
{
    /* atol + rtol * |exp| = 0.25 + 0.5 * 1 = 0.75; all values exact in binary64. */
    cr_assert_eq(hc_element_ok(1.75, 1.0, 0.25, 0.5, 0), 1, "|err| == bound passes");
    cr_assert_eq(hc_element_ok(0.25, 1.0, 0.25, 0.5, 0), 1, "on both sides");
    cr_assert_eq(hc_element_ok(nextafter(1.75, 2.0), 1.0, 0.25, 0.5, 0), 0, "just over fails");
    cr_assert_eq(hc_element_ok(0.25 - 1e-9, 1.0, 0.25, 0.5, 0), 0, "just under fails");
}

Test(compare_element, rtol_scales_with_expected_not_got)
{
    /* numpy.isclose semantics: the bound uses |exp| only. */
    cr_assert_eq(hc_element_ok(3.0, 2.0, 0.0, 0.5, 0), 1, "1 <= 0.5 * 2");
    cr_assert_eq(hc_element_ok(2.0, 3.0, 0.0, 0.25, 0), 0, "1 > 0.25 * 3");
    cr_assert_eq(hc_element_ok(0.0, -0.0, 0.0, 0.0, 0), 1, "signed zeros are equal");
}

Test(compare_element, exact_mode_ignores_tolerances)
{
    cr_assert_eq(hc_element_ok(1.0, 1.0, 0, 0, 1), 1);
    cr_assert_eq(hc_element_ok(0.0, 1.0, 10.0, 10.0, 1), 0);
}

/* ---- whole tensors ---- */

Test(compare_tensor, all_equal_passes_with_zero_errors)
{
    float got[6] = {1, 2, 3, 4, 5, 6};
    double exp[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {2, 3}, strides[2] = {3, 1};
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 2, shape, strides, exp, 0, 0, 0, &st), 1);
    cr_assert_eq(st.nbad, 0);
    cr_assert_eq(st.numel, 6);
    cr_assert_eq(st.first_bad, -1);
    cr_assert_eq(st.max_abs_err, 0.0);
    cr_assert_eq(st.max_rel_err, 0.0);
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
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 3, shape, strides, exp, 1e-6, 1e-6, 0, &st), 0);
    cr_assert_eq(st.nbad, 2);
    cr_assert_eq(st.first_bad, 13);
    cr_assert_eq(st.ndim, 3);
    cr_assert_eq(st.bad_index[0], 1);
    cr_assert_eq(st.bad_index[1], 0);
    cr_assert_eq(st.bad_index[2], 1);
    cr_assert_eq(st.bad_got, 100.0);
    cr_assert_eq(st.bad_expected, 6.5);
    cr_assert_eq(st.max_abs_err, 93.5);
    cr_assert_float_eq(st.max_rel_err, 93.5 / 6.5, 1e-12);
}

Test(compare_tensor, rel_err_skips_zero_expected)
{
    float got[2] = {0.5f, 1.5f};
    double exp[2] = {0.0, 1.0};
    int64_t shape[1] = {2}, strides[1] = {1};
    hc_stats st;
    hc_compare(got, ATTNREF_F32, 1, shape, strides, exp, 0, 0, 0, &st);
    cr_assert_eq(st.max_abs_err, 0.5);
    cr_assert_eq(st.max_rel_err, 0.5, "0.5/1 only; 0.5/0 is not a relative error");
}

Test(compare_tensor, nan_in_output_fails_and_is_reported)
{
    float got[4] = {0.0f, NAN, 1.0f, 1.0f};
    double exp[4] = {0.0, 0.25, 1.0, 1.0};
    int64_t shape[2] = {2, 2}, strides[2] = {2, 1};
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 2, shape, strides, exp, 1.0, 1.0, 0, &st), 0);
    cr_assert_eq(st.first_bad, 1);
    cr_assert_eq(st.bad_index[0], 0);
    cr_assert_eq(st.bad_index[1], 1);
    cr_assert(isnan(st.bad_got));
    cr_assert_eq(st.bad_expected, 0.25);
    cr_assert(isnan(st.max_abs_err), "a NaN against a number makes the error undefined");
    cr_assert(isnan(st.max_rel_err));
}

Test(compare_tensor, wrong_infinity_makes_errors_unbounded)
{
    float got[3] = {-INFINITY, 1.0f, INFINITY};
    double exp[3] = {INFINITY, 1.5, INFINITY};
    int64_t shape[1] = {3}, strides[1] = {1};
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 1, shape, strides, exp, 0, 0, 0, &st), 0);
    cr_assert_eq(st.nbad, 2);
    cr_assert_eq(st.first_bad, 0);
    cr_assert(isinf(st.max_abs_err) && st.max_abs_err > 0);
    cr_assert(isinf(st.max_rel_err) && st.max_rel_err > 0);
}

Test(compare_tensor, matching_non_finite_values_add_no_error)
{
    float got[3] = {NAN, -INFINITY, 2.0f};
    double exp[3] = {NAN, -INFINITY, 2.0};
    int64_t shape[1] = {3}, strides[1] = {1};
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 1, shape, strides, exp, 0, 0, 0, &st), 1);
    cr_assert_eq(st.max_abs_err, 0.0);
    cr_assert_eq(st.max_rel_err, 0.0);
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
    cr_assert_eq(hc_compare(buf, ATTNREF_F32, 4, shape, strides, exp, 0, 0, 0, &st), 1,
                 "a permuted layout must compare equal");

    buf[(2 * H + 1) * D + 0] = -5.0f; /* logical (0,1,2,0) = flat 10 */
    cr_assert_eq(hc_compare(buf, ATTNREF_F32, 4, shape, strides, exp, 0, 0, 0, &st), 0);
    cr_assert_eq(st.first_bad, 10);
    cr_assert_eq(st.bad_index[1], 1);
    cr_assert_eq(st.bad_index[2], 2);
    cr_assert_eq(st.bad_index[3], 0);
    cr_assert_eq(st.bad_got, -5.0);
    cr_assert_eq(st.bad_expected, 120.0);

    /* A contiguous reading of the same buffer would be wrong: prove the strides matter. */
    int64_t contig[4] = {H * L * D, L * D, D, 1};
    buf[(2 * H + 1) * D + 0] = 120.0f;
    cr_assert_eq(hc_compare(buf, ATTNREF_F32, 4, shape, contig, exp, 0, 0, 0, &st), 0);
}

Test(compare_tensor, f16_output_is_read_exactly)
{
    uint16_t got[3] = {0x3C00 /* 1 */, 0x3555 /* 0.333251953125 */, 0x7C00 /* +inf */};
    double exp[3] = {1.0, 1.0 / 3.0, INFINITY};
    int64_t shape[1] = {3}, strides[1] = {1};
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_F16, 1, shape, strides, exp, 0, 1e-3, 0, &st), 1);
    cr_assert_eq(hc_compare(got, ATTNREF_F16, 1, shape, strides, exp, 0, 1e-5, 0, &st), 0,
                 "f16 rounding of 1/3 exceeds rtol 1e-5");
    cr_assert_eq(st.first_bad, 1);
    cr_assert_eq(st.bad_got, 0.333251953125);
}

Test(compare_tensor, bool_mask_is_exact)
{
    uint8_t got[4] = {1, 0, 7 /* any nonzero is true */, 0};
    double exp[4] = {1, 0, 1, 1};
    int64_t shape[4] = {1, 1, 2, 2}, strides[4] = {4, 4, 2, 1};
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_BOOL, 4, shape, strides, exp, 0, 0, 1, &st), 0);
    cr_assert_eq(st.nbad, 1);
    cr_assert_eq(st.first_bad, 3);
    cr_assert_eq(st.bad_index[2], 1);
    cr_assert_eq(st.bad_index[3], 1);
    cr_assert_eq(st.bad_got, 0.0);
    cr_assert_eq(st.bad_expected, 1.0);
}

Test(compare_tensor, empty_tensor_passes_and_bad_rank_fails)
{
    float got[1] = {0};
    double exp[1] = {0};
    int64_t shape[4] = {2, 0, 3, 1}, strides[4] = {0, 3, 1, 1};
    hc_stats st;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 4, shape, strides, exp, 0, 0, 0, &st), 1);
    cr_assert_eq(st.numel, 0);
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 5, shape, strides, exp, 0, 0, 0, &st), 0);
    cr_assert_eq(st.first_bad, -1);
    int64_t neg[1] = {-1};
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 1, neg, strides, exp, 0, 0, 0, &st), 0);
}
