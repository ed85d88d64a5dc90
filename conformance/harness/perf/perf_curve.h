/* perf_curve.h — the cost curves of `attnconf perf-report`: a power law fitted to time against
 * size, and the cliffs of the rate along a curve.  Internal to the harness; not installed.
 *
 * A cost curve (perf/README.md, "Cost curves") is the shapes of a suite that differ in one size
 * x alone (Lk, Lq or the batch B), each timed on one backend in one dtype.  If the time is a
 * power of the size, t = c x^k, its logarithm is a line in log x:
 *
 *   log t_i = a + k log x_i + e_i
 *
 * fitted by ordinary least squares over the curve's points (GSL's gsl_fit_linear on the natural
 * logarithms of the sizes and of the median times; the slope does not depend on the base).  k is
 * the cost exponent: 2 for causal prefill (L (L + 1) / 2 pairs per head), 1 for decode (Lk keys
 * read once), 1 for a window W << L, 1 for a batch sweep.  Its standard error is that of the
 * slope in the linear model,
 *
 *   se_k = sqrt(s^2 / sum_i (log x_i - mean log x)^2),   s^2 = sum_i e_i^2 / (n - 2),
 *
 * so it measures how far the points stray from one straight line (fixed costs at small sizes,
 * a change of regime, noise), not the repetition noise of each median.  With 2 points the line
 * passes through both and se_k is undefined (NaN).
 *
 * A cliff: between two consecutive sizes (ascending) the rate r (GFLOP/s for compute-bound
 * shapes, GB/s of K and V for memory-bound ones) drops by more than a fraction `drop`:
 * r_next < (1 - drop) r_prev.  On a power law of the expected exponent the rate is constant,
 * so a cliff is where a kernel leaves a regime: K/V falls out of the last-level cache, a tile
 * size stops dividing L, a buffer spills.  Where both memory-bound points have the read
 * bandwidth measured beside them (bench's "read_gbs_beside"), their share of it,
 * kv_gbs / read_gbs_beside, must drop by more than `drop` as well: on a machine shared with
 * other tenants the bandwidth itself swings by 30 % or more within minutes (perf/README.md),
 * and a kernel at that bandwidth follows it, rate down and share flat, which is no change of
 * regime.  A kernel far from the bandwidth (the reference: 0.2 GB/s) keeps its rate while the
 * share moves, so the share alone would not do either.  K/V falling out of a cache drops both:
 * the read loop's buffer is beyond any cache at every size.
 */
#ifndef ATTNCONF_PERF_CURVE_H
#define ATTNCONF_PERF_CURVE_H

#include <stddef.h>
#include <stdio.h>

#include "perf_json.h"

/* The fit of pc_fit_power. */
typedef struct pc_fit {
    double k;    /* the exponent: the slope of log t against log x */
    double a;    /* the intercept: log t at x = 1 (natural logarithm) */
    double se_k; /* the standard error of k (NaN with 2 points) */
    size_t n;    /* the points fitted */
} pc_fit;

/* Fit t = exp(a) x^k to n points (x[i], t[i]) as in the top comment.  Returns 0 with *out set,
 * or -1 (out unchanged) when n < 2, a value is not finite and positive, or every x is the
 * same (no slope to fit). */
int pc_fit_power(const double *x, const double *t, size_t n, pc_fit *out);

/* 1 when the rate drops by more than the fraction `drop` (0 < drop < 1) from `before` to
 * `after` (both positive): after < (1 - drop) before. */
int pc_is_cliff(double before, double after, double drop);

/* One point of a curve: a shape timed OK. */
typedef struct pc_point {
    double x;     /* its size: lk, lq or b, as the curve sweeps */
    double t;     /* the median time, seconds */
    double rate;  /* GFLOP/s (compute-bound) or GB/s of K and V (memory-bound): work / t */
    double work;  /* FLOPs (compute-bound) or bytes of K and V (memory-bound) per call */
    double share; /* memory-bound with read_gbs_beside: rate / read_gbs_beside; else 0 */
    const pj_shape *sh;
} pc_point;

/* Whether b, the size after a on the same curve, is a cliff for `drop` (top comment): the rate
 * drops by more than `drop` and, where both points have a share of the bandwidth beside, so
 * does the share. */
int pc_point_cliff(const pc_point *a, const pc_point *b, double drop);

/* The points of curve `c` among backend be's shapes of dtype `dtype` with status OK, sorted by
 * size (ascending; equal sizes keep the file's order), into out, which has room for be->n
 * points; returns how many.  *untimed (may be NULL) gets the number of that curve's shapes in
 * that dtype that were not timed OK. */
size_t pc_points(const pj_backend *be, const pj_curve *c, const char *dtype, pc_point *out,
                 size_t *untimed);

/* What the report flags (perf-report --cliff-drop, --exponent-tolerance). */
#define PC_DEFAULT_DROP 0.20      /* a rate drop of more than 20 % is a cliff */
#define PC_DEFAULT_TOLERANCE 0.25 /* a fitted k more than 0.25 from the expected one */

/* The cost-curve part of a suite's section of REPORT.md (perf_curve_md.c): the rule, a summary
 * line, a table with a row per (curve, backend, dtype) — sizes, expected k, the work's k, the
 * fitted k with its standard error, the verdict — and the list of cliffs.  Curves in the
 * order given, backends in the order given, dtypes in their order in each backend's shapes.
 * Pure function of the arguments (the "C" locale's printf). */
void pc_write_curves(FILE *f, const pj_curve *curves, size_t ncurves, const pj_backend *const *bes,
                     size_t nbes, double drop, double tolerance);

#endif
