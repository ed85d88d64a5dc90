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
#include "common/shard.h"
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
    c->nans = x->nans;
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
    c->x_varies = x->x_varies;
    c->x_clause = x->x_clause;
    /* Output that differs from run to run can come out right by chance; such a PASS is as
     * expected (hx_status_matches) and the report renders it as the finding recorded, so the
     * report stays a function of what is reproducible.  The results JSON keeps the PASS. */
    if (c->has_expect && c->as_expected && c->x_varies[0] && c->status == HR_PASS &&
        !strcmp(c->x_status, hr_status_name(HR_FAIL))) {
        c->status = HR_FAIL;
        c->message = "";
        c->has_stats = 0;
    }
}

/* "K/N" of a shard, for messages. */
#define SHARD_FMT "%" PRIu32 "/%" PRIu32

/* The file already holding one of b's shards (any), for messages. */
static const char *a_shard_file(const rp_backend *b)
{
    for (uint32_t k = 0; k < b->shard_total; k++)
        if (b->shard_file[k])
            return b->shard_file[k];
    return b->file;
}

/* A file of backend b (created: its first) must be the same configuration as the others, and
 * when the run was sharded, one more shard of the same run.  Prints its own error and returns
 * -1 otherwise. */
static int check_run(rp_backend *b, int created, const char *path, const rj_doc *doc)
{
    if (created) {
        b->options = doc->backend_options;
        b->filter = doc->filter;
        b->runs = 1;
        if (!doc->has_shard)
            return 0;
        b->shard_total = doc->shard_total;
        b->shard_selected = doc->shard_selected;
        b->shard_selection = doc->shard_selection;
        b->shard_file = calloc(doc->shard_total, sizeof *b->shard_file);
        if (!b->shard_file) {
            rp_errf(path, NULL, "out of memory");
            return -1;
        }
        b->shard_file[doc->shard_index] = path;
        return 0;
    }
    /* One column is one configuration: the same backend with other options is another. */
    if (strcmp(b->options, doc->backend_options) != 0) {
        rp_errf(path, "backend_options",
                "backend \"%s\" has options \"%s\" here but \"%s\" in %s: results of "
                "different configurations do not merge",
                b->name, doc->backend_options, b->options, b->file);
        return -1;
    }
    if (!b->shard_total != !doc->has_shard) {
        const char *sharded = doc->has_shard ? path : a_shard_file(b);
        rp_errf(path, "shard",
                "backend \"%s\": %s is a shard of a sharded run but %s is not: merge the "
                "shards of one run, or unsharded runs, not both",
                b->name, sharded, doc->has_shard ? b->file : path);
        return -1;
    }
    if (!doc->has_shard) {
        b->runs++;
        return 0;
    }
    if (doc->shard_total != b->shard_total) {
        rp_errf(path, "shard.total",
                "backend \"%s\": shard " SHARD_FMT " here but %s is one of %" PRIu32
                " shards: the shards of one run have one count",
                b->name, doc->shard_index, doc->shard_total, a_shard_file(b), b->shard_total);
        return -1;
    }
    if (doc->shard_selected != b->shard_selected ||
        strcmp(doc->shard_selection, b->shard_selection) != 0 || strcmp(doc->filter, b->filter)) {
        rp_errf(path, "shard.selection",
                "backend \"%s\": this shard's run selected %" PRIu64
                " cases (%s, filter \"%s\") but %s's selected %" PRIu64
                " (%s, filter \"%s\"): shards of different runs or case sets",
                b->name, doc->shard_selected, doc->shard_selection, doc->filter, a_shard_file(b),
                b->shard_selected, b->shard_selection, b->filter);
        return -1;
    }
    const char *other = b->shard_file[doc->shard_index];
    if (other) {
        rp_errf(path, "shard.index",
                "backend \"%s\": shard " SHARD_FMT " is also %s: overlapping shards", b->name,
                doc->shard_index, doc->shard_total, other);
        return -1;
    }
    b->shard_file[doc->shard_index] = path;
    return 0;
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
    const int created = !b;
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
    if (check_run(b, created, path, &doc) != 0)
        return -1;
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
        b->cases[b->n].shard = doc.has_shard ? (int64_t)doc.shard_index : -1;
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
/* A sharded run's files together: every shard present, and their cases exactly the cases the
 * run selected (count and digest; b's cases sorted by id and without duplicates). */
static int check_shards_complete(const rp_backend *b)
{
    size_t missing = 0;
    for (uint32_t k = 0; k < b->shard_total; k++)
        missing += !b->shard_file[k];
    if (missing) {
        char list[512] = "";
        size_t used = 0;
        for (uint32_t k = 0; k < b->shard_total && used < sizeof list - 16; k++)
            if (!b->shard_file[k]) {
                int w = snprintf(list + used, sizeof list - used, "%s" SHARD_FMT, used ? ", " : "",
                                 k, b->shard_total);
                used += w > 0 ? (size_t)w : 0;
            }
        rp_errf(a_shard_file(b), NULL,
                "backend \"%s\": shard%s %s%s missing (%zu of %" PRIu32
                " shards given): give every shard's result file",
                b->name, missing == 1 ? "" : "s", list, used >= sizeof list - 16 ? ", ..." : "",
                b->shard_total - missing, b->shard_total);
        return -1;
    }
    uint64_t h = SHARD_DIGEST_INIT;
    for (size_t k = 0; k < b->n; k++)
        h = shard_digest_add(h, b->cases[k].id);
    char got[SHARD_DIGEST_TEXT];
    shard_digest_text(h, got);
    if (b->n != b->shard_selected || strcmp(got, b->shard_selection) != 0) {
        rp_errf(a_shard_file(b), NULL,
                "backend \"%s\": its %" PRIu32 " shards hold %zu cases (%s) but the run "
                "selected %" PRIu64 " (%s): a shard lost or gained cases",
                b->name, b->shard_total, b->n, got, b->shard_selected, b->shard_selection);
        return -1;
    }
    return 0;
}

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
            const rp_case *p = &b->cases[k - 1], *c = &b->cases[k];
            if (strcmp(p->id, c->id) != 0)
                continue;
            if (p->shard >= 0 && c->shard >= 0 && p->shard != c->shard)
                rp_errf(c->file, NULL,
                        "case \"%s\" of backend \"%s\" is in shard %" PRId64 "/%" PRIu32
                        " (%s) and in shard %" PRId64 "/%" PRIu32 " (%s): overlapping shards",
                        c->id, b->name, p->shard, b->shard_total, p->file, c->shard, b->shard_total,
                        c->file);
            else
                rp_errf(c->file, NULL, "case \"%s\" of backend \"%s\" appears twice (in %s and %s)",
                        c->id, b->name, p->file, c->file);
            return -1;
        }
        if (b->shard_total && check_shards_complete(b) != 0)
            return -1;
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
        free(d->backends[i].shard_file);
    }
    free(d->backends);
    for (size_t i = 0; i < d->nroots; i++)
        json_decref(d->roots[i]);
    free(d->roots);
    free(d->families);
    free(d->counts);
}
