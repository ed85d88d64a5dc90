/* test_compare.c — the harness comparator (harness/compare.c): a conformance suite is only as
 * good as the check that says PASS, so its edge cases are pinned here. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

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

/* ---- per-row check modes (expected.row_checks) ---- */

/* Output (1,2,2,2): 4 rows of Dv = 2; row r covers flat elements 2r and 2r+1. */
#define ROWS_SHAPE {1, 2, 2, 2}
#define ROWS_STRIDES {8, 4, 2, 1}

Test(compare_rows, exact_row_accepts_either_zero)
{
    float got[8] = {0.5f, 1.0f, -0.0f, 0.0f, NAN, 2.0f, -INFINITY, 3.0f};
    double exp[8] = {0.5, 1.0, 0.0, -0.0, NAN, 2.0, -INFINITY, 3.0};
    uint8_t rows[4] = {HC_ROW_CLOSE, HC_ROW_EXACT, HC_ROW_EXACT, HC_ROW_EXACT};
    int64_t shape[4] = ROWS_SHAPE, strides[4] = ROWS_STRIDES;
    hc_stats st;
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, 0, 0, 0, rows, 2, &st),
                 1, "-0 == 0 and 0 == -0; NaN meets NaN and -inf meets -inf in an exact row");
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
    hc_stats st;
    /* Huge tolerances: a close row would pass, an exact row must not. */
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, 1.0, 1.0, 0, rows, 2,
                                 &st), 0);
    cr_assert_eq(st.nbad, 1);
    cr_assert_eq(st.nbad_mode[HC_ROW_EXACT], 1);
    cr_assert_eq(st.first_bad, 5);
    cr_assert_eq(st.bad_row, 2);
    cr_assert_eq(st.bad_mode, HC_ROW_EXACT);
    cr_assert_eq(st.bad_index[1], 1);
    cr_assert_eq(st.bad_index[2], 0);
    cr_assert_eq(st.bad_index[3], 1);
    cr_assert_eq(st.max_abs_err, 0x1p-24, "an exact row counts in the error statistics");
    char msg[256];
    hc_failure_message(&st, 1.0, 1.0, 0, msg, sizeof msg);
    cr_assert_str_eq(msg, "row 2 must be exactly 0.5: got 0.50000005960464478 at [0,1,0,1]; "
                          "1 of 8 elements fail");
    /* The same value in a close row passes. */
    rows[2] = HC_ROW_CLOSE;
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, 1.0, 1.0, 0, rows, 2,
                                 &st), 1);
}

Test(compare_rows, exact_row_of_zeros_message)
{
    /* A fully masked row (SPEC clause 9) must be exactly 0: 0.25 is a FAIL, as is NaN. */
    float got[8] = {1, 1, 0, 0, 0, 0.25f, NAN, 0};
    double exp[8] = {1, 1, 0, 0, 0, 0, 0, 0};
    uint8_t rows[4] = {HC_ROW_CLOSE, HC_ROW_EXACT, HC_ROW_EXACT, HC_ROW_EXACT};
    int64_t shape[4] = ROWS_SHAPE, strides[4] = ROWS_STRIDES;
    hc_stats st;
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, 1e-3, 1e-3, 0, rows, 2,
                                 &st), 0);
    cr_assert_eq(st.nbad, 2);
    cr_assert_eq(st.first_bad, 5);
    char msg[256];
    hc_failure_message(&st, 1e-3, 1e-3, 0, msg, sizeof msg);
    cr_assert_str_eq(msg, "row 2 must be exactly 0: got 0.25 at [0,1,0,1]; 2 of 8 elements fail");
    cr_assert(isnan(st.max_abs_err), "the NaN in an exact row makes the error undefined");
}

Test(compare_rows, finite_row_accepts_any_finite_value)
{
    /* Row 1 and 3 are FINITE: their expected values (NaN, inf, 0) are ignored. */
    float got[8] = {1, 2, 1e30f, -3.0f, 5, 6, -FLT_MAX, 0x1p-149f};
    double exp[8] = {1, 2, NAN, INFINITY, 5, 6, 0.0, -INFINITY};
    uint8_t rows[4] = {HC_ROW_CLOSE, HC_ROW_FINITE, HC_ROW_CLOSE, HC_ROW_FINITE};
    int64_t shape[4] = ROWS_SHAPE, strides[4] = ROWS_STRIDES;
    hc_stats st;
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, 0, 0, 0, rows, 2, &st),
                 1);
    cr_assert_eq(st.nbad, 0);
    cr_assert_eq(st.max_abs_err, 0.0, "finite rows stay out of the statistics");
    cr_assert_eq(st.max_rel_err, 0.0);
}

Test(compare_rows, finite_row_rejects_nan_and_inf)
{
    static const float bad[3] = {NAN, INFINITY, -INFINITY};
    static const char *const text[3] = {"nan", "inf", "-inf"};
    for (int k = 0; k < 3; k++) {
        float got[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        double exp[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        got[6] = bad[k];
        exp[6] = (double)bad[k]; /* even the "same" non-finite value: finite means finite */
        uint8_t rows[4] = {HC_ROW_CLOSE, HC_ROW_CLOSE, HC_ROW_CLOSE, HC_ROW_FINITE};
        int64_t shape[4] = ROWS_SHAPE, strides[4] = ROWS_STRIDES;
        hc_stats st;
        cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, 1, 1, 0, rows, 2,
                                     &st), 0, "%s", text[k]);
        cr_assert_eq(st.first_bad, 6);
        cr_assert_eq(st.bad_row, 3);
        cr_assert_eq(st.bad_mode, HC_ROW_FINITE);
        cr_assert_eq(st.nbad_mode[HC_ROW_FINITE], 1);
        cr_assert_eq(st.max_abs_err, 0.0, "%s: a finite row adds no error", text[k]);
        char msg[256], want[128];
        hc_failure_message(&st, 1, 1, 0, msg, sizeof msg);
        snprintf(want, sizeof want, "row 3 must be finite: got %s at [0,1,1,0]; 1 of 8 elements "
                 "fail", text[k]);
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
    hc_stats a, b;
    cr_assert_eq(hc_compare(got, ATTNREF_F32, 4, shape, strides, exp, 0.1, 0.1, 0, &a), 0);
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, 0.1, 0.1, 0, rows, 2,
                                 &b), 0);
    cr_assert_eq(a.nbad, 3);
    cr_assert_eq(b.nbad, 3);
    cr_assert_eq(a.first_bad, b.first_bad);
    cr_assert(isnan(a.max_abs_err) && isnan(b.max_abs_err));
    cr_assert_eq(a.bad_row, -1, "no row checks: no row");
    cr_assert_eq(b.bad_row, 0);
    cr_assert_eq(b.bad_mode, HC_ROW_CLOSE);
    char ma[256], mb[256];
    hc_failure_message(&a, 0.1, 0.1, 0, ma, sizeof ma);
    hc_failure_message(&b, 0.1, 0.1, 0, mb, sizeof mb);
    cr_assert_str_eq(ma, "3 of 8 elements out of tolerance (atol 0.1, rtol 0.1)");
    cr_assert_str_eq(mb, ma);
    /* NULL row_check: row_len is not looked at. */
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, 0.1, 0.1, 0, NULL, 0,
                                 &b), 0);
    cr_assert_eq(b.nbad, 3);
    /* The bool/mask wording is unchanged too. */
    a.nbad = a.nbad_mode[HC_ROW_CLOSE] = 1;
    hc_failure_message(&a, 0, 0, 1, ma, sizeof ma);
    cr_assert_str_eq(ma, "1 of 8 elements differ");
}

Test(compare_rows, stats_ignore_finite_rows)
{
    /* Close row 0 off by 0.5 (rel 0.25); finite row 1 miles away from its expected value. */
    float got[8] = {2.5f, 1, 1000, -1e6f, 3, 4, 5, 6};
    double exp[8] = {2, 1, 0, 1, 3, 4, 5, 6};
    uint8_t rows[4] = {HC_ROW_CLOSE, HC_ROW_FINITE, HC_ROW_EXACT, HC_ROW_CLOSE};
    int64_t shape[4] = ROWS_SHAPE, strides[4] = ROWS_STRIDES;
    hc_stats st;
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, 0.5, 0, 0, rows, 2,
                                 &st), 1);
    cr_assert_eq(st.max_abs_err, 0.5);
    cr_assert_eq(st.max_rel_err, 0.25);
}

Test(compare_rows, mixed_failures_message_counts_both)
{
    float got[8] = {9, 1, 1, 1, 0.5f, 0, NAN, 1};
    double exp[8] = {1, 1, 1, 1, 0, 0, 1, 1};
    uint8_t rows[4] = {HC_ROW_CLOSE, HC_ROW_CLOSE, HC_ROW_EXACT, HC_ROW_FINITE};
    int64_t shape[4] = ROWS_SHAPE, strides[4] = ROWS_STRIDES;
    hc_stats st;
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, 0, 0, 0, rows, 2, &st),
                 0);
    cr_assert_eq(st.nbad, 3);
    cr_assert_eq(st.nbad_mode[HC_ROW_CLOSE], 1);
    cr_assert_eq(st.nbad_mode[HC_ROW_EXACT], 1);
    cr_assert_eq(st.nbad_mode[HC_ROW_FINITE], 1);
    cr_assert_eq(st.max_abs_err, 8.0, "the NaN is in a finite row: no NaN statistics");
    char msg[256];
    hc_failure_message(&st, 0, 0, 0, msg, sizeof msg);
    cr_assert_str_eq(msg, "1 of 8 elements out of tolerance (atol 0, rtol 0); 2 more fail their "
                          "exact/finite row check");
}

Test(compare_rows, unknown_mode_and_bad_row_length)
{
    float got[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    double exp[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint8_t rows[4] = {HC_ROW_CLOSE, 7, HC_ROW_CLOSE, HC_ROW_CLOSE};
    int64_t shape[4] = ROWS_SHAPE, strides[4] = ROWS_STRIDES;
    hc_stats st;
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, 0, 0, 0, rows, 2, &st),
                 0, "an unknown mode never passes");
    cr_assert_eq(st.nbad, 2);
    cr_assert_eq(st.first_bad, 2);
    char msg[256];
    hc_failure_message(&st, 0, 0, 0, msg, sizeof msg);
    cr_assert_str_eq(msg, "row 1 has unknown check mode 7: got 3 at [0,0,1,0]; 2 of 8 elements "
                          "fail");
    rows[1] = HC_ROW_CLOSE;
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, shape, strides, exp, 0, 0, 0, rows, 4, &st),
                 0, "row_len must be the last extent");
    cr_assert_eq(st.first_bad, -1);
    cr_assert_eq(st.numel, 0);
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 0, shape, strides, exp, 0, 0, 0, rows, 1, &st),
                 0, "a rank-0 tensor has no rows");
    /* Dv = 0: rows exist but are empty, nothing to compare. */
    int64_t empty[4] = {1, 2, 2, 0};
    cr_assert_eq(hc_compare_rows(got, ATTNREF_F32, 4, empty, strides, exp, 0, 0, 0, rows, 0, &st),
                 1);
    cr_assert_eq(st.numel, 0);
}
