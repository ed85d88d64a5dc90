/* test_output.c — hr_write (text, TAP, JUnit, JSON) and `attnconf report` on in-memory runs.
 *
 * Each test builds a run holding every status, including a NaN value and text that needs XML
 * and Markdown escaping, writes it to a memory stream and checks the content, not just "it did
 * not crash".  The report tests go through real files in a private temp dir.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream, mkdtemp */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "report/cmd.h"
#include "results/output.h"
#include "results/partial.h"
#include "results/result.h"

/* ---- fixtures ------------------------------------------------------------------------------ */

#define NASTY_MSG "values differ: <a & b> \"q\" 'x'\x01 end"

static hr_result mk(const char *id, const char *family, hr_status s, const char *msg)
{
    hr_result r;
    memset(&r, 0, sizeof r);
    snprintf(r.id, sizeof r.id, "%s", id);
    snprintf(r.family, sizeof r.family, "%s", family);
    r.status = s;
    r.first_bad = -1;
    snprintf(r.message, sizeof r.message, "%s", msg);
    r.seconds = 0.0015;
    snprintf(r.rerun, sizeof r.rerun, "attnconf run --backend x --filter '%s'", id);
    return r;
}

/* Set r's rule ids from a NULL-terminated list. */
static void set_rules(hr_result *r, const char *const *rules)
{
    r->nrules = 0;
    for (; *rules; rules++)
        snprintf(r->rules[r->nrules++], sizeof r->rules[0], "%s", *rules);
}

static hr_result g_results[6];

/* One result of each status, in enum order (PASS .. ERROR). */
static hr_run every_status_run(const char *backend)
{
    g_results[0] = mk("sdpa.basic.f32", "sdpa", HR_PASS, "");
    g_results[0].has_stats = 1;
    g_results[0].max_abs_err = 1e-7;
    g_results[1] = mk("sdpa.reject.mixed_dtype", "sdpa", HR_EXPECTED_ERROR, "rejected: edtype");
    g_results[2] = mk("sdpa.f16.basic", "sdpa", HR_NOT_SUPPORTED, "requires capability f16");
    g_results[3] = mk("sdpa.causal.offset", "sdpa", HR_FAIL, NASTY_MSG);
    hr_result *f = &g_results[3];
    f->has_stats = 1;
    f->max_abs_err = 0.5;
    f->max_rel_err = 0.25;
    f->first_bad = 27;
    f->bad_ndim = 4;
    f->bad_index[0] = 0, f->bad_index[1] = 1, f->bad_index[2] = 2, f->bad_index[3] = 3;
    f->bad_got = NAN;
    f->bad_expected = 1.25;
    g_results[4] = mk("mask.window.basic", "mask", HR_INCORRECT_DTYPE, "out dtype f32, q f16");
    g_results[5] = mk("mask.lengths.basic", "mask", HR_ERROR, "backend error: boom");

    hr_run run;
    memset(&run, 0, sizeof run);
    snprintf(run.backend_name, sizeof run.backend_name, "%s", backend);
    snprintf(run.backend_version, sizeof run.backend_version, "0.1.0");
    snprintf(run.backend_path, sizeof run.backend_path, "/somewhere/%s.so", backend);
    snprintf(run.cases_dir, sizeof run.cases_dir, "cases");
    run.results = g_results;
    run.count = 6;
    return run;
}

/* The run written in `fmt`, as a malloc'd NUL-terminated string. */
static char *write_mem(const hr_run *run, hr_format fmt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    cr_assert(m != NULL, "open_memstream failed");
    cr_assert_eq(hr_write(run, fmt, m), 0, "hr_write failed");
    cr_assert_eq(fclose(m), 0, "fclose of the memory stream failed");
    return buf;
}

static size_t count_sub(const char *hay, const char *needle)
{
    size_t n = 0, l = strlen(needle);
    for (const char *p = strstr(hay, needle); p; p = strstr(p + l, needle))
        n++;
    return n;
}

static const char *last_line(const char *s)
{
    size_t n = strlen(s);
    cr_assert(n > 0 && s[n - 1] == '\n', "output must end with a newline");
    const char *p = s + n - 1;
    while (p > s && p[-1] != '\n')
        p--;
    return p;
}

#define assert_has(hay, needle)                                                                    \
    cr_assert(strstr((hay), (needle)) != NULL, "missing %s in:\n%s", (needle), (hay))
#define assert_lacks(hay, needle)                                                                  \
    cr_assert(strstr((hay), (needle)) == NULL, "unexpected %s in:\n%s", (needle), (hay))

/* ---- text ---------------------------------------------------------------------------------- */

/* Every failure says what the case checks and which SPEC.md clauses it cites, in text, TAP and
 * JUnit alike (JSON carries "description" and "rules" as fields). */
Test(output_all, failure_names_purpose_and_clauses)
{
    g_results[0] = mk("sdpa.causal.offset", "sdpa", HR_FAIL, "3 of 8 elements out of tolerance");
    snprintf(g_results[0].description, sizeof g_results[0].description,
             "Causal mask with a cache offset of 4: bottom-right alignment");
    snprintf(g_results[0].rules[0], HR_RULE_MAX, "clause3.bottom_right");
    snprintf(g_results[0].rules[1], HR_RULE_MAX, "clause19.lengths");
    snprintf(g_results[0].rules[2], HR_RULE_MAX, "clause3.explicit_offset");
    snprintf(g_results[0].rules[3], HR_RULE_MAX, "sdpa.definition");
    g_results[0].nrules = 4;
    g_results[1] = mk("sdpa.basic", "sdpa", HR_FAIL, "wrong");
    snprintf(g_results[1].rules[0], HR_RULE_MAX, "sdpa.definition");
    g_results[1].nrules = 1;
    hr_run run;
    memset(&run, 0, sizeof run);
    snprintf(run.backend_name, sizeof run.backend_name, "x");
    run.results = g_results;
    run.count = 2;
    const char *spec = "SPEC.md clauses 3, 19 (clause3.bottom_right, clause19.lengths, "
                       "clause3.explicit_offset, sdpa.definition)";
    char want[512];
    char *t = write_mem(&run, HR_FMT_TEXT);
    snprintf(want, sizeof want,
             "    3 of 8 elements out of tolerance\n"
             "    checks: Causal mask with a cache offset of 4: bottom-right alignment\n"
             "    spec: %s\n",
             spec);
    assert_has(t, want);
    /* No clause cited: the rule ids alone, never an empty clause list. */
    assert_has(t, "    wrong\n    spec: rules (sdpa.definition)\n");
    char *tap = write_mem(&run, HR_FMT_TAP);
    assert_has(tap, "  checks: \"Causal mask with a cache offset of 4: bottom-right alignment\"\n");
    snprintf(want, sizeof want, "  spec: \"%s\"\n", spec);
    assert_has(tap, want);
    char *x = write_mem(&run, HR_FMT_JUNIT);
    assert_has(x, "&#10;checks: Causal mask with a cache offset of 4: bottom-right alignment&#10;");
    snprintf(want, sizeof want, "&#10;spec: %s&#10;rerun: ", spec);
    assert_has(x, want);
    free(t);
    free(tap);
    free(x);
}

Test(output_text, summary_and_details)
{
    hr_run run = every_status_run("reference");
    char *t = write_mem(&run, HR_FMT_TEXT);
    cr_assert_str_eq(last_line(t), "2 passed, 3 failed, 1 not supported\n", "summary line: %s", t);
    assert_has(t, "\nPASS 1, EXPECTED_ERROR 1, NOT_SUPPORTED 1, UNEXPRESSIBLE 0, FAIL 1, "
                  "INCORRECT_DTYPE 1, ERROR 1, CRASH 0, TIMEOUT 0, CASE_ERROR 0\n2 passed");
    /* Status column padded to the longest name (INCORRECT_DTYPE) plus two spaces. */
    assert_has(t, "\nPASS             sdpa.basic.f32\n");
    assert_has(t, "\nINCORRECT_DTYPE  mask.window.basic\n");
    assert_has(t, "\nNOT_SUPPORTED    sdpa.f16.basic\n"
                  "    not supported: requires capability f16\n");
    /* The control character is flattened so the detail block stays one line per item. */
    assert_has(t, "\nFAIL             sdpa.causal.offset\n"
                  "    values differ: <a & b> \"q\" 'x'  end\n"
                  "    first bad index [0,1,2,3] (flat 27): got nan, expected 1.25; "
                  "max abs err 0.5, max rel err 0.25\n"
                  "    rerun: attnconf run --backend x --filter 'sdpa.causal.offset'\n");
    assert_has(t, "\nERROR            mask.lengths.basic\n    backend error: boom\n");
    /* Passing cases carry no detail block. */
    assert_lacks(t, "'sdpa.basic.f32'");
    free(t);
}

Test(output_text, empty_run)
{
    hr_run run;
    memset(&run, 0, sizeof run);
    char *t = write_mem(&run, HR_FMT_TEXT);
    cr_assert_str_eq(last_line(t), "0 passed, 0 failed, 0 not supported\n", "got: %s", t);
    free(t);
}

/* UNEXPRESSIBLE is counted apart from passed, failed and not supported in every format, and
 * under an expected-results file it conforms only where an entry records it. */
static hr_run unexpressible_run(void)
{
    g_results[0] = mk("sdpa.basic.f32", "sdpa", HR_PASS, "");
    g_results[1] = mk("sdpa.params.invalid.lengths_negative.f32", "sdpa.params", HR_UNEXPRESSIBLE,
                      "the backend cannot write this invalid input in its API (einexpressible, "
                      "where einval is required): lengths [5, -1] as a 0/1 mask");
    g_results[2] = mk("sdpa.f16.basic", "sdpa", HR_NOT_SUPPORTED, "requires capability f16");
    g_results[3] = mk("sdpa.causal.offset", "sdpa", HR_FAIL, "wrong");
    hr_run run;
    memset(&run, 0, sizeof run);
    snprintf(run.backend_name, sizeof run.backend_name, "lib");
    run.results = g_results;
    run.count = 4;
    return run;
}

Test(output_all, unexpressible_counted_apart)
{
    hr_run run = unexpressible_run();
    char *t = write_mem(&run, HR_FMT_TEXT);
    cr_assert_str_eq(last_line(t), "1 passed, 1 failed, 1 not supported, 1 unexpressible\n",
                     "summary line: %s", t);
    assert_has(t, "\nPASS 1, EXPECTED_ERROR 0, NOT_SUPPORTED 1, UNEXPRESSIBLE 1, FAIL 1, ");
    assert_has(t, "\nUNEXPRESSIBLE    sdpa.params.invalid.lengths_negative.f32\n"
                  "    unexpressible: the backend cannot write this invalid input");
    char *tap = write_mem(&run, HR_FMT_TAP);
    assert_has(tap, "\nok 2 - sdpa.params.invalid.lengths_negative.f32 # SKIP unexpressible: "
                    "the backend cannot write");
    char *x = write_mem(&run, HR_FMT_JUNIT);
    assert_has(x, "tests=\"4\" failures=\"1\" errors=\"0\" skipped=\"2\" ");
    assert_has(x, "<skipped message=\"unexpressible: the backend cannot write");
    char *j = write_mem(&run, HR_FMT_JSON);
    json_t *root = json_loads(j, JSON_REJECT_DUPLICATES, NULL);
    cr_assert(root != NULL, "invalid JSON:\n%s", j);
    json_t *sum = json_object_get(root, "summary");
    cr_assert_eq(json_integer_value(json_object_get(sum, "UNEXPRESSIBLE")), 1, "summary:\n%s", j);
    cr_assert_eq(json_integer_value(json_object_get(sum, "NOT_SUPPORTED")), 1);
    cr_assert_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(root, "results"), 1), "status")),
                     "UNEXPRESSIBLE");
    json_decref(root);
    free(t);
    free(tap);
    free(x);
    free(j);
}

Test(output_all, unexpressible_under_expect_needs_its_entry)
{
    hr_run run = unexpressible_run();
    snprintf(run.expect_file, sizeof run.expect_file, "lib.yaml");
    for (size_t i = 0; i < run.count; i++)
        g_results[i].has_expect = 1;
    g_results[2].expect_entry = 1; /* recorded: NOT_SUPPORTED and a divergence (FAIL) */
    g_results[2].expect_status = HR_NOT_SUPPORTED;
    g_results[3].expect_entry = 1;
    g_results[3].expect_status = HR_FAIL;
    /* No entry for the UNEXPRESSIBLE case: not as expected. */
    char *t = write_mem(&run, HR_FMT_TEXT);
    assert_has(t, "\nUNEXPRESSIBLE    sdpa.params.invalid.lengths_negative.f32\n"
                  "    UNEXPECTED: expected PASS or EXPECTED_ERROR (an UNEXPRESSIBLE result "
                  "conforms only where the file lists the case with that status and a reason)\n");
    char *tap = write_mem(&run, HR_FMT_TAP);
    assert_has(tap, "\nnot ok 2 - sdpa.params.invalid.lengths_negative.f32 (UNEXPECTED: recorded "
                    "PASS or EXPECTED_ERROR, observed UNEXPRESSIBLE)\n");
    char *x = write_mem(&run, HR_FMT_JUNIT);
    assert_has(x, "failures=\"1\" errors=\"0\" skipped=\"2\" ");
    free(t);
    free(tap);
    free(x);
    /* An entry that records it, with its reason: as expected, skipped like NOT_SUPPORTED. */
    g_results[1].expect_entry = 1;
    g_results[1].expect_status = HR_UNEXPRESSIBLE;
    g_results[1].expect_clause = 19;
    snprintf(g_results[1].expect_reason, sizeof g_results[1].expect_reason,
             "attention_mask is 0/1: no mask says -1");
    t = write_mem(&run, HR_FMT_TEXT);
    assert_has(t, "\nUNEXPRESSIBLE    sdpa.params.invalid.lengths_negative.f32\n"
                  "    recorded unexpressible, clause 19: attention_mask is 0/1: no mask says -1\n"
                  "    unexpressible: ");
    assert_lacks(t, "UNEXPECTED");
    tap = write_mem(&run, HR_FMT_TAP);
    assert_has(tap, "\nok 2 - sdpa.params.invalid.lengths_negative.f32 # SKIP unexpressible: ");
    x = write_mem(&run, HR_FMT_JUNIT);
    assert_has(x, "failures=\"0\" errors=\"0\" skipped=\"3\" ");
    free(t);
    free(tap);
    free(x);
}

/* ---- TAP ----------------------------------------------------------------------------------- */

Test(output_tap, plan_lines_and_diagnostics)
{
    hr_run run = every_status_run("reference");
    char *t = write_mem(&run, HR_FMT_TAP);
    cr_assert(strncmp(t, "TAP version 13\n1..6\n", 20) == 0, "header: %s", t);
    assert_has(t, "\nok 1 - sdpa.basic.f32\n");
    assert_has(t, "\nok 2 - sdpa.reject.mixed_dtype\n");
    assert_has(t, "\nok 3 - sdpa.f16.basic # SKIP not supported: requires capability f16\n");
    assert_has(t, "\nnot ok 4 - sdpa.causal.offset\n  ---\n  status: FAIL\n");
    assert_has(t, "\nnot ok 5 - mask.window.basic\n");
    assert_has(t, "\nnot ok 6 - mask.lengths.basic\n");
    cr_assert_eq(count_sub(t, "\nnot ok "), 3, "three failures");
    cr_assert_eq(count_sub(t, "\nok "), 3, "three passes (one skipped)");
    /* YAML diagnostics: escaped message, stats, the NaN as YAML's .nan, the rerun command. */
    assert_has(t, "  message: \"values differ: <a & b> \\\"q\\\" 'x'\\x01 end\"\n");
    assert_has(t, "  max_abs_err: 0.5\n  max_rel_err: 0.25\n  first_bad: [0,1,2,3]\n"
                  "  first_bad_flat: 27\n  got: .nan\n  expected: 1.25\n");
    assert_has(t, "  rerun: \"attnconf run --backend x --filter 'sdpa.causal.offset'\"\n  ...\n");
    cr_assert_eq(count_sub(t, "\n  ---\n"), count_sub(t, "\n  ...\n"), "balanced YAML blocks");
    free(t);
}

/* ---- JUnit --------------------------------------------------------------------------------- */

Test(output_junit, counts_and_escaping)
{
    hr_run run = every_status_run("reference");
    char *x = write_mem(&run, HR_FMT_JUNIT);
    cr_assert(strncmp(x, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites", 50) == 0,
              "prolog: %s", x);
    assert_has(x, "<testsuite name=\"attnconf.reference\" tests=\"6\" failures=\"2\" "
                  "errors=\"1\" skipped=\"1\" ");
    cr_assert_eq(count_sub(x, "<testcase "), 6, "six testcases");
    cr_assert_eq(count_sub(x, "<failure "), 2, "FAIL and INCORRECT_DTYPE are failures");
    cr_assert_eq(count_sub(x, "<error "), 1, "ERROR is an error");
    cr_assert_eq(count_sub(x, "<skipped "), 1, "NOT_SUPPORTED is skipped");
    assert_has(x, "<testcase classname=\"sdpa\" name=\"sdpa.causal.offset\" time=\"0.001500\">");
    assert_has(x, "<skipped message=\"not supported: requires capability f16\"/>");
    assert_has(x, "type=\"INCORRECT_DTYPE\"");
    /* Every special character escaped; the control character (not allowed in XML 1.0) gone. */
    assert_has(x, "message=\"values differ: &lt;a &amp; b&gt; &quot;q&quot; &apos;x&apos;? "
                  "end\"");
    assert_lacks(x, "<a &");
    assert_lacks(x, "\x01");
    assert_has(x, "first bad index [0,1,2,3] (flat 27): got nan, expected 1.25");
    assert_has(x, "--filter &apos;sdpa.causal.offset&apos;");
    cr_assert_eq(count_sub(x, "<testsuite "), count_sub(x, "</testsuite>"), "balanced");
    assert_has(x, "</testsuites>\n");
    free(x);
}

/* ---- JSON ---------------------------------------------------------------------------------- */

Test(output_json, loads_back)
{
    hr_run run = every_status_run("reference");
    set_rules(&g_results[3], (const char *const[]){"clause3.bottom_right", "clause13.tolerance",
                                                   "sdpa.definition", NULL});
    char *j = write_mem(&run, HR_FMT_JSON);
    json_error_t err;
    json_t *root = json_loads(j, JSON_REJECT_DUPLICATES, &err);
    cr_assert(root != NULL, "invalid JSON (%s) in:\n%s", err.text, j);
    cr_assert_eq(json_integer_value(json_object_get(root, "attnconf_results")), 1, "version");
    json_t *backend = json_object_get(root, "backend");
    cr_assert_str_eq(json_string_value(json_object_get(backend, "name")), "reference", "name");
    cr_assert_str_eq(json_string_value(json_object_get(backend, "path")), "/somewhere/reference.so",
                     "path");
    json_t *results = json_object_get(root, "results");
    cr_assert_eq(json_array_size(results), 6, "six results");
    static const char *const want[] = {"PASS", "EXPECTED_ERROR",  "NOT_SUPPORTED",
                                       "FAIL", "INCORRECT_DTYPE", "ERROR"};
    for (size_t i = 0; i < 6; i++) {
        json_t *r = json_array_get(results, i);
        cr_assert_str_eq(json_string_value(json_object_get(r, "status")), want[i], "status %zu", i);
        cr_assert_str_eq(json_string_value(json_object_get(r, "id")), g_results[i].id, "id");
    }
    json_t *fail = json_array_get(results, 3);
    cr_assert_str_eq(json_string_value(json_object_get(fail, "bad_got")), "nan", "NaN as \"nan\"");
    cr_assert_eq(json_real_value(json_object_get(fail, "bad_expected")), 1.25, "expected value");
    cr_assert_eq(json_integer_value(json_object_get(fail, "first_bad")), 27, "first_bad");
    json_t *idx = json_object_get(fail, "bad_index");
    cr_assert_eq(json_array_size(idx), 4, "bad_index rank");
    cr_assert_eq(json_integer_value(json_array_get(idx, 3)), 3, "bad_index[3]");
    cr_assert_str_eq(json_string_value(json_object_get(fail, "message")), NASTY_MSG, "message");
    /* Rule ids in case order; every result has the array, empty when there are none. */
    json_t *rules = json_object_get(fail, "rules");
    cr_assert(json_is_array(rules) && json_array_size(rules) == 3, "rules:\n%s", j);
    cr_assert_str_eq(json_string_value(json_array_get(rules, 0)), "clause3.bottom_right", "rule 0");
    cr_assert_str_eq(json_string_value(json_array_get(rules, 1)), "clause13.tolerance", "rule 1");
    cr_assert_str_eq(json_string_value(json_array_get(rules, 2)), "sdpa.definition", "rule 2");
    for (size_t i = 0; i < 6; i++) {
        json_t *ri = json_object_get(json_array_get(results, i), "rules");
        cr_assert(json_is_array(ri), "result %zu has no rules array", i);
        if (i != 3)
            cr_assert_eq(json_array_size(ri), 0, "result %zu: no rules", i);
    }
    /* Written right after "family" (key order is part of the schema). */
    assert_has(j, "\"family\": \"sdpa\",\n      \"rules\": [\n        \"clause3.bottom_right\",");
    /* Stats fields only where the comparison ran. */
    json_t *ee = json_array_get(results, 1);
    cr_assert(json_object_get(ee, "max_abs_err") == NULL, "no stats without has_stats");
    json_t *pass = json_array_get(results, 0);
    cr_assert_eq(json_integer_value(json_object_get(pass, "first_bad")), -1, "no bad element");
    cr_assert(json_object_get(pass, "bad_index") == NULL, "no bad_index without a bad element");
    json_t *sum = json_object_get(root, "summary");
    for (size_t i = 0; i < 6; i++)
        cr_assert_eq(json_integer_value(json_object_get(sum, want[i])), 1, "summary %s", want[i]);
    cr_assert_eq(json_integer_value(json_object_get(sum, "total")), 6, "summary total");
    json_decref(root);
    free(j);
}

Test(output_json, non_finite_everywhere_and_deterministic)
{
    hr_run run = every_status_run("reference");
    g_results[3].max_abs_err = INFINITY;
    g_results[3].max_rel_err = -INFINITY;
    g_results[3].bad_expected = -NAN;
    char *a = write_mem(&run, HR_FMT_JSON);
    char *b = write_mem(&run, HR_FMT_JSON);
    cr_assert_str_eq(a, b, "same run, same bytes");
    json_t *root = json_loads(a, 0, NULL);
    cr_assert(root != NULL, "valid JSON with non-finite values:\n%s", a);
    json_t *fail = json_array_get(json_object_get(root, "results"), 3);
    cr_assert_str_eq(json_string_value(json_object_get(fail, "max_abs_err")), "inf", "inf");
    cr_assert_str_eq(json_string_value(json_object_get(fail, "max_rel_err")), "-inf", "-inf");
    cr_assert_str_eq(json_string_value(json_object_get(fail, "bad_expected")), "nan", "-nan");
    json_decref(root);
    free(a);
    free(b);
}

/* ---- robustness ---------------------------------------------------------------------------- */

Test(output_robust, bad_arguments_and_garbage_fields)
{
    hr_run run = every_status_run("reference");
    cr_assert_eq(hr_write(NULL, HR_FMT_TEXT, stdout), -1, "NULL run");
    cr_assert_eq(hr_write(&run, HR_FMT_TEXT, NULL), -1, "NULL stream");
    cr_assert_eq(hr_write(&run, (hr_format)99, stdout), -1, "unknown format");
    hr_run bad = run;
    bad.results = NULL;
    cr_assert_eq(hr_write(&bad, HR_FMT_JSON, stdout), -1, "count without results");
    /* A stream that cannot be written (ENOSPC on every write) is reported, not ignored. */
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        for (int fmt = HR_FMT_TEXT; fmt <= HR_FMT_JSON; fmt++)
            cr_assert_eq(hr_write(&run, (hr_format)fmt, full), -1, "write error, format %d", fmt);
        fclose(full);
    }

    /* An out-of-range status, an unterminated id, invalid UTF-8 and a silly rank. */
    g_results[5].status = (hr_status)42;
    memset(g_results[5].id, 'a', sizeof g_results[5].id);
    snprintf(g_results[5].message, sizeof g_results[5].message, "bad \xff\xfe utf8 \xc3\x28");
    g_results[3].bad_ndim = 99;
    /* Rule counts out of range and an unterminated rule id: clamped, bounded. */
    g_results[2].nrules = -3;
    g_results[4].nrules = 1000;
    g_results[5].nrules = 1;
    memset(g_results[5].rules[0], 'r', sizeof g_results[5].rules[0]);
    for (int fmt = HR_FMT_TEXT; fmt <= HR_FMT_JSON; fmt++) {
        char *s = write_mem(&run, (hr_format)fmt);
        cr_assert(strlen(s) > 0, "format %d wrote something", fmt);
        free(s);
    }
    char *t = write_mem(&run, HR_FMT_TEXT);
    cr_assert_str_eq(last_line(t), "2 passed, 3 failed, 1 not supported\n",
                     "a bad status counts as failed");
    assert_has(t, "first bad index [] (flat 27)");
    free(t);
    char *j = write_mem(&run, HR_FMT_JSON);
    json_t *root = json_loads(j, 0, NULL);
    cr_assert(root != NULL, "invalid UTF-8 must not break the JSON:\n%s", j);
    json_t *r5 = json_array_get(json_object_get(root, "results"), 5);
    cr_assert_eq(strlen(json_string_value(json_object_get(r5, "id"))), ACASE_ID_MAX, "bounded id");
    cr_assert_str_eq(json_string_value(json_object_get(r5, "message")), "bad ?? utf8 ?(", "UTF-8");
    cr_assert_str_eq(json_string_value(json_object_get(r5, "status")), "ERROR", "status");
    json_t *results = json_object_get(root, "results");
    cr_assert_eq(json_array_size(json_object_get(json_array_get(results, 2), "rules")), 0,
                 "negative nrules: no rules");
    cr_assert_eq(json_array_size(json_object_get(json_array_get(results, 4), "rules")),
                 ACASE_MAX_RULES, "nrules clamped to ACASE_MAX_RULES");
    json_t *r5rules = json_object_get(r5, "rules");
    cr_assert_eq(json_array_size(r5rules), 1, "one rule");
    cr_assert_eq(strlen(json_string_value(json_array_get(r5rules, 0))), HR_RULE_MAX,
                 "bounded rule id");
    json_decref(root);
    free(j);
}

/* ---- report -------------------------------------------------------------------------------- */

typedef struct tmpdir {
    char path[64];
    char files[16][128];
    int nfiles;
} tmpdir;

static void tmp_open(tmpdir *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->path, sizeof d->path, "/tmp/attnconf_report_XXXXXX");
    cr_assert(mkdtemp(d->path) != NULL, "mkdtemp failed");
}

static const char *tmp_file(tmpdir *d, const char *name)
{
    cr_assert(d->nfiles < 16, "too many temp files");
    char *p = d->files[d->nfiles++];
    char buf[128]; /* a separate buffer: GCC's -Wrestrict cannot tell p from d->path */
    snprintf(buf, sizeof buf, "%s/%s", d->path, name);
    memcpy(p, buf, sizeof buf);
    return p;
}

static void tmp_close(tmpdir *d)
{
    for (int i = 0; i < d->nfiles; i++)
        remove(d->files[i]);
    rmdir(d->path);
}

static void write_text_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert(f != NULL, "cannot write %s", path);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0, "close %s", path);
}

static void write_run_file(const char *path, const hr_run *run)
{
    FILE *f = fopen(path, "w");
    cr_assert(f != NULL, "cannot write %s", path);
    cr_assert_eq(hr_write(run, HR_FMT_JSON, f), 0, "hr_write %s", path);
    cr_assert_eq(fclose(f), 0, "close %s", path);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f != NULL, "cannot read %s", path);
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    int c;
    while ((c = fgetc(f)) != EOF)
        fputc(c, m);
    fclose(f);
    fclose(m);
    return buf;
}

static int report(int argc, const char **argv)
{
    return cmd_report("attnconf", argc, (char **)argv);
}

/* Three result files: reference (every status), cpu_fast (passes sdpa, no mask support) and
 * mutant_topleft (caught by two sdpa cases). */
static void write_fixture_files(tmpdir *d, const char **ref, const char **cpu, const char **mut)
{
    hr_run run = every_status_run("reference");
    *ref = tmp_file(d, "reference.json");
    write_run_file(*ref, &run);

    run = every_status_run("cpu_fast");
    snprintf(run.backend_version, sizeof run.backend_version, "1.2");
    g_results[2] = g_results[4];
    g_results[2].status = HR_NOT_SUPPORTED;
    snprintf(g_results[2].message, sizeof g_results[2].message, "requires capability window");
    run.count = 3; /* PASS, EXPECTED_ERROR, NOT_SUPPORTED (mask) */
    *cpu = tmp_file(d, "cpu_fast.json");
    write_run_file(*cpu, &run);

    run = every_status_run("mutant_topleft");
    g_results[0].status = HR_FAIL;
    snprintf(g_results[0].message, sizeof g_results[0].message, "values differ");
    g_results[1] = g_results[3];
    snprintf(g_results[1].id, sizeof g_results[1].id, "sdpa.causal.decode");
    /* The dtypes reach the JSON and the mutant table's "Catching dtypes" (sorted, distinct). */
    snprintf(g_results[0].dtype, sizeof g_results[0].dtype, "f32");
    snprintf(g_results[1].dtype, sizeof g_results[1].dtype, "bf16");
    /* The smallest catching case is the one of fewest elements, not the first id. */
    g_results[0].elements = 4096;
    g_results[1].elements = 48;
    run.count = 2; /* two sdpa failures: the mutant is caught */
    *mut = tmp_file(d, "mutant.json");
    write_run_file(*mut, &run);
}

Test(report, matrix_mutants_failures_deterministic)
{
    tmpdir d;
    tmp_open(&d);
    const char *ref, *cpu, *mut;
    write_fixture_files(&d, &ref, &cpu, &mut);
    const char *out1 = tmp_file(&d, "r1.md"), *out2 = tmp_file(&d, "r2.md");

    const char *argv1[] = {"report", "--out", out1, "--command", "attnconf report results/*.json",
                           ref,      mut,     cpu};
    cr_assert_eq(report(8, argv1), 0, "report failed");
    /* Same inputs in another order: the report must not change by a byte. */
    const char *argv2[] = {
        "report", "--command=attnconf report results/*.json", "--out", out2, cpu, mut, ref};
    cr_assert_eq(report(7, argv2), 0, "second report failed");
    char *a = slurp(out1), *b = slurp(out2);
    cr_assert_str_eq(a, b, "report is not deterministic");

    cr_assert(strncmp(a, "# attnconf conformance report\n\n", 31) == 0, "title:\n%s", a);
    assert_has(a, "```sh\nattnconf report results/*.json\n```\n");
    /* Matrix: backends sorted, families sorted, all cell kinds. */
    /* Matrix: families as rows, backends as columns (sorted), all cell kinds, a total row. */
    assert_has(a, "\n| Family | cpu_fast | reference |\n| --- | --- | --- |\n"
                  "| mask | n/s | **2 fail** / 2 |\n"
                  "| sdpa | 2/2 | **1 fail** / 3 + 1 n/s |\n"
                  "| **all** | 2/2 + 1 n/s | **3 fail** / 5 + 1 n/s |\n");
    assert_has(a, "\n- cpu_fast: 1.2\n- reference: 0.1.0\n");
    /* Mutants in their own table: one row each, with the families that caught it. */
    assert_has(a, "\n## Mutants (test-only backends with one deliberate bug; a caught mutant is "
                  "the expected result)\n\n| Mutant | Caught | Catching cases | Catching dtypes | "
                  "Smallest catching case | Catching families (cases) |\n");
    assert_has(a,
               "\n| mutant_topleft | yes | 2 | 2: bf16, f32 | `sdpa.causal.decode` | sdpa 2 |\n");
    /* Per-status totals. */
    assert_has(a, "| reference | 1 | 1 | 1 | 0 | 1 | 1 | 1 | 0 | 0 | 0 | 6 |\n");
    assert_has(a, "| mutant_topleft | 0 | 0 | 0 | 0 | 2 | 0 | 0 | 0 | 0 | 0 | 2 |\n");
    /* Failures of real backends, escaped, with stats and rerun; the mutant only as counts. */
    assert_has(a, "\n### reference (3)\n\n- `mask.lengths.basic` \xE2\x80\x94 **ERROR**: "
                  "backend error: boom\n");
    assert_has(a, "\n- `sdpa.causal.offset` \xE2\x80\x94 **FAIL**: values differ: "
                  "\\<a \\& b\\> \"q\" 'x'  end\n"
                  "  - first bad index [0,1,2,3] (flat 27): got nan, expected 1.25; "
                  "max abs err 0.5, max rel err 0.25\n"
                  "  - rerun: `attnconf run --backend x --filter 'sdpa.causal.offset'`\n");
    assert_lacks(a, "- `sdpa.causal.decode`"); /* a mutant's failures are not listed */
    /* These results carry no rule ids: the clause section says so. */
    assert_has(a, "\n## Spec clauses\n\nNo case in the results cites a rule id.\n\n"
                  "## Totals by status\n");
    assert_lacks(a, "### cpu_fast");
    /* Not supported counts of real backends. */
    assert_has(a, "\n## Not supported\n\n| Backend | Reason | Cases |\n| --- | --- | ---: |\n"
                  "| cpu_fast | requires capability window | 1 |\n"
                  "| reference | requires capability f16 | 1 |\n");
    /* Nothing machine- or time-dependent. */
    assert_lacks(a, "/somewhere");
    assert_lacks(a, "0.0015");
    assert_lacks(a, d.path);
    free(a);
    free(b);
    tmp_close(&d);
}

Test(report, paths_under_cwd_become_relative)
{
    tmpdir d;
    tmp_open(&d);
    /* Each Criterion test is its own process: changing directory here affects nobody else. */
    cr_assert_eq(chdir(d.path), 0, "chdir %s", d.path);
    hr_run run = every_status_run("reference");
    snprintf(g_results[3].rerun, sizeof g_results[3].rerun,
             "%s/build/attnconf run --cases %s/cases --filter x --other %s_sibling/y", d.path,
             d.path, d.path);
    const char *in = tmp_file(&d, "in.json"), *out = tmp_file(&d, "out.md");
    write_run_file(in, &run);
    const char *argv[] = {"report", "--out", out, in};
    cr_assert_eq(report(4, argv), 0, "report failed");
    char *a = slurp(out);
    /* Only whole path components are rewritten: the sibling directory keeps its path. */
    char want[256];
    snprintf(want, sizeof want,
             "rerun: `./build/attnconf run --cases ./cases --filter x --other %s_sibling/y`",
             d.path);
    assert_has(a, want);
    /* Without --command, the command line as typed (here with absolute, rewritten paths). */
    assert_has(a, "```sh\nattnconf report --out ./out.md ./in.json\n```\n");
    free(a);
    tmp_close(&d);
}

Test(report, strict_input_and_usage)
{
    tmpdir d;
    tmp_open(&d);
    hr_run run = every_status_run("reference");
    const char *good = tmp_file(&d, "good.json"), *bad = tmp_file(&d, "bad.json");
    const char *out = tmp_file(&d, "out.md");
    write_run_file(good, &run);

    const char *no_files[] = {"report", "--out", out};
    cr_assert_eq(report(3, no_files), 2, "no result files is a usage error");
    const char *unknown[] = {"report", "--frobnicate", good};
    cr_assert_eq(report(3, unknown), 2, "unknown option");
    const char *dangling[] = {"report", good, "--out"};
    cr_assert_eq(report(3, dangling), 2, "--out without a value");
    const char *help[] = {"report", "--help"};
    cr_assert_eq(report(2, help), 0, "--help");

    const char *argv[] = {"report", "--out", out, bad};
    static const char *const broken[] = {
        "{\"attnconf_results\": 2, \"backend\": {}}", /* wrong version */
        "{\"backend\": {}}",                          /* missing version */
        "[1, 2]",                                     /* not an object */
        "{\"attnconf_results\": 1",                   /* not JSON */
        "{\"attnconf_results\": 1, \"backend\": {\"name\": \"x\", \"version\": \"1\", "
        "\"path\": \"p\"}, \"cases_dir\": \"c\", \"filter\": \"\", \"results\": [{\"id\": "
        "\"a.b.c\", \"family\": \"a\", \"status\": \"MAYBE\", \"message\": \"\", \"seconds\": 0, "
        "\"rerun\": \"\"}], \"summary\": {}}", /* unknown status */
        "{\"attnconf_results\": 1, \"backend\": {\"name\": \"x\", \"version\": \"1\", "
        "\"path\": \"p\"}, \"cases_dir\": \"c\", \"filter\": \"\", \"results\": [], "
        "\"summary\": {\"PASS\": 1, \"EXPECTED_ERROR\": 0, \"NOT_SUPPORTED\": 0, \"FAIL\": 0, "
        "\"INCORRECT_DTYPE\": 0, \"ERROR\": 0, \"total\": 1}}", /* summary does not match */
        "{\"attnconf_results\": 1, \"complete\": false, \"backend\": {\"name\": \"x\", "
        "\"version\": \"1\", \"path\": \"p\"}, \"cases_dir\": \"c\", \"filter\": \"\", "
        "\"results\": [], \"summary\": {\"PASS\": 0, \"EXPECTED_ERROR\": 0, "
        "\"NOT_SUPPORTED\": 0, \"FAIL\": 0, \"INCORRECT_DTYPE\": 0, \"ERROR\": 0, "
        "\"total\": 0}}", /* partial (run still going) */
        "{\"attnconf_results\": 1, \"complete\": 1, \"backend\": {}}", /* complete not bool */
    };
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        write_text_file(bad, broken[i]);
        cr_assert_eq(report(4, argv), 1, "broken input %zu must be rejected", i);
    }
    const char *unwritable[] = {"report", "--out", "/nonexistent/dir/out.md", good};
    /* 2 as for every command (outfile.h): the output file is created before the inputs are read */
    cr_assert_eq(report(4, unwritable), 2, "unwritable --out");
    const char *missing[] = {"report", "--out", out, "/nonexistent/results.json"};
    cr_assert_eq(report(4, missing), 1, "missing file");
    /* The same case twice for one backend (two files of the same run). */
    const char *twice[] = {"report", "--out", out, good, good};
    cr_assert_eq(report(5, twice), 1, "duplicate case ids");
    const char *ok[] = {"report", "--out", out, good};
    cr_assert_eq(report(4, ok), 0, "the good file still works");
    tmp_close(&d);
}

/* ---- report: tables no wider than 12 columns ----------------------------------------------- */

/* Every table row of md has at most 12 cells (13 unescaped pipes): what
 * conformance/tests/check_md_table_width.py checks on REPORT.md, here on the synthetic runs. */
static void assert_tables_fit(const char *md)
{
    for (const char *line = md; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line), pipes = 0;
        for (size_t i = 0; line[0] == '|' && i < len; i++) {
            if (line[i] == '\\')
                i++;
            else if (line[i] == '|')
                pipes++;
        }
        cr_assert(pipes <= 13, "a table row of %zu cells: %.*s", pipes - 1, (int)len, line);
        line = end ? end + 1 : line + len;
    }
}

/* 13 real backends and 12 kernel-path shape classes: the matrix splits into tables of 6 and 7
 * backends and the coverage table into two of 6 classes, each repeating its key column; the
 * third-party totals name every status, as many as the row has cells. */
Test(report, wide_tables_split_with_the_key_column)
{
    tmpdir d;
    tmp_open(&d);
    hr_result r[12];
    const char *argv[3 + 13];
    int argc = 0;
    argv[argc++] = "report";
    argv[argc++] = "--out";
    argv[argc++] = tmp_file(&d, "wide.md");
    for (int b = 0; b < 13; b++) {
        /* Backend bNN fails the case of shape class c(NN mod 12) and passes the others. */
        for (int k = 0; k < 12; k++) {
            char id[64];
            snprintf(id, sizeof id, "sdpa.paths.poison.c%02d.f32", k + 1);
            r[k] = mk(id, "sdpa.paths", k == b % 12 ? HR_FAIL : HR_PASS,
                      k == b % 12 ? "values differ" : "");
        }
        hr_run run;
        memset(&run, 0, sizeof run);
        snprintf(run.backend_name, sizeof run.backend_name, "b%02d", b + 1);
        snprintf(run.backend_version, sizeof run.backend_version, "0.1.0");
        snprintf(run.cases_dir, sizeof run.cases_dir, "cases");
        if (b == 12) {
            snprintf(run.expect_file, sizeof run.expect_file, "conformance/expected/b13.yaml");
            snprintf(run.expect_version, sizeof run.expect_version, "0.1.0");
        }
        run.results = r;
        run.count = 12;
        char name[32];
        snprintf(name, sizeof name, "b%02d.json", b + 1);
        argv[argc] = tmp_file(&d, name);
        write_run_file(argv[argc++], &run);
    }
    cr_assert_eq(report(argc, argv), 0, "report failed");
    char *a = slurp(argv[2]);
#define FAIL1 " **1 fail** / 12 |"
    assert_has(a, "\n## Conformance matrix\n\n"
                  "| Family | b01 | b02 | b03 | b04 | b05 | b06 |\n"
                  "| --- | --- | --- | --- | --- | --- | --- |\n"
                  "| sdpa.paths |" FAIL1 FAIL1 FAIL1 FAIL1 FAIL1 FAIL1 "\n"
                  "| **all** |" FAIL1 FAIL1 FAIL1 FAIL1 FAIL1 FAIL1 "\n\n"
                  "| Family | b07 | b08 | b09 | b10 | b11 | b12 | b13 |\n"
                  "| --- | --- | --- | --- | --- | --- | --- | --- |\n"
                  "| sdpa.paths |" FAIL1 FAIL1 FAIL1 FAIL1 FAIL1 FAIL1 FAIL1 "\n"
                  "| **all** |" FAIL1 FAIL1 FAIL1 FAIL1 FAIL1 FAIL1 FAIL1 "\n\n"
                  "A cell is passed/run cases");
#undef FAIL1
#define PASS1 " 1/1 pass |"
    assert_has(a, "is a column here.\n\n"
                  "| Backend | c01 | c02 | c03 | c04 | c05 | c06 |\n"
                  "| --- | --- | --- | --- | --- | --- | --- |\n"
                  "| b01 | 1 fail / 1 |" PASS1 PASS1 PASS1 PASS1 PASS1 "\n"
                  "| b02 |" PASS1 " 1 fail / 1 |" PASS1 PASS1 PASS1 PASS1 "\n");
    /* The second part: b07 fails c07, the first of its classes; b13 fails c01 of the first. */
    assert_has(a, "| b13 | 1 fail / 1 |" PASS1 PASS1 PASS1 PASS1 PASS1 "\n\n"
                  "| Backend | c07 | c08 | c09 | c10 | c11 | c12 |\n"
                  "| --- | --- | --- | --- | --- | --- | --- |\n"
                  "| b01 |" PASS1 PASS1 PASS1 PASS1 PASS1 PASS1 "\n");
    assert_has(a, "| b07 | 1 fail / 1 |" PASS1 PASS1 PASS1 PASS1 PASS1 "\n");
    assert_has(a, "| b13 |" PASS1 PASS1 PASS1 PASS1 PASS1 PASS1 "\n\n## Third-party");
#undef PASS1
    assert_has(a, "\n### b13 \xE2\x80\x94 0.1.0\n\n");
    assert_has(a,
               "| PASS | EXPECTED_ERROR | NOT_SUPPORTED | UNEXPRESSIBLE | FAIL | INCORRECT_DTYPE "
               "| ERROR | CRASH | TIMEOUT | CASE_ERROR | Total |\n"
               "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
               "| 11 | 0 | 0 | 0 | 1 | 0 | 0 | 0 | 0 | 0 | 12 |\n");
    assert_tables_fit(a);
    free(a);
    tmp_close(&d);
}

/* ---- report: spec clauses ------------------------------------------------------------------ */

#define CASE_ABSENT (-1)
#define NCLAUSE_CASES 5

/* Five cases citing clauses 3, 9 and 13 (and ids of another form, which go under "other"). */
static const struct {
    const char *id, *family;
    const char *rules[6];
} k_clause_cases[NCLAUSE_CASES] = {
    {"mask.causal.offset2_lq3", "mask.causal", {"clause3.bottom_right", NULL}},
    /* Two clause-3 rules on one case: still one case of clause 3 per backend. */
    {"sdpa.causal.lq_gt_lk.f32",
     "sdpa.causal",
     {"clause3.bottom_right", "clause3.explicit_offset", "clause9.fully_masked_zero",
      "clause13.tolerance", NULL}},
    {"sdpa.causal.offset0_topleft.f32",
     "sdpa.causal",
     {"clause3.explicit_offset", "clause13.tolerance", NULL}},
    {"sdpa.bool.fully_masked_row.f32",
     "sdpa.bool",
     {"clause9.fully_masked_zero", "clause13.tolerance", NULL}},
    /* Not of the form clauseN.<name> with N in 1..13: "other". */
    {"sdpa.nomask.basic.f32",
     "sdpa.nomask",
     {"clause13.tolerance", "sdpa.definition", "clause24.beyond", "clause03.zero", "clause9",
      NULL}},
};

/* A run of `backend` over k_clause_cases with the given statuses (CASE_ABSENT: not in it). */
static hr_run clause_run(const char *backend, const int status[NCLAUSE_CASES])
{
    hr_run run;
    memset(&run, 0, sizeof run);
    snprintf(run.backend_name, sizeof run.backend_name, "%s", backend);
    snprintf(run.backend_version, sizeof run.backend_version, "0.1.0");
    snprintf(run.backend_path, sizeof run.backend_path, "/somewhere/%s.so", backend);
    snprintf(run.cases_dir, sizeof run.cases_dir, "cases");
    run.results = g_results;
    for (size_t i = 0; i < NCLAUSE_CASES; i++) {
        if (status[i] == CASE_ABSENT)
            continue;
        hr_status st = (hr_status)status[i];
        hr_result *r = &g_results[run.count++];
        *r = mk(k_clause_cases[i].id, k_clause_cases[i].family, st,
                st == HR_PASS            ? ""
                : st == HR_NOT_SUPPORTED ? "requires capability f16"
                                         : "bad");
        set_rules(r, k_clause_cases[i].rules);
    }
    return run;
}

/* Write the runs of the clause fixture: reference passes everything; mutant_topleft fails the
 * three causal cases (clauses 3, 9, 13); mutant_upcast has an INCORRECT_DTYPE on the fully
 * masked row case (clauses 9, 13) and does not support the "other" one; cpu_fast (written only
 * when `cpu` is not NULL) mixes PASS, FAIL and NOT_SUPPORTED and lacks one case. */
static void write_clause_files(tmpdir *d, const char **ref, const char **top, const char **up,
                               const char **cpu)
{
    static const int s_ref[] = {HR_PASS, HR_PASS, HR_PASS, HR_PASS, HR_PASS};
    static const int s_top[] = {HR_FAIL, HR_FAIL, HR_ERROR, HR_PASS, HR_PASS};
    static const int s_up[] = {HR_PASS, HR_PASS, HR_PASS, HR_INCORRECT_DTYPE, HR_NOT_SUPPORTED};
    static const int s_cpu[] = {HR_NOT_SUPPORTED, HR_PASS, HR_FAIL, CASE_ABSENT, HR_NOT_SUPPORTED};
    hr_run run = clause_run("reference", s_ref);
    write_run_file(*ref = tmp_file(d, "reference.json"), &run);
    run = clause_run("mutant_topleft", s_top);
    write_run_file(*top = tmp_file(d, "mutant_topleft.json"), &run);
    run = clause_run("mutant_upcast", s_up);
    write_run_file(*up = tmp_file(d, "mutant_upcast.json"), &run);
    if (cpu) {
        run = clause_run("cpu_fast", s_cpu);
        write_run_file(*cpu = tmp_file(d, "cpu_fast.json"), &run);
    }
}

#define CLAUSE_HEADER                                                                              \
    "\n## Spec clauses\n\n"                                                                        \
    "| Clause | Rules | Cases | Passing on non-mutant backends | Mutants caught |\n"               \
    "| --- | --- | ---: | --- | --- |\n"

Test(report, spec_clauses_two_mutants_and_reference)
{
    tmpdir d;
    tmp_open(&d);
    const char *ref, *top, *up;
    write_clause_files(&d, &ref, &top, &up, NULL);
    const char *out1 = tmp_file(&d, "r1.md"), *out2 = tmp_file(&d, "r2.md");
    const char *argv1[] = {"report", "--out", out1, "--command", "x", ref, top, up};
    cr_assert_eq(report(8, argv1), 0, "report failed");
    const char *argv2[] = {"report", "--out", out2, "--command", "x", up, ref, top};
    cr_assert_eq(report(8, argv2), 0, "second report failed");
    char *a = slurp(out1), *b = slurp(out2);
    cr_assert_str_eq(a, b, "report is not deterministic");

    /* Numeric clause order (3, 9, 13, not bytewise 13, 3, 9), "other" last; distinct rules
     * sorted; cases counted once over the three files; a mutant is caught by a clause when it
     * FAILed, had an INCORRECT_DTYPE or ERRORed on a case citing it (NOT_SUPPORTED is not). */
    assert_has(a, CLAUSE_HEADER
               "| 3 | `clause3.bottom_right`, `clause3.explicit_offset` | 3 | reference 3/3 | "
               "mutant_topleft 3 |\n"
               "| 9 | `clause9.fully_masked_zero` | 2 | reference 2/2 | "
               "mutant_topleft 1, mutant_upcast 1 |\n"
               "| 13 | `clause13.tolerance` | 4 | reference 4/4 | "
               "mutant_topleft 2, mutant_upcast 1 |\n"
               "| other | `clause03.zero`, `clause24.beyond`, `clause9`, `sdpa.definition` | 1 | "
               "reference 1/1 | \xE2\x80\x94 |\n"
               "\nA rule id `clauseN.<name>` cites SPEC.md clause N;");
    /* After the matrices, before the totals. */
    const char *mut = strstr(a, "\n## Mutants ("), *cl = strstr(a, "\n## Spec clauses\n"),
               *tot = strstr(a, "\n## Totals by status\n");
    cr_assert(mut && cl && tot && mut < cl && cl < tot, "section order:\n%s", a);
    /* The mutant section names every family each mutant fails. */
    assert_has(a, " | mask.causal 1, sdpa.causal 2 |\n");
    assert_has(a, " | sdpa.bool 1 |\n");
    free(a);
    free(b);
    tmp_close(&d);
}

/* A mutant whose version declares the clauses its bug breaks is credited only under those:
 * mutant_topleft fails cases citing clauses 3, 9 and 13, but its bug is clause 3's. */
Test(report, spec_clauses_credit_declared_clauses_only)
{
    tmpdir d;
    tmp_open(&d);
    static const int s_ref[] = {HR_PASS, HR_PASS, HR_PASS, HR_PASS, HR_PASS};
    static const int s_top[] = {HR_FAIL, HR_FAIL, HR_ERROR, HR_PASS, HR_PASS};
    static const int s_up[] = {HR_PASS, HR_PASS, HR_PASS, HR_INCORRECT_DTYPE, HR_NOT_SUPPORTED};
    const char *ref = tmp_file(&d, "reference.json"), *top = tmp_file(&d, "top.json"),
               *up = tmp_file(&d, "up.json"), *out = tmp_file(&d, "r.md");
    hr_run run = clause_run("reference", s_ref);
    write_run_file(ref, &run);
    run = clause_run("mutant_topleft", s_top);
    snprintf(run.backend_version, sizeof run.backend_version,
             "0.1.0 (test-only mutant; breaks SPEC.md clause 3)");
    write_run_file(top, &run);
    run = clause_run("mutant_upcast", s_up);
    snprintf(run.backend_version, sizeof run.backend_version,
             "0.1.0 (test-only mutant; breaks SPEC.md clauses 8, 13)");
    write_run_file(up, &run);
    const char *argv[] = {"report", "--out", out, "--command", "x", ref, top, up};
    cr_assert_eq(report(8, argv), 0, "report failed");
    char *a = slurp(out);
    assert_has(a, "| 3 | `clause3.bottom_right`, `clause3.explicit_offset` | 3 | reference 3/3 | "
                  "mutant_topleft 3 |\n"
                  "| 9 | `clause9.fully_masked_zero` | 2 | reference 2/2 | \xE2\x80\x94 |\n"
                  "| 13 | `clause13.tolerance` | 4 | reference 4/4 | mutant_upcast 1 |\n");
    free(a);
    tmp_close(&d);
}

Test(report, spec_clauses_passing_cells)
{
    tmpdir d;
    tmp_open(&d);
    const char *ref, *top, *up, *cpu;
    write_clause_files(&d, &ref, &top, &up, &cpu);
    const char *out = tmp_file(&d, "r.md");
    const char *argv[] = {"report", "--out", out, "--command", "x", cpu, ref, top, up};
    cr_assert_eq(report(9, argv), 0, "report failed");
    char *a = slurp(out);
    /* Non-mutant backends by name; NOT_SUPPORTED cases are counted apart from passed/run; a
     * backend without a case citing the clause is left out of that row. */
    assert_has(a, CLAUSE_HEADER
               "| 3 | `clause3.bottom_right`, `clause3.explicit_offset` | 3 | "
               "cpu_fast 1/2 + 1 not supported, reference 3/3 | mutant_topleft 3 |\n"
               "| 9 | `clause9.fully_masked_zero` | 2 | cpu_fast 1/1, reference 2/2 | "
               "mutant_topleft 1, mutant_upcast 1 |\n"
               "| 13 | `clause13.tolerance` | 4 | cpu_fast 1/2 + 1 not supported, "
               "reference 4/4 | mutant_topleft 2, mutant_upcast 1 |\n"
               "| other | `clause03.zero`, `clause24.beyond`, `clause9`, `sdpa.definition` | 1 | "
               "cpu_fast 1 not supported, reference 1/1 | \xE2\x80\x94 |\n");
    free(a);
    tmp_close(&d);
}

/* "rules" is required in every result and must be an array of strings. */
Test(report, rules_strict)
{
    tmpdir d;
    tmp_open(&d);
    const char *in = tmp_file(&d, "in.json"), *out = tmp_file(&d, "out.md");
    const char *errs = tmp_file(&d, "stderr.txt");
    /* Each Criterion test is its own process: redirecting stderr here affects nobody else. */
    cr_assert(freopen(errs, "w", stderr) != NULL, "redirect stderr");
    static const char *const variants[] = {
        "\"rules\": [\"clause3.bottom_right\", \"x|y\"], ", /* good; '|' in a rule id */
        "",                                                 /* missing */
        "\"rules\": \"clause3.bottom_right\", ",            /* not an array */
        "\"rules\": [\"clause3.bottom_right\", 3], ",       /* an entry that is not a string */
    };
    const char *argv[] = {"report", "--out", out, in};
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "{\"attnconf_results\": 1, \"backend\": {\"name\": \"x\", \"version\": \"1\", "
                 "\"path\": \"p\"}, \"cases_dir\": \"c\", \"filter\": \"\", \"results\": [{\"id\": "
                 "\"a.b.c\", \"family\": \"a.b\", \"status\": \"PASS\", \"message\": \"\", %s"
                 "\"seconds\": 0, \"rerun\": \"\"}], \"summary\": {\"PASS\": 1, "
                 "\"EXPECTED_ERROR\": 0, \"NOT_SUPPORTED\": 0, \"FAIL\": 0, "
                 "\"INCORRECT_DTYPE\": 0, \"ERROR\": 0, \"total\": 1}}",
                 variants[i]);
        write_text_file(in, text);
        cr_assert_eq(report(4, argv), i == 0 ? 0 : 1, "variant %zu", i);
    }
    fflush(stderr);
    char *e = slurp(errs);
    assert_has(e, "field \"results[0].rules\": missing\n");
    assert_has(e, "field \"results[0].rules\": expected an array, got a string\n");
    assert_has(e, "field \"results[0].rules\": entry 1 is an integer, expected a string\n");
    char *a = slurp(out);
    assert_has(a, "| 3 | `clause3.bottom_right` | 1 | x 1/1 | \xE2\x80\x94 |\n"
                  "| other | `x\\|y` | 1 | x 1/1 | \xE2\x80\x94 |\n");
    free(a);
    free(e);
    tmp_close(&d);
}

/* ---- error in units of the allowed error (SPEC.md clause 13) -------------------------------- */

/* The largest error / allowed of a comparison reaches every format: the text line leads with it
 * (left out when 0: exact checks, older results), TAP's YAML and the JSON carry it, and the
 * report's headroom table gives the median and the largest over the passing cases per dtype. */
Test(output_ratio, every_format_and_the_report)
{
    hr_result r[3];
    r[0] = mk("sdpa.a.f16", "sdpa", HR_PASS, "");
    r[1] = mk("sdpa.b.f16", "sdpa", HR_PASS, "");
    r[2] = mk("sdpa.c.f16", "sdpa", HR_FAIL, "1 of 8 elements out of tolerance");
    const double ratio[3] = {0.25, 0.5, 3.5};
    for (int k = 0; k < 3; k++) {
        r[k].has_stats = 1;
        r[k].max_abs_err = 0.001 * (k + 1);
        r[k].max_rel_err = 0.002;
        r[k].max_ratio = ratio[k];
        snprintf(r[k].dtype, sizeof r[k].dtype, "f16");
    }
    r[2].first_bad = 3;
    r[2].bad_ndim = 1;
    r[2].bad_index[0] = 3;
    r[2].bad_got = 1.5;
    r[2].bad_expected = 1.25;
    hr_run run;
    memset(&run, 0, sizeof run);
    snprintf(run.backend_name, sizeof run.backend_name, "reference");
    snprintf(run.backend_version, sizeof run.backend_version, "0.1.0");
    snprintf(run.cases_dir, sizeof run.cases_dir, "cases");
    run.results = r;
    run.count = 3;

    char *t = write_mem(&run, HR_FMT_TEXT);
    assert_has(t, "got 1.5, expected 1.25; max err 3.5 x allowed, max abs err 0.003, "
                  "max rel err 0.002\n");
    free(t);
    t = write_mem(&run, HR_FMT_TAP);
    assert_has(t, "  max_ratio: 3.5\n  max_abs_err: 0.003\n");
    free(t);
    t = write_mem(&run, HR_FMT_JSON);
    json_error_t je;
    json_t *root = json_loads(t, 0, &je);
    cr_assert_not_null(root, "%s", je.text);
    json_t *fail = json_array_get(json_object_get(root, "results"), 2);
    cr_assert_eq(json_real_value(json_object_get(fail, "max_ratio")), 3.5);
    json_decref(root);
    free(t);

    tmpdir d;
    tmp_open(&d);
    const char *in = tmp_file(&d, "ratio.json"), *out = tmp_file(&d, "ratio.md");
    write_run_file(in, &run);
    const char *argv[] = {"report", "--out", out, "--command", "attnconf report ratio.json", in};
    cr_assert_eq(report(6, argv), 0, "report failed");
    char *a = slurp(out);
    /* Two passing cases (0.25, 0.5): median 0.375, largest 0.5; the FAIL is not headroom. */
    assert_has(a, "\n## Error in units of the allowed error\n\n");
    assert_has(a, "| reference | f16 | 2 | 0.375 | 0.5 | `sdpa.b.f16` |\n");
    /* The failure line of the report carries the ratio too. */
    assert_has(a, "; max err 3.5 x allowed, max abs err 0.003");
    free(a);
    tmp_close(&d);
}

/* ---- NaN against a number (compare.h leaves it out of the maxima) ---------------------------- */

/* The NaN mismatches reach every format and the report, counted with their first index before
 * the maxima, which are over the other elements: "max err 0.0137 x allowed, max abs err nan"
 * once read as within tolerance. */
Test(output_nans, counted_before_the_maxima_everywhere)
{
    hr_result r[2];
    r[0] = mk("sdpa.a.f16", "sdpa", HR_PASS, "");
    r[1] = mk("sdpa.b.f16", "sdpa", HR_INCORRECT_DTYPE, "output dtype f32, expected f16");
    r[0].has_stats = r[1].has_stats = 1;
    r[1].max_abs_err = 0.003;
    r[1].max_rel_err = 0.002;
    r[1].max_ratio = 0.0137;
    r[1].first_bad = 5;
    r[1].bad_ndim = 2;
    r[1].bad_index[0] = 1;
    r[1].bad_index[1] = 1;
    r[1].bad_got = NAN;
    r[1].bad_expected = 0;
    r[1].nans =
        (hr_nans){.got = 3, .missed = 1, .others = 12, .got_index = {1, 1}, .missed_index = {2, 0}};
    hr_run run;
    memset(&run, 0, sizeof run);
    snprintf(run.backend_name, sizeof run.backend_name, "reference");
    snprintf(run.backend_version, sizeof run.backend_version, "0.1.0");
    snprintf(run.cases_dir, sizeof run.cases_dir, "cases");
    run.results = r;
    run.count = 2;
    const char *line = "got nan, expected 0; 3 NaN where a number was expected (first at [1,1]); "
                       "1 number where NaN was expected (first at [2,0]); over the other 12 "
                       "elements: max err 0.0137 x allowed, max abs err 0.003, max rel err 0.002";

    char *t = write_mem(&run, HR_FMT_TEXT);
    assert_has(t, line);
    cr_assert(strstr(t, "err nan") == NULL, "%s", t);
    free(t);
    t = write_mem(&run, HR_FMT_TAP);
    assert_has(t, "  max_rel_err: 0.002\n  nan_got: 3\n  nan_got_first: [1,1]\n  nan_missed: 1\n"
                  "  nan_missed_first: [2,0]\n  nan_others: 12\n");
    free(t);
    t = write_mem(&run, HR_FMT_JSON);
    json_error_t je;
    json_t *root = json_loads(t, 0, &je);
    cr_assert_not_null(root, "%s", je.text);
    json_t *res = json_object_get(root, "results");
    json_t *bad = json_array_get(res, 1);
    cr_assert_eq(json_integer_value(json_object_get(bad, "nan_got")), 3);
    cr_assert_eq(json_integer_value(json_array_get(json_object_get(bad, "nan_missed_index"), 0)),
                 2);
    cr_assert_null(json_object_get(json_array_get(res, 0), "nan_got"), "none: no key");
    json_decref(root);
    free(t);

    /* The report, from the JSON, quotes the same line. */
    tmpdir d;
    tmp_open(&d);
    const char *in = tmp_file(&d, "nans.json"), *out = tmp_file(&d, "nans.md");
    write_run_file(in, &run);
    const char *argv[] = {"report", "--out", out, "--command", "attnconf report nans.json", in};
    cr_assert_eq(report(6, argv), 0, "report failed");
    char *a = slurp(out);
    assert_has(a, line);
    free(a);
    /* A count without its index, or an index of another rank, is refused. */
    const char *broken = tmp_file(&d, "broken.json"), *out2 = tmp_file(&d, "broken.md");
    t = slurp(in);
    char *k = strstr(t, "\"nan_got_index\"");
    cr_assert_not_null(k);
    memcpy(k, "\"nan_got_indey\"", 15);
    write_text_file(broken, t);
    free(t);
    const char *argv2[] = {"report", "--out", out2, broken};
    cr_assert_neq(report(4, argv2), 0, "a nan_got without nan_got_index must be refused");
    tmp_close(&d);

    /* Every element such a NaN: the maxima are over nothing, and not quoted. */
    r[1].nans.others = 0;
    t = write_mem(&run, HR_FMT_TEXT);
    assert_has(t, "(first at [2,0]); no other element to measure\n");
    free(t);
}

/* report --diff: every class of change between two runs of one backend, and the exit status. */
Test(report, diff_classes_and_exit)
{
    tmpdir d;
    tmp_open(&d);
    hr_run run = every_status_run("reference");
    g_results[0].max_ratio = 0.1;
    const char *old = tmp_file(&d, "old.json"), *neu = tmp_file(&d, "new.json"),
               *out = tmp_file(&d, "diff.md");
    write_run_file(old, &run);

    run = every_status_run("reference");
    snprintf(run.backend_version, sizeof run.backend_version, "0.2.0");
    g_results[0].max_ratio = 0.4;  /* still PASS, 4x closer to the limit */
    g_results[1].status = HR_FAIL; /* was EXPECTED_ERROR */
    snprintf(g_results[1].message, sizeof g_results[1].message, "accepted a mixed dtype");
    snprintf(g_results[1].description, sizeof g_results[1].description, "mixed q/k dtypes");
    snprintf(g_results[1].rerun, sizeof g_results[1].rerun, "attnconf run --filter x");
    g_results[3].status = HR_PASS; /* was FAIL */
    g_results[3].has_stats = 0;
    g_results[4].status = HR_ERROR;                             /* was INCORRECT_DTYPE */
    g_results[5] = mk("sdpa.zz.new_case", "sdpa", HR_PASS, ""); /* mask.lengths.basic gone */
    write_run_file(neu, &run);

    const char *argv[] = {"report", "--diff", old, neu, "--out", out};
    cr_assert_eq(report(6, argv), 1, "a newly failing case must exit 1");
    char *a = slurp(out);
    assert_has(a, "# Conformance diff: reference 0.1.0 \xE2\x86\x92 reference 0.2.0\n");
    assert_has(a, "**1 newly failing**, 1 newly passing, 1 other status changes, 1 with error "
                  "growth, 1 only in the old run, 1 only in the new run, 1 unchanged.\n");
    assert_has(a, "## Newly failing (1)\n\n");
    assert_has(a, "- `sdpa.reject.mixed_dtype`: EXPECTED_ERROR \xE2\x86\x92 FAIL: accepted a "
                  "mixed dtype\n  - checks: mixed q/k dtypes\n"
                  "  - rerun: `attnconf run --filter x`\n");
    assert_has(a, "## Newly passing (1)\n\nPASS or EXPECTED_ERROR now, and not before.\n\n"
                  "- `sdpa.causal.offset`: FAIL \xE2\x86\x92 PASS\n");
    assert_has(a,
               "- `mask.window.basic`: INCORRECT_DTYPE \xE2\x86\x92 ERROR: out dtype f32, q f16\n");
    assert_has(a, "| `sdpa.basic.f32` | 0.1 | 0.4 | 4x |\n");
    assert_has(a, "- `mask.lengths.basic`: ERROR \xE2\x86\x92 (absent)\n");
    assert_has(a, "- `sdpa.zz.new_case`: (absent) \xE2\x86\x92 PASS\n");
    free(a);

    /* The same file against itself: nothing changed, exit 0. */
    const char *same[] = {"report", "--diff", neu, neu, "--out", out};
    cr_assert_eq(report(6, same), 0);
    a = slurp(out);
    assert_has(a, "**0 newly failing**, 0 newly passing, 0 other status changes, 0 with error "
                  "growth, 0 only in the old run, 0 only in the new run, 6 unchanged.\n");
    free(a);
    /* Usage: exactly two files. */
    const char *one[] = {"report", "--diff", neu};
    cr_assert_eq(report(3, one), 2);
    tmp_close(&d);
}
