/* partial.c — read back the sidecar FILE.partial.json of an interrupted `attnconf run --out
 * FILE` (the JSON of output.c with "complete": false) for `run --resume`, through the one
 * results reader (results_json.h) into hr_result copies.
 *
 * Strict like every reader of the format: besides what results_json.c refuses, a file not
 * marked "complete": false, or a string too long for its hr_result field, is refused with a
 * message naming the file and the field; nothing is silently truncated or guessed.  The
 * "expected" objects of a run with --expect are not kept: run --expect recomputes them over all
 * results at the end.
 */
#include <stdlib.h>
#include <string.h>

#include "results/partial.h"
#include "results/results_json.h"

/* src copied into dst[cap]; too long (or holding a NUL) is an error naming the field. */
static int copy(const rj_reader *r, const char *key, const char *src, char *dst, size_t cap)
{
    size_t n = strlen(src);
    if (n >= cap) {
        snprintf(r->err, r->cap, "%s: field \"%s%s%s\": longer than %zu bytes", r->file, r->ctx,
                 r->ctx[0] ? "." : "", key, cap - 1);
        return -1;
    }
    memcpy(dst, src, n + 1);
    return 0;
}

static int take_result(const rj_reader *r, const rj_result *x, hr_result *res)
{
    memset(res, 0, sizeof *res);
    if (copy(r, "id", x->id, res->id, sizeof res->id) ||
        copy(r, "family", x->family, res->family, sizeof res->family) ||
        copy(r, "message", x->message, res->message, sizeof res->message) ||
        copy(r, "rerun", x->rerun, res->rerun, sizeof res->rerun) ||
        copy(r, "description", x->description, res->description, sizeof res->description) ||
        copy(r, "dtype", x->dtype, res->dtype, sizeof res->dtype))
        return -1;
    res->elements = x->elements;
    size_t nr = json_array_size(x->rules);
    if (nr > ACASE_MAX_RULES) {
        snprintf(r->err, r->cap, "%s: field \"%s.rules\": more than %d entries", r->file, r->ctx,
                 ACASE_MAX_RULES);
        return -1;
    }
    for (size_t k = 0; k < nr; k++)
        if (copy(r, "rules", json_string_value(json_array_get(x->rules, k)), res->rules[k],
                 sizeof res->rules[k]))
            return -1;
    res->nrules = (int)nr;
    res->status = x->status;
    res->seconds = x->seconds;
    res->has_stats = x->has_stats;
    res->max_abs_err = x->max_abs_err;
    res->max_rel_err = x->max_rel_err;
    res->max_ratio = x->max_ratio;
    res->nans = x->nans;
    res->first_bad = x->first_bad;
    res->bad_ndim = x->ndim;
    memcpy(res->bad_index, x->index, sizeof res->bad_index);
    res->bad_got = x->got;
    res->bad_expected = x->expected;
    return 0;
}

int hr_partial_load(const char *path, hr_run *run, char *err, size_t cap)
{
    memset(run, 0, sizeof *run);
    rj_reader r = {path, "", err, cap};
    json_t *root;
    rj_doc doc;
    if (rj_load(&r, path, &root, &doc) != 0)
        return -1;
    int bad = 0;
    if (doc.complete) {
        snprintf(err, cap,
                 "%s: field \"complete\": not false: this is not the partial results "
                 "of an interrupted run",
                 path);
        bad = 1;
    }
    bad = bad ||
          copy(&r, "backend.name", doc.backend_name, run->backend_name, sizeof run->backend_name) ||
          copy(&r, "backend.version", doc.backend_version, run->backend_version,
               sizeof run->backend_version) ||
          copy(&r, "cases_dir", doc.cases_dir, run->cases_dir, sizeof run->cases_dir) ||
          copy(&r, "filter", doc.filter, run->filter, sizeof run->filter) ||
          copy(&r, "backend_options", doc.backend_options, run->backend_options,
               sizeof run->backend_options);
    if (!bad && doc.has_shard) {
        run->shard_index = doc.shard_index;
        run->shard_total = doc.shard_total;
        run->shard_selected = doc.shard_selected;
        snprintf(run->shard_selection, sizeof run->shard_selection, "%s", doc.shard_selection);
    }
    size_t n = json_array_size(doc.results);
    if (!bad && n && !(run->results = calloc(n, sizeof *run->results))) {
        snprintf(err, cap, "%s: out of memory", path);
        bad = 1;
    }
    for (size_t i = 0; i < n && !bad; i++) {
        rj_result x;
        bad = rj_result_read(&r, &doc, i, &x) != 0 || take_result(&r, &x, &run->results[i]) != 0;
        run->count = i + 1;
    }
    json_decref(root);
    if (bad) {
        free(run->results);
        run->results = NULL;
        run->count = 0;
        return -1;
    }
    run->partial = 1;
    return 0;
}
