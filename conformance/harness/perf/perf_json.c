/* perf_json.c — strict reading of bench result files (rules in perf_json.h). */
#define _POSIX_C_SOURCE 200809L /* stat */

#include "perf_json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const status_names[PJ_STATUS_COUNT] = {"OK", "NOT_SUPPORTED", "ERROR",
                                                          "INCORRECT", "SKIPPED"};

const char *pj_status_name(pj_status s)
{
    return (unsigned)s < PJ_STATUS_COUNT ? status_names[s] : "?";
}

/* Where in the file a reader is, for messages: "backends[1].shapes[4]" or "". */
typedef struct at {
    const char *prog, *file;
    char ctx[96];
} at;

__attribute__((format(printf, 3, 4))) static int fail(const at *a, const char *key, const char *fmt,
                                                      ...)
{
    va_list ap;
    fprintf(stderr, "%s: %s: ", a->prog, a->file);
    if (a->ctx[0] || key)
        fprintf(stderr, "%s%s%s: ", a->ctx, a->ctx[0] && key ? "." : "", key ? key : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return -1;
}

static const char *type_name(const json_t *j)
{
    if (!j)
        return "nothing";
    switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

static json_t *need(const at *a, const json_t *obj, const char *key, json_type type,
                    const char *what)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        fail(a, key, "missing (expected %s)", what);
        return NULL;
    }
    if (json_typeof(v) != type) {
        fail(a, key, "expected %s, got %s", what, type_name(v));
        return NULL;
    }
    return v;
}

static int get_str(const at *a, const json_t *obj, const char *key, const char **out)
{
    json_t *v = need(a, obj, key, JSON_STRING, "a string");
    if (!v)
        return -1;
    *out = json_string_value(v);
    return 0;
}

/* A non-negative integer no larger than `max` (sizes: a bench shape is far below 2^40). */
static int get_count(const at *a, const json_t *obj, const char *key, int64_t max, int64_t *out)
{
    json_t *v = need(a, obj, key, JSON_INTEGER, "an integer");
    if (!v)
        return -1;
    json_int_t i = json_integer_value(v);
    if (i < 0 || i > max)
        return fail(a, key, "%lld is out of range (0..%lld)", (long long)i, (long long)max);
    *out = (int64_t)i;
    return 0;
}

/* A finite number >= 0 (integer or real); `positive` requires > 0. */
static int num_ok(const at *a, const char *key, const json_t *v, int positive, double *out)
{
    if (!json_is_number(v))
        return fail(a, key, "expected a number, got %s", type_name(v));
    double x = json_number_value(v);
    if (!isfinite(x) || x < 0 || (positive && x == 0))
        return fail(a, key, "%g is not a %s number", x, positive ? "positive" : "non-negative");
    *out = x;
    return 0;
}

static int get_num(const at *a, const json_t *obj, const char *key, int positive, double *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return fail(a, key, "missing (expected a number)");
    return num_ok(a, key, v, positive, out);
}

static int get_bool(const at *a, const json_t *obj, const char *key, int *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return fail(a, key, "missing (expected true or false)");
    if (!json_is_boolean(v))
        return fail(a, key, "expected true or false, got %s", type_name(v));
    *out = json_is_true(v);
    return 0;
}

static int read_machine(at *a, const json_t *root, pj_machine *m)
{
    json_t *o = need(a, root, "machine", JSON_OBJECT, "an object");
    if (!o)
        return -1;
    snprintf(a->ctx, sizeof a->ctx, "machine");
    if (get_str(a, o, "cpu_model", &m->cpu_model) ||
        get_str(a, o, "limits_from", &m->limits_from) ||
        get_count(a, o, "cores", 1 << 20, &m->cores) ||
        get_count(a, o, "mem_bytes", INT64_MAX, &m->mem_bytes) ||
        get_num(a, o, "fma_gflops", 1, &m->fma_gflops) ||
        get_num(a, o, "mem_read_gbs", 1, &m->mem_read_gbs))
        return -1;
    /* Optional (files from before bench --huge-pages lack it). */
    const json_t *hp = json_object_get(o, "huge_pages");
    if (hp && !json_is_boolean(hp))
        return fail(a, "huge_pages", "expected true or false, got %s", type_name(hp));
    m->huge_pages = hp ? json_is_true(hp) : -1;
    a->ctx[0] = '\0';
    return 0;
}

/* The timing fields of a shape: required for OK; for another status only read when times_s
 * holds a value (an untimed shape may leave them out or null). */
static int read_timing(const at *a, const json_t *o, pj_shape *s)
{
    json_t *tv = json_object_get(o, "times_s");
    if (s->status != PJ_OK &&
        (!tv || json_is_null(tv) || (json_is_array(tv) && json_array_size(tv) == 0)))
        return 0;
    int64_t reps;
    json_t *t;
    if (get_count(a, o, "reps", 100000000, &reps) ||
        !(t = need(a, o, "times_s", JSON_ARRAY, "an array of seconds")))
        return -1;
    if ((size_t)reps != json_array_size(t))
        return fail(a, "reps", "%lld, but times_s holds %zu values", (long long)reps,
                    json_array_size(t));
    if (reps == 0 && s->status == PJ_OK)
        return fail(a, "reps", "0 for a shape with status OK (no repetition timed)");
    s->times = malloc((reps ? (size_t)reps : 1) * sizeof *s->times);
    if (!s->times)
        return fail(a, "times_s", "out of memory");
    s->reps = (size_t)reps;
    for (size_t i = 0; i < s->reps; i++) {
        char key[48];
        snprintf(key, sizeof key, "times_s[%zu]", i);
        /* A timed call takes some time: 0 would make any comparison with it meaningless. */
        if (num_ok(a, key, json_array_get(t, i), s->status == PJ_OK, &s->times[i]))
            return -1;
    }
    if (get_num(a, o, "median_s", 0, &s->median_s) || get_num(a, o, "min_s", 0, &s->min_s) ||
        get_num(a, o, "iqr_s", 0, &s->iqr_s) || get_num(a, o, "gflops", 0, &s->gflops) ||
        get_num(a, o, "kv_gbs", 0, &s->kv_gbs) || get_num(a, o, "pct_limit", 0, &s->pct_limit))
        return -1;
    s->timed = 1;
    return 0;
}

const char *pj_curve_x_name(pj_curve_x x)
{
    return x == PJ_X_LQ ? "lq" : x == PJ_X_BATCH ? "batch" : "lk";
}

const char *pj_curve_x_label(pj_curve_x x)
{
    return x == PJ_X_LQ ? "Lq" : x == PJ_X_BATCH ? "B" : "Lk";
}

/* "curves", optional: [{"name", "x", "expect"}], names unique. */
static int read_curves(at *a, const json_t *root, pj_file *f)
{
    const json_t *cs = json_object_get(root, "curves");
    if (!cs)
        return 0;
    if (!json_is_array(cs))
        return fail(a, "curves", "expected an array of {name, x, expect}, got %s", type_name(cs));
    size_t n = json_array_size(cs);
    f->curves = calloc(n ? n : 1, sizeof *f->curves);
    if (!f->curves)
        return fail(a, "curves", "out of memory");
    for (size_t i = 0; i < n; i++) {
        const json_t *o = json_array_get(cs, i);
        pj_curve *c = &f->curves[i];
        const char *x;
        snprintf(a->ctx, sizeof a->ctx, "curves[%zu]", i);
        if (!json_is_object(o))
            return fail(a, NULL, "expected an object, got %s", type_name(o));
        if (get_str(a, o, "name", &c->name) || get_str(a, o, "x", &x) ||
            get_num(a, o, "expect", 1, &c->expect))
            return -1;
        if (!c->name[0])
            return fail(a, "name", "empty");
        if (c->expect > PJ_MAX_EXPECT)
            return fail(a, "expect", "%g is over %g (bench's limit for a suite's exponent)",
                        c->expect, PJ_MAX_EXPECT);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(f->curves[j].name, c->name))
                return fail(a, "name", "\"%s\" is also curves[%zu]", c->name, j);
        if (!strcmp(x, "lk"))
            c->x = PJ_X_LK;
        else if (!strcmp(x, "lq"))
            c->x = PJ_X_LQ;
        else if (!strcmp(x, "batch"))
            c->x = PJ_X_BATCH;
        else
            return fail(a, "x", "\"%s\" is not \"lk\", \"lq\" or \"batch\"", x);
        f->ncurves = i + 1;
    }
    a->ctx[0] = '\0';
    return 0;
}

static int read_shape(at *a, const json_t *o, const pj_file *f, pj_shape *s)
{
    if (!json_is_object(o))
        return fail(a, NULL, "expected an object, got %s", type_name(o));
    const int64_t big = (int64_t)1 << 40;
    const char *status, *bound;
    if (get_str(a, o, "id", &s->id) || get_str(a, o, "dtype", &s->dtype) ||
        get_count(a, o, "b", big, &s->b) || get_count(a, o, "hq", big, &s->hq) ||
        get_count(a, o, "hkv", big, &s->hkv) || get_count(a, o, "lq", big, &s->lq) ||
        get_count(a, o, "lk", big, &s->lk) || get_count(a, o, "d", big, &s->d) ||
        get_count(a, o, "dv", big, &s->dv) || get_bool(a, o, "causal", &s->causal) ||
        get_count(a, o, "window", big, &s->window) || get_str(a, o, "bound", &bound) ||
        get_str(a, o, "status", &status) || get_str(a, o, "message", &s->message))
        return -1;
    if (!s->id[0])
        return fail(a, "id", "empty");
    if (!strcmp(bound, "compute"))
        s->bound = PJ_COMPUTE;
    else if (!strcmp(bound, "memory"))
        s->bound = PJ_MEMORY;
    else
        return fail(a, "bound", "\"%s\" is neither \"compute\" nor \"memory\"", bound);
    s->status = PJ_STATUS_COUNT;
    for (int k = 0; k < PJ_STATUS_COUNT; k++)
        if (!strcmp(status, status_names[k]))
            s->status = (pj_status)k;
    if (s->status == PJ_STATUS_COUNT)
        return fail(a, "status",
                    "unknown status \"%s\" (expected OK, NOT_SUPPORTED, ERROR, "
                    "INCORRECT or SKIPPED)",
                    status);
    json_t *via = json_object_get(o, "via");
    s->via = json_is_string(via) ? json_string_value(via) : "";
    s->page_size = 0;
    if (json_object_get(o, "page_size")) {
        if (get_count(a, o, "page_size", big, &s->page_size))
            return -1;
        if (s->page_size == 0) /* bench writes it for paged shapes only */
            return fail(a, "page_size", "0 is out of range (1..%lld)", (long long)big);
    }
    s->curve = "";
    if (json_object_get(o, "curve")) {
        if (get_str(a, o, "curve", &s->curve))
            return -1;
        size_t c = 0;
        while (c < f->ncurves && strcmp(f->curves[c].name, s->curve) != 0)
            c++;
        if (c == f->ncurves)
            return fail(a, "curve", "\"%s\" is not one of the file's curves", s->curve);
    } else if (f->ncurves) {
        return fail(a, "curve", "missing (the file has curves: every shape is a point of one)");
    }
    double pairs, io;
    if (get_num(a, o, "visible_pairs", 0, &pairs) || get_num(a, o, "flops", 0, &s->flops) ||
        get_num(a, o, "kv_bytes", 0, &s->kv_bytes) || get_num(a, o, "io_bytes", 0, &io))
        return -1;
    /* Optional: files written before bench measured it have none. */
    s->read_gbs_beside = 0;
    if (json_object_get(o, "read_gbs_beside") &&
        get_num(a, o, "read_gbs_beside", 1, &s->read_gbs_beside))
        return -1;
    return read_timing(a, o, s);
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* "k=v, k=v" in key order, so two runs given the same options print the same text. */
static int options_text(const at *a, const json_t *opts, char **out)
{
    size_t n = json_object_size(opts), i = 0, len = 1;
    const char **keys = malloc((n ? n : 1) * sizeof *keys);
    if (!keys)
        return fail(a, "options", "out of memory");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)opts, k, v)
    {
        if (!json_is_string(v)) {
            free(keys);
            return fail(a, "options", "value of \"%s\": expected a string, got %s", k,
                        type_name(v));
        }
        keys[i++] = k;
        len += strlen(k) + strlen(json_string_value(v)) + 3;
    }
    qsort(keys, n, sizeof *keys, cmp_str);
    char *s = malloc(len);
    if (!s) {
        free(keys);
        return fail(a, "options", "out of memory");
    }
    s[0] = '\0';
    size_t used = 0;
    for (i = 0; i < n; i++)
        used += (size_t)sprintf(s + used, "%s%s=%s", i ? ", " : "", keys[i],
                                json_string_value(json_object_get(opts, keys[i])));
    free(keys);
    *out = s;
    return 0;
}

/* A shape's place on its curve, for finding two points at one size (check_curves). */
typedef struct curve_pt {
    size_t curve, shape; /* index in f->curves, in be->shapes */
    const char *dtype;
    int64_t x;
} curve_pt;

static int cmp_curve_pt(const void *p, const void *q)
{
    const curve_pt *a = p, *b = q;
    if (a->curve != b->curve)
        return a->curve < b->curve ? -1 : 1;
    const int d = strcmp(a->dtype, b->dtype);
    if (d)
        return d;
    if (a->x != b->x)
        return a->x < b->x ? -1 : 1;
    return (a->shape > b->shape) - (a->shape < b->shape);
}

/* be's points of each curve, as bench checks a suite (bench_suite.c check_curves): alike but
 * for the curve's size (each against the curve's first point), and one point per size and
 * dtype (sorted, so a file of many shapes costs n log n).  Why here too: perf-report fits and
 * compares what the file says, and a hand-edited or merged file could put unlike shapes on one
 * curve.  a->ctx holds "backends[i]"; a failure names the shape. */
static int check_curves(at *a, const pj_file *f, const pj_backend *be)
{
    if (!f->ncurves)
        return 0;
    const size_t base = strlen(a->ctx);
    curve_pt *pts = malloc((be->n ? be->n : 1) * sizeof *pts);
    size_t *first = malloc(f->ncurves * sizeof *first);
    if (!pts || !first) {
        free(pts);
        free(first);
        return fail(a, "shapes", "out of memory");
    }
    for (size_t c = 0; c < f->ncurves; c++)
        first[c] = SIZE_MAX;
    int rc = 0;
    for (size_t i = 0; i < be->n && !rc; i++) {
        const pj_shape *sh = &be->shapes[i];
        size_t c = 0;
        while (strcmp(f->curves[c].name, sh->curve) != 0) /* read_shape found it */
            c++;
        const pj_curve_x X = f->curves[c].x;
        pts[i] = (curve_pt){c, i, sh->dtype, pj_curve_size(sh, X)};
        if (first[c] == SIZE_MAX) {
            first[c] = i;
            continue;
        }
        const pj_shape *o = &be->shapes[first[c]];
        const char *differs = sh->bound != o->bound                ? "bound"
                              : sh->hq != o->hq                    ? "hq"
                              : sh->hkv != o->hkv                  ? "hkv"
                              : sh->d != o->d                      ? "d"
                              : sh->dv != o->dv                    ? "dv"
                              : sh->causal != o->causal            ? "causal"
                              : sh->window != o->window            ? "window"
                              : sh->page_size != o->page_size      ? "page_size"
                              : X != PJ_X_BATCH && sh->b != o->b   ? "b"
                              : X != PJ_X_LK && sh->lk != o->lk    ? "lk"
                              : X == PJ_X_BATCH && sh->lq != o->lq ? "lq"
                                                                   : NULL;
        if (differs) {
            snprintf(a->ctx + base, sizeof a->ctx - base, ".shapes[%zu]", i);
            rc = fail(a, "curve",
                      "\"%s\" sweeps %s, but this shape's %s differs from %s's (shapes[%zu])",
                      sh->curve, pj_curve_x_name(X), differs, o->id, first[c]);
        }
    }
    if (!rc) {
        qsort(pts, be->n, sizeof *pts, cmp_curve_pt);
        for (size_t k = 1; k < be->n && !rc; k++) {
            const curve_pt *p = &pts[k - 1], *q = &pts[k];
            if (p->curve != q->curve || p->x != q->x || strcmp(p->dtype, q->dtype) != 0)
                continue;
            snprintf(a->ctx + base, sizeof a->ctx - base, ".shapes[%zu]", q->shape);
            rc = fail(a, "curve", "\"%s\" already has a %s point at %s %lld (%s, shapes[%zu])",
                      f->curves[q->curve].name, q->dtype, pj_curve_x_name(f->curves[q->curve].x),
                      (long long)q->x, be->shapes[p->shape].id, p->shape);
        }
    }
    a->ctx[base] = '\0';
    free(pts);
    free(first);
    return rc;
}

static int read_backend(at *a, const json_t *o, const pj_file *f, pj_backend *be)
{
    if (!json_is_object(o))
        return fail(a, NULL, "expected an object, got %s", type_name(o));
    json_t *opts, *shapes;
    if (get_str(a, o, "name", &be->name) || get_str(a, o, "version", &be->version) ||
        !(opts = need(a, o, "options", JSON_OBJECT, "an object of strings")) ||
        options_text(a, opts, &be->options) ||
        !(shapes = need(a, o, "shapes", JSON_ARRAY, "an array of shapes")))
        return -1;
    if (!be->name[0])
        return fail(a, "name", "empty");
    /* Optional (files written before it existed were all timed in process). */
    const json_t *timing = json_object_get(o, "timing");
    if (timing && !(json_is_string(timing) && (!strcmp(json_string_value(timing), "in-process") ||
                                               !strcmp(json_string_value(timing), "adapter"))))
        return fail(a, "timing", "expected \"in-process\" or \"adapter\", got %s%s%s",
                    json_is_string(timing) ? "\"" : "",
                    json_is_string(timing) ? json_string_value(timing) : type_name(timing),
                    json_is_string(timing) ? "\"" : "");
    be->adapter_timing = timing && !strcmp(json_string_value(timing), "adapter");
    size_t n = json_array_size(shapes);
    be->shapes = calloc(n ? n : 1, sizeof *be->shapes);
    if (!be->shapes)
        return fail(a, "shapes", "out of memory");
    size_t base = strlen(a->ctx);
    for (size_t i = 0; i < n; i++) {
        snprintf(a->ctx + base, sizeof a->ctx - base, ".shapes[%zu]", i);
        be->n = i + 1; /* counted before reading, so pj_free frees a half-read shape's times */
        if (read_shape(a, json_array_get(shapes, i), f, &be->shapes[i]))
            return -1;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(be->shapes[j].id, be->shapes[i].id))
                return fail(a, "id", "\"%s\" listed twice for backend %s (also shapes[%zu])",
                            be->shapes[i].id, be->name, j);
    }
    a->ctx[base] = '\0';
    return check_curves(a, f, be);
}

int pj_load(const char *prog, const char *path, pj_file *f)
{
    memset(f, 0, sizeof *f);
    f->path = path;
    at a = {prog, path, ""};
    struct stat st;
    if (stat(path, &st) != 0)
        return fail(&a, NULL, "%s", strerror(errno));
    if (!S_ISREG(st.st_mode))
        return fail(&a, NULL, "not a regular file");
    if (st.st_size > PJ_MAX_FILE_BYTES)
        return fail(&a, NULL, "%lld bytes, over the %ld-byte limit of a bench file",
                    (long long)st.st_size, PJ_MAX_FILE_BYTES);
    json_error_t je;
    f->root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!f->root) {
        fprintf(stderr, "%s: %s:%d:%d: not valid JSON: %s\n", prog, path, je.line, je.column,
                je.text);
        return -1;
    }
    if (!json_is_object(f->root))
        return fail(&a, NULL, "expected a JSON object, got %s", type_name(f->root));
    json_t *ver = json_object_get(f->root, "attnconf_bench");
    if (!ver)
        return fail(&a, "attnconf_bench",
                    "missing: not a bench results file (attnconf bench "
                    "--out)");
    if (!json_is_integer(ver) || json_integer_value(ver) != 1)
        return fail(&a, "attnconf_bench", "schema version %s, this attnconf reads 1",
                    json_is_integer(ver) ? "other than 1" : type_name(ver));
    json_t *bes;
    if (get_str(&a, f->root, "suite", &f->suite) ||
        get_str(&a, f->root, "suite_file", &f->suite_file) ||
        get_str(&a, f->root, "label", &f->label) || get_str(&a, f->root, "started", &f->started) ||
        read_machine(&a, f->root, &f->machine) || read_curves(&a, f->root, f) ||
        !(bes = need(&a, f->root, "backends", JSON_ARRAY, "an array of backends")))
        return -1;
    if (!f->suite[0])
        return fail(&a, "suite", "empty");
    size_t n = json_array_size(bes);
    f->backends = calloc(n ? n : 1, sizeof *f->backends);
    if (!f->backends)
        return fail(&a, "backends", "out of memory");
    for (size_t i = 0; i < n; i++) {
        snprintf(a.ctx, sizeof a.ctx, "backends[%zu]", i);
        f->nb = i + 1;
        if (read_backend(&a, json_array_get(bes, i), f, &f->backends[i]))
            return -1;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(f->backends[j].name, f->backends[i].name))
                return fail(&a, "name",
                            "backend \"%s\" listed twice (also backends[%zu]): "
                            "bench one configuration of a backend per file",
                            f->backends[i].name, j);
    }
    return 0;
}

void pj_free(pj_file *f)
{
    for (size_t i = 0; i < f->nb; i++) {
        for (size_t j = 0; j < f->backends[i].n; j++)
            free(f->backends[i].shapes[j].times);
        free(f->backends[i].shapes);
        free(f->backends[i].options);
    }
    free(f->backends);
    free(f->curves);
    json_decref(f->root);
    memset(f, 0, sizeof *f);
}

const pj_backend *pj_find_backend(const pj_file *f, const char *name)
{
    for (size_t i = 0; i < f->nb; i++)
        if (!strcmp(f->backends[i].name, name))
            return &f->backends[i];
    return NULL;
}

const pj_shape *pj_find_shape(const pj_backend *be, const char *id)
{
    for (size_t i = 0; be && i < be->n; i++)
        if (!strcmp(be->shapes[i].id, id))
            return &be->shapes[i];
    return NULL;
}

double pj_limit(const pj_machine *m, pj_bound bound)
{
    return bound == PJ_MEMORY ? m->mem_read_gbs : m->fma_gflops;
}

double pj_pct_limit(const pj_shape *s)
{
    return s->bound == PJ_MEMORY && s->read_gbs_beside > 0 ? 100 * s->kv_gbs / s->read_gbs_beside
                                                           : s->pct_limit;
}

int pj_limits_close(double a, double b)
{
    double lo = a < b ? a : b, hi = a < b ? b : a;
    return hi - lo <= 0.10 * lo;
}

int pj_same_machine(const pj_machine *a, const pj_machine *b)
{
    return !strcmp(a->cpu_model, b->cpu_model) && pj_limits_close(a->fma_gflops, b->fma_gflops) &&
           pj_limits_close(a->mem_read_gbs, b->mem_read_gbs) &&
           (a->huge_pages < 0 || b->huge_pages < 0 || a->huge_pages == b->huge_pages);
}

int pj_same_geometry(const pj_shape *a, const pj_shape *b)
{
    return !strcmp(a->dtype, b->dtype) && a->bound == b->bound && a->b == b->b && a->hq == b->hq &&
           a->hkv == b->hkv && a->lq == b->lq && a->lk == b->lk && a->d == b->d && a->dv == b->dv &&
           a->causal == b->causal && a->window == b->window && a->page_size == b->page_size;
}
