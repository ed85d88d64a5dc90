/* expect.h — expected-results files: what a backend is known to do on the golden cases.
 *
 * A third-party implementation rarely conforms everywhere, and its divergences are findings,
 * not reasons to bend the spec.  An expected-results file records, per case id or glob, the
 * status the backend is known to get, why (one line: what the library returned), the SPEC
 * clause involved and whether upstream documents the behaviour.  `attnconf run --expect FILE`
 * then passes when every observed status is the recorded one, so CI stays green while the
 * report tells the truth, and any upstream change (a fix or a regression) fails at once.
 *
 * File format (YAML, one document; unknown keys are errors):
 *
 *   attnconf_expected: 1              format version
 *   backend: mlx                      must equal the backend's name
 *   version: "mlx 0.32.4"             the version the statuses were observed with (a different
 *                                     version at run time is noted, not an error)
 *   expect:                           entries, matched in order: the first whose `case` matches
 *     - case: sdpa.fully_masked.*     an id or an fnmatch glob over ids, or a list of them
 *                                     ([a.b.c, a.d.*]): one finding covering several cases
 *       status: FAIL                  PASS, EXPECTED_ERROR, NOT_SUPPORTED, UNEXPRESSIBLE,
 *                                     FAIL, INCORRECT_DTYPE, ERROR, CRASH or TIMEOUT (not
 *                                     CASE_ERROR: an unreadable case file is the suite's
 *                                     problem, to be fixed, never recorded).  An
 *                                     UNEXPRESSIBLE entry names its cases by id, no glob:
 *                                     each claim that the library's API cannot write a
 *                                     case's invalid input is reviewed on its own
 *       clause: 9                     the SPEC.md clause (1..SPEC_CLAUSES) the divergence is about
 *       reason: "rows that keep no key come out as the mean of V"
 *       upstream: "MLX's own test only asserts no NaN"     optional
 *       varies: "the output is the library's uninitialised scratch memory"     optional: the
 *                                     library's output differs from run to run, so the report
 *                                     quotes this text instead of the values the harness saw
 *                                     (REPORT.md's conformance part stays deterministic); a
 *                                     FAIL entry with it also accepts PASS, which such output
 *                                     gives by chance (zeros where zeros are due) and the
 *                                     report renders as the recorded FAIL
 *       cpu_lacks: avx512_bf16        optional: the entry holds only on a CPU without this
 *                                     feature (an instruction-set flag as Linux's
 *                                     /proc/cpuinfo names it, from a known list, so that a
 *                                     misspelt flag is refused rather than lacked everywhere;
 *                                     the CPU's flags come from /proc/cpuinfo, or from
 *                                     $ATTNCONF_CPU_FLAGS, space-separated, where it is
 *                                     set).  Elsewhere
 *                                     the entry is skipped: it matches nothing and is never
 *                                     stale.  For a library whose behaviour depends on the
 *                                     CPU it runs on (a kernel that exists only for some
 *                                     instruction sets); such an entry goes before the
 *                                     unconditional ones for the same cases, and may repeat
 *                                     their ids.  Where the flags cannot be read (no
 *                                     /proc/cpuinfo, no $ATTNCONF_CPU_FLAGS) no feature is
 *                                     known lacking, and the entry is skipped.
 *
 * A case no entry matches is expected to conform: PASS, or EXPECTED_ERROR for a case that
 * must be rejected.  So an UNEXPRESSIBLE result conforms only where an entry lists the case
 * with that status (and, as every entry, a reason); anywhere else it is unexpected.  An entry that matches no case of the run is stale: an error, unless the
 * run was filtered (then it may simply not have been selected).
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
