/* perf_curve.c — power-law fits and cliffs of cost curves (formulas in perf_curve.h). */
#include "perf_curve.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_fit.h>

int pc_fit_power(const double *x, const double *t, size_t n, pc_fit *out)
{
    if (n < 2)
        return -1;
    double *lx = malloc(2 * n * sizeof *lx);
    if (!lx)
        return -1;
    double *lt = lx + n;
    int same = 1;
    for (size_t i = 0; i < n; i++) {
        if (!(isfinite(x[i]) && x[i] > 0 && isfinite(t[i]) && t[i] > 0)) {
            free(lx);
            return -1;
        }
        lx[i] = log(x[i]);
        lt[i] = log(t[i]);
        same &= x[i] == x[0];
    }
    if (same) {
        free(lx);
        return -1;
    }
    double a, k, c00, c01, c11, sumsq;
    gsl_fit_linear(lx, 1, lt, 1, n, &a, &k, &c00, &c01, &c11, &sumsq);
    free(lx);
    /* GSL divides the residual sum of squares by n - 2: with two points that is 0 / 0. */
    out->k = k;
    out->a = a;
    out->se_k = n > 2 && c11 >= 0 ? sqrt(c11) : NAN;
    out->n = n;
    return 0;
}

int pc_is_cliff(double before, double after, double drop)
{
    return after < (1.0 - drop) * before;
}

int pc_point_cliff(const pc_point *a, const pc_point *b, double drop)
{
    if (!pc_is_cliff(a->rate, b->rate, drop))
        return 0;
    return !(a->share > 0 && b->share > 0) || pc_is_cliff(a->share, b->share, drop);
}

static int cmp_point(const void *a, const void *b)
{
    const pc_point *p = a, *q = b;
    if (p->x != q->x)
        return p->x < q->x ? -1 : 1;
    return (p->sh > q->sh) - (p->sh < q->sh); /* the file's order: shapes are one array */
}

size_t pc_points(const pj_backend *be, const pj_curve *c, const char *dtype, pc_point *out,
                 size_t *untimed)
{
    size_t n = 0, bad = 0;
    for (size_t i = 0; i < be->n; i++) {
        const pj_shape *sh = &be->shapes[i];
        if (strcmp(sh->curve, c->name) != 0 || strcmp(sh->dtype, dtype) != 0)
            continue;
        if (sh->status != PJ_OK || !(sh->median_s > 0)) {
            bad++;
            continue;
        }
        const int mem = sh->bound == PJ_MEMORY;
        /* The rate from the median the fit uses, not the file's own figure, so a cliff and the
         * exponent can never disagree about one point (bench writes the same quotient). */
        const double work = mem ? sh->kv_bytes : sh->flops, rate = work / sh->median_s / 1e9;
        out[n++] =
            (pc_point){.x = (double)pj_curve_size(sh, c->x),
                       .t = sh->median_s,
                       .rate = rate,
                       .work = work,
                       .share = mem && sh->read_gbs_beside > 0 ? rate / sh->read_gbs_beside : 0,
                       .sh = sh};
    }
    qsort(out, n, sizeof *out, cmp_point);
    if (untimed)
        *untimed = bad;
    return n;
}
