/* result.h — the result model of the harness: one case's status and statistics, one run's
 * results, the status and format vocabulary (result.c).  Every room above results/ speaks it. */
#ifndef ATTNCONF_RESULTS_RESULT_H
#define ATTNCONF_RESULTS_RESULT_H

#include <stdint.h>
#include <stdio.h>

#include "attncase/case.h"
#include "attnconf/backend.h"

/* The elements where a NaN stands against a number, either way: a NaN has no error size, so
 * they are counted here instead of in the error maxima (which leave them out), and every
 * summary says how many there are before it quotes a maximum. */
typedef struct hr_nans {
    int64_t got;    /* NaN where a number was expected */
    int64_t missed; /* a number where NaN was expected */
    int64_t others; /* the elements of the same rows the maxima are over: with none, the
                       maxima mean nothing and are not quoted */
    /* The first of each as a multi-index of the output shape (as many entries as its rank),
     * valid when its count is > 0. */
    int64_t got_index[4], missed_index[4];
} hr_nans;

/* Result of one case on one backend (Khronos CTS style: "not supported" is its own result). */
typedef enum hr_status {
    HR_PASS = 0,        /* output within tolerance */
    HR_EXPECTED_ERROR,  /* the case must be rejected and the backend rejected it correctly */
    HR_NOT_SUPPORTED,   /* the backend lacks a capability the case requires */
    HR_UNEXPRESSIBLE,   /* the case must be rejected and the backend answered
                               ATTNCONF_EINEXPRESSIBLE: its API cannot even write the invalid
                               input (SPEC.md "Result classes").  Neither passed nor failed; under
                               --expect it conforms only where the file lists the case with
                               this status and a reason.  The same answer on a case that must
                               succeed is a FAIL. */
    HR_FAIL,            /* wrong values, or accepted a case that must be rejected, or the
                               wrong kind of rejection */
    HR_INCORRECT_DTYPE, /* the output dtype is not the q dtype (a silent upcast/downcast) */
    HR_ERROR,           /* the backend failed where an output was expected */
    HR_CRASH,           /* the backend killed its worker process (signal, exit) or wrote
                               outside its buffers (run.c's guards) */
    HR_TIMEOUT,         /* no result within --case-timeout: the worker was killed */
    HR_CASE_ERROR,      /* the case file cannot be read (or its id is a duplicate): a
                               problem of the suite, not of the backend, so it is kept out of
                               the backend's passed/failed/skipped counts (exit 3) */
    HR_STATUS_COUNT
} hr_status;

/* The words of the FAIL an ATTNCONF_EINEXPRESSIBLE answer gets where the input must succeed. */
#define HR_EINEXPRESSIBLE_VALID                                                                    \
    "answered einexpressible on an input that must succeed (only an input that must be "           \
    "rejected can be unexpressible)"

/* "PASS", "EXPECTED_ERROR", "NOT_SUPPORTED", "UNEXPRESSIBLE", "FAIL", "INCORRECT_DTYPE",
 * "ERROR", "CRASH", "TIMEOUT", "CASE_ERROR". */
const char *hr_status_name(hr_status s);
/* 1 for FAIL, INCORRECT_DTYPE, ERROR, CRASH and TIMEOUT: the backend's failures (they make
 * `attnconf run` exit 1).  CASE_ERROR is not: it is the suite's problem (exit 3).  Neither are
 * NOT_SUPPORTED and UNEXPRESSIBLE, each counted apart from passed and failed. */
int hr_status_is_bad(hr_status s);

/* The clauses of SPEC.md, 1..SPEC_CLAUSES: rule ids ("clauseN.name") and expected-results
 * entries cite them. */
#define SPEC_CLAUSES 23

/* Room for one spec rule id in a result ("clause3.bottom_right"); longer ids are truncated. */
#define HR_RULE_MAX ACASE_ID_MAX

typedef struct hr_result {
    char id[ACASE_ID_MAX];
    char family[ACASE_ID_MAX];
    /* The case's spec rule ids (acase.rules, in case order), copied by run_case; none when
     * the case could not be loaded.  The report groups them by SPEC clause ("clauseN.name"). */
    char rules[ACASE_MAX_RULES][HR_RULE_MAX];
    int nrules;
    hr_status status;
    /* One line: why it failed / which capability is missing.  A backend's error text in it is
     * its head and tail when long (common/clip.h: at most CLIP_MAX bytes), with room for the
     * harness's words around it. */
    char message[1024];
    /* Comparison statistics (valid when has_stats). */
    int has_stats;
    double max_abs_err;
    double max_rel_err;
    double max_ratio;  /* max |got - exp| / allowed over CLOSE rows (SPEC clause 13) */
    hr_nans nans;      /* the NaN mismatches the three maxima leave out */
    int64_t first_bad; /* flat row-major index of the first failing element, -1 if none */
    int32_t bad_ndim;
    int64_t bad_index[4]; /* first_bad as a multi-index of the output shape */
    double bad_got, bad_expected;
    double seconds;        /* wall time of the backend call */
    char rerun[4096];      /* the exact command that re-runs this case alone (exec: command
                                lines and --backend-option words make it long) */
    char repro[4096];      /* the `attnconf repro` command that writes this case's
                                reproducer, "" when there is none (not an sdpa case, or a
                                plugin no repro writer is registered for) */
    char description[512]; /* what the case checks (its `description`), "" if not loaded */
    char dtype[8];         /* the case's dtype: q's for sdpa, "bool" for mask; "" if not
                                loaded (the report counts the dtypes that catch a mutant) */
    int64_t elements;      /* the case's size: input and expected elements (sdpa: q, k, v,
                                mask; mask: the keep mask), 0 if not loaded or a cache case
                                (the report names each mutant's smallest catching case) */
    /* What an expected-results file says of this case (expect.h; run --expect only). */
    int has_expect;            /* 1: the run had an expected-results file */
    int expect_entry;          /* 1: an entry matched; 0: the case is expected to conform */
    hr_status expect_status;   /* the entry's status; PASS (= conforms) without an entry */
    int expect_clause;         /* the entry's SPEC clause, 0 without an entry */
    char expect_pattern[2048]; /* the entry's case ids or globs, joined by ", " */
    char expect_reason[512];
    char expect_upstream[256];
    char expect_varies[256]; /* the entry's `varies` ("" without): the report quotes it, not
                                the message, whose values differ from run to run */
} hr_result;

typedef struct hr_run {
    char backend_name[128];
    char backend_version[256];
    char backend_path[4096];
    char cases_dir[1024];
    char filter[256];
    /* The --backend-option pairs as "k=v,k=v" in the order given; "" when none. */
    char backend_options[512];
    hr_result *results;
    size_t count;
    /* The expected-results file of `run --expect` (expect.h); expect_file "" = none. */
    char expect_file[1024];
    char expect_version[128]; /* the version the file's statuses were observed with */
    size_t unexpected;        /* results whose status is not the expected one */
    size_t stale;             /* entries that matched no case of an unfiltered run */
    /* run --shard K/N (common/shard.h): this file holds slice shard_index of shard_total
     * (0: not sharded).  shard_selected is the number of case files the whole selection holds
     * (all slices together), shard_selection their digest ("fnv1a64:..."), so `attnconf
     * report` can tell the complete set of slices from one with a case missing or added. */
    uint32_t shard_index, shard_total;
    uint64_t shard_selected;
    char shard_selection[32];
    /* 1: the results so far of a run still going (or interrupted): the sidecar
     * FILE.partial.json of `run --out FILE`, written with "complete": false (JSON only). */
    int partial;
} hr_run;

typedef enum hr_format { HR_FMT_TEXT = 0, HR_FMT_TAP, HR_FMT_JUNIT, HR_FMT_JSON } hr_format;

/* "text", "tap", "junit", "json" -> *out; returns 0, or -1 for anything else. */
int hr_format_parse(const char *name, hr_format *out);

#endif
