/* report_diff.c — `attnconf report --diff OLD.json NEW.json`: the conformance counterpart of a
 * perf regression report.
 *
 * OLD and NEW are result files of `attnconf run --format json` (read as strictly as the report
 * reads them): the same backend at two versions, or two backends.  Cases are matched by id.
 * Every case lands in exactly one class, in this order of precedence:
 *   newly failing   bad in NEW (FAIL, INCORRECT_DTYPE, ERROR, CRASH, TIMEOUT), not bad in OLD,
 *                   or bad in NEW and absent from OLD (a new case that fails);
 *   newly passing   PASS/EXPECTED_ERROR in NEW, anything else in OLD;
 *   changed status  any other change (FAIL -> ERROR, PASS -> NOT_SUPPORTED, ...);
 *   error growth    PASS in both, and the error in units of the allowed error (SPEC.md clause
 *                   13, max_ratio) grew to at least GROWTH_FLOOR and by at least GROWTH_FACTOR:
 *                   still passing, but closer to the limit;
 *   only in OLD     (removed or filtered out), only in NEW (not failing), unchanged.
 * Exit status: 1 when anything is newly failing, 0 otherwise, 2 for usage errors, a result
 * file that cannot be read, or two runs with no case in common (nothing compared: no diff is
 * written).  The output is a pure function of the two files (sorted by id).
 */
#define _POSIX_C_SOURCE 200809L /* getcwd */

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report_internal.h"

#define GROWTH_FACTOR 1.5 /* ratio NEW / OLD of max_ratio that counts as growth */
#define GROWTH_FLOOR 0.1  /* ... only once NEW uses at least this share of the allowed error */

enum { D_NEW_FAIL, D_NEW_PASS, D_CHANGED, D_GROWTH, D_ONLY_OLD, D_ONLY_NEW, D_SAME, D_COUNT };

typedef struct dpair {
    const rp_case *o, *n; /* either may be NULL (only in one file) */
    int cls;
} dpair;

static int passed(hr_status s)
{
    return s == HR_PASS || s == HR_EXPECTED_ERROR;
}

static int classify(const rp_case *o, const rp_case *n)
{
    if (!o)
        return hr_status_is_bad(n->status) ? D_NEW_FAIL : D_ONLY_NEW;
    if (!n)
        return D_ONLY_OLD;
    if (hr_status_is_bad(n->status) && !hr_status_is_bad(o->status))
        return D_NEW_FAIL;
    if (passed(n->status) && !passed(o->status))
        return D_NEW_PASS;
    if (n->status != o->status)
        return D_CHANGED;
    if (n->status == HR_PASS && o->has_stats && n->has_stats && n->max_ratio >= GROWTH_FLOOR &&
        n->max_ratio >= GROWTH_FACTOR * o->max_ratio)
        return D_GROWTH;
    return D_SAME;
}

/* Both backends' cases are sorted by id (rp_index_data): merge them. */
static size_t pair_up(const rp_backend *a, const rp_backend *b, dpair *out)
{
    size_t i = 0, j = 0, n = 0;
    while (i < a->n || j < b->n) {
        int c = i == a->n ? 1 : j == b->n ? -1 : strcmp(a->cases[i].id, b->cases[j].id);
        dpair p = {c <= 0 ? &a->cases[i] : NULL, c >= 0 ? &b->cases[j] : NULL, 0};
        i += c <= 0;
        j += c >= 0;
        p.cls = classify(p.o, p.n);
        out[n++] = p;
    }
    return n;
}

static void put_backend(FILE *f, const rp_backend *b)
{
    md_text(f, b->name);
    fputc(' ', f);
    md_text(f, b->version);
    if (b->options[0]) {
        fputs(" (options ", f);
        md_text(f, b->options);
        fputc(')', f);
    }
}

static void put_ratio(FILE *f, const rp_case *c)
{
    if (c && c->has_stats && c->status == HR_PASS)
        fprintf(f, "%.3g", c->max_ratio);
    else
        fputs(EM_DASH, f);
}

static void put_section(FILE *f, const rp_data *d, const dpair *v, size_t n, int cls,
                        const char *title, const char *what)
{
    size_t count = 0;
    for (size_t k = 0; k < n; k++)
        count += v[k].cls == cls;
    if (!count)
        return;
    fprintf(f, "## %s (%zu)\n\n%s\n\n", title, count, what);
    if (cls == D_GROWTH) {
        fputs("| Case | Old error / allowed | New error / allowed | Growth |\n"
              "| --- | ---: | ---: | ---: |\n",
              f);
        for (size_t k = 0; k < n; k++) {
            if (v[k].cls != cls)
                continue;
            fputs("| ", f);
            md_code_cell(f, v[k].n->id);
            fputs(" | ", f);
            put_ratio(f, v[k].o);
            fputs(" | ", f);
            put_ratio(f, v[k].n);
            if (v[k].o->max_ratio > 0)
                fprintf(f, " | %.3gx |\n", v[k].n->max_ratio / v[k].o->max_ratio);
            else
                fputs(" | from 0 |\n", f);
        }
        fputc('\n', f);
        return;
    }
    for (size_t k = 0; k < n; k++) {
        if (v[k].cls != cls)
            continue;
        const rp_case *c = v[k].n ? v[k].n : v[k].o;
        fputs("- ", f);
        md_code(f, c->id);
        fprintf(f,
                ": %s "
                "\xE2\x86\x92"
                " %s",
                v[k].o ? hr_status_name(v[k].o->status) : "(absent)",
                v[k].n ? hr_status_name(v[k].n->status) : "(absent)");
        if (v[k].n && v[k].n->message[0] && v[k].n->status != HR_PASS) {
            fputs(": ", f);
            rp_text_rel(f, d, v[k].n->message);
        }
        fputc('\n', f);
        if (cls == D_NEW_FAIL && c->description[0]) {
            fputs("  - checks: ", f);
            md_text(f, c->description);
            fputc('\n', f);
        }
        if (cls == D_NEW_FAIL && c->rerun[0]) {
            fputs("  - rerun: ", f);
            rp_code_rel(f, d, c->rerun);
            fputc('\n', f);
        }
    }
    fputc('\n', f);
}

static void write_diff(FILE *f, const rp_data *od, const rp_data *nd, const char *old_path,
                       const char *new_path, const dpair *v, size_t n)
{
    const rp_backend *ob = &od->backends[0], *nb = &nd->backends[0];
    size_t cnt[D_COUNT] = {0};
    for (size_t k = 0; k < n; k++)
        cnt[v[k].cls]++;
    fputs("# Conformance diff: ", f);
    put_backend(f, ob);
    fputs(" "
          "\xE2\x86\x92"
          " ",
          f);
    put_backend(f, nb);
    fputs("\n\nOld: ", f);
    rp_code_rel(f, nd, old_path);
    fputs(", new: ", f);
    rp_code_rel(f, nd, new_path);
    fputs(". Cases are matched by id.\n\n", f);
    fprintf(f,
            "**%zu newly failing**, %zu newly passing, %zu other status changes, %zu with "
            "error growth, %zu only in the old run, %zu only in the new run, %zu unchanged.\n\n",
            cnt[D_NEW_FAIL], cnt[D_NEW_PASS], cnt[D_CHANGED], cnt[D_GROWTH], cnt[D_ONLY_OLD],
            cnt[D_ONLY_NEW], cnt[D_SAME]);
    put_section(f, nd, v, n, D_NEW_FAIL, "Newly failing",
                "FAIL, INCORRECT_DTYPE, ERROR, CRASH or TIMEOUT now, and not before (or a new case "
                "that fails).");
    put_section(f, nd, v, n, D_NEW_PASS, "Newly passing",
                "PASS or EXPECTED_ERROR now, and not before.");
    put_section(f, nd, v, n, D_CHANGED, "Other status changes",
                "Neither newly failing nor newly passing (e.g. one failure kind for another, or "
                "now NOT_SUPPORTED).");
    char what[256];
    snprintf(what, sizeof what,
             "PASS in both, but the largest error in units of the allowed error (SPEC.md clause "
             "13) grew at least %.3gx, to at least %.3g.",
             GROWTH_FACTOR, GROWTH_FLOOR);
    put_section(f, nd, v, n, D_GROWTH, "Error growth", what);
    put_section(f, nd, v, n, D_ONLY_OLD, "Only in the old run",
                "Removed, renamed or filtered out since.");
    put_section(f, nd, v, n, D_ONLY_NEW, "Only in the new run",
                "New cases that do not fail (failing ones are under \"Newly failing\").");
}

int report_diff_main(const char *old_file, const char *new_file, of_file *out)
{
    const char *files[2] = {old_file, new_file};
    rp_data d[2];
    memset(d, 0, sizeof d);
    int rc = 0;
    for (int k = 0; k < 2 && !rc; k++) {
        if (!getcwd(d[k].cwd, sizeof d[k].cwd) || !strcmp(d[k].cwd, "/"))
            d[k].cwd[0] = '\0';
        if (rp_load_file(&d[k], files[k]) || rp_index_data(&d[k]))
            rc = CLI_EXIT_USAGE;
    }
    dpair *v = NULL;
    char *buf = NULL;
    size_t len = 0;
    if (!rc) {
        v = malloc((d[0].backends[0].n + d[1].backends[0].n + 1) * sizeof *v);
        FILE *m = v ? open_memstream(&buf, &len) : NULL;
        if (!m) {
            fputs("attnconf report: out of memory\n", stderr);
            rc = CLI_EXIT_USAGE;
        } else {
            size_t n = pair_up(&d[0].backends[0], &d[1].backends[0], v), common = 0;
            for (size_t k = 0; k < n; k++)
                common += v[k].o && v[k].n;
            write_diff(m, &d[0], &d[1], files[0], files[1], v, n);
            if (fclose(m) != 0 || !buf) {
                fputs("attnconf report: out of memory\n", stderr);
                rc = CLI_EXIT_USAGE;
            } else if (!common) {
                /* A case in one run only is newly failing only where NEW fails it, so two runs
                 * with no case in common would pass as "nothing newly failing" having compared
                 * nothing (another --filter, another case set). */
                size_t no = d[0].backends[0].n, nn = d[1].backends[0].n;
                fprintf(stderr,
                        "attnconf report: %s: no case in common with %s (%zu case%s only in the "
                        "old run, %zu only in the new run): nothing to compare; diff runs of the "
                        "same cases\n",
                        files[1], files[0], no, no == 1 ? "" : "s", nn);
                rc = CLI_EXIT_USAGE;
            } else {
                rc = rp_write_out(out, buf, len, CLI_EXIT_USAGE);
                if (!rc) {
                    for (size_t k = 0; k < n; k++)
                        rc |= v[k].cls == D_NEW_FAIL;
                }
            }
        }
    }
    free(buf);
    free(v);
    rp_free(&d[0]);
    rp_free(&d[1]);
    return rc;
}
