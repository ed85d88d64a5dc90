/* report.c — `attnconf report`: result files (the JSON of output.c) -> REPORT.md.
 *
 *   attnconf report [--out FILE] [--title TITLE] [--command CMD] [--chart PATH] RESULTS.json...
 *   attnconf report --diff OLD.json NEW.json [--out FILE]          (report_diff.c)
 *
 * The matrix has the case families as rows and the real backends as columns (11 to a table:
 * more take several tables, each with the family column); --chart links a picture under it
 * (tools/pass-chart: the same numbers as a colour map).  No table is wider than 12 columns.
 *
 * Several files may name the same backend (e.g. runs with different filters); their results
 * are merged, and a case id seen twice for one backend is an error, and so are files of one
 * backend with different versions or options.  The shards of one sharded run (`run --shard
 * K/N`, "shard" in the results) merge into the unsharded run's report, byte for byte: the
 * report counts runs, not files.  Refused, naming the files: a shard given twice or a case in
 * two shards (overlapping), shards of another number or of another selection (count and digest
 * of the case ids, filter), shards mixed with an unsharded run of the backend, a missing shard
 * (named: "shard 1/3 missing"), and shards whose cases are not the selection they record.  Backends whose name starts
 * with "mutant_" are test-only backends with one deliberate bug: they get their own table, and
 * only per-family counts of the cases that caught them.
 *
 * "Spec clauses" groups the cases by the SPEC.md clause their rule ids cite: a rule id
 * "clauseN.<name>" (N in 1..SPEC_CLAUSES, no leading zero, a non-empty name) belongs to clause N, any
 * other id to the row "other".  Per clause: its distinct rule ids, the number of distinct case
 * ids citing it over all files, passed/run of those cases on each non-mutant backend, and the
 * mutants that FAILed, had an INCORRECT_DTYPE or ERRORed on at least one of them.
 *
 * The report is a pure function of the results, the options and the current directory: rows,
 * columns and failures are sorted bytewise, and nothing machine- or time-dependent is printed
 * (no timings, no backend paths, no cases_dir).  Rerun commands and messages are printed as
 * the harness wrote them, except that an absolute path under the current directory is shown
 * relative to it ("./build/..."), so a report generated from the repository root is the same on
 * every checkout.  The embedded command is --command when given, else `attnconf report` with
 * the arguments as typed (give relative paths for a portable report).
 *
 * Reading is strict: a missing or wrong "attnconf_results" version, a missing field or one of
 * the wrong type (e.g. "rules" not an array of strings), an unknown status or a summary that
 * does not match the results is an error naming the file and the field (exit 1).  Unknown
 * extra keys are ignored.  A partial file ("complete": false: the FILE.partial.json sidecar of
 * an interrupted `run --out FILE`) is refused the same way ("results incomplete"); a file
 * without "complete" (from before it existed) is taken as complete.
 */
#define _POSIX_C_SOURCE 200809L /* getcwd, open_memstream */

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "report_internal.h"

#define DEFAULT_TITLE "attnconf conformance report"

/* ---- the report --------------------------------------------------------------------------- */

typedef struct tally {
    size_t by_status[HR_STATUS_COUNT];
    size_t total, ran, passed, bad, ns;
    size_t unx; /* UNEXPRESSIBLE: like ns, neither passed nor failed, and counted apart */
} tally;

static void tally_add(tally *t, const size_t *by_status)
{
    for (int s = 0; s < HR_STATUS_COUNT; s++)
        t->by_status[s] += by_status[s];
    const size_t *c = t->by_status;
    t->ns = c[HR_NOT_SUPPORTED];
    t->bad = c[HR_FAIL] + c[HR_INCORRECT_DTYPE] + c[HR_ERROR] + c[HR_CRASH] + c[HR_TIMEOUT] +
             c[HR_CASE_ERROR]; /* a case that did not run is no pass, whoever's fault */
    t->passed = c[HR_PASS] + c[HR_EXPECTED_ERROR];
    t->unx = c[HR_UNEXPRESSIBLE];
    t->ran = t->passed + t->bad;
    t->total = t->ran + t->ns + t->unx;
}

static tally backend_tally(const rp_data *d, size_t b)
{
    tally t;
    memset(&t, 0, sizeof t);
    for (size_t f = 0; f < d->nf; f++)
        tally_add(&t, rp_cell_counts(d, b, f));
    return t;
}

/* "12/12 pass", "3 fail / 9", "not supported", "—"; ", N not supported" and ", N
 * unexpressible" when mixed. */
static void put_cell(FILE *f, const tally *t)
{
    if (t->total == 0) {
        fputs(EM_DASH, f);
        return;
    }
    if (t->ran == 0 && t->unx == 0) {
        fputs("not supported", f);
        return;
    }
    const char *sep = ", ";
    if (t->ran == 0)
        sep = "";
    else if (t->bad == 0)
        fprintf(f, "%zu/%zu pass", t->passed, t->ran);
    else
        fprintf(f, "%zu fail / %zu", t->bad, t->ran);
    if (t->unx)
        fprintf(f, "%s%zu unexpressible", sep, t->unx);
    if (t->ns)
        fprintf(f, ", %zu not supported", t->ns);
}

/* The mutant table's proof columns (every mutant caught by at least three cases in at least two
 * dtypes): the number of cases that caught mutant b, and the distinct float dtypes of those
 * cases, sorted ("2: f16, f32"); mask-builder cases ("bool") and results without a dtype count
 * as cases only. */
/* " `id` |": the catching case with the fewest elements (ties and unknown sizes by id), the one
 * to read first; an em dash when none. */
static void put_smallest(FILE *f, const rp_backend *be)
{
    const rp_case *best = NULL;
    for (size_t k = 0; k < be->n; k++) {
        const rp_case *c = &be->cases[k];
        if (!hr_status_is_bad(c->status))
            continue;
        const int64_t n = c->elements > 0 ? c->elements : INT64_MAX;
        const int64_t m = best ? (best->elements > 0 ? best->elements : INT64_MAX) : 0;
        if (!best || n < m || (n == m && strcmp(c->id, best->id) < 0))
            best = c;
    }
    fputc(' ', f);
    if (best)
        md_code_cell(f, best->id);
    else
        fputs(EM_DASH, f);
    fputs(" |", f);
}

static void put_catching(FILE *f, const rp_data *d, size_t b)
{
    const rp_backend *be = &d->backends[b];
    static const char *const names[] = {"bf16", "f16", "f32"};
    int seen[3] = {0, 0, 0}, nd = 0;
    size_t caught = 0;
    for (size_t k = 0; k < be->n; k++) {
        if (!hr_status_is_bad(be->cases[k].status))
            continue;
        caught++;
        for (int t = 0; t < 3; t++)
            if (!strcmp(be->cases[k].dtype, names[t]) && !seen[t]) {
                seen[t] = 1;
                nd++;
            }
    }
    fprintf(f, " %zu | %d", caught, nd);
    for (int t = 0, first = 1; t < 3; t++)
        if (seen[t]) {
            fprintf(f, "%s%s", first ? ": " : ", ", names[t]);
            first = 0;
        }
    fputs(" |", f);
}

/* Compact cell of the family x backend matrix: "14/14", "**3 fail** / 14", "n/s" (every case
 * NOT_SUPPORTED), "10/12 + 2 n/s", "10/11 + 1 unx" (UNEXPRESSIBLE), or an em dash (the backend
 * has no case of the family). */
static void put_short_cell(FILE *f, const tally *t)
{
    if (t->total == 0) {
        fputs(EM_DASH, f);
        return;
    }
    if (t->ran == 0 && t->unx == 0) {
        fputs("n/s", f);
        return;
    }
    if (t->ran == 0)
        fprintf(f, "%zu unx", t->unx);
    else if (t->bad == 0)
        fprintf(f, "%zu/%zu", t->passed, t->ran);
    else
        fprintf(f, "**%zu fail** / %zu", t->bad, t->ran);
    if (t->ran && t->unx)
        fprintf(f, " + %zu unx", t->unx);
    if (t->ns)
        fprintf(f, " + %zu n/s", t->ns);
}

/* Families as rows, real backends as columns (readable with many families and several
 * backends), a total row, then the backends' versions and options as a list.  More than 11 real
 * backends: several such tables, each with the family column and the total row. */
static void put_matrix(FILE *f, const rp_data *d)
{
    size_t nreal = 0;
    for (size_t b = 0; b < d->nb; b++)
        nreal += !d->backends[b].mutant;
    const size_t parts = md_table_parts(nreal);
    for (size_t p = 0; p < parts; p++) {
        size_t lo, hi;
        md_table_part(p, parts, nreal, &lo, &hi);
        fputs(p ? "\n| Family |" : "| Family |", f);
        for (size_t b = 0, r = 0; b < d->nb; b++) {
            if (d->backends[b].mutant)
                continue;
            const size_t rank = r++;
            if (rank < lo || rank >= hi)
                continue;
            fputc(' ', f);
            md_text(f, d->backends[b].name);
            fputs(" |", f);
        }
        fputs("\n| --- |", f);
        for (size_t i = lo; i < hi; i++)
            fputs(" --- |", f);
        fputc('\n', f);
        for (size_t k = 0; k <= d->nf; k++) {
            if (k < d->nf) {
                fputs("| ", f);
                rp_family(f, d->families[k]);
                fputs(" |", f);
            } else {
                fputs("| **all** |", f);
            }
            for (size_t b = 0, r = 0; b < d->nb; b++) {
                if (d->backends[b].mutant)
                    continue;
                const size_t rank = r++;
                if (rank < lo || rank >= hi)
                    continue;
                tally t;
                memset(&t, 0, sizeof t);
                if (k < d->nf)
                    tally_add(&t, rp_cell_counts(d, b, k));
                else
                    t = backend_tally(d, b);
                fputc(' ', f);
                put_short_cell(f, &t);
                fputs(" |", f);
            }
            fputc('\n', f);
        }
    }
    fputs(
        "\nA cell is passed/run cases, or **failed** / run cases; n/s: cases the backend does not "
        "support (not run); unx: cases that must be rejected whose input the backend says its "
        "API cannot write (UNEXPRESSIBLE, neither passed nor failed); " EM_DASH " means the "
        "family has no cases in the backend's results. Backends:\n\n",
        f);
    for (size_t b = 0; b < d->nb; b++) {
        const rp_backend *be = &d->backends[b];
        if (be->mutant)
            continue;
        fputs("- ", f);
        md_text(f, be->name);
        fputs(": ", f);
        md_text(f, be->version);
        if (be->options[0]) {
            fputs(" (options ", f);
            md_code(f, be->options);
            fputc(')', f);
        }
        if (be->expect_file)
            fputs("; judged against its expected-results file (third-party: see below)", f);
        fputc('\n', f);
    }
}

/* One row per mutant: caught or not, the proof counts, and the families whose cases caught it
 * ("cache.batch 14, sdpa.layout 3"). */
static void put_mutants(FILE *f, const rp_data *d)
{
    fputs("| Mutant | Caught | Catching cases | Catching dtypes | Smallest catching case | "
          "Catching families (cases) |\n"
          "| --- | --- | ---: | --- | --- | --- |\n",
          f);
    for (size_t b = 0; b < d->nb; b++) {
        if (!d->backends[b].mutant)
            continue;
        tally t = backend_tally(d, b);
        fputs("| ", f);
        md_text(f, d->backends[b].name);
        fputs(t.bad ? " | yes |" : " | **no** |", f);
        put_catching(f, d, b);
        put_smallest(f, &d->backends[b]);
        fputc(' ', f);
        int first = 1;
        for (size_t k = 0; k < d->nf; k++) {
            tally c;
            memset(&c, 0, sizeof c);
            tally_add(&c, rp_cell_counts(d, b, k));
            if (!c.bad)
                continue;
            fputs(first ? "" : ", ", f);
            rp_family(f, d->families[k]);
            fprintf(f, " %zu", c.bad);
            first = 0;
        }
        fputs(first ? EM_DASH " |\n" : " |\n", f);
    }
}

static void put_status_totals(FILE *f, const rp_data *d)
{
    fputs("| Backend |", f);
    for (int s = 0; s < HR_STATUS_COUNT; s++)
        fprintf(f, " %s |", hr_status_name((hr_status)s));
    fputs(" Total |\n| --- |", f);
    for (int s = 0; s <= HR_STATUS_COUNT; s++)
        fputs(" ---: |", f);
    fputc('\n', f);
    /* Real backends first, then mutants, each group by name. */
    for (int pass = 0; pass < 2; pass++)
        for (size_t b = 0; b < d->nb; b++) {
            if (d->backends[b].mutant != pass)
                continue;
            tally t = backend_tally(d, b);
            fputs("| ", f);
            md_text(f, d->backends[b].name);
            fputs(" |", f);
            for (int s = 0; s < HR_STATUS_COUNT; s++)
                fprintf(f, " %zu |", t.by_status[s]);
            fprintf(f, " %zu |\n", t.total);
        }
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Headroom in units of the allowed error (SPEC clause 13): per real backend and dtype, over the
 * PASSing cases compared within a tolerance (max_ratio > 0), the median and the largest
 * max |got - exp| / allowed, and the case with the largest.  Nothing is printed when no result
 * carries a ratio (results from before it existed, or only exact checks).  Returns the number
 * of rows written. */
static int put_error_ratios(FILE *f, const rp_data *d)
{
    static const char *const dts[] = {"f32", "f16", "bf16"};
    int rows = 0;
    for (size_t b = 0; b < d->nb; b++) {
        const rp_backend *be = &d->backends[b];
        if (be->mutant)
            continue;
        double *v = malloc((be->n + 1) * sizeof *v);
        if (!v)
            return rows;
        for (int t = 0; t < 3; t++) {
            size_t n = 0;
            const rp_case *worst = NULL;
            for (size_t k = 0; k < be->n; k++) {
                const rp_case *c = &be->cases[k];
                if (c->status != HR_PASS || !c->has_stats || !(c->max_ratio > 0) ||
                    strcmp(c->dtype, dts[t]) != 0)
                    continue;
                v[n++] = c->max_ratio;
                if (!worst || c->max_ratio > worst->max_ratio)
                    worst = c;
            }
            if (!n)
                continue;
            if (rows++ == 0)
                fputs("## Error in units of the allowed error\n\n"
                      "Over the passing cases compared within a tolerance: the largest "
                      "|got - expected| / allowed of each case (SPEC.md clause 13; 1 is the "
                      "limit), its median over the cases and the largest.\n\n"
                      "| Backend | Dtype | Cases | Median | Largest | Case with the largest |\n"
                      "| --- | --- | ---: | ---: | ---: | --- |\n",
                      f);
            qsort(v, n, sizeof *v, cmp_double);
            const double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
            fputs("| ", f);
            md_text(f, be->name);
            fprintf(f, " | %s | %zu | %.3g | %.3g | ", dts[t], n, med, worst->max_ratio);
            md_code_cell(f, worst->id);
            fputs(" |\n", f);
        }
        free(v);
    }
    if (rows)
        fputc('\n', f);
    return rows;
}

static void put_failure(FILE *f, const rp_data *d, const rp_case *c)
{
    fputs("- ", f);
    md_code(f, c->id);
    fprintf(f, " " EM_DASH " **%s**", hr_status_name(c->status));
    if (c->message[0]) {
        fputs(": ", f);
        rp_text_rel(f, d, c->message);
    }
    fputc('\n', f);
    if (c->has_stats) {
        fputs("  - ", f);
        /* The same line the harness prints, from the fields the JSON carried. */
        hr_result r = {.first_bad = c->first_bad,
                       .bad_ndim = c->ndim,
                       .bad_got = c->got,
                       .bad_expected = c->expected,
                       .max_abs_err = c->max_abs_err,
                       .max_rel_err = c->max_rel_err,
                       .max_ratio = c->max_ratio,
                       .nans = c->nans};
        for (int k = 0; k < c->ndim && k < 4; k++)
            r.bad_index[k] = c->index[k];
        hr_write_stats(f, &r);
        fputc('\n', f);
    }
    if (c->rerun[0]) {
        fputs("  - rerun: ", f);
        rp_code_rel(f, d, c->rerun);
        fputc('\n', f);
    }
}

static void put_failures(FILE *f, const rp_data *d)
{
    int any = 0;
    for (size_t b = 0; b < d->nb; b++) {
        const rp_backend *be = &d->backends[b];
        tally t = backend_tally(d, b);
        if (be->mutant || t.bad == 0 || be->expect_file)
            continue;
        any = 1;
        fputs("### ", f);
        md_text(f, be->name);
        fprintf(f, " (%zu)\n\n", t.bad);
        for (size_t k = 0; k < be->n; k++) /* as t.bad counts them */
            if (hr_status_is_bad(be->cases[k].status) || be->cases[k].status == HR_CASE_ERROR)
                put_failure(f, d, &be->cases[k]);
        fputc('\n', f);
    }
    int thirdparty = 0;
    for (size_t b = 0; b < d->nb; b++)
        thirdparty |= d->backends[b].expect_file != NULL && !d->backends[b].mutant;
    if (!any)
        fputs(thirdparty ? "No failures outside the third-party sections.\n\n" : "No failures.\n\n",
              f);
}

/* ---- third-party implementations (runs with an expected-results file) ---------------------- */

/* Cases with a matched expectation entry sort by clause, entry pattern, then id, so each entry
 * (one finding) is one block. */
static int cmp_by_entry(const void *a, const void *b)
{
    const rp_case *x = *(const rp_case *const *)a, *y = *(const rp_case *const *)b;
    if (x->x_clause != y->x_clause)
        return x->x_clause < y->x_clause ? -1 : 1;
    int d = strcmp(x->x_case, y->x_case);
    return d ? d : strcmp(x->id, y->id);
}

/* One finding: the entry's pattern, status and reason once, then every case it covers with
 * what the case checks and what was measured. */
static void put_finding(FILE *f, const rp_data *d, const rp_case *const *v, size_t n)
{
    const rp_case *c0 = v[0];
    fprintf(f, "- **Clause %" PRId64 "**, ", c0->x_clause);
    if (!strstr(c0->x_case, ", ")) { /* a list of ids is the list of cases below */
        md_code(f, c0->x_case);
        fputs(" " EM_DASH " ", f);
    }
    fprintf(f, "%s on %zu case%s. Observed: ", c0->x_status, n, n == 1 ? "" : "s");
    md_text(f, c0->x_reason);
    fputs(c0->x_reason[0] && c0->x_reason[strlen(c0->x_reason) - 1] == '.' ? "" : ".", f);
    if (c0->x_upstream[0]) {
        fputs(" Upstream: ", f);
        md_text(f, c0->x_upstream);
        fputs(c0->x_upstream[strlen(c0->x_upstream) - 1] == '.' ? "" : ".", f);
    }
    fputc('\n', f);
    for (size_t k = 0; k < n; k++) {
        const rp_case *c = v[k];
        fputs("  - ", f);
        md_code(f, c->id);
        if (c->description[0]) {
            fputs(": ", f);
            md_text(f, c->description);
        }
        /* Values that differ from run to run (the entry's `varies`) are not quoted: the
         * report is a pure function of what is reproducible. */
        if (c->x_varies[0] && c->as_expected) {
            fputs(" Harness: the values differ from run to run, not quoted (", f);
            md_text(f, c->x_varies);
            fputs(").", f);
        } else if (c->message[0] && c->status != HR_NOT_SUPPORTED) {
            fputs(" Harness: ", f);
            rp_text_rel(f, d, c->message);
            fputc('.', f);
        }
        /* A row-check failure ("row 0 must be finite ...") says all there is; the statistics
         * compare the other rows with the reference. */
        if (c->has_stats && c->first_bad >= 0 && strncmp(c->message, "row ", 4) != 0 &&
            !(c->x_varies[0] && c->as_expected)) {
            fputs(" Measured: ", f);
            hr_result r = {.first_bad = c->first_bad,
                           .bad_ndim = c->ndim,
                           .bad_got = c->got,
                           .bad_expected = c->expected,
                           .max_abs_err = c->max_abs_err,
                           .max_rel_err = c->max_rel_err,
                           .max_ratio = c->max_ratio,
                           .nans = c->nans};
            for (int j = 0; j < c->ndim && j < 4; j++)
                r.bad_index[j] = c->index[j];
            hr_write_stats(f, &r);
            fputc('.', f);
        }
        fputc('\n', f);
    }
}

/* put_finding for each run of v[0..n) (sorted by entry) that shares one expected-results entry. */
static void put_findings(FILE *f, const rp_data *d, const rp_case *const *v, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && !strcmp(v[j]->x_case, v[i]->x_case))
            j++;
        put_finding(f, d, v + i, j - i);
        i = j;
    }
}

/* The NOT_SUPPORTED entries as one table: pattern, cases, why. */
static void put_unsupported_entries(FILE *f, const rp_case *const *v, size_t n)
{
    fputs("| Cases | Count | Why not supported |\n| --- | ---: | --- |\n", f);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && !strcmp(v[j]->x_case, v[i]->x_case))
            j++;
        fputs("| ", f);
        md_code_cell(f, v[i]->x_case);
        fprintf(f, " | %zu | ", j - i);
        md_text(f, v[i]->x_reason);
        fputs(" |\n", f);
        i = j;
    }
}

static int put_thirdparty_backend(FILE *f, const rp_data *d, size_t b)
{
    const rp_backend *be = &d->backends[b];
    tally t = backend_tally(d, b);
    fputs("### ", f);
    md_text(f, be->name);
    fputs(" " EM_DASH " ", f);
    md_text(f, be->version);
    fputs("\n\n", f);
    if (be->options[0]) {
        fputs("Backend options: ", f);
        md_code(f, be->options);
        fputs(". ", f);
    }
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ctest --test-dir build/default -R 'thirdparty\\.%s$' -V", be->name);
    fputs("Rerun: ", f);
    md_code(f, cmd);
    fputs(". Expected results: ", f);
    rp_code_rel(f, d, be->expect_file);
    fputs(" (recorded with ", f);
    md_text(f, be->expect_version);
    fputs("). ", f);
    const rp_case **v = malloc((be->n ? be->n : 1) * sizeof *v);
    if (!v)
        return -1;
    size_t nu = 0;
    for (size_t k = 0; k < be->n; k++)
        if (be->cases[k].has_expect && !be->cases[k].as_expected)
            v[nu++] = &be->cases[k];
    if (nu == 0) {
        fputs("Every observed status is the recorded one.\n\n", f);
    } else {
        fprintf(f,
                "**%zu observed status%s differ%s from the recorded ones** (an upstream change, "
                "or a stale file):\n\n",
                nu, nu == 1 ? "" : "es", nu == 1 ? "s" : "");
        for (size_t k = 0; k < nu; k++) {
            fputs("- ", f);
            md_code(f, v[k]->id);
            fprintf(f, ": observed %s, recorded %s\n", hr_status_name(v[k]->status),
                    v[k]->x_case[0] ? v[k]->x_status : "PASS or EXPECTED_ERROR");
        }
        fputc('\n', f);
    }
    /* The header from the same list as the row: one written out by hand once lacked the
     * statuses added later, and GFM drops the cells past the header's (the Total with them). */
    fputc('|', f);
    for (int s = 0; s < HR_STATUS_COUNT; s++)
        fprintf(f, " %s |", hr_status_name((hr_status)s));
    fputs(" Total |\n|", f);
    for (int s = 0; s <= HR_STATUS_COUNT; s++)
        fputs(" ---: |", f);
    fputs("\n|", f);
    for (int s = 0; s < HR_STATUS_COUNT; s++)
        fprintf(f, " %zu |", t.by_status[s]);
    fprintf(f, " %zu |\n\n", t.total);

    /* Divergences: bad statuses the file records, one block per entry. */
    size_t nd = 0;
    for (size_t k = 0; k < be->n; k++)
        if (be->cases[k].x_case[0] && hr_status_is_bad(be->cases[k].status))
            v[nd++] = &be->cases[k];
    qsort(v, nd, sizeof *v, cmp_by_entry);
    fprintf(f, "#### Divergences from SPEC.md (%zu case%s)\n\n", nd, nd == 1 ? "" : "s");
    if (nd == 0)
        fputs("None.\n", f);
    put_findings(f, d, v, nd);
    fputc('\n', f);

    size_t ns = 0;
    for (size_t k = 0; k < be->n; k++)
        if (be->cases[k].x_case[0] && be->cases[k].status == HR_NOT_SUPPORTED)
            v[ns++] = &be->cases[k];
    qsort(v, ns, sizeof *v, cmp_by_entry);
    fprintf(f, "#### Not supported (%zu case%s)\n\n", ns, ns == 1 ? "" : "s");
    if (ns == 0)
        fputs("None.\n", f);
    else
        put_unsupported_entries(f, v, ns);
    fputc('\n', f);

    /* Unexpressible: each claim as the file records it (one entry per case id, expect.h), so a
     * reader can check that the library's API really cannot write the invalid input. */
    size_t nx = 0;
    for (size_t k = 0; k < be->n; k++)
        if (be->cases[k].x_case[0] && be->cases[k].status == HR_UNEXPRESSIBLE)
            v[nx++] = &be->cases[k];
    qsort(v, nx, sizeof *v, cmp_by_entry);
    if (nx) {
        fprintf(f, "#### Unexpressible (%zu case%s)\n\n", nx, nx == 1 ? "" : "s");
        put_findings(f, d, v, nx);
        fputc('\n', f);
    }
    free(v);
    return 0;
}

/* ---- kernel-path coverage ------------------------------------------------------------------ */

/* The sdpa.paths family crosses semantics with shape classes, the class being the id's fourth
 * component (sdpa.paths.<semantic>.<class>.<dtype>, e.g. q1_k600): real kernels choose their
 * code path by shape, so this table shows, per backend, which shape classes it passes. */
#define PATHS_FAMILY "sdpa.paths"

/* The shape class of a case id in PATHS_FAMILY into out ("" if the id has no such part). */
static void path_class(const char *id, char *out, size_t n)
{
    out[0] = '\0';
    if (strncmp(id, PATHS_FAMILY ".", sizeof PATHS_FAMILY) != 0)
        return;
    const char *sem = id + sizeof PATHS_FAMILY, *cls = strchr(sem, '.');
    const char *end = cls ? strchr(cls + 1, '.') : NULL;
    if (!cls || !end || (size_t)(end - cls - 1) >= n)
        return;
    memcpy(out, cls + 1, (size_t)(end - cls - 1));
    out[end - cls - 1] = '\0';
}

static int put_path_coverage(FILE *f, const rp_data *d)
{
    const char **cls = NULL;
    size_t ncls = 0, cap = 0;
    char buf[ACASE_ID_MAX];
    for (size_t b = 0; b < d->nb; b++)
        for (size_t k = 0; k < d->backends[b].n; k++) {
            path_class(d->backends[b].cases[k].id, buf, sizeof buf);
            if (!buf[0])
                continue;
            size_t i = 0;
            while (i < ncls && strcmp(cls[i], buf) != 0)
                i++;
            if (i < ncls)
                continue;
            if (ncls == cap) {
                cap = cap ? 2 * cap : 8;
                const char **nc = realloc(cls, cap * sizeof *nc);
                if (!nc)
                    goto fail;
                cls = nc;
            }
            if (!(cls[ncls] = strdup(buf)))
                goto fail;
            ncls++;
        }
    if (ncls == 0)
        return 0;
    qsort(cls, ncls, sizeof *cls, rp_cmp_str);
    fputs("## Kernel-path coverage\n\nThe `" PATHS_FAMILY "` cases repeat the semantics that "
          "break most often (masked-slot poison, fully masked rows, windows, left padding, GQA "
          "with causal) at shapes that make real kernels take different code paths: the "
          "shape class in each id (`q1_k600`: Lq = 1 over 600 keys) is a column here.\n",
          f);
    /* More than 11 classes: several tables, each with the backend column. */
    const size_t parts = md_table_parts(ncls);
    for (size_t p = 0; p < parts; p++) {
        size_t lo, hi;
        md_table_part(p, parts, ncls, &lo, &hi);
        fputs("\n| Backend |", f);
        for (size_t i = lo; i < hi; i++)
            fprintf(f, " %s |", cls[i]);
        fputs("\n| --- |", f);
        for (size_t i = lo; i < hi; i++)
            fputs(" --- |", f);
        fputc('\n', f);
        for (size_t b = 0; b < d->nb; b++) {
            const rp_backend *be = &d->backends[b];
            if (be->mutant)
                continue;
            fputs("| ", f);
            md_text(f, be->name);
            fputs(" |", f);
            for (size_t i = lo; i < hi; i++) {
                tally t;
                memset(&t, 0, sizeof t);
                size_t by[HR_STATUS_COUNT] = {0};
                for (size_t k = 0; k < be->n; k++) {
                    path_class(be->cases[k].id, buf, sizeof buf);
                    if (!strcmp(buf, cls[i]))
                        by[be->cases[k].status]++;
                }
                tally_add(&t, by);
                fputc(' ', f);
                put_cell(f, &t);
                fputs(" |", f);
            }
            fputc('\n', f);
        }
    }
    fputc('\n', f);
    for (size_t i = 0; i < ncls; i++)
        free((void *)cls[i]);
    free(cls);
    return 0;
fail:
    for (size_t i = 0; i < ncls; i++)
        free((void *)cls[i]);
    free(cls);
    return -1;
}

/* One section per backend run with an expected-results file. */
static int put_thirdparty(FILE *f, const rp_data *d)
{
    int any = 0;
    for (size_t b = 0; b < d->nb; b++)
        any |= d->backends[b].expect_file != NULL && !d->backends[b].mutant;
    if (!any)
        return 0;
    fputs("## Third-party implementations\n\n"
          "Each implementation below ran every golden case it can express, judged against "
          "SPEC.md like any backend. Its divergences are findings, recorded in its "
          "expected-results file with the clause, what the library returned and what upstream "
          "says; ctest passes while every observed status is the recorded one, so a fix or a "
          "regression upstream shows at once. Each divergence lists the cases it covers: what "
          "the case checks, then the first element that broke the tolerance.\n\n",
          f);
    for (size_t b = 0; b < d->nb; b++)
        if (d->backends[b].expect_file && !d->backends[b].mutant && put_thirdparty_backend(f, d, b))
            return -1;
    return 0;
}

/* Sort s[0..n) bytewise and drop repeats; returns the new count. */
static size_t sort_unique(const char **s, size_t n)
{
    if (n > 1)
        qsort(s, n, sizeof *s, rp_cmp_str);
    size_t u = 0;
    for (size_t k = 0; k < n; k++)
        if (u == 0 || strcmp(s[u - 1], s[k]) != 0)
            s[u++] = s[k];
    return u;
}

/* "Passing on non-mutant backends" cell of clause k: "reference 31/31", "cpu 2/3 + 1 not
 * supported", "cpu 2 not supported", backends by name, comma-separated; an em dash if no
 * non-mutant backend has a case citing the clause. */
static void put_clause_passing(FILE *f, const rp_data *d, int k)
{
    int any = 0;
    for (size_t b = 0; b < d->nb; b++) {
        const rp_backend *be = &d->backends[b];
        if (be->mutant)
            continue;
        size_t by_status[HR_STATUS_COUNT] = {0};
        for (size_t i = 0; i < be->n; i++)
            if (be->cases[i].clauses & (1u << k))
                by_status[be->cases[i].status]++;
        tally t;
        memset(&t, 0, sizeof t);
        tally_add(&t, by_status);
        if (t.total == 0)
            continue;
        fputs(any ? ", " : "", f);
        any = 1;
        md_text(f, be->name);
        if (t.ran)
            fprintf(f, " %zu/%zu", t.passed, t.ran);
        if (t.unx)
            fprintf(f, t.ran ? " + %zu unexpressible" : " %zu unexpressible", t.unx);
        if (t.ns)
            fprintf(f, t.ran || t.unx ? " + %zu not supported" : " %zu not supported", t.ns);
    }
    if (!any)
        fputs(EM_DASH, f);
}

/* Whether a mutant's bug breaks clause k, by its version string: the test-only mutants say
 * "... breaks SPEC.md clauses 3, 19)" (mutants.h RBM_BREAKS).  A mutant that does not say is
 * credited under every clause whose cases it fails. */
static int mutant_breaks(const char *version, int k)
{
    const char *p = strstr(version, "breaks SPEC.md clause");
    if (!p)
        return 1;
    p += strlen("breaks SPEC.md clause");
    p += *p == 's';
    for (;;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p < '0' || *p > '9')
            return 0;
        int n = 0;
        while (*p >= '0' && *p <= '9' && n < 1000)
            n = n * 10 + (*p++ - '0');
        if (n == k)
            return 1;
    }
}

/* "Mutants caught" cell of clause k: mutants whose bug breaks the clause, with the number of
 * cases citing it that they fail ("mutant_topleft 45"), by name.  A case can cite several
 * clauses; the declared clauses keep a mutant from being credited under a clause its bug does
 * not touch just because a case citing both caught it. */
static void put_clause_mutants(FILE *f, const rp_data *d, int k)
{
    int any = 0;
    for (size_t b = 0; b < d->nb; b++) {
        const rp_backend *be = &d->backends[b];
        if (!be->mutant || !mutant_breaks(be->version, k))
            continue;
        size_t caught = 0;
        for (size_t i = 0; i < be->n; i++)
            caught += (be->cases[i].clauses & (1u << k)) && hr_status_is_bad(be->cases[i].status);
        if (!caught)
            continue;
        fputs(any ? ", " : "", f);
        any = 1;
        md_text(f, be->name);
        fprintf(f, " %zu", caught);
    }
    if (!any)
        fputs(EM_DASH, f);
}

/* The "Spec clauses" table (see the top comment).  Returns -1 when out of memory. */
static int put_clauses(FILE *f, const rp_data *d)
{
    unsigned present = 0;
    size_t ncases = 0, nrules = 0;
    for (size_t b = 0; b < d->nb; b++)
        for (size_t i = 0; i < d->backends[b].n; i++) {
            present |= d->backends[b].cases[i].clauses;
            nrules += json_array_size(d->backends[b].cases[i].rules);
        }
    if (!present) {
        fputs("No case in the results cites a rule id.\n\n", f);
        return 0;
    }
    for (size_t b = 0; b < d->nb; b++)
        ncases += d->backends[b].n;
    const char **ids = malloc(ncases * sizeof *ids), **rules = malloc(nrules * sizeof *rules);
    if (!ids || !rules) {
        free(ids);
        free(rules);
        return -1;
    }
    fputs("| Clause | Rules | Cases | Passing on non-mutant backends | Mutants caught |\n"
          "| --- | --- | ---: | --- | --- |\n",
          f);
    for (int k = 1; k <= CLAUSE_OTHER; k++) {
        if (!(present & (1u << k)))
            continue;
        size_t ni = 0, nr = 0;
        for (size_t b = 0; b < d->nb; b++)
            for (size_t i = 0; i < d->backends[b].n; i++) {
                const rp_case *c = &d->backends[b].cases[i];
                if (!(c->clauses & (1u << k)))
                    continue;
                ids[ni++] = c->id;
                for (size_t j = 0; j < json_array_size(c->rules); j++) {
                    const char *rule = json_string_value(json_array_get(c->rules, j));
                    if (rp_rule_clause(rule) == k)
                        rules[nr++] = rule;
                }
            }
        ni = sort_unique(ids, ni);
        nr = sort_unique(rules, nr);
        if (k == CLAUSE_OTHER)
            fputs("| other | ", f);
        else
            fprintf(f, "| %d | ", k);
        for (size_t j = 0; j < nr; j++) {
            fputs(j ? ", " : "", f);
            md_code_cell(f, rules[j]);
        }
        fprintf(f, " | %zu | ", ni);
        put_clause_passing(f, d, k);
        fputs(" | ", f);
        put_clause_mutants(f, d, k);
        fputs(" |\n", f);
    }
    free(ids);
    free(rules);
    fputs("\nA rule id `clauseN.<name>` cites SPEC.md clause N; ids of another form are under "
          "\"other\". Cases: distinct case ids citing the clause, over all result files. Passing: "
          "passed/run cases citing the clause, per non-mutant backend. Mutants caught: mutants "
          "whose bug breaks the clause (as their version says) with the number of cases citing "
          "it that they FAIL, have an INCORRECT_DTYPE on or ERROR on.\n\n",
          f);
    return 0;
}

static int cmp_case_message(const void *a, const void *b)
{
    return strcmp((*(const rp_case *const *)a)->message, (*(const rp_case *const *)b)->message);
}

/* One row per (backend, reason), real backends only: mutants copy the reference's caps. */
static int put_not_supported(FILE *f, const rp_data *d)
{
    int any = 0;
    for (size_t b = 0; b < d->nb; b++) {
        const rp_backend *be = &d->backends[b];
        if (be->mutant || be->expect_file) /* third-party sections list their own */
            continue;
        size_t n = 0;
        const rp_case **ns = malloc((be->n ? be->n : 1) * sizeof *ns);
        if (!ns)
            return -1;
        for (size_t k = 0; k < be->n; k++)
            if (be->cases[k].status == HR_NOT_SUPPORTED)
                ns[n++] = &be->cases[k];
        if (n > 1)
            qsort(ns, n, sizeof *ns, cmp_case_message);
        for (size_t k = 0; k < n;) {
            size_t j = k;
            while (j < n && !strcmp(ns[j]->message, ns[k]->message))
                j++;
            if (!any)
                fputs("| Backend | Reason | Cases |\n| --- | --- | ---: |\n", f);
            any = 1;
            fputs("| ", f);
            md_text(f, be->name);
            fputs(" | ", f);
            if (ns[k]->message[0])
                rp_text_rel(f, d, ns[k]->message);
            else
                fputs("(no reason given)", f);
            fprintf(f, " | %zu |\n", j - k);
            k = j;
        }
        free(ns);
    }
    fputs(any ? "\n" : "None.\n\n", f);
    return 0;
}

static void put_fenced(FILE *f, const char *s)
{
    size_t fence = md_longest_backtick_run(s) + 1;
    if (fence < 3)
        fence = 3;
    md_put_repeat(f, '`', fence);
    fputs("sh\n", f);
    for (; *s; s++)
        fputc(((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7F ? ' ' : *s, f);
    fputc('\n', f);
    md_put_repeat(f, '`', fence);
    fputc('\n', f);
}

static int write_report(FILE *f, const rp_data *d, const char *title, const char *command,
                        const char *chart)
{
    fputs("# ", f);
    for (const char *p = title; *p; p++) /* the title may hold Markdown; keep it on one line */
        fputc((unsigned char)*p < 0x20 ? ' ' : *p, f);
    fputs("\n\n", f);
    fputs("This report summarises results of attnconf, a conformance suite for scaled "
          "dot-product attention backends: each golden case (seeded inputs and a reference "
          "result computed in f64) is run on a backend plugin and its output compared with the "
          "reference within the case's tolerance. PASS and EXPECTED_ERROR (an invalid input "
          "rejected as required) count as passed; FAIL (wrong values, or a wrong accept or "
          "reject), INCORRECT_DTYPE (the output dtype is not the input dtype), ERROR (the "
          "backend failed where an output was expected), CRASH (the backend killed its worker "
          "process or wrote outside a buffer) and TIMEOUT (no result within the case timeout) "
          "count as failed, and so does CASE_ERROR (the case file could not be read: the "
          "suite's problem); NOT_SUPPORTED (the "
          "backend lacks a capability the case requires) is neither, and neither is "
          "UNEXPRESSIBLE (a case that must be rejected, whose invalid input the library's API "
          "cannot write, as the backend answered; it conforms only where the backend's "
          "expected-results file lists the case with its reason; \"unx\" in the matrix). ",
          f);
    /* Runs, not files: the shards of one sharded run count once, so merging them gives the
     * unsharded run's report byte for byte. */
    size_t runs = 0;
    for (size_t b = 0; b < d->nb; b++)
        runs += d->backends[b].runs;
    fprintf(f, "It was generated from the results of %zu run%s with:\n\n", runs,
            runs == 1 ? "" : "s");
    char *cmd = rp_relative(d, command);
    put_fenced(f, cmd ? cmd : command);
    free(cmd);

    fputs("\n## Conformance matrix\n\n", f);
    int real = 0, mutants = 0;
    for (size_t b = 0; b < d->nb; b++) {
        real += !d->backends[b].mutant;
        mutants += d->backends[b].mutant;
    }
    if (real)
        put_matrix(f, d);
    else
        fputs("No results for non-mutant backends.\n", f);
    fputc('\n', f);
    if (chart) {
        fputs("![Pass rate per case family and backend](", f);
        for (const char *p = chart; *p; p++) /* a link target: no spaces or parentheses */
            fputc(*p == ' ' || *p == '(' || *p == ')' || (unsigned char)*p < 0x20 ? '_' : *p, f);
        fputs(")\n\n", f);
    }
    for (size_t b = 0; b < d->nb; b++) {
        const rp_backend *be = &d->backends[b];
        if (!be->nfilters)
            continue;
        md_text(f, be->name);
        fputs(" was run with filter", f);
        fputs(be->nfilters > 1 ? "s " : " ", f);
        for (size_t k = 0; k < be->nfilters; k++) {
            fputs(k ? ", " : "", f);
            md_code(f, be->filters[k]);
        }
        fputs(": only matching cases are counted.\n\n", f);
    }
    if (mutants) {
        fputs("## Mutants (test-only backends with one deliberate bug; a caught mutant is the "
              "expected result)\n\n",
              f);
        put_mutants(f, d);
        fputs("\nCatching cases: cases on which the mutant FAILed, had an INCORRECT_DTYPE, "
              "ERRORed, crashed or timed out. Catching dtypes: the distinct float dtypes of "
              "those cases (q's, or the cache's; mask-builder cases have none). The suite "
              "requires at least three catching cases in at least two dtypes of every mutant "
              "whose bug can show in two (ctest conformance.mutant_proof.*).\n\n",
              f);
    }

    fputs("## Spec clauses\n\n", f);
    if (put_clauses(f, d))
        return -1;
    fputs("## Totals by status\n\n", f);
    put_status_totals(f, d);
    fputs("\n", f);
    put_error_ratios(f, d);
    if (put_path_coverage(f, d) || put_thirdparty(f, d))
        return -1;
    fputs("## Failures\n\n", f);
    put_failures(f, d);
    fputs("## Not supported\n\n", f);
    if (put_not_supported(f, d))
        return -1;
    return 0;
}

/* ---- command line -------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fputs("usage: attnconf report [--out FILE] [--title TITLE] [--command CMD] [--chart PATH]\n"
          "                       RESULTS.json...\n"
          "       attnconf report --diff OLD.json NEW.json [--out FILE]\n"
          "Merge result files written by `attnconf run --format json` into a Markdown report\n"
          "(stdout unless --out, which is written atomically).  --command: the command line to\n"
          "show in the report.  --chart: a picture to link under the matrix (tools/pass-chart\n"
          "draws the pass-rate chart).  --diff: compare two runs instead (newly failing, newly\n"
          "passing, other status changes, error growth).\n"
          "exit status: 0 written (--diff: nothing newly failing), 1 bad input (--diff: a case\n"
          "newly failing), 2 usage (--diff: or bad input, or no case in common)\n",
          f);
}

/* Append s to the memstream, single-quoted for a POSIX shell if it needs it. */
static void put_shell_word(FILE *f, const char *s)
{
    int plain = *s != '\0';
    for (const char *p = s; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=:,+-@%", *p))
            plain = 0;
    if (plain) {
        fputs(s, f);
        return;
    }
    fputc('\'', f);
    for (const char *p = s; *p; p++) {
        if (*p == '\'')
            fputs("'\\''", f);
        else
            fputc(*p, f);
    }
    fputc('\'', f);
}

int rp_write_out(of_file *o, const char *buf, size_t len, int fail_status)
{
    if (of_write_commit(o, buf, len) != 0) {
        rp_errf(o ? o->path : "<stdout>", NULL, "write error");
        return fail_status;
    }
    return CLI_EXIT_OK;
}

int cmd_report(const char *argv0, int argc, char **argv)
{
    (void)argv0;
    const char *out = NULL, *title = DEFAULT_TITLE, *command = NULL, *chart = NULL;
    const char *title_given = NULL;
    int diff = 0;
    if (argc < 1 || !argv)
        return CLI_EXIT_USAGE;
    const char **files = malloc((size_t)argc * sizeof *files);
    if (!files) {
        fputs("attnconf report: out of memory\n", stderr);
        return CLI_EXIT_FAIL;
    }
    size_t nfiles = 0;
    const cli_opt opts[] = {
        {.name = "--out", .kind = CLI_STRING, .dest = &out},
        {.name = "--title", .kind = CLI_STRING, .dest = &title, .raw = &title_given},
        {.name = "--command", .kind = CLI_STRING, .dest = &command},
        {.name = "--chart", .kind = CLI_STRING, .dest = &chart},
        {.name = "--diff", .kind = CLI_FLAG, .dest = &diff},
    };
    const cli_cmd c = {.name = "report",
                       .usage = usage,
                       .opts = opts,
                       .nopts = CLI_COUNT_OF(opts),
                       .pos = files,
                       .npos = &nfiles,
                       .maxpos = (size_t)argc};
    int rc = cli_parse(&c, argc, argv);
    if (rc) {
        free(files);
        return rc == CLI_HELP ? CLI_EXIT_OK : rc;
    }
    const char *not_diff = title_given ? "--title"
                           : command   ? "--command"
                           : chart     ? "--chart"
                                       : NULL;
    if (diff && not_diff)
        rc = cli_usage_error(&c, "not with --diff", not_diff);
    else if (diff && nfiles != 2)
        rc = cli_usage_error(&c, "--diff takes exactly two result files", NULL);
    else if (nfiles == 0)
        rc = cli_usage_error(&c, "no result files given", NULL);
    /* Created before the inputs are read: a refused FILE costs nothing. */
    static of_file of; /* two paths: not on the stack */
    memset(&of, 0, sizeof of);
    char why[512];
    if (!rc && out && of_open(&of, out, why, sizeof why) != 0) {
        fprintf(stderr, "attnconf report: --out %s: %s\n", out, why);
        rc = CLI_EXIT_USAGE;
    }
    if (rc || diff) {
        if (!rc)
            rc = report_diff_main(files[0], files[1], out ? &of : NULL);
        of_discard(&of);
        free(files);
        return rc;
    }

    rp_data d;
    memset(&d, 0, sizeof d);
    if (!getcwd(d.cwd, sizeof d.cwd) || !strcmp(d.cwd, "/"))
        d.cwd[0] = '\0';
    rc = 0;
    for (size_t i = 0; i < nfiles && rc == 0; i++)
        if (rp_load_file(&d, files[i]))
            rc = CLI_EXIT_FAIL;
    if (rc == 0 && rp_index_data(&d))
        rc = CLI_EXIT_FAIL;

    char *buf = NULL, *cmdbuf = NULL;
    size_t len = 0, cmdlen = 0;
    if (rc == 0 && !command) {
        FILE *c = open_memstream(&cmdbuf, &cmdlen);
        if (c) {
            fputs("attnconf report", c);
            for (int i = 1; i < argc && argv[i]; i++) {
                fputc(' ', c);
                put_shell_word(c, argv[i]);
            }
            if (fclose(c) != 0) {
                free(cmdbuf);
                cmdbuf = NULL;
            }
        }
        command = cmdbuf ? cmdbuf : "attnconf report";
    }
    if (rc == 0) {
        FILE *m = open_memstream(&buf, &len);
        int bad = !m;
        if (m) {
            bad |= write_report(m, &d, title, command, chart) != 0;
            bad |= ferror(m) != 0;
            bad |= fclose(m) != 0;
        }
        if (bad) {
            fputs("attnconf report: out of memory\n", stderr);
            rc = CLI_EXIT_FAIL;
        } else {
            rc = rp_write_out(out ? &of : NULL, buf, len, CLI_EXIT_FAIL);
        }
    }
    of_discard(&of); /* nothing once committed */
    free(buf);
    free(cmdbuf);
    free(files);
    rp_free(&d);
    return rc;
}
