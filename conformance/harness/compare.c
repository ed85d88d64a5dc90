/* compare.c — element-wise comparison of a backend output with the expected f64 values.
 *
 * Tolerances follow numpy.isclose (|got - exp| <= atol + rtol * |exp|, asymmetric in exp) but
 * non-finite values must match exactly in kind: a NaN where a number is expected is the classic
 * symptom of an unhandled fully-masked row, and an infinity of the wrong sign is never "close".
 */
#include "compare.h"

#include <math.h>
#include <string.h>

int hc_element_ok(double got, double exp, double atol, double rtol, int exact)
{
    if (isnan(got) || isnan(exp))
        return isnan(got) && isnan(exp);
    if (isinf(got) || isinf(exp))
        return got == exp; /* both infinite with the same sign */
    if (exact)
        return got == exp;
    return fabs(got - exp) <= atol + rtol * fabs(exp);
}

/* *m = max(*m, x), with NaN sticky (once an error is undefined, the maximum is too). */
static void hc_max(double *m, double x)
{
    if (isnan(*m))
        return;
    if (isnan(x) || x > *m)
        *m = x;
}

/* Row-major multi-index of flat index `flat` in `shape`. */
static void hc_unflatten(int64_t flat, int32_t ndim, const int64_t *shape, int64_t *idx)
{
    for (int32_t d = ndim - 1; d >= 0; d--) {
        idx[d] = shape[d] ? flat % shape[d] : 0;
        flat = shape[d] ? flat / shape[d] : 0;
    }
}

int hc_compare(const void *got, attnref_dtype dt, int32_t ndim, const int64_t *shape,
               const int64_t *strides, const double *expected, double atol, double rtol,
               int exact, hc_stats *st)
{
    memset(st, 0, sizeof *st);
    st->first_bad = -1;
    if (ndim < 0 || ndim > 4)
        return 0;
    st->ndim = ndim;
    int64_t numel = 1;
    for (int32_t d = 0; d < ndim; d++) {
        if (shape[d] < 0)
            return 0;
        numel *= shape[d];
    }
    st->numel = numel;

    /* Walk the logical row-major order with a multi-index so any strides (permuted, padded,
     * broadcast) are read correctly. */
    int64_t idx[4] = {0, 0, 0, 0};
    for (int64_t flat = 0; flat < numel; flat++) {
        int64_t off = 0;
        for (int32_t d = 0; d < ndim; d++)
            off += idx[d] * strides[d];
        double g = attnref_load(got, dt, off);
        double e = expected[flat];
        int ok = hc_element_ok(g, e, atol, rtol, exact);
        if (isfinite(g) && isfinite(e)) {
            double abs_err = fabs(g - e);
            hc_max(&st->max_abs_err, abs_err);
            if (e != 0.0)
                hc_max(&st->max_rel_err, abs_err / fabs(e));
        } else if (!ok) {
            /* A non-finite mismatch has no finite error: NaN if a NaN is involved, else
             * (an infinity against a number or the other infinity) unbounded. */
            double err = (isnan(g) || isnan(e)) ? NAN : INFINITY;
            hc_max(&st->max_abs_err, err);
            hc_max(&st->max_rel_err, err);
        }
        if (!ok) {
            if (st->nbad++ == 0) {
                st->first_bad = flat;
                hc_unflatten(flat, ndim, shape, st->bad_index);
                st->bad_got = g;
                st->bad_expected = e;
            }
        }
        for (int32_t d = ndim - 1; d >= 0; d--) {
            if (++idx[d] < shape[d])
                break;
            idx[d] = 0;
        }
    }
    return st->nbad == 0;
}
