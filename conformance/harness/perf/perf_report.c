/* perf_report.c — `attnconf perf-report`: the performance section of REPORT.md.
 *
 *   attnconf perf-report FILE.json... [--baseline FILE.json]... [--plot PATH]...
 *                        [--hyperfine FILE.json] [--note TEXT] [--out FILE.md]
 *                        [--cliff-drop 0.20] [--exponent-tolerance 0.25]
 *
 * FILE.json are bench results (perf_json.h), typically the committed baselines of one machine.
 * Files of the same suite are merged (each backend in one of them only; all from one machine);
 * suites appear in the order of their first file.  Per suite, one table per measure: a row per
 * shape (in the order of the files) and a column per backend that has the measure (at most 11
 * to a table: more take several tables, each with the shape column).  The measures:
 *   time      the median of the timed repetitions
 *   GFLOP/s   compute-bound shapes: flops / median, flops = 2 (D + Dv) per visible pair
 *   GB/s      memory-bound shapes: bytes of K and V in the visible key range / median
 *   % limit   of the machine's fma_gflops (compute) or mem_read_gbs (memory), as bench wrote it;
 *             for a memory-bound shape with read_gbs_beside (the bandwidth bench read beside its
 *             repetitions), 100 kv_gbs / read_gbs_beside, the table's label saying so (marked
 *             per cell when only some shapes have it)
 *   x ref     the reference backend's median / this one's, when the suite has the reference
 *   vs base   this median / the --baseline file's median of the same (suite, backend, shape):
 *             > 1 is slower; on another machine both times are first scaled by their machine's
 *             limit (as perf-compare does), and the text says so; a baseline whose suite, or
 *             every backend, no FILE has is refused (it would show nothing, silently)
 * A shape that was not timed OK shows its status (NOT_SUPPORTED, SKIPPED, ERROR, INCORRECT)
 * in every measure's table, and the messages are listed under the tables.  A backend whose file
 * says "timing": "adapter" (an exec: adapter, timed by the seconds it reports around its library
 * call, not in process) is marked with a dagger in the headers and a footnote under the tables.
 *
 * A suite whose file has cost curves (a "curves" list, perf_curve.h) gets a "Cost curves" section
 * instead of the per-shape tables: per (curve, backend, dtype) the sizes, the expected exponent,
 * the exponent of the counted work, the fitted exponent of the median times with its standard
 * error, and a verdict that flags an exponent more than --exponent-tolerance (0.25) from the
 * expected one and the cliffs, sizes where the rate drops by more than --cliff-drop (0.20) from
 * the size before; the cliffs are listed under the table.
 *
 * --plot PATH links an image: under the tables of the suite named like the file (plots/prefill.svg
 * -> suite prefill), else at the end.  --hyperfine FILE adds a table of whole-process timings
 * (hyperfine --export-json: results[].command, times, median, min, max, and exit_codes: a
 * command that failed is named so next to its time).  --note TEXT is printed
 * after the machine line (e.g. "Recorded on a shared 2-core virtual machine.").
 *
 * The output is a pure function of the arguments and the files' contents: no clock, no
 * locale (the "C" locale's printf), no path rewriting, the files' own order.  Exit 0, or 2 for
 * a usage error or a bad input file (message on stderr: file, key, reason).
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream */

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf/cmd.h"
#include "perf_curve.h"
#include "perf_json.h"
#include "perf_md.h"
#include "common/cli.h"
#include "common/md.h"

#define PROG "attnconf perf-report"
#define TIMES "\xC3\x97"
#define DAGGER "\xE2\x80\xA0" /* marks a backend timed inside its exec: adapter */
#define REFERENCE "reference"

static void usage(FILE *f)
{
    fputs(
        "usage: attnconf perf-report FILE.json... [--baseline FILE.json]... [--plot PATH]...\n"
        "                            [--hyperfine FILE.json] [--note TEXT] [--out FILE.md]\n"
        "                            [--cliff-drop 0.20] [--exponent-tolerance 0.25]\n"
        "Write the Markdown performance section of REPORT.md from `attnconf bench` result files:\n"
        "per suite, a row per shape and, per backend, the median time, GFLOP/s or GB/s, the % of\n"
        "the machine's limit, the ratio to the reference backend and to a --baseline file.\n"
        "--plot links an image (under the suite it is named after), --hyperfine adds a table of\n"
        "whole-process timings, --note adds a sentence after the machine line.  A suite with cost\n"
        "curves gets their fitted exponents instead of the tables, flagging an exponent more than\n"
        "--exponent-tolerance (0.001..8) from the expected one and a rate drop of more than\n"
        "--cliff-drop (0.001..0.999) between consecutive sizes (a cliff; for a memory-bound curve\n"
        "whose sizes have the read bandwidth beside them, the share of it must drop as much).\n"
        "Same arguments and files, same bytes.\n"
        "Exit status: 0 written, 2 usage or bad input (also a --baseline of a suite or backends\n"
        "that no FILE.json has).\n",
        f);
}

/* One backend column group of a suite's table. */
typedef struct col {
    const pj_backend *be;
    const pj_file *file;
    int ref_col;  /* 1: an "x ref" column (the suite has the reference, this is not it) */
    int base_col; /* 1: a "vs base" column (a baseline has this suite and backend) */
} col;

typedef struct suite {
    const char *name;
    const pj_file **files;
    size_t nfiles;
    col *cols;
    size_t ncols;
    const char **ids; /* every shape id, first appearance first */
    size_t nids;
    const col *ref;        /* the reference backend's column, or NULL */
    const pj_file *curves; /* the first file of the suite with cost curves, or NULL */
    /* Its memory-bound shapes timed OK with a read_gbs_beside (their % is of it):
     * BESIDE_NONE, BESIDE_ALL or BESIDE_SOME. */
    int beside;
} suite;

enum { BESIDE_NONE, BESIDE_ALL, BESIDE_SOME };
#define MARK "\xE2\x80\xA1" /* a % of the bandwidth read beside, where not every one is */

typedef struct ctx {
    pj_file *files, *bases;
    size_t nfiles, nbases;
    suite *suites;
    size_t nsuites;
    const char **plots;
    size_t nplots;
    const char *note, *hyperfine;
    json_t *hf;                   /* the hyperfine file, parsed */
    double cliff_drop, tolerance; /* the cost curves' flags */
} ctx;

static const pj_file *file_of_suite_backend(const pj_file *fs, size_t n, const char *suite,
                                            const char *backend, const pj_backend **be)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(fs[i].suite, suite) && (*be = pj_find_backend(&fs[i], backend)))
            return &fs[i];
    return NULL;
}

/* s->ids has room for every shape of the suite's files (index_suites sizes it). */
static void add_id(suite *s, const char *id)
{
    for (size_t i = 0; i < s->nids; i++)
        if (!strcmp(s->ids[i], id))
            return;
    s->ids[s->nids++] = id;
}

/* Whether the memory-bound shapes timed OK in s have a read_gbs_beside: none, all or some. */
static int suite_beside(const suite *s)
{
    size_t with = 0, without = 0;
    for (size_t k = 0; k < s->ncols; k++)
        for (size_t j = 0; j < s->cols[k].be->n; j++) {
            const pj_shape *sh = &s->cols[k].be->shapes[j];
            if (sh->bound == PJ_MEMORY && sh->status == PJ_OK)
                *(sh->read_gbs_beside > 0 ? &with : &without) += 1;
        }
    return !with ? BESIDE_NONE : without ? BESIDE_SOME : BESIDE_ALL;
}

/* Group the files by suite and lay out each suite's columns.  Returns 0, or 2 (printed). */
static int index_suites(ctx *c)
{
    c->suites = calloc(c->nfiles, sizeof *c->suites);
    if (!c->suites)
        return fprintf(stderr, "%s: out of memory\n", PROG), CLI_EXIT_USAGE;
    for (size_t i = 0; i < c->nfiles; i++) {
        const pj_file *f = &c->files[i];
        suite *s = NULL;
        for (size_t k = 0; k < c->nsuites && !s; k++)
            if (!strcmp(c->suites[k].name, f->suite))
                s = &c->suites[k];
        if (!s) {
            s = &c->suites[c->nsuites++];
            s->name = f->suite;
            size_t nb = 0, nshapes = 0;
            for (size_t j = i; j < c->nfiles; j++)
                if (!strcmp(c->files[j].suite, f->suite)) {
                    nb += c->files[j].nb;
                    for (size_t b = 0; b < c->files[j].nb; b++)
                        nshapes += c->files[j].backends[b].n;
                }
            s->files = calloc(c->nfiles, sizeof *s->files);
            s->cols = calloc(nb ? nb : 1, sizeof *s->cols);
            s->ids = calloc(nshapes ? nshapes : 1, sizeof *s->ids);
            if (!s->files || !s->cols || !s->ids)
                return fprintf(stderr, "%s: out of memory\n", PROG), CLI_EXIT_USAGE;
        } else if (!pj_same_machine(&s->files[0]->machine, &f->machine)) {
            fprintf(stderr,
                    "%s: %s: suite \"%s\" also comes from %s, measured on another "
                    "machine (CPU model, limits or pages): report one machine's runs together\n",
                    PROG, f->path, f->suite, s->files[0]->path);
            return CLI_EXIT_USAGE;
        }
        s->files[s->nfiles++] = f;
        if (!s->curves && f->ncurves)
            s->curves = f;
        for (size_t b = 0; b < f->nb; b++) {
            const pj_backend *be = &f->backends[b];
            for (size_t k = 0; k < s->ncols; k++)
                if (!strcmp(s->cols[k].be->name, be->name)) {
                    fprintf(stderr,
                            "%s: %s: backend \"%s\" of suite \"%s\" is also in %s: give "
                            "each backend's results once\n",
                            PROG, f->path, be->name, f->suite, s->cols[k].file->path);
                    return CLI_EXIT_USAGE;
                }
            col *cl = &s->cols[s->ncols++];
            cl->be = be;
            cl->file = f;
            for (size_t j = 0; j < be->n; j++)
                add_id(s, be->shapes[j].id);
        }
    }
    for (size_t k = 0; k < c->nsuites; k++) {
        suite *s = &c->suites[k];
        for (size_t j = 0; j < s->ncols; j++)
            if (!strcmp(s->cols[j].be->name, REFERENCE))
                s->ref = &s->cols[j];
        for (size_t j = 0; j < s->ncols; j++) {
            const pj_backend *bb;
            s->cols[j].ref_col = s->ref && s->ref != &s->cols[j];
            s->cols[j].base_col = file_of_suite_backend(c->bases, c->nbases, s->name,
                                                        s->cols[j].be->name, &bb) != NULL;
        }
        s->beside = suite_beside(s);
    }
    return 0;
}

/* A baseline is read only where a reported file has its suite and one of its backends: any other
 * would leave no "vs base" column and no word about it, as if it had not been given.  Returns 0,
 * or 2 (printed). */
static int check_baselines(const ctx *c)
{
    for (size_t i = 0; i < c->nbases; i++) {
        const pj_file *bf = &c->bases[i];
        const suite *s = NULL;
        for (size_t k = 0; k < c->nsuites && !s; k++)
            if (!strcmp(c->suites[k].name, bf->suite))
                s = &c->suites[k];
        if (!s) {
            fprintf(stderr, "%s: %s: suite \"%s\", but ", PROG, bf->path, bf->suite);
            for (size_t k = 0; k < c->nsuites; k++)
                fprintf(stderr, "%s%s is suite \"%s\"", k ? ", " : "", c->suites[k].files[0]->path,
                        c->suites[k].name);
            fputs(": give a baseline of a reported suite\n", stderr);
            return CLI_EXIT_USAGE;
        }
        int shared = 0;
        for (size_t b = 0; b < bf->nb && !shared; b++)
            for (size_t k = 0; k < s->ncols && !shared; k++)
                shared = !strcmp(s->cols[k].be->name, bf->backends[b].name);
        if (shared)
            continue;
        fprintf(stderr, "%s: %s: backends: ", PROG, bf->path);
        if (!bf->nb)
            fputs("none", stderr);
        for (size_t b = 0; b < bf->nb; b++)
            fprintf(stderr, "%s\"%s\"", b ? ", " : "", bf->backends[b].name);
        fprintf(stderr, ", but the reported files of suite \"%s\" have ", s->name);
        if (!s->ncols)
            fputs("none", stderr);
        for (size_t k = 0; k < s->ncols; k++)
            fprintf(stderr, "%s\"%s\"", k ? ", " : "", s->cols[k].be->name);
        fputs(": give a baseline of a reported backend\n", stderr);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

/* 1 when every file (baselines aside) comes from the identical machine record. */
static int one_machine(const ctx *c)
{
    for (size_t i = 1; i < c->nfiles; i++) {
        const pj_machine *a = &c->files[0].machine, *b = &c->files[i].machine;
        if (strcmp(a->cpu_model, b->cpu_model) || a->cores != b->cores ||
            a->mem_bytes != b->mem_bytes || a->fma_gflops != b->fma_gflops ||
            a->mem_read_gbs != b->mem_read_gbs || strcmp(a->limits_from, b->limits_from) ||
            a->huge_pages != b->huge_pages)
            return 0;
    }
    return 1;
}

/* The bound every shape of the suite shares, or -1 when they are mixed. */
static int suite_bound(const suite *s)
{
    int bound = -2;
    for (size_t k = 0; k < s->ncols; k++)
        for (size_t j = 0; j < s->cols[k].be->n; j++) {
            int b = (int)s->cols[k].be->shapes[j].bound;
            if (bound == -2)
                bound = b;
            else if (bound != b)
                return -1;
        }
    return bound == -2 ? PJ_COMPUTE : bound;
}

static void rate_cell(FILE *f, const pj_shape *sh, int bound)
{
    pm_sig3(f, sh->bound == PJ_MEMORY ? sh->kv_gbs : sh->gflops);
    if (bound < 0)
        fputs(sh->bound == PJ_MEMORY ? " GB/s" : " GFLOP/s", f);
}

/* Median of a shape scaled for comparing with another machine's (factor 1 on the same one). */
static double scaled_median(const pj_shape *sh, const pj_machine *m, int scale)
{
    return sh->median_s * (scale ? pj_limit(m, sh->bound) : 1);
}

/* The measures of a suite, one table each (shapes as rows, backends as columns): a backend's
 * column reads down its shapes and a row compares the backends, where one row holding every
 * measure of every backend is 24 columns wide for six backends. */
enum { M_TIME, M_RATE, M_PCT, M_REF, M_BASE, M_COUNT };

static int col_has(const col *cl, int m)
{
    return m == M_REF ? cl->ref_col : m == M_BASE ? cl->base_col : 1;
}

/* A shape that was not timed OK shows its status in every measure's table, so each table reads
 * on its own. */
static void write_cell(FILE *f, const ctx *c, const suite *s, const col *cl, const char *id, int m,
                       int bound)
{
    const pj_shape *sh = pj_find_shape(cl->be, id);
    if (!sh || sh->status != PJ_OK) {
        fputs(sh ? pj_status_name(sh->status) : EM_DASH, f);
        return;
    }
    if (m == M_TIME) {
        pm_time(f, sh->median_s);
    } else if (m == M_RATE) {
        rate_cell(f, sh, bound);
    } else if (m == M_PCT) {
        pm_sig3(f, pj_pct_limit(sh));
        if (s->beside == BESIDE_SOME && sh->bound == PJ_MEMORY && sh->read_gbs_beside > 0)
            fputs(MARK, f);
    } else if (m == M_REF) {
        const pj_shape *ref = s->ref ? pj_find_shape(s->ref->be, id) : NULL;
        if (ref && ref->status == PJ_OK && sh->median_s > 0 && pj_same_geometry(ref, sh)) {
            pm_sig3(f, ref->median_s / sh->median_s);
            fputs(TIMES, f);
        } else {
            fputs(EM_DASH, f);
        }
    } else {
        const pj_backend *bb;
        const pj_file *bf = file_of_suite_backend(c->bases, c->nbases, s->name, cl->be->name, &bb);
        const pj_shape *b = pj_find_shape(bb, id);
        if (b && b->status == PJ_OK && b->timed && b->median_s > 0 && pj_same_geometry(b, sh)) {
            int scale = !pj_same_machine(&bf->machine, &cl->file->machine);
            fprintf(f, "%.2f",
                    scaled_median(sh, &cl->file->machine, scale) /
                        scaled_median(b, &bf->machine, scale));
        } else {
            fputs(EM_DASH, f);
        }
    }
}

/* Measure m's table(s): a label, then per part the backends that have the measure whose rank
 * among them is in [lo, hi). */
static void write_measure(FILE *f, const ctx *c, const suite *s, int m, int bound)
{
    size_t n = 0;
    for (size_t k = 0; k < s->ncols; k++)
        n += (size_t)col_has(&s->cols[k], m);
    if (!n)
        return;
    const char *rate = bound == PJ_COMPUTE  ? "GFLOP/s"
                       : bound == PJ_MEMORY ? "GB/s"
                                            : "GFLOP/s or GB/s";
    const char *pct = bound == PJ_COMPUTE  ? "% of the FMA peak"
                      : bound == PJ_MEMORY ? "% of the memory read bandwidth"
                                           : "% of the machine's limit";
    /* Which bandwidth a memory-bound shape's % is of: read beside it, or the machine's. */
    const char *beside = s->beside == BESIDE_NONE ? ""
                         : s->beside == BESIDE_SOME
                             ? " (" MARK ": of the bandwidth read beside the shape, between its "
                               "repetitions; unmarked: of the machine's)"
                         : bound == PJ_MEMORY
                             ? " measured beside each shape (between its repetitions)"
                             : " (memory-bound shapes: of the bandwidth read beside each, "
                               "between its repetitions)";
    char pct_label[200];
    snprintf(pct_label, sizeof pct_label, "%s%s", pct, beside);
    const char *label[M_COUNT] = {"Median time", rate, pct_label,
                                  TIMES " ref (the reference's time / the backend's)",
                                  "vs base (the time / the baseline's; > 1: slower)"};
    fprintf(f, "\n**%s**\n", label[m]);
    /* More than MD_TABLE_MAX_COLS - 1 backends: several tables, each repeating the shape
     * column (common/md.h). */
    const size_t nparts = md_table_parts(n);
    for (size_t p = 0; p < nparts; p++) {
        size_t lo, hi, np = 0;
        md_table_part(p, nparts, n, &lo, &hi);
        const col *part[MD_TABLE_MAX_COLS - 1];
        for (size_t k = 0, rank = 0; k < s->ncols; k++) {
            if (!col_has(&s->cols[k], m))
                continue;
            if (rank >= lo && rank < hi)
                part[np++] = &s->cols[k];
            rank++;
        }
        fputs("\n| Shape |", f);
        for (size_t k = 0; k < np; k++) {
            fputc(' ', f);
            md_text(f, part[k]->be->name);
            fputs(part[k]->be->adapter_timing ? DAGGER " |" : " |", f);
        }
        fputs("\n| --- |", f);
        for (size_t k = 0; k < np; k++)
            fputs(" ---: |", f);
        fputc('\n', f);
        for (size_t i = 0; i < s->nids; i++) {
            fputs("| ", f);
            md_code_cell(f, s->ids[i]);
            fputs(" |", f);
            for (size_t k = 0; k < np; k++) {
                fputc(' ', f);
                write_cell(f, c, s, part[k], s->ids[i], m, bound);
                fputs(" |", f);
            }
            fputc('\n', f);
        }
    }
}

/* The contiguous shape of be that a paged shape reads the same keys as: the same geometry,
 * no pages.  NULL when the suite has none. */
static const pj_shape *contiguous_twin(const pj_backend *be, const pj_shape *paged)
{
    pj_shape flat = *paged; /* the same geometry without pages (pj_same_geometry, one rule) */
    flat.page_size = 0;
    for (size_t i = 0; i < be->n; i++)
        if (pj_same_geometry(&be->shapes[i], &flat))
            return &be->shapes[i];
    return NULL;
}

/* A suite with paged shapes (SPEC clause 23): per backend, each paged shape's bandwidth over
 * the same backend's contiguous shape of the same geometry in the same run, i.e. the
 * contiguous median time / the paged one (1: paged decode at the contiguous bandwidth).  The
 * figure of merit of a paged kernel, and a ratio within one run, so a loaded machine moves it
 * less than either time. */
static void write_paged(FILE *f, const suite *s)
{
    size_t npaged = 0, np = 0;
    const col *part[MD_TABLE_MAX_COLS - 1];
    for (size_t i = 0; i < s->nids; i++)
        for (size_t k = 0; k < s->ncols; k++) {
            const pj_shape *sh = pj_find_shape(s->cols[k].be, s->ids[i]);
            if (sh && sh->page_size > 0) {
                npaged++;
                break;
            }
        }
    /* A column per backend with a ratio to show: a paged shape and its contiguous twin both
     * timed (a backend with paged attention only, as OpenVINO's, has none). */
    for (size_t k = 0; k < s->ncols && np < MD_TABLE_MAX_COLS - 1; k++)
        for (size_t i = 0; i < s->cols[k].be->n; i++) {
            const pj_shape *sh = &s->cols[k].be->shapes[i];
            const pj_shape *t = sh->page_size > 0 && sh->status == PJ_OK
                                    ? contiguous_twin(s->cols[k].be, sh)
                                    : NULL;
            if (t && t->status == PJ_OK) {
                part[np++] = &s->cols[k];
                break;
            }
        }
    if (!npaged || !np)
        return;
    fputs("\n**Paged \xC3\xB7 contiguous bandwidth** (the contiguous shape's median time / the "
          "paged shape's, same backend, same run; 1: the contiguous bandwidth)\n\n| Shape |",
          f);
    for (size_t k = 0; k < np; k++) {
        fputc(' ', f);
        md_text(f, part[k]->be->name);
        fputs(" |", f);
    }
    fputs("\n| --- |", f);
    for (size_t k = 0; k < np; k++)
        fputs(" ---: |", f);
    fputc('\n', f);
    for (size_t i = 0; i < s->nids; i++) {
        const pj_shape *any = NULL;
        for (size_t k = 0; k < s->ncols && !any; k++) {
            const pj_shape *sh = pj_find_shape(s->cols[k].be, s->ids[i]);
            any = sh && sh->page_size > 0 ? sh : NULL;
        }
        if (!any)
            continue;
        fputs("| ", f);
        md_code_cell(f, s->ids[i]);
        fputs(" |", f);
        for (size_t k = 0; k < np; k++) {
            const pj_shape *sh = pj_find_shape(part[k]->be, s->ids[i]);
            const pj_shape *t = sh ? contiguous_twin(part[k]->be, sh) : NULL;
            if (sh && sh->status != PJ_OK)
                fprintf(f, " %s |", pj_status_name(sh->status));
            else if (sh && t && t->status == PJ_OK && sh->median_s > 0)
                fprintf(f, " %.2f |", t->median_s / sh->median_s);
            else
                fputs(" " EM_DASH " |", f);
        }
        fputc('\n', f);
    }
}

/* Under the table: the non-OK shapes, grouped by backend, status and message. */
static void write_messages(FILE *f, const suite *s)
{
    int any = 0;
    for (size_t k = 0; k < s->ncols; k++) {
        const pj_backend *be = s->cols[k].be;
        for (size_t i = 0; i < be->n; i++) {
            const pj_shape *a = &be->shapes[i];
            int first = a->status != PJ_OK;
            for (size_t j = 0; j < i && first; j++)
                first = !(be->shapes[j].status == a->status &&
                          !strcmp(be->shapes[j].message, a->message));
            if (!first)
                continue;
            size_t n = 0;
            for (size_t j = i; j < be->n; j++)
                n +=
                    be->shapes[j].status == a->status && !strcmp(be->shapes[j].message, a->message);
            fputs(any++ ? "- " : "\n- ", f);
            md_code(f, be->name);
            fprintf(f, " %s", pj_status_name(a->status));
            if (a->message[0]) {
                fputs(": ", f);
                md_text(f, a->message);
            }
            fprintf(f, " (%zu shape%s: ", n, n == 1 ? "" : "s");
            size_t shown = 0;
            for (size_t j = i; j < be->n; j++)
                if (be->shapes[j].status == a->status &&
                    !strcmp(be->shapes[j].message, a->message)) {
                    if (shown == 8) { /* the rest of a long list is in the table anyway */
                        fputs(", ...", f);
                        break;
                    }
                    fputs(shown++ ? ", " : "", f);
                    md_code(f, be->shapes[j].id);
                }
            fputs(")\n", f);
        }
    }
}

static void write_link(FILE *f, const char *alt, const char *path)
{
    fputs("![", f);
    md_text(f, alt);
    /* A destination in <...> may hold spaces and parentheses (CommonMark). */
    fprintf(f, "](<%s>)\n", path);
}

/* "plots/prefill.svg" names suite "prefill". */
static int plot_of_suite(const char *path, const char *suite)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(suite);
    return !strncmp(base, suite, n) && base[n] == '.' && !strchr(base + n + 1, '.');
}

static void write_suite(FILE *f, const ctx *c, const suite *s, int print_machine)
{
    fputs(s->curves ? "\n### Cost curves (suite " : "\n### Suite ", f);
    md_text(f, s->name);
    fputs(s->curves ? ")\n\n" : "\n\n", f);
    for (size_t i = 0; i < s->nfiles; i++) {
        fputs(i ? "; " : "From ", f);
        md_code(f, s->files[i]->path);
        fputs(" (suite file ", f);
        md_code(f, s->files[i]->suite_file);
        fputs(", label ", f);
        md_code(f, s->files[i]->label);
        fputs(", started ", f);
        md_text(f, s->files[i]->started);
        fputs(")", f);
    }
    fputs(".\n", f);
    if (print_machine) {
        fputs("Machine: ", f);
        pm_machine(f, &s->files[0]->machine);
        fputs(".\n", f);
    }
    /* Each baseline file once, with the backends it is the baseline of. */
    for (size_t i = 0; i < c->nbases; i++) {
        const pj_file *bf = &c->bases[i];
        size_t n = 0;
        for (size_t k = 0; k < s->ncols; k++) {
            const pj_backend *bb;
            if (file_of_suite_backend(c->bases, c->nbases, s->name, s->cols[k].be->name, &bb) != bf)
                continue;
            if (!n++) {
                fputs("Baseline ", f);
                md_code(f, bf->path);
                fputs(" (label ", f);
                md_code(f, bf->label);
                fputs(") of ", f);
            } else {
                fputs(", ", f);
            }
            md_code(f, s->cols[k].be->name);
        }
        if (n && !pj_same_machine(&bf->machine, &s->files[0]->machine)) {
            fputs(", from another machine (", f);
            pm_machine(f, &bf->machine);
            fputs("): vs base compares times scaled by each machine's limit", f);
        }
        if (n)
            fputs(".\n", f);
    }
    if (s->curves) {
        /* A cost-curve suite: the fits say what its many shapes mean; the rows would not. */
        const pj_backend **bes = calloc(s->ncols ? s->ncols : 1, sizeof *bes);
        if (bes) {
            for (size_t k = 0; k < s->ncols; k++)
                bes[k] = s->cols[k].be;
            pc_write_curves(f, s->curves->curves, s->curves->ncurves, bes, s->ncols, c->cliff_drop,
                            c->tolerance);
            free(bes);
        } else {
            fputs("\n(out of memory: the cost curves are not shown)\n", f);
        }
    } else {
        int bound = suite_bound(s);
        for (int m = 0; m < M_COUNT; m++)
            write_measure(f, c, s, m, bound);
        write_paged(f, s);
    }
    size_t nadapter = 0;
    for (size_t k = 0; k < s->ncols; k++)
        if (s->cols[k].be->adapter_timing) {
            fputs(nadapter++ ? ", " : "\n" DAGGER " ", f);
            md_code(f, s->cols[k].be->name);
        }
    if (nadapter)
        fputs(": time measured inside the adapter around the library call (reported by the "
              "exec: adapter, so the pipe transport is not included).\n",
              f);
    if (s->curves) /* a label, so the list does not run on from the cliffs' */
        for (size_t k = 0, any = 0; k < s->ncols && !any; k++)
            for (size_t i = 0; i < s->cols[k].be->n && !any; i++)
                if (s->cols[k].be->shapes[i].status != PJ_OK) {
                    fputs("\nNot timed:\n", f);
                    any = 1;
                }
    write_messages(f, s);
    for (size_t i = 0; i < c->nplots; i++)
        if (plot_of_suite(c->plots[i], s->name)) {
            fputs("\n", f);
            char alt[160];
            snprintf(alt, sizeof alt,
                     s->curves ? "%s: time against size (log-log) with the fitted exponents"
                               : "%s: throughput by sequence length",
                     s->name);
            write_link(f, alt, c->plots[i]);
        }
}

/* hyperfine --export-json: {"results": [{"command", "times": [...], "median", "min", "max"}]}.
 * Returns 0, or 2 after naming the file, key and reason. */
static int check_hyperfine(const ctx *c)
{
    const json_t *res = json_object_get(c->hf, "results");
    const char *p = c->hyperfine;
    if (!json_is_array(res) || json_array_size(res) == 0)
        return fprintf(stderr,
                       "%s: %s: results: expected a non-empty array (hyperfine "
                       "--export-json)\n",
                       PROG, p),
               CLI_EXIT_USAGE;
    for (size_t i = 0; i < json_array_size(res); i++) {
        const json_t *r = json_array_get(res, i), *t = json_object_get(r, "times");
        if (!json_is_string(json_object_get(r, "command")))
            return fprintf(stderr, "%s: %s: results[%zu].command: expected a string\n", PROG, p, i),
                   CLI_EXIT_USAGE;
        if (!json_is_array(t) || json_array_size(t) == 0)
            return fprintf(stderr,
                           "%s: %s: results[%zu].times: expected a non-empty array of "
                           "seconds\n",
                           PROG, p, i),
                   CLI_EXIT_USAGE;
        const json_t *ec = json_object_get(r, "exit_codes");
        for (size_t k = 0; ec && k < json_array_size(ec); k++)
            if (!json_is_integer(json_array_get(ec, k)) && !json_is_null(json_array_get(ec, k)))
                ec = NULL;
        if (json_object_get(r, "exit_codes") && !json_is_array(ec))
            return fprintf(stderr,
                           "%s: %s: results[%zu].exit_codes: expected an array of "
                           "integers (null: killed by a signal)\n",
                           PROG, p, i),
                   CLI_EXIT_USAGE;
        static const char *const keys[] = {"median", "min", "max"};
        for (int k = 0; k < 3; k++) {
            const json_t *v = json_object_get(r, keys[k]);
            if (!json_is_number(v) || !(json_number_value(v) >= 0))
                return fprintf(stderr,
                               "%s: %s: results[%zu].%s: expected a number of seconds "
                               ">= 0\n",
                               PROG, p, i, keys[k]),
                       CLI_EXIT_USAGE;
        }
    }
    return 0;
}

static void write_hyperfine(FILE *f, const ctx *c)
{
    const json_t *res = json_object_get(c->hf, "results");
    fputs("\n### Whole-process timings\n\nWall time of the commands as run from the repository "
          "root (hyperfine, from ",
          f);
    md_code(f, c->hyperfine);
    fputs("; case loading, process start and everything else included).\n\n"
          "| Command | Runs | Median | Min | Max |\n| --- | ---: | ---: | ---: | ---: |\n",
          f);
    for (size_t i = 0; i < json_array_size(res); i++) {
        const json_t *r = json_array_get(res, i);
        const json_t *ec = json_object_get(r, "exit_codes");
        size_t failed = 0;
        long long code = 0;
        for (size_t k = 0; k < json_array_size(ec); k++) {
            const json_t *e = json_array_get(ec, k);
            if (!json_is_integer(e) || json_integer_value(e) != 0) {
                failed++;
                code = json_is_integer(e) ? (long long)json_integer_value(e) : -1;
            }
        }
        fputs("| ", f);
        md_code_cell(f, json_string_value(json_object_get(r, "command")));
        /* Timed anyway (perf/hyperfine runs hyperfine -i): say so, the time may be short. */
        if (failed && code >= 0)
            fprintf(f, " (exit status %lld in %zu of %zu runs)", code, failed, json_array_size(ec));
        else if (failed)
            fprintf(f, " (killed by a signal in %zu of %zu runs)", failed, json_array_size(ec));
        fprintf(f, " | %zu | ", json_array_size(json_object_get(r, "times")));
        pm_time(f, json_number_value(json_object_get(r, "median")));
        fputs(" | ", f);
        pm_time(f, json_number_value(json_object_get(r, "min")));
        fputs(" | ", f);
        pm_time(f, json_number_value(json_object_get(r, "max")));
        fputs(" |\n", f);
    }
}

static void write_report(FILE *f, const ctx *c)
{
    int one = one_machine(c);
    size_t rmin = SIZE_MAX, rmax = 0;
    for (size_t i = 0; i < c->nfiles; i++)
        for (size_t b = 0; b < c->files[i].nb; b++)
            for (size_t j = 0; j < c->files[i].backends[b].n; j++) {
                const pj_shape *sh = &c->files[i].backends[b].shapes[j];
                if (sh->status == PJ_OK) {
                    rmin = sh->reps < rmin ? sh->reps : rmin;
                    rmax = sh->reps > rmax ? sh->reps : rmax;
                }
            }
    fputs("## Performance (varies between runs)\n\n", f);
    if (one) {
        fputs("Machine: ", f);
        pm_machine(f, &c->files[0].machine);
        fputs(".", f);
    } else {
        fputs("The suites were measured on different machines: each names its own.", f);
    }
    if (c->note) {
        fputc(' ', f);
        md_text(f, c->note);
    }
    int adapter = 0;
    for (size_t i = 0; i < c->nfiles; i++)
        for (size_t b = 0; b < c->files[i].nb; b++)
            adapter |= c->files[i].backends[b].adapter_timing;
    fputs(adapter
              ? "\n\nTimes are medians, in-process (inside the adapter for a backend marked " DAGGER
                ")"
              : "\n\nTimes are in-process medians",
          f);
    if (rmax && rmin == rmax)
        fprintf(f, " of %zu repetitions per shape", rmin);
    else if (rmax)
        fprintf(f, " of %zu to %zu repetitions per shape", rmin, rmax);
    fputs(" (`attnconf bench`: inputs changed between repetitions, the first one validated "
          "against the reference); they vary from run to run, so compare two runs with "
          "`attnconf perf-compare`, never by eye.  GFLOP/s counts 2" TIMES "(D + Dv) "
          "floating-point operations per visible (unmasked) query\xE2\x80\x93key pair; GB/s is "
          "the bytes of K and V in the visible key range over the median time; % is of the "
          "machine's limit (FMA peak for compute-bound shapes, memory read bandwidth for "
          "memory-bound ones), so it compares across machines.  " TIMES " ref = the reference "
          "backend's time / this backend's (same machine); vs base = this time / the "
          "baseline's (> 1: slower than the baseline).",
          f);
    int beside = 0;
    for (size_t k = 0; k < c->nsuites; k++)
        beside |= c->suites[k].beside != BESIDE_NONE;
    if (beside)
        fputs("  A memory-bound shape whose run recorded the read bandwidth beside it (the "
              "`--peak` read loop run between its repetitions, in the same process) has its % "
              "of that bandwidth, the limit of the same minutes, so the ratio holds on a shared "
              "machine whose bandwidth changes during a run; the tables say where.",
              f);
    fputc('\n', f);
    for (size_t k = 0; k < c->nsuites; k++)
        write_suite(f, c, &c->suites[k], !one);
    int header = 0;
    for (size_t i = 0; i < c->nplots; i++) {
        int placed = 0;
        for (size_t k = 0; k < c->nsuites && !placed; k++)
            placed = plot_of_suite(c->plots[i], c->suites[k].name);
        if (placed)
            continue;
        if (!header++)
            fputs("\n### Plots\n\n", f);
        write_link(f, "plot", c->plots[i]);
    }
    if (c->hf)
        write_hyperfine(f, c);
}

static void ctx_free(ctx *c)
{
    for (size_t i = 0; i < c->nsuites; i++) {
        free(c->suites[i].files);
        free(c->suites[i].cols);
        free(c->suites[i].ids);
    }
    free(c->suites);
    for (size_t i = 0; i < c->nfiles; i++)
        pj_free(&c->files[i]);
    for (size_t i = 0; i < c->nbases; i++)
        pj_free(&c->bases[i]);
    free(c->files);
    free(c->bases);
    free(c->plots);
    json_decref(c->hf);
}

int cmd_perf_report(const char *argv0, int argc, char **argv)
{
    (void)argv0;
    ctx c;
    memset(&c, 0, sizeof c);
    size_t cap = argc > 0 ? (size_t)argc : 1;
    const char **files = calloc(cap, sizeof *files), **bases = calloc(cap, sizeof *bases);
    const char *out = NULL;
    size_t nf = 0, nb = 0;
    c.plots = calloc(cap, sizeof *c.plots);
    c.cliff_drop = PC_DEFAULT_DROP;
    c.tolerance = PC_DEFAULT_TOLERANCE;
    static of_file of; /* two paths: not on the stack */
    memset(&of, 0, sizeof of);
    int rc = CLI_EXIT_OK;
    if (!files || !bases || !c.plots) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    const cli_opt opts[] = {
        {.name = "--baseline", .kind = CLI_STRINGS, .dest = bases, .max = cap, .count = &nb},
        {.name = "--plot", .kind = CLI_STRINGS, .dest = c.plots, .max = cap, .count = &c.nplots},
        {.name = "--hyperfine", .kind = CLI_STRING, .dest = &c.hyperfine},
        {.name = "--note", .kind = CLI_STRING, .dest = &c.note},
        {.name = "--out", .kind = CLI_STRING, .dest = &out},
        {.name = "--cliff-drop",
         .kind = CLI_NUMBER,
         .dest = &c.cliff_drop,
         .lo = 0.001,
         .hi = 0.999},
        {.name = "--exponent-tolerance",
         .kind = CLI_NUMBER,
         .dest = &c.tolerance,
         .lo = 0.001,
         .hi = 8},
    };
    const cli_cmd cc = {.name = "perf-report",
                        .usage = usage,
                        .opts = opts,
                        .nopts = CLI_COUNT_OF(opts),
                        .pos = files,
                        .npos = &nf,
                        .maxpos = cap};
    rc = cli_parse(&cc, argc, argv);
    if (rc) {
        rc = rc == CLI_HELP ? CLI_EXIT_OK : rc;
        goto done;
    }
    if (nf == 0) {
        rc = cli_usage_error(&cc, "no bench result files given", NULL);
        goto done;
    }
    /* Created before the inputs are read: a refused FILE costs nothing. */
    if (out && pm_open_out(PROG, out, &of) != 0) {
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    c.files = calloc(nf, sizeof *c.files);
    c.bases = calloc(nb ? nb : 1, sizeof *c.bases);
    if (!c.files || !c.bases) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        rc = CLI_EXIT_USAGE;
        goto done;
    }
    /* Counted before loading, so ctx_free frees a file that failed half-way. */
    for (size_t i = 0; i < nf && rc == 0; i++, c.nfiles++)
        rc = pj_load(PROG, files[i], &c.files[i]) ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    for (size_t i = 0; i < nb && rc == 0; i++, c.nbases++)
        rc = pj_load(PROG, bases[i], &c.bases[i]) ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    if (rc)
        goto done;
    for (size_t i = 0; i < nb; i++)
        for (size_t j = 0; j < i; j++)
            for (size_t b = 0; b < c.bases[i].nb; b++)
                if (!strcmp(c.bases[i].suite, c.bases[j].suite) &&
                    pj_find_backend(&c.bases[j], c.bases[i].backends[b].name)) {
                    fprintf(stderr,
                            "%s: %s: backend \"%s\" of suite \"%s\" is also in baseline "
                            "%s: give one baseline per suite and backend\n",
                            PROG, bases[i], c.bases[i].backends[b].name, c.bases[i].suite,
                            bases[j]);
                    rc = CLI_EXIT_USAGE;
                    goto done;
                }
    if (c.hyperfine) {
        json_error_t je;
        c.hf = json_load_file(c.hyperfine, JSON_REJECT_DUPLICATES, &je);
        if (!c.hf) {
            fprintf(stderr, "%s: %s:%d:%d: not valid JSON: %s\n", PROG, c.hyperfine, je.line,
                    je.column, je.text);
            rc = CLI_EXIT_USAGE;
            goto done;
        }
        if ((rc = check_hyperfine(&c)) != 0)
            goto done;
    }
    if ((rc = index_suites(&c)) != 0 || (rc = check_baselines(&c)) != 0)
        goto done;
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    int bad = !m;
    if (m) {
        write_report(m, &c);
        bad |= ferror(m) != 0;
        bad |= fclose(m) != 0;
    }
    if (bad) {
        fprintf(stderr, "%s: out of memory\n", PROG);
        rc = CLI_EXIT_USAGE;
    } else {
        rc = pm_write_out(PROG, out ? &of : NULL, buf, len);
    }
    free(buf);
done:
    of_discard(&of); /* nothing once committed */
    free(files);
    free(bases);
    ctx_free(&c);
    return rc;
}
