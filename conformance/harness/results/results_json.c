/* results_json.c — the one strict reader of the results JSON (results_json.h); output.c is its
 * one writer. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "common/shard.h"
#include "results/results_json.h"

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

/* "FILE: field "CTX.KEY": message" (key NULL: "FILE: message") into r->err; returns -1. */
__attribute__((format(printf, 3, 4))) static int ferr(const rj_reader *r, const char *key,
                                                      const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (key)
        snprintf(r->err, r->cap, "%s: field \"%s%s%s\": %s", r->file, r->ctx, r->ctx[0] ? "." : "",
                 key, msg);
    else
        snprintf(r->err, r->cap, "%s: %s", r->file, msg);
    return -1;
}

static json_t *need(const rj_reader *r, const json_t *obj, const char *key, json_type type)
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

static int get_str(const rj_reader *r, const json_t *obj, const char *key, const char **out)
{
    json_t *v = need(r, obj, key, JSON_STRING);
    if (!v)
        return -1;
    *out = json_string_value(v);
    return 0;
}

/* An optional string: "" when absent. */
static int opt_str(const rj_reader *r, const json_t *obj, const char *key, const char **out)
{
    *out = "";
    return json_object_get(obj, key) ? get_str(r, obj, key, out) : 0;
}

static int get_int(const rj_reader *r, const json_t *obj, const char *key, int64_t *out)
{
    json_t *v = need(r, obj, key, JSON_INTEGER);
    if (!v)
        return -1;
    *out = (int64_t)json_integer_value(v);
    return 0;
}

/* A number, or "nan"/"inf"/"-inf" (common/jsonv.h: JSON has no non-finite numbers). */
static int get_num(const rj_reader *r, const json_t *obj, const char *key, double *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return ferr(r, key, "missing");
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
        return ferr(r, key, "expected a number or \"nan\"/\"inf\"/\"-inf\", got \"%s\"", s);
    }
    return ferr(r, key, "expected a number, got %s", type_name(v));
}

int rj_status_parse(const char *name, hr_status *out)
{
    for (int k = 0; k < HR_STATUS_COUNT; k++)
        if (!strcmp(hr_status_name((hr_status)k), name)) {
            *out = (hr_status)k;
            return 0;
        }
    return -1;
}

/* The "expectations" object of a run --expect document, when there is one. */
static int read_expectations(const rj_reader *r, const json_t *j, rj_doc *doc)
{
    const json_t *ex = json_object_get(j, "expectations");
    if (!ex)
        return 0;
    if (!json_is_object(ex))
        return ferr(r, "expectations", "expected an object, got %s", type_name(ex));
    rj_reader xr = *r;
    snprintf(xr.ctx, sizeof xr.ctx, "expectations");
    return get_str(&xr, ex, "file", &doc->expect_file) ||
                   get_str(&xr, ex, "version", &doc->expect_version)
               ? -1
               : 0;
}

/* The "shard" object of a sharded run, when there is one. */
static int read_shard(const rj_reader *r, const json_t *j, rj_doc *doc)
{
    const json_t *sh = json_object_get(j, "shard");
    if (!sh)
        return 0;
    if (!json_is_object(sh))
        return ferr(r, "shard", "expected an object, got %s", type_name(sh));
    rj_reader sr = *r;
    snprintf(sr.ctx, sizeof sr.ctx, "shard");
    int64_t index, total, selected;
    const char *sel;
    if (get_int(&sr, sh, "index", &index) || get_int(&sr, sh, "total", &total) ||
        get_int(&sr, sh, "selected", &selected) || get_str(&sr, sh, "selection", &sel))
        return -1;
    if (total < 1 || total > SHARD_MAX_TOTAL)
        return ferr(&sr, "total", "expected 1 to %u shards, got %" PRId64, SHARD_MAX_TOTAL, total);
    if (index < 0 || index >= total)
        return ferr(&sr, "index", "expected 0 to %" PRId64 " (it counts from 0), got %" PRId64,
                    total - 1, index);
    if (selected < 0)
        return ferr(&sr, "selected", "negative: %" PRId64, selected);
    size_t hex = strspn(sel + (strncmp(sel, "fnv1a64:", 8) ? 0 : 8), "0123456789abcdef");
    if (strncmp(sel, "fnv1a64:", 8) != 0 || hex != 16 || strlen(sel) != 24)
        return ferr(&sr, "selection", "expected \"fnv1a64:\" and 16 hex digits, got \"%.40s\"",
                    sel);
    doc->has_shard = 1;
    doc->shard_index = (uint32_t)index;
    doc->shard_total = (uint32_t)total;
    doc->shard_selected = (uint64_t)selected;
    doc->shard_selection = sel;
    return 0;
}

int rj_load(rj_reader *r, const char *path, json_t **root, rj_doc *doc)
{
    memset(doc, 0, sizeof *doc);
    *root = NULL;
    r->file = path;
    r->ctx[0] = '\0';
    struct stat sb;
    if (stat(path, &sb) != 0)
        return ferr(r, NULL, "%s", strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return ferr(r, NULL, "not a regular file");
    json_error_t jerr;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!j) {
        if (jerr.line > 0)
            return ferr(r, NULL, "not valid JSON: line %d column %d: %s", jerr.line, jerr.column,
                        jerr.text);
        return ferr(r, NULL, "%s", jerr.text);
    }
    int64_t version;
    const json_t *complete = json_object_get(j, "complete"), *backend;
    rj_reader br = *r;
    snprintf(br.ctx, sizeof br.ctx, "backend");
    if (!json_is_object(j)) {
        ferr(r, NULL, "expected a JSON object at the top level, got %s", type_name(j));
    } else if (get_int(r, j, "attnconf_results", &version)) {
    } else if (version != 1) {
        ferr(r, "attnconf_results", "unsupported results version %" PRId64 " (expected 1)",
             version);
    } else if (complete && !json_is_boolean(complete)) {
        ferr(r, "complete", "expected a boolean, got %s", type_name(complete));
    } else if (!(backend = need(r, j, "backend", JSON_OBJECT)) ||
               get_str(&br, backend, "name", &doc->backend_name) ||
               get_str(&br, backend, "version", &doc->backend_version) ||
               get_str(&br, backend, "path", &doc->backend_path) ||
               get_str(r, j, "cases_dir", &doc->cases_dir) ||
               get_str(r, j, "filter", &doc->filter) ||
               opt_str(r, j, "backend_options", &doc->backend_options) ||
               !(doc->results = need(r, j, "results", JSON_ARRAY))) {
    } else if (read_expectations(r, j, doc) || read_shard(r, j, doc)) {
    } else {
        doc->complete = !json_is_false(complete);
        doc->summary = json_object_get(j, "summary");
        *root = j;
        return 0;
    }
    json_decref(j);
    return -1;
}

/* The "expected" object of a run --expect result. */
static int read_expected(const rj_reader *r, const json_t *o, rj_result *c)
{
    c->x_case = c->x_status = c->x_reason = c->x_upstream = c->x_varies = "";
    if (!json_object_get(o, "expected"))
        return 0;
    json_t *x = need(r, o, "expected", JSON_OBJECT);
    if (!x)
        return -1;
    rj_reader xr = *r;
    snprintf(xr.ctx, sizeof xr.ctx, "%.40s.expected", r->ctx);
    json_t *ok = json_object_get(x, "as_expected");
    if (!json_is_boolean(ok))
        return ferr(&xr, "as_expected", "expected a boolean, got %s", type_name(ok));
    c->has_expect = 1;
    c->as_expected = json_is_true(ok);
    hr_status xs;
    if (json_object_get(x, "case") &&
        (get_str(&xr, x, "case", &c->x_case) || get_str(&xr, x, "status", &c->x_status) ||
         get_int(&xr, x, "clause", &c->x_clause) || get_str(&xr, x, "reason", &c->x_reason) ||
         get_str(&xr, x, "upstream", &c->x_upstream) ||
         (json_object_get(x, "varies") && get_str(&xr, x, "varies", &c->x_varies))))
        return -1;
    if (c->x_case[0] && rj_status_parse(c->x_status, &xs) != 0)
        return ferr(&xr, "status", "unknown status \"%s\"", c->x_status);
    return 0;
}

/* One count of NaN mismatches (key, > 0) and its first index (index_key, ndim entries, as
 * bad_index), both absent for none (older files have neither). */
static int read_nans(const rj_reader *r, const json_t *o, const char *key, const char *index_key,
                     int ndim, int64_t *count, int64_t *index)
{
    *count = 0;
    if (!json_object_get(o, key))
        return json_object_get(o, index_key) ? ferr(r, index_key, "present without %s", key) : 0;
    if (get_int(r, o, key, count))
        return -1;
    if (*count < 1)
        return ferr(r, key, "must be >= 1 when present, got %" PRId64, *count);
    json_t *idx = need(r, o, index_key, JSON_ARRAY);
    if (!idx)
        return -1;
    if ((int)json_array_size(idx) != ndim)
        return ferr(r, index_key, "%zu entries, bad_index has %d", json_array_size(idx), ndim);
    for (int k = 0; k < ndim; k++) {
        json_t *e = json_array_get(idx, (size_t)k);
        if (!json_is_integer(e))
            return ferr(r, index_key, "entry %d is not an integer", k);
        index[k] = (int64_t)json_integer_value(e);
    }
    return 0;
}

/* The comparison statistics: all of max_abs_err/max_rel_err/first_bad or none, bad_* and the
 * NaN counts only with a first_bad >= 0. */
static int read_stats(const rj_reader *r, const json_t *o, rj_result *c)
{
    if (!json_object_get(o, "max_abs_err") && !json_object_get(o, "max_rel_err") &&
        !json_object_get(o, "first_bad")) {
        static const char *const bad_keys[] = {"bad_index", "bad_got",    "bad_expected",
                                               "nan_got",   "nan_missed", "nan_others"};
        for (size_t k = 0; k < sizeof bad_keys / sizeof bad_keys[0]; k++)
            if (json_object_get(o, bad_keys[k]))
                return ferr(r, bad_keys[k], "present without max_abs_err/max_rel_err/first_bad");
        return 0;
    }
    c->has_stats = 1;
    if (get_num(r, o, "max_abs_err", &c->max_abs_err) ||
        get_num(r, o, "max_rel_err", &c->max_rel_err) || get_int(r, o, "first_bad", &c->first_bad))
        return -1;
    if (json_object_get(o, "max_ratio") && get_num(r, o, "max_ratio", &c->max_ratio))
        return -1;
    if (c->first_bad < -1)
        return ferr(r, "first_bad", "must be >= -1, got %" PRId64, c->first_bad);
    if (c->first_bad < 0) {
        static const char *const bad_keys[] = {"bad_index", "nan_got", "nan_missed", "nan_others"};
        for (size_t k = 0; k < sizeof bad_keys / sizeof bad_keys[0]; k++)
            if (json_object_get(o, bad_keys[k]))
                return ferr(r, bad_keys[k], "present but first_bad is -1");
        return 0;
    }
    json_t *idx = need(r, o, "bad_index", JSON_ARRAY);
    if (!idx)
        return -1;
    if (json_array_size(idx) > 4)
        return ferr(r, "bad_index", "more than 4 entries");
    c->ndim = (int)json_array_size(idx);
    for (int k = 0; k < c->ndim; k++) {
        json_t *e = json_array_get(idx, (size_t)k);
        if (!json_is_integer(e))
            return ferr(r, "bad_index", "entry %d is not an integer", k);
        c->index[k] = (int64_t)json_integer_value(e);
    }
    if (read_nans(r, o, "nan_got", "nan_got_index", c->ndim, &c->nans.got, c->nans.got_index) ||
        read_nans(r, o, "nan_missed", "nan_missed_index", c->ndim, &c->nans.missed,
                  c->nans.missed_index))
        return -1;
    if (c->nans.got > 0 || c->nans.missed > 0) {
        if (get_int(r, o, "nan_others", &c->nans.others))
            return -1;
        if (c->nans.others < 0)
            return ferr(r, "nan_others", "must be >= 0, got %" PRId64, c->nans.others);
    } else if (json_object_get(o, "nan_others")) {
        return ferr(r, "nan_others", "present without nan_got or nan_missed");
    }
    return get_num(r, o, "bad_got", &c->got) || get_num(r, o, "bad_expected", &c->expected) ? -1
                                                                                            : 0;
}

int rj_result_read(rj_reader *r, const rj_doc *doc, size_t i, rj_result *c)
{
    memset(c, 0, sizeof *c);
    c->first_bad = -1;
    snprintf(r->ctx, sizeof r->ctx, "results[%zu]", i);
    const json_t *o = json_array_get(doc->results, i);
    const char *status;
    if (!json_is_object(o)) {
        char at[sizeof r->ctx];
        snprintf(at, sizeof at, "%s", r->ctx);
        r->ctx[0] = '\0';
        return ferr(r, at, "expected an object, got %s", type_name(o));
    }
    if (get_str(r, o, "id", &c->id) || get_str(r, o, "family", &c->family) ||
        get_str(r, o, "status", &status) || get_str(r, o, "message", &c->message) ||
        get_str(r, o, "rerun", &c->rerun))
        return -1;
    if (rj_status_parse(status, &c->status) != 0)
        return ferr(r, "status", "unknown status \"%s\"", status);
    if (!(c->rules = need(r, o, "rules", JSON_ARRAY)))
        return -1;
    for (size_t k = 0; k < json_array_size(c->rules); k++) {
        const json_t *e = json_array_get(c->rules, k);
        if (!json_is_string(e))
            return ferr(r, "rules", "entry %zu is %s, expected a string", k, type_name(e));
    }
    if (get_num(r, o, "seconds", &c->seconds) || opt_str(r, o, "description", &c->description) ||
        opt_str(r, o, "dtype", &c->dtype) || read_expected(r, o, c) || read_stats(r, o, c))
        return -1;
    c->elements = 0;
    if (json_object_get(o, "elements") && get_int(r, o, "elements", &c->elements))
        return -1;
    return 0;
}

int rj_summary_check(rj_reader *r, const rj_doc *doc, const size_t *by_status, size_t total)
{
    r->ctx[0] = '\0';
    if (!doc->summary)
        return ferr(r, "summary", "missing");
    if (!json_is_object(doc->summary))
        return ferr(r, "summary", "expected an object, got %s", type_name(doc->summary));
    rj_reader sr = *r;
    snprintf(sr.ctx, sizeof sr.ctx, "summary");
    for (int k = 0; k <= HR_STATUS_COUNT; k++) {
        const char *key = k < HR_STATUS_COUNT ? hr_status_name((hr_status)k) : "total";
        size_t want = k < HR_STATUS_COUNT ? by_status[k] : total;
        int64_t got;
        /* UNEXPRESSIBLE, CRASH, TIMEOUT and CASE_ERROR came later: a file from before them has
         * no such key, and then can have no such result either. */
        const int later = k == HR_UNEXPRESSIBLE || (k >= HR_CRASH && k < HR_STATUS_COUNT);
        if (later && !json_object_get(doc->summary, key))
            got = 0;
        else if (get_int(&sr, doc->summary, key, &got))
            return -1;
        if (got < 0 || (uint64_t)got != want)
            return ferr(r, NULL, "field \"summary.%s\" is %" PRId64 " but the results have %zu",
                        key, got, want);
    }
    return 0;
}
