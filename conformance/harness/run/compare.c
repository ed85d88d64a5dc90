/* compare.c — element-wise comparison of a backend output with the expected f64 values.
 *
 * The allowed error is per element: a multiple of the output dtype's ulp at the expected value
 * plus a per-row absolute term (SPEC.md clause 13), asymmetric in exp as numpy.isclose; but
 * non-finite values must match exactly in kind: a NaN where a number is expected is the classic
 * symptom of an unhandled fully-masked row, and an infinity of the wrong sign is never "close".
 */
#include "run/compare.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int hc_element_ok(double got, double exp, double allowed, int exact)
{
    if (isnan(got) || isnan(exp))
        return isnan(got) && isnan(exp);
    if (isinf(got) || isinf(exp))
        return got == exp; /* both infinite with the same sign */
    if (exact)
        return got == exp;
    return fabs(got - exp) <= allowed;
}

double hc_allowed(const hc_tol *tol, double exp, int64_t row)
{
    if (!tol || tol->exact)
        return 0.0;
    double a = tol->ulps > 0 ? tol->ulps * attnref_dtype_ulp(exp, tol->ulp_dtype) : 0.0;
    if (tol->row_atol && row >= 0)
        a += tol->row_atol[row];
    return a;
}

/* *m = max(*m, x); x is never NaN (NaN mismatches are counted apart: hc_nan_count). */
static void hc_max(double *m, double x)
{
    if (x > *m)
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

/* Count element `flat`, a NaN where a number was expected (got_nan) or the reverse. */
static void hc_nan_count(hr_nans *n, int got_nan, int64_t flat, int32_t ndim, const int64_t *shape)
{
    int64_t *count = got_nan ? &n->got : &n->missed;
    if ((*count)++ == 0)
        hc_unflatten(flat, ndim, shape, got_nan ? n->got_index : n->missed_index);
}

int hc_compare(const void *got, attnref_dtype dt, int32_t ndim, const int64_t *shape,
               const int64_t *strides, const double *expected, const hc_tol *tol, hc_stats *st)
{
    return hc_compare_rows(got, dt, ndim, shape, strides, expected, tol, NULL,
                           ndim >= 1 && ndim <= 4 ? shape[ndim - 1] : 1, st);
}

/* One element under the mode of its row. */
static int hc_mode_ok(double g, double e, double allowed, int exact, int mode)
{
    switch (mode) {
    case HC_ROW_CLOSE: return hc_element_ok(g, e, allowed, exact);
    case HC_ROW_EXACT: return hc_element_ok(g, e, 0.0, 1);
    case HC_ROW_FINITE: return isfinite(g) != 0;
    default: return 0; /* an unknown mode never passes */
    }
}

int hc_compare_rows(const void *got, attnref_dtype dt, int32_t ndim, const int64_t *shape,
                    const int64_t *strides, const double *expected, const hc_tol *tol,
                    const uint8_t *row_check, int64_t row_len, hc_stats *st)
{
    const int exact = tol ? tol->exact : 1;
    memset(st, 0, sizeof *st);
    st->first_bad = -1;
    st->bad_row = -1;
    if (ndim < 0 || ndim > 4)
        return 0;
    st->ndim = ndim;
    int64_t numel = 1;
    for (int32_t d = 0; d < ndim; d++) {
        if (shape[d] < 0)
            return 0;
        numel *= shape[d];
    }
    if (row_check && (ndim < 1 || row_len != shape[ndim - 1]))
        return 0;
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
        int64_t row = row_len > 0 ? flat / row_len : -1;
        int mode = row_check ? row_check[row] : HC_ROW_CLOSE;
        double allowed = mode == HC_ROW_CLOSE ? hc_allowed(tol, e, row) : 0.0;
        int ok = hc_mode_ok(g, e, allowed, exact, mode);
        if (mode == HC_ROW_FINITE) {
            /* no error statistics: the expected value of a FINITE row means nothing */
        } else if (!ok && (isnan(g) || isnan(e))) {
            /* A NaN against a number has no error size: a NaN maximum would hide every other
             * element's, and leaving it out silently would make the maxima read as within
             * tolerance.  Counted apart, the first of each kind kept. */
            hc_nan_count(&st->nans, isnan(g), flat, ndim, shape);
            if (mode == HC_ROW_CLOSE)
                hc_nan_count(&st->nans_close, isnan(g), flat, ndim, shape);
        } else {
            st->nans.others++; /* an element the maxima are over */
            if (mode == HC_ROW_CLOSE)
                st->nans_close.others++;
            if (isfinite(g) && isfinite(e)) {
                double abs_err = fabs(g - e);
                hc_max(&st->max_abs_err, abs_err);
                if (e != 0.0)
                    hc_max(&st->max_rel_err, abs_err / fabs(e));
                if (mode == HC_ROW_CLOSE && !exact)
                    hc_max(&st->max_ratio, abs_err == 0.0  ? 0.0
                                           : allowed > 0.0 ? abs_err / allowed
                                                           : INFINITY);
            } else if (!ok) {
                /* An infinity against a number or the other infinity: unbounded. */
                hc_max(&st->max_abs_err, INFINITY);
                hc_max(&st->max_rel_err, INFINITY);
                if (mode == HC_ROW_CLOSE && !exact)
                    hc_max(&st->max_ratio, INFINITY);
            }
        }
        if (!ok) {
            if (mode >= HC_ROW_CLOSE && mode <= HC_ROW_FINITE)
                st->nbad_mode[mode]++;
            if (st->nbad++ == 0) {
                st->first_bad = flat;
                hc_unflatten(flat, ndim, shape, st->bad_index);
                st->bad_got = g;
                st->bad_expected = e;
                st->bad_mode = mode;
                st->bad_row = row_check ? row : -1;
                st->bad_allowed = allowed;
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

/* %.17g, except that every NaN is "nan" (printf may write "-nan") and infinities "inf"/"-inf":
 * one spelling for the same value in every message and output format. */
static void hc_num_text(double x, char out[32])
{
    if (isnan(x))
        snprintf(out, 32, "nan");
    else if (isinf(x))
        snprintf(out, 32, "%s", x > 0 ? "inf" : "-inf");
    else
        snprintf(out, 32, "%.17g", x);
}

/* "K NaN where a number was expected, the first at [0,1,2,3]; " into buf (n bytes), without
 * the index when it is the first bad element's (the message gives that one anyway).  Returns
 * the length written (at most n - 1). */
static size_t hc_nan_text(char *buf, size_t n, int64_t count, const char *one, const char *many,
                          const int64_t *index, const hc_stats *st)
{
    if (n == 0)
        return 0;
    int w = snprintf(buf, n, "%lld %s expected", (long long)count, count == 1 ? one : many);
    int same = 1;
    for (int32_t d = 0; d < st->ndim && d < 4; d++)
        same &= index[d] == st->bad_index[d];
    if (!same && w >= 0 && (size_t)w < n) {
        w += snprintf(buf + w, n - (size_t)w, ", the first at [");
        for (int32_t d = 0; d < st->ndim && d < 4 && w >= 0 && (size_t)w < n; d++)
            w += snprintf(buf + w, n - (size_t)w, "%s%lld", d ? "," : "", (long long)index[d]);
        if (w >= 0 && (size_t)w < n)
            w += snprintf(buf + w, n - (size_t)w, "]");
    }
    if (w >= 0 && (size_t)w < n)
        w += snprintf(buf + w, n - (size_t)w, "; ");
    if (w < 0)
        return 0;
    return (size_t)w < n ? (size_t)w : n - 1;
}

void hc_failure_message(const hc_stats *st, const hc_tol *tol, char *buf, size_t n)
{
    if (!buf || n == 0)
        return;
    buf[0] = '\0';
    if (st->first_bad < 0)
        return;
    char at[96];
    size_t j = 0;
    at[j++] = '[';
    for (int32_t d = 0; d < st->ndim && d < 4 && j < sizeof at; d++)
        j += (size_t)snprintf(at + j, sizeof at - j, "%s%lld", d ? "," : "",
                              (long long)st->bad_index[d]);
    if (j < sizeof at)
        snprintf(at + j, sizeof at - j, "]");
    char got[32], want[32];
    hc_num_text(st->bad_got, got);
    hc_num_text(st->bad_expected, want);
    if (st->bad_mode == HC_ROW_CLOSE) {
        int64_t nclose = st->nbad_mode[HC_ROW_CLOSE], rest = st->nbad - nclose;
        int w;
        if (!tol || tol->exact) {
            w = snprintf(buf, n, "%lld of %lld elements differ (first at %s: got %s, expected %s)",
                         (long long)nclose, (long long)st->numel, at, got, want);
        } else {
            /* The NaN mismatches first, by count (they have no error size), then the worst of
             * the others, so no figure is NaN and none reads as within tolerance. */
            const hr_nans *nn = &st->nans_close;
            int64_t others = nclose - nn->got - nn->missed;
            char what[320] = "";
            size_t k = 0;
            if (nn->got > 0)
                k += hc_nan_text(what + k, sizeof what - k, nn->got, "NaN where a number was",
                                 "NaN where a number was", nn->got_index, st);
            if (nn->missed > 0)
                k += hc_nan_text(what + k, sizeof what - k, nn->missed, "number where NaN was",
                                 "numbers where NaN was", nn->missed_index, st);
            if (others > 0 && k < sizeof what) {
                char ratio[32];
                if (isfinite(st->max_ratio))
                    snprintf(ratio, sizeof ratio, "%.3g", st->max_ratio);
                else
                    hc_num_text(st->max_ratio, ratio);
                if (k > 0)
                    k += (size_t)snprintf(what + k, sizeof what - k, "%lld other%s, the ",
                                          (long long)others, others == 1 ? "" : "s");
                if (k < sizeof what)
                    snprintf(what + k, sizeof what - k, "worst %s times the allowed error; ",
                             ratio);
            }
            char allowed[48] = "";
            if (!isnan(st->bad_got) && !isnan(st->bad_expected))
                snprintf(allowed, sizeof allowed, ", allowed %.3g", st->bad_allowed);
            w = snprintf(buf, n,
                         "%lld of %lld elements out of tolerance (%sfirst at %s: got %s, "
                         "expected %s%s)",
                         (long long)nclose, (long long)st->numel, what, at, got, want, allowed);
        }
        if (rest > 0 && w >= 0 && (size_t)w < n)
            snprintf(buf + w, n - (size_t)w, "; %lld more fail their exact/finite row check",
                     (long long)rest);
        return;
    }
    if (st->bad_mode == HC_ROW_EXACT)
        snprintf(buf, n, "row %lld must be exactly %s: got %s at %s; %lld of %lld elements fail",
                 (long long)st->bad_row, want, got, at, (long long)st->nbad, (long long)st->numel);
    else if (st->bad_mode == HC_ROW_FINITE)
        snprintf(buf, n, "row %lld must be finite: got %s at %s; %lld of %lld elements fail",
                 (long long)st->bad_row, got, at, (long long)st->nbad, (long long)st->numel);
    else
        snprintf(buf, n,
                 "row %lld has unknown check mode %d: got %s at %s; %lld of %lld "
                 "elements fail",
                 (long long)st->bad_row, st->bad_mode, got, at, (long long)st->nbad,
                 (long long)st->numel);
}
