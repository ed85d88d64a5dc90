/* report.c — `attnconf report`: result files (the JSON of output.c) -> REPORT.md.
 *
 *   attnconf report [--out FILE] [--title TITLE] [--command CMD] RESULTS.json...
 *
 * Several files may name the same backend (e.g. runs with different filters); their results
 * are merged, and a case id seen twice for one backend is an error.  Backends whose name starts
 * with "mutant_" are test-only backends with one deliberate bug: they get their own table, and
 * only per-family counts of the cases that caught them.
 *
 * "Spec clauses" groups the cases by the SPEC.md clause their rule ids cite: a rule id
 * "clauseN.<name>" (N in 1..19, no leading zero, a non-empty name) belongs to clause N, any
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

#include "harness.h"

#define MUTANT_PREFIX "mutant_"
#define DEFAULT_TITLE "attnconf conformance report"
#define EM_DASH "\xE2\x80\x94"
#define SPEC_CLAUSES 19                /* SPEC.md clauses 1..19 */
#define CLAUSE_OTHER (SPEC_CLAUSES + 1) /* row of rule ids that cite no clause */

typedef struct rp_case {
    const char *id, *family, *message, *rerun; /* borrowed from the loaded JSON */
    const json_t *rules;                       /* borrowed; an array of strings (checked) */
    unsigned clauses;                          /* bit k: a rule cites clause k (CLAUSE_OTHER) */
    const char *file;
    hr_status status;
    int has_stats;
    double max_abs_err, max_rel_err;
    double max_ratio;                          /* 0 when the file has none (older runs) */
    int64_t first_bad;
    int ndim;
    int64_t index[4];
    double got, expected;
    const char *description;                   /* "" when the file has none */
    const char *dtype;                         /* "f32"/"f16"/"bf16"/"bool"; "" when none */
    /* run --expect only (x_* borrowed; x_case "" when no entry matched) */
    int has_expect, as_expected;
    const char *x_status, *x_case, *x_reason, *x_upstream;
    int64_t x_clause;
} rp_case;

typedef struct rp_backend {
    const char *name, *version, *file;
    const char *expect_file, *expect_version; /* NULL: the run had no --expect */
    const char *options;                      /* "" when none */
    int mutant;
    const char **filters; /* distinct non-empty filters of the merged files */
    size_t nfilters;
    rp_case *cases;
    size_t n, cap;
} rp_backend;

typedef struct rp_data {
    json_t **roots;
    size_t nroots;
    rp_backend *backends;
    size_t nb;
    const char **families;
    size_t nf;
    size_t *counts; /* [nb][nf][HR_STATUS_COUNT] */
    char cwd[4096];  /* "" when unknown or "/": no path rewriting */
} rp_data;

__attribute__((format(printf, 3, 4))) static void errf(const char *file, const char *field,
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

static const char *type_name_of(json_type t)
{
    switch (t) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

static const char *type_name(const json_t *j)
{
    return j ? type_name_of(json_typeof(j)) : "nothing";
}

/* ---- strict field readers: each returns 0, or prints "FILE: field "CTX.KEY": ..." and -1 ----- */

typedef struct rd {
    const char *file;
    char ctx[64]; /* "" or e.g. "results[3]" */
} rd;

static void field_name(const rd *r, const char *key, char *out, size_t cap)
{
    snprintf(out, cap, "%s%s%s", r->ctx, r->ctx[0] ? "." : "", key);
}

/* errf for field `key` of the object that r->ctx names (messages are cut at 511 bytes). */
__attribute__((format(printf, 3, 4))) static void ferr(const rd *r, const char *key,
                                                      const char *fmt, ...)
{
    char fn[128], msg[512];
    va_list ap;
    field_name(r, key, fn, sizeof fn);
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    errf(r->file, fn, "%s", msg);
}

static json_t *need(const rd *r, const json_t *obj, const char *key, json_type type)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        ferr(r, key, "missing");
        return NULL;
    }
    if (json_typeof(v) != type) {
        ferr(r, key, "expected %s, got %s", type_name_of(type), type_name(v));
        return NULL;
    }
    return v;
}

static int get_str(const rd *r, const json_t *obj, const char *key, const char **out)
{
    json_t *v = need(r, obj, key, JSON_STRING);
    if (!v)
        return -1;
    *out = json_string_value(v);
    return 0;
}

static int get_int(const rd *r, const json_t *obj, const char *key, int64_t *out)
{
    json_t *v = need(r, obj, key, JSON_INTEGER);
    if (!v)
        return -1;
    *out = (int64_t)json_integer_value(v);
    return 0;
}

/* A number, or "nan"/"inf"/"-inf" (see the schema in output.c). */
static int get_num(const rd *r, const json_t *obj, const char *key, double *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        ferr(r, key, "missing");
        return -1;
    }
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (!strcmp(s, "nan")) {
            *out = NAN;
            return 0;
        }
        if (!strcmp(s, "inf") || !strcmp(s, "-inf")) {
            *out = s[0] == '-' ? -INFINITY : INFINITY;
            return 0;
        }
        ferr(r, key, "expected a number or \"nan\"/\"inf\"/\"-inf\", got \"%s\"", s);
        return -1;
    }
    ferr(r, key, "expected a number, got %s", type_name(v));
    return -1;
}

static int parse_status(const char *s, hr_status *out)
{
    for (int k = 0; k < HR_STATUS_COUNT; k++) {
        const char *n = hr_status_name((hr_status)k);
        if (n && !strcmp(n, s)) {
            *out = (hr_status)k;
            return 0;
        }
    }
    return -1;
}

/* The clause a rule id cites: N for "clauseN.<name>" (N in 1..SPEC_CLAUSES, no leading zero,
 * a non-empty name), else CLAUSE_OTHER. */
static int rule_clause(const char *rule)
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

static int read_case(const rd *r, const json_t *o, rp_case *c)
{
    const char *status;
    memset(c, 0, sizeof *c);
    c->file = r->file;
    c->first_bad = -1;
    if (get_str(r, o, "id", &c->id) || get_str(r, o, "family", &c->family) ||
        get_str(r, o, "status", &status) || get_str(r, o, "message", &c->message) ||
        get_str(r, o, "rerun", &c->rerun))
        return -1;
    if (parse_status(status, &c->status) != 0) {
        ferr(r, "status", "unknown status \"%s\"", status);
        return -1;
    }
    if (!(c->rules = need(r, o, "rules", JSON_ARRAY)))
        return -1;
    for (size_t k = 0; k < json_array_size(c->rules); k++) {
        const json_t *e = json_array_get(c->rules, k);
        if (!json_is_string(e)) {
            ferr(r, "rules", "entry %zu is %s, expected a string", k, type_name(e));
            return -1;
        }
        c->clauses |= 1u << rule_clause(json_string_value(e));
    }
    double seconds;
    if (get_num(r, o, "seconds", &seconds))
        return -1;
    c->description = "";
    if (json_object_get(o, "description") && get_str(r, o, "description", &c->description))
        return -1;
    c->dtype = "";
    if (json_object_get(o, "dtype") && get_str(r, o, "dtype", &c->dtype))
        return -1;
    c->x_case = c->x_status = c->x_reason = c->x_upstream = "";
    if (json_object_get(o, "expected")) {
        json_t *x = need(r, o, "expected", JSON_OBJECT);
        rd xr = *r;
        snprintf(xr.ctx, sizeof xr.ctx, "%.40s.expected", r->ctx);
        if (!x)
            return -1;
        json_t *ok = json_object_get(x, "as_expected");
        if (!json_is_boolean(ok)) {
            ferr(&xr, "as_expected", "expected a boolean, got %s", type_name(ok));
            return -1;
        }
        c->has_expect = 1;
        c->as_expected = json_is_true(ok);
        hr_status xs;
        if (json_object_get(x, "case") &&
            (get_str(&xr, x, "case", &c->x_case) || get_str(&xr, x, "status", &c->x_status) ||
             get_int(&xr, x, "clause", &c->x_clause) || get_str(&xr, x, "reason", &c->x_reason) ||
             get_str(&xr, x, "upstream", &c->x_upstream)))
            return -1;
        if (c->x_case[0] && parse_status(c->x_status, &xs) != 0) {
            ferr(&xr, "status", "unknown status \"%s\"", c->x_status);
            return -1;
        }
    }
    /* The stats fields come as a group: all or none (see the schema in output.c). */
    if (!json_object_get(o, "max_abs_err") && !json_object_get(o, "max_rel_err") &&
        !json_object_get(o, "first_bad")) {
        static const char *const bad_keys[] = {"bad_index", "bad_got", "bad_expected"};
        for (size_t k = 0; k < sizeof bad_keys / sizeof bad_keys[0]; k++)
            if (json_object_get(o, bad_keys[k])) {
                ferr(r, bad_keys[k], "present without max_abs_err/max_rel_err/first_bad");
                return -1;
            }
        return 0;
    }
    c->has_stats = 1;
    if (get_num(r, o, "max_abs_err", &c->max_abs_err) ||
        get_num(r, o, "max_rel_err", &c->max_rel_err) || get_int(r, o, "first_bad", &c->first_bad))
        return -1;
    if (json_object_get(o, "max_ratio") && get_num(r, o, "max_ratio", &c->max_ratio))
        return -1;
    if (c->first_bad < -1) {
        ferr(r, "first_bad", "must be >= -1, got %" PRId64, c->first_bad);
        return -1;
    }
    if (c->first_bad < 0) {
        if (json_object_get(o, "bad_index")) {
            ferr(r, "bad_index", "present but first_bad is -1");
            return -1;
        }
        return 0;
    }
    json_t *idx = need(r, o, "bad_index", JSON_ARRAY);
    if (!idx)
        return -1;
    if (json_array_size(idx) > 4) {
        ferr(r, "bad_index", "more than 4 entries");
        return -1;
    }
    c->ndim = (int)json_array_size(idx);
    for (int k = 0; k < c->ndim; k++) {
        json_t *e = json_array_get(idx, (size_t)k);
        if (!json_is_integer(e)) {
            ferr(r, "bad_index", "entry %d is not an integer", k);
            return -1;
        }
        c->index[k] = (int64_t)json_integer_value(e);
    }
    return get_num(r, o, "bad_got", &c->got) || get_num(r, o, "bad_expected", &c->expected)
               ? -1
               : 0;
}

static int check_summary(const rd *r, const json_t *root, const size_t *by_status, size_t total)
{
    json_t *sum = need(r, root, "summary", JSON_OBJECT);
    if (!sum)
        return -1;
    rd sr = *r;
    snprintf(sr.ctx, sizeof sr.ctx, "summary");
    for (int k = 0; k <= HR_STATUS_COUNT; k++) {
        const char *key = k < HR_STATUS_COUNT ? hr_status_name((hr_status)k) : "total";
        size_t want = k < HR_STATUS_COUNT ? by_status[k] : total;
        int64_t got;
        /* CRASH, TIMEOUT and CASE_ERROR came later: a file from before them has no such key,
         * and then can have no such result either. */
        if (key && k >= HR_CRASH && k < HR_STATUS_COUNT && !json_object_get(sum, key))
            got = 0;
        else if (!key || get_int(&sr, sum, key, &got))
            return -1;
        if (got < 0 || (uint64_t)got != want) {
            errf(r->file, NULL, "field \"summary.%s\" is %" PRId64 " but the results have %zu",
                 key, got, want);
            return -1;
        }
    }
    return 0;
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

static int load_file(rp_data *d, const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        errf(path, NULL, "%s", stat(path, &sb) != 0 ? strerror(errno) : "not a regular file");
        return -1;
    }
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        if (jerr.line > 0)
            errf(path, NULL, "line %d column %d: %s", jerr.line, jerr.column, jerr.text);
        else
            errf(path, NULL, "%s", jerr.text);
        return -1;
    }
    json_t **roots = realloc(d->roots, (d->nroots + 1) * sizeof *roots);
    if (!roots) {
        json_decref(root);
        errf(path, NULL, "out of memory");
        return -1;
    }
    d->roots = roots;
    d->roots[d->nroots++] = root; /* owned by d from here on, freed by rp_free */

    rd r = {path, ""};
    if (!json_is_object(root)) {
        errf(path, NULL, "expected a JSON object at the top level, got %s", type_name(root));
        return -1;
    }
    int64_t version;
    if (get_int(&r, root, "attnconf_results", &version))
        return -1;
    if (version != 1) {
        errf(path, "attnconf_results", "unsupported results version %" PRId64 " (expected 1)",
             version);
        return -1;
    }
    /* A partial file (the FILE.partial.json sidecar of a run still going or interrupted) is
     * refused: a report of some of the cases would read as the backend's conformance. */
    json_t *complete = json_object_get(root, "complete");
    if (complete && !json_is_boolean(complete)) {
        errf(path, "complete", "expected a boolean, got %s", type_name(complete));
        return -1;
    }
    if (json_is_false(complete)) {
        json_t *res = json_object_get(root, "results");
        errf(path, "complete", "false: results incomplete (%zu case%s so far, from an "
             "interrupted or unfinished run); finish it with `attnconf run ... --out FILE "
             "--resume` and report FILE", json_array_size(res),
             json_array_size(res) == 1 ? "" : "s");
        return -1;
    }
    json_t *backend = need(&r, root, "backend", JSON_OBJECT);
    if (!backend)
        return -1;
    rd br = {path, "backend"};
    const char *name, *version_s, *bpath, *cases_dir, *filter;
    if (get_str(&br, backend, "name", &name) || get_str(&br, backend, "version", &version_s) ||
        get_str(&br, backend, "path", &bpath) || get_str(&r, root, "cases_dir", &cases_dir) ||
        get_str(&r, root, "filter", &filter))
        return -1;
    if (!name[0]) {
        errf(path, "backend.name", "empty");
        return -1;
    }
    json_t *results = need(&r, root, "results", JSON_ARRAY);
    if (!results)
        return -1;

    rp_backend *b = find_backend(d, name);
    if (b && strcmp(b->version, version_s) != 0) {
        errf(path, "backend.version", "backend \"%s\" is version \"%s\" here but \"%s\" in %s",
             name, version_s, b->version, b->file);
        return -1;
    }
    if (!b) {
        rp_backend *nb = realloc(d->backends, (d->nb + 1) * sizeof *nb);
        if (!nb) {
            errf(path, NULL, "out of memory");
            return -1;
        }
        d->backends = nb;
        b = &d->backends[d->nb++];
        memset(b, 0, sizeof *b);
        b->name = name;
        b->version = version_s;
        b->file = path;
        b->mutant = !strncmp(name, MUTANT_PREFIX, strlen(MUTANT_PREFIX));
    }
    if (!b->options) {
        b->options = "";
        if (json_object_get(root, "backend_options") &&
            get_str(&r, root, "backend_options", &b->options))
            return -1;
    }
    json_t *ex = json_object_get(root, "expectations");
    if (ex) {
        rd xr = {path, "expectations"};
        const char *xf, *xv;
        if (!json_is_object(ex)) {
            errf(path, "expectations", "expected an object, got %s", type_name(ex));
            return -1;
        }
        if (get_str(&xr, ex, "file", &xf) || get_str(&xr, ex, "version", &xv))
            return -1;
        if (b->expect_file && strcmp(b->expect_file, xf) != 0) {
            errf(path, "expectations.file", "\"%s\" here but \"%s\" in %s", xf,
                 b->expect_file, b->file);
            return -1;
        }
        b->expect_file = xf;
        b->expect_version = xv;
    }
    if (add_filter(b, filter)) {
        errf(path, NULL, "out of memory");
        return -1;
    }

    size_t n = json_array_size(results), by_status[HR_STATUS_COUNT] = {0};
    if (b->n + n > b->cap) {
        size_t cap = b->n + n;
        rp_case *nc = realloc(b->cases, (cap ? cap : 1) * sizeof *nc);
        if (!nc) {
            errf(path, NULL, "out of memory");
            return -1;
        }
        b->cases = nc;
        b->cap = cap;
    }
    for (size_t i = 0; i < n; i++) {
        rd cr = {path, ""};
        snprintf(cr.ctx, sizeof cr.ctx, "results[%zu]", i);
        json_t *o = json_array_get(results, i);
        if (!json_is_object(o)) {
            errf(path, cr.ctx, "expected an object, got %s", type_name(o));
            return -1;
        }
        if (read_case(&cr, o, &b->cases[b->n]))
            return -1;
        by_status[b->cases[b->n].status]++;
        b->n++;
    }
    return check_summary(&r, root, by_status, n);
}


static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_backend(const void *a, const void *b)
{
    return strcmp(((const rp_backend *)a)->name, ((const rp_backend *)b)->name);
}

static size_t family_index(const rp_data *d, const char *family)
{
    const char **p = bsearch(&family, d->families, d->nf, sizeof *d->families, cmp_str);
    return p ? (size_t)(p - d->families) : 0; /* always found: families is built from cases */
}

static size_t *cell_counts(const rp_data *d, size_t b, size_t f)
{
    return &d->counts[(b * d->nf + f) * HR_STATUS_COUNT];
}

/* After all files are loaded: sort, reject duplicate ids, collect families, count.  Prints its
 * own error and returns -1 on failure. */
static int index_data(rp_data *d)
{
    if (d->nb > 1)
        qsort(d->backends, d->nb, sizeof *d->backends, cmp_backend);
    size_t total = 0;
    for (size_t i = 0; i < d->nb; i++) {
        rp_backend *b = &d->backends[i];
        if (b->n > 1)
            qsort(b->cases, b->n, sizeof *b->cases, cmp_case_id);
        if (b->nfilters > 1)
            qsort(b->filters, b->nfilters, sizeof *b->filters, cmp_str);
        for (size_t k = 1; k < b->n; k++) {
            if (!strcmp(b->cases[k - 1].id, b->cases[k].id)) {
                errf(b->cases[k].file, NULL,
                     "case \"%s\" of backend \"%s\" appears twice (in %s and %s)", b->cases[k].id,
                     b->name, b->cases[k - 1].file, b->cases[k].file);
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
        qsort(d->families, d->nf, sizeof *d->families, cmp_str);
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
            cell_counts(d, i, family_index(d, c->family))[c->status]++;
        }
    return 0;
}

static void rp_free(rp_data *d)
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

/* ---- Markdown helpers --------------------------------------------------------------------- */

/* Text of the report with absolute paths under the current directory made relative (see the
 * top comment).  A match must start a token and end at '/' or the token's end, so "/a/bc" is
 * not rewritten for a cwd of "/a/b".  Returns a malloc'd string, or NULL (then print s as is). */
static char *relative(const rp_data *d, const char *s)
{
    size_t n = strlen(s), cl = strlen(d->cwd), o = 0;
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n;) {
        int at_token = i == 0 || strchr(" \t='\"(:,", s[i - 1]) != NULL;
        if (cl && at_token && !strncmp(s + i, d->cwd, cl) &&
            (s[i + cl] == '\0' || strchr("/ \t'\"),:;", s[i + cl]) != NULL)) {
            out[o++] = '.'; /* "." shorter than cwd (>= 2 bytes): out never outgrows n */
            i += cl;
        } else {
            out[o++] = s[i++];
        }
    }
    out[o] = '\0';
    return out;
}

/* Inline text: backslash-escape Markdown punctuation (CommonMark allows it before any ASCII
 * punctuation, and GFM tables need "\|"); control characters become spaces. */
static int is_alnum(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static void md_text(FILE *f, const char *s)
{
    for (const char *p = s; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        /* An intraword '_' (as in mutant_topleft) cannot delimit emphasis: leave it readable. */
        int intraword_ = ch == '_' && p > s && is_alnum(p[-1]) && is_alnum(p[1]);
        if (ch < 0x20 || ch == 0x7F)
            fputc(' ', f);
        else if (ch && !intraword_ && strchr("\\`*_[]<>|~&!#", ch))
            fprintf(f, "\\%c", ch);
        else
            fputc(ch, f);
    }
}

/* A family name; the harness derives it from the case id, which could leave it empty. */
static void md_family(FILE *f, const char *s)
{
    if (*s)
        md_text(f, s);
    else
        fputs("(no family)", f);
}

static size_t longest_backtick_run(const char *s)
{
    size_t best = 0, run = 0;
    for (; *s; s++) {
        run = (*s == '`') ? run + 1 : 0;
        if (run > best)
            best = run;
    }
    return best;
}

static void put_repeat(FILE *f, char ch, size_t n)
{
    while (n--)
        fputc(ch, f);
}

/* A code span that survives backticks in its content (CommonMark: a longer fence, and a space
 * of padding when the content starts or ends with a backtick).  In a GFM table cell
 * (`in_cell`), '|' is written "\|": GFM removes that backslash before it parses the cell, even
 * inside a code span. */
static void md_code_span(FILE *f, const char *s, int in_cell)
{
    if (!*s) {
        fputs("(empty)", f);
        return;
    }
    size_t fence = longest_backtick_run(s) + 1;
    int pad = s[0] == '`' || s[strlen(s) - 1] == '`';
    put_repeat(f, '`', fence);
    if (pad)
        fputc(' ', f);
    for (; *s; s++) {
        if (*s == '|' && in_cell)
            fputs("\\|", f);
        else
            fputc(((unsigned char)*s < 0x20 || *s == 0x7F) ? ' ' : *s, f);
    }
    if (pad)
        fputc(' ', f);
    put_repeat(f, '`', fence);
}

static void md_code(FILE *f, const char *s)
{
    md_code_span(f, s, 0);
}

static void md_code_cell(FILE *f, const char *s)
{
    md_code_span(f, s, 1);
}

static void md_code_rel(FILE *f, const rp_data *d, const char *s)
{
    char *r = relative(d, s);
    md_code(f, r ? r : s);
    free(r);
}

static void md_text_rel(FILE *f, const rp_data *d, const char *s)
{
    char *r = relative(d, s);
    md_text(f, r ? r : s);
    free(r);
}

/* ---- the report --------------------------------------------------------------------------- */

typedef struct tally {
    size_t by_status[HR_STATUS_COUNT];
    size_t total, ran, passed, bad, ns;
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
    t->ran = t->passed + t->bad;
    t->total = t->ran + t->ns;
}

static tally backend_tally(const rp_data *d, size_t b)
{
    tally t;
    memset(&t, 0, sizeof t);
    for (size_t f = 0; f < d->nf; f++)
        tally_add(&t, cell_counts(d, b, f));
    return t;
}

/* "12/12 pass", "3 fail / 9", "not supported", "—"; "+ N not supported" when mixed. */
static void put_cell(FILE *f, const tally *t)
{
    if (t->total == 0) {
        fputs(EM_DASH, f);
        return;
    }
    if (t->ran == 0) {
        fputs("not supported", f);
        return;
    }
    if (t->bad == 0)
        fprintf(f, "%zu/%zu pass", t->passed, t->ran);
    else
        fprintf(f, "%zu fail / %zu", t->bad, t->ran);
    if (t->ns)
        fprintf(f, ", %zu not supported", t->ns);
}

/* The mutant table's proof columns (every mutant caught by at least three cases in at least two
 * dtypes): the number of cases that caught mutant b, and the distinct float dtypes of those
 * cases, sorted ("2: f16, f32"); mask-builder cases ("bool") and results without a dtype count
 * as cases only. */
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

static void put_matrix(FILE *f, const rp_data *d, int mutants)
{
    fputs(mutants ? "| Mutant | Version |" : "| Backend | Version |", f);
    for (size_t k = 0; k < d->nf; k++) {
        fputc(' ', f);
        md_family(f, d->families[k]);
        fputs(" |", f);
    }
    fputs(mutants ? " Total | Caught | Catching cases | Catching dtypes |\n" : " Total |\n", f);
    fputs("| --- | --- |", f);
    for (size_t k = 0; k < d->nf; k++)
        fputs(" --- |", f);
    fputs(mutants ? " --- | --- | ---: | --- |\n" : " --- |\n", f);
    for (size_t b = 0; b < d->nb; b++) {
        if (d->backends[b].mutant != mutants)
            continue;
        fputs("| ", f);
        md_text(f, d->backends[b].name);
        fputs(" | ", f);
        md_text(f, d->backends[b].version);
        fputs(" |", f);
        for (size_t k = 0; k < d->nf; k++) {
            tally t;
            memset(&t, 0, sizeof t);
            tally_add(&t, cell_counts(d, b, k));
            fputc(' ', f);
            put_cell(f, &t);
            fputs(" |", f);
        }
        tally t = backend_tally(d, b);
        fputc(' ', f);
        put_cell(f, &t);
        fputs(" |", f);
        if (mutants) {
            fputs(t.bad ? " yes |" : " **no** |", f);
            put_catching(f, d, b);
        }
        fputc('\n', f);
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
                      "| --- | --- | ---: | ---: | ---: | --- |\n", f);
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
        md_text_rel(f, d, c->message);
    }
    fputc('\n', f);
    if (c->has_stats) {
        fputs("  - ", f);
        /* The same line the harness prints, from the fields the JSON carried. */
        hr_result r = {.first_bad = c->first_bad, .bad_ndim = c->ndim, .bad_got = c->got,
                       .bad_expected = c->expected, .max_abs_err = c->max_abs_err,
                       .max_rel_err = c->max_rel_err, .max_ratio = c->max_ratio};
        for (int k = 0; k < c->ndim && k < 4; k++)
            r.bad_index[k] = c->index[k];
        hr_write_stats(f, &r);
        fputc('\n', f);
    }
    if (c->rerun[0]) {
        fputs("  - rerun: ", f);
        md_code_rel(f, d, c->rerun);
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
        fputs(thirdparty ? "No failures outside the third-party sections.\n\n"
                         : "No failures.\n\n", f);

    int mutants = 0;
    for (size_t b = 0; b < d->nb; b++)
        mutants |= d->backends[b].mutant;
    if (!mutants)
        return;
    fputs("Mutants: cases that caught each one, by family (individual failures are not "
          "listed):\n\n", f);
    for (size_t b = 0; b < d->nb; b++) {
        if (!d->backends[b].mutant)
            continue;
        tally t = backend_tally(d, b);
        fputs("- ", f);
        md_text(f, d->backends[b].name);
        if (t.bad == 0) {
            fputs(": **not caught**\n", f);
            continue;
        }
        fputs(": ", f);
        int first = 1;
        for (size_t k = 0; k < d->nf; k++) {
            tally c;
            memset(&c, 0, sizeof c);
            tally_add(&c, cell_counts(d, b, k));
            if (!c.bad)
                continue;
            fputs(first ? "" : ", ", f);
            md_family(f, d->families[k]);
            fprintf(f, " %zu", c.bad);
            first = 0;
        }
        fprintf(f, " (%zu caught in total)\n", t.bad);
    }
    fputc('\n', f);
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
        if (c->message[0] && c->status != HR_NOT_SUPPORTED) {
            fputs(" Harness: ", f);
            md_text_rel(f, d, c->message);
            fputc('.', f);
        }
        /* A row-check failure ("row 0 must be finite ...") says all there is; the statistics
         * compare the other rows with the reference. */
        if (c->has_stats && c->first_bad >= 0 && strncmp(c->message, "row ", 4) != 0) {
            fputs(" Measured: ", f);
            hr_result r = {.first_bad = c->first_bad, .bad_ndim = c->ndim, .bad_got = c->got,
                           .bad_expected = c->expected, .max_abs_err = c->max_abs_err,
                           .max_rel_err = c->max_rel_err, .max_ratio = c->max_ratio};
            for (int j = 0; j < c->ndim && j < 4; j++)
                r.bad_index[j] = c->index[j];
            hr_write_stats(f, &r);
            fputc('.', f);
        }
        fputc('\n', f);
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
    snprintf(cmd, sizeof cmd, "ctest --test-dir build/default -R 'thirdparty\\.%s$' -V",
             be->name);
    fputs("Rerun: ", f);
    md_code(f, cmd);
    fputs(". Expected results: ", f);
    md_code_rel(f, d, be->expect_file);
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
        fprintf(f, "**%zu observed status%s differ%s from the recorded ones** (an upstream change, "
                "or a stale file):\n\n", nu, nu == 1 ? "" : "es", nu == 1 ? "s" : "");
        for (size_t k = 0; k < nu; k++) {
            fputs("- ", f);
            md_code(f, v[k]->id);
            fprintf(f, ": observed %s, recorded %s\n", hr_status_name(v[k]->status),
                    v[k]->x_case[0] ? v[k]->x_status : "PASS or EXPECTED_ERROR");
        }
        fputc('\n', f);
    }
    fputs("| PASS | EXPECTED_ERROR | NOT_SUPPORTED | FAIL | INCORRECT_DTYPE | ERROR | Total |\n"
          "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n|", f);
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
    for (size_t i = 0; i < nd;) {
        size_t j = i + 1;
        while (j < nd && !strcmp(v[j]->x_case, v[i]->x_case))
            j++;
        put_finding(f, d, v + i, j - i);
        i = j;
    }
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
    qsort(cls, ncls, sizeof *cls, cmp_str);
    fputs("## Kernel-path coverage\n\nThe `" PATHS_FAMILY "` cases repeat the semantics that "
          "break most often (masked-slot poison, fully masked rows, windows, left padding, GQA "
          "with causal) at shapes that make real kernels take different code paths: the "
          "shape class in each id (`q1_k600`: Lq = 1 over 600 keys) is a column here.\n\n"
          "| Backend |", f);
    for (size_t i = 0; i < ncls; i++)
        fprintf(f, " %s |", cls[i]);
    fputs("\n| --- |", f);
    for (size_t i = 0; i < ncls; i++)
        fputs(" --- |", f);
    fputc('\n', f);
    for (size_t b = 0; b < d->nb; b++) {
        const rp_backend *be = &d->backends[b];
        if (be->mutant)
            continue;
        fputs("| ", f);
        md_text(f, be->name);
        fputs(" |", f);
        for (size_t i = 0; i < ncls; i++) {
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
          "the case checks, then the first element that broke the tolerance.\n\n", f);
    for (size_t b = 0; b < d->nb; b++)
        if (d->backends[b].expect_file && !d->backends[b].mutant &&
            put_thirdparty_backend(f, d, b))
            return -1;
    return 0;
}

/* Sort s[0..n) bytewise and drop repeats; returns the new count. */
static size_t sort_unique(const char **s, size_t n)
{
    if (n > 1)
        qsort(s, n, sizeof *s, cmp_str);
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
        if (t.ns)
            fprintf(f, t.ran ? " + %zu not supported" : " %zu not supported", t.ns);
    }
    if (!any)
        fputs(EM_DASH, f);
}

/* "Mutants caught" cell of clause k: mutants with a bad result on a case citing it, by name. */
static void put_clause_mutants(FILE *f, const rp_data *d, int k)
{
    int any = 0;
    for (size_t b = 0; b < d->nb; b++) {
        const rp_backend *be = &d->backends[b];
        int caught = 0;
        for (size_t i = 0; be->mutant && i < be->n && !caught; i++)
            caught = (be->cases[i].clauses & (1u << k)) && hr_status_is_bad(be->cases[i].status);
        if (!caught)
            continue;
        fputs(any ? ", " : "", f);
        any = 1;
        md_text(f, be->name);
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
          "| --- | --- | ---: | --- | --- |\n", f);
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
                    if (rule_clause(rule) == k)
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
          "with a FAIL, INCORRECT_DTYPE or ERROR on at least one case citing the clause.\n\n", f);
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
                md_text_rel(f, d, ns[k]->message);
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
    size_t fence = longest_backtick_run(s) + 1;
    if (fence < 3)
        fence = 3;
    put_repeat(f, '`', fence);
    fputs("sh\n", f);
    for (; *s; s++)
        fputc(((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7F ? ' ' : *s, f);
    fputc('\n', f);
    put_repeat(f, '`', fence);
    fputc('\n', f);
}

static int write_report(FILE *f, const rp_data *d, const char *title, const char *command,
                        size_t nfiles)
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
          "backend lacks a capability the case requires) is neither. ", f);
    fprintf(f, "It was generated from %zu result file%s with:\n\n", nfiles, nfiles == 1 ? "" : "s");
    char *cmd = relative(d, command);
    put_fenced(f, cmd ? cmd : command);
    free(cmd);

    fputs("\n## Conformance matrix\n\n", f);
    int real = 0, mutants = 0;
    for (size_t b = 0; b < d->nb; b++) {
        real += !d->backends[b].mutant;
        mutants += d->backends[b].mutant;
    }
    if (real)
        put_matrix(f, d, 0);
    else
        fputs("No results for non-mutant backends.\n", f);
    fputc('\n', f);
    fputs("A cell is passed/run cases, or failed cases / run cases; NOT_SUPPORTED cases are not "
          "run. " EM_DASH " means the family has no cases in the results.\n\n", f);
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
              "expected result)\n\n", f);
        put_matrix(f, d, 1);
        fputs("\nCatching cases: cases on which the mutant FAILed, had an INCORRECT_DTYPE, "
              "ERRORed, crashed or timed out. Catching dtypes: the distinct float dtypes of "
              "those cases (q's, or the cache's; mask-builder cases have none). The suite "
              "requires at least three catching cases in at least two dtypes of every mutant "
              "whose bug can show in two (ctest conformance.mutant_proof.*).\n\n", f);
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

static const char usage_text[] =
    "usage: attnconf report [--out FILE] [--title TITLE] [--command CMD] RESULTS.json...\n"
    "Merge result files written by `attnconf run --format json` into a Markdown report\n"
    "(stdout unless --out).  --command: the command line to show in the report.\n";

static int usage_error(const char *fmt, const char *arg)
{
    fputs("attnconf report: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    fputs(usage_text, stderr);
    return 2;
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

static int write_out(const char *out, const char *buf, size_t len)
{
    FILE *f = out ? fopen(out, "wb") : stdout;
    if (!f) {
        errf(out, NULL, "cannot open for writing");
        return 1;
    }
    int bad = fwrite(buf, 1, len, f) != len;
    bad |= out ? fclose(f) != 0 : fflush(f) != 0;
    if (bad) {
        errf(out ? out : "<stdout>", NULL, "write error");
        return 1;
    }
    return 0;
}

int hr_report_main(int argc, char **argv)
{
    const char *out = NULL, *title = DEFAULT_TITLE, *command = NULL;
    if (argc < 1 || !argv)
        return usage_error("%s", "no arguments");
    const char **files = malloc((size_t)argc * sizeof *files);
    if (!files) {
        fputs("attnconf report: out of memory\n", stderr);
        return 1;
    }
    size_t nfiles = 0;
    int opts_done = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!a)
            break;
        if (opts_done || a[0] != '-' || !a[1]) {
            files[nfiles++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            opts_done = 1;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage_text, stdout);
            free(files);
            return 0;
        }
        static const char *const valued[] = {"--out", "--title", "--command"};
        const char **dest[] = {&out, &title, &command};
        int matched = 0;
        for (int k = 0; k < 3 && !matched; k++) {
            size_t l = strlen(valued[k]);
            if (strncmp(a, valued[k], l) != 0 || (a[l] != '\0' && a[l] != '='))
                continue;
            matched = 1;
            if (a[l] == '=') {
                *dest[k] = a + l + 1;
            } else if (i + 1 < argc && argv[i + 1]) {
                *dest[k] = argv[++i];
            } else {
                free(files);
                return usage_error("%s needs a value", valued[k]);
            }
        }
        if (!matched) {
            free(files);
            return usage_error("unknown option %s", a);
        }
    }
    if (nfiles == 0) {
        free(files);
        return usage_error("%s", "no result files given");
    }
    if (out && !out[0]) {
        free(files);
        return usage_error("%s", "--out needs a file name");
    }

    rp_data d;
    memset(&d, 0, sizeof d);
    if (!getcwd(d.cwd, sizeof d.cwd) || !strcmp(d.cwd, "/"))
        d.cwd[0] = '\0';
    int rc = 0;
    for (size_t i = 0; i < nfiles && rc == 0; i++)
        if (load_file(&d, files[i]))
            rc = 1;
    if (rc == 0 && index_data(&d))
        rc = 1;

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
            bad |= write_report(m, &d, title, command, nfiles) != 0;
            bad |= ferror(m) != 0;
            bad |= fclose(m) != 0;
        }
        if (bad) {
            fputs("attnconf report: out of memory\n", stderr);
            rc = 1;
        } else {
            rc = write_out(out, buf, len);
        }
    }
    free(buf);
    free(cmdbuf);
    free(files);
    rp_free(&d);
    return rc;
}
