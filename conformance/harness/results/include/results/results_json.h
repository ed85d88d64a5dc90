/* results_json.h — THE reader of the results JSON that output.c writes (`attnconf run --format
 * json`, --out FILE and its FILE.partial.json sidecar).  `run --resume` (partial.c) and
 * `attnconf report` read through it, so both accept and refuse the same documents with the same
 * messages.
 *
 * Reading is strict: a file that does not parse, holds a duplicate key, is not schema version 1,
 * or has a missing or mistyped field is refused with "FILE: field "CTX.KEY": why".  Fields that
 * older files lack (dtype, description, max_ratio, backend_options, the UNEXPRESSIBLE, CRASH,
 * TIMEOUT and CASE_ERROR counts) are optional.  Strings are borrowed from the parsed document.
 */
#ifndef ATTNCONF_RESULTS_RESULTS_JSON_H
#define ATTNCONF_RESULTS_RESULTS_JSON_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "results/result.h"

/* Where a message goes: the file, the object being read ("" or e.g. "results[3]"), a buffer. */
typedef struct rj_reader {
    const char *file;
    char ctx[64];
    char *err;
    size_t cap;
} rj_reader;

/* The top level of a results document (borrowed from the root). */
typedef struct rj_doc {
    const char *backend_name, *backend_version, *backend_path;
    const char *cases_dir, *filter;
    const char *backend_options; /* "" when the file has none */
    int complete;                /* 0: "complete": false (a sidecar); 1: true or absent */
    const json_t *results;       /* an array (its entries are checked by rj_result_read) */
    /* run --expect: the expected-results file and its version; NULL when the run had none. */
    const char *expect_file, *expect_version;
    const json_t *summary; /* NULL when none (rj_summary_check requires it) */
    /* "shard" of a sharded run (run --shard): has_shard 0 without one.  Checked: 0 <= index <
     * total <= SHARD_MAX_TOTAL, selected >= 0, selection "fnv1a64:" and 16 hex digits. */
    int has_shard;
    uint32_t shard_index, shard_total;
    uint64_t shard_selected;
    const char *shard_selection;
} rj_doc;

/* One result as read (borrowed). */
typedef struct rj_result {
    const char *id, *family, *message, *rerun;
    const char *description, *dtype; /* "" when the file has none */
    int64_t elements;                /* 0 when the file has none */
    hr_status status;
    const json_t *rules; /* an array of strings */
    double seconds;
    int has_stats;
    double max_abs_err, max_rel_err, max_ratio; /* max_ratio 0 when the file has none */
    hr_nans nans;                               /* 0 counts when the file has none */
    int64_t first_bad;                          /* -1 when no element failed */
    int ndim;
    int64_t index[4];
    double got, expected;
    /* run --expect only: has_expect 0 without an "expected" object; x_case "" when no entry
     * matched (then x_status, x_reason, x_upstream are "" and x_clause 0). */
    int has_expect, as_expected;
    const char *x_case, *x_status, *x_reason, *x_upstream;
    const char *x_varies; /* "" when the entry has no `varies` */
    int64_t x_clause;
} rj_result;

/* Load path (duplicate keys refused) and read its top level into *doc.  Returns 0 with *root
 * the new document (the caller json_decrefs it), or -1 with r->err = "FILE: why" and *root
 * NULL. */
int rj_load(rj_reader *r, const char *path, json_t **root, rj_doc *doc);

/* Read results[i] of doc into *out.  Returns 0, or -1 with r->err naming the field. */
int rj_result_read(rj_reader *r, const rj_doc *doc, size_t i, rj_result *out);

/* The "summary" object against the statuses counted from the results (by_status[k] results
 * of status k, total in all).  Returns 0, or -1 with r->err naming the field. */
int rj_summary_check(rj_reader *r, const rj_doc *doc, const size_t *by_status, size_t total);

/* A status name ("PASS", ...) -> *out; returns 0, or -1 for a name that is none. */
int rj_status_parse(const char *name, hr_status *out);

#endif
