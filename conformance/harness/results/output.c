/* output.c — write a finished run as text, TAP 13, JUnit XML or JSON.
 *
 * JSON schema (version 1; `attnconf report` in report.c is its reader and checks it strictly):
 *
 *   {
 *     "attnconf_results": 1,                       schema version, always first
 *     "complete": bool,                            true in the results of a finished run;
 *                                                  false in FILE.partial.json, the sidecar
 *                                                  `run --out FILE` rewrites after every case
 *                                                  (the results so far, in run order; `run
 *                                                  --resume` continues from it).  A reader
 *                                                  takes a file without it as complete (from
 *                                                  before it existed); `attnconf report`
 *                                                  refuses a partial file
 *     "backend": {"name": str, "version": str, "path": str},
 *     "cases_dir": str,
 *     "filter": str,                               "" when no filter was given
 *     "backend_options": str,                      --backend-option pairs as "k=v,k=v" in
 *                                                  the order given; "" when none
 *     "shard": {"index": int, "total": int,       only in a sharded run (run --shard K/N):
 *               "selected": int,                   slice K (from 0) of N; how many case files
 *               "selection": str},                 the whole selection holds and their digest
 *                                                  ("fnv1a64:" + 16 hex digits: common/shard.h),
 *                                                  for `attnconf report` to check a merge
 *     "expectations": {"file": str, "version": str, "unexpected": int, "stale": int},
 *                                                  only in a run with --expect
 *     "results": [                                 in run order
 *       {
 *         "id": str, "family": str,
 *         "rules": [str, ...],                     the case's spec rule ids, in case order
 *                                                  (e.g. "clause3.bottom_right"); always
 *                                                  present, [] when the case did not load
 *         "status": "PASS" | "EXPECTED_ERROR" | "NOT_SUPPORTED" | "UNEXPRESSIBLE" | "FAIL"
 *                   | "INCORRECT_DTYPE" | "ERROR" | "CRASH" | "TIMEOUT" | "CASE_ERROR",
 *                                                  UNEXPRESSIBLE: a case that must be rejected,
 *                                                  answered einexpressible (result.h);
 *                                                  CRASH: the backend killed its worker or
 *                                                  wrote outside a buffer; TIMEOUT: no result
 *                                                  within --case-timeout; CASE_ERROR: the case
 *                                                  file could not be read (the suite's fault)
 *         "message": str,                          "" when there is nothing to say
 *         -- only when the comparison ran (hr_result.has_stats):
 *         "max_abs_err": num, "max_rel_err": num,
 *         "max_ratio": num,                        max |got - exp| / allowed over the rows
 *                                                  checked within tolerance (SPEC clause 13:
 *                                                  <= 1 passes); 0 without a tolerance;
 *                                                  readers accept its absence (older files).
 *                                                  The three maxima leave out the elements
 *                                                  where NaN stands against a number (older
 *                                                  files: "nan" there), counted instead in:
 *         "nan_got": int, "nan_got_index": [int, ...],
 *                                                  only when > 0: the elements that are NaN
 *                                                  where a number was expected, and the first
 *                                                  as a multi-index (absent: 0)
 *         "nan_missed": int, "nan_missed_index": [int, ...],
 *                                                  the same for a number where NaN was
 *                                                  expected
 *         "nan_others": int,                       with either: the elements the maxima are
 *                                                  over (0: they mean nothing)
 *         "first_bad": int,                        flat row-major index, -1 if no bad element
 *         -- only when first_bad >= 0:
 *         "bad_index": [int, ...],                 first_bad as a multi-index (0..4 entries)
 *         "bad_got": num, "bad_expected": num,
 *         -- always:
 *         "seconds": num,                          wall time of the backend call
 *         "rerun": str,                            command that re-runs this case alone
 *         "description": str,                      what the case checks ("" if not loaded)
 *         "dtype": str,                            the case's dtype: q's ("f32", "f16",
 *                                                  "bf16") for sdpa, "bool" for mask, ""
 *                                                  if not loaded (readers accept its absence)
 *         "elements": int,                         only when known: the case's input (and
 *                                                  mask-builder output) elements
 *         -- only in a run with --expect:
 *         "expected": {"as_expected": bool,        observed status is the expected one
 *                      -- only when an entry of the file matched the case:
 *                      "status": str, "case": str (the entry's id or glob), "clause": int,
 *                      "reason": str, "upstream": str ("" when not given)}
 *       }, ...
 *     ],
 *     "summary": {"PASS": int, "EXPECTED_ERROR": int, "NOT_SUPPORTED": int,
 *                 "UNEXPRESSIBLE": int, "FAIL": int, "INCORRECT_DTYPE": int, "ERROR": int,
 *                 "CRASH": int, "TIMEOUT": int, "CASE_ERROR": int, "total": int}
 *                                                  (a reader accepts a summary without
 *                                                  UNEXPRESSIBLE or the last three, from
 *                                                  before they existed)
 *   }
 *
 * "num" is a JSON number, or one of the strings "nan", "inf", "-inf": JSON has no non-finite
 * numbers and a backend's wrong value is exactly what must survive the round trip.
 * Reals are written with 17 significant digits (exact round trip).  Keys are written in the
 * order above, so two runs of the same cases give identical files except for "seconds".
 * Strings are UTF-8; invalid bytes in backend-provided text are replaced by '?'.
 */
#define _POSIX_C_SOURCE 200809L /* strnlen */

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/jsonv.h"
#include "results/expect.h"
#include "results/output.h"

/* Length of a fixed-size char array field, bounded even if it lacks its terminator. */
#define FIELD(x) (x), strnlen((x), sizeof(x))

/* A status outside the enum (a caller bug) is reported as ERROR rather than indexing past a
 * table: output must never crash, and "bad" is the safe side. */
static hr_status norm_status(hr_status s)
{
    return ((unsigned)s < (unsigned)HR_STATUS_COUNT) ? s : HR_ERROR;
}

static const char *status_name(hr_status s)
{
    const char *n = hr_status_name(norm_status(s));
    return n ? n : "ERROR";
}

typedef struct counts {
    size_t by_status[HR_STATUS_COUNT];
    size_t passed, failed, skipped;
    size_t unexpressible; /* UNEXPRESSIBLE: in none of passed/failed/skipped */
    size_t unreadable;    /* CASE_ERROR: in none of passed/failed/skipped (the suite's fault) */
} counts;

static counts count_run(const hr_run *run)
{
    counts c;
    memset(&c, 0, sizeof c);
    for (size_t i = 0; i < run->count; i++) {
        hr_status s = norm_status(run->results[i].status);
        c.by_status[s]++;
        if (s == HR_NOT_SUPPORTED)
            c.skipped++;
        else if (s == HR_UNEXPRESSIBLE)
            c.unexpressible++;
        else if (s == HR_CASE_ERROR)
            c.unreadable++;
        else if (hr_status_is_bad(s))
            c.failed++;
        else
            c.passed++;
    }
    return c;
}

/* Decode one UTF-8 character at s[*i] (n bytes available).  Returns the code point and advances
 * *i, or returns -1 and advances by one byte for an invalid, overlong, surrogate or truncated
 * sequence. */
static long next_cp(const char *s, size_t n, size_t *i)
{
    const unsigned char *p = (const unsigned char *)s + *i;
    size_t left = n - *i;
    unsigned char b = p[0];
    long cp;
    size_t len;
    if (b < 0x80) {
        (*i)++;
        return b;
    } else if (b >= 0xC2 && b <= 0xDF) {
        cp = b & 0x1F, len = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
        cp = b & 0x0F, len = 3;
    } else if (b >= 0xF0 && b <= 0xF4) {
        cp = b & 0x07, len = 4;
    } else {
        (*i)++;
        return -1;
    }
    if (left < len) {
        (*i)++;
        return -1;
    }
    for (size_t k = 1; k < len; k++) {
        if ((p[k] & 0xC0) != 0x80) {
            (*i)++;
            return -1;
        }
        cp = (cp << 6) | (p[k] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
        (*i)++;
        return -1;
    }
    *i += len;
    return cp;
}

/* Copy s[0..n) to f as one line: control characters become spaces and invalid UTF-8 '?', so a
 * backend's multi-line error text cannot break the line structure of text or TAP output.
 * hash_escape: write '#' as "\#" (a bare '#' in a TAP description starts a directive). */
static void put_line(FILE *f, const char *s, size_t n, int hash_escape)
{
    size_t i = 0;
    while (i < n) {
        size_t start = i;
        long cp = next_cp(s, n, &i);
        if (cp < 0)
            fputc('?', f);
        else if (cp < 0x20 || cp == 0x7F)
            fputc(' ', f);
        else if (cp == '#' && hash_escape)
            fputs("\\#", f);
        else
            fwrite(s + start, 1, i - start, f);
    }
}

/* XML-escape s[0..n) for element content or a double-quoted attribute.  XML 1.0 cannot carry
 * most C0 controls at all (not even as &#N;), so those and invalid UTF-8 become '?'; tab and
 * newlines are kept as character references so attribute normalisation does not eat them. */
static void put_xml(FILE *f, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t start = i;
        long cp = next_cp(s, n, &i);
        switch (cp) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        case '\t': fputs("&#9;", f); break;
        case '\n': fputs("&#10;", f); break;
        case '\r': fputs("&#13;", f); break;
        default:
            if (cp < 0x20 || cp == 0xFFFE || cp == 0xFFFF) /* includes cp == -1 */
                fputc('?', f);
            else
                fwrite(s + start, 1, i - start, f);
        }
    }
}

static void put_xml_str(FILE *f, const char *s)
{
    put_xml(f, s, strlen(s));
}

/* YAML double-quoted scalar (TAP 13 diagnostics). */
static void put_yaml_str(FILE *f, const char *s, size_t n)
{
    size_t i = 0;
    fputc('"', f);
    while (i < n) {
        size_t start = i;
        long cp = next_cp(s, n, &i);
        if (cp < 0)
            fputc('?', f);
        else if (cp == '"' || cp == '\\')
            fprintf(f, "\\%c", (int)cp);
        else if (cp == '\n')
            fputs("\\n", f);
        else if (cp == '\t')
            fputs("\\t", f);
        else if (cp < 0x20 || cp == 0x7F)
            fprintf(f, "\\x%02X", (unsigned)cp);
        else
            fwrite(s + start, 1, i - start, f);
    }
    fputc('"', f);
}

/* printf("%g") of a NaN may print "-nan"; spell non-finite values the same everywhere. */
static void put_num(FILE *f, double x, const char *fmt)
{
    if (isnan(x))
        fputs("nan", f);
    else if (isinf(x))
        fputs(x > 0 ? "inf" : "-inf", f);
    else
        fprintf(f, fmt, x);
}

/* YAML 1.2 core schema spelling of non-finite floats. */
static void put_yaml_num(FILE *f, double x)
{
    if (isnan(x))
        fputs(".nan", f);
    else if (isinf(x))
        fputs(x > 0 ? ".inf" : "-.inf", f);
    else
        fprintf(f, "%.9g", x);
}

static int bad_ndim(const hr_result *r)
{
    return (r->bad_ndim >= 0 && r->bad_ndim <= 4) ? r->bad_ndim : 0;
}

/* "[b,h,i,j]": an index of the output (bad_ndim(r) entries). */
static void put_ints(FILE *f, const hr_result *r, const int64_t *index)
{
    fputc('[', f);
    for (int d = 0; d < bad_ndim(r); d++)
        fprintf(f, "%s%" PRId64, d ? "," : "", index[d]);
    fputc(']', f);
}

static void put_index(FILE *f, const hr_result *r)
{
    put_ints(f, r, r->bad_index);
}

void hr_write_stats(FILE *f, const hr_result *r)
{
    if (r->first_bad >= 0) {
        fputs("first bad index ", f);
        put_index(f, r);
        fprintf(f, " (flat %" PRId64 "): got ", r->first_bad);
        put_num(f, r->bad_got, "%.9g");
        fputs(", expected ", f);
        put_num(f, r->bad_expected, "%.9g");
        fputs("; ", f);
    }
    /* NaN against a number has no error size: the maxima leave those elements out, so their
     * count comes first, or the maxima would read as within tolerance. */
    const int64_t nan_got = r->nans.got > 0 ? r->nans.got : 0;
    const int64_t nan_missed = r->nans.missed > 0 ? r->nans.missed : 0;
    if (nan_got) {
        fprintf(f, "%" PRId64 " NaN where a number was expected (first at ", nan_got);
        put_ints(f, r, r->nans.got_index);
        fputs("); ", f);
    }
    if (nan_missed) {
        fprintf(f, "%" PRId64 " number%s where NaN was expected (first at ", nan_missed,
                nan_missed == 1 ? "" : "s");
        put_ints(f, r, r->nans.missed_index);
        fputs("); ", f);
    }
    if (nan_got || nan_missed) {
        if (r->nans.others <= 0) { /* every element is such a NaN: no size to quote */
            fputs("no other element to measure", f);
            return;
        }
        fprintf(f, "over the other %" PRId64 " element%s: ", r->nans.others,
                r->nans.others == 1 ? "" : "s");
    }
    /* First the error in units of the allowed error (SPEC clause 13: the bound differs from
     * element to element, so a raw error says little); 0 means no tolerance applied (exact
     * checks, or results from before max_ratio existed) and is left out. */
    if (r->max_ratio != 0.0) {
        fputs("max err ", f);
        put_num(f, r->max_ratio, "%.3g");
        fputs(" x allowed, ", f);
    }
    fputs("max abs err ", f);
    put_num(f, r->max_abs_err, "%.3g");
    fputs(", max rel err ", f);
    put_num(f, r->max_rel_err, "%.3g");
}

/* "clauses 3, 19 (clause3.bottom_right, clause19.lengths)": the SPEC.md clauses a case's rule
 * ids cite and the ids themselves, so every failure line says which promise was broken.  Ids of
 * another form are listed without a clause.  Nothing is written when the case has no rule. */
static void put_spec(FILE *f, const hr_result *r)
{
    int seen[64] = {0}, n = 0;
    for (int k = 0; k < r->nrules && k < ACASE_MAX_RULES; k++) {
        const char *id = r->rules[k];
        char *end = NULL;
        long c = strncmp(id, "clause", 6) == 0 ? strtol(id + 6, &end, 10) : 0;
        if (end && *end == '.' && c > 0 && c < 64 && !seen[c]) {
            seen[c] = 1;
            n++;
        }
    }
    if (n)
        fputs(n == 1 ? "SPEC.md clause " : "SPEC.md clauses ", f);
    for (int c = 1, first = 1; c < 64; c++)
        if (seen[c]) {
            fprintf(f, "%s%d", first ? "" : ", ", c);
            first = 0;
        }
    fputs(n ? " (" : "rules (", f);
    for (int k = 0; k < r->nrules && k < ACASE_MAX_RULES; k++) {
        fputs(k ? ", " : "", f);
        put_line(f, FIELD(r->rules[k]), 0);
    }
    fputc(')', f);
}

/* The lines that explain a failing case, shared by text and JUnit: what the case checks and
 * the clauses it cites ("    " prefix in text, none in JUnit). */
static void put_purpose(FILE *f, const hr_result *r, const char *indent)
{
    if (r->description[0]) {
        fprintf(f, "%schecks: ", indent);
        put_line(f, FIELD(r->description), 0);
        fputc('\n', f);
    }
    if (r->nrules > 0) {
        fprintf(f, "%sspec: ", indent);
        put_spec(f, r);
        fputc('\n', f);
    }
}

/* ---- text ---------------------------------------------------------------------------------- */

#define STATUS_WIDTH 15 /* strlen("INCORRECT_DTYPE") */

static void write_text(const hr_run *run, FILE *f)
{
    counts c = count_run(run);
    fputs("attnconf: backend ", f);
    put_line(f, FIELD(run->backend_name), 0);
    fputc(' ', f);
    put_line(f, FIELD(run->backend_version), 0);
    if (run->backend_options[0]) {
        fputs(" (options ", f);
        put_line(f, FIELD(run->backend_options), 0);
        fputc(')', f);
    }
    fprintf(f, ", %zu case%s", run->count, run->count == 1 ? "" : "s");
    if (run->shard_total)
        fprintf(f, " (shard %" PRIu32 "/%" PRIu32 " of %" PRIu64 ")", run->shard_index,
                run->shard_total, run->shard_selected);
    fputc('\n', f);
    for (size_t i = 0; i < run->count; i++) {
        const hr_result *r = &run->results[i];
        hr_status s = norm_status(r->status);
        fprintf(f, "%-*s  ", STATUS_WIDTH, status_name(s));
        put_line(f, FIELD(r->id), 0);
        fputc('\n', f);
        if (r->has_expect && !hx_status_matches(r)) {
            fprintf(f, "    UNEXPECTED: expected %s",
                    r->expect_entry ? status_name(r->expect_status) : "PASS or EXPECTED_ERROR");
            if (r->expect_entry) {
                fputs(" (entry ", f);
                put_line(f, FIELD(r->expect_pattern), 0);
                fputs(": ", f);
                put_line(f, FIELD(r->expect_reason), 0);
                fputc(')', f);
            } else if (s == HR_UNEXPRESSIBLE) {
                fputs(" (an UNEXPRESSIBLE result conforms only where the file lists the case "
                      "with that status and a reason)",
                      f);
            }
            fputc('\n', f);
        } else if (r->has_expect && r->expect_entry && hr_status_is_bad(s)) {
            fprintf(f, "    known divergence, clause %d: ", r->expect_clause);
            put_line(f, FIELD(r->expect_reason), 0);
            fputc('\n', f);
        } else if (r->has_expect && r->expect_entry && s == HR_UNEXPRESSIBLE) {
            fprintf(f, "    recorded unexpressible, clause %d: ", r->expect_clause);
            put_line(f, FIELD(r->expect_reason), 0);
            fputc('\n', f);
        }
        if (s == HR_NOT_SUPPORTED || s == HR_UNEXPRESSIBLE) {
            fputs(s == HR_NOT_SUPPORTED ? "    not supported: " : "    unexpressible: ", f);
            put_line(f, FIELD(r->message), 0);
            fputc('\n', f);
        } else if (hr_status_is_bad(s) || s == HR_CASE_ERROR) {
            if (r->message[0]) {
                fputs("    ", f);
                put_line(f, FIELD(r->message), 0);
                fputc('\n', f);
            }
            put_purpose(f, r, "    ");
            if (r->has_stats) {
                fputs("    ", f);
                hr_write_stats(f, r);
                fputc('\n', f);
            }
            if (r->rerun[0]) {
                fputs("    rerun: ", f);
                put_line(f, FIELD(r->rerun), 0);
                fputc('\n', f);
            }
            if (r->repro[0]) {
                fputs("    repro: ", f);
                put_line(f, FIELD(r->repro), 0);
                fputc('\n', f);
            }
        }
    }
    for (int s = 0; s < HR_STATUS_COUNT; s++)
        fprintf(f, "%s%s %zu", s ? ", " : "", status_name((hr_status)s), c.by_status[s]);
    fputc('\n', f);
    if (run->expect_file[0]) {
        fputs("expectations ", f);
        put_line(f, FIELD(run->expect_file), 0);
        fprintf(f, ": %zu as expected, %zu unexpected, %zu stale entr%s\n",
                run->count - run->unexpected, run->unexpected, run->stale,
                run->stale == 1 ? "y" : "ies");
    }
    /* The same words as the status names: passed = PASS + EXPECTED_ERROR, failed = the bad
     * statuses, not supported = NOT_SUPPORTED (ctest and JUnit call these "skipped"),
     * unexpressible = UNEXPRESSIBLE (shown when there is one). */
    fprintf(f, "%zu passed, %zu failed, %zu not supported", c.passed, c.failed, c.skipped);
    if (c.unexpressible)
        fprintf(f, ", %zu unexpressible", c.unexpressible);
    if (c.unreadable)
        fprintf(f, "; %zu case file%s unreadable", c.unreadable, c.unreadable == 1 ? "" : "s");
    fputc('\n', f);
}

/* ---- TAP 13 -------------------------------------------------------------------------------- */

/* Under --expect a run is judged against the recorded statuses (expect.h): a recorded
 * divergence is not a failure of this run, and any status change is.  These two say how each
 * result counts for TAP and JUnit, which CI systems read on their own. */
static int known_divergence(const hr_result *r)
{
    return r->has_expect && r->expect_entry && hx_status_matches(r) &&
           hr_status_is_bad(norm_status(r->status));
}

static int judged_bad(const hr_result *r)
{
    hr_status s = norm_status(r->status);
    /* An unreadable case file is never as expected: no expected-results entry can vouch for a
     * case that did not run. */
    if (s == HR_CASE_ERROR)
        return 1;
    return r->has_expect ? !hx_status_matches(r) : hr_status_is_bad(s);
}

/* "recorded FAIL" / "recorded PASS or EXPECTED_ERROR", for an unexpected status. */
static void put_recorded(FILE *f, const hr_result *r)
{
    fputs("UNEXPECTED: recorded ", f);
    fputs(r->expect_entry ? status_name(r->expect_status) : "PASS or EXPECTED_ERROR", f);
}

static void write_tap(const hr_run *run, FILE *f)
{
    fputs("TAP version 13\n", f);
    fprintf(f, "1..%zu\n", run->count);
    fputs("# attnconf backend ", f);
    put_line(f, FIELD(run->backend_name), 0);
    fputc(' ', f);
    put_line(f, FIELD(run->backend_version), 0);
    fputc('\n', f);
    for (size_t i = 0; i < run->count; i++) {
        const hr_result *r = &run->results[i];
        hr_status s = norm_status(r->status);
        /* A CASE_ERROR is not the backend's failure, but a case that did not run is not ok. */
        int bad = hr_status_is_bad(s) || s == HR_CASE_ERROR, known = known_divergence(r);
        fprintf(f, "%s %zu - ", bad || judged_bad(r) ? "not ok" : "ok", i + 1);
        put_line(f, FIELD(r->id), 1);
        if (r->has_expect && !hx_status_matches(r)) {
            fputs(" (", f);
            put_recorded(f, r);
            fprintf(f, ", observed %s)", status_name(s));
        } else if (known) { /* TAP's TODO: a known failure that does not fail the run */
            fprintf(f, " # TODO known divergence, clause %d: ", r->expect_clause);
            put_line(f, FIELD(r->expect_reason), 1);
        } else if (s == HR_NOT_SUPPORTED || s == HR_UNEXPRESSIBLE) {
            fputs(s == HR_NOT_SUPPORTED ? " # SKIP not supported: " : " # SKIP unexpressible: ", f);
            put_line(f, FIELD(r->message), 1);
        }
        fputc('\n', f);
        /* Diagnostics for failures, and for expected errors (which rejection was seen). */
        if (!bad && s != HR_EXPECTED_ERROR)
            continue;
        fputs("  ---\n", f);
        fprintf(f, "  status: %s\n", status_name(s));
        fputs("  message: ", f);
        put_yaml_str(f, FIELD(r->message));
        fputc('\n', f);
        if (r->description[0]) {
            fputs("  checks: ", f);
            put_yaml_str(f, FIELD(r->description));
            fputc('\n', f);
        }
        if (r->nrules > 0) {
            char *spec = NULL;
            size_t slen = 0;
            FILE *m = open_memstream(&spec, &slen);
            if (m) {
                put_spec(m, r);
                if (fclose(m) == 0 && spec) {
                    fputs("  spec: ", f);
                    put_yaml_str(f, spec, slen);
                    fputc('\n', f);
                }
            }
            free(spec);
        }
        if (r->has_stats) {
            fputs("  max_ratio: ", f); /* error / allowed error (SPEC clause 13) */
            put_yaml_num(f, r->max_ratio);
            fputs("\n  max_abs_err: ", f);
            put_yaml_num(f, r->max_abs_err);
            fputs("\n  max_rel_err: ", f);
            put_yaml_num(f, r->max_rel_err);
            fputc('\n', f);
            if (r->nans.got > 0) { /* left out of the maxima above (result.h hr_nans) */
                fprintf(f, "  nan_got: %" PRId64 "\n  nan_got_first: ", r->nans.got);
                put_ints(f, r, r->nans.got_index);
                fputc('\n', f);
            }
            if (r->nans.missed > 0) {
                fprintf(f, "  nan_missed: %" PRId64 "\n  nan_missed_first: ", r->nans.missed);
                put_ints(f, r, r->nans.missed_index);
                fputc('\n', f);
            }
            if (r->nans.got > 0 || r->nans.missed > 0)
                fprintf(f, "  nan_others: %" PRId64 "\n", r->nans.others);
            if (r->first_bad >= 0) {
                fputs("  first_bad: ", f);
                put_index(f, r);
                fprintf(f, "\n  first_bad_flat: %" PRId64 "\n", r->first_bad);
                fputs("  got: ", f);
                put_yaml_num(f, r->bad_got);
                fputs("\n  expected: ", f);
                put_yaml_num(f, r->bad_expected);
                fputc('\n', f);
            }
        }
        if (r->rerun[0]) {
            fputs("  rerun: ", f);
            put_yaml_str(f, FIELD(r->rerun));
            fputc('\n', f);
        }
        fputs("  ...\n", f);
    }
}

/* ---- JUnit XML ----------------------------------------------------------------------------- */

static double sane_seconds(double s)
{
    return (isfinite(s) && s > 0) ? s : 0.0;
}

/* Element body of <failure>/<error>: the same detail block as the text format. */
static void put_xml_details(FILE *f, const hr_result *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) {
        put_xml(f, FIELD(r->message));
        return;
    }
    put_line(m, FIELD(r->message), 0);
    fputc('\n', m);
    put_purpose(m, r, "");
    if (r->has_stats) {
        hr_write_stats(m, r);
        fputc('\n', m);
    }
    if (r->rerun[0]) {
        fputs("rerun: ", m);
        put_line(m, FIELD(r->rerun), 0);
    }
    if (fclose(m) == 0 && buf)
        put_xml(f, buf, len);
    else
        put_xml(f, FIELD(r->message));
    free(buf);
}

static void write_junit(const hr_run *run, FILE *f)
{
    counts c = count_run(run);
    /* JUnit's "error" is a test that could not run to a verdict: ERROR, CRASH, TIMEOUT and an
     * unreadable case file; "failure" a wrong verdict. */
    size_t failures = c.by_status[HR_FAIL] + c.by_status[HR_INCORRECT_DTYPE];
    size_t errors = c.by_status[HR_ERROR] + c.by_status[HR_CRASH] + c.by_status[HR_TIMEOUT] +
                    c.by_status[HR_CASE_ERROR];
    c.skipped += c.unexpressible; /* a <skipped> testcase, like NOT_SUPPORTED */
    if (run->expect_file[0]) {    /* judged against the file: see known_divergence */
        failures = errors = 0;
        c.skipped = 0;
        for (size_t i = 0; i < run->count; i++) {
            const hr_result *r = &run->results[i];
            failures += judged_bad(r);
            c.skipped += !judged_bad(r) &&
                         (known_divergence(r) || norm_status(r->status) == HR_NOT_SUPPORTED ||
                          norm_status(r->status) == HR_UNEXPRESSIBLE);
        }
    }
    double total = 0.0;
    for (size_t i = 0; i < run->count; i++)
        total += sane_seconds(run->results[i].seconds);

    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
    fprintf(f,
            "<testsuites name=\"attnconf\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" "
            "skipped=\"%zu\" time=\"%.6f\">\n",
            run->count, failures, errors, c.skipped, total);
    fputs("  <testsuite name=\"attnconf.", f);
    put_xml(f, FIELD(run->backend_name));
    fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\" time=\"%.6f\">\n",
            run->count, failures, errors, c.skipped, total);
    static const struct {
        const char *name;
        size_t off, cap;
    } props[] = {
        {"backend.version", offsetof(hr_run, backend_version), sizeof run->backend_version},
        {"backend.path", offsetof(hr_run, backend_path), sizeof run->backend_path},
        {"cases_dir", offsetof(hr_run, cases_dir), sizeof run->cases_dir},
        {"filter", offsetof(hr_run, filter), sizeof run->filter},
    };
    fputs("    <properties>\n", f);
    for (size_t k = 0; k < sizeof props / sizeof props[0]; k++) {
        const char *v = (const char *)run + props[k].off;
        fprintf(f, "      <property name=\"%s\" value=\"", props[k].name);
        put_xml(f, v, strnlen(v, props[k].cap));
        fputs("\"/>\n", f);
    }
    if (run->shard_total)
        fprintf(f, "      <property name=\"shard\" value=\"%" PRIu32 "/%" PRIu32 "\"/>\n",
                run->shard_index, run->shard_total);
    fputs("    </properties>\n", f);

    for (size_t i = 0; i < run->count; i++) {
        const hr_result *r = &run->results[i];
        hr_status s = norm_status(r->status);
        fputs("    <testcase classname=\"", f);
        if (r->family[0])
            put_xml(f, FIELD(r->family));
        else
            put_xml_str(f, "attnconf");
        fputs("\" name=\"", f);
        put_xml(f, FIELD(r->id));
        fprintf(f, "\" time=\"%.6f\"", sane_seconds(r->seconds));
        if (!judged_bad(r) && (s == HR_PASS || s == HR_EXPECTED_ERROR)) {
            fputs("/>\n", f);
            continue;
        }
        fputs(">\n", f);
        if (r->has_expect && !hx_status_matches(r)) {
            fputs("      <failure message=\"", f);
            put_recorded(f, r);
            fprintf(f, ", observed %s", status_name(s));
            if (r->message[0]) {
                fputs(": ", f);
                put_xml(f, FIELD(r->message));
            }
            fputs("\" type=\"UNEXPECTED\">", f);
            put_xml_details(f, r);
            fputs("</failure>\n", f);
        } else if (known_divergence(r)) {
            fprintf(f,
                    "      <skipped message=\"known divergence, clause %d (%s): ", r->expect_clause,
                    status_name(s));
            put_xml(f, FIELD(r->expect_reason));
            fputs("\"/>\n", f);
        } else if (s == HR_NOT_SUPPORTED || s == HR_UNEXPRESSIBLE) {
            fputs(s == HR_NOT_SUPPORTED ? "      <skipped message=\"not supported: "
                                        : "      <skipped message=\"unexpressible: ",
                  f);
            put_xml(f, FIELD(r->message));
            fputs("\"/>\n", f);
        } else {
            const char *tag = (s == HR_FAIL || s == HR_INCORRECT_DTYPE) ? "failure" : "error";
            fprintf(f, "      <%s message=\"", tag);
            put_xml(f, FIELD(r->message));
            fprintf(f, "\" type=\"%s\">", status_name(s));
            put_xml_details(f, r);
            fprintf(f, "</%s>\n", tag);
        }
        fputs("    </testcase>\n", f);
    }
    fputs("  </testsuite>\n</testsuites>\n", f);
}

/* ---- JSON ---------------------------------------------------------------------------------- */

/* A JSON string from a possibly unterminated, possibly non-UTF-8 field (json_stringn rejects
 * invalid UTF-8; the replacement keeps the output valid instead of dropping the field). */
static json_t *jstr(const char *s, size_t n)
{
    char *buf = malloc(n + 1);
    if (!buf)
        return NULL;
    size_t i = 0, o = 0;
    while (i < n) {
        size_t start = i;
        long cp = next_cp(s, n, &i);
        if (cp < 0) {
            buf[o++] = '?';
        } else {
            memcpy(buf + o, s + start, i - start);
            o += i - start;
        }
    }
    json_t *j = json_stringn(buf, o);
    free(buf);
    return j;
}

/* json_object_set_new steals `value` even on failure, so a NULL from an allocation failure is
 * the only thing to check. */
static int jset(json_t *obj, const char *key, json_t *value)
{
    return (value && json_object_set_new(obj, key, value) == 0) ? 0 : -1;
}

/* An index of the output as a JSON array (bad_ndim(r) entries), or NULL. */
static json_t *ints_json(const hr_result *r, const int64_t *index)
{
    json_t *a = json_array();
    for (int d = 0; a && d < bad_ndim(r); d++)
        if (json_array_append_new(a, json_integer(index[d])) != 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

static json_t *json_result(const hr_result *r)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    int err = 0;
    err |= jset(o, "id", jstr(FIELD(r->id)));
    err |= jset(o, "family", jstr(FIELD(r->family)));
    json_t *rules = json_array();
    int nrules = r->nrules < 0 ? 0 : r->nrules > ACASE_MAX_RULES ? ACASE_MAX_RULES : r->nrules;
    for (int k = 0; rules && k < nrules; k++) {
        json_t *rule = jstr(FIELD(r->rules[k]));
        err |= !rule || json_array_append_new(rules, rule) != 0;
    }
    err |= jset(o, "rules", rules);
    err |= jset(o, "status", json_string(status_name(r->status)));
    err |= jset(o, "message", jstr(FIELD(r->message)));
    if (r->has_stats) {
        err |= jset(o, "max_abs_err", jsonv_num(r->max_abs_err));
        err |= jset(o, "max_rel_err", jsonv_num(r->max_rel_err));
        err |= jset(o, "max_ratio", jsonv_num(r->max_ratio));
        /* Only when there are any: every other result's bytes stay as they were. */
        if (r->nans.got > 0) {
            err |= jset(o, "nan_got", json_integer(r->nans.got));
            err |= jset(o, "nan_got_index", ints_json(r, r->nans.got_index));
        }
        if (r->nans.missed > 0) {
            err |= jset(o, "nan_missed", json_integer(r->nans.missed));
            err |= jset(o, "nan_missed_index", ints_json(r, r->nans.missed_index));
        }
        if (r->nans.got > 0 || r->nans.missed > 0)
            err |= jset(o, "nan_others", json_integer(r->nans.others));
        err |= jset(o, "first_bad", json_integer(r->first_bad >= 0 ? r->first_bad : -1));
        if (r->first_bad >= 0) {
            json_t *idx = json_array();
            for (int d = 0; idx && d < bad_ndim(r); d++)
                err |= json_array_append_new(idx, json_integer(r->bad_index[d]));
            err |= jset(o, "bad_index", idx);
            err |= jset(o, "bad_got", jsonv_num(r->bad_got));
            err |= jset(o, "bad_expected", jsonv_num(r->bad_expected));
        }
    }
    err |= jset(o, "seconds", jsonv_num(sane_seconds(r->seconds)));
    err |= jset(o, "rerun", jstr(FIELD(r->rerun)));
    err |= jset(o, "description", jstr(FIELD(r->description)));
    err |= jset(o, "dtype", jstr(FIELD(r->dtype)));
    if (r->elements > 0)
        err |= jset(o, "elements", json_integer(r->elements));
    if (r->has_expect) {
        json_t *x = json_object();
        err |= !x;
        if (x) {
            err |= jset(x, "as_expected", json_boolean(hx_status_matches(r)));
            if (r->expect_entry) {
                err |= jset(x, "status", json_string(status_name(r->expect_status)));
                err |= jset(x, "case", jstr(FIELD(r->expect_pattern)));
                err |= jset(x, "clause", json_integer(r->expect_clause));
                err |= jset(x, "reason", jstr(FIELD(r->expect_reason)));
                err |= jset(x, "upstream", jstr(FIELD(r->expect_upstream)));
                if (r->expect_varies[0])
                    err |= jset(x, "varies", jstr(FIELD(r->expect_varies)));
            }
        }
        err |= jset(o, "expected", x);
    }
    if (err) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *json_run(const hr_run *run)
{
    counts c = count_run(run);
    json_t *root = json_object(), *backend = json_object(), *results = json_array(),
           *summary = json_object();
    int err = !root || !backend || !results || !summary;
    if (err) {
        json_decref(root);
        json_decref(backend);
        json_decref(results);
        json_decref(summary);
        return NULL;
    }
    err |= jset(root, "attnconf_results", json_integer(1));
    err |= jset(root, "complete", json_boolean(!run->partial));
    err |= jset(backend, "name", jstr(FIELD(run->backend_name)));
    err |= jset(backend, "version", jstr(FIELD(run->backend_version)));
    err |= jset(backend, "path", jstr(FIELD(run->backend_path)));
    err |= jset(root, "backend", backend);
    err |= jset(root, "cases_dir", jstr(FIELD(run->cases_dir)));
    err |= jset(root, "filter", jstr(FIELD(run->filter)));
    err |= jset(root, "backend_options", jstr(FIELD(run->backend_options)));
    if (run->shard_total) {
        json_t *sh = json_object();
        err |= !sh;
        if (sh) {
            err |= jset(sh, "index", json_integer((json_int_t)run->shard_index));
            err |= jset(sh, "total", json_integer((json_int_t)run->shard_total));
            err |= jset(sh, "selected", json_integer((json_int_t)run->shard_selected));
            err |= jset(sh, "selection", jstr(FIELD(run->shard_selection)));
        }
        err |= jset(root, "shard", sh);
    }
    if (run->expect_file[0]) {
        json_t *x = json_object();
        err |= !x;
        if (x) {
            err |= jset(x, "file", jstr(FIELD(run->expect_file)));
            err |= jset(x, "version", jstr(FIELD(run->expect_version)));
            err |= jset(x, "unexpected", json_integer((json_int_t)run->unexpected));
            err |= jset(x, "stale", json_integer((json_int_t)run->stale));
        }
        err |= jset(root, "expectations", x);
    }
    for (size_t i = 0; i < run->count && !err; i++) {
        json_t *r = json_result(&run->results[i]);
        err |= !r || json_array_append_new(results, r) != 0;
    }
    err |= jset(root, "results", results);
    for (int s = 0; s < HR_STATUS_COUNT; s++)
        err |= jset(summary, status_name((hr_status)s), json_integer((json_int_t)c.by_status[s]));
    err |= jset(summary, "total", json_integer((json_int_t)run->count));
    err |= jset(root, "summary", summary);
    if (err) {
        json_decref(root);
        return NULL;
    }
    return root;
}

static int write_json(const hr_run *run, FILE *f)
{
    json_t *root = json_run(run);
    if (!root)
        return -1;
    int rc = json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(root);
    if (rc != 0)
        return -1;
    fputc('\n', f);
    return 0;
}

int hr_write(const hr_run *run, hr_format fmt, FILE *f)
{
    if (!run || !f || (run->count > 0 && !run->results))
        return -1;
    switch (fmt) {
    case HR_FMT_TEXT: write_text(run, f); break;
    case HR_FMT_TAP: write_tap(run, f); break;
    case HR_FMT_JUNIT: write_junit(run, f); break;
    case HR_FMT_JSON:
        if (write_json(run, f) != 0)
            return -1;
        break;
    default: return -1;
    }
    /* fprintf/fputs failures stick in the stream's error flag; check once at the end. */
    if (fflush(f) != 0 || ferror(f))
        return -1;
    return 0;
}
