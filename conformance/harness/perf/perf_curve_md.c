/* perf_curve_md.c — the cost-curve part of `attnconf perf-report` (perf_curve.h): fits, verdicts
 * and cliffs as Markdown. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "perf_curve.h"
#include "perf_md.h"
#include "common/md.h"

#define ARROW "\xE2\x86\x92"
#define ELLIPSIS "\xE2\x80\xA6"
#define PLUSMINUS "\xC2\xB1"
#define MINUS "\xE2\x88\x92"

/* The distinct dtypes of curve c's shapes in be, in the order of the shapes; returns how many
 * (out has room for be->n). */
static size_t curve_dtypes(const pj_backend *be, const pj_curve *c, const char **out)
{
    size_t n = 0;
    for (size_t i = 0; i < be->n; i++) {
        if (strcmp(be->shapes[i].curve, c->name) != 0)
            continue;
        size_t k = 0;
        while (k < n && strcmp(out[k], be->shapes[i].dtype) != 0)
            k++;
        if (k == n)
            out[n++] = be->shapes[i].dtype;
    }
    return n;
}

/* One (curve, backend, dtype): its points, fits and cliffs. */
typedef struct row {
    const pj_curve *c;
    const pj_backend *be;
    const char *dtype;
    pc_point *p;
    size_t n, untimed;
    int fitted, work_fitted;
    pc_fit fit, work;
    size_t cliffs;
    int off; /* |k - expected| > tolerance */
} row;

/* A signed difference with a real minus sign ("+0.31", "−0.29"). */
static void put_signed(FILE *f, double d)
{
    fputs(d < 0 ? MINUS : "+", f);
    fprintf(f, "%.2f", fabs(d));
}

static void write_row(FILE *f, const row *r)
{
    fputs("| ", f);
    md_code_cell(f, r->c->name);
    fputs(" | ", f);
    md_code_cell(f, r->be->name);
    fprintf(f, " | %s | %s ", r->dtype, pj_curve_x_label(r->c->x));
    if (r->n > 1)
        fprintf(f, "%.0f " ELLIPSIS " %.0f (%zu)", r->p[0].x, r->p[r->n - 1].x, r->n);
    else if (r->n)
        fprintf(f, "%.0f (1)", r->p[0].x);
    else
        fputs("none timed", f);
    fprintf(f, " | %g | ", r->c->expect);
    if (r->work_fitted)
        fprintf(f, "%.2f", r->work.k);
    else
        fputs(EM_DASH, f);
    fputs(" | ", f);
    if (r->fitted) {
        fprintf(f, "%.2f", r->fit.k);
        if (isfinite(r->fit.se_k))
            fprintf(f, " " PLUSMINUS " %.2f", r->fit.se_k);
    } else {
        fputs(EM_DASH, f);
    }
    fputs(" | ", f);
    if (!r->fitted) {
        fputs("too few sizes to fit", f);
    } else if (!r->off && !r->cliffs) {
        fputs("as expected", f);
    } else {
        fputs("**", f);
        if (r->off) {
            fputs("exponent off by ", f);
            put_signed(f, r->fit.k - r->c->expect);
        }
        if (r->cliffs)
            fprintf(f, "%s%zu cliff%s", r->off ? "; " : "", r->cliffs, r->cliffs == 1 ? "" : "s");
        fputs("**", f);
    }
    if (r->untimed)
        fprintf(f, "; %zu size%s not timed", r->untimed, r->untimed == 1 ? "" : "s");
    fputs(" |\n", f);
}

static void write_cliffs(FILE *f, const row *r, double drop)
{
    for (size_t i = 1; i < r->n; i++) {
        const pc_point *a = &r->p[i - 1], *b = &r->p[i];
        if (!pc_point_cliff(a, b, drop))
            continue;
        const char *unit = a->sh->bound == PJ_MEMORY ? "GB/s" : "GFLOP/s";
        fputs("- ", f);
        md_code(f, r->c->name);
        fputc(' ', f);
        md_code(f, r->be->name);
        fprintf(f, " %s: %s %.0f " ARROW " %.0f: ", r->dtype, pj_curve_x_label(r->c->x), a->x,
                b->x);
        pm_sig3(f, a->rate);
        fputs(" " ARROW " ", f);
        pm_sig3(f, b->rate);
        fprintf(f, " %s (" MINUS "%.1f %%)", unit, 100.0 * (1.0 - b->rate / a->rate));
        if (a->share > 0 && b->share > 0)
            fprintf(f, ", %.1f " ARROW " %.1f %% of the read bandwidth beside (" MINUS "%.1f %%)",
                    100.0 * a->share, 100.0 * b->share, 100.0 * (1.0 - b->share / a->share));
        else if (a->share > 0 || b->share > 0)
            fprintf(f, " (the read bandwidth beside at %s %.0f only: the rate alone judged)",
                    pj_curve_x_label(r->c->x), a->share > 0 ? a->x : b->x);
        /* A rate that is back at the next size was a dip, not a change of regime: on a shared
         * machine, most often another process (perf/README.md); say so, the rule stays. */
        if (i + 1 < r->n && !pc_point_cliff(a, &r->p[i + 1], drop))
            fprintf(f, ", back at %s %.0f: an isolated dip, rerun before believing it",
                    pj_curve_x_label(r->c->x), r->p[i + 1].x);
        fputc('\n', f);
    }
}

void pc_write_curves(FILE *f, const pj_curve *curves, size_t ncurves, const pj_backend *const *bes,
                     size_t nbes, double drop, double tolerance)
{
    size_t nrows = 0, maxn = 1;
    for (size_t b = 0; b < nbes; b++) {
        nrows += bes[b]->n;
        maxn = bes[b]->n > maxn ? bes[b]->n : maxn;
    }
    row *rows = calloc(nrows ? nrows : 1, sizeof *rows);
    const char **dts = calloc(maxn, sizeof *dts);
    pc_point *pts = calloc(nrows ? nrows : 1, sizeof *pts);
    double *x = calloc(maxn, sizeof *x), *y = calloc(maxn, sizeof *y);
    if (!rows || !dts || !pts || !x || !y) {
        fputs("\n(out of memory: the cost curves are not shown)\n", f);
        goto done;
    }
    size_t nr = 0, used = 0, off = 0, cliffs = 0, fitted = 0;
    for (size_t c = 0; c < ncurves; c++)
        for (size_t b = 0; b < nbes; b++) {
            const size_t nd = curve_dtypes(bes[b], &curves[c], dts);
            for (size_t d = 0; d < nd; d++) {
                row *r = &rows[nr++];
                r->c = &curves[c];
                r->be = bes[b];
                r->dtype = dts[d];
                r->p = pts + used;
                r->n = pc_points(bes[b], &curves[c], dts[d], r->p, &r->untimed);
                used += r->n;
                for (size_t i = 0; i < r->n; i++) {
                    x[i] = r->p[i].x;
                    y[i] = r->p[i].t;
                }
                r->fitted = pc_fit_power(x, y, r->n, &r->fit) == 0;
                for (size_t i = 0; i < r->n; i++)
                    y[i] = r->p[i].work;
                r->work_fitted = pc_fit_power(x, y, r->n, &r->work) == 0;
                for (size_t i = 1; i < r->n; i++)
                    r->cliffs += (size_t)pc_point_cliff(&r->p[i - 1], &r->p[i], drop);
                r->off = r->fitted && fabs(r->fit.k - r->c->expect) > tolerance;
                off += (size_t)r->off;
                cliffs += r->cliffs;
                fitted += (size_t)r->fitted;
            }
        }
    fprintf(f,
            "\nEach curve is one problem timed at increasing sizes; its median times are fitted "
            "as c\xC2\xB7size^k by least squares on the logarithms.  **Expected k** is "
            "the exponent the suite states for the work (2 for causal prefill, 1 for decode, "
            "for a window much shorter than L and for a batch sweep), **work k** the same fit "
            "to the counted FLOPs (or bytes of K and V) of the timed sizes, **fitted k** the "
            "times' exponent " PLUSMINUS " its standard error (the scatter about the line).  "
            "Flagged: a fitted k more than %g from the expected one, and a **cliff**, a size "
            "where the rate (GFLOP/s, or GB/s for memory-bound curves) drops by more than %g %% "
            "from the size before (and, where both sizes have the read bandwidth measured beside "
            "them, so does the rate's share of it: a swing of the machine's bandwidth is no "
            "cliff).\n\n",
            tolerance, 100.0 * drop);
    if (!fitted && !cliffs)
        fputs("**Nothing fitted**: no curve has two sizes timed.\n", f);
    else if (!off && !cliffs)
        fprintf(f, "**Nothing flagged**: %zu fit%s, every exponent as expected, no cliff.\n",
                fitted, fitted == 1 ? "" : "s");
    else
        fprintf(f, "**Flagged: %zu exponent%s off, %zu cliff%s** (%zu fit%s).\n", off,
                off == 1 ? "" : "s", cliffs, cliffs == 1 ? "" : "s", fitted,
                fitted == 1 ? "" : "s");
    fputs("\n| Curve | Backend | dtype | Sizes | Expected k | Work k | Fitted k | Verdict |\n"
          "| --- | --- | --- | --- | ---: | ---: | ---: | --- |\n",
          f);
    for (size_t i = 0; i < nr; i++)
        write_row(f, &rows[i]);
    if (cliffs) {
        fputs("\nCliffs (the rate from one size to the next):\n\n", f);
        for (size_t i = 0; i < nr; i++)
            write_cliffs(f, &rows[i], drop);
    }
done:
    free(rows);
    free(dts);
    free(pts);
    free(x);
    free(y);
}
