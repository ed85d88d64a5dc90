/* compare.h — element-wise comparison of a backend output with the expected f64 values, under
 * the tolerance of SPEC.md clause 13 (case format v2 `tolerance: {ulps, row_atol}`). */
#ifndef ATTNCONF_COMPARE_H
#define ATTNCONF_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include "attnref/dtype.h"
#include "results/result.h" /* hr_nans */

/* Per-row check modes (the values of ACASE_CHECK_* in attncase/case.h, FORMAT.md
 * `expected.row_checks`).  A row is the last dimension: flat row r covers the elements
 * [r*row_len, (r+1)*row_len) of the row-major order.
 *   HC_ROW_CLOSE:  the element rule below (hc_element_ok with the allowed error of hc_tol);
 *   HC_ROW_EXACT:  got == exp as doubles, whatever the tolerances: +0 and -0 both match 0;
 *                  NaN only against NaN, an infinity only against the same infinity;
 *   HC_ROW_FINITE: got must be finite; the expected value is ignored (implementation-defined,
 *                  SPEC.md clause 11). */
enum { HC_ROW_CLOSE = 0, HC_ROW_EXACT = 1, HC_ROW_FINITE = 2 };

/* The allowed error of a CLOSE element e in row r:
 *     allowed = ulps * attnref_dtype_ulp(e, ulp_dtype) + (row_atol ? row_atol[r] : 0)
 * and it passes iff |got - e| <= allowed.  exact: every element must be equal (bool/mask outputs;
 * ulps and row_atol are ignored). */
typedef struct hc_tol {
    double ulps;             /* >= 0 */
    attnref_dtype ulp_dtype; /* the output dtype the ulps are counted in */
    const double *row_atol;  /* [rows] (rows = numel / last extent), or NULL for 0 */
    int exact;
} hc_tol;

/* Statistics of one comparison. */
typedef struct hc_stats {
    int64_t numel;      /* elements compared */
    int64_t nbad;       /* elements that failed */
    double max_abs_err; /* max |got - exp| over the elements where both are finite; +inf if
                               an infinity is matched wrongly; matching non-finite pairs count
                               0.  A NaN against a number (either way) is left out: it has no
                               size, and is counted in `nans` instead, so the maxima are never
                               NaN.  Over CLOSE and EXACT rows only: a FINITE row has no
                               meaningful expected value. */
    double max_rel_err; /* the same for |got - exp| / |exp|, over exp != 0 */
    double max_ratio;   /* the same for |got - exp| / allowed over CLOSE rows: the error in
                               units of the allowed error (<= 1 passes; 0 / 0 counts 0, x / 0
                               with x > 0 counts +inf); 0 with `exact` */
    hr_nans nans;       /* the NaN mismatches of CLOSE and EXACT rows (the maxima's rows) */
    hr_nans nans_close; /* those of them in CLOSE rows (hc_failure_message's count) */
    int64_t first_bad;  /* flat row-major index of the first failing element, -1 if none */
    int32_t ndim;
    int64_t bad_index[4]; /* first_bad as a multi-index of the shape (valid if first_bad >= 0) */
    double bad_got, bad_expected;
    double bad_allowed; /* the allowed error at first_bad (0 in EXACT/FINITE rows) */
    /* Per-row checks (hc_compare_rows; 0 / HC_ROW_CLOSE for hc_compare). */
    int64_t nbad_mode[3]; /* failing elements by the mode of their row, HC_ROW_* */
    int bad_mode;         /* the mode of the row holding first_bad */
    int64_t bad_row;      /* that row (first_bad / row_len), -1 without row checks or none */
} hc_stats;

/* The per-element rule.  Passes iff both are NaN, or both are infinite with the same sign, or
 * both are finite and |got - exp| <= allowed (inclusive).  A NaN or infinity on one side only
 * always fails.  With `exact`, finite values must be equal. */
int hc_element_ok(double got, double exp, double allowed, int exact);

/* The allowed error of element exp in row `row` under tol (see hc_tol). */
double hc_allowed(const hc_tol *tol, double exp, int64_t row);

/* Compare the tensor at `got` (dtype dt, rank ndim <= 4, `shape`, element `strides`; read with
 * attnref_load) against `expected` (numel values in row-major order of shape).  Fills *st and
 * returns 1 if every element passes, 0 otherwise.  A rank outside 0..4 or a negative extent
 * compares nothing and returns 0 with first_bad = -1. */
int hc_compare(const void *got, attnref_dtype dt, int32_t ndim, const int64_t *shape,
               const int64_t *strides, const double *expected, const hc_tol *tol, hc_stats *st);

/* hc_compare with a check mode per row: row_check (NULL: every row HC_ROW_CLOSE) has one
 * HC_ROW_* entry per row of row_len elements, one per index of all dimensions but the last
 * (B*Hq*Lq for an SDPA output), and row_len is the last extent (Dv).  A mode outside HC_ROW_* fails every element of its row.  With
 * row_check, a rank below 1 or a row_len other than the last extent compares nothing and
 * returns 0 with first_bad = -1. */
int hc_compare_rows(const void *got, attnref_dtype dt, int32_t ndim, const int64_t *shape,
                    const int64_t *strides, const double *expected, const hc_tol *tol,
                    const uint8_t *row_check, int64_t row_len, hc_stats *st);

/* The one-line failure message of a comparison that failed (st->first_bad >= 0), into buf:
 *   first bad element in a CLOSE row:  "N of M elements out of tolerance (worst R times the
 *                                      allowed error, R as %.3g; first at [b,h,i,j]: got G,
 *                                      expected E, allowed A)", or
 *                                      "N of M elements differ" with `exact` (bool outputs),
 *                                      N counting the close rows' failures (all of them without
 *                                      row checks); "; K more fail their exact/finite row
 *                                      check" appended when other rows failed too.  When NaN
 *                                      stands against a number in close rows, the parenthesis
 *                                      first counts them ("K NaN where a number was expected",
 *                                      "L numbers where NaN was expected", each with ", the
 *                                      first at [..]" unless that is the first bad element),
 *                                      then the others ("X others worst R times the allowed
 *                                      error", none when all are NaN), then the first bad
 *                                      element, without "allowed" when a NaN is involved:
 *                                      never a NaN figure;
 *   in an EXACT row:   "row 5 must be exactly 0: got 0.25 at [0,1,5,3]; N of M elements fail";
 *   in a FINITE row:   "row 5 must be finite: got nan at [0,1,5,3]; N of M elements fail".
 * Numbers in the row messages are %.17g (got and expected exactly as compared). */
void hc_failure_message(const hc_stats *st, const hc_tol *tol, char *buf, size_t n);

#endif
