/* partial.c — read back the sidecar FILE.partial.json of an interrupted `attnconf run --out
 * FILE` (the JSON of output.c with "complete": false) for `run --resume`.
 *
 * Reading is strict, like report.c: a file that does not parse, is not schema version 1, is not
 * marked "complete": false, or has a missing, mistyped or over-long field is refused with a
 * message naming the file and the field; nothing is silently truncated or guessed.  The
 * "expected" objects of a run with --expect are not read: run --expect recomputes them over
 * all results at the end.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "results/partial.h"

typedef struct prd {
    const char *file;
    char *err;
    size_t cap;
    char ctx[64];
} prd;

__attribute__((format(printf, 3, 4))) static int perr(const prd *r, const char *key,
                                                     const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (key)
        snprintf(r->err, r->cap, "%s: field \"%s%s%s\": %s", r->file, r->ctx,
                 r->ctx[0] ? "." : "", key, msg);
    else
        snprintf(r->err, r->cap, "%s: %s", r->file, msg);
    return -1;
}

/* A string field copied into dst[cap]; too long is an error (never truncated). */
static int pstr(const prd *r, const json_t *o, const char *key, char *dst, size_t cap)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        return perr(r, key, v ? "expected a string" : "missing");
    size_t n = json_string_length(v);
    if (n >= cap || strlen(json_string_value(v)) != n)
        return perr(r, key, "longer than %zu bytes or holds a NUL", cap - 1);
    memcpy(dst, json_string_value(v), n + 1);
    return 0;
}

static int pnum(const prd *r, const json_t *o, const char *key, double *out)
{
    json_t *v = json_object_get(o, key);
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (!strcmp(s, "nan") || !strcmp(s, "inf") || !strcmp(s, "-inf")) {
            *out = s[0] == 'n' ? NAN : s[0] == '-' ? -INFINITY : INFINITY;
            return 0;
        }
    }
    return perr(r, key, v ? "expected a number or \"nan\"/\"inf\"/\"-inf\"" : "missing");
}

static int pint(const prd *r, const json_t *o, const char *key, int64_t *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        return perr(r, key, v ? "expected an integer" : "missing");
    *out = (int64_t)json_integer_value(v);
    return 0;
}

static int read_result(const prd *r, const json_t *o, hr_result *res)
{
    memset(res, 0, sizeof *res);
    res->first_bad = -1;
    char status[32];
    if (!json_is_object(o))
        return perr(r, NULL, "%s: expected an object", r->ctx);
    if (pstr(r, o, "id", res->id, sizeof res->id) ||
        pstr(r, o, "family", res->family, sizeof res->family) ||
        pstr(r, o, "status", status, sizeof status) ||
        pstr(r, o, "message", res->message, sizeof res->message) ||
        pstr(r, o, "rerun", res->rerun, sizeof res->rerun) ||
        pstr(r, o, "description", res->description, sizeof res->description) ||
        pnum(r, o, "seconds", &res->seconds))
        return -1;
    /* optional: files from before it existed have none */
    if (json_object_get(o, "dtype") && pstr(r, o, "dtype", res->dtype, sizeof res->dtype))
        return -1;
    int s;
    for (s = 0; s < HR_STATUS_COUNT; s++)
        if (!strcmp(status, hr_status_name((hr_status)s)))
            break;
    if (s == HR_STATUS_COUNT)
        return perr(r, "status", "unknown status \"%s\"", status);
    res->status = (hr_status)s;
    json_t *rules = json_object_get(o, "rules");
    if (!json_is_array(rules) || json_array_size(rules) > ACASE_MAX_RULES)
        return perr(r, "rules", "expected an array of at most %d strings", ACASE_MAX_RULES);
    for (size_t k = 0; k < json_array_size(rules); k++) {
        json_t *e = json_array_get(rules, k);
        if (!json_is_string(e) || json_string_length(e) >= HR_RULE_MAX)
            return perr(r, "rules", "entry %zu is not a string of under %d bytes", k,
                        HR_RULE_MAX);
        memcpy(res->rules[k], json_string_value(e), json_string_length(e) + 1);
    }
    res->nrules = (int)json_array_size(rules);
    if (!json_object_get(o, "max_abs_err"))
        return 0;
    res->has_stats = 1;
    if (pnum(r, o, "max_abs_err", &res->max_abs_err) ||
        pnum(r, o, "max_rel_err", &res->max_rel_err) || pint(r, o, "first_bad", &res->first_bad))
        return -1;
    /* optional (files from before it existed): the error in units of the allowed error */
    if (json_object_get(o, "max_ratio") && pnum(r, o, "max_ratio", &res->max_ratio))
        return -1;
    if (res->first_bad < 0) {
        res->first_bad = -1;
        return 0;
    }
    json_t *idx = json_object_get(o, "bad_index");
    if (!json_is_array(idx) || json_array_size(idx) > 4)
        return perr(r, "bad_index", "expected an array of at most 4 integers");
    res->bad_ndim = (int32_t)json_array_size(idx);
    for (int d = 0; d < res->bad_ndim; d++) {
        json_t *e = json_array_get(idx, (size_t)d);
        if (!json_is_integer(e))
            return perr(r, "bad_index", "entry %d is not an integer", d);
        res->bad_index[d] = (int64_t)json_integer_value(e);
    }
    return pnum(r, o, "bad_got", &res->bad_got) || pnum(r, o, "bad_expected", &res->bad_expected)
               ? -1
               : 0;
}

int hr_partial_load(const char *path, hr_run *run, char *err, size_t cap)
{
    memset(run, 0, sizeof *run);
    prd r = {path, err, cap, ""};
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        if (jerr.line > 0)
            return perr(&r, NULL, "not valid JSON: line %d column %d: %s", jerr.line,
                        jerr.column, jerr.text);
        return perr(&r, NULL, "%s", jerr.text);
    }
    int rc = -1;
    json_t *v = json_object_get(root, "attnconf_results");
    json_t *backend = json_object_get(root, "backend");
    json_t *results = json_object_get(root, "results");
    if (!json_is_object(root)) {
        perr(&r, NULL, "not an attnconf results document (expected a JSON object)");
    } else if (!json_is_integer(v)) {
        perr(&r, "attnconf_results", v ? "expected an integer" : "missing");
    } else if (json_integer_value(v) != 1) {
        perr(&r, "attnconf_results", "unsupported results version %" PRId64 " (expected 1)",
             (int64_t)json_integer_value(v));
    } else if (!json_is_false(json_object_get(root, "complete"))) {
        perr(&r, "complete", "not false: this is not the partial results of an interrupted run");
    } else if (!json_is_object(backend)) {
        perr(&r, "backend", "missing or not an object");
    } else if (!json_is_array(results)) {
        perr(&r, "results", "missing or not an array");
    } else {
        snprintf(r.ctx, sizeof r.ctx, "backend");
        int bad = pstr(&r, backend, "name", run->backend_name, sizeof run->backend_name) ||
                  pstr(&r, backend, "version", run->backend_version,
                       sizeof run->backend_version);
        r.ctx[0] = '\0';
        bad = bad || pstr(&r, root, "cases_dir", run->cases_dir, sizeof run->cases_dir) ||
              pstr(&r, root, "filter", run->filter, sizeof run->filter) ||
              pstr(&r, root, "backend_options", run->backend_options,
                   sizeof run->backend_options);
        size_t n = json_array_size(results);
        if (!bad && n && !(run->results = calloc(n, sizeof *run->results))) {
            perr(&r, NULL, "out of memory");
            bad = 1;
        }
        for (size_t i = 0; i < n && !bad; i++) {
            snprintf(r.ctx, sizeof r.ctx, "results[%zu]", i);
            bad = read_result(&r, json_array_get(results, i), &run->results[i]) != 0;
            run->count = i + 1;
        }
        if (bad) {
            free(run->results);
            run->results = NULL;
            run->count = 0;
        } else {
            run->partial = 1;
            rc = 0;
        }
    }
    json_decref(root);
    return rc;
}
