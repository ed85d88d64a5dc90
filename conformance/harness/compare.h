/* compare.h — element-wise comparison of a backend output with the expected f64 values. */
#ifndef ATTNCONF_COMPARE_H
#define ATTNCONF_COMPARE_H

#include <stdint.h>

#include "attnref/dtype.h"

/* Statistics of one comparison. */
typedef struct hc_stats {
    int64_t numel;          /* elements compared */
    int64_t nbad;           /* elements that failed */
    double max_abs_err;     /* max |got - exp| over the elements where both are finite; NaN if
                               a NaN stands against a non-NaN anywhere, else +inf if an
                               infinity is matched wrongly; matching non-finite pairs count 0 */
    double max_rel_err;     /* the same for |got - exp| / |exp|, over exp != 0 */
    int64_t first_bad;      /* flat row-major index of the first failing element, -1 if none */
    int32_t ndim;
    int64_t bad_index[4];   /* first_bad as a multi-index of the shape (valid if first_bad >= 0) */
    double bad_got, bad_expected;
} hc_stats;

/* The per-element rule.  Passes iff both are NaN, or both are infinite with the same sign, or
 * both are finite and |got - exp| <= atol + rtol * |exp| (inclusive).  A NaN or infinity on one
 * side only always fails.  With `exact`, finite values must be equal (bool/mask outputs). */
int hc_element_ok(double got, double exp, double atol, double rtol, int exact);

/* Compare the tensor at `got` (dtype dt, rank ndim <= 4, `shape`, element `strides`; read with
 * attnref_load) against `expected` (numel values in row-major order of shape).  Fills *st and
 * returns 1 if every element passes, 0 otherwise.  A rank outside 0..4 or a negative extent
 * compares nothing and returns 0 with first_bad = -1. */
int hc_compare(const void *got, attnref_dtype dt, int32_t ndim, const int64_t *shape,
               const int64_t *strides, const double *expected, double atol, double rtol,
               int exact, hc_stats *st);

#endif
