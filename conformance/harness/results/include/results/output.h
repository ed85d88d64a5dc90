/* output.h — a finished run written as text, TAP, JUnit or the results JSON (output.c). */
#ifndef ATTNCONF_RESULTS_OUTPUT_H
#define ATTNCONF_RESULTS_OUTPUT_H

#include <stdio.h>

#include "results/result.h"

/* Write a finished run in the given format (output.c).  Text ends with a summary line
 * "N passed, N failed, N not supported" (passed = PASS + EXPECTED_ERROR, failed =
 * FAIL/INCORRECT_DTYPE/ERROR/CRASH/TIMEOUT), followed by "; N case file(s) unreadable" when
 * there are CASE_ERRORs (counted in none of the three).  Every failure, in text, TAP and JUnit,
 * names what the case checks and the SPEC.md clauses it cites.  JSON is the input of
 * `attnconf report`.
 * Returns 0, or -1 on a write error. */
int hr_write(const hr_run *run, hr_format fmt, FILE *f);

/* The comparison statistics of r on one line, no newline (output.c; the report uses it too):
 * "first bad index [b,h,i,d] (flat N): got X, expected Y; max abs err A, max rel err R", or only
 * the error part when no element failed (e.g. INCORRECT_DTYPE with right values).  With NaN
 * mismatches (r->nans) their counts come before the maxima: "K NaN where a number was expected
 * (first at [..]); L numbers where NaN was expected (first at [..]); over the other M elements:
 * max err ...", or "no other element to measure" in place of the maxima. */
void hr_write_stats(FILE *f, const hr_result *r);

#endif
