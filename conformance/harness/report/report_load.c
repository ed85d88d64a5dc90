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
    rp_errf(r->file, fn, "%s", msg);
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
        c->clauses |= 1u << rp_rule_clause(json_string_value(e));
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
            rp_errf(r->file, NULL, "field \"summary.%s\" is %" PRId64 " but the results have %zu",
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

int rp_load_file(rp_data *d, const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        rp_errf(path, NULL, "%s", stat(path, &sb) != 0 ? strerror(errno) : "not a regular file");
        return -1;
    }
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        if (jerr.line > 0)
            rp_errf(path, NULL, "line %d column %d: %s", jerr.line, jerr.column, jerr.text);
        else
            rp_errf(path, NULL, "%s", jerr.text);
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

    rd r = {path, ""};
    if (!json_is_object(root)) {
        rp_errf(path, NULL, "expected a JSON object at the top level, got %s", type_name(root));
        return -1;
    }
    int64_t version;
    if (get_int(&r, root, "attnconf_results", &version))
        return -1;
    if (version != 1) {
        rp_errf(path, "attnconf_results", "unsupported results version %" PRId64 " (expected 1)",
             version);
        return -1;
    }
    /* A partial file (the FILE.partial.json sidecar of a run still going or interrupted) is
     * refused: a report of some of the cases would read as the backend's conformance. */
    json_t *complete = json_object_get(root, "complete");
    if (complete && !json_is_boolean(complete)) {
        rp_errf(path, "complete", "expected a boolean, got %s", type_name(complete));
        return -1;
    }
    if (json_is_false(complete)) {
        json_t *res = json_object_get(root, "results");
        rp_errf(path, "complete", "false: results incomplete (%zu case%s so far, from an "
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
        rp_errf(path, "backend.name", "empty");
        return -1;
    }
    json_t *results = need(&r, root, "results", JSON_ARRAY);
    if (!results)
        return -1;

    rp_backend *b = find_backend(d, name);
    if (b && strcmp(b->version, version_s) != 0) {
        rp_errf(path, "backend.version", "backend \"%s\" is version \"%s\" here but \"%s\" in %s",
             name, version_s, b->version, b->file);
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
            rp_errf(path, "expectations", "expected an object, got %s", type_name(ex));
            return -1;
        }
        if (get_str(&xr, ex, "file", &xf) || get_str(&xr, ex, "version", &xv))
            return -1;
        if (b->expect_file && strcmp(b->expect_file, xf) != 0) {
            rp_errf(path, "expectations.file", "\"%s\" here but \"%s\" in %s", xf,
                 b->expect_file, b->file);
            return -1;
        }
        b->expect_file = xf;
        b->expect_version = xv;
    }
    if (add_filter(b, filter)) {
        rp_errf(path, NULL, "out of memory");
        return -1;
    }

    size_t n = json_array_size(results), by_status[HR_STATUS_COUNT] = {0};
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
        rd cr = {path, ""};
        snprintf(cr.ctx, sizeof cr.ctx, "results[%zu]", i);
        json_t *o = json_array_get(results, i);
        if (!json_is_object(o)) {
            rp_errf(path, cr.ctx, "expected an object, got %s", type_name(o));
            return -1;
        }
        if (read_case(&cr, o, &b->cases[b->n]))
            return -1;
        by_status[b->cases[b->n].status]++;
        b->n++;
    }
    return check_summary(&r, root, by_status, n);
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
