/* report_load.c — reading and indexing the result files of `attnconf report` (the strict
 * reader described at the top of report.c). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report_internal.h"
#include "results/results_json.h"

__attribute__((format(printf, 3, 4))) void rp_errf(const char *file, const char *field,
                                                   const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "attnconf report: %s: ", file);
    if (field)
        fprintf(stderr, "field \"%s\": ", field);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* The clause a rule id cites: N for "clauseN.<name>" (N in 1..SPEC_CLAUSES, no leading zero,
 * a non-empty name), else CLAUSE_OTHER. */
int rp_rule_clause(const char *rule)
{
    if (strncmp(rule, "clause", 6) != 0 || rule[6] < '1' || rule[6] > '9')
        return CLAUSE_OTHER;
    const char *p = rule + 6;
    int n = 0;
    while (*p >= '0' && *p <= '9' && n <= SPEC_CLAUSES)
        n = n * 10 + (*p++ - '0');
    if (n > SPEC_CLAUSES || p[0] != '.' || p[1] == '\0')
        return CLAUSE_OTHER;
    return n;
}

/* ---- loading ------------------------------------------------------------------------------ */

static rp_backend *find_backend(rp_data *d, const char *name)
{
    for (size_t i = 0; i < d->nb; i++)
        if (!strcmp(d->backends[i].name, name))
            return &d->backends[i];
    return NULL;
}

static int cmp_case_id(const void *a, const void *b)
{
    return strcmp(((const rp_case *)a)->id, ((const rp_case *)b)->id);
}

static int add_filter(rp_backend *b, const char *filter)
{
    if (!filter[0])
        return 0;
    for (size_t i = 0; i < b->nfilters; i++)
        if (!strcmp(b->filters[i], filter))
            return 0;
    const char **nf = realloc(b->filters, (b->nfilters + 1) * sizeof *nf);
    if (!nf)
        return -1;
    nf[b->nfilters++] = filter;
    b->filters = nf;
    return 0;
}

/* rp_case from what the reader read (both borrow from the same document). */
static void take_case(const char *path, const rj_result *x, rp_case *c)
{
    memset(c, 0, sizeof *c);
    c->id = x->id;
    c->family = x->family;
    c->message = x->message;
    c->rerun = x->rerun;
    c->rules = x->rules;
    for (size_t k = 0; k < json_array_size(x->rules); k++)
        c->clauses |= 1u << rp_rule_clause(json_string_value(json_array_get(x->rules, k)));
    c->file = path;
    c->status = x->status;
    c->has_stats = x->has_stats;
    c->max_abs_err = x->max_abs_err;
    c->max_rel_err = x->max_rel_err;
    c->max_ratio = x->max_ratio;
    c->first_bad = x->first_bad;
    c->ndim = x->ndim;
    memcpy(c->index, x->index, sizeof c->index);
    c->got = x->got;
    c->expected = x->expected;
    c->description = x->description;
    c->elements = x->elements;
    c->dtype = x->dtype;
    c->has_expect = x->has_expect;
    c->as_expected = x->as_expected;
    c->x_status = x->x_status;
    c->x_case = x->x_case;
    c->x_reason = x->x_reason;
    c->x_upstream = x->x_upstream;
    c->x_clause = x->x_clause;
}

int rp_load_file(rp_data *d, const char *path)
{
    char err[1024];
    rj_reader r = {path, "", err, sizeof err};
    json_t *root;
    rj_doc doc;
    if (rj_load(&r, path, &root, &doc) != 0) {
        fprintf(stderr, "attnconf report: %s\n", err);
        return -1;
    }
    json_t **roots = realloc(d->roots, (d->nroots + 1) * sizeof *roots);
    if (!roots) {
        json_decref(root);
        rp_errf(path, NULL, "out of memory");
        return -1;
    }
    d->roots = roots;
    d->roots[d->nroots++] = root; /* owned by d from here on, freed by rp_free */

    /* A partial file (the FILE.partial.json sidecar of a run still going or interrupted) is
     * refused: a report of some of the cases would read as the backend's conformance. */
    if (!doc.complete) {
        size_t n = json_array_size(doc.results);
        rp_errf(path, "complete",
                "false: results incomplete (%zu case%s so far, from an "
                "interrupted or unfinished run); finish it with `attnconf run ... --out FILE "
                "--resume` and report FILE",
                n, n == 1 ? "" : "s");
        return -1;
    }
    if (!doc.backend_name[0]) {
        rp_errf(path, "backend.name", "empty");
        return -1;
    }
    rp_backend *b = find_backend(d, doc.backend_name);
    if (b && strcmp(b->version, doc.backend_version) != 0) {
        rp_errf(path, "backend.version", "backend \"%s\" is version \"%s\" here but \"%s\" in %s",
                doc.backend_name, doc.backend_version, b->version, b->file);
        return -1;
    }
    if (!b) {
        rp_backend *nb = realloc(d->backends, (d->nb + 1) * sizeof *nb);
        if (!nb) {
            rp_errf(path, NULL, "out of memory");
            return -1;
        }
        d->backends = nb;
        b = &d->backends[d->nb++];
        memset(b, 0, sizeof *b);
        b->name = doc.backend_name;
        b->version = doc.backend_version;
        b->file = path;
        b->mutant = !strncmp(b->name, MUTANT_PREFIX, strlen(MUTANT_PREFIX));
    }
    if (!b->options)
        b->options = doc.backend_options;
    if (doc.expect_file) {
        if (b->expect_file && strcmp(b->expect_file, doc.expect_file) != 0) {
            rp_errf(path, "expectations.file", "\"%s\" here but \"%s\" in %s", doc.expect_file,
                    b->expect_file, b->file);
            return -1;
        }
        b->expect_file = doc.expect_file;
        b->expect_version = doc.expect_version;
    }
    if (add_filter(b, doc.filter)) {
        rp_errf(path, NULL, "out of memory");
        return -1;
    }

    size_t n = json_array_size(doc.results), by_status[HR_STATUS_COUNT] = {0};
    if (b->n + n > b->cap) {
        size_t cap = b->n + n;
        rp_case *nc = realloc(b->cases, (cap ? cap : 1) * sizeof *nc);
        if (!nc) {
            rp_errf(path, NULL, "out of memory");
            return -1;
        }
        b->cases = nc;
        b->cap = cap;
    }
    for (size_t i = 0; i < n; i++) {
        rj_result x;
        if (rj_result_read(&r, &doc, i, &x) != 0) {
            fprintf(stderr, "attnconf report: %s\n", err);
            return -1;
        }
        take_case(path, &x, &b->cases[b->n]);
        by_status[x.status]++;
        b->n++;
    }
    if (rj_summary_check(&r, &doc, by_status, n) != 0) {
        fprintf(stderr, "attnconf report: %s\n", err);
        return -1;
    }
    return 0;
}

int rp_cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_backend(const void *a, const void *b)
{
    return strcmp(((const rp_backend *)a)->name, ((const rp_backend *)b)->name);
}

size_t rp_family_index(const rp_data *d, const char *family)
{
    const char **p = bsearch(&family, d->families, d->nf, sizeof *d->families, rp_cmp_str);
    return p ? (size_t)(p - d->families) : 0; /* always found: families is built from cases */
}

size_t *rp_cell_counts(const rp_data *d, size_t b, size_t f)
{
    return &d->counts[(b * d->nf + f) * HR_STATUS_COUNT];
}

/* After all files are loaded: sort, reject duplicate ids, collect families, count.  Prints its
 * own error and returns -1 on failure. */
int rp_index_data(rp_data *d)
{
    if (d->nb > 1)
        qsort(d->backends, d->nb, sizeof *d->backends, cmp_backend);
    size_t total = 0;
    for (size_t i = 0; i < d->nb; i++) {
        rp_backend *b = &d->backends[i];
        if (b->n > 1)
            qsort(b->cases, b->n, sizeof *b->cases, cmp_case_id);
        if (b->nfilters > 1)
            qsort(b->filters, b->nfilters, sizeof *b->filters, rp_cmp_str);
        for (size_t k = 1; k < b->n; k++) {
            if (!strcmp(b->cases[k - 1].id, b->cases[k].id)) {
                rp_errf(b->cases[k].file, NULL,
                        "case \"%s\" of backend \"%s\" appears twice (in %s and %s)",
                        b->cases[k].id, b->name, b->cases[k - 1].file, b->cases[k].file);
                return -1;
            }
        }
        total += b->n;
    }
    d->families = malloc((total ? total : 1) * sizeof *d->families);
    if (!d->families) {
        fputs("attnconf report: out of memory\n", stderr);
        return -1;
    }
    for (size_t i = 0; i < d->nb; i++)
        for (size_t k = 0; k < d->backends[i].n; k++)
            d->families[d->nf++] = d->backends[i].cases[k].family;
    if (d->nf > 1)
        qsort(d->families, d->nf, sizeof *d->families, rp_cmp_str);
    size_t u = 0;
    for (size_t k = 0; k < d->nf; k++)
        if (u == 0 || strcmp(d->families[u - 1], d->families[k]) != 0)
            d->families[u++] = d->families[k];
    d->nf = u;
    size_t cells = d->nb * d->nf;
    d->counts = calloc((cells ? cells : 1) * HR_STATUS_COUNT, sizeof *d->counts);
    if (!d->counts) {
        fputs("attnconf report: out of memory\n", stderr);
        return -1;
    }
    for (size_t i = 0; i < d->nb; i++)
        for (size_t k = 0; k < d->backends[i].n; k++) {
            const rp_case *c = &d->backends[i].cases[k];
            rp_cell_counts(d, i, rp_family_index(d, c->family))[c->status]++;
        }
    return 0;
}

void rp_free(rp_data *d)
{
    for (size_t i = 0; i < d->nb; i++) {
        free(d->backends[i].cases);
        free(d->backends[i].filters);
    }
    free(d->backends);
    for (size_t i = 0; i < d->nroots; i++)
        json_decref(d->roots[i]);
    free(d->roots);
    free(d->families);
    free(d->counts);
}
