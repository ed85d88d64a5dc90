/* tolerance.c — row check modes and the per-element error bound of every sdpa case.
 *
 * The bound is SPEC.md clause 13's first-order forward error bound (caselib bound.c,
 * acase_sdpa_bound): ulps of the output dtype at each expected value plus one absolute term per
 * row.  casegen writes it and then runs every honest implementation (honest.c: the ways real
 * kernels compute SDPA) on the case; if one of them falls outside the bound under the case's row
 * modes, the model is wrong for that case and casegen stops rather than write a tolerance that
 * an honest backend fails.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncase/bound.h"
#include "attncase/sdpa_rows.h"
#include "casegen.h"

void cg_row_checks(acase *c)
{
    char err[256];
    if (acase_sdpa_set_row_checks(c, err, sizeof err) != 0) {
        fprintf(stderr, "casegen: %s: %s\n", c->id, err);
        exit(1);
    }
}

void cg_rows_rounded(acase *c)
{
    char err[256];
    if (acase_sdpa_rows_rounded(c, err, sizeof err) != 0) {
        fprintf(stderr, "casegen: %s: %s\n", c->id, err);
        exit(1);
    }
}

static uint8_t row_mode(const acase_expected *e, int64_t n)
{
    if (!e->row_check || e->shape[3] == 0)
        return ACASE_CHECK_CLOSE;
    return e->row_check[n / e->shape[3]];
}

/* The allowed error of element n (clause 13). */
static double allowed(const acase *c, int64_t n)
{
    const acase_expected *e = &c->expected;
    return c->ulps * attnref_dtype_ulp(e->values[n], e->dtype) + c->row_atol[n / e->shape[3]];
}

/* 1 if got passes element n under its row's mode. */
static int passes(const acase *c, int64_t n, double got)
{
    const acase_expected *e = &c->expected;
    const double x = e->values[n];
    switch (row_mode(e, n)) {
    case ACASE_CHECK_FINITE: return isfinite(got) != 0;
    case ACASE_CHECK_EXACT: return got == x || (isnan(got) && isnan(x));
    default:
        if (!isfinite(x) || !isfinite(got))
            return isnan(x) ? isnan(got) : got == x;
        return fabs(got - x) <= allowed(c, n);
    }
}

void cg_tolerance(acase *c)
{
    const acase_expected *e = &c->expected;
    char err[256];
    if (acase_row_atol_alloc(c, err, sizeof err) != 0 ||
        acase_sdpa_bound(c, &c->ulps, c->row_atol, err, sizeof err) != 0) {
        fprintf(stderr, "casegen: %s: %s\n", c->id, err);
        exit(1);
    }
    double *got = malloc(((size_t)e->numel + 1) * sizeof *got);
    if (!got) {
        fprintf(stderr, "casegen: out of memory\n");
        exit(1);
    }
    /* CASEGEN_TOL_STATS=1: one line per case and implementation with its worst error in units of
     * the allowed error (for tuning and for SPEC.md clause 13's examples). */
    const int stats = getenv("CASEGEN_TOL_STATS") != NULL;
    for (int w = 0; w < cg_honest_count(); w++) {
        cg_honest_sdpa(c, w, got);
        double worst = 0.0;
        for (int64_t n = 0; n < e->numel; n++) {
            if (stats && row_mode(e, n) == ACASE_CHECK_CLOSE && isfinite(e->values[n]) &&
                allowed(c, n) > 0 && fabs(got[n] - e->values[n]) / allowed(c, n) > worst)
                worst = fabs(got[n] - e->values[n]) / allowed(c, n);
            if (passes(c, n, got[n]))
                continue;
            const int64_t dv = e->shape[3], r = n / (dv ? dv : 1);
            fprintf(stderr,
                    "casegen: %s: honest implementation '%s' fails the clause 13 bound at row %lld "
                    "element %lld (row mode %d): got %.9g, expected %.17g, allowed %.3g\n",
                    c->id, cg_honest_name(w), (long long)r, (long long)(n - r * dv), row_mode(e, n),
                    got[n], e->values[n],
                    row_mode(e, n) == ACASE_CHECK_CLOSE ? allowed(c, n) : 0.0);
            exit(1);
        }
        if (stats)
            printf("tolstats %s %d %.4f\n", c->id, w, worst);
    }
    free(got);
}
