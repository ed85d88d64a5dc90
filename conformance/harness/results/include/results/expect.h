/* expect.h — expected-results files: what a backend is known to do on the golden cases.
 *
 * A third-party implementation rarely conforms everywhere, and its divergences are findings,
 * not reasons to bend the spec.  An expected-results file records, per case id or glob, the
 * status the backend is known to get, why (one line: what the library returned), the SPEC
 * clause involved and whether upstream documents the behaviour.  `attnconf run --expect FILE`
 * then passes when every observed status is the recorded one, so CI stays green while the
 * report tells the truth, and any upstream change (a fix or a regression) fails at once.
 *
 * The file format and what conforms (a case no entry matches must PASS or be rejected as its case
 * requires; an entry that matches no case of an unfiltered, unsharded run is stale, an error):
 * conformance/expected/EXPECTED.md, installed as share/doc/attnconf/EXPECTED.md, for backend
 * authors who have only the installed package.
 */
#ifndef ATTNCONF_EXPECT_H
#define ATTNCONF_EXPECT_H

#include <stddef.h>

#include "results/result.h"

#define HX_FORMAT_VERSION 1
#define HX_MAX_ENTRIES 4096

typedef struct hx_entry {
    char **patterns; /* case ids or globs (at least one) */
    size_t npatterns;
    char *pattern; /* the patterns joined by ", ": how reports name the entry */
    hr_status status;
    int clause;      /* 1..SPEC_CLAUSES (results/result.h) */
    char *reason;    /* one line */
    char *upstream;  /* one line, or NULL */
    char *varies;    /* one line, or NULL: why the output differs from run to run */
    char *cpu_lacks; /* the CPU flag of a conditional entry, or NULL */
    int applies;     /* 0: a cpu_lacks entry on a CPU that has the flag (skipped) */
    int line;        /* 1-based line of the entry in the file, for messages */
    size_t *hits;    /* [npatterns]: cases each pattern matched first in the run */
} hx_entry;

typedef struct hx_file {
    char *path;
    char *backend;
    char *version;
    hx_entry *entries;
    size_t n;
} hx_file;

/* Load and check an expected-results file.  Returns 0 with *out filled, or -1 with err =
 * "PATH:LINE:COL: field: reason" (a missing file, bad YAML, an unknown key or status, a
 * duplicate pattern, a clause outside 1..SPEC_CLAUSES, an empty reason ...).  *out is freed on error. */
int hx_load(const char *path, hx_file *out, char *err, size_t errlen);

/* The first entry whose pattern matches `id` (its hit count incremented), or NULL. */
hx_entry *hx_match(hx_file *f, const char *id);

/* Apply the file to a finished run: fill every result's expectation fields, and return the
 * number of results whose status differs from the expected one. */
size_t hx_apply(hx_file *f, hr_run *run);

/* 1 if `observed` is what `r`'s expectation (or, without one, conformance) calls for: the
 * entry's status, or PASS for a FAIL entry with `varies`. */
int hx_status_matches(const hr_result *r);

void hx_free(hx_file *f);

#endif
