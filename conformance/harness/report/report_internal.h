/* report_internal.h — what the parts of `attnconf report` share (report_load.c reads result
 * files, report_md.c writes Markdown, report.c writes REPORT.md, report_diff.c compares two runs).
 * Internal to the harness; not installed. */
#ifndef ATTNCONF_REPORT_INTERNAL_H
#define ATTNCONF_REPORT_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "common/cli.h"
#include "common/md.h"
#include "common/outfile.h"
#include "results/output.h"
#include "results/result.h"

#define MUTANT_PREFIX "mutant_"
#define CLAUSE_OTHER (SPEC_CLAUSES + 1) /* row of rule ids that cite no clause */

typedef struct rp_case {
    const char *id, *family, *message, *rerun; /* borrowed from the loaded JSON */
    const json_t *rules;                       /* borrowed; an array of strings (checked) */
    unsigned clauses;                          /* bit k: a rule cites clause k (CLAUSE_OTHER) */
    const char *file;
    hr_status status;
    int has_stats;
    double max_abs_err, max_rel_err;
    double max_ratio; /* 0 when the file has none (older runs) */
    hr_nans nans;     /* the NaN mismatches the maxima leave out (0 counts: none, or older) */
    int64_t first_bad;
    int ndim;
    int64_t index[4];
    double got, expected;
    const char *description; /* "" when the file has none */
    const char *dtype;       /* "f32"/"f16"/"bf16"/"bool"; "" when none */
    int64_t elements;        /* the case's size; 0 when the file has none */
    /* run --expect only (x_* borrowed; x_case "" when no entry matched) */
    int has_expect, as_expected;
    const char *x_status, *x_case, *x_reason, *x_upstream, *x_varies;
    int64_t x_clause;
    int64_t shard; /* the shard its file holds (run --shard), -1 when not sharded */
} rp_case;

typedef struct rp_backend {
    const char *name, *version, *file;
    const char *expect_file, *expect_version; /* NULL: the run had no --expect */
    const char *options;                      /* "" when none */
    int mutant;
    const char **filters; /* distinct non-empty filters of the merged files */
    size_t nfilters;
    const char *filter; /* the first file's filter ("" when none), for the shards' check */
    /* The shards of one sharded run (run --shard K/N), when its files are: every file of the
     * backend is then a shard of the same run (shard_total, selection), each index once. */
    uint32_t shard_total;        /* 0: not sharded */
    uint64_t shard_selected;     /* cases the whole run selected */
    const char *shard_selection; /* their digest */
    const char **shard_file;     /* [shard_total]: the file holding each index, or NULL */
    size_t runs;                 /* unsharded files, plus 1 for a set of shards */
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
    char cwd[4096]; /* "" when unknown or "/": no path rewriting */
} rp_data;

/* ---- report_load.c: strict reading of result files (see report.c's top comment) ---- */

/* "attnconf report: FILE: field "F": message" on stderr (field may be NULL). */
__attribute__((format(printf, 3, 4))) void rp_errf(const char *file, const char *field,
                                                   const char *fmt, ...);
/* Load one result file into d (merging with a backend of the same name already there).  Prints
 * its own error and returns -1 on failure; d keeps the parsed JSON either way (rp_free). */
int rp_load_file(rp_data *d, const char *path);
/* After all files are loaded: sort, reject duplicate ids, collect families, count.  Prints its
 * own error and returns -1 on failure. */
int rp_index_data(rp_data *d);
void rp_free(rp_data *d);
/* The status counts [HR_STATUS_COUNT] of backend b in family f (after rp_index_data). */
size_t *rp_cell_counts(const rp_data *d, size_t b, size_t f);
size_t rp_family_index(const rp_data *d, const char *family);
/* qsort comparator of C strings (const char * elements). */
int rp_cmp_str(const void *a, const void *b);
/* The clause a rule id cites: N for "clauseN.<name>" (N in 1..SPEC_CLAUSES), else CLAUSE_OTHER. */
int rp_rule_clause(const char *rule);

/* ---- report_text.c: report text over rp_data (Markdown itself: common/md.h) ---- */
/* s with absolute paths under d->cwd made relative; malloc'd, or NULL (then print s as is). */
char *rp_relative(const rp_data *d, const char *s);
/* A family name, "(no family)" when empty. */
void rp_family(FILE *f, const char *s);
void rp_code_rel(FILE *f, const rp_data *d, const char *s);
void rp_text_rel(FILE *f, const rp_data *d, const char *s);

/* ---- report_diff.c ---- */
/* `attnconf report --diff OLD.json NEW.json [--out FILE]` (report_diff.c, called by cmd_report
 * once the options are parsed): newly failing, newly passing, changed statuses and error growth
 * per case, written to out (committed) or to stdout when out is NULL.  Returns 1 when a case is
 * newly failing, 0 otherwise, 2 for unreadable files or a write error. */
int report_diff_main(const char *old_file, const char *new_file, of_file *out);

/* ---- report.c ---- */
/* Write buf to o and commit it (common/outfile.h), or to stdout when o is NULL.  Returns 0, or
 * fail_status after printing "FILE: write error" (o's temporary file removed). */
int rp_write_out(of_file *o, const char *buf, size_t len, int fail_status);

#endif
