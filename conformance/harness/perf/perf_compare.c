/* perf_compare.c — `attnconf perf-compare BASE.json NEW.json`: did NEW get slower than BASE?
 *
 *   attnconf perf-compare BASE.json NEW.json [--threshold 0.05] [--alpha 0.01] [--out FILE.md]
 *
 * Both files are bench results of the same suite (perf_json.h).  Shapes are matched by
 * (backend name, shape id).  For a shape with status OK in both runs:
 *   ratio = median(NEW times) / median(BASE times)
 *   p     = one-sided Mann–Whitney U test, H1: NEW's times tend to be larger (perf_stats.h:
 *           tie correction, normal approximation with continuity correction, GSL's CDF)
 *   REGRESSION iff ratio > 1 + threshold AND p < alpha.
 * A side with fewer than PS_MIN_REPS repetitions is reported as "too few repetitions" and never
 * flagged (the normal approximation is not trusted there).  "improved" is the mirror image
 * (ratio < 1 / (1 + threshold) and the other tail's p < alpha); it never changes the exit status.
 *
 * Statuses: with rank OK = SKIPPED = 0, NOT_SUPPORTED = 1, ERROR = 2, INCORRECT = 3, a shape
 * regressed when NEW is ERROR or INCORRECT with a higher rank than BASE (OK -> INCORRECT,
 * NOT_SUPPORTED -> ERROR, ERROR -> INCORRECT), or went from OK to NOT_SUPPORTED (a lost
 * capability).  Any other change involving SKIPPED (a --max-gflop setting) is not compared;
 * the rest (e.g. ERROR -> OK) is reported, not flagged.  Shapes or backends present in one file
 * only are listed and never flagged; a shape whose sizes, dtype or mask parameters changed
 * between the runs (an edited suite) is not compared.
 *
 * Different machines (perf_json.h: pj_same_machine) are compared through each run's limit: every
 * time is multiplied by its run's fma_gflops (compute-bound shapes) or mem_read_gbs (memory-bound
 * ones) before the ratio and the test, so a run on a machine twice as fast with twice the limits
 * compares as unchanged; the report says so.  The tables show the raw medians either way.
 *
 * Output: Markdown (stdout, or --out FILE with the summary line on stdout): the summary line,
 * the two runs and the rule, then one table per backend.  Exit 1 when anything regressed, else 0;
 * 2 for a usage error or an unreadable, invalid or mismatched input file: another suite, or no
 * shape in common with BASE (nothing compared must not pass a gate), with no report written.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf/cmd.h"
#include "perf_json.h"
#include "perf_md.h"
#include "perf_stats.h"
#include "common/cli.h"
#include "common/md.h"
#include "common/outfile.h"

#define PROG "attnconf perf-compare"
#define ARROW " \xE2\x86\x92 "

static void usage(FILE *f)
{
    fputs(
        "usage: attnconf perf-compare BASE.json NEW.json [--threshold T] [--alpha A]\n"
        "                             [--out FILE.md]\n"
        "Compare two `attnconf bench` result files of one suite, shape by shape: a shape regressed\n"
        "when NEW's median time is more than T above BASE's (default 0.05: 5 %) and a one-sided\n"
        "Mann-Whitney U test over the repetitions gives p < A (default 0.01), or when its status\n"
        "got worse (e.g. OK -> INCORRECT).  Runs on different machines are compared as fractions\n"
        "of each run's measured limits.  Writes a Markdown report (stdout unless --out).\n"
        "exit status: 0 no regression, 1 a regression, 2 usage or bad input (including runs of\n"
        "another suite, or with no backend and shape in common: nothing compared)\n",
        f);
}

/* Where a shape stands; K_REGRESSION is the only kind that sets exit status 1. */
typedef enum kind {
    K_REGRESSION,
    K_IMPROVED,
    K_UNCHANGED,    /* compared, nothing significant over the threshold */
    K_TOO_FEW,      /* compared medians only: fewer than PS_MIN_REPS repetitions */
    K_STATUS,       /* a status change that is not a regression, or the same non-OK status */
    K_NOT_COMPARED, /* SKIPPED on a side, or the shape changed */
    K_ONLY_BASE,
    K_ONLY_NEW
} kind;

typedef struct row {
    const pj_shape *b, *n; /* NULL on the side that lacks the shape */
    double ratio, p;       /* NAN when not computed */
    kind k;
    char verdict[192];
} row;

static int status_rank(pj_status s)
{
    switch (s) {
    case PJ_NOT_SUPPORTED: return 1;
    case PJ_ERROR: return 2;
    case PJ_INCORRECT: return 3;
    default: return 0;
    }
}

typedef struct params {
    double threshold, alpha;
    int same_machine;
    const pj_machine *mb, *mn;
} params;

/* Judge one shape present in both runs. */
static void judge(const params *P, row *r)
{
    const pj_shape *b = r->b, *n = r->n;
    r->ratio = r->p = NAN;
    if (!pj_same_geometry(b, n)) {
        r->k = K_NOT_COMPARED;
        snprintf(r->verdict, sizeof r->verdict, "shape changed between the runs: not compared");
        return;
    }
    if (b->status != PJ_OK || n->status != PJ_OK) {
        const char *sb = pj_status_name(b->status), *sn = pj_status_name(n->status);
        int bad_new = n->status == PJ_ERROR || n->status == PJ_INCORRECT;
        if ((bad_new && status_rank(n->status) > status_rank(b->status)) ||
            (b->status == PJ_OK && n->status == PJ_NOT_SUPPORTED)) {
            r->k = K_REGRESSION;
            snprintf(r->verdict, sizeof r->verdict, "**REGRESSION**: status %s" ARROW "%s", sb, sn);
        } else if (b->status == n->status) {
            r->k = K_STATUS;
            snprintf(r->verdict, sizeof r->verdict, "%s in both", sb);
        } else if (b->status == PJ_SKIPPED || n->status == PJ_SKIPPED) {
            r->k = K_NOT_COMPARED;
            snprintf(r->verdict, sizeof r->verdict, "not compared: status %s" ARROW "%s", sb, sn);
        } else {
            r->k = K_STATUS;
            snprintf(r->verdict, sizeof r->verdict, "status %s" ARROW "%s", sb, sn);
        }
        return;
    }
    double fb = P->same_machine ? 1 : pj_limit(P->mb, b->bound);
    double fn = P->same_machine ? 1 : pj_limit(P->mn, n->bound);
    double mb = ps_median(b->times, b->reps) * fb, mn = ps_median(n->times, n->reps) * fn;
    if (!(mb > 0)) { /* a no-op under the clock's resolution: no ratio to speak of */
        r->k = K_NOT_COMPARED;
        snprintf(r->verdict, sizeof r->verdict, "not compared: BASE's median time is 0");
        return;
    }
    r->ratio = mn / mb;
    if (b->reps < PS_MIN_REPS || n->reps < PS_MIN_REPS) {
        r->k = K_TOO_FEW;
        snprintf(r->verdict, sizeof r->verdict,
                 "too few repetitions (%zu and %zu; the test "
                 "needs %d per side)",
                 b->reps, n->reps, PS_MIN_REPS);
        return;
    }
    double *x = malloc((b->reps + n->reps) * sizeof *x);
    ps_mwu t;
    int ok = x != NULL;
    if (ok) {
        for (size_t i = 0; i < b->reps; i++)
            x[i] = b->times[i] * fb;
        for (size_t i = 0; i < n->reps; i++)
            x[b->reps + i] = n->times[i] * fn;
        ok = ps_mann_whitney(x, b->reps, x + b->reps, n->reps, &t) == 0;
    }
    free(x);
    if (!ok) {
        r->k = K_NOT_COMPARED;
        snprintf(r->verdict, sizeof r->verdict, "not compared: out of memory");
        return;
    }
    r->p = t.p_greater;
    int slower = r->ratio > 1 + P->threshold, significant = t.p_greater < P->alpha;
    if (slower && significant) {
        r->k = K_REGRESSION;
        snprintf(r->verdict, sizeof r->verdict, "**REGRESSION**");
    } else if (r->ratio < 1 / (1 + P->threshold) && t.p_less < P->alpha) {
        r->k = K_IMPROVED;
        snprintf(r->verdict, sizeof r->verdict, "improved (p faster %.1e)", t.p_less);
    } else {
        r->k = K_UNCHANGED;
        snprintf(r->verdict, sizeof r->verdict, "%s",
                 slower        ? "slower, not significant"
                 : significant ? "slower, within the threshold"
                               : "unchanged");
    }
}

/* The rows of one backend: BASE's shapes in its order, then those only NEW has. */
static row *backend_rows(const params *P, const pj_backend *bb, const pj_backend *bn, size_t *nr)
{
    size_t cap = (bb ? bb->n : 0) + (bn ? bn->n : 0);
    row *rows = calloc(cap ? cap : 1, sizeof *rows);
    if (!rows)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; bb && i < bb->n; i++) {
        row *r = &rows[k++];
        r->b = &bb->shapes[i];
        r->n = pj_find_shape(bn, r->b->id);
        if (r->n) {
            judge(P, r);
        } else {
            r->ratio = r->p = NAN;
            r->k = K_ONLY_BASE;
            snprintf(r->verdict, sizeof r->verdict, "only in BASE");
        }
    }
    for (size_t i = 0; bn && i < bn->n; i++) {
        if (pj_find_shape(bb, bn->shapes[i].id))
            continue;
        row *r = &rows[k++];
        r->n = &bn->shapes[i];
        r->ratio = r->p = NAN;
        r->k = K_ONLY_NEW;
        snprintf(r->verdict, sizeof r->verdict, "only in NEW");
    }
    *nr = k;
    return rows;
}

/* A median cell: the raw median time, or the status when the shape was not timed OK. */
static void median_cell(FILE *f, const pj_shape *s)
{
    if (!s)
        fputs(EM_DASH, f);
    else if (s->status != PJ_OK)
        fputs(pj_status_name(s->status), f);
    else
        pm_time(f, ps_median(s->times, s->reps));
}

/* The "Different machines" line: what differed, and how times are compared then. */
static void different_machines(FILE *f, const pj_machine *b, const pj_machine *n)
{
    fputs("- **Different machines** (", f);
    const char *sep = "";
    if (strcmp(b->cpu_model, n->cpu_model) != 0) {
        fprintf(f, "CPU model \"%s\" against \"%s\"", b->cpu_model, n->cpu_model);
        sep = "; ";
    }
    if (!pj_limits_close(b->fma_gflops, n->fma_gflops)) {
        fprintf(f, "%sFMA peak %.1f against %.1f GFLOP/s", sep, b->fma_gflops, n->fma_gflops);
        sep = "; ";
    }
    if (!pj_limits_close(b->mem_read_gbs, n->mem_read_gbs)) {
        fprintf(f, "%smemory read %.1f against %.1f GB/s", sep, b->mem_read_gbs, n->mem_read_gbs);
        sep = "; ";
    }
    if (b->huge_pages >= 0 && n->huge_pages >= 0 && b->huge_pages != n->huge_pages)
        fprintf(f, "%sthe pages", sep);
    fputs("): each time is scaled by its own run's limit before comparing (time \xC3\x97 FMA "
          "GFLOP/s for compute-bound shapes, time \xC3\x97 GB/s of memory read for "
          "memory-bound ones), so ratios and p compare fractions of each machine's limit; the "
          "medians shown are raw times.",
          f);
    /* One CPU whose limits differ: most often measured under different loads (perf/README.md,
     * "Noise on shared 2-core virtual machines"). */
    if (!strcmp(b->cpu_model, n->cpu_model) && !(pj_limits_close(b->fma_gflops, n->fma_gflops) &&
                                                 pj_limits_close(b->mem_read_gbs, n->mem_read_gbs)))
        fputs("  The same CPU model with limits more than 10 % apart: if both ran on one machine, "
              "its limits were measured under different loads; give both runs the same limits "
              "(`bench --limits FILE`, `perf/run --limits FILE`) to compare raw times.",
              f);
    fputc('\n', f);
}

static void run_line(FILE *f, const char *side, const pj_file *pf)
{
    fprintf(f, "- %s: ", side);
    md_code(f, pf->path);
    fputs(" (label ", f);
    md_code(f, pf->label);
    fputs(", started ", f);
    md_text(f, pf->started);
    fputs("): ", f);
    pm_machine(f, &pf->machine);
    fputs("\n", f);
}

typedef struct counts {
    size_t n[K_ONLY_NEW + 1];
    size_t status_regressions;
} counts;

/* " VERSION `OPTIONS`" of one run of a backend. */
static void version_options(FILE *f, const pj_backend *be)
{
    fputc(' ', f);
    md_text(f, be->version);
    if (be->options[0]) {
        fputc(' ', f);
        md_code(f, be->options);
    }
}

/* Shapes of a backend found in one file only are listed up to this many, then counted. */
#define MAX_ONLY_LISTED 10

static void write_backend(FILE *f, const pj_backend *bb, const pj_backend *bn, const row *rows,
                          size_t nr)
{
    const pj_backend *any = bb ? bb : bn;
    fputs("\n## ", f);
    md_text(f, any->name);
    if (bb && bn && (strcmp(bb->version, bn->version) || strcmp(bb->options, bn->options))) {
        fputs(" (BASE", f);
        version_options(f, bb);
        fputs(", NEW", f);
        version_options(f, bn);
        fputs(")", f);
    } else {
        version_options(f, any);
    }
    if (!bb || !bn) {
        /* Nothing to compare: a count, not a table of dashes (a filtered run against a whole
         * baseline leaves hundreds). */
        fprintf(f, " " EM_DASH " only in %s: %zu shape%s, not listed.\n", bb ? "BASE" : "NEW", nr,
                nr == 1 ? "" : "s");
        return;
    }
    size_t only[2] = {0, 0};
    for (size_t i = 0; i < nr; i++)
        if (rows[i].k == K_ONLY_BASE || rows[i].k == K_ONLY_NEW)
            only[rows[i].k == K_ONLY_NEW]++;
    const int list_only = only[0] + only[1] <= MAX_ONLY_LISTED;
    if (list_only || nr > only[0] + only[1])
        fputs("\n\n| Shape | BASE median | NEW median | Ratio | p (slower) | Verdict |\n"
              "| --- | ---: | ---: | ---: | ---: | --- |\n",
              f);
    else
        fputs("\n", f);
    for (size_t i = 0; i < nr; i++) {
        const row *r = &rows[i];
        if (!list_only && (r->k == K_ONLY_BASE || r->k == K_ONLY_NEW))
            continue;
        fputs("| ", f);
        md_code_cell(f, (r->b ? r->b : r->n)->id);
        fputs(" | ", f);
        median_cell(f, r->b);
        fputs(" | ", f);
        median_cell(f, r->n);
        fputs(" | ", f);
        if (isfinite(r->ratio))
            fprintf(f, "%.3f", r->ratio);
        else
            fputs(EM_DASH, f);
        fputs(" | ", f);
        pm_p(f, r->p);
        fprintf(f, " | %s |\n", r->verdict);
    }
    if (!list_only)
        fprintf(f, "\nNot listed: %zu shape%s only in BASE, %zu only in NEW.\n", only[0],
                only[0] == 1 ? "" : "s", only[1]);
}

/* n_common: the shapes in both runs, judged whatever the verdict; only[2]: those in BASE only,
 * in NEW only. */
static int write_report(FILE *f, const params *P, const pj_file *fb, const pj_file *fn,
                        size_t *n_regressions, size_t *n_common, size_t only[2])
{
    /* Backends: BASE's in order, then those only in NEW. */
    size_t nbk = fb->nb + fn->nb, k = 0;
    const pj_backend **pb = calloc(nbk ? nbk : 1, sizeof *pb),
                     **pn = calloc(nbk ? nbk : 1, sizeof *pn);
    row **rows = calloc(nbk ? nbk : 1, sizeof *rows);
    size_t *nr = calloc(nbk ? nbk : 1, sizeof *nr);
    int rc = 0;
    if (!pb || !pn || !rows || !nr) {
        rc = -1;
        goto done;
    }
    for (size_t i = 0; i < fb->nb; i++, k++) {
        pb[k] = &fb->backends[i];
        pn[k] = pj_find_backend(fn, pb[k]->name);
    }
    for (size_t i = 0; i < fn->nb; i++)
        if (!pj_find_backend(fb, fn->backends[i].name))
            pn[k++] = &fn->backends[i];
    nbk = k;
    counts c;
    memset(&c, 0, sizeof c);
    for (size_t i = 0; i < nbk; i++) {
        if (!(rows[i] = backend_rows(P, pb[i], pn[i], &nr[i]))) {
            rc = -1;
            goto done;
        }
        for (size_t j = 0; j < nr[i]; j++) {
            c.n[rows[i][j].k]++;
            c.status_regressions += rows[i][j].k == K_REGRESSION && isnan(rows[i][j].ratio);
        }
    }
    size_t reg = c.n[K_REGRESSION];
    size_t compared = c.n[K_REGRESSION] - c.status_regressions + c.n[K_IMPROVED] + c.n[K_UNCHANGED];
    *n_regressions = reg;
    only[0] = c.n[K_ONLY_BASE];
    only[1] = c.n[K_ONLY_NEW];
    *n_common = 0;
    for (size_t i = 0; i < nbk; i++)
        *n_common += nr[i];
    *n_common -= only[0] + only[1];
    if (reg)
        fprintf(f, "**perf-compare: %zu regression%s**", reg, reg == 1 ? "" : "s");
    else
        fputs("**perf-compare: no regression**", f);
    fprintf(f, " (suite ");
    md_text(f, fb->suite);
    fprintf(f,
            "): %zu shape%s compared by the test, %zu improved, %zu with too few repetitions, "
            "%zu status regression%s, %zu not compared, %zu only in BASE, %zu only in NEW.\n\n",
            compared, compared == 1 ? "" : "s", c.n[K_IMPROVED], c.n[K_TOO_FEW],
            c.status_regressions, c.status_regressions == 1 ? "" : "s",
            c.n[K_NOT_COMPARED] + c.n[K_STATUS], c.n[K_ONLY_BASE], c.n[K_ONLY_NEW]);
    run_line(f, "BASE", fb);
    run_line(f, "NEW", fn);
    fprintf(f,
            "- Rule: a shape regressed when NEW's median time is more than %g %% above BASE's "
            "(ratio > %g) **and** a one-sided Mann\xE2\x80\x93Whitney U test over the "
            "repetitions says NEW is slower with p < %g (normal approximation with tie and "
            "continuity corrections; used from %d repetitions per side, fewer is \"too few "
            "repetitions\" and never flagged), or when its status got worse (e.g. OK" ARROW
            "INCORRECT).\n",
            P->threshold * 100, 1 + P->threshold, P->alpha, PS_MIN_REPS);
    if (P->same_machine)
        fputs("- Same machine (CPU model, limits within 10 % and pages): raw times compared.\n", f);
    else
        different_machines(f, P->mb, P->mn);
    if (P->mb->huge_pages >= 0 && P->mn->huge_pages >= 0 && P->mb->huge_pages != P->mn->huge_pages)
        fprintf(f,
                "- **Pages differ**: BASE ran %s huge pages, NEW %s (`bench --huge-pages`): "
                "memory-bound shapes are not like for like.\n",
                P->mb->huge_pages ? "with" : "without", P->mn->huge_pages ? "with" : "without");
    for (size_t i = 0; i < nbk; i++)
        write_backend(f, pb[i], pn[i], rows[i], nr[i]);
done:
    for (size_t i = 0; rows && i < nbk; i++)
        free(rows[i]);
    free(rows);
    free(nr);
    free(pb);
    free(pn);
    return rc;
}

int cmd_perf_compare(const char *argv0, int argc, char **argv)
{
    (void)argv0;
    const char *files[2] = {NULL, NULL}, *out = NULL;
    size_t nfiles = 0;
    params P = {0.05, 0.01, 0, NULL, NULL};
    const cli_opt opts[] = {
        {.name = "--threshold",
         .kind = CLI_NUMBER,
         .dest = &P.threshold,
         .lo = 0,
         .hi = 10,
         .hi_open = 1},
        {.name = "--alpha",
         .kind = CLI_NUMBER,
         .dest = &P.alpha,
         .lo = 1e-12,
         .hi = 1,
         .hi_open = 1},
        {.name = "--out", .kind = CLI_STRING, .dest = &out},
    };
    const cli_cmd c = {.name = "perf-compare",
                       .usage = usage,
                       .opts = opts,
                       .nopts = CLI_COUNT_OF(opts),
                       .pos = files,
                       .npos = &nfiles,
                       .maxpos = 2};
    int rc = cli_parse(&c, argc, argv);
    if (rc)
        return rc == CLI_HELP ? CLI_EXIT_OK : rc;
    if (nfiles != 2)
        return cli_usage_error(&c, "expected two files, BASE.json and NEW.json", NULL);
    /* Created before the inputs are read: a refused FILE costs nothing. */
    static of_file of; /* two paths: not on the stack */
    if (out && pm_open_out(PROG, out, &of) != 0)
        return CLI_EXIT_USAGE;

    pj_file fb, fn;
    rc = CLI_EXIT_USAGE;
    int lb = pj_load(PROG, files[0], &fb);
    int ln = lb ? -1 : pj_load(PROG, files[1], &fn);
    if (lb || ln)
        goto done;
    if (strcmp(fb.suite, fn.suite)) {
        fprintf(stderr,
                "%s: %s: suite \"%s\", but %s is suite \"%s\": compare runs of one "
                "suite\n",
                PROG, files[1], fn.suite, files[0], fb.suite);
        goto done;
    }
    P.same_machine = pj_same_machine(&fb.machine, &fn.machine);
    P.mb = &fb.machine;
    P.mn = &fn.machine;
    char *buf = NULL;
    size_t len = 0, reg = 0, common = 0, only[2] = {0, 0};
    FILE *m = open_memstream(&buf, &len);
    int bad = !m;
    if (m) {
        bad |= write_report(m, &P, &fb, &fn, &reg, &common, only) != 0;
        bad |= ferror(m) != 0;
        bad |= fclose(m) != 0;
    }
    if (bad) {
        fprintf(stderr, "%s: out of memory\n", PROG);
    } else if (!common) {
        /* One-sided shapes are never flagged, so two runs with none in common would pass any
         * gate having checked nothing (an empty or filtered-out NEW, a renamed suite). */
        fprintf(stderr,
                "%s: %s: no (backend, shape) in common with %s (%zu shape%s only in BASE, %zu "
                "only in NEW): nothing to compare; compare runs of the same backends and shapes\n",
                PROG, files[1], files[0], only[0], only[0] == 1 ? "" : "s", only[1]);
    } else if ((rc = pm_write_out(PROG, out ? &of : NULL, buf, len)) == 0) {
        if (out) /* the summary line (the report's first line), and where the rest went */
            printf("%.*s (report in %s)\n", (int)(strchr(buf, '\n') - buf), buf, out);
        rc = reg ? CLI_EXIT_FAIL : CLI_EXIT_OK;
    }
    free(buf);
done:
    if (out)
        of_discard(&of); /* nothing once committed */
    if (!lb)
        pj_free(&fn);
    pj_free(&fb);
    return rc;
}
