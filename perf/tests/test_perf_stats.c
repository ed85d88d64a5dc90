/* test_perf_stats.c — the Mann–Whitney U test and the median of perf-compare
 * (conformance/harness/perf/perf_stats.c), against values computed independently: U and the
 * variance by hand below, the p-values with scipy 1.17.1,
 *   scipy.stats.mannwhitneyu(y, x, alternative="greater" / "less", method="asymptotic",
 *                            use_continuity=True)
 * (y = NEW, x = BASE).  A regression verdict is only as good as these numbers. */
#include <criterion/criterion.h>
#include <math.h>
#include <stddef.h>

#include "perf_stats.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Relative agreement of two p-values: GSL's tail and scipy's (Cephes) differ in the last bits. */
static void assert_close(double got, double want, double rel, const char *what)
{
    cr_assert(fabs(got - want) <= rel * fabs(want), "%s: got %.17g, want %.17g", what, got, want);
}

/* x = {1, 3, 5}, y = {2, 4, 6, 7}, no ties.  Pooled order 1x 2y 3x 4y 5x 6y 7y: y's ranks
 * 2 + 4 + 6 + 7 = 19, U = 19 - 4*5/2 = 9 (pairs with y > x: 1 + 2 + 3 + 3).  mu = 3*4/2 = 6,
 * var = 3*4/12 * (7 + 1) = 8.  p_greater = Q((9 - 6 - 0.5) / sqrt 8) = Q(0.88388). */
Test(mann_whitney, small_no_ties)
{
    const double x[] = {1, 3, 5}, y[] = {2, 4, 6, 7};
    ps_mwu r;
    cr_assert_eq(ps_mann_whitney(x, N(x), y, N(y), &r), 0);
    cr_assert_eq(r.u, 9.0);
    cr_assert_eq(r.mu, 6.0);
    assert_close(r.sigma, sqrt(8.0), 1e-15, "sigma");
    assert_close(r.p_greater, 0.188379558905791, 1e-12, "p_greater");
    assert_close(r.p_less, 0.8920375305299298, 1e-12, "p_less");
}

/* x = {1, 2, 2, 3}, y = {2, 3, 3, 4}: two groups of three tied values.  Mid-ranks: 1 -> 1,
 * the 2s (positions 2..4) -> 3, the 3s (5..7) -> 6, 4 -> 8; y's rank sum 3 + 6 + 6 + 8 = 23,
 * U = 23 - 10 = 13.  Tie term 2 * (3^3 - 3) = 48, var = 16/12 * (9 - 48/56) = 10.857142857,
 * p_greater = Q((13 - 8 - 0.5) / 3.2950179) = Q(1.36570). */
Test(mann_whitney, ties_use_mid_ranks_and_the_correction)
{
    const double x[] = {1, 2, 2, 3}, y[] = {2, 3, 3, 4};
    ps_mwu r;
    cr_assert_eq(ps_mann_whitney(x, N(x), y, N(y), &r), 0);
    cr_assert_eq(r.u, 13.0);
    cr_assert_eq(r.mu, 8.0);
    assert_close(r.sigma * r.sigma, 16.0 / 12 * (9 - 48.0 / 56), 1e-14, "variance");
    assert_close(r.p_greater, 0.08601685446091145, 1e-12, "p_greater");
    assert_close(r.p_less, 0.9524598065992065, 1e-12, "p_less");
}

/* 12 against 12, NEW entirely slower: U = 144 (every pair), mu = 72, var = 144/12 * 25 = 300;
 * p = Q((144 - 72 - 0.5) / sqrt 300) = Q(4.12806) = 1.83e-5: a 12-repetition run can flag. */
Test(mann_whitney, complete_separation_is_significant)
{
    double x[12], y[12];
    for (int i = 0; i < 12; i++) {
        x[i] = 1 + i;
        y[i] = 13 + i;
    }
    ps_mwu r;
    cr_assert_eq(ps_mann_whitney(x, 12, y, 12, &r), 0);
    cr_assert_eq(r.u, 144.0);
    assert_close(r.sigma, sqrt(300.0), 1e-15, "sigma");
    assert_close(r.p_greater, 1.82922767694855e-05, 1e-10, "p_greater");
    assert_close(r.p_less, 0.9999857911661648, 1e-12, "p_less");
    /* The same samples swapped: NEW entirely faster, U = 0, the tails trade places. */
    cr_assert_eq(ps_mann_whitney(y, 12, x, 12, &r), 0);
    cr_assert_eq(r.u, 0.0);
    assert_close(r.p_less, 1.82922767694855e-05, 1e-10, "p_less swapped");
}

/* Timing-like data with ties (values repeat at the 1 ms resolution): scipy gives U = 78. */
Test(mann_whitney, timing_sample_matches_scipy)
{
    const double x[] = {0.101, 0.102, 0.100, 0.103, 0.099, 0.104, 0.101, 0.100, 0.105, 0.102};
    const double y[] = {0.103, 0.104, 0.102, 0.106, 0.101, 0.107, 0.103, 0.102, 0.108, 0.104};
    ps_mwu r;
    cr_assert_eq(ps_mann_whitney(x, N(x), y, N(y), &r), 0);
    cr_assert_eq(r.u, 78.0);
    assert_close(r.p_greater, 0.01799608974138709, 1e-12, "p_greater");
    assert_close(r.p_less, 0.985120032370366, 1e-12, "p_less");
}

/* Every value equal: no evidence either way, never a regression (scipy returns NaN here). */
Test(mann_whitney, all_tied_gives_p_one)
{
    const double x[] = {2, 2, 2, 2, 2, 2, 2, 2}, y[] = {2, 2, 2, 2, 2, 2, 2, 2};
    ps_mwu r;
    cr_assert_eq(ps_mann_whitney(x, N(x), y, N(y), &r), 0);
    cr_assert_eq(r.u, 32.0);
    cr_assert_eq(r.sigma, 0.0);
    cr_assert_eq(r.p_greater, 1.0);
    cr_assert_eq(r.p_less, 1.0);
}

Test(mann_whitney, refuses_empty_and_non_finite)
{
    const double x[] = {1, 2}, bad[] = {1, NAN};
    ps_mwu r = {.u = -7};
    cr_assert_eq(ps_mann_whitney(x, 0, x, 2, &r), -1);
    cr_assert_eq(ps_mann_whitney(x, 2, x, 0, &r), -1);
    cr_assert_eq(ps_mann_whitney(x, 2, bad, 2, &r), -1);
    cr_assert_eq(r.u, -7.0, "out must be left unchanged on error");
}

Test(median, odd_even_and_unsorted)
{
    const double odd[] = {5, 1, 3}, even[] = {4, 1, 3, 2}, one[] = {7};
    cr_assert_eq(ps_median(odd, 3), 3.0);
    cr_assert_eq(ps_median(even, 4), 2.5);
    cr_assert_eq(ps_median(one, 1), 7.0);
    cr_assert(isnan(ps_median(one, 0)));
    cr_assert_eq(odd[0], 5.0, "the input is not reordered");
}
