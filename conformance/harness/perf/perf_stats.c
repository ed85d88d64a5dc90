/* perf_stats.c — medians and the Mann–Whitney U test (formulas in perf_stats.h). */
#include "perf_stats.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>

typedef struct tagged {
    double v;
    int from_y; /* 1: the value belongs to the NEW sample */
} tagged;

static int cmp_tagged(const void *a, const void *b)
{
    double x = ((const tagged *)a)->v, y = ((const tagged *)b)->v;
    return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int ps_mann_whitney(const double *x, size_t nx, const double *y, size_t ny, ps_mwu *out)
{
    if (nx == 0 || ny == 0 || nx > SIZE_MAX / 2 / sizeof(tagged) ||
        ny > SIZE_MAX / 2 / sizeof(tagged))
        return -1;
    size_t n = nx + ny;
    tagged *t = malloc(n * sizeof *t);
    if (!t)
        return -1;
    for (size_t i = 0; i < n; i++) {
        t[i].v = i < nx ? x[i] : y[i - nx];
        t[i].from_y = i >= nx;
        if (!isfinite(t[i].v)) {
            free(t);
            return -1;
        }
    }
    qsort(t, n, sizeof *t, cmp_tagged);
    /* Mid-ranks: a group of tied values at sorted positions i..j-1 (ranks i+1..j) all get
     * (i + 1 + j) / 2; the same groups give the tie correction. */
    double rank_sum_y = 0, ties = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && t[j].v == t[i].v)
            j++;
        double mid = ((double)(i + 1) + (double)j) / 2, g = (double)(j - i);
        for (size_t k = i; k < j; k++)
            if (t[k].from_y)
                rank_sum_y += mid;
        ties += g * g * g - g;
        i = j;
    }
    free(t);
    double n1 = (double)nx, n2 = (double)ny, nn = (double)n;
    ps_mwu r;
    r.u = rank_sum_y - n2 * (n2 + 1) / 2;
    r.mu = n1 * n2 / 2;
    double var = n1 * n2 / 12 * ((nn + 1) - ties / (nn * (nn - 1)));
    /* var is 0 exactly when every value is tied (ties = n^3 - n); rounding may leave a tiny
     * negative instead of 0. */
    r.sigma = var > 0 ? sqrt(var) : 0;
    if (r.sigma > 0) {
        r.z = (r.u - r.mu) / r.sigma;
        r.p_greater = gsl_cdf_ugaussian_Q((r.u - r.mu - 0.5) / r.sigma);
        r.p_less = gsl_cdf_ugaussian_P((r.u - r.mu + 0.5) / r.sigma);
    } else {
        r.z = 0;
        r.p_greater = r.p_less = 1;
    }
    *out = r;
    return 0;
}

double ps_median(const double *v, size_t n)
{
    if (n == 0)
        return NAN;
    double *s = malloc(n * sizeof *s);
    if (!s)
        return NAN;
    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    free(s);
    return m;
}
