/* perf_stats.h — the statistics of `attnconf perf-compare`: medians and the Mann–Whitney U test
 * on two samples of repetition times.  Internal to the harness; not installed.
 *
 * The test (Mann & Whitney 1947; the tie correction and the continuity correction as in
 * Hollander & Wolfe, "Nonparametric Statistical Methods", 3rd ed., section 4.1, and as
 * scipy.stats.mannwhitneyu(method="asymptotic", use_continuity=True) computes them): with x the
 * BASE sample (n1 values) and y the NEW sample (n2 values),
 *
 *   U   = R_y - n2 (n2 + 1) / 2       R_y: the sum of y's ranks in the pooled sample, tied
 *                                     values sharing the mean of their ranks (mid-ranks); U is
 *                                     the number of pairs (x_i, y_j) with y_j > x_i, ties 1/2
 *   mu  = n1 n2 / 2
 *   var = n1 n2 / 12 * ((n + 1) - sum_k (t_k^3 - t_k) / (n (n - 1)))    n = n1 + n2, t_k the
 *                                     size of the k-th group of tied values
 *   p_greater = Q((U - mu - 1/2) / sqrt(var))    one-sided, H1: y tends to be larger than x
 *   p_less    = P((U - mu + 1/2) / sqrt(var))    one-sided, H1: y tends to be smaller than x
 *
 * with P and Q the standard normal CDF and its complement (GSL's gsl_cdf_ugaussian_P / _Q,
 * accurate in the far tail where 1 - P would round to 0).  The normal approximation is poor
 * for small samples: callers must not draw conclusions below PS_MIN_REPS values per side. */
#ifndef ATTNCONF_PERF_STATS_H
#define ATTNCONF_PERF_STATS_H

#include <stddef.h>

/* The fewest values per sample for which perf-compare uses the test.  Below 5 per side even the
 * exact test cannot reach p < 0.01 (1 / C(8, 4) = 0.014), and until about 8 per side the normal
 * approximation's tail is off by a factor of several (n1 = n2 = 8, complete separation: exact
 * p = 7.8e-5, approximation 4.7e-4); bench's default --min-reps (10) is above it. */
#define PS_MIN_REPS 8

/* The result of ps_mann_whitney. */
typedef struct ps_mwu {
    double u;         /* U of y (see the top comment), 0 .. n1 * n2 */
    double mu, sigma; /* its mean and tie-corrected standard deviation under H0 */
    double z;         /* (U - mu) / sigma, no continuity correction; 0 when sigma is 0 */
    double p_greater; /* one-sided p-value, H1: y larger (NEW slower); 1 when sigma is 0 */
    double p_less;    /* one-sided p-value, H1: y smaller (NEW faster); 1 when sigma is 0 */
} ps_mwu;

/* The Mann–Whitney U test of sample y (ny values) against sample x (nx values), as in the top
 * comment.  Values must be finite (the caller validates them: times from a bench file).
 * All values equal (sigma 0: no evidence either way) gives both p-values 1.
 * Returns 0; -1 (out unchanged) when nx or ny is 0, a value is not finite, or the O(nx + ny)
 * scratch memory cannot be allocated. */
int ps_mann_whitney(const double *x, size_t nx, const double *y, size_t ny, ps_mwu *out);

/* The median of v[0..n-1] (the mean of the two middle values when n is even), or NaN when
 * n is 0 or memory for a sorted copy cannot be allocated.  v is not modified. */
double ps_median(const double *v, size_t n);

#endif
